"""Ordering ops: sort, argsort, topk, kthvalue and median.

Each value-and-index op selects input elements, so it is a ``Gather`` at the
selected positions and its gradient goes back to exactly those positions (as
PyTorch's ``value_selecting_reduction_backward``); the global ``median`` splits
its gradient evenly between ties, as PyTorch's ``evenly_distribute_backward``.

Sorting is stable (equal elements keep their order; NaN sorts as the largest),
which is what PyTorch's CPU sort does. ``topk``, ``kthvalue`` and ``median``
with ``dim`` take the same stable order; on ties PyTorch's selection
algorithms may return another of the equal elements' indices (the values agree).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .. import dtypes
from ..dual import FROM_BACKWARD
from ..errors import BadArgumentsError, IndexOutOfRangeError
from ..function import Function
from ..registry import Results, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import KernelDtypeError
from ._util import UNSET, as_tensor, normalize_dim, public_defaults
from .rearrange import flat_index, gather_flat
from .reduction import _evenly

SortResult = namedtuple("SortResult", ["values", "indices"])
TopkResult = namedtuple("TopkResult", ["values", "indices"])
KthvalueResult = namedtuple("KthvalueResult", ["values", "indices"])
MedianResult = namedtuple("MedianResult", ["values", "indices"])

SortBackward0 = gather_flat("SortBackward0", saves=True)
SortBackward1 = gather_flat("SortBackward1", saves=True)  # sort.stable: ``stable`` given
TopkBackward0 = gather_flat("TopkBackward0", saves=True)
KthvalueBackward0 = gather_flat("KthvalueBackward0", saves=True)
MedianBackward1 = gather_flat("MedianBackward1", saves=True)


def stable_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices sorting ``x`` along ``axis``, stable, NaN largest (PyTorch's order)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # reversing a stable ascending sort of the reversed input keeps equal elements in order
    n = x.shape[axis]
    rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1 - np.flip(rev, axis)).astype(np.int64)


def _select(
    fn: type[Function], result: Any, a: Tensor, d: int, idx: np.ndarray, keepdim: bool = True
) -> Any:
    """Values of ``a`` at ``idx`` along ``d`` (idx keeps the dim), with the indices."""
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    flat = np.take_along_axis(flat_index(x.shape), idx, axis=d)
    idx = idx.astype(np.int64, copy=False)
    if not keepdim:
        flat, idx = flat.squeeze(d), idx.squeeze(d)
    if a.ndim == 0:
        flat, idx = flat.reshape(()), idx.reshape(())
    values, indices = fn.apply(a, index=flat, extra=idx)
    return result(values, indices)


def _dim(a: Tensor, dim: int) -> int:
    return normalize_dim(dim, a.ndim) if a.ndim else 0


def _ordering_samples(rng: np.random.Generator) -> list[Any]:
    ties = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0, 0.0, 1.0]])
    return [
        sample(S.rand(rng, 2, 4)),
        sample(S.rand(rng, 3, 2), 0, note="dim 0"),
        sample(S.rand(rng, 2, 4), descending=True, note="descending"),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 0, 3), note="empty"),
        sample(ties, 1, note="ties stay in order", gradcheck=False),
        sample(ties, 1, True, note="ties, descending", gradcheck=False),
        sample(np.array([1.0, np.nan, 0.0, np.nan, 2.0]), note="NaN last", gradcheck=False),
        sample(
            np.array([1.0, np.nan, 0.0, np.nan, 2.0]),
            descending=True,
            note="NaN first when descending",
            gradcheck=False,
        ),
    ]


@register(
    complex_inputs=(RuntimeError, " Sort does not support complex dtypes on CPU"),
    samples=_ordering_samples,
    results=2,
)
@public_defaults(stable=False)
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = UNSET) -> Any:
    """(values, indices) sorted along ``dim``; stable, NaN as the largest value."""
    a = as_tensor(input)
    d = _dim(a, dim)
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    fn = SortBackward0 if stable is UNSET else SortBackward1
    return _select(fn, SortResult, a, d, stable_order(x, d, bool(descending)))


@register(
    complex_inputs=(RuntimeError, " Sort does not support complex dtypes on CPU"),
    samples=_ordering_samples,
    differentiable=False,
)
def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``)."""
    a = as_tensor(input)
    d = _dim(a, dim)
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    return Tensor._make(stable_order(x, d, bool(descending)).reshape(a._data.shape))


def _check_k(k: int, size: int, message: str) -> None:
    if not 0 <= k <= size:
        raise IndexOutOfRangeError(message)


def _topk_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 5), 2),
        sample(S.rand(rng, 4, 3), 3, 0, note="dim 0, all"),
        sample(S.rand(rng, 2, 5), 2, largest=False, note="smallest"),
        sample(S.rand(rng, 2, 5), 0, note="k = 0"),
        sample(S.rand(rng), 1, note="0-d"),
    ]


@register(
    complex_inputs=(RuntimeError, " topk does not support complex dtypes on CPU"),
    samples=_topk_samples,
    results=2,
)
def topk(
    input: Tensor,
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,  # noqa: A002
) -> Any:
    """(values, indices) of the ``k`` largest (or smallest) elements along ``dim``, in order.

    ``sorted=False`` leaves the order unspecified in PyTorch; the engine sorts anyway."""
    a = as_tensor(input)
    d = _dim(a, dim)
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    if a.ndim == 0 and int(k) == 0:
        k = 1  # torch: a 0-d input with k=0 gives the element itself (and index 0)
    _check_k(int(k), x.shape[d], "selected index k out of range")
    order = stable_order(x, d, bool(largest))
    idx = np.take(order, np.arange(int(k)), axis=d)
    return _select(TopkBackward0, TopkResult, a, d, idx)


def _kth_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 5), 2),
        sample(S.rand(rng, 4, 3), 4, 0, note="dim 0, largest"),
        sample(S.rand(rng, 2, 5), 1, -1, True, note="keepdim"),
        sample(S.rand(rng), 1, note="0-d"),
    ]


@register(
    complex_inputs="\"kthvalue_cpu\" not implemented for '{type}'",
    samples=_kth_samples,
    results=2,
    out_overlap="none",
)
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """(values, indices) of the ``k``-th smallest element (from 1) along ``dim``."""
    a = as_tensor(input)
    d = _dim(a, dim)
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    size = x.shape[d]
    if size == 0 and a.ndim:
        raise IndexOutOfRangeError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= int(k) <= size:
        raise IndexOutOfRangeError(f"kthvalue(): selected number k out of range for dimension {d}")
    order = stable_order(x, d, False)
    idx = np.take(order, [int(k) - 1], axis=d)
    _torch_ties(x, d, int(k) - 1, idx)
    return _select(KthvalueBackward0, KthvalueResult, a, d, idx, bool(keepdim))


def _torch_ties(x: np.ndarray, d: int, k: int, idx: np.ndarray) -> None:
    """Where the k-th value is tied, the index PyTorch's CPU quickselect picks (written
    into ``idx``, shape ``x``'s with ``dim`` 1); rows without a tie keep theirs."""
    rows = np.moveaxis(x, d, -1).reshape(-1, x.shape[d])
    picked = np.moveaxis(idx, d, -1).reshape(-1, 1).copy()
    value = np.take_along_axis(rows, picked, -1)
    same = rows == value
    if x.dtype.kind == "f":
        same |= np.isnan(rows) & np.isnan(value)
    tied = np.flatnonzero(same.sum(-1) > 1)
    for r in tied:
        picked[r, 0] = _quickselect_index(rows[r], k)
    if tied.size:
        moved = np.moveaxis(idx, d, -1)
        moved[...] = picked.reshape(moved.shape)


def _gt_or_nan(x: Any, y: Any) -> bool:
    return bool((x != x and y == y) or x > y)


def _quickselect_index(row: np.ndarray, k: int) -> int:
    """The index aten's ``quick_select_template`` (SortingUtils.h) leaves at ``k``:
    median-of-three Hoare partitioning with NaN as the largest."""
    arr, ind = row.tolist(), list(range(len(row)))

    def swap(i: int, j: int) -> None:
        arr[i], arr[j] = arr[j], arr[i]
        ind[i], ind[j] = ind[j], ind[i]

    lo, hi = 0, len(arr) - 1
    while hi > lo:
        if hi == lo + 1:
            if _gt_or_nan(arr[lo], arr[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        if _gt_or_nan(arr[lo + 1], arr[hi]):
            swap(lo + 1, hi)
        if _gt_or_nan(arr[lo], arr[hi]):
            swap(lo, hi)
        if _gt_or_nan(arr[lo + 1], arr[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, arr[lo]
        while True:
            i += 1
            while _gt_or_nan(pivot, arr[i]):
                i += 1
            j -= 1
            while _gt_or_nan(arr[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return ind[k]


class MedianBackward0(Function):
    """The global median: ties share the gradient evenly (PyTorch)."""

    name = "MedianBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.save_result()
        x = a._data.reshape(-1)
        if x.size == 0:
            return np.asarray(np.nan, a._data.dtype)
        order = np.argsort(x, kind="stable")
        return np.asarray(x[order[(x.size - 1) // 2]] if not np.isnan(x).any() else np.nan, x.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _evenly(g, a, ctx.result)


def _median_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), note="global, odd"),
        sample(S.rand(rng, 2, 2), note="global, even: the lower"),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 2, 5), 1, note="dim"),
        sample(S.rand(rng, 4, 3), 0, True, note="dim 0 keepdim, even"),
        sample(S.rand(rng), 0, note="0-d dim"),
        sample(np.array([2.0, 1.0, 2.0, 3.0, 2.0]), note="global ties split", gradcheck=False),
        sample(np.array([[1.0, np.nan, 0.0]]), note="global NaN", gradcheck=False),
    ]


@register(
    complex_inputs="\"median_cpu\" not implemented for '{type}'",
    samples=_median_samples,
    results=Results("given", arg="dim"),
)
def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median; with ``dim``, (values, indices) along it."""
    a = as_tensor(input)
    if a._data.dtype == dtypes.bool_:
        kernel = "median_cpu" if dim is None else "median_out"
        raise KernelDtypeError(f"\"{kernel}\" not implemented for 'Bool'")
    if dim is None:
        if not dtypes.is_floating(a._data.dtype):
            x = np.sort(a._data.reshape(-1))
            if x.size == 0:
                raise BadArgumentsError("median() input tensor cannot be empty")
            return Tensor._make(np.asarray(x[(x.size - 1) // 2]))
        return MedianBackward0.apply(a)
    d = _dim(a, dim)
    x = a._data.reshape(1) if a.ndim == 0 else a._data
    size = x.shape[d]
    if size == 0:
        raise IndexOutOfRangeError(f"median(): Expected reduction dim {d} to have non-zero size.")
    order = stable_order(x, d, False)
    idx = np.take(order, [(size - 1) // 2], axis=d)
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    has_nan = nan.any(axis=d, keepdims=True)
    if has_nan.any():  # PyTorch: the median of a slice with NaN is its first NaN
        idx = np.where(has_nan, np.argmax(nan, axis=d, keepdims=True), idx)
    return _select(MedianBackward1, MedianResult, a, d, idx, bool(keepdim))
