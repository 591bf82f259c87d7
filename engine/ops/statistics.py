"""Order statistics and counting: ``quantile``/``nanquantile``, ``nanmedian``, ``mode``,
the histograms (``histc``, ``histogram``, ``histogramdd``), ``cov``/``corrcoef``,
``renorm``, ``unique_consecutive``, ``combinations`` and ``gradient``.

What is picked is decided in numpy (the order, the ranks, the bins); the picking is a
flat gather of the input (``rearrange.Gather``), so gradients flow to the chosen
elements and the arithmetic around them (interpolation, centring, scaling) is written
with engine ops: its gradient, double backward and forward AD come from theirs.
"""

from __future__ import annotations

import itertools
import math
from collections import namedtuple
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError, IndexOutOfRangeError
from ..forward_rules import FROM_BACKWARD
from ..function import Function
from ..registry import OPS, Const, Results, Sample, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor, normalize_dim, normalize_dims
from .rearrange import flat_index, gather_flat
from .reduction import _evenly

NanmedianResult = namedtuple("NanmedianResult", ["values", "indices"])
ModeResult = namedtuple("ModeResult", ["values", "indices"])
HistogramResult = namedtuple("HistogramResult", ["hist", "bin_edges"])
HistogramddResult = namedtuple("HistogramddResult", ["hist", "bin_edges"])

QuantileGather = gather_flat("QuantileBackward0", saves=False)
NanmedianBackward1 = gather_flat("NanmedianBackward1", saves=True)
ModeBackward0 = gather_flat("ModeBackward0", saves=True)
CombinationsGather = gather_flat("StackBackward0", saves=True)


def _op(name: str) -> Any:
    return OPS[name].fn


def _const(a: np.ndarray) -> Tensor:
    return Tensor._make(np.asarray(a))


# -- quantile and nanquantile -----------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_weight(
    q: Tensor, ranks: np.ndarray, below: np.ndarray, x: np.ndarray, ignore_nan: bool, w: Tensor
) -> Tensor:
    """The linear weight as a function of ``q`` (``q * (n - 1) - below``), where torch's
    rank is ``q`` times the last index: its gradient reaches ``q``."""
    nan = np.isnan(x)
    if ignore_nan:
        scale = (~nan).sum(-1, keepdims=True) - 1.0
        free = np.broadcast_to(scale >= 0, ranks.shape)
    else:
        scale = np.full((*x.shape[:-1], 1), x.shape[-1] - 1.0)
        free = np.broadcast_to(~nan.any(-1, keepdims=True), ranks.shape)
    qv = _op("reshape")(q, (-1,))
    live = qv * _const(scale.astype(x.dtype)) - _const(below.astype(x.dtype))
    return _op("where")(_const(free), live, w)


def _quantile(
    input: Any, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool
) -> Tensor:
    name = "nanquantile" if ignore_nan else "quantile"
    a = as_tensor(input)
    if a._data.dtype.kind != "f":
        raise BadArgumentsError(f"{name}() input tensor must be either float or double dtype")
    qt = q._data if isinstance(q, Tensor) else np.asarray(q, dtype=np.float64)
    if qt.ndim > 1:
        raise BadArgumentsError(f"{name}() q must be a scalar or 1D tensor")
    if isinstance(q, Tensor) and q._data.dtype != a._data.dtype:
        raise BadArgumentsError(f"{name}() q tensor must be same dtype as the input tensor")
    if a._data.size == 0 and dim is None:
        pass
    if interpolation not in _INTERPOLATIONS:
        raise BadArgumentsError(
            f"{name}() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest. Got {interpolation}"
        )
    qv = np.asarray(qt, dtype=np.float64).reshape(-1)
    if ((qv < 0) | (qv > 1)).any():
        raise BadArgumentsError(f"{name}() q values must be in the range [0, 1]")
    x = a._data
    if dim is None:
        src_shape = (x.size,)
        moved = x.reshape(-1)
        flat: np.ndarray = np.asarray(flat_index(x.shape).reshape(-1))
        d = 0
    else:
        d = normalize_dim(dim, max(a.ndim, 1))
        xx = x.reshape(1) if a.ndim == 0 else x
        if xx.shape[d] == 0:
            raise IndexOutOfRangeError(f"{name}() input tensor cannot be empty")
        moved = np.moveaxis(xx, d, -1)
        flat = np.moveaxis(flat_index(x.shape).reshape(xx.shape), d, -1)
        src_shape = moved.shape
    if moved.shape[-1] == 0:
        raise IndexOutOfRangeError(f"{name}() input tensor cannot be empty")
    n = moved.shape[-1]
    order = np.argsort(moved, axis=-1, kind="stable")
    nan = np.isnan(moved)
    last = n - 1
    if ignore_nan:
        count = (~nan).sum(-1, keepdims=True)
        ranks = qv * (count - 1)
        ranks = np.where(ranks < 0, 0.0, ranks)
    else:
        ranks = np.broadcast_to(qv * last, (*src_shape[:-1], qv.size)).copy()
        ranks = np.where(nan.any(-1, keepdims=True), float(last), ranks)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    below = ranks.astype(np.int64)
    above = np.ceil(ranks).astype(np.int64)
    sorted_flat = np.take_along_axis(flat, order, axis=-1)
    idx_below = np.take_along_axis(sorted_flat, np.minimum(below, last), axis=-1)
    idx_above = np.take_along_axis(sorted_flat, np.minimum(above, last), axis=-1)
    lo = QuantileGather.apply(a, index=idx_below)
    if interpolation in ("linear", "midpoint"):
        hi = QuantileGather.apply(a, index=idx_above)
        w = np.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
        weight: Tensor = _const(w.astype(x.dtype))
        if interpolation == "linear" and isinstance(q, Tensor) and q.requires_grad:
            weight = _q_weight(q, ranks, below, moved, ignore_nan, weight)
        out = _op("lerp")(lo, hi, weight)
    else:
        out = lo
    # (..., Q) -> (Q, ...) with the reduced dim kept or dropped
    if dim is None:
        out_shape: tuple[int, ...] = (1,) * a.ndim if keepdim else ()
    else:
        kept = list(x.shape) if a.ndim else []
        if a.ndim:
            kept[d] = 1
        out_shape = tuple(kept) if keepdim else tuple(s for k, s in enumerate(x.shape) if k != d)
    out = _op("movedim")(out, -1, 0) if out.ndim else out
    if qt.ndim == 0:
        return _op("reshape")(out, out_shape)
    return _op("reshape")(out, (qv.size, *out_shape))


def _quantile_node(
    input: Any, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool
) -> Tensor:
    """One ``SqueezeBackward4`` node, as torch records (its last step squeezes)."""
    a = as_tensor(input)
    params = {"dim": dim, "keepdim": keepdim, "interpolation": interpolation}
    if isinstance(q, Tensor):
        _quantile(a, q, dim, keepdim, interpolation, ignore_nan)  # errors before recording
        return composite("SqueezeBackward4", _quantile_body, a, q, ignore_nan=ignore_nan, **params)
    _quantile(a, q, dim, keepdim, interpolation, ignore_nan)
    return composite("SqueezeBackward4", _quantile_body, a, q=q, ignore_nan=ignore_nan, **params)


def _quantile_body(a: Tensor, q: Any, **params: Any) -> Tensor:
    return _quantile(a, q, **params)


def _quantile_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 5), 0.3, note="global"),
        sample(r(rng, 3, 5), Const(np.array([0.0, 0.25, 1.0])), 1, note="q vector, dim"),
        sample(r(rng, 4, 3), 0.5, 0, True, interpolation="midpoint", note="keepdim"),
        sample(r(rng, 4), 0.6, interpolation="lower", note="lower"),
        sample(r(rng, 4), 0.6, interpolation="higher", note="higher"),
        sample(r(rng, 5), 0.4, interpolation="nearest", note="nearest"),
    ]


@register(samples=_quantile_samples, method=True)
def quantile(
    input: Tensor,
    q: Any,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """The ``q``-th quantiles along ``dim`` (all elements when None); NaN where a NaN is."""
    return _quantile_node(input, q, dim, keepdim, interpolation, ignore_nan=False)


def _nanquantile_samples(rng: np.random.Generator) -> list[Sample]:
    x = S.rand(rng, 3, 5)
    x[0, 1] = x[2, 3] = np.nan
    return [*_quantile_samples(rng), sample(x, 0.3, 1, note="NaN ignored", gradcheck=False)]


@register(samples=_nanquantile_samples, method=True)
def nanquantile(
    input: Tensor,
    q: Any,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """``quantile`` ignoring NaN (NaN only where a slice is all NaN)."""
    return _quantile_node(input, q, dim, keepdim, interpolation, ignore_nan=True)


# -- nanmedian, mode --------------------------------------------------------------------


class NanmedianBackward0(Function):
    """The global median of the non-NaN elements: ties share the gradient (PyTorch)."""

    name = "NanmedianBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.save_result()
        x = a._data.reshape(-1)
        x = x[~np.isnan(x)]
        if x.size == 0:
            return np.asarray(np.nan, a._data.dtype)
        return np.asarray(np.sort(x, kind="stable")[(x.size - 1) // 2], a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _evenly(g, a, ctx.result)


def _nanmedian_samples(rng: np.random.Generator) -> list[Sample]:
    x = np.array([[1.0, np.nan, 3.0, 2.0], [0.5, -1.0, np.nan, np.nan]])
    return [
        sample(S.rand(rng, 2, 3), note="global"),
        sample(S.rand(rng, 2, 5), 1, note="dim"),
        sample(S.rand(rng, 4, 3), 0, True, note="dim 0 keepdim"),
        sample(x, note="global NaN skipped", gradcheck=False),
        sample(x, 1, note="rows with NaN", gradcheck=False),
    ]


@register(
    complex_inputs="\"median_cpu\" not implemented for '{type}'",
    samples=_nanmedian_samples,
    results=Results("given", arg="dim"),
)
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median ignoring NaN; with ``dim``, (values, indices) along it."""
    a = as_tensor(input)
    if a._data.dtype == dtypes.bool_:
        kernel = "nanmedian_cpu" if dim is None else "nanmedian_out"
        raise BadArgumentsError(f"\"{kernel}\" not implemented for 'Bool'")
    if dim is None:
        if not dtypes.is_floating(a._data.dtype):
            return OPS["median"].fn(a)
        return NanmedianBackward0.apply(a)
    d = normalize_dim(dim, a.ndim) if a.ndim else 0
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    size = x.shape[d]
    if size == 0:
        raise IndexOutOfRangeError(
            f"median(): Expected reduction dim {d} to have non-zero size."  # sic, PyTorch's
        )
    order = np.argsort(x, axis=d, kind="stable")  # NaN last
    count = (~np.isnan(x)).sum(axis=d, keepdims=True) if x.dtype.kind == "f" else size
    pos = np.maximum((np.asarray(count) - 1) // 2, 0)
    pos = np.broadcast_to(pos, tuple(1 if k == d else s for k, s in enumerate(x.shape)))
    idx = np.take_along_axis(order, pos, axis=d)
    flat = np.take_along_axis(flat_index(x.shape), idx, axis=d)
    if not keepdim:
        flat, idx = flat.squeeze(d), idx.squeeze(d)
    if a.ndim == 0:
        flat, idx = flat.reshape(()), idx.reshape(())
    values, indices = NanmedianBackward1.apply(a, index=flat, extra=idx.astype(np.int64))
    return NanmedianResult(values, indices)


def _std_sort(v: list[Any], ix: list[int]) -> None:
    """libstdc++'s std::sort (introsort, median-of-three, insertion sort below 16) of
    ``ix`` by ``v[ix]``, in place: the order it leaves among equal values."""
    n = len(ix)
    if n < 2:
        return

    def insertion(lo: int, hi: int) -> None:
        for i in range(lo + 1, hi):
            cur = ix[i]
            val = v[cur]
            if val < v[ix[lo]]:
                ix[lo + 1 : i + 1] = ix[lo:i]
                ix[lo] = cur
            else:
                j = i
                while val < v[ix[j - 1]]:
                    ix[j] = ix[j - 1]
                    j -= 1
                ix[j] = cur

    def heapsort(lo: int, hi: int) -> None:
        # std::partial_sort(lo, hi, hi): make_heap then sort_heap
        length = hi - lo

        def adjust(hole: int, ln: int, value: int) -> None:
            top = hole
            child = hole
            while child < (ln - 1) // 2:
                child = 2 * (child + 1)
                if v[ix[lo + child]] < v[ix[lo + child - 1]]:
                    child -= 1
                ix[lo + hole] = ix[lo + child]
                hole = child
            if (ln & 1) == 0 and child == (ln - 2) // 2:
                child = 2 * (child + 1)
                ix[lo + hole] = ix[lo + child - 1]
                hole = child - 1
            parent = (hole - 1) // 2
            while hole > top and v[ix[lo + parent]] < v[value]:
                ix[lo + hole] = ix[lo + parent]
                hole = parent
                parent = (hole - 1) // 2
            ix[lo + hole] = value

        if length >= 2:
            parent = (length - 2) // 2
            while True:
                adjust(parent, length, ix[lo + parent])
                if parent == 0:
                    break
                parent -= 1
        last = hi
        while last - lo > 1:
            last -= 1
            value = ix[last]
            ix[last] = ix[lo]
            adjust(0, last - lo, value)

    def loop(lo: int, hi: int, depth: int) -> None:
        while hi - lo > 16:
            if depth == 0:
                heapsort(lo, hi)
                return
            depth -= 1
            mid = lo + (hi - lo) // 2
            a, b, c = lo + 1, mid, hi - 1
            va, vb, vc = v[ix[a]], v[ix[b]], v[ix[c]]
            if va < vb:
                m = b if vb < vc else (c if va < vc else a)
            else:
                m = a if va < vc else (c if vb < vc else b)
            ix[lo], ix[m] = ix[m], ix[lo]
            pivot = v[ix[lo]]
            first, last = lo + 1, hi
            while True:
                while v[ix[first]] < pivot:
                    first += 1
                last -= 1
                while pivot < v[ix[last]]:
                    last -= 1
                if not first < last:
                    break
                ix[first], ix[last] = ix[last], ix[first]
                first += 1
            loop(first, hi, depth)
            hi = first

    loop(0, n, 2 * (n.bit_length() - 1))
    if n > 16:
        insertion(0, 16)
        for i in range(16, n):
            cur = ix[i]
            val = v[cur]
            j = i
            while val < v[ix[j - 1]]:
                ix[j] = ix[j - 1]
                j -= 1
            ix[j] = cur
    else:
        insertion(0, n)


# rows up to this length follow PyTorch's kernel exactly (a Python std::sort); longer
# rows take the last position of the value, which std::sort gives only below 17
_MODE_EXACT = 50_000


def _mode_index(row: np.ndarray) -> int:
    """Where PyTorch's kernel finds the most frequent value (the smallest among equals):
    it std::sorts (value, position) pairs by value and answers the position last in the
    run, which among equal values is the order std::sort leaves them in."""
    if 16 < row.size <= _MODE_EXACT and not (row.dtype.kind == "f" and np.isnan(row).any()):
        v, ix = row.tolist(), list(range(row.size))
        _std_sort(v, ix)
        vals = [v[i] for i in ix]
        best_i, best_n, run = 0, 0, 0
        for i in range(len(vals)):
            run += 1
            if i == len(vals) - 1 or vals[i] != vals[i + 1]:
                if run > best_n:
                    best_i, best_n = ix[i], run
                run = 0
        return best_i
    values, counts = np.unique(row, return_counts=True, equal_nan=False)
    best = values[np.argmax(counts)]  # np.unique sorts: the first max is the smallest
    if np.isnan(best):
        hits = np.flatnonzero(np.isnan(row))
    else:
        hits = np.flatnonzero(row == best)
    return int(hits[-1])


def _mode_samples(rng: np.random.Generator) -> list[Sample]:
    ties = np.array([[1.0, 2.0, 2.0, 3.0, 1.0, 5.0], [4.0, 4.0, 4.0, 0.0, 0.0, 0.0]])
    return [
        sample(ties, note="ties: the smallest, last index", gradcheck=False),
        sample(ties, 0, True, note="dim 0 keepdim", gradcheck=False),
        sample(S.rand(rng), note="0-d"),
        sample(Const(np.array([[3, 1, 3], [2, 2, 7]])), note="int"),
    ]


@register(
    complex_inputs="\"mode_cpu\" not implemented for '{type}'", samples=_mode_samples, results=2
)
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """(values, indices) of the most frequent value along ``dim`` (smallest on ties)."""
    a = as_tensor(input)
    d = normalize_dim(dim, a.ndim) if a.ndim else 0
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    if x.shape[d] == 0:
        raise IndexOutOfRangeError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    moved = np.moveaxis(x, d, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    pos = np.array([_mode_index(r) for r in rows], dtype=np.int64).reshape(*moved.shape[:-1], 1)
    idx = np.moveaxis(pos, -1, d)
    flat = np.take_along_axis(flat_index(x.shape), idx, axis=d)
    if not keepdim:
        flat, idx = flat.squeeze(d), idx.squeeze(d)
    if a.ndim == 0:
        flat, idx = flat.reshape(()), idx.reshape(())
    values, indices = ModeBackward0.apply(a, index=flat, extra=idx)
    return ModeResult(values, indices)


# -- histograms -------------------------------------------------------------------------


def _edges(lo: float, hi: float, bins: int, dtype: np.dtype) -> np.ndarray:
    """``bins + 1`` edges from ``lo`` to ``hi`` as torch.linspace computes them."""
    step = (hi - lo) / bins
    k = np.arange(bins + 1)
    half = bins // 2 + 1 if bins % 2 else (bins + 1) // 2
    out = np.where(k < half, lo + step * k, hi - step * (bins - k))
    return out.astype(dtype)


def _bin_positions(x: np.ndarray, edges: np.ndarray, search: bool | None) -> np.ndarray:
    """Each element's bin (-1 outside): linear interpolation, with a local correction
    against the edges when ``search`` (torch's LINEAR_INTERPOLATION_WITH_LOCAL_SEARCH)."""
    nb = edges.size - 1
    lo, hi = edges[0], edges[-1]
    if search is None:  # edges given: a binary search (torch's BINARY_SEARCH)
        found = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, max(nb - 1, 0))
        return np.where((x >= lo) & (x <= hi), found, -1)
    with np.errstate(all="ignore"):
        pos = (
            np.floor((x - lo) * nb / (hi - lo)).astype(np.int64)
            if hi > lo
            else np.zeros(x.shape, np.int64)
        )
    pos = np.clip(pos, 0, nb - 1)
    if search:
        pos = np.where(x < edges[pos], pos - 1, pos)
        pos = np.where((pos < nb - 1) & (x >= edges[np.minimum(pos + 1, nb)]), pos + 1, pos)
        pos = np.clip(pos, 0, nb - 1)
    inside = (x >= lo) & (x <= hi)
    return np.where(inside, pos, -1)


def _range_of(x: np.ndarray, rng: Any) -> tuple[float, float]:
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif x.size:
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 1.0
    if lo == hi:  # histogram's widening (histc widens by 1)
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _histc_samples(rng: np.random.Generator) -> list[Sample]:
    x = S.rand(rng, 4, 5)
    return [
        sample(Const(x), note="default bins, data range"),
        sample(Const(x), bins=7, min=-1, max=1, note="range drops outliers"),
        sample(Const(np.array([2.0, 2.0, 2.0])), bins=4, note="constant: min-1, max+1"),
    ]


def _bins_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    bins = kwargs.get("bins", args[1] if len(args) > 1 else 100)
    if isinstance(bins, int) and not isinstance(bins, bool):
        return bins + 1
    return None


@register(
    complex_inputs="\"aminmax_cpu\" not implemented for '{type}'",
    samples=_histc_samples,
    differentiable=False,
    estimate=_bins_estimate,
)
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Counts in ``bins`` equal bins over [min, max] (the data's range when equal)."""
    a = as_tensor(input)
    if a._data.dtype.kind != "f":
        raise BadArgumentsError(
            f"\"histogram_cpu\" not implemented for '{dtypes.torch_name(a._data.dtype)}'"
        )
    if bins <= 0:
        raise BadArgumentsError(
            "torch.histc(): bins must be > 0, but got " + str(bins) + " for dimension 0"
        )
    x = a._data.reshape(-1)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise BadArgumentsError("torch.histc: max must be larger than min")
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise BadArgumentsError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    edges = _edges(lo, hi, int(bins), x.dtype)
    pos = _bin_positions(x, edges, search=False)
    counts = np.bincount(pos[pos >= 0], minlength=int(bins)).astype(x.dtype)
    return Tensor._make(counts)


def _histogram_samples(rng: np.random.Generator) -> list[Sample]:
    x = S.rand(rng, 4, 5)
    return [
        sample(Const(x), 5, note="5 bins"),
        sample(Const(x), 4, range=(-1.0, 1.0), weight=Const(S.positive(rng, 4, 5)), note="weights"),
        sample(
            Const(x), Const(np.array([-2.0, -0.5, 0.0, 2.0])), density=True, note="edges, density"
        ),
    ]


def _histogram(
    x: np.ndarray, edges: np.ndarray, w: np.ndarray | None, search: bool | None
) -> np.ndarray:
    pos = _bin_positions(x, edges, search)
    keep = pos >= 0
    nb = edges.size - 1
    weights = None if w is None else w[keep].astype(np.float64)
    return np.bincount(pos[keep], weights=weights, minlength=nb)[:nb]


def _edges_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The bins (a count per dimension, or edges) and the input's size."""
    x: Any = args[0] if args else kwargs.get("input")
    bins = kwargs.get("bins", args[1] if len(args) > 1 else 100)
    size = math.prod(x.shape) if hasattr(x, "shape") else 0
    counts = bins if isinstance(bins, list | tuple) else [bins]
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in counts):
        return None if not all(hasattr(b, "shape") for b in counts) else size * 4
    return math.prod(max(b, 1) + 1 for b in counts) + sum(counts) + size * 4


@register(
    complex_inputs="\"histogramdd\" not implemented for '{type}'",
    samples=_histogram_samples,
    differentiable=False,
    results=2,
    method=False,
    estimate=_edges_estimate,
)
def histogram(
    input: Tensor,
    bins: Any = 100,
    *,
    range: Any = None,  # noqa: A002
    weight: Tensor | None = None,
    density: bool = False,
) -> Any:
    """(hist, bin_edges): counts (or weights) per bin; ``bins`` a count or the edges."""
    a = as_tensor(input)
    x = a._data.reshape(-1)
    w = None if weight is None else as_tensor(weight)._data.reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins._data.astype(x.dtype)
        search: bool | None = None
        if edges.ndim != 1 or edges.size < 1:
            raise BadArgumentsError("torch.histogram(): bins tensor should have one dimension")
        if (np.diff(edges) < 0).any():
            raise BadArgumentsError("torch.histogram(): bin edges must be non-decreasing")
    else:
        if int(bins) <= 0:
            raise BadArgumentsError("torch.histogram(): bins must be > 0")
        lo, hi = _range_of(x, range)
        edges = _edges(lo, hi, int(bins), x.dtype)
        search = True
    counts = _histogram(x, edges, w, search)
    if density:
        total = counts.sum()
        with np.errstate(all="ignore"):
            counts = counts / total / np.diff(edges.astype(np.float64))
    return HistogramResult(Tensor._make(counts.astype(x.dtype)), Tensor._make(edges))


def _histogramdd_samples(rng: np.random.Generator) -> list[Sample]:
    x = S.rand(rng, 6, 2)
    return [
        sample(Const(x), [3, 4], note="bins per dim"),
        sample(Const(x), 3, weight=Const(S.positive(rng, 6)), density=True, note="weights"),
    ]


def _histogramdd_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``histogramdd``'s count of bins is one per coordinate: ``bins=2`` of 40 coordinates
    is 2⁴⁰ bins."""
    x: Any = args[0] if args else kwargs.get("input")
    bins = kwargs.get("bins", args[1] if len(args) > 1 else 10)
    shape = tuple(getattr(x, "shape", ()))
    if isinstance(bins, int) and not isinstance(bins, bool) and shape:
        bins = [bins] * int(shape[-1])
    return _edges_estimate((x, bins), {})


@register(
    complex_inputs="\"histogramdd\" not implemented for '{type}'",
    samples=_histogramdd_samples,
    differentiable=False,
    method=False,
    estimate=_histogramdd_estimate,
)
def histogramdd(
    input: Tensor,
    bins: Any = 10,
    *,
    range: Any = None,  # noqa: A002
    weight: Tensor | None = None,
    density: bool = False,
) -> Any:
    """(hist, bin_edges) over the innermost dimension's ``D`` coordinates."""
    a = as_tensor(input)
    if a.ndim < 1:
        raise BadArgumentsError("torch.histogramdd: input tensor should have at least 1 dimension")
    dd = a._data.shape[-1]
    x = a._data.reshape(-1, dd)
    if isinstance(bins, int | np.integer) and not isinstance(bins, bool):
        bins = [int(bins)] * dd
    if len(bins) != dd:
        raise BadArgumentsError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the input."
        )
    edges_list: list[np.ndarray] = []
    for k, b in enumerate(bins):
        if isinstance(b, Tensor):
            edges_list.append(b._data.astype(x.dtype))
        else:
            r = None if range is None else range[2 * k : 2 * k + 2]
            lo, hi = _range_of(x[:, k], r)
            edges_list.append(_edges(lo, hi, int(b), x.dtype))
    given = [isinstance(b, Tensor) for b in bins]
    pos = [_bin_positions(x[:, k], e, None if given[k] else True) for k, e in enumerate(edges_list)]
    keep = np.all([p >= 0 for p in pos], axis=0) if dd else np.ones(x.shape[0], bool)
    shape = tuple(e.size - 1 for e in edges_list)
    w = None if weight is None else as_tensor(weight)._data.reshape(-1)
    flat = np.ravel_multi_index(tuple(p[keep] for p in pos), shape) if dd else np.zeros(0, np.int64)
    hist = (
        np.bincount(
            flat,
            weights=None if w is None else w[keep].astype(np.float64),
            minlength=math.prod(shape),
        )
        .reshape(shape)
        .astype(np.float64)
    )
    if density:
        total = hist.sum()
        with np.errstate(all="ignore"):
            hist = hist / total
            for k, e in enumerate(edges_list):
                widths = np.diff(e.astype(np.float64))
                hist = hist / widths.reshape([-1 if j == k else 1 for j in builtins_range(dd)])
    return HistogramddResult(
        Tensor._make(hist.astype(x.dtype)), [Tensor._make(e) for e in edges_list]
    )


builtins_range = range


# -- covariance and correlation ---------------------------------------------------------


def _cov_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 5), note="rows are variables"),
        sample(r(rng, 5), note="one variable"),
        sample(r(rng, 2, 4), correction=0, note="population"),
        sample(
            r(rng, 2, 4),
            fweights=Const(np.array([1, 2, 1, 3])),
            aweights=Const(S.positive(rng, 4)),
            note="weights",
        ),
    ]


def _check_weights(w: Any, name: str, n: int, integral: bool) -> Tensor:
    t = as_tensor(w)
    if t.ndim > 1:
        raise BadArgumentsError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
            f"{t.ndim} dimensions"
        )
    if integral and t._data.dtype.kind not in "iub":
        raise BadArgumentsError(
            f"cov(): expected {name} to have integral dtype but got {name} with "
            f"{dtypes.torch_name(t._data.dtype)} dtype"
        )
    if not integral and t._data.dtype.kind != "f":
        raise BadArgumentsError(
            f"cov(): expected {name} to have floating point dtype but got {name} with "
            f"{dtypes.torch_name(t._data.dtype)} dtype"
        )
    if t._data.size != n:
        raise BadArgumentsError(
            f"cov(): expected {name} to have the same numel as there are observations in "
            f"the input but got {t._data.size} != {n}"
        )
    if (t._data < 0).any():
        raise BadArgumentsError(
            f"cov(): {name} cannot be negative" if integral else f"cov(): {name} cannot be negative"
        )
    return t


@register(complex_inputs="cov is not implemented for '{type}' in this engine", samples=_cov_samples)
def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in columns)."""
    a = as_tensor(input)
    _cov(a, correction, fweights, aweights)  # errors before recording
    return composite(
        "SqueezeBackward0",
        _cov_body,
        a,
        fweights,
        aweights,
        correction=correction,
        # PyTorch's decomposition keeps the centred input, not the input (unless a weight
        # needs a gradient): writing the input in place later leaves the backward valid
        saves=lambda need: (need[2], False, need[2]),
    )


def _cov_body(a: Tensor, fweights: Any, aweights: Any, *, correction: int) -> Tensor:
    return _cov(a, correction, fweights, aweights)


def _cov(a: Tensor, correction: int, fweights: Tensor | None, aweights: Tensor | None) -> Tensor:
    if a.ndim > 2:
        raise BadArgumentsError(
            f"cov(): expected input to have two or fewer dimensions but got an input with "
            f"{a.ndim} dimensions"
        )
    x = a if a.ndim == 2 else _op("reshape")(a, (1, -1))
    n = x.shape[1]
    w: Tensor | None = None
    if fweights is not None:
        w = _check_weights(fweights, "fweights", n, integral=True)
    aw: Tensor | None = None
    if aweights is not None:
        aw = _check_weights(aweights, "aweights", n, integral=False)
        w = aw if w is None else w * aw
    if w is None:
        w_sum: Any = Tensor._make(np.asarray(n, np.int64))
        avg = _op("sum")(x, 1) / w_sum
    else:
        w_sum = _op("sum")(w)
        avg = _op("sum")(x * w, 1) / w_sum
    if w is not None and correction != 0 and aw is not None:
        norm = w_sum - correction * _op("sum")(w * aw) / w_sum
    else:
        norm = w_sum - correction
    if bool((norm <= 0)._data):
        norm = _op("zeros_like")(norm)
    xc = x - _op("unsqueeze")(avg, 1)
    c = _op("mm")(xc, _op("t")(xc if w is None else xc * w))
    return _op("squeeze")(_op("true_divide")(c, norm))


@register(samples=lambda rng: _cov_samples(rng)[:2])
def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of ``input``'s rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    sd = _op("sqrt")(_op("diagonal")(c))
    c = c / _op("reshape")(sd, (-1, 1))
    c = c / _op("reshape")(sd, (1, -1))
    return _op("clip")(c, -1, 1)


# -- renorm -----------------------------------------------------------------------------


def _renorm_samples(rng: np.random.Generator) -> list[Sample]:
    x = S.rand(rng, 3, 4)
    return [
        sample(x, 2, 0, 1.0, note="rows above 1 scaled"),
        sample(S.rand(rng, 2, 3, 2), 1, 1, 0.5, note="L1 over dim 1"),
        sample(x, 2, 1, 100.0, note="nothing scaled"),
    ]


@register(samples=_renorm_samples, inplace=True)
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to it."""
    a = as_tensor(input)
    if a.ndim < 2:
        raise BadArgumentsError(
            f"renorm: input needs at least 2 dimensions, got {a.ndim} dimensions"
        )
    if not float(p) > 0:
        raise BadArgumentsError("renorm: non-positive-norm not supported")
    if float(maxnorm) < 0:
        raise BadArgumentsError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    return composite("RenormBackward0", _renorm, a, p=p, dim=dim, maxnorm=maxnorm)


def _renorm(a: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    d = normalize_dim(dim, a.ndim)
    others = tuple(k for k in builtins_range(a.ndim) if k != d)
    norm = _op("vector_norm")(a, p, others, True)
    factor = _op("where")(norm > maxnorm, maxnorm / (norm + 1e-7), _const(np.ones((), a.dtype)))
    return a * factor


# -- unique_consecutive, combinations ---------------------------------------------------


def _unique_consecutive_samples(rng: np.random.Generator) -> list[Sample]:
    x = np.array([1.0, 1.0, 2.0, 2.0, 3.0, 1.0, 1.0, 2.0])
    m = np.array([[1, 1, 2, 2], [1, 1, 3, 3], [1, 1, 3, 3]])
    return [
        sample(Const(x), note="flat"),
        sample(Const(x), return_inverse=True, return_counts=True, note="inverse, counts"),
        sample(Const(m), dim=0, return_counts=True, note="rows"),
        sample(Const(m), dim=1, return_inverse=True, note="columns"),
    ]


@register(
    complex_inputs="\"unique\" not implemented for '{type}'",
    samples=_unique_consecutive_samples,
    differentiable=False,
    results=Results("flags", arg="return_inverse,return_counts"),
)
def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """The input with runs of equal consecutive elements (or slices along ``dim``) collapsed."""
    a = as_tensor(input)
    if dim is None:
        x = a._data.reshape(-1)
        change = np.concatenate([[True], x[1:] != x[:-1]]) if x.size else np.zeros(0, bool)
        out = x[change]
        inv_shape = a._data.shape
    else:
        d = normalize_dim(dim, max(a.ndim, 1))
        xx = np.moveaxis(a._data.reshape(1) if a.ndim == 0 else a._data, d, 0)
        rows = xx.reshape(xx.shape[0], math.prod(xx.shape[1:]))
        if rows.shape[0]:
            diff = (rows[1:] != rows[:-1]).any(axis=1)
            change = np.concatenate([[True], diff])
        else:
            change = np.zeros(0, bool)
        if rows.shape[0] and rows.shape[1] == 0:  # empty slices are all equal
            change = np.concatenate([[True], np.zeros(rows.shape[0] - 1, bool)])
        out = np.moveaxis(xx[change], 0, d)
        inv_shape = (xx.shape[0],)
    group = np.cumsum(change) - 1
    results: list[Tensor] = [Tensor._make(np.ascontiguousarray(out))]
    if return_inverse:
        results.append(Tensor._make(group.astype(np.int64).reshape(inv_shape)))
    if return_counts:
        results.append(
            Tensor._make(np.bincount(group, minlength=int(change.sum())).astype(np.int64))
        )
    return results[0] if len(results) == 1 else tuple(results)


def _combinations_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(S.rand(rng, 4), note="pairs"),
        sample(S.rand(rng, 4), r=3, note="triples"),
        sample(S.rand(rng, 3), with_replacement=True, note="with replacement"),
        sample(S.rand(rng, 2), r=3, note="r beyond n: empty"),
    ]


def _combinations_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x: Any = args[0] if args else kwargs.get("input")
    r = kwargs.get("r", args[1] if len(args) > 1 else 2)
    if not hasattr(x, "shape") or len(x.shape) != 1 or not isinstance(r, int):
        return None
    n = x.shape[0]
    if r < 0:
        return None
    return math.comb(n + r, r) * max(r, 1)


@register(samples=_combinations_samples, method=False, estimate=_combinations_estimate)
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of a 1-D tensor's elements, one per row."""
    a = as_tensor(input)
    if a.ndim != 1:
        raise BadArgumentsError(f"Expect a 1D vector, but got shape {list(a.shape)}")
    if r < 0:
        raise BadArgumentsError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return Tensor._make(np.zeros(0, a._data.dtype)) if not a.requires_grad else a[:0]
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(make(builtins_range(a.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    if idx.shape[0] == 0:
        idx = np.zeros((0, r), np.int64)
    return CombinationsGather.apply(a, index=idx)


# -- gradient ---------------------------------------------------------------------------


def _slice(x: Tensor, d: int, start: int | None, stop: int | None) -> Tensor:
    key = [slice(None)] * x.ndim
    key[d] = slice(start, stop)
    return x[tuple(key)]


def _uniform_gradient(x: Tensor, d: int, h: Any, edge_order: int) -> Tensor:
    center = (_slice(x, d, 2, None) - _slice(x, d, 0, -2)) / (h * 2)
    if edge_order == 1:
        first = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / h
        last = (_slice(x, d, -1, None) - _slice(x, d, -2, -1)) / h
    else:
        first = (_slice(x, d, 0, 1) * -1.5 + _slice(x, d, 1, 2) * 2 - _slice(x, d, 2, 3) * 0.5) / h
        last = (
            _slice(x, d, -3, -2) * 0.5 - _slice(x, d, -2, -1) * 2 + _slice(x, d, -1, None) * 1.5
        ) / h
    return _op("cat")([first, center, last], d)


def _coordinate_gradient(x: Tensor, d: int, coords: Tensor, edge_order: int) -> Tensor:
    dx = _op("diff")(coords)
    shape = [1] * x.ndim
    shape[d] = -1
    dx1, dx2 = dx[:-1], dx[1:]
    a = _op("reshape")(-dx2 / (dx1 * (dx1 + dx2)), shape)
    b = _op("reshape")((dx2 - dx1) / (dx1 * dx2), shape)
    c = _op("reshape")(dx1 / (dx2 * (dx1 + dx2)), shape)
    center = a * _slice(x, d, 0, -2) + b * _slice(x, d, 1, -1) + c * _slice(x, d, 2, None)
    if edge_order == 1:
        first = (_slice(x, d, 1, 2) - _slice(x, d, 0, 1)) / dx[0]
        last = (_slice(x, d, -1, None) - _slice(x, d, -2, -1)) / dx[-1]
    else:
        h0, h1, g1, g2 = dx[0], dx[1], dx[-1], dx[-2]
        first = (
            -(h0 * 2.0 + h1) / (h0 * (h0 + h1)) * _slice(x, d, 0, 1)
            + (h0 + h1) / (h0 * h1) * _slice(x, d, 1, 2)
            + (-h0) / (h1 * (h0 + h1)) * _slice(x, d, 2, 3)
        )
        last = (
            g1 / (g2 * (g1 + g2)) * _slice(x, d, -3, -2)
            - (g1 + g2) / (g1 * g2) * _slice(x, d, -2, -1)
            + (g1 * 2 + g2) / (g1 * (g1 + g2)) * _slice(x, d, -1, None)
        )
    return _op("cat")([first, center, last], d)


def _gradient_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 5), note="unit spacing"),
        sample(r(rng, 5, 4), spacing=2.0, edge_order=2, note="scalar spacing, order 2"),
        sample(r(rng, 4, 4, 3), spacing=[2.0, 1.0], dim=(0, 1), note="per dim"),
        sample(
            r(rng, 3, 4),
            spacing=[Const(np.array([0.0, 1.0, 3.0])), Const(np.array([0.0, 0.5, 1.5, 3.5]))],
            edge_order=2,
            note="coordinates",
        ),
    ]


def _spacing_message(given: int, ndim: int, dims: Any) -> str:
    if dims is None:
        return (
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {ndim}', since dim argument was not given, but got a "
            f"list of length {given}"
        )
    return (
        "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
        f"arguments to have the same length, but got a spacing argument of length {given} and "
        f"a dim argument of length {len(dims)}."
    )


@register(samples=_gradient_samples, method=False, results=Results("dims", arg="dim"))
def gradient(
    input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1
) -> tuple[Tensor, ...]:
    """The derivative estimated by central differences (one-sided or second-order at the
    ends), one tensor per dimension in ``dim``; ``spacing`` a step or coordinates."""
    a = as_tensor(input)
    if edge_order not in (1, 2):
        raise BadArgumentsError("torch.gradient only supports edge_order=1 and edge_order=2.")
    given_dims: tuple[int, ...] | None = None
    if dim is None:
        dims: tuple[int, ...] = tuple(builtins_range(a.ndim))
    elif isinstance(dim, int):
        dims = (normalize_dim(dim, a.ndim),)
        given_dims = dims
    else:
        dims = normalize_dims(tuple(dim), a.ndim)
        given_dims = dims
    if spacing is None:
        spacing = 1
    if isinstance(spacing, list | tuple):
        if len(spacing) != len(dims):
            raise BadArgumentsError(_spacing_message(len(spacing), a.ndim, given_dims))
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    for d in dims:
        if a.shape[d] < edge_order + 1:
            raise BadArgumentsError(
                "torch.gradient expected each dimension size to be at least edge_order+1"
            )
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, Tensor) and h.ndim == 1:
            out.append(_coordinate_gradient(a, d, h, edge_order))
        else:
            step = h.item() if isinstance(h, Tensor) else h
            out.append(_uniform_gradient(a, d, step, edge_order))
    return tuple(out)
