"""Random ``torch.nn.functional`` ops: ``rrelu``, drawing PyTorch's CPU stream
draw for draw.

``rrelu`` in training draws one ``uniform_real_distribution<double>(lower, upper)``
slope per element ``<= 0``, in order (ATen's ``_rrelu_with_noise_train``), and its
gradient uses the slopes drawn; out of training it is ``leaky_relu`` with slope
``(lower + upper) / 2``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dual import SELF_ADJOINT
from ..errors import BadArgumentsError
from ..function import Function
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
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
