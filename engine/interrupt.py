"""Stopping long work between ops: a caller sets a check (``checking(fn)``) that the
engine calls at each op boundary (every op a forward, a composite's loop or a backward
pass runs), and the check raises to stop the work there. Context-local like grad
mode, so concurrent callers (a server's requests, each with its own deadline) never
see each other's check; the engine knows nothing of why a caller stops."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TypeVar

Check = Callable[[], None]
T = TypeVar("T")

_check: ContextVar[Check | None] = ContextVar("op_check", default=None)
# checks set in any context: every op reads this list, and only while some caller has a
# check set does it pay the ContextVar lookup (as ``dispatch.OPEN`` does for vmap)
OPEN = [0]


def current() -> Check | None:
    """The check set by the caller, or None (read once per pass, called per op)."""
    return _check.get()


@contextmanager
def checking(check: Check | None) -> Iterator[None]:
    """Call ``check`` at each op boundary while the block runs."""
    token = install(check)
    try:
        yield
    finally:
        remove(token)


def install(check: Check | None) -> Token[Check | None]:
    """``checking`` without the context manager, for a hot caller: undo with ``remove``."""
    token = _check.set(check)
    OPEN[0] += 1
    return token


def remove(token: Token[Check | None]) -> None:
    _check.reset(token)
    OPEN[0] -= 1


def checked(items: Iterable[T], every: int = 1) -> Iterable[T]:
    """``items``, calling the caller's check before every ``every``-th one: a Python loop
    inside one op (over a batch, a sequence's time steps) is no op boundary, yet may run
    for minutes; it stops at the deadline this way. ``items`` itself when nothing checks."""
    check = _check.get() if OPEN[0] else None
    if check is None:
        return items
    return _checking(items, check, every)


def _checking(items: Iterable[T], check: Check, every: int) -> Iterator[T]:
    for k, item in enumerate(items):
        if k % every == 0:
            check()
        yield item
