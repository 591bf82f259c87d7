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
from ..errors import BadArgumentsError, DtypeMismatchError, IndexOutOfRangeError, ShapeMismatchError
from ..function import Function
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
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
        raise BadArgumentsError(f"{reduction} is not a valid value for reduction")
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
    if input.data.shape == target.data.shape:
        return input, target
    warnings.warn(
        f"Using a target size ({_size(target.data.shape)}) that is different to the input size "
        f"({_size(input.data.shape)}). This will likely lead to incorrect results due to "
        "broadcasting. Please ensure they have the same size.",
        UserWarning,
        stacklevel=3,
    )
    shape = broadcast_shape(input.data.shape, target.data.shape)
    return (
        input if input.data.shape == shape else expand(input, shape),
        target if target.data.shape == shape else expand(target, shape),
    )


def _float_result(input: Tensor, target: Tensor, kernel: str) -> np.dtype:
    dt = dtypes.result_type(input, target)
    if not dtypes.is_floating(dt):
        raise DtypeMismatchError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")
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
    def forward(ctx: Any, a: Tensor, t: Tensor, *, reduction: str, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(a, t)
        ctx.reduction = reduction
        d = np.subtract(a.data, t.data, dtype=dtype)
        return _reduce(np.multiply(d, d), reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, t = ctx.saved_tensors
        need_a, need_t = ctx.needs_input_grad
        ga = (a - t) * (_grad_scale(g, ctx.reduction, a.data.size) * 2.0)
        return (ga if need_a else None), (-ga if need_t else None)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        a, t = ctx.saved_tensors
        need_a, need_t = ctx.needs_input_grad
        ga = np.subtract(a.data, t.data, dtype=g.dtype)
        ga *= _grad_scale(g, ctx.reduction, a.data.size) * 2.0
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

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, t: Tensor, *, reduction: str, beta: float, dtype: np.dtype
    ) -> np.ndarray:
        ctx.save_for_backward(a, t)
        ctx.reduction, ctx.beta = reduction, beta
        d = np.subtract(a.data, t.data, dtype=dtype)
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
        slope = where(Tensor._make(np.abs(d.data) < ctx.beta), d / ctx.beta, sign(d))
        ga = slope * _grad_scale(g, ctx.reduction, a.data.size)
        return (ga if need_a else None), (-ga if need_t else None)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        a, t = ctx.saved_tensors
        need_a, need_t = ctx.needs_input_grad
        d = np.subtract(a.data, t.data, dtype=g.dtype)
        slope = np.where(np.abs(d) < ctx.beta, d / ctx.beta, np.sign(d))
        ga = (slope * _grad_scale(g, ctx.reduction, a.data.size)).astype(g.dtype, copy=False)
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

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, plan: _NllPlan) -> np.ndarray:
        ctx.save_for_backward(a, plan)  # PyTorch saves self, target, weight and total_weight
        picked = np.take(a.data.reshape(-1), plan.flat)
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

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        _, plan = ctx.saved_tensors
        return _nll_adjoint(g, plan)


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

    @staticmethod
    def forward(ctx: Any, g: Tensor, a: Tensor, *, plan: _NllPlan) -> np.ndarray:
        ctx.save_for_backward(plan)
        ctx.in_shape = a.data.shape
        return _nll_adjoint(g.data, plan)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (plan,) = ctx.saved_tensors
        need_g, need_a = ctx.needs_input_grad
        return (
            NllLossBackward0.apply(gg, plan=plan) if need_g else None,
            Tensor._make(np.zeros(ctx.in_shape, gg.dtype)) if need_a else None,
        )


def _nll_plan(a: Tensor, target: Any, weight: Any, ignore_index: int, reduction: str) -> _NllPlan:
    """Check nll_loss's arguments as PyTorch does and precompute the picked entries."""
    if a.data.ndim == 0:
        raise ShapeMismatchError("Expected 1 or more dimensions (got 0)")
    if not dtypes.is_floating(a.data.dtype):
        raise DtypeMismatchError(
            f"\"nll_loss_out_frame\" not implemented for '{_type_name(a.data.dtype)}'"
        )
    t = _tensor_arg(target, "nll_loss", "target")
    if t.data.dtype != dtypes.int64:
        raise DtypeMismatchError(
            f"expected target dtype to be Long or Byte, but got {_type_name(t.data.dtype)}"
        )
    if a.data.ndim > 2:
        raise BadArgumentsError(
            "nll_loss: inputs of more than 2 dimensions (the K-dimensional loss) are not supported"
        )
    if t.data.ndim > 1:
        raise ShapeMismatchError("0D or 1D target tensor expected, multi-target not supported")
    shape = a.data.shape
    c = shape[-1]
    n = shape[0] if a.data.ndim == 2 else 1
    tn = t.data.shape[0] if t.data.ndim else (1 if a.data.ndim == 1 else 0)
    if tn != n or (a.data.ndim == 2 and t.data.ndim == 0):
        raise ShapeMismatchError(
            f"Expected input batch_size ({n}) to match target batch_size ({tn})."
        )
    cols = t.data.reshape(-1)
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
        if wt.data.shape != (c,):
            raise ShapeMismatchError(
                f"weight tensor should be defined either for all {c} classes or no classes but got "
                f"weight tensor of shape: [{', '.join(map(str, wt.data.shape))}]"
            )
        if wt.data.dtype != a.data.dtype:
            raise DtypeMismatchError(
                f"expected scalar type {_type_name(a.data.dtype)} but found {_type_name(wt.data.dtype)}"
            )
    rows = np.arange(0, n * c, c) if kept is None else kept * c
    if weight is not None:
        w = wt.data[valid]
        total = float(w.sum())
    else:
        total = float(valid.size)
    return _NllPlan(
        flat=rows + valid,
        weights=w,
        kept=kept,
        total=total,
        reduction=reduction,
        in_shape=shape,
        out_shape=(n,) if a.data.ndim == 2 else (),
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


@register(
    samples=lambda rng: _class_samples(rng, _log_probs),
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
    """Negative log-likelihood of class-index targets given log-probabilities (N, C) or (C,)."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "nll_loss", "input")
    return NllLossBackward0.apply(a, plan=_nll_plan(a, target, weight, int(ignore_index), red))


@register(
    samples=lambda rng: _class_samples(rng, S.rand),
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
    """Softmax cross-entropy with class-index targets: ``nll_loss(log_softmax(input, 1))``."""
    red = _reduction(reduction)
    a = _tensor_arg(input, "cross_entropy", "input")
    t = _tensor_arg(target, "cross_entropy", "target")
    if a.data.shape == t.data.shape:
        if not dtypes.is_floating(t.data.dtype):
            raise DtypeMismatchError(
                "Expected floating point type for target with class probabilities, got "
                + _type_name(t.data.dtype)
            )
        raise BadArgumentsError(
            "cross_entropy: class-probability targets are not supported; pass class indices "
            "as an int64 tensor"
        )
    if label_smoothing:
        raise BadArgumentsError("cross_entropy: label_smoothing is not supported")
    if not dtypes.is_floating(a.data.dtype):
        raise DtypeMismatchError(
            f"\"log_softmax_lastdim_kernel_impl\" not implemented for '{_type_name(a.data.dtype)}'"
        )
    plan = _nll_plan(a, t, weight, int(ignore_index), red)  # check before computing
    logp = OPS["log_softmax"].fn(a, 1 if a.data.ndim == 2 else 0)
    return NllLossBackward0.apply(logp, plan=plan)


# -- binary losses -------------------------------------------------------------


def _weight_arg(weight: Any, shape: tuple[int, ...], op: str) -> Tensor | None:
    """A weight that must broadcast to the loss's shape (PyTorch expands it)."""
    if weight is None:
        return None
    w = _tensor_arg(weight, op, "weight")
    ws = w.data.shape
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
    return x if w is None else (x * w.data).astype(x.dtype, copy=False)


class BinaryCrossEntropyBackward0(Function):
    name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(
        ctx: Any, p: Tensor, t: Tensor, *, weight: Tensor | None, reduction: str
    ) -> np.ndarray:
        ctx.save_for_backward(p, t, weight)
        ctx.reduction = reduction
        x, y = p.data, t.data
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(x), -100.0)
            log_1mp = np.maximum(np.log1p(-x), -100.0)
        losses = (y - 1) * log_1mp - y * log_p
        return _reduce(_with_weight(losses.astype(x.dtype, copy=False), weight), reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        p, t, w = ctx.saved_tensors
        need_p, need_t = ctx.needs_input_grad
        gs = _grad_scale(g, ctx.reduction, p.data.size)
        if w is not None:
            gs = gs * w
        gp = gt = None
        if need_p:
            q = (1.0 - p) * p
            gp = (p - t) / where(Tensor._make(q.data > _BCE_EPSILON), q, _BCE_EPSILON) * gs
        if need_t:
            gt = (log(1.0 - p) - log(p)) * gs
        return gp, gt

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        p, t, w = ctx.saved_tensors
        need_p, need_t = ctx.needs_input_grad
        x, y = p.data, t.data
        gs = _grad_scale(g, ctx.reduction, x.size)
        if w is not None:
            gs = gs * w.data
        gp = gt = None
        if need_p:
            gp = (x - y) / np.maximum((1 - x) * x, _BCE_EPSILON) * gs
        if need_t:
            with np.errstate(divide="ignore"):
                gt = (np.log1p(-x) - np.log(x)) * gs
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


@register(samples=_bce_samples, method=False, torch="nn.functional.binary_cross_entropy")
def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """Cross-entropy of probabilities ``input`` in [0, 1] against ``target`` (logs clamped at -100)."""
    red = _reduction(reduction)
    p = _tensor_arg(input, "binary_cross_entropy", "input")
    t = _tensor_arg(target, "binary_cross_entropy", "target")
    if p.data.shape != t.data.shape:
        raise ShapeMismatchError(
            f"Using a target size ({_size(t.data.shape)}) that is different to the input size "
            f"({_size(p.data.shape)}) is deprecated. Please ensure they have the same size."
        )
    w = _weight_arg(weight, p.data.shape, "binary_cross_entropy")
    if t.data.dtype != p.data.dtype:
        raise DtypeMismatchError(
            f"Found dtype {_type_name(t.data.dtype)} but expected {_type_name(p.data.dtype)}"
        )
    x = p.data
    if not ((x >= 0) & (x <= 1)).all():
        raise BadArgumentsError("all elements of input should be between 0 and 1")
    if not ((t.data >= 0) & (t.data <= 1)).all():
        raise BadArgumentsError("all elements of target should be between 0 and 1")
    return BinaryCrossEntropyBackward0.apply(p, t, weight=w, reduction=red)


class BinaryCrossEntropyWithLogitsBackward0(Function):
    name = "BinaryCrossEntropyWithLogitsBackward0"

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
        xd, y = x.data.astype(dtype, copy=False), t.data
        softplus_neg = np.logaddexp(0, -xd)  # -log(sigmoid(x)), stable for any x
        if pos_weight is None:
            losses = (1 - y) * xd + softplus_neg
        else:
            log_weight = (pos_weight.data - 1) * y + 1
            losses = (1 - y) * xd + log_weight * softplus_neg
        return _reduce(_with_weight(losses.astype(dtype, copy=False), weight), reduction)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        x, t, w, pw = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        gs = _grad_scale(g, ctx.reduction, x.data.size)
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

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        x, t, w, pw = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        xd, y = x.data.astype(g.dtype, copy=False), t.data
        gs = _grad_scale(g, ctx.reduction, xd.size)
        if w is not None:
            gs = gs * w.data
        gx = gt = None
        if need_x:
            sig = np.exp(-np.logaddexp(0, -xd))
            if pw is None:
                gx = (sig - y) * gs
            else:
                pt = pw.data * y
                gx = ((pt + 1 - y) * sig - pt) * gs
        if need_t:
            if pw is None:
                gt = -xd * gs
            else:
                gt = (pw.data * np.logaddexp(0, -xd) - np.logaddexp(0, xd)) * gs
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
    samples=_bcel_samples, method=False, torch="nn.functional.binary_cross_entropy_with_logits"
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
    if x.data.shape != t.data.shape:
        raise ShapeMismatchError(
            f"Target size ({_size(t.data.shape)}) must be the same as input size ({_size(x.data.shape)})"
        )
    if not dtypes.is_floating(x.data.dtype):
        raise DtypeMismatchError(
            f"\"log_sigmoid_cpu\" not implemented for '{_type_name(x.data.dtype)}'"
        )
    # PyTorch computes in place on (1 - target): the result has the target's float dtype
    dtype = t.data.dtype
    if not dtypes.is_floating(dtype):
        raise DtypeMismatchError(
            f"result type {_type_name(dtypes.result_type(x, t))} can't be cast to the desired "
            f"output type {_type_name(dtype)}"
        )
    w = _weight_arg(weight, x.data.shape, "binary_cross_entropy_with_logits")
    pw = None
    if pos_weight is not None:
        pw = _tensor_arg(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
        broadcast_shape(pw.data.shape, t.data.shape)
    return BinaryCrossEntropyWithLogitsBackward0.apply(
        x, t, weight=w, pos_weight=pw, reduction=red, dtype=dtype
    )
