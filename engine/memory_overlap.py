"""PyTorch's memory-overlap rules (ATen's ``MemoryOverlap``) on the engine's arrays.

A write whose destination repeats an element (an ``expand``ed tensor), or whose
destination shares memory with a source it reads, would read values it already
overwrote: PyTorch refuses such writes instead of computing something that depends
on the kernel's order. Tensors share memory when their numpy arrays do (views share
their base's buffer), so numpy's bounds test decides, as ATen's storage test does.
Works on anything with a ``_data`` array; imports no engine module but the errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import BadArgumentsError

INTERNAL_OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
PARTIAL_OVERLAP_MESSAGE = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation."
)

NO, FULL, PARTIAL, TOO_HARD = "no", "full", "partial", "too_hard"


def dense(a: np.ndarray) -> bool:
    """PyTorch's ``is_non_overlapping_and_dense``: the strides, sorted, are those of a
    contiguous layout (size-1 dims ignored)."""
    dims = sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def has_internal_overlap(a: np.ndarray) -> bool:
    """ATen's ``has_internal_overlap(...) == Yes``: a dim of stride 0 repeats an element
    (other self-overlapping layouts are "too hard" there, and pass)."""
    return bool(a.size) and any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape))


def overlap_status(a: Any, b: Any) -> str:
    """ATen's ``get_overlap_status`` of two tensors: the same tensor is a full overlap;
    an empty one or a layout it cannot judge (expanded) is no or "too hard"; else the
    byte ranges decide (full when equal with equal strides, partial when they meet)."""
    if a is b:
        return FULL
    x, y = getattr(a, "_data", None), getattr(b, "_data", None)
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.size == 0 or y.size == 0:
        return NO
    if not np.may_share_memory(x, y):  # numpy's bounds test in C: the common case
        return NO
    if not dense(x) or not dense(y):
        return TOO_HARD
    lo, hi = np.lib.array_utils.byte_bounds(x)
    blo, bhi = np.lib.array_utils.byte_bounds(y)
    if (lo, hi) == (blo, bhi):
        return FULL if x.strides == y.strides else PARTIAL
    return PARTIAL if lo < bhi and blo < hi else NO


def assert_no_internal_overlap(t: Any) -> None:
    if has_internal_overlap(t._data):
        raise BadArgumentsError(INTERNAL_OVERLAP_MESSAGE)


def assert_no_partial_overlap(a: Any, b: Any) -> None:
    """A source may be the destination itself (an elementwise kernel reads each element
    before writing it), never part of it."""
    if overlap_status(a, b) == PARTIAL:
        raise BadArgumentsError(PARTIAL_OVERLAP_MESSAGE)


def assert_no_overlap(a: Any, b: Any) -> None:
    """A source may share no memory with the destination (gathers, concatenations)."""
    if overlap_status(a, b) in (FULL, PARTIAL):
        raise BadArgumentsError(PARTIAL_OVERLAP_MESSAGE)
