"""``embedding_bag``: the rows of an embedding table picked per bag and reduced
(sum, mean or max) without materialising the per-index embeddings for the caller.
One node, PyTorch's ``EmbeddingBagBackward0``; the composite picks rows with
``index_select`` and reduces them with a constant bag matrix (sum/mean) or a
gather of each bag's arg-max row (max), so gradients are the engine's own."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import interrupt
from ..errors import BadArgumentsError, ShapeMismatchError
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from ._composite import composite
from ._util import as_tensor


def _op(name: str) -> Any:
    return OPS[name].fn


def _body(
    weight: Tensor,
    psw: Tensor | None,
    *,
    idx: np.ndarray,
    bags: np.ndarray,
    keep: np.ndarray,
    mode: str,
) -> Tensor:
    rows = _op("index_select")(weight, 0, Tensor._make(idx))
    if psw is not None:
        rows = rows * _op("unsqueeze")(psw, 1)
    nbags = bags.shape[0]
    member = np.zeros((nbags, idx.shape[0]), dtype=weight.dtype)
    for b, (lo, hi) in enumerate(bags):
        member[b, lo:hi] = keep[lo:hi]
    if mode != "max":
        if mode == "mean":
            count = member.sum(1, keepdims=True)
            member = member / np.where(count > 0, count, 1)
        return _op("matmul")(Tensor._make(member), rows)
    values = rows._data
    pick = np.zeros((nbags, weight.shape[1]), dtype=np.int64)
    for b in interrupt.checked(range(nbags)):
        where = np.nonzero(member[b])[0]
        if where.size:
            pick[b] = where[np.argmax(values[where], axis=0)]
    picked = _op("gather")(rows, 0, Tensor._make(pick)) if idx.shape[0] else None
    empty = Tensor._make(member.sum(1, keepdims=True) == 0)
    if picked is None:
        return Tensor._make(np.zeros((nbags, weight.shape[1]), dtype=weight.dtype))
    return _op("where")(empty, 0.0, picked)


def _samples(rng: np.random.Generator) -> list[Any]:
    w = rng.standard_normal((10, 3))
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    off = np.array([0, 3, 3, 6])
    return [
        sample(Const(idx), w, Const(off), mode="sum", note="sum, an empty bag"),
        sample(Const(idx.reshape(2, 4)), w, mode="mean", note="2-d input, mean"),
        sample(Const(idx), w, Const(off), mode="max", note="max"),
        sample(
            Const(idx),
            w,
            Const(off),
            mode="sum",
            per_sample_weights=rng.standard_normal(8),
            padding_idx=2,
            note="per-sample weights, padding_idx",
        ),
        sample(Const(idx), w, Const(np.array([0, 3, 8])), include_last_offset=True, mode="mean"),
    ]


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    names = ("input", "weight", "offsets")
    bound = dict(zip(names, args)) | kwargs
    x, w, off = bound.get("input"), bound.get("weight"), bound.get("offsets")
    xs, ws = getattr(x, "shape", None), getattr(w, "shape", None)
    if xs is None or ws is None or len(ws) != 2:
        return None
    n = math.prod(xs)
    nbags = xs[0] if len(xs) == 2 else (math.prod(getattr(off, "shape", (1,))) or 1)
    return (n + nbags) * (ws[1] + 2) + nbags * n


@register(
    complex_inputs=(
        RuntimeError,
        "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, Float, Double; but got CPU{type}Type instead (while checking arguments for embedding_bag)",
    ),
    samples=_samples,
    method=False,
    torch="nn.functional.embedding_bag",
    estimate=_estimate,
)
def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Per bag, the sum, mean or max of the embedding rows its indices pick."""
    ind, w = as_tensor(input), as_tensor(weight)
    if w.ndim != 2:
        raise ShapeMismatchError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}"
        )
    if mode not in ("sum", "mean", "max"):
        raise BadArgumentsError(f"mode has to be one of sum, mean or max, but got {mode}")
    if max_norm is not None:
        raise BadArgumentsError("embedding_bag: max_norm is not supported")
    if per_sample_weights is not None and mode != "sum":
        raise BadArgumentsError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    psw = None if per_sample_weights is None else as_tensor(per_sample_weights)
    if psw is not None and psw.shape != ind.shape:
        raise ShapeMismatchError(
            f"embedding_bag: If per_sample_weights ({psw.shape}) is not None, then it must "
            f"have the same shape as the input ({ind.shape})"
        )
    if ind.ndim == 2:
        if offsets is not None:
            raise ShapeMismatchError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-"
                "batch of fixed length sequences. However, found offsets of type Tensor"
            )
        b, length = ind.shape
        starts = np.arange(b, dtype=np.int64) * length
        ends = starts + length
    elif ind.ndim == 1:
        if offsets is None:
            raise ShapeMismatchError("offsets has to be a 1D Tensor but got None")
        off = as_tensor(offsets)
        if off.ndim != 1:
            raise ShapeMismatchError("offsets has to be a 1D Tensor")
        o = off._data.astype(np.int64)
        n = ind.shape[0]
        if include_last_offset:
            starts, ends = o[:-1], o[1:]
        else:
            starts, ends = o, np.append(o[1:], n)
        starts, ends = np.clip(starts, 0, n), np.clip(ends, 0, n)
    else:
        raise ShapeMismatchError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {ind.ndim}"
        )
    idx = ind._data.reshape(-1).astype(np.int64)
    rows = w.shape[0]
    if ((idx < 0) | (idx >= rows)).any():
        raise ShapeMismatchError("embedding_bag: index out of range in self")
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise BadArgumentsError("padding_idx must be within the number of embeddings")
        padding_idx = padding_idx % rows
    keep = (idx != padding_idx) if padding_idx is not None else np.ones(idx.shape, dtype=bool)
    bags = np.stack([starts, np.maximum(ends, starts)], axis=1)
    flat_psw = None if psw is None else _op("reshape")(psw, (-1,))
    inputs = (w,) if flat_psw is None else (w, flat_psw)
    return composite(
        "EmbeddingBagBackward0",
        _body if flat_psw is not None else _body_no_weights,
        *inputs,
        idx=idx,
        bags=bags,
        keep=keep.astype(w.dtype),
        mode=mode,
    )


def _body_no_weights(weight: Tensor, **params: Any) -> Tensor:
    return _body(weight, None, **params)
