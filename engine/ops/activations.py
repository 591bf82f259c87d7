"""More activations (``torch.nn.functional``): celu, selu, relu6/hardtanh,
hardswish, hardsigmoid, mish, softsign, logsigmoid, threshold, softmin,
tanhshrink, softshrink, hardshrink, glu and prelu.

The node of each is PyTorch's (selu records EluBackward0, relu6
HardtanhBackward0, softsign and tanhshrink are composites there too). Backward
rules are written in engine ops with constant masks, so they differentiate
again under ``create_graph``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..dual import FROM_BACKWARD, SELF_ADJOINT
from ..errors import BadArgumentsError
from ..function import Function
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._tie import tie
from ._util import as_tensor, normalize_dim
from .arithmetic import abs, not_implemented_for, where
from .elementwise import exp, sigmoid, softplus, tanh
from .reduction import softmax
from .reduction import sum as sum_
from .shape import cat, reshape

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_ONE_SIXTH = float(np.float32(1 / 6))


def _nn(name: str) -> Callable[..., Any]:
    """PyTorch's spelling in ``torch.nn.functional``."""
    return lambda torch, *args, **kwargs: getattr(torch.nn.functional, name)(*args, **kwargs)


def _mask(values: np.ndarray) -> Tensor:
    return Tensor._make(np.asarray(values))


def _floating(a: Tensor, kernel: str) -> np.ndarray:
    if a._data.dtype.kind != "f":
        raise not_implemented_for(kernel, a._data.dtype)
    return a._data


def _activation(
    name: str,
    forward: Callable[..., np.ndarray],
    backward: Callable[..., Tensor],
    *,
    piecewise: bool = False,
    refuses: str | None = None,
) -> type[Function]:
    """``y = f(x, **params)`` saving the input; ``backward(g, x, **params)`` in engine ops.
    A ``piecewise`` linear one's gradient (a mask of ``g``) is recorded as PyTorch's
    ``<name>Backward`` node over ``x`` (see ``_tie``); ``refuses``: its aten backward op
    has no derivative in PyTorch."""

    def fwd(ctx: Any, a: Tensor, **params: Any) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.params = params
        return np.asarray(forward(a._data, **params), a._data.dtype)

    def bwd(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        result = backward(g, a, **ctx.params)
        if piecewise:
            twice = "NotImplemented" if refuses else name.replace("Backward0", "BackwardBackward0")
            return tie(result, g, a, name=twice, refuses=refuses)
        return result

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


# -- elu family ---------------------------------------------------------------------------


def _elu_forward(x: np.ndarray, *, alpha: float, scale: float, input_scale: float) -> np.ndarray:
    return np.where(x > 0, x * scale, np.expm1(np.minimum(x, 0) * input_scale) * (alpha * scale))


def _elu_backward(
    g: Tensor, x: Tensor, *, alpha: float, scale: float, input_scale: float
) -> Tensor:
    negative = exp(x * input_scale) * (alpha * scale * input_scale)
    # PyTorch tests x <= 0, so a NaN input takes the positive branch
    return where(_mask(x._data <= 0), g * negative, g * scale)


CeluBackward0 = _activation("CeluBackward0", _elu_forward, _elu_backward)
EluBackward0 = _activation("EluBackward0", _elu_forward, _elu_backward)


def _kinked(rng: np.random.Generator) -> list[Any]:
    return S.unary(rng, S.away_from_zero)


@register(
    samples=lambda rng: [*_kinked(rng), sample(S.away_from_zero(rng, 2, 3), alpha=0.5)],
    method=False,
    torch=_nn("celu"),
)
def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Elementwise max(0, x) + min(0, alpha·(e**(x/alpha) - 1))."""
    a = as_tensor(input)
    _floating(a, "elu_cpu")
    if alpha == 0:
        raise BadArgumentsError("ZeroDivisionError")
    alpha = float(alpha)
    return CeluBackward0.apply(a, alpha=alpha, scale=1.0, input_scale=1.0 / alpha)


@register(samples=_kinked, method=False, torch=_nn("selu"))
def selu(input: Tensor) -> Tensor:
    """Self-normalizing elu: scale·(x if x > 0 else alpha·(e**x - 1)) (PyTorch's constants)."""
    a = as_tensor(input)
    _floating(a, "elu_cpu")
    return EluBackward0.apply(a, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


# -- hard* ----------------------------------------------------------------------------------


def _hardtanh_forward(x: np.ndarray, *, lo: float, hi: float) -> np.ndarray:
    return np.minimum(np.maximum(x, lo), hi)


def _hardtanh_backward(g: Tensor, x: Tensor, *, lo: float, hi: float) -> Tensor:
    # PyTorch zeroes where x <= min or x >= max: a NaN input passes the gradient
    return where(_mask((x._data <= lo) | (x._data >= hi)), 0.0, g)


HardtanhBackward0 = _activation(
    "HardtanhBackward0", _hardtanh_forward, _hardtanh_backward, piecewise=True
)


class HardtanhBoundsError(BadArgumentsError, ValueError):
    """``min_val > max_val``: PyTorch raises ``ValueError``."""


def _hardtanh(input: Any, lo: float, hi: float) -> Tensor:
    if lo > hi:  # torch.nn.functional's own check, a ValueError, before any kernel's
        raise HardtanhBoundsError("min_val cannot be greater than max_val")
    a = as_tensor(input)
    if a._data.dtype.kind == "b":
        raise not_implemented_for("hardtanh_cpu", a._data.dtype)
    if a._data.dtype.kind != "f":  # integers: clipped in their dtype, no graph
        return Tensor._make(np.clip(a._data, math.ceil(lo), math.floor(hi)).astype(a._data.dtype))
    return HardtanhBackward0.apply(a, lo=float(lo), hi=float(hi))


def _banded(low: float, high: float) -> Callable[..., np.ndarray]:
    """Values kept 0.2 away from the kinks at ``low`` and ``high``."""

    def make(rng: np.random.Generator, *shape: int) -> np.ndarray:
        centers = rng.choice([low - 1.0, (low + high) / 2, high + 1.0], size=shape)
        return centers + rng.uniform(-0.7, 0.7, size=shape)

    return make


@register(
    complex_inputs="clamp is not supported for complex types",
    samples=lambda rng: [
        *S.unary(rng, _banded(-1.0, 1.0)),
        sample(_banded(-2.0, 0.5)(rng, 2, 3), -2.0, 0.5, note="bounds"),
        sample(Const(np.array([-3, 0, 4])), note="int64"),
    ],
    method=False,
    torch=_nn("hardtanh"),
)
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """Elementwise clamp into [min_val, max_val]; no gradient at the bounds."""
    return _hardtanh(input, min_val, max_val)


@register(
    complex_inputs="clamp is not supported for complex types",
    samples=lambda rng: [
        *S.unary(rng, _banded(0.0, 6.0)),
        sample(Const(np.array([-3, 2, 9])), note="int64"),
    ],
    method=False,
    torch=_nn("relu6"),
)
def relu6(input: Tensor) -> Tensor:
    """Elementwise min(max(x, 0), 6) (PyTorch records HardtanhBackward0)."""
    return _hardtanh(input, 0.0, 6.0)


def _hardswish_forward(x: np.ndarray) -> np.ndarray:
    return x * np.minimum(np.maximum(x + 3, 0), 6) / 6


def _hardswish_backward(g: Tensor, x: Tensor) -> Tensor:
    mid = where(_mask(x._data <= 3), g * (x / 3 + 0.5), g)
    return where(_mask(x._data < -3), 0.0, mid)


HardswishBackward0 = _activation("HardswishBackward0", _hardswish_forward, _hardswish_backward)


@register(
    samples=lambda rng: S.unary(rng, _banded(-3.0, 3.0)), method=False, torch=_nn("hardswish")
)
def hardswish(input: Tensor) -> Tensor:
    """Elementwise x·relu6(x + 3)/6."""
    a = as_tensor(input)
    _floating(a, "hardswish_cpu")
    return HardswishBackward0.apply(a)


def _hardsigmoid_forward(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x + 3, 0), 6) / 6


def _hardsigmoid_backward(g: Tensor, x: Tensor) -> Tensor:
    # PyTorch multiplies by 1/6 rounded to float32, in every dtype
    return where(_mask((x._data > -3) & (x._data < 3)), g * _ONE_SIXTH, 0.0)


HardsigmoidBackward0 = _activation(
    "HardsigmoidBackward0",
    _hardsigmoid_forward,
    _hardsigmoid_backward,
    piecewise=True,
    refuses="hardsigmoid_backward",
)


@register(
    samples=lambda rng: S.unary(rng, _banded(-3.0, 3.0)), method=False, torch=_nn("hardsigmoid")
)
def hardsigmoid(input: Tensor) -> Tensor:
    """Elementwise relu6(x + 3)/6 (no double backward, as in PyTorch)."""
    a = as_tensor(input)
    _floating(a, "hardsigmoid_cpu")
    return HardsigmoidBackward0.apply(a)


# -- smooth ones ----------------------------------------------------------------------------


def _softplus0(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.zeros((), x.dtype), x)


def _mish_forward(x: np.ndarray) -> np.ndarray:
    return x * np.tanh(_softplus0(x))


def _mish_backward(g: Tensor, x: Tensor) -> Tensor:
    t = tanh(softplus(x))
    return g * (t + x * sigmoid(x) * (1 - t * t))


MishBackward0 = _activation("MishBackward0", _mish_forward, _mish_backward)


@register(samples=S.unary, method=False, torch=_nn("mish"))
def mish(input: Tensor) -> Tensor:
    """Elementwise x·tanh(softplus(x))."""
    a = as_tensor(input)
    _floating(a, "mish_cpu")
    return MishBackward0.apply(a)


def _logsigmoid_forward(x: np.ndarray) -> np.ndarray:
    return -_softplus0(-x)


def _logsigmoid_backward(g: Tensor, x: Tensor) -> Tensor:
    return g * sigmoid(-x)


LogSigmoidBackward0 = _activation("LogSigmoidBackward0", _logsigmoid_forward, _logsigmoid_backward)


@register(
    samples=lambda rng: [*S.unary(rng), sample(S.rand(rng, 3, low=-40.0, high=40.0), note="tails")],
    method=False,
    torch=_nn("logsigmoid"),
)
def logsigmoid(input: Tensor) -> Tensor:
    """Elementwise log(sigmoid(x)), stable for large |x|."""
    a = as_tensor(input)
    _floating(a, "log_sigmoid_cpu")
    return LogSigmoidBackward0.apply(a)


@register(
    samples=lambda rng: [*S.unary(rng), sample(Const(np.array([-2, 0, 3])), note="int64")],
    method=False,
    torch=_nn("softsign"),
)
def softsign(input: Tensor) -> Tensor:
    """Elementwise x / (1 + |x|) (a composite in PyTorch too: DivBackward0)."""
    a = as_tensor(input)
    return a / (abs(a) + 1)


@register(samples=S.unary, method=False, torch=_nn("tanhshrink"))
def tanhshrink(input: Tensor) -> Tensor:
    """Elementwise x - tanh(x) (a composite in PyTorch too: SubBackward0)."""
    a = as_tensor(input)
    return a - tanh(a)


def _softmin_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), dim=1),
        sample(S.rand(rng, 2, 3), dim=0, note="dim 0"),
        sample(S.rand(rng, 4), dim=-1, note="vector"),
    ]


@register(samples=_softmin_samples, method=False, torch=_nn("softmin"))
def softmin(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``softmax(-x)`` along ``dim`` (PyTorch records SoftmaxBackward0 over a NegBackward0)."""
    return softmax(-as_tensor(input), dim, dtype)


# -- threshold and the shrinks --------------------------------------------------------------


def _threshold_forward(x: np.ndarray, *, threshold: float, value: float) -> np.ndarray:
    return np.where(x <= threshold, value, x)


def _threshold_backward(g: Tensor, x: Tensor, *, threshold: float, value: float) -> Tensor:
    return where(_mask(x._data <= threshold), 0.0, g)


ThresholdBackward0 = _activation(
    "ThresholdBackward0", _threshold_forward, _threshold_backward, piecewise=True
)


@register(
    complex_inputs="\"threshold_cpu\" not implemented for '{type}'",
    samples=lambda rng: [
        sample(_banded(0.5, 0.5)(rng, 2, 3), 0.5, -2.0),
        sample(_banded(0.0, 0.0)(rng, 4), 0.0, 0.0, note="relu"),
        sample(S.rand(rng), -5.0, 1.0, note="0-d"),
        sample(Const(np.array([-3, 1, 4])), 1, 7, note="int64"),
    ],
    method=False,
    torch=_nn("threshold"),
)
def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """Elementwise x if x > threshold else value."""
    a = as_tensor(input)
    if a._data.dtype.kind != "f":
        out = np.where(a._data > threshold, a._data, value)
        return Tensor._make(np.asarray(out, a._data.dtype))
    return ThresholdBackward0.apply(a, threshold=float(threshold), value=float(value))


def _softshrink_forward(x: np.ndarray, *, lambd: float) -> np.ndarray:
    # NaN stays NaN, as in PyTorch
    return np.where((x >= -lambd) & (x <= lambd), 0, x - np.sign(x) * lambd)


def _hardshrink_forward(x: np.ndarray, *, lambd: float) -> np.ndarray:
    return np.where((x >= -lambd) & (x <= lambd), 0, x)


def _shrink_backward(g: Tensor, x: Tensor, *, lambd: float) -> Tensor:
    return where(_mask((x._data >= -lambd) & (x._data <= lambd)), 0.0, g)


SoftshrinkBackward0 = _activation(
    "SoftshrinkBackward0", _softshrink_forward, _shrink_backward, piecewise=True
)
HardshrinkBackward0 = _activation(
    "HardshrinkBackward0", _hardshrink_forward, _shrink_backward, piecewise=True
)


def _shrink_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *S.unary(rng, _banded(-0.5, 0.5)),
        sample(_banded(-1.0, 1.0)(rng, 2, 3), 1.0, note="lambd 1"),
    ]


@register(samples=_shrink_samples, method=False, torch=_nn("softshrink"))
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Elementwise x ∓ lambd outside [-lambd, lambd], 0 inside."""
    a = as_tensor(input)
    _floating(a, "softshrink_check")
    if lambd < 0:
        top = float(np.finfo(a._data.dtype).max)
        raise BadArgumentsError(
            f"lambda must be in range [0, {top:g}] for input dtype "
            f"{dtypes.type_name(a._data.dtype)}, but found {lambd:g}"
        )
    return SoftshrinkBackward0.apply(a, lambd=float(lambd))


@register(samples=_shrink_samples, torch=_nn("hardshrink"))
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Elementwise x outside [-lambd, lambd], 0 inside."""
    a = as_tensor(input)
    _floating(a, "hardshrink_cpu")
    return HardshrinkBackward0.apply(a, lambd=float(lambd))


# -- glu and prelu --------------------------------------------------------------------------


class GluBackward0(Function):
    """``a·sigmoid(b)`` for the two halves of ``dim``."""

    name = "GluBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, dim: int) -> np.ndarray:
        ctx.save_for_backward(x)
        ctx.dim = dim
        a, b = np.split(x._data, 2, axis=dim)
        return np.asarray(a / (1 + np.exp(-b)), x._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        half = x.shape[ctx.dim] // 2
        index = [slice(None)] * x.ndim
        index[ctx.dim] = slice(0, half)
        a = x[tuple(index)]
        index[ctx.dim] = slice(half, None)
        s = sigmoid(x[tuple(index)])
        return cat([g * s, g * a * s * (1 - s)], ctx.dim)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 2, 4)),
        sample(S.rand(rng, 4, 3), dim=0, note="dim 0"),
        sample(S.rand(rng, 6), note="vector"),
    ],
    method=False,
    torch=_nn("glu"),
)
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second."""
    x = as_tensor(input)
    if x.ndim == 0:
        raise BadArgumentsError("glu does not support scalars because halving size must be even")
    d = normalize_dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise BadArgumentsError(
            f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}"
        )
    _floating(x, "glu_cpu")
    return GluBackward0.apply(x, dim=d)


class PreluKernelBackward0(Function):
    """``x if x > 0 else weight·x``, one weight per channel (dim 1) or one for all."""

    name = "PreluKernelBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.save_for_backward(x, w)
        ctx.shape = shape
        wb = w._data.reshape(shape)
        return np.asarray(np.where(x._data > 0, x._data, wb * x._data), x._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        x, w = ctx.saved_tensors
        need_x, need_w = ctx.needs_input_grad
        positive = _mask(x._data > 0)
        gx = gw = None
        # torch's _prelu_kernel_backward(grad, self, weight) node: under create_graph
        # both gradients require grad when any of the three does
        name = "PreluKernelBackwardBackward0"
        if need_x:
            gx = tie(where(positive, g, g * reshape(w, ctx.shape)), g, x, w, name=name)
        if need_w:
            full = tie(where(positive, 0.0, g * x), g, x, w, name=name)
            dims = [d for d in range(x.ndim) if not (ctx.shape[d] > 1)] if x.ndim else None
            total = sum_(full, dims) if dims else full
            gw = reshape(total, w.shape)
        return gx, gw


def _prelu_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.away_from_zero(rng, 2, 3, 4), S.rand(rng, 3, low=0.1, high=0.5), note="channels"),
        sample(S.away_from_zero(rng, 2, 3), S.rand(rng, 1, low=0.1, high=0.5), note="one weight"),
        sample(S.away_from_zero(rng, 4), np.array([0.25]), note="vector"),
    ]


@register(samples=_prelu_samples, torch=_nn("prelu"))
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Elementwise x if x > 0 else weight·x, with a learnable weight per channel (dim 1)."""
    x, w = as_tensor(input), as_tensor(weight)
    _floating(x, "prelu_cpu")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w._data.size != 1 and x.ndim == 0:
        raise BadArgumentsError("Not allow zero-dim input tensor.")
    if w._data.size != 1 and w._data.size != channels:
        raise BadArgumentsError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{w._data.size} and channel size = {channels}."
        )
    if w.ndim > 1:
        raise BadArgumentsError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}"
        )
    shape = [1] * x.ndim
    if x.ndim >= 2:
        shape[1] = w._data.size
    return PreluKernelBackward0.apply(x, w, shape=tuple(shape))
