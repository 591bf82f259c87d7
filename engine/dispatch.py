"""The one hook between the op catalogue and ``engine.func.vmap``.

While a vmap runs, ``batching`` holds its dispatcher: every registered op (and
every in-place method) asks it first, so an op on a batched tensor runs its
batching rule. The dispatcher is context-local (a ContextVar, as grad mode is), so
concurrent requests never see each other's vmap; ``batching.open`` counts the
dispatchers set in any context, so outside every vmap an op pays one list read
and no ContextVar lookup (as ``dual.LIVE`` does for forward mode).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

# (op name, the op's own call, args, kwargs) -> result
Dispatcher = Callable[[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]


class _Hook:
    """A ContextVar for the dispatcher that also counts how many are set anywhere."""

    __slots__ = ("_var", "open")

    def __init__(self) -> None:
        self._var: ContextVar[Dispatcher | None] = ContextVar("vmap_dispatch", default=None)
        self.open = [0]  # dispatchers set in any context: the hot path's one check

    def get(self) -> Dispatcher | None:
        return self._var.get() if self.open[0] else None

    def set(self, dispatch: Dispatcher | None) -> Token[Dispatcher | None]:
        token = self._var.set(dispatch)
        self.open[0] += 1
        return token

    def reset(self, token: Token[Dispatcher | None]) -> None:
        self._var.reset(token)
        self.open[0] -= 1


batching = _Hook()
OPEN = batching.open
# the name a custom autograd.Function's apply asks under (args: the class, then its own)
CUSTOM_FUNCTION = "autograd.Function"


def ask(name: str, call: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
    """``call(*args, **kwargs)``, through the dispatcher when this context has one
    (callers check ``OPEN[0]`` first, so this runs only while some vmap is open)."""
    dispatch = batching._var.get()
    if dispatch is None:
        return call(*args, **kwargs)
    return dispatch(name, call, args, kwargs)


def hooked(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` asking the vmap dispatcher first while one is set."""

    def op(*args: Any, **kwargs: Any) -> Any:
        if OPEN[0]:
            return ask(name, call, args, kwargs)
        return call(*args, **kwargs)

    op.__name__ = getattr(call, "__name__", name)
    op.__qualname__ = getattr(call, "__qualname__", name)
    op.__doc__ = call.__doc__
    op.__wrapped__ = call  # type: ignore[attr-defined]
    return op
