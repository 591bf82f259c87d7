"""More elementwise math: inverse trigonometric and hyperbolic functions, erf and
its kin (erfc, erfinv: numpy has none), logarithms and exponentials in other
bases, rounding parts, predicates (isnan, isclose ...), the two-input functions
(atan2, copysign, hypot, logaddexp, xlogy, lerp) and the dtype casts
(``.float()``, ``.half()`` ...).

Each op is a Function named as PyTorch names its node, with the rule of
PyTorch's derivatives.yaml written in engine ops (so ``create_graph`` works).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..binding import Binding
from ..dual import SELF_ADJOINT
from ..errors import BadArgumentsError, DtypeMismatchError
from ..function import Function
from ..registry import Const, Domain, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import arr, as_tensor, broadcast_shape, operands
from .arithmetic import not_implemented_for, where
from .elementwise import (
    _erf,
    _float,
    _quiet,
    cos,
    exp,
    sin,
)
from .shape import to_dtype

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t._data.shape, t._data.dtype))


# -- erfc and erfinv in float64 ---------------------------------------------------------


_libm_erfc = np.frompyfunc(math.erfc, 1, 1)


def _erfc(x: Any) -> np.ndarray:
    """The complementary error function in float64, with libm's relative accuracy in the
    tail (``1 - erf`` loses every digit there; the erf fits behind gelu are accurate to
    an ulp of 1, not of erfc). Below |x| = 1, erfc lies in [0.15, 1.85] and ``1 - erf``
    is exact to an ulp; beyond, libm's erfc per element (erfc and erfinv are rare ops)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.array(1.0 - _erf(x), dtype=np.float64)  # an array even for 0-d (written below)
    tail = np.abs(x) >= 1.0
    if tail.any():
        out[tail] = _libm_erfc(x[tail]).astype(np.float64)
    return out


def _erfinv_guess(y: np.ndarray) -> np.ndarray:
    """Giles' single-precision approximation ("Approximating the erfinv function", 2010)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1.0 - y) * (1.0 + y))
    central = w - 2.5
    p1 = np.full_like(y, 2.81022636e-08)
    for c in (
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ):
        p1 = c + p1 * central
    tail = np.sqrt(np.maximum(w, 5.0)) - 3.0
    p2 = np.full_like(y, -0.000200214257)
    for c in (
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ):
        p2 = c + p2 * tail
    return np.where(w < 5.0, p1, p2) * y


def _erfinv(y: Any) -> np.ndarray:
    """The inverse error function in float64: Giles' guess, then Newton steps on erf for
    |y| <= 0.5, and on log(erfc) beyond (1 - |y| is exact there, and erfc's logarithm is
    nearly quadratic, so Newton converges fast even from Giles' float32-grade guess for
    1 - |y| below float32's resolution)."""
    y = np.asarray(y, dtype=np.float64)
    t = np.abs(y)
    inside = t < 1.0
    tt = np.where(inside, t, 0.0)
    x = _erfinv_guess(tt)
    near = tt <= 0.5
    c = np.where(near, 1.0, 1.0 - tt)  # the erfc value sought in the tail
    log_c = np.log(c)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(6):
            density = _TWO_OVER_SQRT_PI * np.exp(-x * x)
            tail = _erfc(x)
            step_near = (_erf(x) - tt) / density
            step_tail = -(np.log(tail) - log_c) * tail / density
            x = x - np.where(near, step_near, step_tail)
    out = np.where(inside, x, np.where(t == 1.0, np.inf, np.nan))
    return np.copysign(out, y)


# -- one-input functions ----------------------------------------------------------------


def _unary_function(
    name: str,
    forward: Callable[[np.ndarray], Any],
    backward: Callable[[Tensor, Tensor], Tensor],
    *,
    saves: str = "input",
) -> type[Function]:
    """``y = f(x)`` (integer inputs compute in the default float dtype) whose derivative
    needs the input or the result, as derivatives.yaml says (it decides which in-place
    edits make backward fail)."""
    use_result = saves == "result"

    def fwd(ctx: Any, a: Tensor) -> np.ndarray:
        if use_result:
            ctx.save_result()
        elif saves == "input":
            ctx.save_for_backward(a)
        x = _float(a)
        return np.asarray(forward(x), dtype=x.dtype)

    def bwd(ctx: Any, g: Tensor) -> Tensor:
        if use_result:
            return backward(g, ctx.result)
        return backward(g, ctx.saved_tensors[0] if saves == "input" else g)

    return type(
        name,
        (Function,),
        {
            "name": name,
            "forward": staticmethod(fwd),
            "backward": staticmethod(bwd),
            "jvp": SELF_ADJOINT,  # elementwise: a symmetric Jacobian
        },
    )


AsinBackward0 = _unary_function("AsinBackward0", np.arcsin, lambda g, x: g * (-x * x + 1).rsqrt())
AcosBackward0 = _unary_function("AcosBackward0", np.arccos, lambda g, x: g * -(-x * x + 1).rsqrt())
AtanBackward0 = _unary_function("AtanBackward0", np.arctan, lambda g, x: g / (x * x + 1))


def _sinh_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * cosh(x)


def _cosh_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * sinh(x)


def _erfinv_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * (exp(erfinv(x) ** 2) * (0.5 * math.sqrt(math.pi)))


SinhBackward0 = _unary_function("SinhBackward0", np.sinh, _sinh_grad)
CoshBackward0 = _unary_function("CoshBackward0", np.cosh, _cosh_grad)
AsinhBackward0 = _unary_function("AsinhBackward0", np.arcsinh, lambda g, x: g * (x * x + 1).rsqrt())
AcoshBackward0 = _unary_function("AcoshBackward0", np.arccosh, lambda g, x: g * (x * x - 1).rsqrt())
AtanhBackward0 = _unary_function(
    "AtanhBackward0", np.arctanh, lambda g, x: g * (-x * x + 1).reciprocal()
)
ErfBackward0 = _unary_function(
    "ErfBackward0", _erf, lambda g, x: g * (exp(-x * x) * _TWO_OVER_SQRT_PI)
)
ErfcBackward0 = _unary_function(
    "ErfcBackward0", _erfc, lambda g, x: g * (exp(-x * x) * -_TWO_OVER_SQRT_PI)
)
ErfinvBackward0 = _unary_function("ErfinvBackward0", _erfinv, _erfinv_grad)
Exp2Backward0 = _unary_function(
    "Exp2Backward0", np.exp2, lambda g, y: g * (y * _LN2), saves="result"
)
Log2Backward0 = _unary_function("Log2Backward0", np.log2, lambda g, x: g / (x * _LN2))
Log10Backward0 = _unary_function("Log10Backward0", np.log10, lambda g, x: g / (x * _LN10))
Deg2RadBackward0 = _unary_function(
    "Deg2RadBackward0", np.deg2rad, lambda g, _: g * (math.pi / 180), saves="nothing"
)
Rad2DegBackward0 = _unary_function(
    "Rad2DegBackward0", np.rad2deg, lambda g, _: g * (180 / math.pi), saves="nothing"
)
FracBackward0 = _unary_function(
    "FracBackward0", lambda x: x - np.trunc(x), lambda g, _: g, saves="nothing"
)


def _sinc(x: np.ndarray) -> np.ndarray:
    px = np.pi * x
    return np.where(x == 0, np.ones((), x.dtype), np.sin(px) / np.where(x == 0, 1, px))


def _sinc_grad(g: Tensor, x: Tensor) -> Tensor:
    px = x * math.pi
    d = (px * cos(px) - sin(px)) / (px * x)
    return g * where(Tensor._make(x._data == 0), 0.0, d)


SincBackward0 = _unary_function("SincBackward0", _sinc, _sinc_grad)


class _ZeroGrad(Function):
    """Piecewise-constant ops keep the input's dtype (integers too): a zero gradient."""

    name = "TruncBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, kernel: Any) -> np.ndarray:
        return np.asarray(kernel(a._data))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _zeros_like(g)


class TruncBackward0(_ZeroGrad):
    name = "TruncBackward0"


def _unary_samples(make: Callable[..., np.ndarray] = S.rand) -> Callable[..., list[Any]]:
    def build(rng: np.random.Generator) -> list[Any]:
        return [*S.unary(rng, make), sample(Const(np.array([-2, 0, 3])), note="int64")]

    return build


def _between(lo: float, hi: float) -> Domain:
    return Domain(lo, hi)


def _define(
    name: str,
    fn: type[Function],
    doc: str,
    make: Callable[..., np.ndarray] = S.rand,
) -> Callable[[Tensor], Tensor]:
    """Register ``name(input)`` applying ``fn``, with unary samples drawn by ``make``."""

    def op(input: Tensor) -> Tensor:
        return fn.apply(as_tensor(input))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    domain = (make,) if isinstance(make, Domain) else ()  # the samples' domain, stated once
    register(name, samples=_unary_samples(make), inplace=True, domain=domain)(op)
    return op


asin = _define(
    "asin", AsinBackward0, "Elementwise arcsine (NaN outside [-1, 1]).", _between(-0.9, 0.9)
)
acos = _define(
    "acos", AcosBackward0, "Elementwise arccosine (NaN outside [-1, 1]).", _between(-0.9, 0.9)
)
atan = _define("atan", AtanBackward0, "Elementwise arctangent.")
sinh = _define("sinh", SinhBackward0, "Elementwise hyperbolic sine.")
cosh = _define("cosh", CoshBackward0, "Elementwise hyperbolic cosine.")
asinh = _define("asinh", AsinhBackward0, "Elementwise inverse hyperbolic sine.")
acosh = _define(
    "acosh",
    AcoshBackward0,
    "Elementwise inverse hyperbolic cosine (NaN below 1).",
    _between(1.2, 3.0),
)
atanh = _define(
    "atanh", AtanhBackward0, "Elementwise inverse hyperbolic tangent.", _between(-0.9, 0.9)
)
erf = _define("erf", ErfBackward0, "Elementwise error function.")
erfc = _define(
    "erfc",
    ErfcBackward0,
    "Elementwise complementary error function 1 - erf(x), accurate in the tail.",
    _between(-3.0, 5.0),
)
erfinv = _define(
    "erfinv",
    ErfinvBackward0,
    "Elementwise inverse error function (±inf at ±1, NaN beyond).",
    _between(-0.95, 0.95),
)
exp2 = _define("exp2", Exp2Backward0, "Elementwise 2**x.")
log2 = _define("log2", Log2Backward0, "Elementwise base-2 logarithm.", Domain(0.5, 2.0))
log10 = _define("log10", Log10Backward0, "Elementwise base-10 logarithm.", Domain(0.5, 2.0))
deg2rad = _define("deg2rad", Deg2RadBackward0, "Elementwise degrees to radians.")
rad2deg = _define("rad2deg", Rad2DegBackward0, "Elementwise radians to degrees.")
sinc = _define("sinc", SincBackward0, "Elementwise normalized sinc sin(πx)/(πx), 1 at 0.")


def _away_from_integers(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-3, 3, size=shape) + rng.uniform(0.2, 0.8, size=shape)


@register(
    complex_inputs="trunc is not supported for complex inputs",
    samples=_unary_samples(_away_from_integers),
    inplace=True,
)
def trunc(input: Tensor) -> Tensor:
    """Elementwise rounding toward zero; zero gradient."""
    a = as_tensor(input)
    if a._data.dtype == dtypes.bool_:
        raise not_implemented_for("trunc_vml_cpu", a._data.dtype)
    kernel = np.trunc if a._data.dtype.kind == "f" else np.copy
    return TruncBackward0.apply(a, kernel=kernel)


@register(samples=lambda rng: S.unary(rng, _away_from_integers), inplace=True)
def frac(input: Tensor) -> Tensor:
    """Elementwise fractional part ``x - trunc(x)`` (floating dtypes only)."""
    a = as_tensor(input)
    if a._data.dtype.kind != "f":
        raise not_implemented_for("frac_cpu", a._data.dtype)
    return FracBackward0.apply(a)


POSITIVE_BOOL_MESSAGE = "The `+` operator, on a bool tensor is not supported."


@register(samples=S.unary, operators=("__pos__",))
def positive(input: Tensor) -> Tensor:
    """``+x``: the input itself (PyTorch refuses it on bool)."""
    a = as_tensor(input)
    if a._data.dtype == dtypes.bool_:
        raise DtypeMismatchError(POSITIVE_BOOL_MESSAGE)
    return a


class LogitBackward0(Function):
    name = "LogitBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, eps: float | None) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.eps = eps
        x = _float(a)
        if eps is not None:
            x = np.clip(x, eps, 1 - eps)
        return np.asarray(np.log(x / (1 - x)), x.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        x = a._data
        if ctx.eps is None:
            outside, fill = (x < 0) | (x > 1), float("nan")
        else:
            outside, fill = (x < ctx.eps) | (x > 1 - ctx.eps), 0.0
        return where(Tensor._make(outside), fill, g / (a * (1 - a)))


@register(
    samples=lambda rng: [
        *S.unary(rng, _between(0.1, 0.9)),
        sample(S.rand(rng, 4, low=0.2, high=0.8), eps=0.1, note="eps"),
        sample(np.array([0.05, 0.5, 0.97]), eps=0.1, note="clipped by eps", gradcheck=False),
    ],
    inplace=True,
)
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """Elementwise log(x / (1 - x)), the input first clamped to [eps, 1 - eps] when given."""
    return LogitBackward0.apply(as_tensor(input), eps=None if eps is None else float(eps))


# -- predicates and cleaning ------------------------------------------------------------


def _special_values() -> Const:
    return Const(np.array([0.5, -np.inf, np.nan, np.inf, -0.0, 2.0]))


def _predicate_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_special_values(), note="specials"),
        sample(Const(S.rand(rng, 2, 3)), note="matrix"),
        sample(Const(np.array([1, -2, 3])), note="int64"),
        sample(Const(np.array([True, False])), note="bool"),
    ]


@register(samples=_predicate_samples, differentiable=False)
def isnan(input: Tensor) -> Tensor:
    """Elementwise ``x != x``, as bool."""
    return Tensor._make(np.isnan(as_tensor(input)._data))


@register(samples=_predicate_samples, differentiable=False)
def isinf(input: Tensor) -> Tensor:
    """Elementwise: is ±infinity, as bool."""
    return Tensor._make(np.isinf(as_tensor(input)._data))


@register(samples=_predicate_samples, differentiable=False)
def isfinite(input: Tensor) -> Tensor:
    """Elementwise: neither infinite nor NaN, as bool."""
    return Tensor._make(np.isfinite(as_tensor(input)._data))


@register(
    complex_inputs="signbit is not implemented for complex tensors.",
    samples=_predicate_samples,
    differentiable=False,
)
def signbit(input: Tensor) -> Tensor:
    """Elementwise: the sign bit is set (true for -0.0), as bool."""
    return Tensor._make(np.signbit(as_tensor(input)._data))


def _isclose_samples(rng: np.random.Generator) -> list[Any]:
    a = np.array([1.0, 1.0 + 1e-6, np.nan, np.inf, -np.inf, 0.0])
    b = np.array([1.0, 1.0, np.nan, np.inf, np.inf, 1e-9])
    return [
        sample(Const(a), Const(b), note="specials"),
        sample(Const(a), Const(b), equal_nan=True, note="equal_nan"),
        sample(Const(a), Const(b), rtol=0.0, atol=1e-3, note="atol"),
        sample(Const(np.array([1, 2, 3])), Const(np.array([1, 3, 3])), note="int64"),
    ]


@register(
    samples=_isclose_samples, differentiable=False, binding=Binding(tensors=("input", "other"))
)
def isclose(
    input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol·|other|`` (infinities equal only to
    themselves; NaN equal to NaN only with ``equal_nan``)."""
    a, b = as_tensor(input), as_tensor(other)
    if a._data.dtype != b._data.dtype:
        raise DtypeMismatchError(
            f"{dtypes.type_name(a._data.dtype)} did not match {dtypes.type_name(b._data.dtype)}"
        )
    if rtol < 0:
        raise BadArgumentsError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise BadArgumentsError(f"atol must be greater than or equal to zero, but got {atol}")
    x, y = a._data, b._data
    broadcast_shape(x.shape, y.shape)
    if x.dtype.kind == "b":
        return Tensor._make(np.asarray(np.equal(x, y)))
    with _quiet():
        out = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=bool(equal_nan))
    return Tensor._make(np.asarray(out))


class NanToNumBackward0(Function):
    name = "NanToNumBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, nan: float, posinf: Any, neginf: Any) -> np.ndarray:
        ctx.save_for_backward(a)
        x = a._data
        if x.dtype.kind != "f":
            return x.copy()
        info = np.finfo(x.dtype)
        return np.nan_to_num(
            x,
            nan=nan,
            posinf=info.max if posinf is None else posinf,
            neginf=info.min if neginf is None else neginf,
        )

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g * Tensor._make(np.isfinite(a._data))


@register(
    complex_inputs="nan_to_num is not implemented for '{type}' in this engine",
    samples=lambda rng: [
        sample(np.array([0.5, -np.inf, np.nan, np.inf, -1.5]), note="specials"),
        sample(
            np.array([np.nan, np.inf, -np.inf, 2.0]),
            nan=1.0,
            posinf=9.0,
            neginf=-9.0,
            note="replacements",
        ),
        *S.unary(rng),
    ],
    inplace=True,
)
def nan_to_num(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """NaN, +inf and -inf replaced (by 0 and the dtype's largest/smallest finite values by
    default); the gradient passes where the input was finite."""
    return NanToNumBackward0.apply(as_tensor(input), nan=nan, posinf=posinf, neginf=neginf)


# -- two-input functions ----------------------------------------------------------------


def _tensor_pair(input: Any, other: Any) -> tuple[np.dtype, Tensor, Tensor]:
    """Both operands as tensors of the result dtype's category (numbers wrapped as
    PyTorch wraps them: 0-d tensors of the result dtype)."""
    rt, (a, b) = operands(as_tensor(input), other)
    b = b if isinstance(b, Tensor) else as_tensor(b, rt)
    broadcast_shape(a._data.shape, b._data.shape)
    return rt, a, b


def _float_result(rt: np.dtype) -> np.dtype:
    return rt if rt.kind == "f" else dtypes.DEFAULT_FLOAT


def _binary_function(
    name: str,
    forward: Callable[[np.ndarray, np.ndarray], Any],
    backward: Callable[[Tensor, Tensor, Tensor, Any], tuple[Any, Any]],
    result: bool = False,
) -> type[Function]:
    """``f(a, b)`` broadcasting; ``backward(g, a, b, out)`` gives both gradients (``out``
    None unless ``result``: PyTorch's node saves the result only where its formula reads
    it, which decides whether an in-place write to the result fails the backward)."""

    def fwd(ctx: Any, a: Tensor, b: Tensor, *, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(a, b)
        if result:
            ctx.save_result()
        return np.asarray(forward(arr(a, dtype), arr(b, dtype)), dtype)

    def bwd(ctx: Any, g: Tensor) -> tuple[Any, Any]:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga, gb = backward(g, a, b, ctx.result if result else None)
        return (ga if need_a else None), (gb if need_b else None)

    return type(
        name,
        (Function,),
        {
            "name": name,
            "broadcasts": True,
            "forward": staticmethod(fwd),
            "backward": staticmethod(bwd),
            "jvp": SELF_ADJOINT,  # elementwise in each input
        },
    )


def _atan2_grad(g: Tensor, a: Tensor, b: Tensor, out: Any) -> tuple[Tensor, Tensor]:
    # PyTorch's gradient at the origin is 0, not 0/0
    d = a * a + b * b
    r = where(Tensor._make(d._data == 0), 0.0, d.reciprocal())
    return g * b * r, g * -a * r


def _hypot_grad(g: Tensor, a: Tensor, b: Tensor, out: Tensor) -> tuple[Tensor, Tensor]:
    return g * a / out, g * b / out


def _logaddexp_grad(g: Tensor, a: Tensor, b: Tensor, out: Any) -> tuple[Tensor, Tensor]:
    return g / (exp(b - a) + 1), g / (exp(a - b) + 1)


def _logaddexp2_grad(g: Tensor, a: Tensor, b: Tensor, out: Any) -> tuple[Tensor, Tensor]:
    return g / (exp2(b - a) + 1), g / (exp2(a - b) + 1)


Atan2Backward0 = _binary_function("Atan2Backward0", np.arctan2, _atan2_grad)
HypotBackward0 = _binary_function("HypotBackward0", np.hypot, _hypot_grad, result=True)
LogaddexpBackward0 = _binary_function("LogaddexpBackward0", np.logaddexp, _logaddexp_grad)
Logaddexp2Backward0 = _binary_function("Logaddexp2Backward0", np.logaddexp2, _logaddexp2_grad)


def _wrap_numbers(name: str) -> Callable[..., Any]:
    """PyTorch's spelling for ops that take tensors only: numbers wrapped as we wrap them."""

    def call(torch: Any, input: Any, other: Any, **kwargs: Any) -> Any:
        if not isinstance(other, torch.Tensor):
            other = torch.tensor(other, dtype=input.dtype)
        if not isinstance(input, torch.Tensor):
            input = torch.tensor(input, dtype=other.dtype)
        return getattr(torch, name)(input, other, **kwargs)

    return call


def _define_binary(
    name: str, fn: type[Function], doc: str, make_b: Any = S.rand, inplace: bool = True
) -> Callable[[Any, Any], Tensor]:
    """Register ``name(input, other)``; only atan2 of PyTorch's takes integers."""
    floating_only = name != "atan2"

    def op(input: Any, other: Any) -> Tensor:
        rt, a, b = _tensor_pair(input, other)
        if (floating_only and rt.kind != "f") or rt.kind == "c":
            raise not_implemented_for(f"{name}_cpu", rt)
        return fn.apply(a, b, dtype=_float_result(rt))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc

    def samples(rng: np.random.Generator) -> list[Any]:
        ints = (
            []
            if floating_only
            else [sample(Const(np.array([1, -2, 3])), Const(np.array([2, 2, -1])), note="int64")]
        )
        return [*S.binary(rng, S.rand, make_b), *ints]

    register(
        name,
        samples=samples,
        inplace=inplace,
        torch=_wrap_numbers(name),
        binding=Binding(tensors=("input", "other")),
        domain=(Domain(), make_b) if isinstance(make_b, Domain) else (),
    )(op)
    return op


atan2 = _define_binary(
    "atan2",
    Atan2Backward0,
    "Elementwise angle of the point (other, input), in (-π, π].",
    Domain(0.5, 2.0, signed=True),
)
hypot = _define_binary(
    "hypot", HypotBackward0, "Elementwise sqrt(input² + other²) without overflow.", S.away_from_zero
)
logaddexp = _define_binary(
    "logaddexp", LogaddexpBackward0, "Elementwise log(e**input + e**other), stable.", inplace=False
)
logaddexp2 = _define_binary(
    "logaddexp2",
    Logaddexp2Backward0,
    "Elementwise log2(2**input + 2**other), stable.",
    inplace=False,
)


class FmaxBackward0(Function):
    """``fmax``: NaN-ignoring maximum; ties give the whole gradient to ``input``."""

    name = "FmaxBackward0"
    jvp = SELF_ADJOINT
    broadcasts = True
    np_fn: Any = staticmethod(np.fmax)
    wins: Any = staticmethod(np.greater_equal)

    @classmethod
    def forward(cls, ctx: Any, a: Tensor, b: Tensor, *, dtype: np.dtype) -> np.ndarray:  # type: ignore[override]
        ctx.save_for_backward(a, b)
        return np.asarray(cls.np_fn(arr(a, dtype), arr(b, dtype)), dtype)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:  # type: ignore[override]
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        to_a = np.logical_or(cls.wins(a._data, b._data), np.isnan(b._data))
        shape = np.broadcast_shapes(a._data.shape, b._data.shape)
        to_a = Tensor._make(np.broadcast_to(to_a, shape))
        return (
            where(to_a, g, 0.0) if need_a else None,
            where(to_a, 0.0, g) if need_b else None,
        )


class FminBackward0(FmaxBackward0):
    """``fmin``: NaN-ignoring minimum; ties give the whole gradient to ``input``."""

    name = "FminBackward0"
    np_fn = staticmethod(np.fmin)
    wins = staticmethod(np.less_equal)


def _fmax_samples(rng: np.random.Generator) -> list[Any]:
    with_nan = S.rand(rng, 2, 3)
    with_nan[0, 1] = np.nan
    other = S.rand(rng, 2, 3)
    other[1, 2] = np.nan
    return [
        *(s for s in S.binary(rng) if "scalar" not in s.note),
        sample(with_nan, other, note="NaNs", gradcheck=False),
        sample(Const(np.array([1, -5, 3])), Const(np.array([2, -7, 3])), note="int64"),
    ]


@register(
    complex_inputs=(RuntimeError, "fmax not implemented for complex tensors."),
    samples=_fmax_samples,
    torch=_wrap_numbers("fmax"),
    binding=Binding(tensors=("input", "other")),
)
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum ignoring NaN (NaN only where both are NaN)."""
    rt, a, b = _tensor_pair(input, other)
    return FmaxBackward0.apply(a, b, dtype=rt)


@register(
    complex_inputs=(RuntimeError, "fmin not implemented for complex tensors."),
    samples=_fmax_samples,
    torch=_wrap_numbers("fmin"),
    binding=Binding(tensors=("input", "other")),
)
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum ignoring NaN (NaN only where both are NaN)."""
    rt, a, b = _tensor_pair(input, other)
    return FminBackward0.apply(a, b, dtype=rt)


class CopysignBackward0(Function):
    """``copysign(a, b)`` with a tensor ``b``: d/da is ±1 (0 at a = 0), d/db is 0."""

    name = "CopysignBackward0"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Any, *, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.save_result()
        return np.asarray(np.copysign(arr(a, dtype), arr(b, dtype)), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (a,) = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = None
        if need_a:
            ratio = where(Tensor._make(a._data == 0), 0.0, ctx.result / a)
            ga = g * ratio
        return ga, (_zeros_like(g) if need_b else None)


class CopysignBackward1(CopysignBackward0):
    """``copysign(a, number)``."""

    name = "CopysignBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, other: Any, dtype: np.dtype) -> np.ndarray:  # type: ignore[override]
        ctx.save_for_backward(a)
        ctx.save_result()
        return np.asarray(np.copysign(arr(a, dtype), other), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:  # type: ignore[override]
        (a,) = ctx.saved_tensors
        return g * where(Tensor._make(a._data == 0), 0.0, ctx.result / a)


@register(
    complex_inputs="\"copysign_cpu\" not implemented for '{type}'",
    samples=lambda rng: [
        *(s for s in S.binary(rng, S.away_from_zero, S.away_from_zero) if s.note != "scalar a"),
        sample(S.away_from_zero(rng, 3), Const(np.array([-0.0, 0.0, -1.0])), note="signed zeros"),
    ],
    inplace=True,
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def copysign(input: Any, other: Any) -> Tensor:
    """Elementwise |input| with the sign of other (the sign bit: -0.0 counts as negative)."""
    if isinstance(input, Tensor) and not isinstance(other, Tensor):
        rt = _float_result(dtypes.result_type(input, other))
        return CopysignBackward1.apply(input, other=float(other), dtype=rt)
    rt, a, b = _tensor_pair(input, other)
    return CopysignBackward0.apply(a, b, dtype=_float_result(rt))


def _xlogy_array(x: Any, y: Any, log: Any = np.log) -> np.ndarray:
    with _quiet():
        out = np.asarray(np.multiply(x, log(y)))
        return np.where((np.asarray(x) == 0) & ~np.isnan(y), np.zeros((), out.dtype), out)


class XlogyBackward0(Function):
    """``xlogy(x, y) = x·log(y)``, 0 where x = 0 (unless y is NaN). ``xlog1py`` is the
    same node over ``log1p``: ``shift`` 1, as ``log1p(y) = log(y + 1)``."""

    name = "XlogyBackward0"
    jvp = SELF_ADJOINT
    broadcasts = True
    log: Any = np.log
    shift = 0

    @staticmethod
    def again(g: Tensor, b: Tensor) -> Tensor:
        """The op itself, which the gradient of ``x`` is (``g · log(y)``)."""
        return xlogy(g, b)

    @classmethod
    def forward(cls, ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:  # type: ignore[override]
        ctx.save_for_backward(a, b)
        return np.asarray(_xlogy_array(arr(a, dtype), arr(b, dtype), cls.log), dtype)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:  # type: ignore[override]
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if need_a:
            bt = as_tensor(b)
            dead = np.asarray((np.asarray(arr(a, g.dtype)) == 0) & (bt._data <= -cls.shift))
            ga = where(Tensor._make(dead), 0.0, cls.again(g, bt))
        if need_b:
            gb = g * a / (b + cls.shift) if cls.shift else g * a / b
        return ga, gb


class XlogyBackward1(XlogyBackward0):
    """``xlogy(number, tensor)``."""

    name = "XlogyBackward1"


class XlogyBackward2(XlogyBackward0):
    """``xlogy(tensor, number)``."""

    name = "XlogyBackward2"


def _xlogy_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *S.binary(rng, S.rand, S.positive),
        sample(np.array([0.0, 0.0, 1.5]), np.array([0.0, 2.0, 0.5]), note="zeros", gradcheck=False),
        sample(
            Const(np.array([0.0, 0.0, 2.0])),
            Const(np.array([np.nan, 0.0, 3.0])),
            note="nan and zero",
        ),
    ]


@register(
    complex_inputs="\"xlogy_cpu\" not implemented for '{type}'",
    samples=_xlogy_samples,
    inplace=True,
    binding=Binding(either=("input", "other")),
)
def xlogy(input: Any, other: Any) -> Tensor:
    """Elementwise ``input · log(other)``, 0 where input is 0 (NaN other excepted)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        rt, a, b = _tensor_pair(input, other)
        return XlogyBackward0.apply(a, b, dtype=_float_result(rt))
    rt = _float_result(dtypes.result_type(input, other))
    if isinstance(input, Tensor):
        return XlogyBackward2.apply(input, float(other), dtype=rt)
    return XlogyBackward1.apply(float(input), as_tensor(other), dtype=rt)


_C_NAMES = {dtypes.float16: "c10::Half", dtypes.float32: "float", dtypes.float64: "double"}


def _c_name(dt: np.dtype) -> str:
    """The C++ type name PyTorch's lerp messages use."""
    return _C_NAMES.get(dt, dtypes.torch_name(dt))


def _lerp_array(a: np.ndarray, b: np.ndarray, w: Any) -> np.ndarray:
    """PyTorch's lerp: from the nearer end, so weight 1 gives ``end`` exactly."""
    d = b - a
    w = np.asarray(w)
    return np.where(np.abs(w) < 0.5, a + w * d, b - d * (1 - w))


class LerpBackward0(Function):
    """``lerp(start, end, number)``."""

    name = "LerpBackward0"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, *, weight: float, dtype: np.dtype) -> np.ndarray:
        ctx.weight = weight
        return np.asarray(_lerp_array(arr(a, dtype), arr(b, dtype), weight), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        w = ctx.weight
        return g * (1 - w), g * w


class LerpBackward1(Function):
    """``lerp(start, end, weight)`` with a tensor weight."""

    name = "LerpBackward1"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, w: Tensor, *, dtype: np.dtype) -> np.ndarray:
        need_w = ctx.needs_input_grad[2]  # as torch: the ends only for the weight's gradient
        ctx.save_for_backward(a if need_w else None, b if need_w else None, w)
        return np.asarray(_lerp_array(arr(a, dtype), arr(b, dtype), arr(w, dtype)), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        a, b, w = ctx.saved_tensors
        need_a, need_b, need_w = ctx.needs_input_grad
        return (
            g * (1 - w) if need_a else None,
            g * w if need_b else None,
            g * (b - a) if need_w else None,
        )


def _lerp_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), S.rand(rng, 2, 3), 0.3, note="number weight"),
        sample(S.rand(rng, 2, 3), S.rand(rng, 3), 0.8, note="number weight above 0.5"),
        sample(
            S.rand(rng, 2, 3),
            S.rand(rng, 3),
            S.rand(rng, 2, 1, low=0.0, high=1.0),
            note="tensor weight",
        ),
        sample(
            S.rand(rng, 4),
            S.rand(rng, 4),
            S.rand(rng, 4, low=-1.0, high=2.0),
            note="tensor weight outside [0, 1]",
        ),
        sample(S.rand(rng), S.rand(rng, 3), 1.0, note="weight 1"),
    ]


@register(samples=_lerp_samples, inplace=True)
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """Elementwise ``input + weight·(end - input)`` (weight a number or a tensor)."""
    a, b = as_tensor(input), as_tensor(end)
    if a._data.dtype != b._data.dtype:
        raise DtypeMismatchError(
            f"expected dtype {_c_name(a._data.dtype)} for `end` but got dtype "
            f"{_c_name(b._data.dtype)}"
        )
    if a._data.dtype.kind != "f":
        raise not_implemented_for("lerp_kernel_scalar", a._data.dtype)
    broadcast_shape(a._data.shape, b._data.shape)
    if isinstance(weight, Tensor):
        if weight._data.dtype != a._data.dtype:
            raise DtypeMismatchError(
                f"expected dtype {_c_name(a._data.dtype)} for `weight` but got dtype "
                f"{_c_name(weight._data.dtype)}"
            )
        broadcast_shape(a._data.shape, b._data.shape, weight._data.shape)
        return LerpBackward1.apply(a, b, weight, dtype=a._data.dtype)
    return LerpBackward0.apply(a, b, weight=float(weight), dtype=a._data.dtype)


@register(
    complex_inputs=(RuntimeError, "heaviside is not yet implemented for complex tensors."),
    samples=lambda rng: [
        sample(Const(np.array([-1.5, 0.0, 2.0, np.nan])), Const(np.array([0.5]))),
        sample(Const(np.array([-1, 0, 2])), Const(np.array([7, 8, 9])), note="int64"),
    ],
    differentiable=False,
    inplace=True,
    binding=Binding(tensors=("input", "values")),
)
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """Elementwise step: 0 below zero, 1 above, ``values`` at zero (NaN stays NaN)."""
    a = as_tensor(input)
    if a._data.dtype != values._data.dtype:
        raise DtypeMismatchError(
            "heaviside is not yet implemented for tensors with different dtypes."
        )
    x, v = a._data, values._data
    broadcast_shape(x.shape, v.shape)
    # PyTorch's kernel: x == 0 ? values : x > 0 (so NaN gives 0, where numpy gives NaN)
    return Tensor._make(np.asarray(np.where(x == 0, v, x > 0), x.dtype))


# -- dtype casts ------------------------------------------------------------------------


def _define_cast(name: str, dtype: np.dtype) -> None:
    def op(input: Tensor) -> Tensor:
        with _quiet():  # out-of-range values wrap or become inf, as in PyTorch: no warning
            return to_dtype(as_tensor(input), dtype)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"A copy as {dtypes.torch_name(dtype)} (the tensor itself if it already is)."

    def samples(rng: np.random.Generator) -> list[Any]:
        return [
            sample(S.rand(rng, 2, 3), note="float", gradcheck=dtype.itemsize == 8),
            sample(Const(np.array([-2, 0, 3])), note="int64"),
            sample(Const(np.array([True, False])), note="bool"),
            sample(Const(np.array([-2.7, 0.5, 2.7])), note="constant float"),
        ]

    # a cast to a narrower float rounds, so finite differences cannot see its gradient:
    # the op database checks half() and float() against PyTorch only
    differentiable = dtype == dtypes.float64
    register(name, samples=samples, function=False, differentiable=differentiable)(op)


for _name, _dt in (
    ("half", dtypes.float16),
    ("float", dtypes.float32),
    ("double", dtypes.float64),
    ("int", dtypes.int32),
    ("long", dtypes.int64),
    ("short", dtypes.int16),
    ("char", dtypes.int8),
    ("byte", dtypes.uint8),
    ("bool", dtypes.bool_),
):
    _define_cast(_name, _dt)
