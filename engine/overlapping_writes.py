"""Elementwise in-place ops on a destination whose elements share memory (``unfold``
with step < size, ``as_strided`` with overlapping strides), as PyTorch computes them.

ATen refuses such a write only when a dim of stride 0 repeats an element; any other
self-overlapping layout is "too hard" to judge, and its TensorIterator loop simply runs:
element after element, each reading the memory the previous ones wrote (within one
inner row the addresses are distinct, so vectorised rows read nothing stale). An
element seen k times is updated k times: ``x.unfold(0, 3, 1).add_(1)`` on five values
adds [1, 2, 3, 2, 1]. Computing the op once out of place and writing it back (what the
engine does elsewhere) would add 1 everywhere. Here the loop is replayed in rounds:
round r updates each address's r-th visit, in TensorIterator's order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def self_overlaps(a: np.ndarray) -> bool:
    """Whether two elements of ``a`` (no stride 0 among its repeated dims: those are
    refused before) share a memory location. Dense layouts answer at once."""
    if a.size < 2 or a.flags.c_contiguous or a.flags.f_contiguous:
        return False
    dims = sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n > 1)
    reach = 0  # bytes spanned by the inner dims so far, minus one element
    for st, n in dims:
        if st <= reach:
            break
        reach += st * (n - 1)
    else:
        return False  # every dim steps past the ones inside it: distinct addresses
    return int(np.unique(offsets(a)).size) < a.size


def offsets(a: np.ndarray) -> np.ndarray:
    """Each element's distance in elements from ``a``'s lowest address, in ``a``'s shape."""
    out = np.zeros(a.shape, dtype=np.int64)
    for d, (st, n) in enumerate(zip(a.strides, a.shape)):
        shape = [1] * a.ndim
        shape[d] = n
        out = out + (np.arange(n, dtype=np.int64) * (st // a.itemsize)).reshape(shape)
    return out - (out.min() if out.size else 0)


def iteration_order(a: np.ndarray) -> list[int]:
    """TensorIterator's dims for the written tensor, outermost first: smaller strides
    inside, equal strides ordered by size (its ``reorder_dimensions``)."""
    perm = list(range(a.ndim))[::-1]  # innermost first
    strides, shape = a.strides, a.shape
    for i in range(1, len(perm)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            s0, s1 = strides[perm[d0]], strides[perm[d1]]
            if s0 == 0 or s1 == 0:
                swap = 0
            elif s0 != s1:
                swap = 1 if s0 > s1 else -1
            else:
                swap = 1 if shape[perm[d0]] > shape[perm[d1]] else 0
            if swap > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif swap < 0:
                break
    return perm[::-1]


def sequential(
    view: np.ndarray, step: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """The values ``view`` holds after the loop ran ``step`` on each of its elements in
    turn. ``step(current, where)`` computes the op on the view-shaped ``current`` values
    (``where``: the flat positions of the view updated this round; others are ignored)."""
    off = offsets(view)
    order = iteration_order(view)
    visit = off.transpose(order).reshape(-1)  # addresses in the loop's order
    position = np.arange(view.size).reshape(view.shape).transpose(order).reshape(-1)
    by_address = np.argsort(visit, kind="stable")
    sorted_addr = visit[by_address]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_addr)) + 1]
    group = np.cumsum(np.r_[0, np.diff(sorted_addr) != 0])
    rank = np.empty(view.size, dtype=np.int64)
    rank[by_address] = np.arange(view.size) - starts[group]
    memory = np.empty(int(off.max()) + 1, dtype=view.dtype)
    flat_off = off.reshape(-1)
    memory[flat_off] = view.reshape(-1)
    for r in range(int(rank.max()) + 1):
        where = position[rank == r]
        current = memory[off]
        new = np.asarray(step(current, where)).reshape(-1)
        memory[flat_off[where]] = new[where]
    return memory[off]
