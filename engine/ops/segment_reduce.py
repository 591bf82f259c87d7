"""``_segment_reduce`` (``torch.segment_reduce``): reductions over consecutive segments
along ``axis``, their lengths given per batch row (``lengths``, or ``offsets`` whose
differences they are). ``initial`` joins every reduction and fills empty segments.
Written with engine ops, so gradients and forward AD follow from theirs."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .. import estimates
from ..errors import BadArgumentsError
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor, normalize_dim

_EMPTY = {"max": -np.inf, "min": np.inf, "sum": 0.0, "prod": 1.0, "mean": np.nan}


def _one(seg: Tensor, n: int, reduce: str, initial: Any, rest: tuple[int, ...]) -> Tensor:
    if n == 0:
        fill = _EMPTY[reduce] if initial is None else float(initial)
        return Tensor._make(np.full(rest, fill, seg.dtype))
    if reduce in ("sum", "mean"):
        out = OPS["sum"].fn(seg, 0)
        if initial is not None:
            out = out + float(initial)
        return out / n if reduce == "mean" else out
    if reduce == "prod":
        out = OPS["prod"].fn(seg, 0)
        return out if initial is None else out * float(initial)
    out = OPS["amax" if reduce == "max" else "amin"].fn(seg, 0)
    if initial is None:
        return out
    const = Tensor._make(np.full(rest, float(initial), seg.dtype))
    return OPS["maximum" if reduce == "max" else "minimum"].fn(out, const)


def _body(data: Tensor, lengths: np.ndarray, reduce: str, axis: int, initial: Any) -> Tensor:
    lead = data.shape[:axis]
    rest = tuple(data.shape[axis + 1 :])
    rows = []
    for b in itertools.product(*(range(n) for n in lead)):
        x = data
        for i in b:
            x = OPS["select"].fn(x, 0, i)
        start, segs = 0, []
        for n in lengths[b].tolist():
            seg = OPS["narrow"].fn(x, 0, start, n)
            segs.append(_one(seg, n, reduce, initial, rest))
            start += n
        rows.append(OPS["stack"].fn(segs, 0))
    out = OPS["stack"].fn(rows, 0)
    return OPS["reshape"].fn(out, (*lead, lengths.shape[-1], *rest))


def _samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 5), "max", lengths=Const(np.array([0, 1, 2, 2])), initial=1.0),
        sample(S.rand(rng, 5, 2), "mean", lengths=Const(np.array([2, 3])), note="mean"),
        sample(S.rand(rng, 4), "sum", offsets=Const(np.array([0, 1, 4])), note="offsets"),
        sample(
            S.rand(rng, 2, 3),
            "prod",
            lengths=Const(np.array([[1, 2], [3, 0]])),
            axis=1,
            initial=2.0,
            note="lengths per batch row",
        ),
        sample(S.rand(rng, 4), "min", lengths=Const(np.array([1, 3])), note="min"),
    ]


def segment_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Each segment's result is at most the input's size per segment row."""
    found = estimates.tensors_in([*args, *kwargs.values()])
    return sum(2 * estimates.numel(t) for t in found) + sum(
        estimates.numel(t) * (estimates.numel(found[0]) + 1) for t in found[1:]
    )


@register(
    "_segment_reduce",
    complex_inputs="\"_segment_reduce_cpu\" not implemented for '{type}'",
    samples=_samples,
    method=False,
    estimate=segment_size,
    torch=lambda torch, *a, **k: torch.segment_reduce(*a, **k),
)
def segment_reduce(
    data: Tensor,
    reduce: str,
    *,
    lengths: Tensor | None = None,
    indices: Tensor | None = None,
    offsets: Tensor | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial: Any = None,
) -> Tensor:
    """Reduce (``max``, ``min``, ``sum``, ``mean``, ``prod``) consecutive segments of
    ``data`` along ``axis``; ``lengths`` (or ``offsets``) gives them per batch row."""
    x = as_tensor(data)
    if reduce not in _EMPTY:
        raise BadArgumentsError(
            f"reduce argument must be either sum, prod, max, min or mean, got {reduce}"
        )
    if indices is not None:
        raise BadArgumentsError("segment_reduce(): indices based reduction is not supported yet.")
    seg: np.ndarray
    if lengths is not None:
        seg = as_tensor(lengths)._data.astype(np.int64)
    elif offsets is not None:
        seg = np.diff(as_tensor(offsets)._data.astype(np.int64), axis=-1)
    else:
        raise BadArgumentsError("segment_reduce(): Either lengths or offsets must be defined")
    ax = normalize_dim(axis, max(x.ndim, 1))
    if seg.ndim != ax + 1 or seg.shape[:-1] != x.shape[:ax]:
        raise BadArgumentsError(
            "Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) "
            "when !unsafe."
        )
    if (seg < 0).any():
        raise BadArgumentsError("lengths contains negative value!")
    total = seg.sum(axis=-1)
    if (total != x.shape[ax]).any() if not unsafe else (total > x.shape[ax]).any():
        raise BadArgumentsError(
            "Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) "
            "when !unsafe."
        )
    return composite(
        "SegmentReduceBackward0", _body, x, lengths=seg, reduce=reduce, axis=ax, initial=initial
    )
