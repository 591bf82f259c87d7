"""Size estimates: an upper bound of the elements a call will allocate, read from
its arguments before it runs, for ops whose result can be much larger than their
inputs (``zeros(10**9)``, ``x.expand(...)``, ``a @ b``). Registered with the op
(``@register(estimate=...)``); the service refuses a call whose estimate is over
its limit before the engine allocates anything.

An estimate sees the call's arguments as given (tensors, or, before name
resolution, strings): anything with a ``shape`` is a tensor. It returns None
when it cannot tell; the service checks the result's size again afterwards, so
an estimate only has to catch the huge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "shape") and not isinstance(v, list | tuple | np.ndarray)


def tensors_in(values: Iterable[Any]) -> list[Any]:
    """The tensors among the values, nested lists included."""
    out = []
    for v in values:
        if _is_tensor(v):
            out.append(v)
        elif isinstance(v, list | tuple):
            out.extend(tensors_in(v))
    return out


def shape_of(args: Sequence[Any]) -> tuple[int, ...] | None:
    """Integers given as ``f(2, 3)`` or ``f((2, 3))`` or ``f([2, 3])``."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = args[0]
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return tuple(args)
    return None


def _elements(shape: tuple[int, ...] | None) -> int | None:
    return None if shape is None else math.prod(max(d, 0) for d in shape)


# -- creation ops: sized by their arguments ---------------------------------------------


def sized(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``zeros(2, 3)``, ``ones((2, 3))``, ``rand(size=...)``."""
    size = kwargs.get("size", kwargs.get("shape"))
    return _elements(shape_of(args if size is None else [size]))


def full(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    size = kwargs.get("size", args[0] if args else ())
    return _elements(shape_of([size]))


def eye(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    n = kwargs.get("n", args[0] if args else 0)
    m = kwargs.get("m", args[1] if len(args) > 1 else n)
    if isinstance(n, int) and isinstance(m, int | type(None)):
        return max(n, 0) * max(m if m is not None else n, 0)
    return None


def linspace(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    steps = kwargs.get("steps", args[2] if len(args) > 2 else None)
    return steps if isinstance(steps, int) else None


def arange(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
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


# -- ops on tensors whose result outgrows their inputs ----------------------------------


def expand(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``x.expand(*sizes)`` / ``broadcast_to(x, shape)``: -1 keeps the input's size."""
    if not args or not _is_tensor(args[0]):
        return None
    size = kwargs.get("shape", kwargs.get("size"))
    sizes = shape_of(args[1:] if size is None else [size])
    if sizes is None:
        return None
    given = args[0].shape
    offset = len(sizes) - len(given)
    return _elements(
        tuple(given[i - offset] if d == -1 and i >= offset else d for i, d in enumerate(sizes))
    )


def matmul(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Batch (broadcast) x rows of the first x columns of the second."""
    tensors = tensors_in(list(args) + list(kwargs.values()))
    if len(tensors) < 2:
        return None
    a, b = tensors[0].shape, tensors[1].shape
    rows = a[-2] if len(a) >= 2 else 1
    cols = b[-1] if len(b) >= 2 else 1
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2]) if len(a) > 2 or len(b) > 2 else ()
    except ValueError:
        return None  # the op reports the mismatch in its own words
    return math.prod(batch) * rows * cols


def outer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    tensors = tensors_in(list(args) + list(kwargs.values()))
    return math.prod(math.prod(t.shape) for t in tensors[:2]) if len(tensors) >= 2 else None


def total(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``cat``/``stack``: the sum of the inputs' sizes."""
    tensors = tensors_in(list(args) + list(kwargs.values()))
    return sum(math.prod(t.shape) for t in tensors) if tensors else None


def getitem(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Indexing by tensors: index elements x the rows they pick (at least the input)."""
    tensors = tensors_in(list(args) + list(kwargs.values()))
    if len(tensors) < 2:
        return None  # basic indexing returns a view, never larger than the input
    shape = tensors[0].shape
    rows = math.prod(shape[1:]) if len(shape) else 1
    return max(math.prod(shape), sum(math.prod(t.shape) for t in tensors[1:]) * rows)


def broadcast(tensors: Sequence[Any]) -> int | None:
    """What an op without its own estimate allocates: its tensors' broadcast."""
    if len(tensors) < 2:
        return None
    try:
        return math.prod(np.broadcast_shapes(*(t.shape for t in tensors)))
    except ValueError:
        return None  # the op reports the mismatch (shape_mismatch)
