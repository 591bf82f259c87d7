"""``torch.nn.functional`` ops that PyTorch writes in Python over other ops, written the
same way here (so their ``grad_fn`` names, gradients and double backward are PyTorch's):
``multilabel_soft_margin_loss``, ``triplet_margin_with_distance_loss``; and two aten ops
that are one existing kernel under another name: ``channel_shuffle`` and
``constant_pad_nd``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ShapeMismatchError
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import ArgumentValueError, composite
from ._util import as_tensor
from .loss import _apply_reduction, _reduction, _tensor_arg, pairwise_distance
from .resample import pad as pad_op


def _op(name: str) -> Any:
    return OPS[name].fn


def _same_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("input")
    shape = getattr(x, "shape", None)
    return None if shape is None else 3 * math.prod(shape)


# -- multilabel_soft_margin_loss ---------------------------------------------------------------


def _mlsm_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    t = (rng.random((3, 4)) > 0.5).astype(np.float64)
    return [
        sample(r(rng, 3, 4), t, note="mean"),
        sample(r(rng, 3, 4), t, reduction="none", note="none"),
        sample(r(rng, 3, 4), t, weight=r(rng, 4), reduction="sum", note="weight, sum"),
    ]


@register(
    samples=_mlsm_samples,
    method=False,
    torch="nn.functional.multilabel_soft_margin_loss",
    estimate=_same_size,
)
def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """Per-class logistic loss averaged over classes: ``-(y·logσ(x) + (1-y)·logσ(-x))``."""
    red = _reduction(reduction)
    x, y = as_tensor(input), as_tensor(target)
    logsig = _op("logsigmoid")
    loss = -(y * logsig(x) + (1 - y) * logsig(-x))
    if weight is not None:
        loss = loss * weight
    dim = x.ndim - 1
    loss = loss.sum(dim) / x.shape[dim]
    return _apply_reduction(loss, red)


# -- triplet_margin_with_distance_loss ----------------------------------------------------------


def _twd_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), r(rng, 3, 4), r(rng, 3, 4), note="default distance"),
        sample(r(rng, 3, 4), r(rng, 3, 4), r(rng, 3, 4), margin=0.5, swap=True, note="swap"),
        sample(r(rng, 4), r(rng, 4), r(rng, 4), reduction="none", note="1-d, none"),
    ]


@register(
    samples=_twd_samples,
    method=False,
    torch="nn.functional.triplet_margin_with_distance_loss",
    estimate=_same_size,
)
def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Any = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with a given distance
    (pairwise Euclidean by default)."""
    red = _reduction(reduction)
    if margin <= 0:
        raise ArgumentValueError(f"margin must be greater than 0, got {margin}")
    op = "triplet_margin_with_distance_loss"
    a = _tensor_arg(anchor, op, "anchor")
    pos = _tensor_arg(positive, op, "positive")
    neg = _tensor_arg(negative, op, "negative")
    if not a.ndim == pos.ndim == neg.ndim:
        raise ShapeMismatchError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative "
            f"{neg.ndim}D inputs"
        )
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(a, pos), dist(a, neg)
    if swap:
        d_neg = _op("minimum")(d_neg, dist(pos, neg))
    return _apply_reduction(_op("clamp_min")(margin + d_pos - d_neg, 0), red)


# -- channel_shuffle, constant_pad_nd ---------------------------------------------------------------


def _channel_shuffle_body(x: Tensor, *, groups: int) -> Tensor:
    n, c, rest = x.shape[0], x.shape[1], x.shape[2:]
    y = _op("reshape")(x, (n, groups, c // groups, *rest))
    return _op("reshape")(_op("transpose")(y, 1, 2), x.shape)


def _channel_shuffle_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 6, 3), 3, note="3 groups"),
        sample(r(rng, 1, 4, 2, 2), 2, note="4-d"),
    ]


@register(
    samples=_channel_shuffle_samples,
    method=False,
    torch="nn.functional.channel_shuffle",
    estimate=_same_size,
)
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Channels ``(g, c/g)`` regrouped as ``(c/g, g)`` (ShuffleNet's shuffle)."""
    x = as_tensor(input)
    if groups <= 0:
        raise ShapeMismatchError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    if x.ndim <= 2:
        raise ShapeMismatchError(
            f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"sizes {list(x.shape)}"
        )
    if x.shape[1] % groups:
        raise ShapeMismatchError(
            f"Number of channels must be divisible by groups. Got {x.shape[1]} channels and "
            f"{groups} groups."
        )
    return composite("ChannelShuffleBackward0", _channel_shuffle_body, x, groups=int(groups))


def _constant_pad_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 1, 3, 3), (2, 2), note="last dim"),
        sample(r(rng, 2, 3), (1, -1, 0, 2), 0.5, note="crop and value"),
    ]


def _constant_pad_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("input")
    pads: Any = args[1] if len(args) > 1 else kwargs.get("pad")
    shape = getattr(x, "shape", None)
    if shape is None or not isinstance(pads, (list, tuple)):
        return None
    try:
        out = list(shape)
        for k in range(len(pads) // 2):
            out[-1 - k] += int(pads[2 * k]) + int(pads[2 * k + 1])
        return math.prod(max(o, 0) for o in out)
    except (TypeError, ValueError, IndexError):
        return None


@register(
    samples=_constant_pad_samples,
    method=False,
    torch="constant_pad_nd",
    estimate=_constant_pad_estimate,
)
def constant_pad_nd(input: Tensor, pad: Any, value: float = 0) -> Tensor:
    """Constant padding (negative pads crop) of the trailing dims, pairs from the last."""
    return pad_op(input, pad, "constant", value)


# -- multi_margin_loss ------------------------------------------------------------------------------


def _multi_margin_body(
    x: Tensor,
    *,
    y: np.ndarray,
    margin: float,
    p: int,
    w: np.ndarray | None,
    red: str,
    shape: tuple[int, ...],
) -> Tensor:
    n = y.shape[0]
    c = x._data.size // max(n, 1) if n else (x.shape[-1] if x.ndim else 1)
    x = _op("reshape")(x, (n, c))
    picked = _op("gather")(x, 1, Tensor._make(y.reshape(n, 1)))
    z = _op("clamp_min")(margin - picked + x, 0)
    if p == 2:
        z = z * z
    if w is not None:
        z = z * Tensor._make(w[y].reshape(n, 1).astype(x.dtype))
    own = Tensor._make(y.reshape(n, 1) == np.arange(c))
    loss = _op("where")(own, 0.0, z).sum(1) / c
    return _op("reshape")(loss, shape) if red == "none" else _apply_reduction(loss, red)


def _multi_margin_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    y = np.array([0, 3, 1, 2, 3])
    return [
        sample(r(rng, 5, 4), y, note="mean"),
        sample(r(rng, 5, 4), y, p=2, margin=0.5, reduction="none", note="p=2, none"),
        sample(r(rng, 5, 4), y, weight=Const(r(rng, 4)), reduction="sum", note="weight, sum"),
        sample(r(rng, 4), np.array(2), note="1-d"),
    ]


@register(
    complex_inputs="\"multi_margin_loss_cpu_kernel\" not implemented for '{type}'",
    samples=_multi_margin_samples,
    method=False,
    torch="nn.functional.multi_margin_loss",
    estimate=_same_size,
)
def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: ``Σ_{j≠y} max(0, margin - x[y] + x[j])^p · w[y] / C``."""
    red = _reduction(reduction)
    if p not in (1, 2):
        raise ArgumentValueError("only p == 1 and p == 2 supported")
    w = None
    if weight is not None:
        wt = as_tensor(weight)
        if wt.ndim != 1:
            raise ArgumentValueError("weight must be one-dimensional")
        w = wt._data
    x, t = as_tensor(input), as_tensor(target)
    if x.ndim > 2 or x._data.size == 0 and (x.ndim != 2 or x.shape[1] == 0):
        raise ShapeMismatchError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(x.shape)}"
        )
    n, c = (1, x._data.size) if x.ndim <= 1 else x.shape
    if t.ndim > 1 or t._data.size != n:
        raise ShapeMismatchError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{n}], but got {list(t.shape)}. "
            f"Input size: {list(x.shape)}."
        )
    if w is not None and w.shape[0] != c:
        raise ShapeMismatchError(f"inconsistent weight size, expected {c} but got {list(w.shape)}")
    if t.dtype != np.dtype(np.int64):
        kinds = {"f": "Float" if t.dtype == np.float32 else "Double", "b": "Bool"}
        raise ShapeMismatchError(
            f"expected scalar type Long but found {kinds.get(t.dtype.kind, 'Int')}"
        )
    y = t._data.reshape(n)
    if ((y < 0) | (y >= c)).any():
        raise ShapeMismatchError("target out of range")
    return composite(
        "MultiMarginLossBackward0",
        _multi_margin_body,
        x,
        y=y,
        margin=margin,
        p=p,
        w=w,
        red=red,
        shape=t.shape,
    )
