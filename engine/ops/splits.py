"""``tensor_split`` and its ``hsplit``/``vsplit``/``dsplit`` forms: views of an input cut
into sections or at indices along a dim. Each piece is one slice (PyTorch's
``SliceBackward0``), so the gradient needs no rule of its own."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..errors import ArgumentTypeError, BadArgumentsError
from ..primitives import SliceBackward0, slice_key
from ..registry import OPS, Const, Results, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, normalize_dim
from .shape import SplitBackward0

_SIGNATURES = (
    "received an invalid combination of arguments - got ({got}), but expected one of:\n"
    " * (Tensor input, tuple of ints indices, int dim = 0)\n"
    " * (Tensor input, Tensor tensor_indices_or_sections, int dim = 0)\n"
    " * (Tensor input, int sections, int dim = 0)\n"
)


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _cuts(a: Tensor, sections: Any, op: str) -> int | list[int]:
    """The section count, or the cut indices, from an int, ints or a long tensor."""
    if isinstance(sections, Tensor):
        if sections._data.dtype != dtypes.int64:
            raise BadArgumentsError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but "
                f"got {dtypes.type_name(sections._data.dtype)}"
            )
        if sections.ndim > 1:
            raise BadArgumentsError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {sections.ndim} dims"
            )
        values = sections._data.tolist()
        return int(values) if sections.ndim == 0 else [int(v) for v in values]
    if _is_int(sections):
        return int(sections)
    if isinstance(sections, list | tuple) and all(_is_int(v) for v in sections):
        return [int(v) for v in sections]
    got = ", ".join(["Tensor", type(sections).__name__])
    raise ArgumentTypeError(f"{op}() " + _SIGNATURES.format(got=got))


def _pieces(a: Tensor, cuts: int | list[int], d: int) -> tuple[Tensor, ...]:
    size = a._data.shape[d]
    if isinstance(cuts, int):
        if cuts <= 0:
            raise BadArgumentsError(f"number of sections must be larger than 0, got {cuts}")
        small, extra = divmod(size, cuts)
        bounds, start = [], 0
        for k in range(cuts):
            stop = start + small + (1 if k < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        bounds, start = [], 0
        for index in [*cuts, size]:
            r = range(size)[slice(start, index)]  # PyTorch's slice: clamped, negatives wrap
            bounds.append((r.start, max(r.start, r.stop)))
            start = index
    return tuple(SliceBackward0.apply(a, key=slice_key(d, s, e)) for s, e in bounds)


def _split_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 7, 2), 3, note="uneven sections"),
        sample(S.rand(rng, 2, 6), [1, 4], dim=1, note="indices"),
        sample(S.rand(rng, 5), [3, 1, -1], note="decreasing and negative indices"),
        sample(S.rand(rng, 4, 3), Const(np.array(2)), note="a 0-d long tensor"),
        sample(S.rand(rng, 4, 3), Const(np.array([1, 3])), note="a 1-d long tensor"),
        sample(S.rand(rng, 0, 3), 2, note="empty"),
    ]


@register(
    samples=_split_samples,
    results=Results("sections", arg="indices_or_sections"),
    estimate=estimates.sections,
)
def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views cut into ``n`` near-equal sections (the first ``size % n`` one longer), or
    at the given indices, along ``dim``."""
    a = as_tensor(input)
    if a.ndim == 0:
        raise BadArgumentsError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    cuts = _cuts(a, indices_or_sections, "tensor_split")
    return _pieces(a, cuts, normalize_dim(dim, a.ndim))


def _directional(op: str, a: Tensor, sections: Any, dim: int, need: int) -> tuple[Tensor, ...]:
    a = as_tensor(a)
    if a.ndim < need:
        raise BadArgumentsError(
            f"torch.{op} requires a tensor with at least {need} dimension, but got a tensor "
            f"with {a.ndim} dimensions!"
        )
    cuts = _cuts(a, sections, op)
    if isinstance(cuts, int) and (cuts == 0 or a._data.shape[dim] % cuts):
        raise BadArgumentsError(
            f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
            f"{a._data.shape[dim]} is not divisible by the split_size {cuts}!"
        )
    return _pieces(a, cuts, dim)


def _hsplit_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 6), 3, note="sections"),
        sample(S.rand(rng, 6), [2, 5], note="1-d: along dim 0"),
    ]


@register(samples=_hsplit_samples, results=Results("sections", arg="indices_or_sections"))
def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 1 (dim 0 of a vector); sections must divide it."""
    a = as_tensor(input)
    return _directional("hsplit", a, indices_or_sections, 0 if a.ndim == 1 else 1, 1)


@register(
    samples=lambda rng: [sample(S.rand(rng, 4, 3), 2), sample(S.rand(rng, 5, 2), [1, 3])],
    results=Results("sections", arg="indices_or_sections"),
)
def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 0 of a tensor of at least 2 dims; sections must divide it."""
    return _directional("vsplit", as_tensor(input), indices_or_sections, 0, 2)


@register(
    samples=lambda rng: [sample(S.rand(rng, 2, 1, 4), 2), sample(S.rand(rng, 1, 2, 5), [1, 3])],
    results=Results("sections", arg="indices_or_sections"),
)
def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 2 of a tensor of at least 3 dims; sections must divide it."""
    return _directional("dsplit", as_tensor(input), indices_or_sections, 2, 3)


# -- split's other spellings ------------------------------------------------------------------


class UnsafeSplitBackward0(SplitBackward0):
    """``unsafe_split``/``unsafe_chunk``: pieces autograd does not track as views."""

    name = "UnsafeSplitBackward0"
    is_view = False

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, sizes: tuple[int, ...], dim: int) -> tuple[np.ndarray, ...]:
        ctx.dim = dim
        bounds = np.cumsum(sizes)[:-1].tolist()
        # PyTorch's pieces share the input's memory (an in-place write to one reaches the
        # input) though autograd does not track them as views, nor shares their versions
        return tuple(np.split(a._data, bounds, axis=dim))


def _with_sizes_samples(rng: np.random.Generator) -> list[Any]:
    return [sample(S.rand(rng, 5, 2), [2, 3]), sample(S.rand(rng, 2, 6), [1, 0, 5], dim=1)]


@register(samples=_with_sizes_samples, results=Results("split", arg="split_sizes"))
def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of the given sizes along ``dim`` (they must add up to its size)."""
    if not isinstance(split_sizes, list | tuple):
        raise ArgumentTypeError(
            "split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not "
            f"{type(split_sizes).__name__}"
        )
    return OPS["split"].fn(input, list(split_sizes), dim)


@register(
    samples=lambda rng: [sample(S.rand(rng, 5, 2), 2), sample(S.rand(rng, 2, 6), 3, 1)],
    results=Results("split", arg="split_size"),
)
def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``split`` whose pieces autograd does not track as views of ``input``."""
    pieces = OPS["split"].fn(input, split_size, dim)  # split's checks and messages
    a = as_tensor(input)
    d = normalize_dim(dim, a.ndim)
    sizes = tuple(p.shape[d] for p in pieces)
    return UnsafeSplitBackward0.apply(a, sizes=sizes, dim=d)


@register(
    samples=lambda rng: [sample(S.rand(rng, 6, 2), 3), sample(S.rand(rng, 2, 5), 3, 1)],
    results=Results("chunk", arg="chunks"),
)
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunk`` whose pieces autograd does not track as views of ``input``."""
    pieces = OPS["chunk"].fn(input, chunks, dim)
    a = as_tensor(input)
    d = normalize_dim(dim, a.ndim)
    return UnsafeSplitBackward0.apply(a, sizes=tuple(p.shape[d] for p in pieces), dim=d)
