"""Elementwise math: exp/log and friends, the activations, clamp, maximum/minimum.

Each op's forward is numpy; its ``vjp`` is the numpy twin of its ``backward``
for the usual backward without ``create_graph``. The activations' backward
rules call a helper Function named as PyTorch names the node of its backward
formula (``ThresholdBackwardBackward0``, ``SigmoidBackwardBackward0``, ...):
one fused numpy kernel per step, differentiable again for higher order.
PyTorch's choice of what to save (input or result) is kept, because it decides
which in-place edits make backward fail.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..binding import Binding
from ..dual import LINEAR, SELF_ADJOINT, needs_derivative
from ..errors import BadArgumentsError, DtypeMismatchError
from ..fpstate import quiet as _quiet
from ..function import Function
from ..primitives import where
from ..registry import Const, Domain, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import arr, as_tensor, broadcast_shape, cast, operands

# -- helpers ------------------------------------------------------------------------------


def _float(a: Tensor) -> np.ndarray:
    """Integer inputs to unary float functions compute in the default float dtype; a
    complex input is refused (casting it would drop its imaginary part silently)."""
    dt = a._data.dtype
    if dt.kind == "c":
        raise KernelDtypeError(
            f"this function is not implemented for '{dtypes.type_name(dt)}' in this engine"
        )
    return a._data if dtypes.is_floating(dt) else a._data.astype(dtypes.DEFAULT_FLOAT)


def _floating_only(a: Tensor, kernel: str) -> np.ndarray:
    """The activations PyTorch implements for floating dtypes only, with its error."""
    data = a._data
    if data.dtype.kind != "f":
        raise KernelDtypeError(f"\"{kernel}\" not implemented for '{dtypes.type_name(data.dtype)}'")
    return data


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t._data.shape, t._data.dtype))


class KernelDtypeError(DtypeMismatchError, NotImplementedError):
    """PyTorch's ``"<kernel>" not implemented for '<Type>'`` (a NotImplementedError)."""


class ArgumentTypeError(BadArgumentsError, TypeError):
    """A wrong argument type, where PyTorch raises TypeError."""


_SAME_SIZE_INT: dict[int, Any] = {
    2: np.dtype(np.int16),
    4: np.dtype(np.int32),
    8: np.dtype(np.int64),
}


def _mask_grad(g: Any, keep: Any) -> Any:
    """``where(keep, g, 0)`` exactly as PyTorch computes it (an infinite or NaN
    gradient at a dropped position gives 0, not inf * 0), as a bitwise and of the
    float bits with an all-ones/all-zeros mask: faster than ``np.where`` on a
    random mask, and no floating-point warnings."""
    g = np.asarray(g)
    ints = _SAME_SIZE_INT[g.dtype.itemsize]
    bits = np.negative(keep, dtype=ints)  # type: ignore[call-overload]
    out = np.empty(np.broadcast_shapes(g.shape, bits.shape), g.dtype)  # owned: no copy later
    np.bitwise_and(g.view(ints), bits, out=out.view(ints))
    return out


class MaskedGrad(Function):
    """``where(keep, g, 0)`` (halved where ``half``) with a constant mask: the
    backward of clamp, maximum and minimum, itself linear in ``g``."""

    name = "WhereBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, keep: np.ndarray, half: np.ndarray | None = None) -> Any:
        ctx.save_for_backward(keep, half)  # saved, so freed after backward like PyTorch's
        return _select(g._data, keep, half)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        keep, half = ctx.saved_tensors
        return MaskedGrad.apply(gg, keep=keep, half=half)


def _select(g: Any, keep: np.ndarray, half: np.ndarray | None) -> Any:
    out = _mask_grad(g, keep)
    if half is not None and half.any():
        out = np.where(half, out * 0.5, out)
    return out


# -- erf (numpy has none): for gelu ---------------------------------------------------------


def _erfcx_fit(lo: float, hi: float, degree: int) -> tuple[float, float, tuple[float, ...]]:
    """erfcx(a) = exp(a²)·erfc(a) interpolated at Chebyshev nodes of [lo, hi], as power
    series coefficients in s = (2a - lo - hi) / (hi - lo) (well conditioned: all below 1)."""
    n = degree + 1
    theta = (np.arange(n) + 0.5) * np.pi / n
    nodes = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(theta)
    values = np.array([math.erfc(v) * math.exp(v * v) for v in nodes])
    coef = 2.0 / n * (np.cos(np.outer(np.arange(n), theta)) @ values)
    coef[0] /= 2
    return lo, hi, tuple(np.polynomial.chebyshev.cheb2poly(coef).tolist())


# erf(a)/a on [0, 1) by its Taylor series in a² (alternating, terms below 1: no cancellation)
_ERF_TAYLOR = tuple(
    (-1) ** n * 2.0 / math.sqrt(math.pi) / (math.factorial(n) * (2 * n + 1)) for n in range(18)
)
# erf(a) = 1 - exp(-a²)·erfcx(a) on [1, 6) (degrees: the least giving ~1 ulp on each
# piece); beyond 6, erf is 1 in float64
_ERFCX_PIECES = (_erfcx_fit(1.0, 2.0, 18), _erfcx_fit(2.0, 3.5, 13), _erfcx_fit(3.5, 6.0, 10))


def _horner(coef: tuple[float, ...], s: np.ndarray) -> np.ndarray:
    r = np.full_like(s, coef[-1])
    for c in coef[-2::-1]:
        r *= s
        r += c
    return r


def _erf(x: Any) -> np.ndarray:
    """The error function in float64, within a few ulp of ``math.erf`` (numpy has none).
    In-place Horner steps on each piece's elements only: gelu's cost is this."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x).reshape(-1)
    out = np.ones_like(a)
    small = a < 1.0
    b = a[small]
    r = _horner(_ERF_TAYLOR, b * b)
    r *= b
    out[small] = r
    for lo, hi, coef in _ERFCX_PIECES:
        piece = (a >= lo) & (a < hi)
        if not piece.any():
            continue
        b = a[piece]
        s = b * (2.0 / (hi - lo))
        s -= (lo + hi) / (hi - lo)
        r = _horner(coef, s)
        np.square(b, out=b)
        np.negative(b, out=b)
        np.exp(b, out=b)
        r *= b
        out[piece] = np.subtract(1.0, r, out=r)
    out[np.isnan(a)] = np.nan
    return np.copysign(out.reshape(x.shape), x)


# -- one-input functions with a one-line derivative -----------------------------------------


def _unary(
    name: str,
    forward: Callable[[np.ndarray], np.ndarray],
    backward: Callable[[Tensor, Tensor], Tensor],
    *,
    saves: str,
) -> type[Function]:
    """A Function for ``y = f(x)`` whose derivative needs the input (``saves="input"``)
    or the result (``saves="result"``), as PyTorch's derivatives.yaml says."""
    use_result = saves == "result"

    def fwd(ctx: Any, a: Tensor) -> np.ndarray:
        if use_result:
            ctx.save_result()
        else:
            ctx.save_for_backward(a)
        return forward(_float(a))

    def bwd(ctx: Any, g: Tensor) -> Tensor:
        return backward(g, ctx.result if use_result else ctx.saved_tensors[0])

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


ExpBackward0 = _unary("ExpBackward0", np.exp, lambda g, y: g * y, saves="result")
LogBackward0 = _unary("LogBackward0", np.log, lambda g, x: g / x, saves="input")
Log1PBackward0 = _unary("Log1PBackward0", np.log1p, lambda g, x: g / (x + 1), saves="input")
Expm1Backward0 = _unary("Expm1Backward0", np.expm1, lambda g, y: g * (y + 1), saves="result")
SqrtBackward0 = _unary("SqrtBackward0", np.sqrt, lambda g, y: g / (2 * y), saves="result")
RsqrtBackward0 = _unary(
    "RsqrtBackward0",
    lambda x: 1 / np.sqrt(x),
    lambda g, y: -0.5 * g * (y * y * y),
    saves="result",
)
SinBackward0 = _unary("SinBackward0", np.sin, lambda g, x: g * cos(x), saves="input")
CosBackward0 = _unary("CosBackward0", np.cos, lambda g, x: g * -sin(x), saves="input")
TanBackward0 = _unary(
    "TanBackward0",
    np.tan,
    lambda g, y: g * (1 + y * y),
    saves="result",
)


def _positive_samples(rng: np.random.Generator) -> list[Any]:
    return S.unary(rng, S.positive)


@register(samples=S.unary, inplace=True)
def exp(input: Tensor) -> Tensor:
    """Elementwise e**x."""
    return ExpBackward0.apply(as_tensor(input))


@register(samples=_positive_samples, inplace=True, domain=(Domain(0.5, 2.0),))
def log(input: Tensor) -> Tensor:
    """Elementwise natural logarithm (d/dx at 0 is infinite, as in PyTorch)."""
    return LogBackward0.apply(as_tensor(input))


def _above_minus_one(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return S.rand(rng, *shape, low=-0.5, high=2.0)


@register(
    samples=lambda rng: S.unary(rng, _above_minus_one), inplace=True, domain=(Domain(-0.5, 2.0),)
)
def log1p(input: Tensor) -> Tensor:
    """Elementwise log(1 + x), accurate for small x."""
    return Log1PBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def expm1(input: Tensor) -> Tensor:
    """Elementwise e**x - 1, accurate for small x."""
    return Expm1Backward0.apply(as_tensor(input))


@register(samples=_positive_samples, inplace=True, domain=(Domain(0.5, 2.0),))
def sqrt(input: Tensor) -> Tensor:
    """Elementwise square root (nan below 0; the gradient at 0 is infinite)."""
    return SqrtBackward0.apply(as_tensor(input))


@register(samples=_positive_samples, inplace=True, domain=(Domain(0.5, 2.0),))
def rsqrt(input: Tensor) -> Tensor:
    """Elementwise 1 / sqrt(x)."""
    return RsqrtBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def sin(input: Tensor) -> Tensor:
    """Elementwise sine."""
    return SinBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def cos(input: Tensor) -> Tensor:
    """Elementwise cosine."""
    return CosBackward0.apply(as_tensor(input))


def _tan_domain(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return S.rand(rng, *shape, low=-1.2, high=1.2)


@register(samples=lambda rng: S.unary(rng, _tan_domain), inplace=True, domain=(Domain(-1.2, 1.2),))
def tan(input: Tensor) -> Tensor:
    """Elementwise tangent."""
    return TanBackward0.apply(as_tensor(input))


# -- activations: the hot three -------------------------------------------------------------


def _grad_function(
    name: str,
    kernel: Callable[..., Any],
    second: Callable[..., Tensor],
) -> type[Function]:
    """The Function of an activation's backward formula ``kernel(g, saved, **params)``
    (linear in ``g``): what PyTorch records as ``<Op>BackwardBackward0`` under
    create_graph. ``second(gg, g, saved, **params)`` is its derivative in ``saved``."""

    def forward(ctx: Any, g: Tensor, saved: Tensor, **params: Any) -> Any:
        ctx.save_for_backward(g, saved)
        ctx.params = params
        return kernel(g._data, saved._data, **params)

    def backward(ctx: Any, gg: Tensor) -> tuple[Tensor | None, Tensor | None]:
        g, saved = ctx.saved_tensors
        need_g, need_saved = ctx.needs_input_grad
        return (
            cls.apply(gg, saved, **ctx.params) if need_g else None,
            second(gg, g, saved, **ctx.params) if need_saved else None,
        )

    cls: type[Function] = type(
        name,
        (Function,),
        {
            "name": name,
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "jvp": SELF_ADJOINT,  # elementwise in each input
        },
    )
    return cls


def _threshold_kernel(g: Any, out: Any) -> Any:
    """PyTorch's threshold_backward(g, relu(x), 0): out <= 0 ? 0 : g. A relu result is
    +0, positive or NaN, so "keep" is its bits read as an integer being > 0: one
    comparison, and a NaN result passes the gradient as in PyTorch."""
    out = np.asarray(out)
    return _mask_grad(g, np.greater(out.view(_SAME_SIZE_INT[out.dtype.itemsize]), 0))


def _sigmoid_kernel(g: Any, y: Any) -> Any:
    t = 1 - y
    t *= y
    t *= g
    return t


def _tanh_kernel(g: Any, y: Any) -> Any:
    t = y * y
    t = np.subtract(1, t, out=t) if type(t) is np.ndarray else 1 - t
    t *= g
    return t


ThresholdBackwardBackward0 = _grad_function(
    "ThresholdBackwardBackward0", _threshold_kernel, lambda gg, g, out: _zeros_like(out)
)
SigmoidBackwardBackward0 = _grad_function(
    "SigmoidBackwardBackward0", _sigmoid_kernel, lambda gg, g, y: gg * g * (1 - 2 * y)
)
TanhBackwardBackward0 = _grad_function(
    "TanhBackwardBackward0", _tanh_kernel, lambda gg, g, y: gg * g * (-2 * y)
)


def _relu_array(x: np.ndarray) -> np.ndarray:
    """``where(x < 0, 0, x)``, keeping -0.0 and NaN as PyTorch does: for floats the bits
    of x and-ed with an all-ones mask where ``x >= 0`` or NaN (about half the time of
    ``np.where`` with a broadcast zero, and no second float array)."""
    ints = _SAME_SIZE_INT.get(x.dtype.itemsize) if x.dtype.kind == "f" else None
    if ints is None or x.ndim == 0:
        return np.asarray(np.where(x < 0, np.zeros((), x.dtype), x))
    out = np.empty(x.shape, x.dtype)
    bits = out.view(ints)
    np.subtract(np.less(x, 0), 1, out=bits, dtype=ints)  # drop: 0, keep: -1 (all ones)
    np.bitwise_and(x.view(ints), bits, out=bits)
    return out


class ReluBackward0(Function):
    name = "ReluBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_result()
        return _relu_array(a._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ThresholdBackwardBackward0.apply(g, ctx.result)

    vjp_row = "mlp"  # the numpy twin below earns its place on this bench row

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> Any:
        return _threshold_kernel(g, ctx.result._data)


def _sigmoid_array(x: np.ndarray) -> Any:
    with _quiet():
        e = np.exp(-x)
    e += 1
    if type(e) is np.ndarray:
        return np.reciprocal(e, out=e)
    return np.reciprocal(e)


class SigmoidBackward0(Function):
    name = "SigmoidBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Any:
        ctx.save_result()
        return _sigmoid_array(_float(a))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return SigmoidBackwardBackward0.apply(g, ctx.result)


class TanhBackward0(Function):
    name = "TanhBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_result()
        return np.tanh(_float(a))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return TanhBackwardBackward0.apply(g, ctx.result)


def _kinked(rng: np.random.Generator) -> list[Any]:
    """Unary samples kept away from a kink at 0."""
    return S.unary(rng, S.away_from_zero)


def _nn(name: str) -> Callable[..., Any]:
    """PyTorch's spelling for an op that lives in ``torch.nn.functional``."""
    return lambda torch, *args, **kwargs: getattr(torch.nn.functional, name)(*args, **kwargs)


@register(complex_inputs="clamp is not supported for complex types", samples=_kinked, inplace=True)
def relu(input: Tensor) -> Tensor:
    """Elementwise max(x, 0); the gradient at 0 is 0, as in PyTorch."""
    a = as_tensor(input)
    if a._data.dtype.kind == "b":
        raise DtypeMismatchError("Boolean inputs not supported for relu")
    return ReluBackward0.apply(a)


@register(
    samples=lambda rng: [*S.unary(rng), sample(S.rand(rng, 3, low=-30.0, high=30.0), note="tails")],
    inplace=True,
)
def sigmoid(input: Tensor) -> Tensor:
    """Elementwise logistic function 1 / (1 + e**-x)."""
    return SigmoidBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return TanhBackward0.apply(as_tensor(input))


# -- activations with parameters ------------------------------------------------------------


def _leaky_kernel(g: Any, x: Any, *, slope: float) -> Any:
    return np.where(x > 0, g, g * slope)


LeakyReluBackwardBackward0 = _grad_function(
    "LeakyReluBackwardBackward0", _leaky_kernel, lambda gg, g, x, slope: _zeros_like(x)
)


class LeakyReluBackward0(Function):
    name = "LeakyReluBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, slope: float) -> Any:
        ctx.save_for_backward(a)
        ctx.slope = slope
        x = _floating_only(a, "leaky_relu_cpu")
        if 0 <= slope <= 1:
            return np.maximum(x, x * slope)
        if slope > 1:
            return np.minimum(x, x * slope)
        return np.where(x > 0, x, x * slope)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return LeakyReluBackwardBackward0.apply(g, a, slope=ctx.slope)


@register(
    samples=lambda rng: [
        *_kinked(rng),
        sample(S.away_from_zero(rng, 2, 3), 0.2, note="slope 0.2"),
        sample(S.away_from_zero(rng, 4), negative_slope=1.5, note="slope above 1"),
        sample(S.away_from_zero(rng, 4), negative_slope=-0.5, note="negative slope"),
    ],
    method=False,
    torch=_nn("leaky_relu"),
)
def leaky_relu(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """Elementwise x if x > 0 else negative_slope * x."""
    return LeakyReluBackward0.apply(as_tensor(input), slope=float(negative_slope))


def _elu_kernel(g: Any, x: Any, *, alpha: float) -> Any:
    return np.where(x <= 0, g * alpha * np.exp(np.minimum(x, 0)), g)


def _elu_second(gg: Tensor, g: Tensor, x: Tensor, *, alpha: float) -> Tensor:
    neg = Tensor._make(x._data <= 0)
    return where(neg, gg * g * alpha * exp(clamp(x, max=0.0)), 0.0)


EluBackwardBackward0 = _grad_function("EluBackwardBackward0", _elu_kernel, _elu_second)


class EluBackward0(Function):
    name = "EluBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, alpha: float) -> Any:
        ctx.save_for_backward(a)
        ctx.alpha = alpha
        x = _floating_only(a, "elu_cpu")
        return np.where(x <= 0, np.expm1(np.minimum(x, 0)) * alpha, x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return EluBackwardBackward0.apply(g, a, alpha=ctx.alpha)


@register(
    samples=lambda rng: [*_kinked(rng), sample(S.away_from_zero(rng, 2, 3), alpha=0.5)],
    method=False,
    torch=_nn("elu"),
)
def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Elementwise x if x > 0 else alpha * (e**x - 1)."""
    return EluBackward0.apply(as_tensor(input), alpha=float(alpha))


_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


def _gelu_cdf(x: np.ndarray) -> np.ndarray:
    """Φ(x) = (1 + erf(x/√2)) / 2 in float64."""
    return 0.5 * (1.0 + _erf(x * _SQRT1_2))


def _gelu_kernel(g: Any, x: Any, *, approximate: str, cdf: Any = None) -> Any:
    """PyTorch's gelu_backward: g · d/dx gelu(x)."""
    if approximate == "tanh":
        x_sq = x * x
        t = np.tanh(_GELU_BETA * (x + _GELU_KAPPA * x_sq * x))
        left = 0.5 * (1 + t)
        right = 0.5 * x * (1 - t * t) * _GELU_BETA * (1 + 3 * _GELU_KAPPA * x_sq)
        return g * (left + right)
    if cdf is None:
        cdf = _gelu_cdf(x)
    pdf = np.exp(-0.5 * np.square(x, dtype=np.float64)) * _INV_SQRT_2PI
    return (g * (cdf + x * pdf)).astype(np.result_type(g, x), copy=False)


def _gelu_second(gg: Tensor, g: Tensor, x: Tensor, *, approximate: str) -> Tensor:
    """d/dx of gelu's derivative, in engine ops (so it differentiates once more)."""
    if approximate == "tanh":
        x_sq = x * x
        t = tanh((x + x_sq * x * _GELU_KAPPA) * _GELU_BETA)
        du = (x_sq * (3 * _GELU_KAPPA) + 1) * _GELU_BETA
        ddu = x * (6 * _GELU_BETA * _GELU_KAPPA)
        return gg * g * ((1 - t * t) * (du + x * 0.5 * (ddu - 2 * t * du * du)))
    pdf = exp(x * x * -0.5) * _INV_SQRT_2PI
    return gg * g * (pdf * (2 - x * x))


GeluBackwardBackward0 = _grad_function("GeluBackwardBackward0", _gelu_kernel, _gelu_second)


class GeluBackward0(Function):
    name = "GeluBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, approximate: str) -> Any:
        ctx.approximate = approximate
        x = _floating_only(a, "GeluKernelImpl")
        if approximate == "tanh":
            ctx.save_for_backward(a)
            inner = _GELU_BETA * (x + _GELU_KAPPA * (x * x * x))
            return 0.5 * x * (1 + np.tanh(inner))
        cdf = _gelu_cdf(x).astype(x.dtype, copy=False)
        # the backward reuses Φ(x): erf is most of gelu's cost
        ctx.save_for_backward(a, cdf)
        return x * cdf

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        a = ctx.saved_tensors[0]
        return GeluBackwardBackward0.apply(g, a, approximate=ctx.approximate)

    vjp_row = "block"  # the twin reuses the forward's saved cdf: erf is most of gelu's cost

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> Any:
        saved = ctx.saved_tensors
        cdf = saved[1] if len(saved) > 1 else None
        return _gelu_kernel(g, saved[0]._data, approximate=ctx.approximate, cdf=cdf)


@register(
    samples=lambda rng: [
        *S.unary(rng, lambda rng, *s: S.rand(rng, *s, low=-4.0, high=4.0)),
        sample(S.rand(rng, 2, 3, low=-4.0, high=4.0), approximate="tanh", note="tanh"),
        sample(S.rand(rng, low=-4.0, high=4.0), approximate="tanh", note="tanh 0-d"),
    ],
    method=False,
    torch=_nn("gelu"),
)
def gelu(input: Tensor, *, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit x·Φ(x), or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise BadArgumentsError("approximate argument must be either none or tanh.")
    return GeluBackward0.apply(as_tensor(input), approximate=approximate)


class SiluBackward0(Function):
    name = "SiluBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Any:
        ctx.save_for_backward(a)
        x = _floating_only(a, "silu_cpu")
        return x / (1 + np.exp(-x))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        # PyTorch records this composite too (the node is a MulBackward0)
        (x,) = ctx.saved_tensors
        s = sigmoid(x)
        return g * s * (1 + x * (1 - s))


@register(samples=S.unary, method=False, torch=_nn("silu"))
def silu(input: Tensor) -> Tensor:
    """Elementwise x·sigmoid(x) (swish)."""
    return SiluBackward0.apply(as_tensor(input))


def _softplus_kernel(g: Any, x: Any, *, beta: float, threshold: float) -> Any:
    z = np.exp(x * beta)
    return np.where(x * beta > threshold, g, g * z / (z + 1))


def _softplus_second(gg: Tensor, g: Tensor, x: Tensor, *, beta: float, threshold: float) -> Tensor:
    smooth = Tensor._make(np.logical_not(x._data * beta > threshold))
    s = sigmoid(x * beta)
    return where(smooth, gg * g * beta * s * (1 - s), 0.0)


SoftplusBackwardBackward0 = _grad_function(
    "SoftplusBackwardBackward0", _softplus_kernel, _softplus_second
)


class SoftplusBackward0(Function):
    name = "SoftplusBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, beta: float, threshold: float) -> Any:
        ctx.save_for_backward(a)
        ctx.beta, ctx.threshold = beta, threshold
        x = _floating_only(a, "softplus_cpu")
        bx = x * beta
        return np.where(bx > threshold, x, np.log1p(np.exp(bx)) / beta)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return SoftplusBackwardBackward0.apply(g, a, beta=ctx.beta, threshold=ctx.threshold)


@register(
    samples=lambda rng: [
        *S.unary(rng),
        sample(S.rand(rng, 2, 3), beta=2.0, threshold=1.5, note="beta and threshold"),
        sample(S.rand(rng, 4, low=25.0, high=30.0), note="linear region"),
    ],
    method=False,
    torch=_nn("softplus"),
)
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Elementwise log(1 + e**(beta·x)) / beta, linear where beta·x > threshold."""
    return SoftplusBackward0.apply(as_tensor(input), beta=float(beta), threshold=float(threshold))


# -- clamp ----------------------------------------------------------------------------------


def _within(x: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """Where the gradient passes: min <= x <= max (the boundary included, as in PyTorch)."""
    if lo is None:
        return np.less_equal(x, hi)
    if hi is None:
        return np.greater_equal(x, lo)
    return np.greater_equal(x, lo) & np.less_equal(x, hi)


def _clip(x: np.ndarray, lo: Any, hi: Any) -> Any:
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


class ClampBackward1(Function):
    """clamp with number bounds."""

    name = "ClampBackward1"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, lo: Any, hi: Any, dtype: np.dtype) -> Any:
        ctx.save_for_backward(a)
        ctx.lo, ctx.hi = lo, hi
        return _clip(cast(a._data, dtype), lo, hi)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return MaskedGrad.apply(g, keep=_within(a._data, ctx.lo, ctx.hi))


class ClampMinBackward0(ClampBackward1):
    name = "ClampMinBackward0"


class ClampMaxBackward0(ClampBackward1):
    name = "ClampMaxBackward0"


def _data(t: Tensor | None, dtype: np.dtype) -> Any:
    return None if t is None else cast(t._data, dtype)


class ClampBackward0(Function):
    """clamp with tensor bounds: each bound gets the gradient where it is the result."""

    name = "ClampBackward0"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, lo: Tensor | None, hi: Tensor | None, *, dtype: np.dtype
    ) -> Any:
        ctx.save_for_backward(a, lo, hi)
        return _clip(cast(a._data, dtype), _data(lo, dtype), _data(hi, dtype))

    @staticmethod
    def masks(ctx: Any) -> tuple[Any, Any, Any]:
        a, lo, hi = ctx.saved_tensors
        x = a._data
        lo_d: Any = None if lo is None else lo._data
        hi_d: Any = None if hi is None else hi._data
        need_a, need_lo, need_hi = ctx.needs_input_grad
        shape = broadcast_shape(*(t._data.shape for t in (a, lo, hi) if t is not None))
        keep_a = keep_lo = keep_hi = None
        if need_a:
            keep_a = np.broadcast_to(_within(x, lo_d, hi_d), shape)
        if need_lo:
            keep_lo = np.less(x, lo_d)
            if hi_d is not None:
                keep_lo = keep_lo & np.less(lo_d, hi_d)
            keep_lo = np.broadcast_to(keep_lo, shape)
        if need_hi:
            keep_hi = np.greater(x, hi_d)
            if lo_d is not None:
                keep_hi = keep_hi | np.less(hi_d, lo_d)
            keep_hi = np.broadcast_to(keep_hi, shape)
        return keep_a, keep_lo, keep_hi

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        return tuple(
            None if keep is None else MaskedGrad.apply(g, keep=keep)
            for keep in ClampBackward0.masks(ctx)
        )


class ClampMinBackward1(ClampBackward0):
    name = "ClampMinBackward1"


class ClampMaxBackward1(ClampBackward0):
    name = "ClampMaxBackward1"


def _as_number(bound: Any) -> Any:
    return bound.item() if isinstance(bound, Tensor) else bound


def _number_like(bound: Any) -> bool:
    """PyTorch's number overload of clamp also takes a 0-d tensor that needs no grad."""
    return not isinstance(bound, Tensor) or (bound.ndim == 0 and not needs_derivative(bound))


def _mixed_bounds_message(name: str, lo: Any, hi: Any) -> str:
    got = ", ".join(
        ["Tensor"] + [type(v).__name__ if not isinstance(v, Tensor) else "Tensor" for v in (lo, hi)]
    )
    return (
        f"{name}() received an invalid combination of arguments - got ({got}), but expected "
        "one of:\n"
        " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
        " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n"
    )


def _clamp(
    input: Any,
    lo: Any,
    hi: Any,
    scalar_fn: type[Function],
    tensor_fn: type[Function],
    name: str = "clamp",
) -> Tensor:
    a = as_tensor(input)
    bounds = [b for b in (lo, hi) if b is not None]
    tensors = [b for b in bounds if isinstance(b, (Tensor, list, tuple, np.ndarray))]
    if len(bounds) == 2 and len(tensors) == 1:
        # clamp(x, 0-d tensor, number) picks PyTorch's number overload; other mixes of a
        # number and a tensor match neither overload: PyTorch's TypeError
        if not all(_number_like(b) for b in bounds):
            raise ArgumentTypeError(_mixed_bounds_message(name, lo, hi))
        lo, hi = _as_number(lo), _as_number(hi)
        tensors = []
    if not tensors:
        rt = dtypes.result_type(a, *bounds)
        return scalar_fn.apply(a, lo=lo, hi=hi, dtype=rt)
    rt = dtypes.result_type(a, *bounds)
    lo_t = None if lo is None else as_tensor(lo, None if isinstance(lo, Tensor) else rt)
    hi_t = None if hi is None else as_tensor(hi, None if isinstance(hi, Tensor) else rt)
    broadcast_shape(*(t.shape for t in (a, lo_t, hi_t) if t is not None))
    return tensor_fn.apply(a, lo_t, hi_t, dtype=rt)


def _banded(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Values near ±0.5 and ±1.5, at least 0.3 from the clamp bounds ±1 and 0."""
    centers = rng.choice([-1.5, -0.5, 0.5, 1.5], size=shape)
    return centers + rng.uniform(-0.2, 0.2, size=shape)


def _clamp_samples(rng: np.random.Generator) -> list[Any]:
    def near(value: float, *shape: int) -> np.ndarray:
        return value + rng.uniform(-0.1, 0.1, size=shape)

    return [
        sample(_banded(rng, 2, 3), -1.0, 1.0, note="both"),
        sample(_banded(rng, 4), min=0.0, note="min only"),
        sample(_banded(rng, 4), max=0.0, note="max only"),
        sample(_banded(rng), -1.0, 1.0, note="0-d"),
        sample(_banded(rng, 0, 3), -1.0, 1.0, note="empty"),
        sample(_banded(rng, 3), 1.0, -1.0, note="min above max"),
        sample(_banded(rng, 2, 3), near(-1.0, 3), near(1.0, 2, 1), note="tensor bounds"),
        sample(_banded(rng, 2, 3), min=near(0.0, 3), note="tensor min"),
        sample(_banded(rng, 3), max=near(0.0, 2, 1), note="tensor max, broadcast"),
        sample(_banded(rng, 3), near(1.0, 3), near(-1.0, 3), note="tensor min above max"),
        sample(Const(np.array([-2.0, -1.0, 0.0, 1.0, 2.0])), -1.0, 1.0, note="constant input"),
        sample(np.array([-1.0, -0.5, 1.0, 1.5]), -1.0, 1.0, note="at the bounds", gradcheck=False),
    ]


@register(
    complex_inputs="clamp is not supported for complex types", samples=_clamp_samples, inplace=True
)
def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Elementwise clamp into [min, max] (numbers, or tensors that get gradients too).

    The gradient passes where min <= x <= max, boundary included, as in PyTorch."""
    if min is None and max is None:
        raise BadArgumentsError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamp(input, min, max, ClampBackward1, ClampBackward0)


@register(
    complex_inputs="clamp is not supported for complex types", samples=_clamp_samples, inplace=True
)
def clip(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Alias of clamp."""
    if min is None and max is None:
        raise BadArgumentsError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamp(input, min, max, ClampBackward1, ClampBackward0, "clip")


def _clamp_one_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_banded(rng, 2, 3), 0.0),
        sample(_banded(rng), 1.0, note="0-d"),
        sample(_banded(rng, 0, 2), 0.0, note="empty"),
        sample(_banded(rng, 2, 3), rng.uniform(-0.1, 0.1, 3), note="tensor bound, broadcast"),
        sample(np.array([-1.0, 0.0, 1.0]), 0.0, note="at the bound", gradcheck=False),
    ]


@register(
    complex_inputs="clamp is not supported for complex types",
    samples=_clamp_one_samples,
    inplace=True,
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    """Elementwise max(x, min) as clamp does it (the gradient passes where x >= min)."""
    return _clamp(input, min, None, ClampMinBackward0, ClampMinBackward1)


@register(
    complex_inputs="clamp is not supported for complex types",
    samples=_clamp_one_samples,
    inplace=True,
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    """Elementwise min(x, max) as clamp does it (the gradient passes where x <= max)."""
    return _clamp(input, None, max, ClampMaxBackward0, ClampMaxBackward1)


# -- maximum / minimum ----------------------------------------------------------------------


def _extremum(name: str, np_fn: Any, loses: Any) -> type[Function]:
    """maximum/minimum: the gradient goes to the winner; ties split it in halves.
    ``loses(a, b)`` is where ``a`` is not the result (``a < b`` for maximum)."""

    def masks(ctx: Any) -> tuple[Any, Any, Any]:
        a, b = ctx.saved_tensors
        x, y = arr(a, ctx.dtype), arr(b, ctx.dtype)
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        tie = np.broadcast_to(np.equal(x, y), shape)
        need_a, need_b = ctx.needs_input_grad
        keep_a = np.broadcast_to(np.logical_not(loses(x, y)), shape) if need_a else None
        keep_b = np.broadcast_to(np.logical_not(loses(y, x)), shape) if need_b else None
        return keep_a, keep_b, tie

    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> Any:
        ctx.save_for_backward(a, b)
        ctx.dtype = dtype
        return np_fn(arr(a, dtype), arr(b, dtype))

    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        keep_a, keep_b, tie = masks(ctx)
        return tuple(  # type: ignore[return-value]
            None if keep is None else MaskedGrad.apply(g, keep=keep, half=tie)
            for keep in (keep_a, keep_b)
        )

    return type(
        name,
        (Function,),
        {
            "name": name,
            "broadcasts": True,
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "jvp": SELF_ADJOINT,  # elementwise in each input
        },
    )


MaximumBackward0 = _extremum("MaximumBackward0", np.maximum, np.less)
MinimumBackward0 = _extremum("MinimumBackward0", np.minimum, np.greater)


def _pair(fn: type[Function], input: Any, other: Any) -> Tensor:
    rt, (a, b) = operands(input, other)
    if type(a) is Tensor and type(b) is Tensor and a._data.shape != b._data.shape:
        broadcast_shape(a._data.shape, b._data.shape)
    return fn.apply(a, b, dtype=rt)


def _extremum_samples(rng: np.random.Generator) -> list[Any]:
    tied = S.rand(rng, 2, 3)
    return [
        *S.binary(rng),
        sample(tied, tied.copy(), note="ties", gradcheck=False),
        sample(tied[0].copy(), Const(tied[0].copy()), note="ties with a constant", gradcheck=False),
    ]


def _torch_pair(name: str) -> Callable[..., Any]:
    """PyTorch's maximum/minimum take tensors only: wrap a number as we treat it."""

    def call(torch: Any, input: Any, other: Any) -> Any:
        if not isinstance(other, torch.Tensor):
            other = torch.tensor(other, dtype=input.dtype)
        if not isinstance(input, torch.Tensor):
            input = torch.tensor(input, dtype=other.dtype)
        return getattr(torch, name)(input, other)

    return call


@register(
    complex_inputs=(RuntimeError, "maximum not implemented for complex tensors."),
    samples=_extremum_samples,
    torch=_torch_pair("maximum"),
    binding=Binding(tensors=("input", "other")),
)
def maximum(input: Any, other: Any) -> Tensor:
    """Elementwise maximum, broadcasting; ties give each input half the gradient."""
    return _pair(MaximumBackward0, input, other)


@register(
    complex_inputs=(RuntimeError, "minimum not implemented for complex tensors."),
    samples=_extremum_samples,
    torch=_torch_pair("minimum"),
    binding=Binding(tensors=("input", "other")),
)
def minimum(input: Any, other: Any) -> Tensor:
    """Elementwise minimum, broadcasting; ties give each input half the gradient."""
    return _pair(MinimumBackward0, input, other)
