"""``torch.autograd.forward_ad``: dual levels, dual tensors, and the generic rule.

``with dual_level():`` opens the one level PyTorch allows at a time;
``make_dual(primal, tangent)`` aliases ``primal`` with ``tangent`` attached, every
op call made inside propagates it (``engine.forward_rules``), and
``unpack_dual(t)`` reads it back. Leaving the level forgets every tangent made in
it. Read as ``engine.autograd.forward_ad`` (``engine.autograd`` exposes this module
under that name). Also the home of the fallback forward rule (``FROM_BACKWARD``):
the backward rule differentiated once more, which needs the backward engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

from . import dtypes, dual
from .autograd import grad
from .errors import ArgumentValueError, BadArgumentsError, ShapeMismatchError
from .forward_rules import settle, sum_against
from .function import Function, Node
from .grad_mode import _enabled, enable_grad
from .ops.indexing import AliasBackward0
from .tensor import Tensor

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]

NESTED_MESSAGE = "Nested forward mode AD is not supported at the moment"
NO_LEVEL_MESSAGE = (
    "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
    "enter_dual_level() first."
)
EXIT_NOT_LAST_MESSAGE = (
    "Trying to exit a forward AD level that was not the last one that was created. This is "
    "not supported."
)
EXIT_NONE_MESSAGE = "Dual level must be a positive number."
INVALID_LEVEL_MESSAGE = "Invalid level given to _make_dual"
ALREADY_DUAL_MESSAGE = (
    "Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
    "level {level} is not supported."
)
SIZE_MESSAGE = (
    "Trying to set a forward gradient that has a different size than that of the original "
    "Tensor, this is not supported. Tensor is of size {primal} while the given forward "
    "gradient is of size {tangent}."
)

F = TypeVar("F", bound=Callable[..., Any])


def _sizes(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _dtype(t: Tensor) -> str:
    return f"torch.{dtypes.torch_name(t._data.dtype)}"


def _level_number() -> int:
    level = dual.current()
    return -1 if level is None else level.index


def enter_dual_level() -> int:
    """Open a forward-AD level (only one at a time, as in PyTorch) and return its number."""
    if dual.current() is not None:
        raise BadArgumentsError(NESTED_MESSAGE)
    level = dual.Level(0)
    level.token = dual.set_current(level)
    dual.LIVE[0] += 1
    return level.index


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level, forgetting every tangent made in it."""
    current = dual.current()
    number = -1 if current is None else current.index
    if level is None:
        level = number
    if level != number:
        raise BadArgumentsError(EXIT_NOT_LAST_MESSAGE)
    if current is None:
        raise BadArgumentsError(EXIT_NONE_MESSAGE)
    dual.reset_current(current.token)
    dual.LIVE[0] -= 1
    current.close()


class dual_level:
    """``with dual_level():`` forward AD happens inside (a decorator too, as PyTorch's)."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()

    def __call__(self, fn: F) -> F:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return fn(*args, **kwargs)

        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        wrapped.__doc__ = fn.__doc__
        return wrapped  # type: ignore[return-value]


def _resolve(level: int | None) -> dual.Level | None:
    current = dual.current()
    if level is None or (current is not None and level == current.index):
        return current
    return None


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` whose tangent is ``tangent`` (kept as it is) at the open level."""
    number = _level_number() if level is None else level
    if number < 0:
        raise BadArgumentsError(NO_LEVEL_MESSAGE)
    if tensor._data.dtype.kind not in "fc":
        raise ArgumentValueError(
            f"Expected primal to be floating point or complex, but got: {_dtype(tensor)}"
        )
    if tangent._data.dtype.kind not in "fc":
        raise ArgumentValueError(
            f"Expected tangent to be floating point or complex, but got: {_dtype(tangent)}"
        )
    current = _resolve(number)
    if current is None:
        raise BadArgumentsError(INVALID_LEVEL_MESSAGE)
    if dual.tangent(tensor, current) is not None:
        raise BadArgumentsError(ALREADY_DUAL_MESSAGE.format(level=current.index))
    if tangent._data.shape != tensor._data.shape:
        raise ShapeMismatchError(
            SIZE_MESSAGE.format(primal=_sizes(tensor.shape), tangent=_sizes(tangent.shape))
        )
    with dual.suspended():
        out: Tensor = AliasBackward0.apply(tensor)
    dual.set_tangent(out, current, tangent)
    return out


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal and the tangent (or None)."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``tensor``'s primal (a view without the tangent) and its tangent at the level."""
    current = _resolve(level)
    if current is None:
        return UnpackedDualTensor(tensor, None)
    tan = dual.tangent(tensor, current)
    if tan is None:
        return UnpackedDualTensor(tensor, None)
    with dual.suspended():
        primal: Tensor = AliasBackward0.apply(tensor)
    return UnpackedDualTensor(primal, tan)


def from_backward(
    cls: type[Function],
    ctx: Node,
    inputs: tuple[Any, ...],
    tangents: tuple[Tensor | None, ...],
    results: tuple[Tensor, ...],
) -> Any:
    """The generic forward rule: the backward rule is linear in the output gradient
    ``u``, so ``J t = d/du <J^T u, t>`` (backward of the backward). Exact, but two
    backward passes per call: ops keep it only until an explicit rule is written."""
    float_out = [r for r in results if r._data.dtype.kind in "fc"]
    # any point serves (the backward rule is linear in u); ones, not zeros, since a rule
    # may work in log space (logcumsumexp's), where u = 0 is a singular point
    us = [Tensor._make(np.ones_like(r._data), True) for r in float_out]
    grad_on = _enabled.get()
    with enable_grad():
        it = iter(us)
        args = [next(it) if r._data.dtype.kind in "fc" else None for r in results]
        grads = cls.backward(ctx, *args)
        settle(ctx)
        total = sum_against(grads, tangents)
        if total is None or not total.requires_grad:
            return tuple(None for _ in results) if len(results) > 1 else None
        # recorded in reverse mode only when a primal or a tangent asks for it
        wanted = any(type(t) is Tensor and t.requires_grad for t in (*inputs, *tangents))
        jts = grad(
            total, us, create_graph=grad_on and wanted, allow_unused=True, materialize_grads=True
        )
    it = iter(jts)
    made = tuple(next(it) if r._data.dtype.kind in "fc" else None for r in results)
    return made if len(results) > 1 else made[0]


dual.FALLBACK.append(from_backward)
