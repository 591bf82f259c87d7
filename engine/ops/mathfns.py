"""Floating-point and gamma-family math: ``frexp``/``ldexp``, ``nextafter``, the
regularized incomplete gamma functions ``igamma``/``igammac``, the multivariate
log-gamma ``mvlgamma`` and ``angle`` of real numbers.

``ldexp``, ``mvlgamma`` and ``angle`` are composites of engine ops (their gradients
come from those); ``frexp``'s mantissa is ``input / 2**exponent`` with the exponent a
constant. ``nextafter``'s gradient is PyTorch's: the incoming one to ``input``, zero to
``other``. PyTorch has no derivative for ``igamma``'s first argument.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special as sc

from .. import dtypes
from ..dual import SELF_ADJOINT
from ..errors import BadArgumentsError
from ..function import Function
from ..primitives import real_part
from ..registry import OPS, Const, Sample, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import ArgumentTypeError, KernelDtypeError, composite, named
from ._util import arr, as_tensor
from .complex_ops import ImagBackward0
from .elementwise import _quiet
from .special import _float_result, _tensor_pair


def _op(name: str) -> Any:
    return OPS[name].fn


# -- frexp, ldexp -----------------------------------------------------------------------


def _frexp_body(a: Tensor, *, exponent: np.ndarray) -> Tensor:
    return a / Tensor._make(np.exp2(exponent).astype(a.dtype))


def _frexp_samples(rng: np.random.Generator) -> list[Sample]:
    return [sample(S.rand(rng, 3, 4)), sample(S.rand(rng), note="0-d")]


@register(samples=_frexp_samples, results=2)
def frexp(input: Tensor) -> Any:
    """(mantissa, exponent): ``input = mantissa · 2**exponent``, |mantissa| in [0.5, 1)."""
    a = as_tensor(input)
    if a.dtype.kind != "f":
        raise BadArgumentsError("torch.frexp() only supports floating-point dtypes")
    _, e = np.frexp(a._data)
    exponent = np.asarray(e, dtype=np.int32)
    mantissa = composite("FrexpBackward0", _frexp_body, a, exponent=exponent)
    return mantissa, Tensor._make(exponent)


def _ldexp_body(a: Tensor, b: Tensor) -> Tensor:
    return _op("mul")(a, _op("exp2")(b))


def _ldexp_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(S.rand(rng, 3, 4), S.rand(rng, 3, 4)),
        sample(S.rand(rng, 3), S.rand(rng, 2, 1), note="broadcast"),
    ]


@register(samples=_ldexp_samples, inplace=True)
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input · 2**other``."""
    _tensors_only("ldexp", input, other)
    a, b = as_tensor(input), as_tensor(other)
    return composite("LdexpBackward0", _ldexp_body, a, b)


# -- nextafter --------------------------------------------------------------------------


class NextafterBackward0(Function):
    """The next float after ``input`` toward ``other`` (gradient as PyTorch's: g, 0)."""

    name = "NextafterBackward0"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, *, dtype: np.dtype) -> np.ndarray:
        return np.asarray(np.nextafter(arr(a, dtype), arr(b, dtype)), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        return g, g * 0  # PyTorch: the incoming gradient to input, zero to other


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 4), Const(S.rand(rng, 4)))],
    inplace=True,
)
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next representable float after ``input`` in the direction of ``other``."""
    _tensors_only("nextafter", input, other)
    rt, a, b = _tensor_pair(input, other)
    if rt.kind != "f":
        raise KernelDtypeError(f"\"nextafter_cpu\" not implemented for '{dtypes.type_name(rt)}'")
    return NextafterBackward0.apply(a, b, dtype=rt)


# -- igamma, igammac ----------------------------------------------------------------------


def _tensors_only(name: str, input: Any, other: Any) -> None:
    """PyTorch's binding takes tensors only here: a Python number is its TypeError."""
    for pos, (arg, v) in enumerate((("input", input), ("other", other)), start=1):
        if not isinstance(v, Tensor):
            raise ArgumentTypeError(
                f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                f"{type(v).__name__}"
            )


def _incomplete_gamma(kernel: Any, input: Any, other: Any) -> Tensor:
    rt, a, b = _tensor_pair(input, other)
    dt = _float_result(rt)
    with _quiet():
        out = kernel(np.asarray(arr(a, dt), np.float64), np.asarray(arr(b, dt), np.float64))
    return Tensor._make(np.asarray(out, dt))


def _igamma_samples(rng: np.random.Generator) -> list[Sample]:
    return [sample(Const(S.positive(rng, 3, 4)), Const(S.positive(rng, 3, 4)))]


@register(
    complex_inputs="\"igamma_cpu\" not implemented for '{type}'",
    samples=_igamma_samples,
    differentiable=False,
    inplace=True,
)
def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other)."""
    _tensors_only("igamma", input, other)
    return _incomplete_gamma(sc.gammainc, input, other)


@register(
    complex_inputs="\"igammac_cpu\" not implemented for '{type}'",
    samples=_igamma_samples,
    differentiable=False,
    inplace=True,
)
def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other)."""
    _tensors_only("igammac", input, other)
    return _incomplete_gamma(sc.gammaincc, input, other)


# -- mvlgamma, angle ------------------------------------------------------------------------


def _mvlgamma_body(a: Tensor, *, p: int) -> Tensor:
    offsets = Tensor._make(np.arange(-p / 2 + 0.5, 0.5, 0.5, dtype=np.float64).astype(a.dtype))
    args = _op("unsqueeze")(a, -1) + offsets
    return _op("sum")(_op("lgamma")(args), -1) + p * (p - 1) * math.log(math.pi) / 4


def _mvlgamma_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(S.rand(rng, 3, 4, low=3.0, high=5.0), 1),
        sample(S.rand(rng, 5, low=3.0, high=5.0), p=3, note="p=3"),
    ]


@register(
    complex_inputs="\"arange_cpu\" not implemented for '{type}'",
    samples=_mvlgamma_samples,
    inplace=True,
)
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``."""
    a = as_tensor(input)
    if p < 1:
        raise BadArgumentsError("p has to be greater than or equal to 1")
    if a.dtype.kind != "f":
        a = a.to(dtypes.float32)
    if (a._data <= (p - 1) / 2).any():
        raise BadArgumentsError("All elements must be greater than (p-1)/2")
    return composite("MvlgammaBackward0", _mvlgamma_body, a, p=int(p))


def _complex_angle_body(z: Tensor) -> Tensor:
    return _op("atan2")(ImagBackward0.apply(z), real_part(z))


named("AngleBackward0").complex_ok = True  # real and imaginary parts, then a real atan2


def _angle_body(a: Tensor) -> Tensor:
    pi = Tensor._make(np.asarray(math.pi, a.dtype))
    zero = Tensor._make(np.asarray(0.0, a.dtype))
    return _op("where")(_op("isnan")(a), a, _op("where")(a < 0, pi, zero))


@register(samples=lambda rng: [*S.unary(rng), sample(Const(np.array([-2, 0, 3])))])
def angle(input: Tensor) -> Tensor:
    """The argument: of a complex number ``atan2(imag, real)``; of a real one pi below
    zero, 0 otherwise (NaN kept)."""
    a = as_tensor(input)
    if a.dtype.kind == "c":
        return composite("AngleBackward0", _complex_angle_body, a)
    if a.dtype.kind != "f":
        a = a.to(dtypes.float32)
    return composite("AngleBackward0", _angle_body, a)
