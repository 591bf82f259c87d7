"""Grad mode: whether ops record a graph. Context-local (a ContextVar), so
concurrent requests in one process never see each other's mode."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any, TypeVar

_enabled: ContextVar[bool] = ContextVar("grad_enabled", default=True)

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    return _enabled.get()


class set_grad_enabled:
    """Context manager and decorator that sets grad mode, restoring it on exit."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._tokens: list[Token[bool]] = []

    def __enter__(self) -> None:
        self._tokens.append(_enabled.set(self.mode))

    def __exit__(self, *exc: object) -> None:
        _enabled.reset(self._tokens.pop())

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(self.mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(set_grad_enabled):
    """``with no_grad():`` builds no graph (``torch.no_grad``)."""

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(set_grad_enabled):
    """``with enable_grad():`` records again inside a ``no_grad`` block."""

    def __init__(self) -> None:
        super().__init__(True)
