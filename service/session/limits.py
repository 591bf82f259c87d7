"""Size estimates: how many elements an op will allocate, read from its arguments before
it runs, so a request over ``max_tensor_elements`` is refused before the allocation.

An op's own estimate is a fact of its registration (``engine.estimates``); here only the
generic reading of those facts."""

from __future__ import annotations

import math
from typing import Any

from engine import OPS, Tensor, estimates

from ..errors import LimitExceededError
from ..settings import Settings

# ops that make a tensor from numbers alone (their estimate needs no tensor): the batch
# weight can estimate them from a step's raw arguments
CREATION_OPS = frozenset(
    name
    for name, spec in OPS.items()
    if spec.estimate is not None and not spec.method and not spec.differentiable
)


def _may_grow(op: str, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """Whether there is anything to estimate: not for an op without its own estimate on
    one tensor and numbers (the commonest step), whose result is no larger than its
    input; a quick look at the arguments' types, before the walk through them."""
    if kwargs:
        return True
    spec = OPS.get(op)
    if spec is not None and spec.estimate is not None:
        return True
    tensors = 0
    for a in args:
        if type(a) is Tensor:
            tensors += 1
        elif type(a) not in (float, int, bool):
            return True  # a list of tensors, an index: let the estimate look
    return tensors >= 2  # (_plain_op gives the same answer for names and numbers)


def estimate_elements(op: str, args: list[Any], kwargs: dict[str, Any]) -> int | None:
    """An upper estimate of the largest tensor ``op`` will allocate, before it runs:
    the op's registered ``estimate``, else the broadcast of its tensor arguments
    (shapes that cannot broadcast are the engine's ``shape_mismatch`` to report). The
    result is checked again after the op, so an estimate only has to catch the huge."""
    spec = OPS.get(op)
    if not kwargs and (spec is None or spec.estimate is None):
        shapes = _plain_shapes(args)
        if shapes is not None:  # tensors and numbers only (the commonest call)
            return _broadcast_elements(shapes) if len(shapes) >= 2 else None
    if not _may_grow(op, args, kwargs):
        return None
    try:
        if spec is not None and spec.estimate is not None:
            return spec.estimate(tuple(args), kwargs)
        return estimates.broadcast(estimates.tensors_in(list(args) + list(kwargs.values())))
    except (ValueError, TypeError, IndexError, RuntimeError, ArithmeticError):
        return None  # arguments of the wrong kind: the op itself refuses them


_NUMBERS = (float, int, bool)


def _plain_shapes(args: list[Any]) -> list[tuple[int, ...]] | None:
    """The shapes of the tensors among ``args`` when the rest are numbers, else None."""
    shapes = []
    for a in args:
        kind = type(a)
        if kind is Tensor:
            shapes.append(a._data.shape)
        elif kind not in _NUMBERS:
            return None
    return shapes


def _broadcast_elements(shapes: list[tuple[int, ...]]) -> int | None:
    """``prod(np.broadcast_shapes(*shapes))``, pairwise; None when the shapes cannot
    broadcast (the op reports the mismatch in its own words)."""
    out = shapes[0]
    for shape in shapes[1:]:
        if shape == out:
            continue
        a, b = (out, shape) if len(out) >= len(shape) else (shape, out)
        lead = len(a) - len(b)
        dims = list(a[:lead])
        for x, y in zip(a[lead:], b):
            if x == y or y == 1:
                dims.append(x)
            elif x == 1:
                dims.append(y)
            else:
                return None
        out = tuple(dims)
    return math.prod(out)


def check_work(op: str, args: list[Any], kwargs: dict[str, Any], settings: Settings) -> None:
    """Refuse (413) an op whose registered ``work`` (multiply-adds of one numpy call, which
    no deadline can interrupt once it started: an SVD of a 4000 x 4000 matrix runs for
    half an hour) is more than the request's deadline allows at
    ``GRADSERVE_WORK_PER_SECOND``."""
    spec = OPS.get(op)
    if spec is None or spec.work is None:
        return
    try:
        work = spec.work(tuple(args), kwargs)
    except (ValueError, TypeError, IndexError, RuntimeError, ArithmeticError):
        return  # arguments of the wrong kind: the op itself refuses them
    budget = settings.request_seconds * settings.work_per_second
    if work is not None and work > budget:
        raise LimitExceededError(
            f"{op} would take about {work:.3g} multiply-adds; a request may take "
            f"{budget:.3g} ({settings.request_seconds:g} s of GRADSERVE_REQUEST_SECONDS at "
            f"GRADSERVE_WORK_PER_SECOND={settings.work_per_second:.3g})",
            status=413,
            hint="use smaller or fewer matrices per request",
        )
