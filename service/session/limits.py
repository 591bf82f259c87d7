"""Size estimates: how many elements an op will allocate, read from its arguments before
it runs, so a request over ``max_tensor_elements`` is refused before the allocation.

An op's own estimate is a fact of its registration (``engine.estimates``); here only the
generic reading of those facts."""

from __future__ import annotations

from typing import Any

from engine import OPS, Tensor, estimates

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
    if not _may_grow(op, args, kwargs):
        return None
    spec = OPS.get(op)
    try:
        if spec is not None and spec.estimate is not None:
            return spec.estimate(tuple(args), kwargs)
        return estimates.broadcast(estimates.tensors_in(list(args) + list(kwargs.values())))
    except (ValueError, TypeError, IndexError, RuntimeError, ArithmeticError):
        return None  # arguments of the wrong kind: the op itself refuses them
