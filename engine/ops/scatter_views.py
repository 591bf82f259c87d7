"""The view-scatter ops (``slice_scatter``, ``select_scatter``, ``diagonal_scatter``: a
copy of the input with ``src`` written where the view would read), aten's ``slice``,
and the multi-result ``*_copy`` ops (``split_with_sizes_copy``, ``unbind_copy``).

A scatter finds where its view reads by running the view op itself on the positions
``arange(input.numel())``, so its checks and messages are the view's; its gradient is
``g`` with that region zeroed for the input and the region of ``g`` for ``src``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import estimates
from ..errors import BadArgumentsError
from ..primitives import SliceBackward0, slice_key
from ..registry import OPS, Results, register, sample
from ..tensor import Tensor
from ..views import _ReplaceRegion
from . import samples as S
from ._composite import composite
from ._util import as_tensor, normalize_dim


def _region(a: Tensor, view: str, *args: Any) -> np.ndarray:
    """The flat positions in ``a`` that ``view(a, *args)`` reads."""
    where = Tensor._make(np.arange(a._data.size, dtype=np.int64).reshape(a._data.shape))
    return np.array(OPS[view].fn(where, *args)._data)


def _scatter_into(name: str, a: Tensor, src: Any, index: np.ndarray) -> Tensor:
    s = as_tensor(src)
    if tuple(s._data.shape) != index.shape:
        raise BadArgumentsError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(s._data.shape)}, slice size = {list(index.shape)}"
        )
    if s._data.dtype != a._data.dtype:
        s = s.to(a.dtype)
    return _SCATTERS[name].apply(a, s, index=index)


def _named(name: str) -> type[_ReplaceRegion]:
    return type(name, (_ReplaceRegion,), {"name": name, "__doc__": f"PyTorch's {name}."})


_SCATTERS = {
    n: _named(n)
    for n in ("SliceScatterBackward0", "SelectScatterBackward0", "DiagonalScatterBackward0")
}


def _slice_bounds(n: int, start: Any, end: Any, step: int) -> tuple[int, int]:
    """aten's slice: missing bounds are the ends, negatives wrap, all clamped."""
    if step <= 0:
        raise BadArgumentsError("slice step must be positive")
    s = 0 if start is None else int(start)
    e = n if end is None else int(end)
    s = max(s + n, 0) if s < 0 else min(s, n)
    e = max(e + n, 0) if e < 0 else min(e, n)
    return s, max(s, e)


def _slice(a: Tensor, dim: int, start: Any, end: Any, step: int) -> Tensor:
    if a.ndim == 0:
        raise BadArgumentsError("slice() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, a.ndim)
    s, e = _slice_bounds(a._data.shape[d], start, end, int(step))
    return SliceBackward0.apply(a, key=slice_key(d, s, e, int(step)))


@register(
    "slice",
    samples=lambda rng: [
        sample(S.rand(rng, 3)),
        sample(S.rand(rng, 4, 6), 1, 1, -2, note="negative end"),
        sample(S.rand(rng, 4, 6), 1, 1, None, 3, note="step"),
        sample(S.rand(rng, 5, 2), 0, -10, 9, note="bounds clamped"),
    ],
    method=False,
    torch=lambda torch, *a, **k: torch.ops.aten.slice.Tensor(*a, **k),
)
def slice_(
    input: Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
) -> Tensor:
    """aten's ``slice``: ``input[start:end:step]`` along ``dim``, a view."""
    return _slice(as_tensor(input), dim, start, end, step)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 4, 5), S.rand(rng, 2, 5), 0, 1, 3),
        sample(S.rand(rng, 4, 6), S.rand(rng, 4, 2), 1, 1, None, 3, note="step"),
        sample(S.rand(rng, 3), S.rand(rng, 3), note="everything"),
    ]
)
def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[start:end:step]`` along ``dim``."""
    a = as_tensor(input)
    where = Tensor._make(np.arange(a._data.size, dtype=np.int64).reshape(a._data.shape))
    index = np.array(_slice(where, dim, start, end, step)._data)
    return _scatter_into("SliceScatterBackward0", a, src, index)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4, 2), S.rand(rng, 3, 2), 1, 2),
        sample(S.rand(rng, 3, 4), S.rand(rng, 4), -2, -1, note="negative dim and index"),
        sample(S.rand(rng, 5), S.rand(rng), 0, 2, note="a vector"),
    ]
)
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.select(dim, index)``."""
    a = as_tensor(input)
    return _scatter_into("SelectScatterBackward0", a, src, _region(a, "select", dim, index))


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 4, 4), S.rand(rng, 4)),
        sample(S.rand(rng, 3, 5), S.rand(rng, 3), 2, note="offset"),
        sample(S.rand(rng, 2, 3, 4), S.rand(rng, 3, 2), 0, 0, 2, note="dims"),
    ]
)
def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """A copy of ``input`` with ``src`` written into its diagonal (``diagonal``'s args)."""
    a = as_tensor(input)
    index = _region(a, "diagonal", offset, dim1, dim2)
    return _scatter_into("DiagonalScatterBackward0", a, src, index)


# -- the multi-result copies -----------------------------------------------------------------


def _nothing(need: Any) -> tuple[bool, ...]:
    return (False,)


def _copies(grad_name: str, pieces: int, view: Any, a: Tensor) -> tuple[Tensor, ...]:
    return tuple(
        composite(grad_name, lambda x, k: view(x)[k], a, k=k, saves=_nothing) for k in range(pieces)
    )


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 5, 2), [2, 3]),
        sample(S.rand(rng, 2, 6), [1, 0, 5], dim=-1, note="an empty piece"),
    ],
    method=False,
    results=Results("split", arg="split_sizes"),
    estimate=estimates.split,
)
def split_with_sizes_copy(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``split_with_sizes`` into fresh memory."""
    a = as_tensor(input)
    pieces = OPS["split_with_sizes"].fn(a, split_sizes, dim)  # its checks and messages
    fn = OPS["split_with_sizes"].fn
    return _copies(
        "SplitWithSizesBackward0_copy", len(pieces), lambda x: fn(x, split_sizes, dim), a
    )


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 2)), sample(S.rand(rng, 2, 4), -1, note="dim")],
    method=False,
    results=Results("dim_size"),
    estimate=estimates.unbind,
)
def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """``unbind`` into fresh memory."""
    a = as_tensor(input)
    n = len(OPS["unbind"].fn(a, dim))  # its checks and messages
    fn = OPS["unbind"].fn
    return _copies("UnbindBackward0_copy", n, lambda x: fn(x, dim), a)
