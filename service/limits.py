"""Size estimates: how many elements an op will allocate, read from its arguments before
it runs, so a request over ``max_tensor_elements`` is refused before the allocation."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from engine import Tensor


def _shape_of(args: Sequence[Any]) -> tuple[int, ...] | None:
    """Integers given as ``f(2, 3)`` or ``f((2, 3))`` or ``f([2, 3])``."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = args[0]
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return tuple(args)
    return None


def _may_grow(op: str, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """Whether there is anything to estimate: not for an op on one tensor and numbers
    (the commonest step), whose result is no larger than its input; a quick look at the
    arguments' types, before the walk through them."""
    if kwargs or op in _GROWING_OPS:
        return True
    tensors = 0
    for a in args:
        if type(a) is Tensor:
            tensors += 1
        elif type(a) not in (float, int, bool):
            return True  # a list of tensors, an index: let the estimate look
    return tensors >= 2  # (_plain_op gives the same answer for names and numbers)


def _tensors_in(values: Iterable[Any]) -> list[Tensor]:
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, list | tuple):
            out.extend(_tensors_in(v))
    return out


def _creation_estimate(op: str, args: list[Any], kwargs: dict[str, Any]) -> int | None:
    size = kwargs.get("size", kwargs.get("shape"))
    if op in ("zeros", "ones", "rand", "randn", "empty"):
        shape = _shape_of(args if size is None else [size])
        return None if shape is None else math.prod(max(d, 0) for d in shape)
    if op == "full":
        shape = _shape_of([size if size is not None else (args[0] if args else ())])
        return None if shape is None else math.prod(max(d, 0) for d in shape)
    if op == "eye":
        n = kwargs.get("n", args[0] if args else 0)
        m = kwargs.get("m", args[1] if len(args) > 1 else n)
        if isinstance(n, int) and isinstance(m, int | type(None)):
            return max(n, 0) * max(m if m is not None else n, 0)
        return None
    if op == "linspace":
        steps = kwargs.get("steps", args[2] if len(args) > 2 else None)
        return steps if isinstance(steps, int) else None
    if op == "arange":
        nums = [a for a in args if isinstance(a, int | float) and not isinstance(a, bool)]
        start, end, step = 0.0, 0.0, 1.0
        if len(nums) == 1:
            end = nums[0]
        elif len(nums) >= 2:
            start, end = nums[0], nums[1]
            step = nums[2] if len(nums) > 2 else kwargs.get("step", 1.0)
        start = kwargs.get("start", start)
        end = kwargs.get("end", end)
        step = kwargs.get("step", step)
        try:
            count = math.ceil((float(end) - float(start)) / float(step))
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return None
        return max(count, 0) if math.isfinite(count) else None
    return None


CREATION_OPS = frozenset(
    {"zeros", "ones", "rand", "randn", "empty", "full", "eye", "linspace", "arange"}
)
_GROWING_OPS = CREATION_OPS | {"expand", "broadcast_to"}  # results sized by their arguments


def estimate_elements(op: str, args: list[Any], kwargs: dict[str, Any]) -> int | None:
    """An upper estimate of the largest tensor ``op`` will allocate, before it runs.

    Creation ops read their size arguments; ``expand`` its sizes; ``matmul`` the
    two shapes; ``outer``, ``cat``, ``stack`` and tensor indexing their inputs'
    sizes; anything else the broadcast of its tensor arguments (shapes that cannot
    broadcast are the engine's ``shape_mismatch`` to report). The result is
    checked again after the op, so an estimate only has to catch the huge."""
    if not _may_grow(op, args, kwargs):
        return None
    try:
        if op in CREATION_OPS:
            return _creation_estimate(op, args, kwargs)
        tensors = _tensors_in(list(args) + list(kwargs.values()))
        if op in ("expand", "broadcast_to") and tensors:
            sizes = _shape_of(args[1:] if "shape" not in kwargs else [kwargs["shape"]])
            if sizes is not None:
                given = tensors[0].shape
                offset = len(sizes) - len(given)
                dims = [
                    given[i - offset] if d == -1 and i >= offset else d for i, d in enumerate(sizes)
                ]
                return math.prod(max(d, 0) for d in dims)
        if op in ("matmul", "mm", "bmm") and len(tensors) >= 2:
            a, b = tensors[0].shape, tensors[1].shape
            rows = a[-2] if len(a) >= 2 else 1
            cols = b[-1] if len(b) >= 2 else 1
            batch = np.broadcast_shapes(a[:-2], b[:-2]) if len(a) > 2 or len(b) > 2 else ()
            return math.prod(batch) * rows * cols
        if op in ("outer", "cat", "stack", "getitem") and tensors:
            # outer: |a| * |b|; cat/stack: the sum; indexing by a tensor: index x rows
            if op == "outer":
                return math.prod(t.data.size for t in tensors[:2])
            if op == "getitem":
                rows = math.prod(tensors[0].shape[1:]) if tensors[0].ndim else 1
                return max(tensors[0].data.size, sum(t.data.size for t in tensors[1:]) * rows)
            return sum(t.data.size for t in tensors)
        if len(tensors) >= 2:
            return math.prod(np.broadcast_shapes(*(t.shape for t in tensors)))
    except (ValueError, TypeError, IndexError):
        return None
    return None
