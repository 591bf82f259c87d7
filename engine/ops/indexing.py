"""Indexing: ``x[...]`` with PyTorch's semantics, ``gather``, ``index_select`` and
``masked_fill``.

``getitem`` replays PyTorch's own sequence: basic indices (ints, slices, None,
Ellipsis) become one view op each, left to right (``SelectBackward0``,
``SliceBackward0``, ``UnsqueezeBackward0``); the advanced indices (integer
arrays, boolean masks, Python bools) are gathered into one ``IndexBackward0``
at the end. So the recorded graph, and the ``grad_fn`` of the result, are the
ones PyTorch records. Each rule's gradient is the op's adjoint (an
``...Backward`` Function that scatters into zeros, accumulating repeated
indices), whose own gradient is the original op again: higher orders work.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..dual import LINEAR
from ..errors import (
    ArgumentValueError,
    BadArgumentsError,
    DtypeMismatchError,
    IndexOutOfRangeError,
    ShapeMismatchError,
)
from ..function import Function
from ..primitives import (
    SelectBackward0,
    SliceBackward0,
    slice_key,
)
from ..registry import Const, register, sample
from ..tensor import Tensor, _snapshot
from ..views import dual_write, inplace
from . import samples as S
from ._util import as_tensor, broadcast_shape, normalize_dim
from .arithmetic import where
from .reduction import sum as sum_
from .shape import UnsqueezeBackward0, expand
from .shape import view as view_op

_FULL = slice(None)


class AliasBackward0(Function):
    """``x[...]``: a new tensor viewing the same memory."""

    name = "AliasBackward0"
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return a._data.view()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return g


class IndexBackward0(Function):
    """Advanced indexing; ``index`` is a NumPy index of full slices and integer arrays."""

    name = "IndexBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, index: tuple[Any, ...]) -> np.ndarray:
        ctx.save_for_backward(index)  # PyTorch saves the indices: freed after backward
        ctx.in_shape = a._data.shape
        return a._data[index]

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (index,) = ctx.saved_tensors
        return IndexPutImplBackward0.apply(g, shape=ctx.in_shape, index=index)


def _scatter_add(shape: tuple[int, ...], index: tuple[Any, ...], values: np.ndarray) -> np.ndarray:
    """Zeros of ``shape`` with ``values`` added at ``index``; repeated positions accumulate."""
    out = np.zeros(shape, values.dtype)
    np.add.at(out, index, values)
    return out


class IndexPutImplBackward0(Function):
    """The adjoint of advanced indexing: ``zeros.index_put_(index, g, accumulate=True)``."""

    name = "IndexPutImplBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, g: Tensor, *, shape: tuple[int, ...], index: tuple[Any, ...]
    ) -> np.ndarray:
        ctx.save_for_backward(index)
        return _scatter_add(shape, index, g._data)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        (index,) = ctx.saved_tensors
        return IndexBackward0.apply(gg, index=index)


# -- x[index] -----------------------------------------------------------------

_INVALID_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
    "indices (got {})"
)


def _is_int(obj: Any) -> bool:
    return isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_))


def _as_tuple(index: Any) -> tuple[Any, ...] | None:
    """PyTorch's (and NumPy's old) rule: a short list holding a slice, None, Ellipsis, a
    sequence or a tensor is read as a tuple of indices; other lists are one index array."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32:
        for item in index:
            if item is None or item is Ellipsis or isinstance(item, (slice, list, tuple, Tensor)):
                return tuple(index)
    return None


def _index_array(obj: Any) -> np.ndarray:
    """A tensor, list or array used as an index: int64 or bool, as PyTorch requires."""
    data = obj._data if isinstance(obj, Tensor) else np.asarray(obj)
    if isinstance(obj, (list, tuple)) and data.size == 0:
        data = data.astype(np.int64)
    if data.dtype.kind in "iu":
        return data.astype(np.int64, copy=False)
    if data.dtype.kind == "b":
        return data
    raise BadArgumentsError("tensors used as indices must be long, int, byte or bool tensors")


def _specified_dims(items: tuple[Any, ...]) -> int:
    count = 0
    for obj in items:
        if isinstance(obj, Tensor):
            count += obj.ndim if obj.dtype == dtypes.bool_ else 1
        elif obj is not None and obj is not Ellipsis and not isinstance(obj, (bool, np.bool_)):
            count += 1
    return count


def _select(t: Tensor, dim: int, index: Any, real_dim: int) -> Tensor:
    if t._data.ndim == 0:
        raise IndexOutOfRangeError(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
            "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
        )
    size = t._data.shape[dim]
    i = int(index)
    if not -size <= i < size:
        raise IndexOutOfRangeError(
            f"index {i} is out of bounds for dimension {real_dim} with size {size}"
        )
    return SelectBackward0.apply(t, dim=dim, index=i % size)


def _slice_bound(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return operator.index(value)
    except TypeError:
        raise BadArgumentsError(
            "slice indices must be integers or None or have an __index__ method"
        ) from None


def _slice(t: Tensor, dim: int, s: slice, skip_full: bool) -> Tensor:
    if t._data.ndim == 0:
        raise IndexOutOfRangeError("slice() cannot be applied to a 0-dim tensor.")
    start, stop, step = _slice_bound(s.start), _slice_bound(s.stop), _slice_bound(s.step)
    if step == 0:
        raise BadArgumentsError("slice step cannot be zero")
    if step is not None and step < 0:
        raise ArgumentValueError("step must be greater than zero")  # PyTorch: ValueError
    size = t._data.shape[dim]
    if skip_full and not start and (stop is None or stop >= size) and step in (None, 1):
        return t  # PyTorch skips a full slice inside a tuple index
    lo, hi, st = slice(start, stop, step).indices(size)
    return SliceBackward0.apply(t, key=slice_key(dim, lo, max(hi, lo), st))


def _bool_index(value: bool) -> np.ndarray:
    return np.zeros(1 if value else 0, np.int64)


def _advanced(t: Tensor, recorded: dict[int, np.ndarray]) -> Tensor:
    """One ``IndexBackward0`` for the recorded index arrays (dim -> array)."""
    return IndexBackward0.apply(t, index=_advanced_key(t, recorded))


def _advanced_key(t: Tensor, recorded: dict[int, np.ndarray]) -> tuple[Any, ...]:
    """The NumPy key of the recorded index arrays (dim -> array), with PyTorch's checks."""
    shape = t._data.shape
    key: list[Any] = [_FULL] * (max(recorded) + 1)
    arrays: list[tuple[np.ndarray, int]] = []  # integer arrays with the dim they index
    for dim, arr in recorded.items():
        if arr.dtype == np.bool_:
            for j, m in enumerate(arr.shape):
                if dim + j >= len(shape) or shape[dim + j] != m:
                    raise ShapeMismatchError(
                        f"The shape of the mask {list(arr.shape)} at index {j} does not match "
                        f"the shape of the indexed tensor {list(shape)} at index {dim + j}"
                    )
            parts = np.nonzero(arr)
            key[dim : dim + arr.ndim] = parts
            arrays.extend((p, dim + j) for j, p in enumerate(parts))
        else:
            key[dim] = arr
            arrays.append((arr, dim))
    try:
        np.broadcast_shapes(*(a.shape for a, _ in arrays))
    except ValueError:
        raise ShapeMismatchError(
            "shape mismatch: indexing tensors could not be broadcast together with shapes "
            + ", ".join(str(list(a.shape)) for a, _ in arrays)
        ) from None
    for k, (arr, dim) in enumerate(arrays):
        size = shape[dim]
        bad = (arr < -size) | (arr >= size)
        if bad.any():
            v = int(arr[bad].flat[0])
            raise IndexOutOfRangeError(
                f"index {v} is out of bounds for dimension {k} with size {size}"
            )
    return tuple(key)


def _getitem_samples(rng: np.random.Generator) -> list[Any]:
    x = S.rand(rng, 3, 4, 5)
    mask = np.array([True, False, True])
    return [
        sample(S.rand(rng, 3, 4), 1, note="int"),
        sample(S.rand(rng, 3, 4), -1, note="negative int"),
        sample(S.rand(rng, 4), 2, note="to 0-d"),
        sample(S.rand(rng, 5, 2), slice(1, 4), note="slice"),
        sample(S.rand(rng, 6), slice(None, None, 2), note="step"),
        sample(S.rand(rng, 6, 2), slice(-4, -1, 3), note="negative bounds"),
        sample(S.rand(rng, 3), slice(2, 1), note="empty slice"),
        sample(S.rand(rng, 3, 2), None, note="None"),
        sample(S.rand(rng), None, note="0-d None"),
        sample(S.rand(rng), Ellipsis, note="0-d Ellipsis"),
        sample(x, (0, slice(1, 3)), note="int then slice"),
        sample(x, (Ellipsis, 1), note="Ellipsis"),
        sample(x, (slice(None), None, 2), note="full slice, None, int"),
        sample(x, (slice(None), slice(None)), note="alias"),
        sample(x, Const(np.array([0, 2, 0])), note="repeated indices accumulate"),
        sample(x, Const(np.array([[0, 1], [2, 2]])), note="2-d index array"),
        sample(x, ([1, 0, 1], slice(None), [4, 0, 4]), note="separated arrays go first"),
        sample(x, (slice(None), [0, 0, 3], [1, 1, 2]), note="adjacent arrays stay"),
        sample(x, (1, slice(None), [-1, 0]), note="int and array"),
        sample(x, Const(mask), note="bool mask"),
        sample(x, Const(rng.random((3, 4)) > 0.5), note="2-d mask"),
        sample(x, (slice(0, 2), [True, False, True, True]), note="mask as a list"),
        sample(x, True, note="Python bool"),
        sample(S.rand(rng, 0, 3), (slice(None), 1), note="empty"),
        sample(x, [], note="empty index list"),
    ]


@register(
    name="getitem",
    samples=_getitem_samples,
    method=False,
    torch=lambda torch, input, index: input[index],
    operators=("__getitem__",),
    estimate=estimates.getitem,
)
def getitem(input: Tensor, index: Any) -> Tensor:
    """``input[index]``: ints, slices, None, Ellipsis, bools, integer arrays and masks
    (a multi-result call's tuple, ``svd(A)[1]`` in an expression, indexes as a tuple)."""
    if isinstance(input, tuple) and isinstance(index, (int, slice)):
        return input[index]  # type: ignore[return-value]
    t = input if type(input) is Tensor else as_tensor(input)
    if type(index) is int:  # the common case, first
        return _select(t, 0, index, 0)
    items = _as_tuple(index)
    if items is None:
        # a single index: PyTorch's fast paths (a lone slice is recorded even when full)
        if index is None:
            return UnsqueezeBackward0.apply(t, dim=0)
        if index is Ellipsis:
            return AliasBackward0.apply(t)
        if _is_int(index):
            return _select(t, 0, index, 0)
        if isinstance(index, slice):
            return _slice(t, 0, index, skip_full=False)
        items = (index,)
    result, recorded = _basic(t, items, skip_full=True)
    if recorded:
        return _advanced(result, recorded)
    if result is t:
        return AliasBackward0.apply(t)
    return result


def _basic(
    t: Tensor, items: tuple[Any, ...], skip_full: bool
) -> tuple[Tensor, dict[int, np.ndarray]]:
    """Apply the basic indices of ``items`` as views, left to right, as PyTorch does;
    returns the view and the advanced indices left to apply (dim -> index array)."""
    ndim = t._data.ndim
    specified = _specified_dims(items)
    if specified > ndim:
        raise IndexOutOfRangeError(f"too many indices for tensor of dimension {ndim}")
    result = t
    recorded: dict[int, np.ndarray] = {}
    dim = 0
    for real_dim, obj in enumerate(items):
        if obj is None:
            result = UnsqueezeBackward0.apply(result, dim=dim)
            dim += 1
        elif obj is Ellipsis:
            dim += ndim - specified
        elif isinstance(obj, (bool, np.bool_)):
            result = UnsqueezeBackward0.apply(result, dim=dim)
            recorded[dim] = _bool_index(bool(obj))
            dim += 1
        elif _is_int(obj):
            result = _select(result, dim, obj, real_dim)
        elif isinstance(obj, slice):
            result = _slice(result, dim, obj, skip_full=skip_full)
            dim += 1
        elif isinstance(obj, (Tensor, list, tuple, np.ndarray)):
            arr = _index_array(obj)
            if arr.ndim == 0 and isinstance(obj, Tensor):
                if arr.dtype == np.bool_:
                    result = UnsqueezeBackward0.apply(result, dim=dim)
                    recorded[dim] = _bool_index(bool(arr))
                    dim += 1
                else:
                    result = _select(result, dim, arr, real_dim)
                continue
            recorded[dim] = arr
            dim += arr.ndim if arr.dtype == np.bool_ else 1
        else:
            raise BadArgumentsError(_INVALID_INDEX.format(type(obj).__name__))
    return result, recorded


# -- x[index] = value -------------------------------------------------------------


class IndexPutBackward0(Function):
    """``input.index_put(index, values)``: ``values`` (broadcast) written at ``index``."""

    name = "IndexPutBackward0"
    jvp = LINEAR
    broadcasts = True  # values broadcast to the indexed shape

    @staticmethod
    def forward(ctx: Any, a: Tensor, values: Tensor, *, index: tuple[Any, ...]) -> np.ndarray:
        ctx.save_for_backward(index)  # PyTorch saves the indices only
        out = a._data.copy()
        out[index] = values._data
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (index,) = ctx.saved_tensors
        need_a, need_v = ctx.needs_input_grad
        ga = gv = None
        if need_a:  # the overwritten positions get no gradient
            zero = Tensor._make(np.zeros((), g._data.dtype))
            ga = IndexPutBackward0.apply(g, zero, index=index)
        if need_v:
            gv = IndexBackward0.apply(g, index=index)
        return ga, gv


def setitem(input: Tensor, index: Any, value: Any) -> None:
    """``input[index] = value``, recorded as PyTorch records it: basic indices make a view
    that ``copy_``/``fill_`` writes (CopySlices on the base); advanced indices are one
    ``index_put_`` (``IndexPutBackward0``) on that view."""
    t = input
    if type(index) is int:
        items: tuple[Any, ...] = (index,)
    else:
        items = _as_tuple(index) or (index,)
    view, recorded = _basic(t, items, skip_full=True)
    if isinstance(value, Tensor):
        v = value
    elif isinstance(value, (bool, int, float, np.number, np.bool_)):
        v = Tensor._make(np.asarray(value, t._data.dtype))
    else:
        v = as_tensor(value, t._data.dtype)
    if not recorded:  # PyTorch's copy_to
        if v._data.shape == view._data.shape:
            view.copy_(v)
        elif v._data.ndim == 0:
            view.fill_(v)
        else:
            v = view_op(v, _strip_leading_ones(v._data.shape))
            if v._data.shape != view._data.shape:
                v = expand(v, view._data.shape)
            view.copy_(v)
        return
    stripped = _strip_leading_ones(v._data.shape)
    if stripped != v._data.shape:
        v = view_op(v, stripped)
    key = _advanced_key(view, recorded)
    target = view._data[key].shape
    try:
        np.broadcast_to(v._data, target)
    except ValueError:
        raise ShapeMismatchError(
            f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to "
            f"indexing result of shape {list(target)}"
        ) from None
    view._check_inplace()
    if view._records(v) or dual_write(view, v):
        source = _snapshot(view) if view.requires_grad_flag else view
        inplace(view, IndexPutBackward0.apply(source, v, index=key))
    else:
        out = view._data.copy()
        out[key] = v._data
        view._write(out)


def _strip_leading_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's old rule, which PyTorch keeps: a value's leading size-1 dims are dropped."""
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return shape[lead:]


# -- gather, index_select, masked_fill -----------------------------------------


def _check_index_dtype(index: Tensor, message: str) -> np.ndarray:
    """An int64 or int32 index (torch takes both), as int64."""
    data = index._data
    if data.dtype == np.int32:
        return data.astype(np.int64)
    if data.dtype != dtypes.int64:
        raise DtypeMismatchError(message)
    return data


class GatherBackward0(Function):
    name = "GatherBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, key: tuple[np.ndarray, ...], shape: tuple[int, ...]
    ) -> np.ndarray:
        # PyTorch saves self (for its geometry) and index: writing the input in place
        # before backward fails there, so it is saved (and version-checked) here too
        ctx.save_for_backward(a, key)
        ctx.in_shape = a._data.shape
        return a._data.reshape(ctx.in_shape or (1,))[key].reshape(shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        _, key = ctx.saved_tensors
        return ScatterAddBackward0.apply(g, key=key, shape=ctx.in_shape)


def _scatter_gather(
    g: np.ndarray, key: tuple[np.ndarray, ...], shape: tuple[int, ...]
) -> np.ndarray:
    """The adjoint of gather's ``x[key]`` (0-d shapes read as (1,), as gather treats them)."""
    return _scatter_add(shape or (1,), key, g.reshape(key[0].shape)).reshape(shape)


class ScatterAddBackward0(Function):
    """The adjoint of gather: ``zeros.scatter_add(dim, index, g)``."""

    name = "ScatterAddBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, g: Tensor, *, key: tuple[np.ndarray, ...], shape: tuple[int, ...]
    ) -> np.ndarray:
        ctx.save_for_backward(key)
        ctx.index_shape = g._data.shape
        return _scatter_gather(g._data, key, shape)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        (key,) = ctx.saved_tensors
        return GatherBackward0.apply(gg, key=key, shape=ctx.index_shape)


def _gather_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), 1, Const(np.array([[0, 0], [3, 1], [2, 2]]))),
        sample(S.rand(rng, 3, 4), 0, Const(np.array([[2, 0, 1, 2]]))),
        sample(
            S.rand(rng, 3, 4, 2),
            -1,
            Const(rng.integers(0, 2, (2, 4, 3))),
            note="index smaller, dim larger",
        ),
        sample(S.rand(rng, 4), 0, Const(np.array([1, 1, 3])), note="repeated indices accumulate"),
        sample(S.rand(rng), 0, Const(np.array(0)), note="0-d"),
        sample(S.rand(rng, 3, 2), 1, Const(np.zeros((3, 0), np.int64)), note="empty"),
    ]


@register(samples=_gather_samples, out_overlap="none", out_dtype="exact")
def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and likewise for other dims)."""
    a, idx_t = as_tensor(input), as_tensor(index)
    d = normalize_dim(dim, a.ndim)
    if idx_t._data.size == 0:  # ATen checks the dtype and shape of a non-empty index only
        empty = tuple(np.zeros(0, np.int64) for _ in a._data.shape or (1,))
        return GatherBackward0.apply(a, key=empty, shape=idx_t.shape)
    idx = _check_index_dtype(idx_t, "gather(): Expected dtype int32/int64 for index")
    shape, ishape = a._data.shape or (1,), idx.shape or (1,)
    if len(ishape) != len(shape) and (a.ndim > 1 or idx.ndim > 1):
        raise ShapeMismatchError(
            "Index tensor must have the same number of dimensions as input tensor"
        )
    for k, (m, n) in enumerate(zip(ishape, shape)):
        if k != d and m > n:
            raise ShapeMismatchError(
                f"Size does not match at dimension {k} expected index {list(idx.shape)} to be no "
                f"larger than self {list(a._data.shape)} apart from dimension {d}"
            )
    bad = (idx < 0) | (idx >= shape[d])
    if bad.any():
        raise IndexOutOfRangeError(
            f"index {int(idx[bad].flat[0])} is out of bounds for dimension {d} with size {shape[d]}"
        )
    key = tuple(
        idx.reshape(ishape)
        if k == d
        else np.arange(n).reshape((-1,) + (1,) * (len(ishape) - k - 1))
        for k, n in enumerate(ishape)
    )
    key = tuple(np.broadcast_to(k, ishape) for k in key)
    return GatherBackward0.apply(a, key=key, shape=idx.shape)


class IndexSelectBackward0(Function):
    name = "IndexSelectBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, index: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(index)
        ctx.dim, ctx.in_shape = dim, a._data.shape
        if a._data.ndim == 0:
            return a._data.copy()
        return np.take(a._data, index, axis=dim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (index,) = ctx.saved_tensors
        return IndexAddBackward0.apply(g, dim=ctx.dim, index=index, shape=ctx.in_shape)


def _index_add(g: np.ndarray, dim: int, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if not shape:
        return g.copy()
    return _scatter_add(shape, (_FULL,) * dim + (index,), g)


class IndexAddBackward0(Function):
    """The adjoint of index_select: ``zeros.index_add(dim, index, g)``."""

    name = "IndexAddBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, g: Tensor, *, dim: int, index: np.ndarray, shape: tuple[int, ...]
    ) -> np.ndarray:
        ctx.save_for_backward(index)
        ctx.dim = dim
        return _index_add(g._data, dim, index, shape)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        (index,) = ctx.saved_tensors
        return IndexSelectBackward0.apply(gg, dim=ctx.dim, index=index)


def _index_select_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(
            S.rand(rng, 3, 4), 1, Const(np.array([0, 3, 0])), note="repeated indices accumulate"
        ),
        sample(S.rand(rng, 3, 4), 0, Const(np.array([2]))),
        sample(S.rand(rng, 3, 4), -1, Const(np.array(1)), note="0-d index"),
        sample(S.rand(rng), 0, Const(np.array([0])), note="0-d input"),
        sample(S.rand(rng, 3, 2), 0, Const(np.zeros(0, np.int64)), note="empty"),
    ]


@register(
    samples=_index_select_samples,
    estimate=estimates.index_select,
    out_overlap="none",
    out_dtype="index_select(): self and result must have the same scalar type",
)
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``input`` at positions ``index`` (a vector) along ``dim``."""
    a, idx_t = as_tensor(input), as_tensor(index)
    if idx_t._data.dtype == dtypes.int32:  # PyTorch takes int32 indices here too
        idx_t = Tensor._make(idx_t._data.astype(dtypes.int64))
    idx = _check_index_dtype(idx_t, "index_select(): Expected dtype int32 or int64 for index")
    if idx.ndim > 1:
        raise BadArgumentsError("index_select(): Index is supposed to be a vector")
    d = normalize_dim(dim, a.ndim)
    if a.ndim == 0 and idx.size != 1:
        raise BadArgumentsError(
            f"index_select(): Index to scalar can have only 1 value, got {idx.size} value(s)"
        )
    idx = idx.reshape(-1)
    size = a._data.shape[d] if a.ndim else 1
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        raise IndexOutOfRangeError(
            f"INDICES element is out of DATA bounds, id={int(idx[bad][0])} axis_dim={size}"
        )
    return IndexSelectBackward0.apply(a, dim=d, index=idx)


class MaskedFillBackward0(Function):
    """``masked_fill`` with a number: the filled positions get no gradient."""

    name = "MaskedFillBackward0"
    jvp = LINEAR
    jvp_params = {"value": 0}
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, mask: Tensor, *, value: Any) -> np.ndarray:
        ctx.save_for_backward(mask)
        return _fill(a._data, mask._data, value)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, None]:
        (mask,) = ctx.saved_tensors
        return masked_fill(g, mask, 0.0), None


class MaskedFillBackward1(Function):
    """``masked_fill`` with a 0-d tensor value, which receives the filled positions' gradient."""

    name = "MaskedFillBackward1"
    jvp = LINEAR
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, mask: Tensor, value: Tensor) -> np.ndarray:
        ctx.save_for_backward(mask)
        return _fill(a._data, mask._data, value._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, None, Tensor | None]:
        (mask,) = ctx.saved_tensors
        need_a, _, need_v = ctx.needs_input_grad
        ga = masked_fill(g, mask, 0.0) if need_a else None
        gv = sum_(where(mask, g, 0.0)) if need_v else None
        return ga, None, gv


def _fill(x: np.ndarray, mask: np.ndarray, value: Any) -> np.ndarray:
    return np.where(mask, np.asarray(value).astype(x.dtype), x)


_TORCH_SCALAR = {"int64": "long int", "float32": "float", "float64": "double", "bool": "bool"}


def _masked_fill_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), Const(rng.random((3, 4)) > 0.5), 0.5),
        sample(
            S.rand(rng, 3, 4),
            Const(np.array([True, False, False, True])),
            -1.0,
            note="mask broadcasts",
        ),
        sample(S.rand(rng, 4), Const(np.array([[True], [False]])), 2.0, note="input broadcasts"),
        sample(
            S.rand(rng, 2, 3), Const(rng.random((2, 3)) > 0.5), S.rand(rng), note="0-d tensor value"
        ),
        sample(S.rand(rng), Const(np.array(True)), 3.0, note="0-d"),
        sample(S.rand(rng, 0, 2), Const(np.zeros((0, 2), bool)), 1.0, note="empty"),
    ]


@register(samples=_masked_fill_samples, inplace=True)
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where the boolean ``mask`` is true, ``input`` elsewhere (shapes broadcast)."""
    a, m = as_tensor(input), as_tensor(mask)
    if m._data.dtype != dtypes.bool_:
        raise DtypeMismatchError(
            "masked_fill_ only supports boolean masks, but got mask with dtype "
            + _TORCH_SCALAR.get(dtypes.torch_name(m._data.dtype), str(m._data.dtype))
        )
    if m._data.shape != a._data.shape:
        broadcast_shape(m._data.shape, a._data.shape)  # PyTorch's message when they cannot
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise BadArgumentsError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
        return MaskedFillBackward1.apply(a, m, value)
    if not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise BadArgumentsError(
            f"masked_fill(): value must be a number or a 0-d tensor, got {type(value).__name__}"
        )
    return MaskedFillBackward0.apply(a, m, value=value)


# ``x[i] = v`` is Python syntax, not a catalogue op: bound here, beside the indexing rules.
Tensor.__setitem__ = setitem  # type: ignore[method-assign, assignment]
