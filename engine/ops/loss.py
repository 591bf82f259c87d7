"""Losses, as ``torch.nn.functional`` computes them.

Where PyTorch has a fused kernel (``MseLossBackward0``, ``NllLossBackward0``,
``BinaryCrossEntropyBackward0``, ...) the loss is one Function with a numpy
forward and a rule written with engine ops; where PyTorch composes (``l1_loss``
is ``abs(input - target)`` then ``mean``; ``cross_entropy`` is ``log_softmax``
then ``nll_loss``) so do we, so the recorded graph is PyTorch's.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ..dual import FROM_BACKWARD, LINEAR, needs_derivative
from ..errors import BadArgumentsError, DtypeMismatchError, IndexOutOfRangeError, ShapeMismatchError
from ..function import Function
from ..grad_mode import is_grad_enabled
from ..primitives import DivBackward1
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import ArgumentValueError, KernelDtypeError, composite, intermediates_only
from ._util import as_tensor, broadcast_shape
from .arithmetic import abs as abs_
from .arithmetic import sign, sub, where
from .elementwise import log, sigmoid, softplus
from .reduction import mean
from .reduction import sum as sum_
from .shape import expand

_REDUCTIONS = ("none", "mean", "sum")
_TORCH_TYPE = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}
_BCE_EPSILON = 1e-12  # PyTorch's floor on p(1-p) in the BCE gradient


def _reduction(reduction: Any) -> str:
    if reduction not in _REDUCTIONS:
        raise ArgumentValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _type_name(dtype: np.dtype) -> str:
    return _TORCH_TYPE.get(dtypes.torch_name(dtype), str(dtype))


def _size(shape: tuple[int, ...]) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"


def _tensor_arg(value: Any, op: str, name: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (list, np.ndarray)):
        return as_tensor(value)
    raise BadArgumentsError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def _reduce(losses: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        return losses
    if reduction == "sum":
        return np.asarray(losses.sum(), losses.dtype)
    if losses.size == 0:
        return np.asarray(np.nan, losses.dtype)
    return np.asarray(losses.mean(), losses.dtype)


def _grad_scale(g: Any, reduction: str, numel: int) -> Any:
    """The incoming gradient as it reaches each element: divided by N for a mean
    (a Tensor in ``backward``, an ndarray in ``vjp``)."""
    return g / numel if reduction == "mean" and numel else g


def _broadcast_pair(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``F.mse_loss``'s rule: warn when the shapes differ, then broadcast both."""
    if input._data.shape == target._data.shape:
        return input, target
    warnings.warn(
        f"Using a target size ({_size(target._data.shape)}) that is different to the input size "
        f"({_size(input._data.shape)}). This will likely lead to incorrect results due to "
        "broadcasting. Please ensure they have the same size.",
        UserWarning,
        stacklevel=3,
    )
    shape = broadcast_shape(input._data.shape, target._data.shape)
    return (
        input if input._data.shape == shape else expand(input, shape),
        target if target._data.shape == shape else expand(target, shape),
    )


def _float_result(input: Tensor, target: Tensor, kernel: str) -> np.dtype:
    dt = dtypes.result_type(input, target)
    if not dtypes.is_floating(dt):
        raise KernelDtypeError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")
    return dt


def _pair_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), S.rand(rng, 3, 4)),
        sample(S.rand(rng, 3, 4), Const(S.rand(rng, 3, 4)), reduction="sum"),
        sample(S.rand(rng, 3, 4), S.rand(rng, 3, 4), reduction="none"),
        sample(S.rand(rng, 5), Const(S.rand(rng, 5)), reduction="none"),
        sample(S.rand(rng), S.rand(rng), note="0-d"),
        sample(S.rand(rng, 0, 3), Const(S.rand(rng, 0, 3)), reduction="sum", note="empty"),
        sample(S.rand(rng, 0, 3), Const(S.rand(rng, 0, 3)), note="empty mean is nan"),
    ]


# -- regression losses -------------------------------------------------------


class MseLossBackward0(Function):
    name = "MseLossBackward0"

    @staticmethod
    def jvp(ctx: Any, ta: Tensor | None, tt: Tensor | None) -> Tensor:
        """``2 (a - t) (t_a - t_t)``, reduced as the loss is."""
        a, t = ctx.inputs
        diff = ta if tt is None else (-tt if ta is None else ta - tt)
        return _apply_reduction((a - t) * diff * 2.0, ctx.reduction)

    @staticmethod
    def forward(ctx: Any, a: Tensor, t: Tensor, *, reduction: str, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(a, t)
        ctx.reduction = reduction
        d = np.subtract(a._data, t._data, dtype=dtype)
        return _reduce(np.multiply(d, d), reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, t = ctx.saved_tensors
        need_a, need_t = ctx.needs_input_grad
        ga = (a - t) * (_grad_scale(g, ctx.reduction, a._data.size) * 2.0)
        return (ga if need_a else None), (-ga if need_t else None)


@register(samples=_pair_samples, method=False, torch="nn.functional.mse_loss")
def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target)**2``, averaged (``mean``), summed, or per element."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "mse_loss", "input")
    t = _tensor_arg(target, "mse_loss", "target")
    a, t = _broadcast_pair(a, t)
    return MseLossBackward0.apply(a, t, reduction=red, dtype=_float_result(a, t, "mse_cpu"))


def _abs_diff(a: Tensor, t: Tensor) -> Tensor:
    """``|a - t|`` as PyTorch's l1_loss records it (SubBackward0, then AbsBackward0)."""
    return abs_(sub(a, t))


def _apply_reduction(x: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return mean(x)
    if reduction == "sum":
        return sum_(x)
    return x


@register(samples=_pair_samples, method=False, torch="nn.functional.l1_loss")
def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Absolute error ``|input - target|``, reduced (PyTorch composes it from sub, abs, mean)."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "l1_loss", "input")
    t = _tensor_arg(target, "l1_loss", "target")
    a, t = _broadcast_pair(a, t)
    return _apply_reduction(_abs_diff(a, t), red)


class SmoothL1LossBackward0(Function):
    name = "SmoothL1LossBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, t: Tensor, *, reduction: str, beta: float, dtype: np.dtype
    ) -> np.ndarray:
        ctx.save_for_backward(a, t)
        ctx.reduction, ctx.beta = reduction, beta
        d = np.subtract(a._data, t._data, dtype=dtype)
        ad = np.abs(d)
        losses = np.where(ad < beta, (0.5 / beta) * d * d, ad - 0.5 * beta).astype(
            dtype, copy=False
        )
        return _reduce(losses, reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, t = ctx.saved_tensors
        need_a, need_t = ctx.needs_input_grad
        d = a - t
        slope = where(Tensor._make(np.abs(d._data) < ctx.beta), d / ctx.beta, sign(d))
        ga = slope * _grad_scale(g, ctx.reduction, a._data.size)
        return (ga if need_a else None), (-ga if need_t else None)


def _smooth_samples(rng: np.random.Generator) -> list[Any]:
    # differences away from the kink at |d| = beta (and at 0 for the l1 branch)
    base = S.rand(rng, 3, 4)
    offs = S.away_from_zero(rng, 3, 4) * np.where(rng.random((3, 4)) > 0.5, 0.3, 1.5)
    return [
        sample(base, Const(base - offs)),
        sample(base, base - offs, reduction="sum"),
        sample(base, Const(base - offs), reduction="none", beta=2.0),
        sample(S.rand(rng, 4), Const(S.rand(rng, 4) + 5.0), beta=0.5, note="linear branch"),
        sample(base, Const(base - offs), beta=0.0, note="beta 0 is l1_loss"),
        sample(S.rand(rng), Const(S.rand(rng)), reduction="none", note="0-d"),
        sample(S.rand(rng, 0, 2), Const(S.rand(rng, 0, 2)), reduction="sum", note="empty"),
    ]


@register(samples=_smooth_samples, method=False, torch="nn.functional.smooth_l1_loss")
def smooth_l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    """Huber-like loss: ``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - beta/2``."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "smooth_l1_loss", "input")
    t = _tensor_arg(target, "smooth_l1_loss", "target")
    a, t = _broadcast_pair(a, t)
    if beta < 0:
        raise BadArgumentsError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return _apply_reduction(_abs_diff(a, t), red)
    dtype = _float_result(a, t, "smooth_l1_cpu")
    return SmoothL1LossBackward0.apply(a, t, reduction=red, beta=float(beta), dtype=dtype)


# -- classification losses ---------------------------------------------------


class _NllPlan:
    """Which entry of each row the loss picks, as flat positions in the row-major input,
    and with what weight: shared by the loss and its adjoint, the same linear map
    transposed. When some targets are ignored, ``kept`` lists the other rows and
    ``flat``/``weights`` cover only those (ignored rows take no part at all, so a
    -inf log-probability there gives 0, not 0 * inf)."""

    __slots__ = ("flat", "weights", "kept", "total", "reduction", "in_shape", "out_shape")
    flat: Any
    weights: Any
    kept: Any
    total: Any
    reduction: str
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]

    def __init__(self, **fields: Any) -> None:
        for key, value in fields.items():
            setattr(self, key, value)


def _divide(x: Any, total: float) -> Any:
    """``x / total`` in x's dtype; all targets ignored gives 0/0 = nan, as in PyTorch."""
    if total:
        return x / x.dtype.type(total)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / x.dtype.type(total)


class NllLossBackward0(Function):
    name = "NllLossBackward0"
    jvp = LINEAR  # picks and weighs entries (weights are constants)

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, plan: _NllPlan) -> np.ndarray:
        ctx.save_for_backward(a, plan)  # PyTorch saves self, target, weight and total_weight
        picked = np.take(a._data.reshape(-1), plan.flat)
        if plan.weights is not None:
            picked = picked * plan.weights
        if plan.reduction == "none":
            if plan.kept is None:
                return np.negative(picked).reshape(plan.out_shape)
            out = np.zeros(plan.out_shape, picked.dtype)
            out.reshape(-1)[plan.kept] = np.negative(picked)
            return out
        total = -picked.sum()
        return np.asarray(_divide(total, plan.total) if plan.reduction == "mean" else total)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        a, plan = ctx.saved_tensors
        return NllLossBackwardBackward0.apply(g, a, plan=plan)


def _nll_adjoint(g: np.ndarray, plan: _NllPlan) -> np.ndarray:
    """Zeros with ``-weight * g`` (over the total weight for a mean) at each row's target;
    ignored rows get nothing at all (not 0 * g, which is nan when g is inf)."""
    out = np.zeros(int(np.prod(plan.in_shape)), g.dtype)
    if plan.reduction == "none":
        vals = np.negative(g.reshape(-1) if plan.kept is None else g.reshape(-1)[plan.kept])
    else:
        vals = -(_divide(g, plan.total) if plan.reduction == "mean" else g)
    if plan.weights is not None:
        vals = vals * plan.weights
    out[plan.flat] = vals
    return out.reshape(plan.in_shape)


class NllLossBackwardBackward0(Function):
    """The adjoint of nll_loss, as a function of ``g`` and (formally, as in PyTorch) the
    loss's input: its gradient for ``g`` is nll_loss again (the map is linear), for the
    input zeros. Taking the input keeps a second derivative defined (zero), not an error."""

    name = "NllLossBackwardBackward0"
    jvp = LINEAR  # picks and weighs entries (weights are constants)

    @staticmethod
    def forward(ctx: Any, g: Tensor, a: Tensor, *, plan: _NllPlan) -> np.ndarray:
        ctx.save_for_backward(plan)
        ctx.in_shape = a._data.shape
        return _nll_adjoint(g._data, plan)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (plan,) = ctx.saved_tensors
        need_g, need_a = ctx.needs_input_grad
        return (
            NllLossBackward0.apply(gg, plan=plan) if need_g else None,
            Tensor._make(np.zeros(ctx.in_shape, gg.dtype)) if need_a else None,
        )


class NllLoss2DBackward0(NllLossBackward0):
    """nll_loss of (N, C, d1, ...) inputs: PyTorch's nll_loss2d kernel (inputs of other
    ranks are viewed to 4-d first)."""

    name = "NllLoss2DBackward0"


class _NllLossNdView(NllLossBackward0):
    """Per-element nll_loss of a (N, C, d) or 5+-d input: PyTorch views the 4-d loss back."""

    name = "ViewBackward0"


def _nll_node(a: Tensor, reduction: str) -> type[NllLossBackward0]:
    if a._data.ndim <= 2:
        return NllLossBackward0
    if reduction == "none" and a._data.ndim != 4:
        return _NllLossNdView
    return NllLoss2DBackward0


def _nll_plan(a: Tensor, target: Any, weight: Any, ignore_index: int, reduction: str) -> _NllPlan:
    """Check nll_loss's arguments as PyTorch does and precompute the picked entries."""
    if a._data.ndim == 0:
        raise ShapeMismatchError("Expected 1 or more dimensions (got 0)")
    if not dtypes.is_floating(a._data.dtype):
        raise DtypeMismatchError(
            f"\"nll_loss_out_frame\" not implemented for '{_type_name(a._data.dtype)}'"
        )
    t = _tensor_arg(target, "nll_loss", "target")
    if a._data.ndim <= 2 and t._data.ndim > 1:
        raise ShapeMismatchError("0D or 1D target tensor expected, multi-target not supported")
    if t._data.dtype != dtypes.int64:
        raise DtypeMismatchError(
            f"expected target dtype to be Long or Byte, but got {_type_name(t._data.dtype)}"
        )
    shape = a._data.shape
    if a._data.ndim > 2:  # (N, C, d1, ...) with targets (N, d1, ...)
        n, c, spatial = shape[0], shape[1], shape[2:]
        expected = (n,) + spatial
        if t._data.shape != expected:
            raise ShapeMismatchError(
                f"Expected target size [{', '.join(map(str, expected))}], got "
                f"[{', '.join(map(str, t._data.shape))}]"
            )
        size = int(np.prod(spatial))
        base = (np.arange(n)[:, None] * (c * size) + np.arange(size)[None, :]).reshape(-1)
        stride, out_shape = size, expected
    else:
        if t._data.ndim > 1:
            raise ShapeMismatchError("0D or 1D target tensor expected, multi-target not supported")
        c = shape[-1]
        n = shape[0] if a._data.ndim == 2 else 1
        tn = t._data.shape[0] if t._data.ndim else (1 if a._data.ndim == 1 else 0)
        if tn != n or (a._data.ndim == 2 and t._data.ndim == 0):
            raise ShapeMismatchError(
                f"Expected input batch_size ({n}) to match target batch_size ({tn})."
            )
        base, stride = np.arange(0, n * c, c), 1
        out_shape = (n,) if a._data.ndim == 2 else ()
    cols = t._data.reshape(-1)
    lo, hi = (int(cols.min()), int(cols.max())) if cols.size else (0, -1)
    kept = None
    valid = cols
    if not (lo >= 0 and hi < c and not lo <= ignore_index <= hi):  # else: all valid, none ignored
        ignored = cols == ignore_index
        if ignored.any():
            kept = np.flatnonzero(~ignored)
            valid = cols[kept]
        bad = valid[(valid < 0) | (valid >= c)]
        if bad.size:
            raise IndexOutOfRangeError(f"Target {int(bad[0])} is out of bounds.")
    w = None
    if weight is not None:
        wt = _tensor_arg(weight, "nll_loss", "weight")
        if wt._data.shape != (c,):
            raise ShapeMismatchError(
                f"weight tensor should be defined either for all {c} classes or no classes but got "
                f"weight tensor of shape: [{', '.join(map(str, wt._data.shape))}]"
            )
        if wt._data.dtype != a._data.dtype:
            raise DtypeMismatchError(
                f"expected scalar type {_type_name(a._data.dtype)} but found {_type_name(wt._data.dtype)}"
            )
    rows = base if kept is None else base[kept]
    if weight is not None:
        w = wt._data[valid]
        total = float(w.sum())
    else:
        total = float(valid.size)
    return _NllPlan(
        flat=rows + valid * stride,
        weights=w,
        kept=kept,
        total=total,
        reduction=reduction,
        in_shape=shape,
        out_shape=out_shape,
    )


def _class_samples(rng: np.random.Generator, make: Any) -> list[Any]:
    return [
        sample(make(rng, 4, 3), Const(np.array([0, 2, 1, 2]))),
        sample(make(rng, 4, 3), Const(np.array([0, 2, 1, 2])), reduction="sum"),
        sample(make(rng, 4, 3), Const(np.array([0, 2, 1, 1])), reduction="none"),
        sample(make(rng, 5), Const(np.array(3)), note="1-D input, 0-d target"),
        sample(
            make(rng, 4, 3), Const(np.array([1, 0, 2, 2])), weight=Const(np.array([0.2, 1.0, 3.0]))
        ),
        sample(make(rng, 4, 3), Const(np.array([1, -100, 2, 0])), note="ignore_index"),
        sample(
            make(rng, 3, 3),
            Const(np.array([1, 2, 2])),
            ignore_index=2,
            weight=Const(np.array([0.5, 2.0, 1.0])),
            reduction="sum",
        ),
        sample(make(rng, 0, 3), Const(np.zeros(0, np.int64)), reduction="sum", note="empty"),
    ]


def _log_probs(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.log(rng.uniform(0.05, 1.0, size=shape))


def _nd_class_samples(rng: np.random.Generator, make: Any) -> list[Any]:
    """(N, C, d1, ...) inputs with (N, d1, ...) targets."""
    t3 = Const(np.array([[0, 2, 1, 2], [1, 1, 0, 2]]))
    return [
        sample(make(rng, 2, 3, 4), t3, note="3-d"),
        sample(make(rng, 2, 3, 4), t3, reduction="none", note="3-d none"),
        sample(make(rng, 2, 3, 2, 2), Const(np.array([[[0, 2], [1, -100]]] * 2)), note="4-d"),
        sample(
            make(rng, 2, 3, 2, 2),
            Const(np.array([[[0, 2], [1, 1]]] * 2)),
            reduction="none",
            weight=Const(np.array([0.5, 2.0, 1.0])),
            note="4-d none weighted",
        ),
        sample(
            make(rng, 1, 3, 2, 1, 2),
            Const(np.array([[[[0, 2]], [[1, 1]]]])),
            reduction="sum",
            note="5-d",
        ),
    ]


@register(
    complex_inputs="\"nll_loss_out_frame\" not implemented for '{type}'",
    samples=lambda rng: _class_samples(rng, _log_probs) + _nd_class_samples(rng, _log_probs),
    method=False,
    torch="nn.functional.nll_loss",
)
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of class-index targets given log-probabilities (N, C, d1, ...) or (C,)."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "nll_loss", "input")
    plan = _nll_plan(a, target, weight, int(ignore_index), red)
    return _nll_node(a, red).apply(a, plan=plan)


def _ce_samples(rng: np.random.Generator) -> list[Any]:
    def probs(*shape: int) -> np.ndarray:
        p = rng.uniform(0.1, 1.0, size=shape)
        return p / p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)

    r = S.rand
    labels = Const(np.array([0, 2, 1, 2]))
    return [
        *_class_samples(rng, r),
        *_nd_class_samples(rng, r),
        sample(r(rng, 4, 3), Const(probs(4, 3)), note="probabilities"),
        sample(r(rng, 4, 3), probs(4, 3), reduction="sum", note="probabilities, target grad"),
        sample(r(rng, 4, 3), Const(probs(4, 3)), reduction="none", note="probabilities none"),
        sample(
            r(rng, 2, 3, 2),
            Const(probs(2, 3, 2)),
            weight=Const(np.array([0.5, 2.0, 1.0])),
            label_smoothing=0.2,
            note="probabilities 3-d, weight, smoothing",
        ),
        sample(r(rng, 3), Const(probs(3)), note="probabilities 1-d"),
        sample(r(rng, 4, 3), labels, label_smoothing=0.1, note="smoothing"),
        sample(r(rng, 4, 3), labels, label_smoothing=0.3, reduction="none", note="smoothing none"),
        sample(
            r(rng, 4, 3),
            Const(np.array([0, -100, 1, 2])),
            label_smoothing=0.2,
            weight=Const(np.array([0.5, 2.0, 1.0])),
            note="smoothing, weight, ignored",
        ),
        sample(
            r(rng, 4, 3),
            Const(np.array([0, 1, 1, 2])),
            label_smoothing=0.2,
            ignore_index=1,
            reduction="sum",
            note="smoothing sum ignored",
        ),
        sample(
            r(rng, 2, 3, 4),
            Const(np.array([[0, 2, 1, 2], [1, 1, 0, 2]])),
            label_smoothing=0.5,
            note="smoothing 3-d",
        ),
    ]


@register(
    samples=_ce_samples,
    method=False,
    torch="nn.functional.cross_entropy",
)
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Softmax cross-entropy against class indices or class probabilities (same shape as
    ``input``), with optional class ``weight`` and ``label_smoothing``."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "cross_entropy", "input")
    t = _tensor_arg(target, "cross_entropy", "target")
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise BadArgumentsError(f"label_smoothing must be between 0.0 and 1.0. Got: {ls:g}")
    if not dtypes.is_floating(a._data.dtype):
        raise KernelDtypeError(  # PyTorch raises NotImplementedError
            f"\"log_softmax_lastdim_kernel_impl\" not implemented for '{_type_name(a._data.dtype)}'"
        )
    cdim = 1 if a._data.ndim >= 2 else 0
    if a._data.shape == t._data.shape:
        if not dtypes.is_floating(t._data.dtype):
            raise DtypeMismatchError(
                "Expected floating point type for target with class probabilities, got "
                + _type_name(t._data.dtype)
            )
        return _cross_entropy_probs(a, t, weight, red, ls, cdim)
    plan = _nll_plan(a, t, weight, int(ignore_index), red)  # check before computing
    logp = OPS["log_softmax"].fn(a, cdim)
    nll = _nll_node(a, red).apply(logp, plan=plan)
    if not ls:
        return nll
    # PyTorch's cross_entropy_loss_label_smoothing, step by step
    c = a._data.shape[cdim]
    wb = _class_weight(weight, a, cdim)
    smooth = -sum_(logp if wb is None else logp * wb, cdim)
    ignored = t._data == int(ignore_index)
    smooth = OPS["masked_fill"].fn(smooth, Tensor._make(ignored), 0.0)
    if red == "mean":
        kept = t._data[~ignored].reshape(-1)
        denom = float(wb._data.reshape(-1)[kept].sum()) if wb is not None else float(kept.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            ret = sum_(smooth) / denom
    else:
        ret = sum_(smooth) if red == "sum" else smooth
    return nll * (1 - ls) + ret * (ls / c)


def _class_weight(weight: Any, a: Tensor, cdim: int) -> Tensor | None:
    """The class weight shaped to broadcast along the class dim of ``a``."""
    if weight is None:
        return None
    w = _tensor_arg(weight, "cross_entropy", "weight")
    c = a._data.shape[cdim]
    if w._data.shape != (c,):
        raise ShapeMismatchError(
            f"weight tensor should be defined either for all {c} classes or no classes but got "
            f"weight tensor of shape: [{', '.join(map(str, w._data.shape))}]"
        )
    shape = [1] * a._data.ndim
    shape[cdim] = c
    return OPS["reshape"].fn(w, tuple(shape))


def _cross_entropy_probs(
    a: Tensor, t: Tensor, weight: Any, red: str, ls: float, cdim: int
) -> Tensor:
    """PyTorch's cross_entropy_loss_prob_target: ``-sum(log_softmax(x) * target * weight)``."""
    c = a._data.shape[cdim]
    if ls > 0:
        t = t * (1 - ls) + ls / c
    wb = _class_weight(weight, a, cdim)
    prod = OPS["log_softmax"].fn(a, cdim) * t
    if wb is not None:
        prod = prod * wb
    if red == "none":
        return -sum_(prod, cdim)
    total = -sum_(prod)
    if red == "sum":
        return total
    return DivBackward1.apply(total, by=a._data.size / c if a._data.size else 0.0)


# -- binary losses -------------------------------------------------------------


def _weight_arg(weight: Any, shape: tuple[int, ...], op: str) -> Tensor | None:
    """A weight that must broadcast to the loss's shape (PyTorch expands it)."""
    if weight is None:
        return None
    w = _tensor_arg(weight, op, "weight")
    ws = w._data.shape
    if len(ws) > len(shape) or any(a not in (1, b) for a, b in zip(ws[::-1], shape[::-1])):
        k = next(
            (i for i, (a, b) in enumerate(zip(ws[::-1], shape[::-1]), 1) if a not in (1, b)),
            len(shape) + 1,
        )
        raise ShapeMismatchError(
            f"Attempting to broadcast a dimension of length {ws[-k]} at -{k}! Mismatching "
            f"argument at index 1 had {_size(ws)}; but expected shape should be broadcastable "
            f"to [{', '.join(map(str, shape))}]"
        )
    return w


def _with_weight(x: np.ndarray, w: Tensor | None) -> np.ndarray:
    return x if w is None else (x * w._data).astype(x.dtype, copy=False)


class BinaryCrossEntropyBackward0(Function):
    name = "BinaryCrossEntropyBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any, p: Tensor, t: Tensor, *, weight: Tensor | None, reduction: str
    ) -> np.ndarray:
        ctx.save_for_backward(p, t, weight)
        ctx.reduction = reduction
        x, y = p._data, t._data
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(x), -100.0)
            log_1mp = np.maximum(np.log1p(-x), -100.0)
        losses = (y - 1) * log_1mp - y * log_p
        return _reduce(_with_weight(losses.astype(x.dtype, copy=False), weight), reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        p, t, w = ctx.saved_tensors
        need_p, need_t = ctx.needs_input_grad
        gs = _grad_scale(g, ctx.reduction, p._data.size)
        if w is not None:
            gs = gs * w
        gp = gt = None
        if need_p:
            q = (1.0 - p) * p
            gp = (p - t) / where(Tensor._make(q._data > _BCE_EPSILON), q, _BCE_EPSILON) * gs
        if need_t:
            gt = (log(1.0 - p) - log(p)) * gs
        return gp, gt


def _bce_samples(rng: np.random.Generator) -> list[Any]:
    def prob(*shape: int) -> np.ndarray:
        return rng.uniform(0.05, 0.95, size=shape)

    return [
        sample(prob(3, 4), Const(prob(3, 4))),
        sample(prob(3, 4), prob(3, 4), reduction="sum", note="target requires grad"),
        sample(prob(3, 4), Const(prob(3, 4)), reduction="none", weight=Const(prob(4))),
        sample(prob(5), Const((rng.random(5) > 0.5).astype(np.float64)), note="hard labels"),
        sample(prob(), Const(prob()), note="0-d"),
        sample(prob(0, 2), Const(prob(0, 2)), reduction="sum", note="empty"),
    ]


@register(
    complex_inputs="\"binary_cross_entropy\" not implemented for '{type}'",
    samples=_bce_samples,
    method=False,
    torch="nn.functional.binary_cross_entropy",
)
def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """Cross-entropy of probabilities ``input`` in [0, 1] against ``target`` (logs clamped at -100)."""
    red = _reduction(reduction)
    p = _tensor_arg(input, "binary_cross_entropy", "input")
    t = _tensor_arg(target, "binary_cross_entropy", "target")
    if p._data.shape != t._data.shape:
        raise ShapeMismatchError(
            f"Using a target size ({_size(t._data.shape)}) that is different to the input size "
            f"({_size(p._data.shape)}) is deprecated. Please ensure they have the same size."
        )
    w = _weight_arg(weight, p._data.shape, "binary_cross_entropy")
    if t._data.dtype != p._data.dtype:
        raise DtypeMismatchError(
            f"Found dtype {_type_name(t._data.dtype)} but expected {_type_name(p._data.dtype)}"
        )
    x = p._data
    if not ((x >= 0) & (x <= 1)).all():
        raise BadArgumentsError("all elements of input should be between 0 and 1")
    if not ((t._data >= 0) & (t._data <= 1)).all():
        raise BadArgumentsError("all elements of target should be between 0 and 1")
    return BinaryCrossEntropyBackward0.apply(p, t, weight=w, reduction=red)


class BinaryCrossEntropyWithLogitsBackward0(Function):
    name = "BinaryCrossEntropyWithLogitsBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any,
        x: Tensor,
        t: Tensor,
        *,
        weight: Tensor | None,
        pos_weight: Tensor | None,
        reduction: str,
        dtype: np.dtype,
    ) -> np.ndarray:
        ctx.save_for_backward(x, t, weight, pos_weight)
        ctx.reduction = reduction
        xd, y = x._data.astype(dtype, copy=False), t._data
        softplus_neg = np.logaddexp(0, -xd)  # -log(sigmoid(x)), stable for any x
        if pos_weight is None:
            losses = (1 - y) * xd + softplus_neg
        else:
            log_weight = (pos_weight._data - 1) * y + 1
            losses = (1 - y) * xd + log_weight * softplus_neg
        return _reduce(_with_weight(losses.astype(dtype, copy=False), weight), reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        x, t, w, pw = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        gs = _grad_scale(g, ctx.reduction, x._data.size)
        if w is not None:
            gs = gs * w
        gx = gt = None
        if need_x:
            sig = sigmoid(x)
            if pw is None:
                gx = (sig - t) * gs
            else:
                pt = pw * t
                gx = ((pt + 1.0 - t) * sig - pt) * gs
        if need_t:
            if pw is None:
                gt = -x * gs
            else:  # log_sigmoid(-x) - pos_weight * log_sigmoid(x), log_sigmoid(z) = -softplus(-z)
                gt = (pw * softplus(-x) - softplus(x)) * gs
        return gx, gt


def _bcel_samples(rng: np.random.Generator) -> list[Any]:
    def prob(*shape: int) -> np.ndarray:
        return rng.uniform(0.05, 0.95, size=shape)

    return [
        sample(S.rand(rng, 3, 4), Const(prob(3, 4))),
        sample(S.rand(rng, 3, 4), prob(3, 4), reduction="sum", note="target requires grad"),
        sample(S.rand(rng, 3, 4), Const(prob(3, 4)), reduction="none", weight=Const(prob(3, 1))),
        sample(S.rand(rng, 3, 4), Const(prob(3, 4)), pos_weight=Const(prob(4) * 3)),
        sample(
            S.rand(rng, 2, 3),
            prob(2, 3),
            pos_weight=Const(prob(3) * 3),
            note="pos_weight, target grad",
        ),
        sample(S.rand(rng, 4) * 40, Const(prob(4)), note="large logits stay finite"),
        sample(S.rand(rng), Const(prob()), note="0-d"),
        sample(S.rand(rng, 0, 2), Const(prob(0, 2)), reduction="sum", note="empty"),
    ]


@register(
    complex_inputs="\"log_sigmoid_cpu\" not implemented for '{type}'",
    samples=_bcel_samples,
    method=False,
    torch="nn.functional.binary_cross_entropy_with_logits",
)
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from logits."""
    red = _reduction(reduction)
    x = _tensor_arg(input, "binary_cross_entropy_with_logits", "input")
    t = _tensor_arg(target, "binary_cross_entropy_with_logits", "target")
    if x._data.shape != t._data.shape:
        raise ShapeMismatchError(
            f"Target size ({_size(t._data.shape)}) must be the same as input size ({_size(x._data.shape)})"
        )
    if not dtypes.is_floating(x._data.dtype):
        raise DtypeMismatchError(
            f"\"log_sigmoid_cpu\" not implemented for '{_type_name(x._data.dtype)}'"
        )
    # PyTorch computes in place on (1 - target): the result has the target's float dtype
    dtype = t._data.dtype
    if not dtypes.is_floating(dtype):
        raise DtypeMismatchError(
            f"result type {_type_name(dtypes.result_type(x, t))} can't be cast to the desired "
            f"output type {_type_name(dtype)}"
        )
    w = _weight_arg(weight, x._data.shape, "binary_cross_entropy_with_logits")
    pw = None
    if pos_weight is not None:
        pw = _tensor_arg(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
        if pw.requires_grad and is_grad_enabled():
            raise BadArgumentsError(
                "The function 'binary_cross_entropy_with_logits' is not differentiable with "
                "respect to argument 'pos_weight'. This input cannot have requires_grad True."
            )
        broadcast_shape(pw._data.shape, t._data.shape)
    return BinaryCrossEntropyWithLogitsBackward0.apply(
        x, t, weight=w, pos_weight=pw, reduction=red, dtype=dtype
    )


# -- more losses, composed as PyTorch composes them ----------------------------------------
# Where PyTorch has a fused kernel (HuberLossBackward0, SoftMarginLossBackward0,
# CdistBackward0, NormBackward1), the composite is recorded under that one name.


_KL_MEAN_WARNING = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size."
    "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
    "'mean' will be changed to behave the same as 'batchmean' in the next major release."
)


def _xlogy_self(t: Tensor) -> Tensor:
    """``xlogy(t, t)``: ``t * log(t)``, 0 where ``t == 0``."""
    zero = t._data == 0
    if not needs_derivative(t):
        with np.errstate(divide="ignore", invalid="ignore"):
            return Tensor._make(np.where(zero, 0, t._data * np.log(t._data)).astype(t._data.dtype))
    safe = where(Tensor._make(zero), 1.0, t)
    return where(Tensor._make(zero), 0.0, t * log(safe))


def _kl_samples(rng: np.random.Generator) -> list[Any]:
    def probs(*shape: int) -> np.ndarray:
        return rng.uniform(0.1, 1.0, size=shape)

    lp = _log_probs
    return [
        sample(lp(rng, 3, 4), Const(probs(3, 4)), reduction="batchmean"),
        sample(lp(rng, 3, 4), probs(3, 4), reduction="sum", note="target grad"),
        sample(lp(rng, 3, 4), Const(probs(3, 4)), reduction="none", note="none"),
        sample(lp(rng, 3, 4), Const(probs(3, 4)), note="mean warns"),
        sample(lp(rng, 3, 4), lp(rng, 3, 4), log_target=True, reduction="sum", note="log_target"),
        sample(
            lp(rng, 3, 4),
            Const(lp(rng, 3, 4)),
            log_target=True,
            reduction="none",
            note="log_target none",
        ),
        sample(
            lp(rng, 3, 4),
            Const(np.where(probs(3, 4) > 0.5, probs(3, 4), 0.0)),
            reduction="batchmean",
            note="zeros in target",
        ),
        sample(lp(rng), Const(probs()), reduction="batchmean", note="0-d batchmean"),
    ]


@register(samples=_kl_samples, method=False, torch="nn.functional.kl_div")
def kl_div(
    input: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False
) -> Tensor:
    """KL divergence of ``target`` from log-probabilities ``input`` (``batchmean`` is the true KL)."""
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ArgumentValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean":
        warnings.warn(_KL_MEAN_WARNING, UserWarning, stacklevel=2)
    x = _tensor_arg(input, "kl_div", "input")
    t = _tensor_arg(target, "kl_div", "target")
    if not (dtypes.is_floating(x._data.dtype) and dtypes.is_floating(t._data.dtype)):
        raise DtypeMismatchError("kl_div: Integral inputs not supported.")
    if log_target:
        out = OPS["exp"].fn(t) * (t - x)
    else:
        out = _xlogy_self(t) - t * x
    if reduction == "batchmean":
        total = sum_(out)
        return total / x._data.shape[0] if x._data.ndim else total
    return _apply_reduction(out, reduction)


def _huber_body(a: Tensor, t: Tensor, *, delta: float, reduction: str) -> Tensor:
    d = a - t
    small = Tensor._make(np.abs(d._data) < delta)
    # the quadratic branch squares d only where it is taken (0 elsewhere): no inf * 0 = NaN
    # in the gradient where |d| is infinite (torch: +-delta there); NaN d keeps its NaN
    dc = where(Tensor._make(small._data | np.isnan(d._data)), d, 0.0)
    losses = where(small, dc * dc * 0.5, (abs_(d) - 0.5 * delta) * delta)
    return _apply_reduction(losses, reduction)


def _huber_samples(rng: np.random.Generator) -> list[Any]:
    base = S.rand(rng, 3, 4)
    offs = S.away_from_zero(rng, 3, 4) * np.where(rng.random((3, 4)) > 0.5, 0.3, 1.7)
    return [
        sample(base, Const(base - offs)),
        sample(base, base - offs, reduction="sum", note="target grad"),
        sample(base, Const(base - offs), reduction="none", delta=2.5, note="delta"),
        sample(S.rand(rng, 3, 4), Const(S.rand(rng, 4) + 6), delta=0.5, note="broadcast target"),
        sample(base, Const(base - offs), weight=Const(S.positive(rng, 3, 4)), note="weight"),
        sample(
            base,
            Const(base - offs),
            weight=S.positive(rng, 3, 4),
            reduction="none",
            note="weight grad, none",
        ),
    ]


@register(samples=_huber_samples, method=False, torch="nn.functional.huber_loss")
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta * (|d| - delta/2)``; optionally weighted."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "huber_loss", "input")
    t = _tensor_arg(target, "huber_loss", "target")
    a, t = _broadcast_pair(a, t)
    if delta <= 0:
        raise BadArgumentsError("huber_loss does not support non-positive values for delta.")
    _float_result(a, t, "huber_cpu")
    if weight is None:
        return composite("HuberLossBackward0", _huber_body, a, t, delta=float(delta), reduction=red)
    w = _tensor_arg(weight, "huber_loss", "weight")
    if w._data.shape != _tensor_arg(input, "huber_loss", "input")._data.shape:
        raise ArgumentValueError("Weights and input must have the same size.")
    losses = composite(
        "HuberLossBackward0", _huber_body, a, t, delta=float(delta), reduction="none"
    )
    return _apply_reduction(losses * w, red)


def _soft_margin_body(x: Tensor, y: Tensor, *, reduction: str) -> Tensor:
    return _apply_reduction(OPS["log1p"].fn(OPS["exp"].fn(-(y * x))), reduction)


def _signs(rng: np.random.Generator, *shape: int) -> Const:
    return Const(rng.choice([-1.0, 1.0], size=shape))


def _soft_margin_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), _signs(rng, 3, 4)),
        sample(S.rand(rng, 3, 4), _signs(rng, 3, 4), reduction="sum", note="sum"),
        sample(S.rand(rng, 5), _signs(rng, 5), reduction="none", note="none"),
        sample(S.rand(rng), _signs(rng), note="0-d"),
    ]


@register(samples=_soft_margin_samples, method=False, torch="nn.functional.soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))`` for targets of ±1."""
    red = _reduction(reduction)
    x = _tensor_arg(input, "soft_margin_loss", "input")
    y = _tensor_arg(target, "soft_margin_loss", "target")
    if y.requires_grad and is_grad_enabled():
        raise BadArgumentsError(
            "The function 'soft_margin_loss' is not differentiable with respect to argument "
            "'target'. This input cannot have requires_grad True."
        )
    broadcast_shape(x.shape, y.shape)  # PyTorch's first step, -input * target, says so
    return composite("SoftMarginLossBackward0", _soft_margin_body, x, y, reduction=red)


def _hinge_samples(rng: np.random.Generator) -> list[Any]:
    x = S.rand(rng, 3, 4)
    return [
        sample(x, _signs(rng, 3, 4)),
        sample(S.rand(rng, 3, 4), _signs(rng, 3, 4), margin=2.5, reduction="sum", note="margin"),
        sample(S.rand(rng, 6), _signs(rng, 6), reduction="none", note="none"),
        sample(
            S.rand(rng, 2, 3),
            Const(np.array([1.0, -1.0, 0.0])),
            reduction="none",
            note="neither 1 nor -1",
        ),
    ]


@register(
    complex_inputs="clamp is not supported for complex types",
    samples=_hinge_samples,
    method=False,
    torch="nn.functional.hinge_embedding_loss",
)
def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: str = "mean"
) -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1."""
    red = _reduction(reduction)
    x = _tensor_arg(input, "hinge_embedding_loss", "input")
    t = _tensor_arg(target, "hinge_embedding_loss", "target")
    shape = broadcast_shape(x._data.shape, t._data.shape)
    not_pos = Tensor._make(np.broadcast_to(t._data != 1, shape))
    not_neg = Tensor._make(np.broadcast_to(t._data != -1, shape))
    margin_part = where(not_pos, OPS["clamp_min"].fn(margin - x, 0), 0.0)
    self_part = where(not_neg, x, 0.0)
    return _apply_reduction(margin_part + self_part, red)


def _size_text(t: Tensor) -> str:
    return _size(t._data.shape)


def _ranking_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 5), S.rand(rng, 5), _signs(rng, 5)),
        sample(
            S.rand(rng, 5),
            S.rand(rng, 5),
            S.rand(rng, 5),
            margin=0.5,
            reduction="sum",
            note="target grad, margin",
        ),
        sample(
            S.rand(rng, 2, 3), S.rand(rng, 2, 3), _signs(rng, 2, 3), reduction="none", note="none"
        ),
    ]


@register(
    complex_inputs="clamp is not supported for complex types",
    samples=_ranking_samples,
    method=False,
    torch="nn.functional.margin_ranking_loss",
)
def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: rank input1 above input2 where target is 1."""
    red = _reduction(reduction)
    a = _tensor_arg(input1, "margin_ranking_loss", "input1")
    b = _tensor_arg(input2, "margin_ranking_loss", "input2")
    t = _tensor_arg(target, "margin_ranking_loss", "target")
    if not a._data.ndim == b._data.ndim == t._data.ndim:
        raise BadArgumentsError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {_size_text(a)}, input2: {_size_text(b)}, target: {_size_text(t)} "
        )
    return _apply_reduction(OPS["clamp_min"].fn(-t * (a - b) + margin, 0), red)


def _cos_emb_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), S.rand(rng, 3, 4), _signs(rng, 3)),
        sample(
            S.rand(rng, 3, 4),
            S.rand(rng, 3, 4),
            _signs(rng, 3),
            margin=-0.5,
            reduction="sum",
            note="margin",
        ),
        sample(S.rand(rng, 4, 2), S.rand(rng, 4, 2), _signs(rng, 4), reduction="none", note="none"),
        sample(S.rand(rng, 4), S.rand(rng, 4), Const(np.array(-1.0)), note="1-d, 0-d target"),
    ]


@register(samples=_cos_emb_samples, method=False, torch="nn.functional.cosine_embedding_loss")
def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """``1 - cos`` where target is 1, ``max(0, cos - margin)`` where it is -1."""
    red = _reduction(reduction)
    a = _tensor_arg(input1, "cosine_embedding_loss", "input1")
    b = _tensor_arg(input2, "cosine_embedding_loss", "input2")
    t = _tensor_arg(target, "cosine_embedding_loss", "target")
    tdim = t._data.ndim
    if tdim == 1 and (a._data.ndim != 2 or b._data.ndim != 2):
        raise ShapeMismatchError(
            "cosine_embedding_loss: 1D target tensor expects 2D input tensors, but found inputs "
            f"with sizes {list(a._data.shape)} and {list(b._data.shape)}."
        )
    if tdim == 0 and (a._data.ndim != 1 or b._data.ndim != 1):
        raise ShapeMismatchError(
            "cosine_embedding_loss: 0D target tensor expects 1D input tensors, but found inputs "
            f"with sizes {list(a._data.shape)} and {list(b._data.shape)}."
        )
    if tdim > 1:
        raise ShapeMismatchError("1D target tensor expected, multi-target not supported")
    eps = 1e-12
    prod = sum_(a * b, tdim)
    mag1 = sum_(a * a, tdim) + eps
    mag2 = sum_(b * b, tdim) + eps
    cos = prod / OPS["sqrt"].fn(mag1 * mag2)
    shape = broadcast_shape(t._data.shape, cos._data.shape)
    pos = where(Tensor._make(np.broadcast_to(t._data == 1, shape)), 1 - cos, 0.0)
    neg = where(
        Tensor._make(np.broadcast_to(t._data == -1, shape)),
        OPS["clamp_min"].fn(cos - margin, 0),
        0.0,
    )
    return _apply_reduction(pos + neg, red)


# -- distances ---------------------------------------------------------------------------------


def _pairwise_body(a: Tensor, b: Tensor, *, p: float, eps: float, keepdim: bool) -> Tensor:
    d = a - b + eps
    return OPS["norm"].fn(d, p, max(d._data.ndim - 1, 0), keepdim)


def _pairwise_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), r(rng, 3, 4)),
        sample(r(rng, 3, 4), r(rng, 4), p=1.0, note="broadcast, p=1"),
        sample(r(rng, 2, 3), r(rng, 2, 3), p=3.0, keepdim=True, note="p=3 keepdim"),
        sample(r(rng, 5), r(rng, 5), eps=0.1, note="vectors"),
    ]


@register(samples=_pairwise_samples, method=False, torch="nn.functional.pairwise_distance")
def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` along the last dim."""
    a = _tensor_arg(x1, "pairwise_distance", "x1")
    b = _tensor_arg(x2, "pairwise_distance", "x2")
    broadcast_shape(a._data.shape, b._data.shape)
    # torch's nodes save x1 - x2 + eps and the norm, not the inputs
    return composite(
        "NormBackward1",
        _pairwise_body,
        a,
        b,
        saves=intermediates_only,
        p=float(p),
        eps=float(eps),
        keepdim=bool(keepdim),
    )


def _triplet_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), r(rng, 3, 4), r(rng, 3, 4)),
        sample(
            r(rng, 3, 4),
            r(rng, 3, 4),
            r(rng, 3, 4),
            margin=3.0,
            p=1.0,
            reduction="sum",
            note="margin, p=1",
        ),
        sample(
            r(rng, 3, 4),
            r(rng, 3, 4),
            r(rng, 3, 4),
            swap=True,
            margin=4.0,
            reduction="none",
            note="swap, none",
        ),
    ]


@register(samples=_triplet_samples, method=False, torch="nn.functional.triplet_margin_loss")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with pairwise distances."""
    red = _reduction(reduction)
    if margin <= 0:
        raise ArgumentValueError(f"margin must be greater than 0, got {margin}")
    a = _tensor_arg(anchor, "triplet_margin_loss", "anchor")
    pos = _tensor_arg(positive, "triplet_margin_loss", "positive")
    neg = _tensor_arg(negative, "triplet_margin_loss", "negative")
    if not a._data.ndim == pos._data.ndim == neg._data.ndim:
        raise ShapeMismatchError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a._data.ndim}D, positive {pos._data.ndim}D, and "
            f"negative {neg._data.ndim}D inputs"
        )
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = OPS["minimum"].fn(d_neg, pairwise_distance(pos, neg, p, eps))
    return _apply_reduction(OPS["clamp_min"].fn(d_pos + margin - d_neg, 0), red)


def _cosine_similarity_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), r(rng, 3, 4)),
        sample(r(rng, 3, 4), r(rng, 3, 4), dim=0, note="dim 0"),
        sample(r(rng, 2, 3, 4), r(rng, 3, 4), dim=-1, note="broadcast"),
        sample(r(rng, 4), r(rng, 4), dim=0, note="vectors"),
    ]


@register(samples=_cosine_similarity_samples, method=False, torch="nn.functional.cosine_similarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``; norms floored at ``eps``."""
    a = _tensor_arg(x1, "cosine_similarity", "x1")
    b = _tensor_arg(x2, "cosine_similarity", "x2")
    common = dtypes.result_type(a, b)
    if not dtypes.is_floating(common):
        raise DtypeMismatchError(
            "expected common dtype to be floating point, yet common dtype is " + _type_name(common)
        )
    shape = broadcast_shape(a._data.shape, b._data.shape)
    a = a if a._data.shape == shape else expand(a, shape)
    b = b if b._data.shape == shape else expand(b, shape)

    def unit(x: Tensor) -> Tensor:
        # PyTorch floors the norm in place under no_grad: the value is clamped, the
        # gradient is the norm's own (a constant shift does exactly that)
        n = OPS["norm"].fn(x, 2, dim, True)
        lift = np.maximum(n._data, n._data.dtype.type(eps)) - n._data
        return x / (n + Tensor._make(lift)) if lift.any() else x / n

    return sum_(unit(a) * unit(b), dim)


def _cdist_body(a: Tensor, b: Tensor, *, p: float) -> Tensor:
    d = OPS["unsqueeze"].fn(a, -2) - OPS["unsqueeze"].fn(b, -3)
    out: Tensor = OPS["norm"].fn(d, p, -1)
    if p == 0:  # torch's kernel sums min(ceil(|d|), 1): a NaN difference makes NaN
        spoiled = np.isnan(d._data).any(-1)
        if spoiled.any():
            out = where(Tensor._make(spoiled), float("nan"), out)
    return out


def _cdist_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3, 2), r(rng, 4, 2)),
        sample(r(rng, 2, 3, 2), r(rng, 2, 4, 2), p=1.0, note="batched, p=1"),
        sample(r(rng, 3, 4), r(rng, 2, 4), p=3.0, note="p=3"),
        sample(r(rng, 3, 2), r(rng, 4, 2), p=float("inf"), note="p=inf"),
        sample(r(rng, 2, 3, 2), r(rng, 4, 2), note="broadcast batch"),
    ]


def _cdist_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Every pairwise difference: batch x rows of x1 x rows of x2 x columns."""
    a, b = (list(args) + [kwargs.get("x1"), kwargs.get("x2")])[:2]
    if not hasattr(a, "shape") or not hasattr(b, "shape") or len(a.shape) < 2 or len(b.shape) < 2:
        return None
    try:
        batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        return None
    return int(np.prod(batch)) * a.shape[-2] * b.shape[-2] * a.shape[-1]


@register(samples=_cdist_samples, method=False, estimate=_cdist_estimate)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """p-norm distance between each row of ``x1`` and each row of ``x2`` (batched)."""
    a = _tensor_arg(x1, "cdist", "x1")
    b = _tensor_arg(x2, "cdist", "x2")
    for name, t in (("X1", a), ("X2", b)):
        if t._data.ndim < 2:
            raise ShapeMismatchError(
                f"cdist only supports at least 2D tensors, {name} got: {t._data.ndim}D"
            )
    if a._data.shape[-1] != b._data.shape[-1]:
        raise ShapeMismatchError(
            "X1 and X2 must have the same number of columns. "
            f"X1: {a._data.shape[-1]} X2: {b._data.shape[-1]}"
        )
    if p < 0:
        raise BadArgumentsError("cdist only supports non-negative p values")
    if a._data.dtype != b._data.dtype:
        raise DtypeMismatchError(
            f"expected scalar type {_type_name(a._data.dtype)} but found {_type_name(b._data.dtype)}"
        )
    broadcast_shape(a._data.shape[:-2], b._data.shape[:-2])
    return composite("CdistBackward0", _cdist_body, a, b, p=float(p))


# -- likelihood losses -------------------------------------------------------------------------


def _poisson_samples(rng: np.random.Generator) -> list[Any]:
    counts = Const(rng.integers(0, 6, size=(3, 4)).astype(np.float64))
    return [
        sample(S.rand(rng, 3, 4), counts),
        sample(S.rand(rng, 3, 4), S.positive(rng, 3, 4) * 3, reduction="sum", note="target grad"),
        sample(S.positive(rng, 3, 4), counts, log_input=False, reduction="none", note="rates"),
        sample(S.rand(rng, 3, 4), Const(S.positive(rng, 3, 4) * 3), full=True, note="full"),
        sample(
            S.positive(rng, 3, 4),
            Const(S.positive(rng, 3, 4) * 3),
            log_input=False,
            full=True,
            reduction="none",
            note="rates, full",
        ),
    ]


@register(samples=_poisson_samples, method=False, torch="nn.functional.poisson_nll_loss")
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    eps: float = 1e-8,
    reduction: str = "mean",
) -> Tensor:
    """Poisson negative log-likelihood of ``target`` counts given (log-)rates ``input``."""
    red = _reduction(reduction)
    x = _tensor_arg(input, "poisson_nll_loss", "input")
    t = _tensor_arg(target, "poisson_nll_loss", "target")
    if log_input:
        loss = OPS["exp"].fn(x) - t * x
    else:
        loss = x - t * log(x + eps)
    if full:
        small = t._data <= 1
        safe = where(Tensor._make(small), 2.0, t)  # keeps log finite where the term is masked
        stirling = safe * log(safe) - safe + log(safe * (2 * np.pi)) * 0.5
        loss = loss + OPS["masked_fill"].fn(stirling, Tensor._make(small), 0.0)
    return _apply_reduction(loss, red)


def _gaussian_samples(rng: np.random.Generator) -> list[Any]:
    r, pos = S.rand, S.positive
    return [
        sample(r(rng, 3, 4), Const(r(rng, 3, 4)), pos(rng, 3, 4)),
        sample(r(rng, 3, 4), r(rng, 3, 4), pos(rng, 3), reduction="sum", note="homoscedastic"),
        sample(
            r(rng, 3, 4),
            Const(r(rng, 3, 4)),
            pos(rng, 3, 1),
            full=True,
            reduction="none",
            note="var (N, 1), full",
        ),
        sample(r(rng, 3, 4), Const(r(rng, 3, 4)), Const(pos(rng, 3, 4) * 1e-8), note="clamped"),
        sample(r(rng, 2, 2), Const(r(rng, 2, 2)), 0.5, note="float var"),
    ]


@register(samples=_gaussian_samples, method=False, torch="nn.functional.gaussian_nll_loss")
def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Any,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Gaussian negative log-likelihood ``0.5 (log var + (input - target)**2 / var)``."""
    x = _tensor_arg(input, "gaussian_nll_loss", "input")
    t = _tensor_arg(target, "gaussian_nll_loss", "target")
    if isinstance(var, float):
        if var < 0:
            raise ArgumentValueError("var has negative entry/entries")
        v = Tensor._make(np.full(x._data.shape, var, x._data.dtype))
    else:
        v = _tensor_arg(var, "gaussian_nll_loss", "var")
        if (v._data < 0).any():
            raise ArgumentValueError("var has negative entry/entries")
    vs, xs = v._data.shape, x._data.shape
    if vs != xs:
        if xs[:-1] == vs:
            v = OPS["unsqueeze"].fn(v, -1)
        elif not (len(xs) == len(vs) and sum(m for n, m in zip(xs, vs) if n != m) == 1):
            raise ArgumentValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ArgumentValueError(reduction + " is not valid")
    # PyTorch clamps a clone of var in place under no_grad: value floored, gradient intact
    lift = np.maximum(v._data, v._data.dtype.type(eps)) - v._data
    v = OPS["clone"].fn(v) + Tensor._make(lift) if lift.any() else v
    loss = (log(v) + (x - t) ** 2 / v) * 0.5
    if full:
        loss = loss + 0.5 * float(np.log(2 * np.pi))
    return _apply_reduction(loss, reduction)
