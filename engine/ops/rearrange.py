"""Rearranging ops: flip, roll, repeat, tile, repeat_interleave, narrow, unbind,
movedim, diag, diagonal, diag_embed and trace.

Each of these moves elements without arithmetic, so each is "read the input at
a flat index array" (``Gather``) and its gradient is "add the gradient back at
those positions" (``Put``): the two are each other's adjoints, so
``create_graph`` works at any order. The index array is the op applied to
``arange(n)``: one rule for every op, no per-op backward to get wrong. The ops
PyTorch makes views (``diagonal``, ``narrow``, ``unbind``, ``movedim``) return
numpy views sharing memory and version counter, as PyTorch's do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .. import dtypes, estimates
from ..dual import LINEAR
from ..errors import BadArgumentsError, IndexOutOfRangeError, ShapeMismatchError
from ..function import Function
from ..primitives import SliceBackward0, slice_key
from ..registry import Const, Results, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import KernelDtypeError
from ._util import as_tensor, normalize_dim, normalize_dims, shape_arg
from .indexing import AliasBackward0, index_select
from .shape import contiguous, expand, permute, reshape, stack, unsqueeze, view

# -- the two adjoint primitives ------------------------------------------------------------


def flat_index(shape: tuple[int, ...]) -> np.ndarray:
    """Each element's position in a C-ordered flat copy (what a rearrangement moves)."""
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def put_add(g: np.ndarray, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Zeros of ``shape`` with ``g`` added at the flat ``index`` (repeats accumulate)."""
    n = math.prod(shape)
    flat = index.reshape(-1)
    if flat.size == 0:
        return np.zeros(shape, g.dtype)
    w = g.reshape(-1)
    with np.errstate(all="ignore"):
        if g.dtype.kind == "c":  # bincount weighs by reals: each part on its own
            out = np.bincount(flat, weights=w.real.astype(np.float64), minlength=n) + 1j * (
                np.bincount(flat, weights=w.imag.astype(np.float64), minlength=n)
            )
        else:
            out = np.bincount(flat, weights=w.astype(np.float64), minlength=n)
    return out.astype(g.dtype, copy=False).reshape(shape)


def _contig(a: np.ndarray) -> np.ndarray:
    """A C-ordered copy when needed (``np.ascontiguousarray`` turns 0-d into 1-d)."""
    return a if a.flags.c_contiguous else a.copy()


class Gather(Function):
    """``x.flatten()[index]``: the selection every rearrangement is. Subclasses name
    PyTorch's node; ``saves`` says whether PyTorch saves the index (then a second
    backward without ``retain_graph`` fails, as in PyTorch)."""

    name = "TakeBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR
    saves: ClassVar[bool] = True

    @classmethod
    def forward(cls, ctx: Any, a: Tensor, *, index: np.ndarray, extra: Any = None) -> Any:  # type: ignore[override]
        if cls.saves:
            ctx.save_for_backward(index)
        else:
            ctx.index = index
        ctx.in_shape = a._data.shape
        values = a._data.reshape(-1)[index]
        return values if extra is None else (values, extra)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor, *_ignored: Any) -> Tensor:  # type: ignore[override]
        index = ctx.saved_tensors[0] if cls.saves else ctx.index
        return Put.apply(g, index=index, shape=ctx.in_shape)


class Put(Function):
    """The adjoint of ``Gather``: the gradient added back at its flat positions."""

    name = "PutBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        ctx.index = index
        return put_add(g._data, index, shape)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        return _Unsaved.apply(gg, index=ctx.index)


class _Unsaved(Gather):
    name = "TakeBackward0"
    saves = False


def gather_flat(name: str, saves: bool = False) -> type[Gather]:
    """A ``Gather`` recording PyTorch's ``name``."""
    return type(name, (Gather,), {"name": name, "saves": saves})


class ViewGather(Function):
    """A rearrangement PyTorch makes a view: the forward is a numpy view (``take``);
    the gradient puts ``g`` back at ``take(arange)``."""

    name = "ViewGather"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR
    is_view = True
    take: ClassVar[Callable[..., np.ndarray]]

    @classmethod
    def forward(cls, ctx: Any, a: Tensor, **params: Any) -> Any:  # type: ignore[override]
        ctx.params, ctx.in_shape = params, a._data.shape
        return cls.take(a._data, **params)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> Tensor:  # type: ignore[override]
        index = _contig(cls.take(flat_index(ctx.in_shape), **ctx.params))
        return Put.apply(g, index=index, shape=ctx.in_shape)


# -- flip, roll --------------------------------------------------------------------------


class FlipBackward0(Gather):
    """flip's node; its gradient is PyTorch's ``grad.flip(dims)``: flipping undoes itself,
    so the same index selects it back (a FlipBackward0 again, not a Put)."""

    name = "FlipBackward0"
    saves = False

    @classmethod
    def backward(cls, ctx: Any, g: Tensor, *_ignored: Any) -> Tensor:
        return FlipBackward0.apply(g, index=ctx.index)


RollBackward0 = gather_flat("RollBackward0")


def _dims_list(dims: Any) -> tuple[Any, ...]:
    if isinstance(dims, (list, tuple)):
        return tuple(dims)
    return (dims,)


def _flip_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), (0,)),
        sample(S.rand(rng, 2, 3, 2), (0, -1), note="two dims"),
        sample(S.rand(rng, 4), [0], note="list"),
        sample(S.rand(rng), (), note="0-d, no dims"),
        sample(S.rand(rng, 0, 3), (1,), note="empty"),
    ]


@register(samples=_flip_samples)
def flip(input: Tensor, dims: Any) -> Tensor:
    """The elements in reverse order along ``dims`` (a copy, as in PyTorch)."""
    a = as_tensor(input)
    axes = normalize_dims(_dims_list(dims), a.ndim)
    index = _contig(np.flip(flat_index(a._data.shape), axes))
    return FlipBackward0.apply(a, index=index)


def _roll_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 1, 1),
        sample(S.rand(rng, 2, 3), -4, 0, note="negative, wraps"),
        sample(S.rand(rng, 2, 3), 2, note="flattened"),
        sample(S.rand(rng, 2, 3, 2), (1, 2), (0, 2), note="two dims"),
        sample(S.rand(rng), 3, note="0-d"),
        sample(S.rand(rng, 0, 3), 1, 1, note="empty"),
    ]


@register(samples=_roll_samples)
def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """The elements shifted cyclically by ``shifts`` along ``dims`` (flattened when None)."""
    a = as_tensor(input)
    sh = _dims_list(shifts)
    base = flat_index(a._data.shape)
    if dims is None:
        if not sh:
            raise BadArgumentsError("`shifts` required")
        if len(sh) != 1:
            raise BadArgumentsError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        index = np.roll(base.reshape(-1), int(sh[0])).reshape(a._data.shape)
    else:
        dd = _dims_list(dims)
        if len(sh) != len(dd):
            raise BadArgumentsError(
                f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(dd)}"
            )
        if a.ndim == 0:
            raise IndexOutOfRangeError(
                f"Dimension specified as {dd[0]} but tensor has no dimensions"
            )
        axes = tuple(normalize_dim(d, a.ndim) for d in dd)
        index = np.roll(base, tuple(int(s) for s in sh), axes) if a.ndim else base
    return RollBackward0.apply(a, index=_contig(index))


# -- repeat, tile, repeat_interleave ---------------------------------------------------------

RepeatBackward0 = gather_flat("RepeatBackward0")


def _repeat_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    try:
        sizes = shape_arg(args[1:])
        shape = tuple(getattr(args[0], "shape", ()))
    except Exception:
        return None
    if len(sizes) < len(shape):
        return None
    shape = (1,) * (len(sizes) - len(shape)) + shape
    return math.prod(abs(s) * n for s, n in zip(sizes, shape))


def _tile_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    dims = args[1] if len(args) > 1 else kwargs.get("dims", ())
    try:
        reps = tuple(int(d) for d in _dims_list(dims))
        shape = tuple(getattr(args[0], "shape", ()))
    except Exception:
        return None
    n = max(len(reps), len(shape))
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - len(shape)) + shape
    return math.prod(abs(s) * k for s, k in zip(reps, shape))


def _repeat(a: Tensor, reps: tuple[int, ...]) -> Tensor:
    if len(reps) < a.ndim:
        raise BadArgumentsError(
            "Number of dimensions of repeat dims can not be smaller than number of "
            "dimensions of tensor"
        )
    shape = (1,) * (len(reps) - a.ndim) + a._data.shape
    out_shape = tuple(s * r for s, r in zip(shape, reps))
    if any(s < 0 for s in out_shape):
        bad = next(s for s in out_shape if s < 0)
        raise BadArgumentsError(
            f"Trying to create tensor with negative dimension {bad}: {list(out_shape)}"
        )
    index = _contig(np.tile(flat_index(a._data.shape).reshape(shape), reps))
    return RepeatBackward0.apply(a, index=index)


def _repeat_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 2, 1),
        sample(S.rand(rng, 2, 3), 1, 2, 2, note="new leading dim"),
        sample(S.rand(rng, 3), (2, 2), note="sizes as a tuple"),
        sample(S.rand(rng), 3, note="0-d"),
        sample(S.rand(rng, 2, 3), 0, 1, note="zero repeats"),
    ]


@register(samples=_repeat_samples, function=False, estimate=_repeat_estimate)
def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """The tensor repeated ``sizes[i]`` times along each dim (a Tensor method in PyTorch)."""
    a = as_tensor(input)
    return _repeat(a, shape_arg(sizes))


def _tile_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), (2,), note="fewer reps than dims"),
        sample(S.rand(rng, 2, 3), (2, 1, 2), note="more reps than dims"),
        sample(S.rand(rng), (2,), note="0-d"),
    ]


@register(samples=_tile_samples, estimate=_tile_estimate)
def tile(input: Tensor, dims: Any) -> Tensor:
    """``repeat`` where missing leading repetitions count as 1 (NumPy's ``tile``)."""
    a = as_tensor(input)
    reps = tuple(int(d) for d in _dims_list(dims))
    reps = (1,) * (a.ndim - len(reps)) + reps
    return _repeat(a, reps)


def _repeats_array(repeats: Any) -> np.ndarray | int:
    if isinstance(repeats, Tensor):
        if repeats.dtype.kind not in "iu":
            raise BadArgumentsError("repeat_interleave only accept int32/int64 tensor")
        return repeats._data.astype(np.int64)
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)):
        raise BadArgumentsError("repeats must be an int or an integer tensor")
    return int(repeats)


def _interleave_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    a = args[0]
    repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
    if isinstance(repeats, Tensor):
        return int(np.abs(repeats._data).sum()) * max(math.prod(getattr(a, "shape", ())), 1)
    if isinstance(repeats, int):
        return abs(repeats) * math.prod(getattr(a, "shape", ()))
    return None


def _interleave_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 2, note="int, flattened"),
        sample(S.rand(rng, 2, 3), 2, dim=1, note="int, dim"),
        sample(S.rand(rng, 3, 2), Const(np.array([1, 0, 2])), dim=0, note="tensor repeats"),
        sample(S.rand(rng, 2, 2), Const(np.array([2])), dim=-1, note="one repeat broadcasts"),
        sample(S.rand(rng, 2, 2), Const(np.array([1, 2, 0, 1])), note="tensor, flattened"),
        sample(S.rand(rng), 3, note="0-d"),
    ]


def _repeat_indices(counts: Tensor) -> Tensor:
    """``repeat_interleave(counts)``: index ``i`` repeated ``counts[i]`` times, in counts' dtype."""
    c = counts._data
    if c.ndim > 1:
        raise BadArgumentsError("repeat_interleave only accept 1D vector as repeat")
    if c.dtype.kind not in "iu":
        raise KernelDtypeError(
            f"\"repeat_interleave_cpu\" not implemented for '{dtypes.type_name(c.dtype)}'"
        )
    c = c.reshape(-1)
    if (c < 0).any():
        raise BadArgumentsError("repeats can not be negative")
    return Tensor._make(np.repeat(np.arange(c.size, dtype=c.dtype), c))


@register(samples=_interleave_samples, estimate=_interleave_estimate)
def repeat_interleave(
    input: Tensor,
    repeats: Any = None,
    dim: int | None = None,
    *,
    output_size: int | None = None,
) -> Tensor:
    """Each element repeated ``repeats`` times (an int, or one count per element) along ``dim``;
    given only counts, each index repeated its count (``repeat_interleave(counts)``)."""

    a = as_tensor(input)
    if repeats is None:
        return _repeat_indices(a)
    reps = _repeats_array(repeats)
    if dim is None:
        a = reshape(a, -1)
        d = 0
    else:
        d = normalize_dim(dim, a.ndim)
    if a.ndim == 0:
        a = reshape(a, 1)
    size = a._data.shape[d]
    if isinstance(reps, int):
        if reps < 0:
            raise BadArgumentsError("Repeats must be non-negative")
        # PyTorch: unsqueeze, expand, clone, view (the result records ViewBackward0)
        u = unsqueeze(a, d + 1)
        big = expand(u, *(u._data.shape[: d + 1] + (reps,) + u._data.shape[d + 2 :]))
        shape = a._data.shape[:d] + (size * reps,) + a._data.shape[d + 1 :]
        result = view(contiguous(big), shape)
    else:
        if reps.ndim > 1:
            raise BadArgumentsError("repeats must be 0-dim or 1-dim tensor")
        if (reps < 0).any():
            raise BadArgumentsError("repeats can not be negative")
        if reps.size == 1:
            reps = np.full(size, int(reps.reshape(-1)[0]), np.int64)
        if reps.size != size:
            raise ShapeMismatchError(
                "repeats must have the same size as input along dim, but got "
                f"repeats.size(0) = {reps.size} and input.size({d}) = {size}"
            )
        index = np.repeat(np.arange(size, dtype=np.int64), reps)
        result = index_select(a, d, Tensor._make(index))
    if output_size is not None and result._data.shape[d] != output_size:
        raise BadArgumentsError("allocated size does not match required size")
    return result


# -- views: narrow, unbind, movedim, diagonal ------------------------------------------------


def _narrow_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 4, 3), 0, 1, 2),
        sample(S.rand(rng, 4, 3), -1, -2, 2, note="negative dim and start"),
        sample(S.rand(rng, 4, 3), 1, 3, 0, note="empty"),
    ]


@register(samples=_narrow_samples)
def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """``length`` elements from ``start`` along ``dim``: a view (PyTorch's ``SliceBackward0``)."""
    a = as_tensor(input)
    if a.ndim == 0:
        raise IndexOutOfRangeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, a.ndim)
    size = a._data.shape[d]
    if isinstance(start, Tensor) and (start.ndim != 0 or start._data.dtype.kind not in "iu"):
        raise BadArgumentsError("start must be an 0-dim integral Tensor.")
    s = int(start.item() if isinstance(start, Tensor) else start)
    if length < 0:
        raise BadArgumentsError("narrow(): length must be non-negative.")
    if not -size <= s <= size:
        raise IndexOutOfRangeError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {s})"
        )
    s = s % size if s < 0 else s
    if s + length > size:
        raise BadArgumentsError(f"start ({s}) + length ({length}) exceeds dimension size ({size}).")
    return SliceBackward0.apply(a, key=slice_key(d, s, s + length))


class UnbindBackward0(Function):
    """Every slice along ``dim`` as a view; the gradient stacks them back."""

    name = "UnbindBackward0"
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int) -> tuple[np.ndarray, ...]:
        ctx.dim = dim
        x = a._data
        return tuple(x[(slice(None),) * dim + (i,)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> Tensor:
        return stack(list(grads), ctx.dim)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 2)),
        sample(S.rand(rng, 3, 2), 1, note="dim 1"),
        sample(S.rand(rng, 2, 3, 2), -2, note="negative dim"),
    ],
    results=Results("dim_size"),
    estimate=estimates.unbind,
)
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, each a view without that dim."""
    a = as_tensor(input)
    if a.ndim == 0:
        raise IndexOutOfRangeError("Dimension specified as 0 but tensor has no dimensions")
    return tuple(UnbindBackward0.apply(a, dim=normalize_dim(dim, a.ndim)))


def _movedim_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3, 4), 0, 2),
        sample(S.rand(rng, 2, 3, 4), (0, 1), (2, 0), note="two dims"),
        sample(S.rand(rng, 2, 3, 4), -1, 0, note="negative"),
        sample(S.rand(rng), 0, 0, note="0-d"),
    ]


def _dim_seq(value: Any) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


@register(samples=_movedim_samples)
def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """The dims ``source`` moved to positions ``destination`` (a permute view)."""

    a = as_tensor(input)
    src, dst = _dim_seq(source), _dim_seq(destination)
    if len(src) != len(dst):
        raise BadArgumentsError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    nd = a.ndim
    s = [normalize_dim(d, nd) for d in src]
    t = [normalize_dim(d, nd) for d in dst]
    if len(set(s)) != len(s):
        raise BadArgumentsError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(t)) != len(t):
        raise BadArgumentsError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:  # PyTorch: a 0-d tensor comes back as an alias
        return AliasBackward0.apply(a)
    order = [-1] * nd
    for i, j in zip(s, t):
        order[j] = i
    rest = iter(d for d in range(nd) if d not in s)
    order = [o if o >= 0 else next(rest) for o in order]
    return permute(a, *order)


@register(samples=_movedim_samples, torch="moveaxis")
def moveaxis(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Alias of ``movedim`` (NumPy's name)."""
    return movedim(input, source, destination)


def diagonal_view(x: np.ndarray, offset: int, dim1: int, dim2: int) -> np.ndarray:
    """The diagonal as a writeable strided view (``np.diagonal``'s is read-only), moved last."""
    n1, n2 = x.shape[dim1], x.shape[dim2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        start = [0] * x.ndim
        start[dim2] = min(offset, n2)
    else:
        length = max(min(n1 + offset, n2), 0)
        start = [0] * x.ndim
        start[dim1] = min(-offset, n1)
    sub = x[tuple(slice(s, None) for s in start)]
    keep = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    shape = tuple(x.shape[d] for d in keep) + (length,)
    strides = tuple(x.strides[d] for d in keep) + (x.strides[dim1] + x.strides[dim2],)
    return np.lib.stride_tricks.as_strided(sub, shape, strides, writeable=x.flags.writeable)


class DiagonalBackward0(ViewGather):
    name = "DiagonalBackward0"
    take = staticmethod(diagonal_view)


class _DiagonalCopy(Gather):
    """``diag`` of a matrix: PyTorch copies the diagonal (``DiagonalBackward0_copy``)."""

    name = "DiagonalBackward0_copy"
    saves = False


def _diag_dims(nd: int, dim1: int, dim2: int) -> tuple[int, int]:
    d1, d2 = normalize_dim(dim1, nd), normalize_dim(dim2, nd)
    if d1 == d2:
        raise BadArgumentsError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diagonal_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4)),
        sample(S.rand(rng, 3, 4), 1, note="above"),
        sample(S.rand(rng, 3, 4), -2, note="below"),
        sample(S.rand(rng, 2, 3, 4), 0, 2, 0, note="batched dims"),
        sample(S.rand(rng, 3, 4), 5, note="past the end: empty"),
    ]


@register(samples=_diagonal_samples)
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The ``offset`` diagonal of the (``dim1``, ``dim2``) planes, as a last dim (a view)."""
    a = as_tensor(input)
    d1, d2 = _diag_dims(a.ndim, dim1, dim2)
    return DiagonalBackward0.apply(a, offset=int(offset), dim1=d1, dim2=d2)


class DiagEmbedBackward0(Function):
    """The adjoint of diagonal: the input written on a diagonal of zeros."""

    name = "DiagEmbedBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...], index: np.ndarray) -> np.ndarray:
        ctx.index = index
        return put_add(a._data, index, shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _Unsaved.apply(g, index=ctx.index)


def _embed(a: Tensor, offset: int, dim1: int, dim2: int) -> Tensor:
    nd = a.ndim + 1
    d1, d2 = _diag_dims(nd, dim1, dim2)
    n = a._data.shape[-1] + abs(offset)
    rest = iter(a._data.shape[:-1])
    shape = tuple(n if d in (d1, d2) else next(rest) for d in range(nd))
    index = _contig(diagonal_view(flat_index(shape), offset, d1, d2))
    return DiagEmbedBackward0.apply(a, shape=shape, index=index)


def _diag_embed_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3)),
        sample(S.rand(rng, 2, 3), 1, note="offset"),
        sample(S.rand(rng, 2, 3), -1, 0, 2, note="dims"),
    ]


def _embed_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """A vector of n becomes an n x n matrix: the result outgrows the input."""
    shape = tuple(getattr(args[0], "shape", ()))
    offset = args[1] if len(args) > 1 else kwargs.get("offset", kwargs.get("diagonal", 0))
    if not shape or not isinstance(offset, int):
        return None
    n = shape[-1] + abs(offset)
    return math.prod(shape[:-1]) * n * n


@register(samples=_diag_embed_samples, estimate=_embed_estimate)
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims ``dim1``, ``dim2``) whose ``offset`` diagonal is the last dim of input."""
    a = as_tensor(input)
    if a.ndim == 0:
        raise IndexOutOfRangeError(
            "Dimension out of range (expected to be in range of [-1, 0], but got -2)"
        )
    return _embed(a, int(offset), dim1, dim2)


def _diag_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3), note="vector to matrix"),
        sample(S.rand(rng, 3), -1, note="vector, below"),
        sample(S.rand(rng, 3, 4), note="matrix to vector"),
        sample(S.rand(rng, 3, 4), 2, note="matrix, above"),
    ]


@register(out_overlap="unchecked", samples=_diag_samples, estimate=_embed_estimate)
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector's diagonal matrix, or a matrix's diagonal (a copy)."""
    a = as_tensor(input)
    if a.ndim == 1:
        return _embed(a, int(diagonal), 0, 1)
    if a.ndim != 2:
        raise BadArgumentsError(f"diag(): Supports 1D or 2D tensors. Got {a.ndim}D")
    index = _contig(diagonal_view(flat_index(a._data.shape), int(diagonal), 0, 1))
    return _DiagonalCopy.apply(a, index=index)


class TraceBackward0(Function):
    name = "TraceBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_shape = a._data.shape
        with np.errstate(all="ignore"):
            return np.asarray(np.trace(a._data), a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        index = _contig(diagonal_view(flat_index(ctx.in_shape), 0, 0, 1))
        return Put.apply(expand(g, index.shape[0]), index=index, shape=ctx.in_shape)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 3)),
        sample(S.rand(rng, 2, 4), note="wide"),
        sample(S.rand(rng, 0, 2), note="empty"),
    ]
)
def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal."""
    a = as_tensor(input)
    if a.ndim != 2:
        raise BadArgumentsError(f"trace: expected a matrix, but got tensor with dim {a.ndim}")
    if a.dtype.kind in "biu":
        return Tensor._make(np.asarray(np.trace(a._data), dtypes.int64))
    return TraceBackward0.apply(a)
