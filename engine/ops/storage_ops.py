"""Ops about memory rather than values: ``empty_strided``/``new_empty_strided`` and
``empty_permuted`` (fresh memory laid out as asked; zeros here, where PyTorch leaves it
uninitialized), ``resize_``/``resize_as_`` (a new shape for a tensor's memory),
``zero_`` as a function, ``nonzero_static`` (``nonzero`` padded or cut to a fixed
count) and ``hash_tensor`` (an xor of the elements' bits)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..errors import BadArgumentsError, IndexOutOfRangeError
from ..registry import Const, register, sample
from ..tensor import Tensor
from ..views import zero_ as _zero
from . import samples as S
from ._util import as_tensor, normalize_dim, normalize_dims

_FACTORY = ("layout", "device", "pin_memory")


def _ints(values: Any, what: str) -> tuple[int, ...]:
    if isinstance(values, int | np.integer) and not isinstance(values, bool):
        return (int(values),)
    if not isinstance(values, list | tuple) or not all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values
    ):
        raise BadArgumentsError(f"{what} must be a tuple of ints")
    return tuple(int(v) for v in values)


def _extent(size: tuple[int, ...], stride: tuple[int, ...]) -> int:
    """Elements of storage a (size, stride) layout spans."""
    if 0 in size:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def _strided_zeros(size: Any, stride: Any, dt: np.dtype, requires_grad: bool) -> Tensor:
    sz, st = _ints(size, "size"), _ints(stride, "stride")
    if len(sz) != len(st):
        raise BadArgumentsError("mismatch in length of strides and shape")
    if any(n < 0 for n in sz):
        raise BadArgumentsError(
            f"Trying to create tensor with negative dimension {min(sz)}: {list(sz)}"
        )
    if any(s < 0 for s in st):
        raise BadArgumentsError(
            f"as_strided: Negative strides are not supported at the moment, got strides: {list(st)}"
        )
    buf = np.zeros(max(_extent(sz, st), 1), dt)
    out = np.lib.stride_tricks.as_strided(buf, sz, tuple(s * buf.itemsize for s in st))
    t = Tensor._make(out)
    return t.requires_grad_(True) if requires_grad else t


def strided_storage(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The storage the sizes and strides span (``size`` first, or after ``input``)."""
    first = 1 if args and estimates._is_tensor(args[0]) else 0
    size = estimates.arg(args, kwargs, first, "size")
    stride = estimates.arg(args, kwargs, first + 1, "stride")
    try:
        sz, st = _ints(size, "size"), _ints(stride, "stride")
    except BadArgumentsError:
        return None
    return _extent(tuple(max(n, 0) for n in sz), tuple(abs(s) for s in st)) + math.prod(
        max(n, 0) for n in sz
    )


def _dtype(dtype: Any, default: np.dtype) -> np.dtype:
    return default if dtype is None else dtypes.to_dtype(dtype)


@register(
    samples=lambda rng: [
        sample((2, 3), (3, 1), note="row-major"),
        sample((2, 3), (1, 2), dtype="float64", note="column-major"),
        sample((3,), (0,), note="stride 0"),
        sample((), (), note="0-d"),
    ],
    differentiable=False,
    method=False,
    estimate=strided_storage,
    torch=lambda torch, *a, **k: torch.zeros_like(torch.empty_strided(*a, **k)),
)
def empty_strided(
    size: Any,
    stride: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A tensor of ``size`` laid out with ``stride`` (zeros here: the values are
    unspecified in PyTorch)."""
    return _strided_zeros(size, stride, _dtype(dtype, dtypes.DEFAULT_FLOAT), requires_grad)


@register(
    samples=lambda rng: [
        sample(Const(S.rand(rng, 2)), (2, 3), (3, 1)),
        sample(Const(np.array([1, 2])), (2,), (2,), note="int64 source"),
    ],
    differentiable=False,
    function=False,
    estimate=strided_storage,
    torch=lambda torch, x, *a, **k: torch.zeros_like(x.new_empty_strided(*a, **k)),
)
def new_empty_strided(
    input: Tensor,
    size: Any,
    stride: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """``empty_strided`` with ``input``'s dtype (unless given)."""
    a = as_tensor(input)
    return _strided_zeros(size, stride, _dtype(dtype, a.dtype), requires_grad)


def permuted_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    size = estimates.arg(args, kwargs, 0, "size")
    shape = estimates.shape_of([size]) if isinstance(size, list | tuple) else None
    return None if shape is None else math.prod(max(n, 0) for n in shape)


@register(
    samples=lambda rng: [
        sample((2, 3, 4), (0, 2, 1), note="channels last"),
        sample((3,), (0,), dtype="float64", note="vector"),
        sample((), (), note="0-d"),
    ],
    differentiable=False,
    method=False,
    estimate=permuted_size,
    torch=lambda torch, *a, **k: torch.zeros_like(torch.empty_permuted(*a, **k)),
)
def empty_permuted(
    size: Any,
    physical_layout: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A tensor of ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first); zeros here, unspecified in PyTorch."""
    sz, perm = _ints(size, "size"), _ints(physical_layout, "physical_layout")
    if len(sz) != len(perm):
        raise BadArgumentsError(
            "Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(sz)} is not equal to len(physical_layout) = {len(perm)}"
        )
    dims = tuple(normalize_dim(d, len(sz)) for d in perm)
    if len(set(dims)) != len(dims):
        raise BadArgumentsError("Duplicate dim not allowed")
    if any(n < 0 for n in sz):
        raise BadArgumentsError(
            f"Trying to create tensor with negative dimension {min(sz)}: {list(sz)}"
        )
    buf = np.zeros(tuple(sz[d] for d in dims), _dtype(dtype, dtypes.DEFAULT_FLOAT))
    out = Tensor._make(np.transpose(buf, np.argsort(dims)) if dims else buf)
    return out.requires_grad_(True) if requires_grad else out


# -- resizing -----------------------------------------------------------------------------


def _resize(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """PyTorch's ``resize_``: the first elements of its (row-major) memory in the new
    shape; memory grows (new elements zero here, unspecified there) when needed."""
    if t.requires_grad:
        raise BadArgumentsError("cannot resize variables that require grad")
    if any(n < 0 for n in shape):
        raise BadArgumentsError(
            f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}"
        )
    if t._view is not None:
        raise BadArgumentsError(
            "Trying to resize storage that is not resizable (a view's memory is its base's)"
        )
    n = math.prod(shape)
    flat = np.ascontiguousarray(t._data).reshape(-1)
    if n <= flat.size:
        data = flat[:n].reshape(shape)
    else:
        data = np.zeros(n, flat.dtype)
        data[: flat.size] = flat
        data = data.reshape(shape)
    t._data = data
    t._vc[0] += 1
    return t


def resize_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    size = estimates.arg(args, kwargs, 1, "size")
    if estimates._is_tensor(size):
        return estimates.numel(size) + estimates.numel(args[0] if args else None)
    shape = estimates.shape_of(list(args[1:]) if size is None else [size])
    return None if shape is None else math.prod(max(n, 0) for n in shape)


@register(
    "resize_",
    samples=lambda rng: [
        sample(Const(S.rand(rng, 2, 3)), (3, 2), note="same size"),
        sample(Const(S.rand(rng, 2, 3)), (4,), note="smaller"),
        sample(Const(S.rand(rng, 2)), (1, 1, 1), note="0-d... to 3-d"),
    ],
    differentiable=False,
    function=False,
    writes=("self",),
    estimate=resize_size,
    torch=lambda torch, x, *a, **k: x.clone().resize_(*a, **k),
)
def resize_(self: Tensor, *size: Any, memory_format: Any = None) -> Tensor:
    """A new shape for this tensor's memory, in place (its first elements, row-major)."""
    shape = _ints(size[0] if len(size) == 1 else list(size), "size")
    return _resize(as_tensor(self), shape)


@register(
    "resize_as_",
    samples=lambda rng: [
        sample(Const(S.rand(rng, 2, 3)), Const(S.rand(rng, 3, 2))),
        sample(Const(S.rand(rng, 4)), Const(S.rand(rng, 2)), note="smaller"),
    ],
    differentiable=False,
    writes=("input",),
    estimate=resize_size,
    torch=lambda torch, x, *a, **k: torch.resize_as_(x.clone(), *a, **k),
)
def resize_as_(input: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """``resize_`` to ``the_template``'s shape."""
    return _resize(as_tensor(input), tuple(as_tensor(the_template).shape))


@register(
    "zero_",
    samples=lambda rng: [sample(Const(S.rand(rng, 2, 3))), sample(Const(np.array([1, 2])))],
    differentiable=False,
    writes=("input",),
    torch=lambda torch, x: torch.zero_(x.clone()),
)
def zero_(input: Tensor) -> Tensor:
    """Zeros written into ``input`` in place (``torch.zero_(x)``, ``x.zero_()``)."""
    return _zero(as_tensor(input))


# -- nonzero_static, hash_tensor -------------------------------------------------------------


def nonzero_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    size = kwargs.get("size")
    x = args[0] if args else None
    if not isinstance(size, int) or isinstance(size, bool):
        return None
    return max(size, 0) * max(len(getattr(x, "shape", ())), 1) + 2 * estimates.numel(x)


@register(
    samples=lambda rng: [
        sample(Const(np.array([[1.0, 0.0], [0.0, 2.0]])), size=3, note="padded"),
        sample(Const(np.array([1, 0, 3, 4])), size=2, note="cut"),
        sample(Const(np.array([1.0, 0.0])), size=3, fill_value=7, note="fill value"),
        sample(Const(np.array(2.0)), size=2, note="0-d"),
    ],
    differentiable=False,
    estimate=nonzero_size,
)
def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero``'s indices, exactly ``size`` rows: cut, or padded with ``fill_value``."""
    a = as_tensor(input)
    if not isinstance(size, int | np.integer) or isinstance(size, bool) or size < 0:
        raise BadArgumentsError("nonzero_static: 'size' must be an non-negative integer")
    found = np.argwhere(a._data)[:size].astype(np.int64)
    out = np.full((int(size), a._data.ndim), fill_value, np.int64)
    out[: found.shape[0]] = found
    return Tensor._make(out)


def _bits(x: np.ndarray) -> np.ndarray:
    """Each element as 64 bits: a float's float64 pattern, an integer's two's complement."""
    if x.dtype.kind == "f":
        return x.astype(np.float64).view(np.uint64)
    return x.astype(np.int64).view(np.uint64)


@register(
    complex_inputs="\"xor_sum_cpu\" not implemented for '{type}'",
    samples=lambda rng: [
        sample(Const(S.rand(rng, 2, 3))),
        sample(Const(S.rand(rng, 2, 3)), dim=1, note="dim"),
        sample(Const(np.array([1, -2, 3])), dim=0, keepdim=True, note="int64, keepdim"),
    ],
    differentiable=False,
)
def hash_tensor(input: Tensor, dim: Any = (), *, keepdim: bool = False, mode: int = 0) -> Tensor:
    """The xor of the elements' 64-bit patterns (over ``dim``; all dims when empty), as
    uint64: equal tensors hash equal."""
    a = as_tensor(input)
    if mode != 0:
        raise BadArgumentsError(f"hash_tensor: Expected mode to be 0 (xor_sum), got {mode}")
    every = dim is None or (isinstance(dim, list | tuple) and not dim)
    dims = tuple(range(a.ndim)) if every else normalize_dims(dim, max(a.ndim, 1))
    if a._data.size == 0:
        if every:
            raise BadArgumentsError(
                "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        for d in dims:
            if a._data.shape[d] == 0:
                raise IndexOutOfRangeError(
                    f"hash_tensor: Expected reduction dim {d} to have non-zero size."
                )
    bits = _bits(a._data)
    axes = tuple(d for d in dims if d < bits.ndim)
    xor: Any = np.bitwise_xor
    out = xor.reduce(bits, axis=axes, keepdims=bool(keepdim)) if axes else bits
    return Tensor._make(np.asarray(out, np.uint64))


# -- _chunk_cat -----------------------------------------------------------------------------


def _chunk_cat_dim(tensors: list[Tensor], dim: int) -> int:
    ndims = {t._data.ndim for t in tensors}
    if dim < 0:
        if len(ndims) > 1:
            raise BadArgumentsError(
                "_chunk_cat expects non-negative dim when input tensors have different ndims"
            )
        dim += ndims.pop()
    if any(dim >= t._data.ndim for t in tensors) or dim < 0:
        raise BadArgumentsError("_chunk_cat expects dim < ndim for all input tensors")
    return dim


def chunk_cat_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The inputs padded to whole chunks (each slice past ``dim`` padded by up to a
    row per chunk: bounded by ``numel * (num_chunks + 1)``) and the result."""
    chunks = estimates.arg(args, kwargs, 2, "num_chunks")
    if not isinstance(chunks, int) or isinstance(chunks, bool):
        return None
    tensors = estimates.tensors_in(args[:1] if args else [])
    k = max(chunks, 0)
    return sum(2 * estimates.numel(t) * (k + 1) for t in tensors) + k


@register(
    samples=lambda rng: [
        sample([Const(S.rand(rng, 1, 2, 3)), Const(S.rand(rng, 1, 2, 3))], -1, 5),
        sample([Const(S.rand(rng, 3, 3, 2)), Const(S.rand(rng, 3, 4, 2))], 1, 2, note="dim 1"),
    ],
    differentiable=False,
    method=False,
    estimate=chunk_cat_size,
)
def _chunk_cat(tensors: Any, dim: int, num_chunks: int) -> Tensor:
    """Each tensor cut into ``num_chunks`` chunks along ``dim`` (zero-padded to equal
    chunks), each chunk flattened past ``dim``, the chunks of all tensors concatenated:
    ``(*leading, num_chunks, sum of chunk sizes)`` (aten's ``_chunk_cat``)."""
    if not isinstance(tensors, list | tuple) or not tensors:
        raise BadArgumentsError("_chunk_cat expects a non-empty input tensor list")
    ts = [as_tensor(t) for t in tensors]
    d = _chunk_cat_dim(ts, int(dim))
    if num_chunks < 1:
        raise BadArgumentsError("_chunk_cat expects positive num_chunks")
    lead = ts[0]._data.shape[:d]
    if any(t._data.shape[:d] != lead for t in ts):
        raise BadArgumentsError(
            "_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors"
        )
    if any(t._data.size == 0 for t in ts):
        raise BadArgumentsError("_chunk_cat expects non-empty tensor")
    parts = []
    for t in ts:
        x = t._data
        n = x.shape[d]
        size = -(-n // num_chunks)
        pad = [(0, 0)] * x.ndim
        pad[d] = (0, size * num_chunks - n)
        parts.append(np.pad(x, pad).reshape(*lead, num_chunks, -1))
    return Tensor._make(np.concatenate(parts, axis=d + 1))
