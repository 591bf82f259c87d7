"""The one hook between the op catalogue and ``engine.func.vmap``.

While a vmap runs, ``batching`` holds its dispatcher: every registered op (and
every in-place method) asks it first, so an op on a batched tensor runs its
batching rule. Outside vmap the hook is None and an op pays one ContextVar read.
A ContextVar, as grad mode is, so concurrent requests never see each other's vmap.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

# (op name, the op's own call, args, kwargs) -> result
Dispatcher = Callable[[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]

batching: ContextVar[Dispatcher | None] = ContextVar("vmap_dispatch", default=None)


def hooked(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` asking the vmap dispatcher first while one is set."""
    get = batching.get

    def op(*args: Any, **kwargs: Any) -> Any:
        dispatch = get()
        if dispatch is None:
            return call(*args, **kwargs)
        return dispatch(name, call, args, kwargs)

    op.__name__ = getattr(call, "__name__", name)
    op.__qualname__ = getattr(call, "__qualname__", name)
    op.__doc__ = call.__doc__
    op.__wrapped__ = call  # type: ignore[attr-defined]
    return op
