"""Random ``torch.nn.functional`` ops: ``rrelu``, ``alpha_dropout`` and
``feature_alpha_dropout``, drawing PyTorch's CPU stream draw for draw.

``rrelu`` in training draws one ``uniform_real_distribution<double>(lower, upper)``
slope per element ``<= 0``, in order (ATen's ``_rrelu_with_noise_train``), and its
gradient uses the slopes drawn; out of training it is ``leaky_relu`` with slope
``(lower + upper) / 2``. The alpha dropouts follow ATen's ``_dropout_impl``: a
``bernoulli_(1 - p)`` mask (per channel for the feature variant), then
``input * (mask * a) + (mask - 1) * alpha * a + alpha * a * p``, so their nodes are
``mul``'s and ``add``'s, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..dual import SELF_ADJOINT
from ..errors import ArgumentValueError, BadArgumentsError, DtypeMismatchError
from ..function import Function
from ..random import Generator
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from .arithmetic import add, mul
from .creation_ops import _like
from .elementwise import _floating_only, _grad_function, _zeros_like
from .random_ops import _generator

_SELU_ALPHA = 1.7580993408473766  # -SELU's negative saturation: scale * alpha


def _torch_seeded(name: str) -> Callable[..., Any]:
    """PyTorch's call after ``manual_seed(seed)``: these ops take no generator there."""

    def call(torch: Any, *args: Any, seed: Any = None, **kwargs: Any) -> Any:
        torch.manual_seed(0 if seed is None else seed)
        return getattr(torch.nn.functional, name)(*args, **kwargs)

    return call


# -- rrelu -------------------------------------------------------------------------------------


RreluWithNoiseBackwardBackward0 = _grad_function(
    "RreluWithNoiseBackwardBackward0",
    lambda g, x, *, slope: g * slope,
    lambda gg, g, x, *, slope: _zeros_like(x),
)


class RreluWithNoiseBackward0(Function):
    """``x * slope`` with the slopes fixed at the call (drawn, or the mean one)."""

    name = "RreluWithNoiseBackward0"
    jvp = SELF_ADJOINT  # derivatives.yaml: auto_element_wise

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, values: np.ndarray, slope: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.slope = slope
        return values

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return RreluWithNoiseBackwardBackward0.apply(g, a, slope=ctx.slope)


def _rrelu_samples(rng: np.random.Generator) -> list[Any]:
    x = S.away_from_zero
    return [
        sample(x(rng, 3, 4), note="eval: the mean slope"),
        sample(x(rng, 2, 5), 0.1, 0.3, True, seed=0, note="training: drawn slopes"),
        sample(x(rng, 20), training=True, seed=1, note="training, defaults"),
        sample(x(rng, 4), 0.2, 0.2, True, seed=2, note="training, lower == upper"),
    ]


@register(samples=_rrelu_samples, method=False, torch=_torch_seeded("rrelu"))
def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Any = None,
    seed: int | None = None,
) -> Tensor:
    """Randomized leaky ReLU: in training each element ``<= 0`` is scaled by a slope
    drawn uniformly from [lower, upper) (the same slopes as PyTorch's after the same
    seed); otherwise by ``(lower + upper) / 2``."""
    lo, hi = float(lower), float(upper)
    if not lo <= hi:
        raise BadArgumentsError("Lower bound should be less than or equal to the upper bound")
    if inplace:
        raise BadArgumentsError("rrelu(inplace=True) is not supported; use inplace=False")
    a = _like(input)
    x = _floating_only(a, "rrelu_with_noise_out_cpu")
    dt = x.dtype
    mean = np.ones_like(x)
    mean[~(x > 0)] = dt.type((lo + hi) / 2)
    if not training:
        return RreluWithNoiseBackward0.apply(a, values=(x * mean).astype(dt), slope=mean)
    gen = _generator(seed, generator)
    drawn = np.ones_like(x)
    low = x <= 0
    drawn[low] = (gen.doubles(int(low.sum())) * (hi - lo) + lo).astype(dt)
    slope = drawn if hi - lo > 1e-6 else mean  # ATen's backward switches on the width
    return RreluWithNoiseBackward0.apply(a, values=(x * drawn).astype(dt), slope=slope)


# -- alpha dropout -----------------------------------------------------------------------------


def _alpha_p(p: Any) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ArgumentValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def _feature_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) < 2:
        raise BadArgumentsError("Feature dropout requires at least 2 dimensions in the input")
    return shape[:2] + (1,) * (len(shape) - 2)


def _alpha_impl(a: Tensor, p: float, training: bool, feature: bool, gen: Generator) -> Tensor:
    """ATen's ``_dropout_impl`` with ``alpha_dropout`` set, step by step in the dtype."""
    if p == 0 or not training or a._data.size == 0:
        return a
    dt = a.dtype
    if dt.kind != "f":
        raise DtypeMismatchError(f"alpha_dropout is not implemented for {dtypes.torch_name(dt)}")
    if p == 1:
        return mul(a, Tensor._make(np.zeros((), dt)))
    shape = _feature_shape(tuple(a.shape)) if feature else tuple(a.shape)
    noise = gen.bernoulli(1.0 - p, shape, dt)
    scale = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    shift = ((noise - dt.type(1)) * dt.type(_SELU_ALPHA * scale)).astype(dt)
    shift = (shift + dt.type(_SELU_ALPHA * scale * p)).astype(dt)
    noise = (noise * dt.type(scale)).astype(dt)
    return add(mul(a, Tensor._make(noise)), Tensor._make(shift))


def _alpha_samples(feature: bool) -> Callable[[np.random.Generator], list[Any]]:
    def build(rng: np.random.Generator) -> list[Any]:
        r = S.rand
        shape = (2, 3, 4) if feature else (4, 5)
        return [
            sample(r(rng, *shape), 0.5, True, seed=0, note="p=0.5, training"),
            sample(r(rng, 3, 4, 2, 2), p=0.2, training=True, seed=1, note="p=0.2"),
            sample(r(rng, *shape), 0.5, note="not training: identity"),
            sample(r(rng, *shape), 1.0, True, seed=2, note="p=1: zeros"),
        ]

    return build


def _alpha_dropout(name: str, feature: bool) -> Callable[..., Tensor]:
    def fn(
        input: Tensor,
        p: float = 0.5,
        training: bool = False,
        inplace: bool = False,
        *,
        generator: Any = None,
        seed: int | None = None,
    ) -> Tensor:
        p = _alpha_p(p)
        if inplace:
            raise BadArgumentsError(f"{name}(inplace=True) is not supported; use inplace=False")
        a = _like(input)
        return _alpha_impl(a, p, bool(training), feature, _generator(seed, generator))

    fn.__name__ = name
    fn.__doc__ = (
        f"``torch.nn.functional.{name}``: with probability ``p`` set "
        + ("whole channels" if feature else "elements")
        + " to SELU's negative saturation, then scale and shift to keep zero mean and unit "
        "variance (the same mask as PyTorch's after the same seed)."
    )
    return fn


_BERNOULLI_COMPLEX = "\"bernoulli_scalar_cpu_\" not implemented for '{type}'"  # torch's mask draw
for _name, _feature in (("alpha_dropout", False), ("feature_alpha_dropout", True)):
    register(
        complex_inputs=_BERNOULLI_COMPLEX,
        samples=_alpha_samples(_feature),
        method=False,
        torch=_torch_seeded(_name),
    )(_alpha_dropout(_name, _feature))
