"""``torch.special``'s Bessel, Airy, normal-distribution and zeta functions, computed
by ``scipy.special`` in float64 and rounded to the input's dtype (integers compute in
the default float dtype); J0, J1, Y0, Y1 by aten's own formulas (bessel_aten.py).

Where PyTorch has a derivative (``i0``, ``i0e``, ``i1``, ``i1e``, ``ndtr``, ``ndtri``,
``log_ndtr``, ``erfcx``, ``entr``, ``xlog1py``, ``zeta``'s second argument) it is
written with engine ops, as derivatives.yaml has it; the Bessel functions of the
first and second kind, the Airy function and the scaled ``K`` have none in PyTorch
(their results do not require grad), and neither do we.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as sc

from .. import dtypes
from ..dual import SELF_ADJOINT
from ..errors import BadArgumentsError
from ..function import Function
from ..primitives import MulBackward1
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import bessel_aten
from . import samples as S
from ._util import arr, as_tensor
from .arithmetic import where
from .elementwise import _float, _quiet, exp, log
from .special import XlogyBackward0, _float_result, _tensor_pair, _unary_function

_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _f64(fn: Callable[..., Any]) -> Callable[[np.ndarray], np.ndarray]:
    def run(x: np.ndarray) -> np.ndarray:
        with _quiet():
            return np.asarray(fn(x.astype(np.float64)))

    return run


def _samples(make: Callable[..., np.ndarray] = S.rand) -> Callable[..., list[Any]]:
    def build(rng: np.random.Generator) -> list[Any]:
        return [*S.unary(rng, make), sample(Const(np.array([1, 0, 3])), note="int64")]

    return build


# the rules below call ops defined further down
i0: Callable[[Tensor], Tensor]
i1: Callable[[Tensor], Tensor]
i0e: Callable[[Tensor], Tensor]
i1e: Callable[[Tensor], Tensor]
erfcx: Callable[[Tensor], Tensor]
log_ndtr: Callable[[Tensor], Tensor]


def _i1_grad(g: Tensor, x: Tensor) -> Tensor:
    y = i1(x)
    safe = where(Tensor._make(x._data == 0), 1.0, x)
    return g * where(Tensor._make(x._data == 0), 0.5, i0(x) - y / safe)


def _i1e_grad(g: Tensor, x: Tensor) -> Tensor:
    y = i1e(x)
    safe = where(Tensor._make(x._data == 0), 1.0, x)
    d = i0e(x) - y * (x.sgn() + safe.reciprocal())
    return g * where(Tensor._make(x._data == 0), 0.5, d)


I0Backward0 = _unary_function("I0Backward0", _f64(sc.i0), lambda g, x: g * i1(x))
SpecialI0EBackward0 = _unary_function(
    "SpecialI0EBackward0", _f64(sc.i0e), lambda g, x: g * (i1e(x) - x.sgn() * i0e(x))
)
SpecialI1Backward0 = _unary_function("SpecialI1Backward0", _f64(sc.i1), _i1_grad)
SpecialI1EBackward0 = _unary_function("SpecialI1EBackward0", _f64(sc.i1e), _i1e_grad)
SpecialNdtrBackward0 = _unary_function(  # torch composes ndtr: its node is the last mul's
    "MulBackward1",
    _f64(sc.ndtr),
    lambda g, x: MulBackward1.apply(g * exp(x * x * -0.5), by=1 / _SQRT_2PI),
)
SpecialNdtriBackward0 = _unary_function(
    "SpecialNdtriBackward0",
    _f64(sc.ndtri),
    lambda g, y: g * (exp(y * y * 0.5) * _SQRT_2PI),
    saves="result",
)


def _log_ndtr_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * (exp(x * x * -0.5 - log_ndtr(x)) / _SQRT_2PI)


SpecialLogNdtrBackward0 = _unary_function(
    "SpecialLogNdtrBackward0", _f64(sc.log_ndtr), _log_ndtr_grad
)
SpecialErfcxBackward0 = _unary_function(
    "SpecialErfcxBackward0",
    _f64(sc.erfcx),
    lambda g, x: g * (x * erfcx(x) * 2 - _TWO_OVER_SQRT_PI),
)
SpecialEntrBackward0 = _unary_function(
    "SpecialEntrBackward0", _f64(sc.entr), lambda g, x: g * -(log(x) + 1)
)


def _define(
    name: str, fn: type[Function], doc: str, make: Callable[..., np.ndarray] = S.rand
) -> Callable[[Tensor], Tensor]:
    def op(input: Tensor) -> Tensor:
        a = as_tensor(input)
        return fn.apply(a)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    torch_name = name if name == "i0" else "special." + name
    register(name, samples=_samples(make), method=name == "i0", torch=torch_name)(op)
    return op


def _between(lo: float, hi: float) -> Callable[..., np.ndarray]:
    return lambda rng, *shape: S.rand(rng, *shape, low=lo, high=hi)


i0 = _define("i0", I0Backward0, "The modified Bessel function of the first kind, order 0.")
i0e = _define("i0e", SpecialI0EBackward0, "exp(-|x|)·I0(x), the scaled I0.")
i1 = _define("i1", SpecialI1Backward0, "The modified Bessel function of the first kind, order 1.")
i1e = _define("i1e", SpecialI1EBackward0, "exp(-|x|)·I1(x), the scaled I1.")
ndtr = _define("ndtr", SpecialNdtrBackward0, "The standard normal distribution function.")
ndtri = _define(
    "ndtri",
    SpecialNdtriBackward0,
    "The standard normal quantile (inverse of ndtr).",
    _between(0.05, 0.95),
)
log_ndtr = _define("log_ndtr", SpecialLogNdtrBackward0, "log of ndtr, accurate in the left tail.")
erfcx = _define(
    "erfcx", SpecialErfcxBackward0, "The scaled complementary error function exp(x²)·erfc(x)."
)
entr = _define(
    "entr", SpecialEntrBackward0, "Elementwise entropy -x·log(x) (0 at 0, -inf below).", S.positive
)


# -- no derivative in PyTorch -------------------------------------------------------------


def _define_plain(name: str, kernel: Callable[[np.ndarray], Any], doc: str) -> None:
    def op(input: Tensor) -> Tensor:
        x = _float(as_tensor(input))
        with _quiet():
            return Tensor._make(np.asarray(kernel(x.astype(np.float64)), dtype=x.dtype))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    register(name, samples=_samples(), differentiable=False, method=False, torch="special." + name)(
        op
    )


def _spherical_j0(x: np.ndarray) -> np.ndarray:
    return np.where(x == 0, 1.0, np.sin(x) / np.where(x == 0, 1.0, x))


for _name, _kernel, _doc in [
    ("airy_ai", lambda x: sc.airy(x)[0], "The Airy function Ai."),
    ("bessel_j0", bessel_aten.j0, "The Bessel function of the first kind, order 0."),
    ("bessel_j1", bessel_aten.j1, "The Bessel function of the first kind, order 1."),
    ("bessel_y0", bessel_aten.y0, "The Bessel function of the second kind, order 0."),
    ("bessel_y1", bessel_aten.y1, "The Bessel function of the second kind, order 1."),
    ("modified_bessel_i0", sc.i0, "The modified Bessel function I0 (no derivative)."),
    ("modified_bessel_i1", sc.i1, "The modified Bessel function I1 (no derivative)."),
    ("modified_bessel_k0", sc.k0, "The modified Bessel function of the second kind K0."),
    ("modified_bessel_k1", sc.k1, "The modified Bessel function of the second kind K1."),
    ("scaled_modified_bessel_k0", sc.k0e, "exp(x)·K0(x)."),
    ("scaled_modified_bessel_k1", sc.k1e, "exp(x)·K1(x)."),
    ("spherical_bessel_j0", _spherical_j0, "The spherical Bessel function j0 = sin(x)/x."),
]:
    _define_plain(_name, _kernel, _doc)


# -- two inputs: xlog1py, zeta --------------------------------------------------------------


def _special_numbers(name: str) -> Callable[..., Any]:
    """PyTorch's ``torch.special.<name>`` with numbers wrapped as we wrap them."""

    def call(torch: Any, input: Any, other: Any) -> Any:
        if not isinstance(other, torch.Tensor):
            other = torch.tensor(other, dtype=input.dtype)
        if not isinstance(input, torch.Tensor):
            input = torch.tensor(input, dtype=other.dtype)
        return getattr(torch.special, name)(input, other)

    return call


class SpecialXlog1PyBackward0(XlogyBackward0):
    """``xlog1py(x, y) = x·log1p(y)``, 0 where x = 0 (unless y is NaN)."""

    name = "SpecialXlog1PyBackward0"
    log = np.log1p
    shift = 1

    @staticmethod
    def again(g: Tensor, b: Tensor) -> Tensor:
        return xlog1py(g, b)


class SpecialXlog1PyBackward1(SpecialXlog1PyBackward0):
    name = "SpecialXlog1PyBackward1"


class SpecialXlog1PyBackward2(SpecialXlog1PyBackward0):
    name = "SpecialXlog1PyBackward2"


def _xlog1py_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *S.binary(rng, S.rand, S.positive),
        sample(Const(np.array([0.0, 0.0, 2.0])), Const(np.array([np.nan, -1.0, 3.0])), note="0"),
    ]


@register(
    complex_inputs="\"xlog1py_cpu\" not implemented for '{type}'",
    samples=_xlog1py_samples,
    method=False,
    torch="special.xlog1py",
)
def xlog1py(input: Any, other: Any) -> Tensor:
    """Elementwise ``input · log1p(other)``, 0 where input is 0 (NaN other excepted)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        rt, a, b = _tensor_pair(input, other)
        return SpecialXlog1PyBackward0.apply(a, b, dtype=_float_result(rt))
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise BadArgumentsError("xlog1py() expected at least one Tensor")
    rt = _float_result(dtypes.result_type(input, other))
    if isinstance(input, Tensor):
        return SpecialXlog1PyBackward2.apply(input, float(other), dtype=rt)
    return SpecialXlog1PyBackward1.apply(float(input), as_tensor(other), dtype=rt)


class DerivativeNotImplementedError(BadArgumentsError, NotImplementedError):
    """PyTorch's ``the derivative for 'X' is not implemented.`` (NotImplementedError)."""


class SpecialZetaBackward0(Function):
    """Hurwitz zeta(x, q); PyTorch differentiates q only: -x·zeta(x + 1, q)."""

    name = "SpecialZetaBackward0"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(a, b)
        with _quiet():
            out = sc.zeta(
                np.asarray(arr(a, dtype), np.float64), np.asarray(arr(b, dtype), np.float64)
            )
        return np.asarray(out, dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        if need_a:
            raise DerivativeNotImplementedError("the derivative for 'zeta' is not implemented.")
        gb = g * -a * zeta(a + 1.0, b) if need_b else None
        return None, gb


@register(
    complex_inputs="\"zeta_cpu\" not implemented for '{type}'",
    samples=lambda rng: [
        sample(Const(S.rand(rng, 3, low=1.5, high=4)), S.positive(rng, 3) + 0.5, note="q"),
    ],
    method=False,
    torch=_special_numbers("zeta"),
)
def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function sum over k of (k + other)^-input."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise BadArgumentsError("zeta() expected at least one Tensor")
    rt, a, b = _tensor_pair(input, other)
    return SpecialZetaBackward0.apply(a, b, dtype=_float_result(rt))
