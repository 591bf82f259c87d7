"""``as_strided`` (a view of the storage), ``as_strided_copy``, ``as_strided_scatter``,
``Tensor.unfold`` (sliding windows, a view) and ``unfold_copy``.

The engine's storage of a tensor is its root base's memory in row-major order (what a
fresh contiguous PyTorch tensor holds): ``as_strided`` reads it at ``storage_offset +
sum(i * stride)`` after PyTorch's bounds check, so no size or stride reads outside it.
Where that memory is row-major numpy memory the result is a numpy view (writes
propagate); otherwise it is a copy. Gradients flow through a map from each result
element to the input element it reads (-1 for storage outside the input: no gradient,
as PyTorch's ``as_strided_backward`` drops them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import estimates
from ..dual import LINEAR
from ..errors import BadArgumentsError, IndexOutOfRangeError
from ..function import Function, _NoCtx
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, normalize_dim


def _scatter(g: np.ndarray, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    size = math.prod(shape)
    flat, vals = index.reshape(-1), g.reshape(-1)
    keep = flat >= 0
    out = np.bincount(flat[keep], weights=vals[keep], minlength=size)
    return out.astype(g.dtype, copy=False).reshape(shape)


def _gather(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    flat = x.reshape(-1)
    if not flat.size:
        return np.zeros(index.shape, x.dtype)
    return np.where(index >= 0, flat[np.clip(index, 0, None)], np.zeros((), x.dtype))


class StridedScatter(Function):
    """The adjoint of a strided read: ``g`` added into zeros of the input's shape."""

    name = "AsStridedBackwardBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        ctx.index = index
        return _scatter(g._data, index, shape)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        return StridedGather.apply(gg, index=ctx.index)


class StridedGather(Function):
    """The elements of ``x`` at ``index`` (zero where -1): a strided read as a copy."""

    name = "AsStridedBackward0_copy"
    jvp = LINEAR
    jvp_params = {"outside": None}

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, index: np.ndarray, outside: Any = None) -> np.ndarray:
        ctx.index, ctx.in_shape = index, x._data.shape
        out = _gather(x._data, index)
        if outside is not None:  # storage the input does not cover: constants
            out = np.where(index >= 0, out, outside)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return StridedScatter.apply(g, index=ctx.index, shape=ctx.in_shape)


class UnfoldBackward0_copy(StridedGather):  # noqa: N801 - PyTorch's node name
    name = "UnfoldBackward0_copy"


# -- the storage and PyTorch's checks -----------------------------------------------------


def _ints(values: Any, what: str) -> tuple[int, ...]:
    if isinstance(values, int | np.integer) and not isinstance(values, bool):
        return (int(values),)
    if not isinstance(values, list | tuple) or not all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values
    ):
        raise BadArgumentsError(f"as_strided(): argument '{what}' must be tuple of ints")
    return tuple(int(v) for v in values)


def _storage(a: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The root base's array and ``a``'s elements' flat positions in it (row-major)."""
    info = a._view
    if info is None:
        return a._data, np.arange(a._data.size, dtype=np.int64).reshape(a._data.shape)
    return info.base._data, info.index()


def _check(
    size: tuple[int, ...], stride: tuple[int, ...], offset: int, itemsize: int, storage: int
) -> None:
    """PyTorch's refusals, in its order, before anything is read or allocated."""
    if len(size) != len(stride):
        raise BadArgumentsError("mismatch in length of strides and shape")
    if any(n < 0 for n in size):
        raise BadArgumentsError(
            f"Storage size calculation overflowed with sizes={list(size)} and "
            f"strides={list(stride)}"
        )
    if any(s < 0 for s in stride):
        raise BadArgumentsError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}"
        )
    if offset < 0:
        raise BadArgumentsError(f"Tensor: invalid storage offset {offset}")
    need = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need > storage:
        raise BadArgumentsError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {itemsize} requiring a storage size of {need * itemsize} are out of "
            f"bounds for storage of size {storage * itemsize}"
        )


def _positions(
    size: tuple[int, ...], stride: tuple[int, ...], offset: int, storage: int
) -> np.ndarray:
    """Flat storage positions of each element of the strided result (checked in bounds)."""
    if 0 in size:
        return np.zeros(size, np.int64)
    pos = np.full(size, offset, np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        pos += (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def _in_input(pos: np.ndarray, where: np.ndarray, storage: int) -> np.ndarray:
    """For each storage position read, the input's flat element there (-1: none)."""
    inverse = np.full(storage, -1, np.int64)
    inverse[where.reshape(-1)] = np.arange(where.size, dtype=np.int64)
    return inverse[pos]


def _buffer(x: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The row-major numpy memory ``x`` lives in, flat, and ``x``'s offset in it."""
    top = x
    while isinstance(top.base, np.ndarray):
        top = top.base
    if not top.flags.c_contiguous or top.dtype.itemsize != x.itemsize:
        return None
    flat = top.reshape(-1)
    if flat.dtype != x.dtype:
        flat = flat.view(x.dtype)
    delta = x.__array_interface__["data"][0] - flat.__array_interface__["data"][0]
    if delta % x.itemsize:
        return None
    return flat, delta // x.itemsize


def _view_of(x: np.ndarray, size: tuple[int, ...], stride: tuple[int, ...], delta: int) -> Any:
    found = _buffer(x)
    if found is None:
        return None
    flat, at = found
    start = at + delta
    if start < 0 or start > flat.size:
        return None
    return np.lib.stride_tricks.as_strided(
        flat[start:], size, tuple(s * x.itemsize for s in stride)
    )


class AsStridedBackward0(Function):
    """``as_strided``: a numpy view of the root's memory (``delta`` counts from ``a``'s
    first element, so replaying the view on another array of the root's layout works)."""

    name = "AsStridedBackward0"
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(
        ctx: Any,
        a: Tensor,
        *,
        size: tuple[int, ...],
        stride: tuple[int, ...],
        delta: int,
        index: np.ndarray,
    ) -> np.ndarray:
        if not isinstance(ctx, _NoCtx):
            ctx.index, ctx.in_shape = index, a._data.shape
        out = _view_of(a._data, size, stride, delta)
        return _gather(a._data, index) if out is None else out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return StridedScatter.apply(g, index=ctx.index, shape=ctx.in_shape)


def _plan(
    a: Tensor, size: Any, stride: Any, storage_offset: Any
) -> tuple[tuple[int, ...], tuple[int, ...], int, np.ndarray, np.ndarray, np.ndarray]:
    """Checked sizes, strides and offset; the storage positions read; the input's
    element at each (-1: outside it); the storage array."""
    sz, st = _ints(size, "size"), _ints(stride, "stride")
    root, where = _storage(a)
    if storage_offset is None:
        offset = int(where.reshape(-1)[0]) if where.size else 0
    else:
        offset = int(storage_offset)
    _check(sz, st, offset, a._data.itemsize, root.size)
    pos = _positions(sz, st, offset, root.size)
    return sz, st, offset, pos, _in_input(pos, where, root.size), root


def _outside(root: np.ndarray, pos: np.ndarray, index: np.ndarray) -> np.ndarray | None:
    if (index >= 0).all():
        return None
    values = np.ascontiguousarray(root).reshape(-1)[pos]
    return np.where(index >= 0, np.zeros((), root.dtype), values)


def _as_strided_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 3), (2, 2), (1, 2), note="overlapping windows"),
        sample(S.rand(rng, 3, 3), (2, 2), (1, 2), 1, note="storage offset"),
        sample(S.rand(rng, 4), (2, 3), (0, 1), note="a repeated row (stride 0)"),
        sample(S.rand(rng, 2, 3), (0, 2), (1, 1), note="empty"),
    ]


def strided_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The result's elements (``size``) and the storage map of the input's root."""
    size = estimates.arg(args, kwargs, 1, "size")
    shape = estimates.shape_of([size]) if isinstance(size, list | tuple) else None
    if shape is None:
        return None
    return math.prod(max(n, 0) for n in shape) * 3 + 2 * estimates.numel(args[0] if args else None)


@register(samples=_as_strided_samples, estimate=strided_size)
def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: Any = None) -> Tensor:
    """A view of ``input``'s storage with the given sizes, strides (in elements) and
    offset (``input``'s own by default); bounds checked as PyTorch checks them."""
    a = as_tensor(input)
    sz, st, offset, pos, index, root = _plan(a, size, stride, storage_offset)
    found = _buffer(a._data)
    row_major = root.flags.c_contiguous and found is not None
    if row_major:
        first = int(_storage(a)[1].reshape(-1)[0]) if a._data.size else offset
        return AsStridedBackward0.apply(a, size=sz, stride=st, delta=offset - first, index=index)
    return StridedGather.apply(a, index=index, outside=_outside(root, pos, index))


@register(samples=_as_strided_samples, estimate=strided_size, method=False)
def as_strided_copy(input: Tensor, size: Any, stride: Any, storage_offset: Any = None) -> Tensor:
    """``as_strided`` as a new tensor (no memory shared with ``input``)."""
    a = as_tensor(input)
    _, _, _, pos, index, root = _plan(a, size, stride, storage_offset)
    return StridedGather.apply(a, index=index, outside=_outside(root, pos, index))


class AsStridedScatterBackward0(Function):
    """``input`` (a copy) with ``src`` written at the strided positions. Its input's
    gradient is PyTorch's ``as_strided_scatter_backward``: ``g`` inside the written
    region and zero outside it (sic: PyTorch's formula, kept as the oracle gives it)."""

    name = "AsStridedScatterBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, src: Tensor, *, index: np.ndarray) -> np.ndarray:
        ctx.index, ctx.in_shape = index, a._data.shape
        out = np.array(a._data, order="C", copy=True)
        out.reshape(-1)[index.reshape(-1)] = src._data.reshape(-1).astype(out.dtype)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_a, need_s = ctx.needs_input_grad
        index = ctx.index
        ga = gs = None
        if need_a:
            mask = np.zeros(ctx.in_shape, g.dtype)
            mask.reshape(-1)[index.reshape(-1)] = 1
            ga = g * Tensor._make(mask)
        if need_s:
            gs = StridedGather.apply(g, index=index)
        return ga, gs


def _scatter_samples(rng: np.random.Generator) -> list[Any]:
    # the input is a constant: PyTorch's input gradient is not the derivative (see
    # AsStridedScatterBackward0), so finite differences cannot check it; the op_db
    # comparison with PyTorch does
    return [
        sample(Const(S.rand(rng, 3, 3)), S.rand(rng, 2, 2), (2, 2), (1, 2)),
        sample(Const(S.rand(rng, 3, 3)), S.rand(rng, 2, 2), (2, 2), (2, 1), 1, note="offset"),
        sample(Const(S.rand(rng, 4)), S.rand(rng), (), (), note="0-d"),
    ]


@register(samples=_scatter_samples, estimate=strided_size)
def as_strided_scatter(
    input: Tensor, src: Tensor, size: Any, stride: Any, storage_offset: Any = None
) -> Tensor:
    """A copy of ``input`` with ``src`` written where ``as_strided`` would read."""
    a, s = as_tensor(input), as_tensor(src)
    sz, st = _ints(size, "size"), _ints(stride, "stride")
    offset = 0 if storage_offset is None else int(storage_offset)
    _check(sz, st, offset, a._data.itemsize, a._data.size)
    if tuple(s._data.shape) != sz:
        raise BadArgumentsError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(s._data.shape)}, slice size = {list(sz)}"
        )
    pos = _positions(sz, st, offset, a._data.size)
    return AsStridedScatterBackward0.apply(a, s, index=pos)


# -- unfold ---------------------------------------------------------------------------------


def _windows(shape: tuple[int, ...], dim: int, size: int, step: int) -> tuple[int, ...]:
    n = shape[dim] if shape else 1
    if size > n:
        raise BadArgumentsError(
            f"maximum size for tensor at dimension {dim} is {n} but size is {size}"
        )
    if step <= 0:
        raise BadArgumentsError(f"step is {step} but must be > 0")
    if size < 0:
        raise BadArgumentsError(f"size is {size} but must be >= 0")
    return (*shape[:dim], (n - size) // step + 1, *shape[dim + 1 :], size) if shape else (size,)


def _unfold_np(x: np.ndarray, dim: int, size: int, step: int) -> np.ndarray:
    shape = _windows(x.shape, dim, size, step)
    if x.ndim == 0:
        return np.lib.stride_tricks.as_strided(x, shape, (x.itemsize,))
    st = list(x.strides)
    strides = (*st[:dim], st[dim] * step, *st[dim + 1 :], st[dim])
    return np.lib.stride_tricks.as_strided(x, shape, strides)


class UnfoldBackward0(Function):
    """``x.unfold(dim, size, step)``: windows along ``dim``, a view of ``x``."""

    name = "UnfoldBackward0"
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, size: int, step: int) -> np.ndarray:
        x = a._data
        if not isinstance(ctx, _NoCtx):
            where = np.arange(x.size, dtype=np.int64).reshape(x.shape)
            ctx.index, ctx.in_shape = np.array(_unfold_np(where, dim, size, step)), x.shape
        return _unfold_np(x, dim, size, step)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return StridedScatter.apply(g, index=ctx.index, shape=ctx.in_shape)


def _unfold_args(input: Any, dimension: Any, size: Any, step: Any) -> tuple[Tensor, int]:
    a = as_tensor(input)
    if a.ndim == 0:
        if dimension not in (0, -1):
            raise IndexOutOfRangeError(
                f"Dimension out of range (expected to be in range of [-1, 0], but got {dimension})"
            )
        _windows((), 0, int(size), int(step))
        return a, 0
    d = normalize_dim(dimension, a.ndim)
    _windows(a._data.shape, d, int(size), int(step))
    return a, d


def _unfold_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 5, 3), 0, 2, 1, note="overlapping windows"),
        sample(S.rand(rng, 3, 7), 1, 3, 2, note="step 2"),
        sample(S.rand(rng), 0, 1, 1, note="0-d"),
        sample(S.rand(rng, 4, 2), -2, 4, 3, note="one window"),
    ]


def unfold_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Each window's elements (index maps of them, for the gradient)."""
    x = args[0] if args else None
    size = estimates.arg(args, kwargs, 2, "size")
    if not isinstance(size, int) or isinstance(size, bool):
        return None
    return 2 * estimates.numel(x) * max(size, 1)


@register(
    "tensor_unfold",
    samples=_unfold_samples,
    method=False,
    estimate=unfold_size,
    torch=lambda torch, x, *a, **k: x.unfold(*a, **k),
)
def tensor_unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Windows of ``size`` elements every ``step`` along ``dimension``, as a new last
    dim: a view of ``input`` (``Tensor.unfold``; the name ``unfold`` is
    ``nn.functional.unfold``'s)."""
    a, d = _unfold_args(input, dimension, size, step)
    return UnfoldBackward0.apply(a, dim=d, size=int(size), step=int(step))


@register(samples=_unfold_samples, method=False, estimate=unfold_size)
def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold`` as a new tensor."""
    a, d = _unfold_args(input, dimension, size, step)
    where = np.arange(a._data.size, dtype=np.int64).reshape(a._data.shape)
    index = np.array(_unfold_np(where, d, int(size), int(step)))
    return UnfoldBackward0_copy.apply(a, index=index)
