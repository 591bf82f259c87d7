"""Writing at indices: ``index_put`` (``x[indices] = values`` as a function, or summed
with ``accumulate``), ``put`` (flat indices), ``index_reduce`` (``scatter_reduce``
along one dim), and aten's ``_unsafe_masked_index`` / ``_unsafe_masked_index_put_accumulate``
(written as PyTorch's decompositions: indices clamped, masked positions filled)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import estimates
from ..dual import LINEAR
from ..errors import ArgumentTypeError, BadArgumentsError, IndexOutOfRangeError
from ..function import Function
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor, normalize_dim
from .indexing import IndexBackward0, IndexPutBackward0


def _key(a: Tensor, indices: Any) -> tuple[Any, ...]:
    """The numpy key of PyTorch's list of index tensors (a bool mask stands for as
    many dims as it has)."""
    if not isinstance(indices, list | tuple):
        raise ArgumentTypeError(
            f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}"
        )
    key: list[Any] = []
    dim = 0
    for k, item in enumerate(indices):
        if not isinstance(item, Tensor):  # PyTorch's binding takes tensors only
            raise ArgumentTypeError(
                f"expected Tensor as element {k} in argument 0, but got {type(item).__name__}"
            )
        data = item._data
        if data.dtype.kind == "b":
            if data.shape != a._data.shape[dim : dim + data.ndim]:
                raise IndexOutOfRangeError(
                    f"The shape of the mask {list(data.shape)} at index 0 does not match the "
                    f"shape of the indexed tensor {list(a._data.shape[dim:])} at index {dim}"
                )
            key.extend(np.nonzero(data))
            dim += data.ndim
        elif data.dtype.kind in "iu":
            if dim >= a._data.ndim:
                break
            size = a._data.shape[dim]
            bad = (data < -size) | (data >= size)
            if bad.any():
                raise IndexOutOfRangeError(
                    f"index {int(data[bad].reshape(-1)[0])} is out of bounds for dimension "
                    f"{dim} with size {size}"
                )
            key.append(data.astype(np.int64))
            dim += 1
        else:
            raise IndexOutOfRangeError(
                "tensors used as indices must be long, int, byte or bool tensors"
            )
    if dim > a._data.ndim:
        raise IndexOutOfRangeError(
            f"too many indices for tensor of dimension {a._data.ndim} (got {dim})"
        )
    return tuple(key)


class IndexPutAccumulate(Function):
    """``index_put(..., accumulate=True)``: ``values`` added at ``index`` (repeats sum)."""

    name = "IndexPutBackward0"
    jvp = LINEAR
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, values: Tensor, *, index: tuple[Any, ...]) -> np.ndarray:
        ctx.save_for_backward(index)
        out = np.array(a._data, copy=True)
        target = out[index].shape
        np.add.at(out, index, np.broadcast_to(values._data, target).astype(out.dtype))
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (index,) = ctx.saved_tensors
        need_a, need_v = ctx.needs_input_grad
        return (g if need_a else None), (IndexBackward0.apply(g, index=index) if need_v else None)


def _index_put_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 4, 3), (Const(np.array([0, 2])),), S.rand(rng, 2, 3)),
        sample(
            S.rand(rng, 4, 3),
            (Const(np.array([1, 1])), Const(np.array([0, 2]))),
            S.rand(rng, 2),
            accumulate=True,
            note="accumulate",
        ),
        sample(
            S.rand(rng, 3, 2),
            (Const(np.array([True, False, True])),),
            S.rand(rng, 2),
            note="a mask, broadcast values",
        ),
        sample(
            S.rand(rng, 3, 4),
            (Const(np.array([[0], [2]])), Const(np.array([3, 0, 3]))),
            S.rand(rng, 3),
            accumulate=True,
            note="broadcast indices, repeats",
        ),
    ]


@register(samples=_index_put_samples, inplace=True)
def index_put(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written at ``indices`` (``input[indices] =
    values``), or added there with ``accumulate`` (repeated indices add up)."""
    a, v = as_tensor(input), as_tensor(values)
    key = _key(a, indices)
    target = a._data[key].shape
    try:
        np.broadcast_to(v._data, target)
    except ValueError:
        raise BadArgumentsError(
            f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to "
            f"indexing result of shape {list(target)}"
        ) from None
    if v._data.dtype != a._data.dtype:
        raise BadArgumentsError(
            "Index put requires the source and destination dtypes match, got "
            f"{_dtype_name(a)} for the destination and {_dtype_name(v)} for the source."
        )
    if accumulate:
        return IndexPutAccumulate.apply(a, v, index=key)
    return IndexPutBackward0.apply(a, v, index=key)


def _dtype_name(t: Tensor) -> str:
    from_np = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}
    return from_np.get(np.dtype(t.dtype).name, np.dtype(t.dtype).name)


# -- put ------------------------------------------------------------------------------------


class PutBackward0(Function):
    """``input.put(index, source)``: ``source`` written (or added) at flat positions."""

    name = "PutBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, source: Tensor, *, index: np.ndarray, accumulate: bool
    ) -> np.ndarray:
        ctx.index, ctx.accumulate, ctx.src_shape = index, accumulate, source._data.shape
        out = np.array(a._data, order="C", copy=True)
        flat = out.reshape(-1)
        values = source._data.reshape(-1).astype(out.dtype)
        if accumulate:
            np.add.at(flat, index, values)
        else:
            flat[index] = values
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_a, need_s = ctx.needs_input_grad
        ga = gs = None
        if need_a:
            if ctx.accumulate:
                ga = g
            else:  # the overwritten positions get no gradient
                zeros = Tensor._make(np.zeros(ctx.index.shape, g.dtype))
                ga = PutBackward0.apply(g, zeros, index=ctx.index, accumulate=False)
        if need_s:
            gs = OPS["take"].fn(g, Tensor._make(ctx.index)).reshape(ctx.src_shape)
        return ga, gs


def _put_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 3), Const(np.array([6, 4, 2])), S.rand(rng, 3)),
        sample(
            S.rand(rng, 3, 3),
            Const(np.array([-7, 1, -7])),
            S.rand(rng, 3),
            True,
            note="negative, repeated, accumulate",
        ),
        sample(S.rand(rng), Const(np.array(0)), S.rand(rng), note="0-d"),
    ]


@register(samples=_put_samples, inplace=True)
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source`` written (or added, ``accumulate``) at the flat
    positions ``index`` (negative ones count from the end)."""
    a, s = as_tensor(input), as_tensor(source)
    if not isinstance(index, Tensor):
        raise ArgumentTypeError(
            f"put(): argument 'index' (position 1) must be Tensor, not {type(index).__name__}"
        )
    idx = index._data
    if idx.dtype != np.int64:
        raise BadArgumentsError(
            f"put_(): Expected a long tensor for index, but got {_dtype_name(index)}"
        )
    if s._data.dtype != a._data.dtype:
        raise BadArgumentsError(
            "put_(): self and source expected to have the same dtype, but got "
            f"self.dtype = {_dtype_name(a)} and source.dtype = {_dtype_name(s)}"
        )
    if idx.size != s._data.size:
        raise BadArgumentsError(
            "put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {s._data.size}, index.numel() = {idx.size}"
        )
    n = a._data.size
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexOutOfRangeError(
            f"out of range: tried to access index {int(idx[bad].reshape(-1)[0])} on a tensor "
            f"of {n} elements."
        )
    flat = np.where(idx < 0, idx + n, idx).reshape(-1)
    return PutBackward0.apply(a, s, index=flat, accumulate=bool(accumulate))


# -- index_reduce ----------------------------------------------------------------------------


def _index_reduce_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 4, 3), 0, Const(np.array([0, 2, 0])), S.rand(rng, 3, 3), "prod"),
        sample(
            S.rand(rng, 3, 4),
            1,
            Const(np.array([3, 1])),
            S.rand(rng, 3, 2),
            "mean",
            include_self=False,
            note="mean, without self",
        ),
        sample(S.rand(rng, 5), 0, Const(np.array([4, 4])), S.rand(rng, 2), "amax", note="amax"),
        sample(S.rand(rng, 2, 2), -1, Const(np.array([0])), S.rand(rng, 2, 1), "amin", note="amin"),
    ]


@register(
    complex_inputs="\"index_reduce_func_exclude_input_init\" not implemented for '{type}'",
    samples=_index_reduce_samples,
    inplace=True,
)
def index_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """``input`` with the slices of ``source`` reduced (``prod``, ``mean``, ``amax``,
    ``amin``) into positions ``index`` along ``dim`` (``scatter_reduce`` over whole slices)."""
    a, s = as_tensor(input), as_tensor(source)
    warnings.warn("index_reduce() is in beta and the API may change at any time.", stacklevel=2)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise BadArgumentsError(
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    if not isinstance(index, Tensor):
        raise ArgumentTypeError(
            "index_reduce(): argument 'index' (position 3) must be Tensor, not "
            f"{type(index).__name__}"
        )
    d = normalize_dim(dim, max(a.ndim, 1))
    idx = index._data.reshape(-1).astype(np.int64)
    if a.ndim == 0:
        a2, s2 = a.reshape(1), s.reshape(1)
    else:
        a2, s2 = a, s
    if s2.ndim != a2.ndim or s2.shape[d] != idx.size:
        raise BadArgumentsError(
            "index_reduce_(): Number of indices should be equal to source.size(dim)"
        )
    shape = [1] * s2.ndim
    shape[d] = idx.size
    full = Tensor._make(np.ascontiguousarray(np.broadcast_to(idx.reshape(shape), s2.shape)))
    return composite(
        "IndexReduceBackward0",
        _index_reduce,
        a,
        s,
        dim=d,
        index=full,
        reduce=reduce,
        include_self=include_self,
    )


def _index_reduce(
    a: Tensor, s: Tensor, dim: int, index: Tensor, reduce: str, include_self: bool
) -> Tensor:
    a2, s2 = (a.reshape(1), s.reshape(1)) if a.ndim == 0 else (a, s)
    out = OPS["scatter_reduce"].fn(a2, dim, index, s2, reduce, include_self=include_self)
    return out.reshape(a.shape) if a.ndim == 0 else out


# -- aten's masked index ops --------------------------------------------------------------


def _clamped(x: Tensor, indices: Any, low_wraps: bool) -> list[Any]:
    out: list[Any] = []
    for i, index in enumerate(indices):
        if index is None:
            out.append(None)
            continue
        if index._data.dtype not in (np.int64, np.int32):
            raise BadArgumentsError("tensors used as indices must be long or int tensors")
        n = x._data.shape[i]
        low = -n if low_wraps else 0
        out.append(Tensor._make(np.clip(index._data, low, n - 1).astype(np.int64)))
    return out


def _check_mask(mask: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise BadArgumentsError("tensors used as masks must be bool tensors")
    return mask


def _nothing(need: tuple[bool, ...]) -> tuple[bool, ...]:
    """PyTorch's masked index nodes keep the mask and indices only (and self's size)."""
    return (False,) * len(need)


def _masked_samples(rng: np.random.Generator) -> list[Any]:
    mask = Const(rng.uniform(size=(4, 4)) > 0.3)
    rows = Const(rng.integers(0, 6, (4, 1)))
    cols = Const(rng.integers(0, 6, (1, 4)))
    return [sample(S.rand(rng, 5, 5), mask, [rows, cols], -1.5)]


def masked_index_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The mask's elements (the result's) and the input's."""
    return sum(estimates.numel(t) for t in estimates.tensors_in([*args, *kwargs.values()]))


@register(samples=_masked_samples, method=False, estimate=masked_index_size)
def _unsafe_masked_index(input: Tensor, mask: Tensor, indices: Any, fill: Any) -> Tensor:
    """``input[indices]`` with the indices clamped into range, ``fill`` where ``mask``
    is false (aten's; PyTorch's decomposition)."""
    x = as_tensor(input)
    m = _check_mask(mask)
    keys = _clamped(x, indices, low_wraps=False)
    if x._data.size == 0:
        shape = np.broadcast_shapes(*(k._data.shape for k in keys if k is not None))
        return Tensor._make(np.full(shape, fill, x._data.dtype))
    return composite(
        "UnsafeMaskedIndexBackward0", _masked_index, x, keys=keys, mask=m, fill=fill, saves=_nothing
    )


def _masked_index(x: Tensor, keys: list[Any], mask: Tensor, fill: Any) -> Tensor:
    picked = OPS["getitem"].fn(x, tuple(keys))
    return OPS["masked_fill"].fn(picked, OPS["logical_not"].fn(mask), fill)


def _masked_put_samples(rng: np.random.Generator) -> list[Any]:
    mask = Const(rng.uniform(size=(4, 5)) > 0.3)
    rows = Const(rng.integers(-3, 7, (4, 1)))
    cols = Const(rng.integers(0, 7, (1, 5)))
    return [sample(S.rand(rng, 5, 5), mask, [rows, cols], S.rand(rng, 4, 5))]


@register(samples=_masked_put_samples, method=False, estimate=masked_index_size)
def _unsafe_masked_index_put_accumulate(
    input: Tensor, mask: Tensor, indices: Any, values: Tensor
) -> Tensor:
    """``values`` (zero where ``mask`` is false) added into a copy of ``input`` at the
    clamped ``indices`` (aten's; PyTorch's decomposition)."""
    x = as_tensor(input)
    m = _check_mask(mask)
    keys = _clamped(x, indices, low_wraps=True)
    if x._data.size == 0:
        return OPS["clone"].fn(x)
    return composite(
        "UnsafeMaskedIndexPutAccumulateBackward0",
        _masked_put,
        x,
        as_tensor(values),
        keys=keys,
        mask=m,
        saves=_nothing,
    )


def _masked_put(x: Tensor, values: Tensor, keys: list[Any], mask: Tensor) -> Tensor:
    masked = OPS["masked_fill"].fn(values, OPS["logical_not"].fn(mask), 0)
    return index_put(x, keys, masked, accumulate=True)
