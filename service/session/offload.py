"""Where work runs and for how long: small numpy work stays on the event loop (a thread
hop costs more than it saves), large work goes to a worker thread so other sessions
keep flowing; either way it stops at the next op past the request's deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

from engine import interrupt

from ..errors import DeadlineExceededError
from ..schemas import StepIn
from ..settings import Settings
from .limits import CREATION_OPS, estimate_elements
from .state import Session

T = TypeVar("T")


def deadline(settings: Settings) -> float:
    """The ``time.monotonic()`` past which a request starting now is stopped."""
    return time.monotonic() + settings.request_seconds


# work estimated light runs on the event loop; past this long it is rolled back at the
# next op (as any failure is) and run again in a worker thread, so no input, however it
# fools the estimate, holds the loop much longer
INLINE_SECONDS = 0.05


_INLINE: ContextVar[bool] = ContextVar("gradserve_inline", default=False)


def inline() -> bool:
    """Whether the work running now is on the event loop (else in a worker thread)."""
    return _INLINE.get()


class Heavy(BaseException):
    """Inline work that outgrew the event loop (a BaseException: nothing in between
    catches it as an error of the work)."""


def _stopper(at: float, seconds: float, inline_until: float | None = None) -> interrupt.Check:
    """The check the engine and the executor call per op: raises past ``at``, and, for
    work on the event loop, ``Heavy`` past ``inline_until``."""
    clock = time.monotonic

    def check() -> None:
        now = clock()
        if now > at:
            raise DeadlineExceededError(
                f"the request ran past its deadline of {seconds:g} s "
                "(GRADSERVE_REQUEST_SECONDS) and was stopped"
            )
        if inline_until is not None and now > inline_until:
            raise Heavy

    return check


def _run_checked(check: interrupt.Check, fn: Callable[..., T], *args: Any) -> T:
    token = interrupt.install(check)  # (not ``checking``: a context manager costs more)
    try:
        return fn(*args)
    finally:
        interrupt.remove(token)


async def run(
    settings: Settings, weight: int, fn: Callable[..., T], *args: Any, until: float | None = None
) -> T:
    """``fn(*args)`` inline, or in a worker thread when ``weight`` (elements) is large or
    the inline run takes long, stopped at the next op past ``until`` (default: the
    request's deadline from now). ``fn`` must change nothing when it raises.

    The caller holds the session lock; a cancelled request still waits for its
    thread to finish, so the session is never touched by two threads at once."""
    at = deadline(settings) if until is None else until
    now = time.monotonic()
    if now > at:  # the time spent waiting for the lock counts
        _stopper(at, settings.request_seconds)()
    if weight <= settings.offload_elements:
        inline_check = _stopper(at, settings.request_seconds, now + INLINE_SECONDS)
        on_loop = _INLINE.set(True)
        try:
            return _run_checked(inline_check, fn, *args)
        except Heavy:
            pass  # rolled back: run again off the loop
        finally:
            _INLINE.reset(on_loop)
    check = _stopper(at, settings.request_seconds)
    return await anyio.to_thread.run_sync(partial(_run_checked, check, fn, *args))


def call_checked(settings: Settings, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in this thread, stopped at the next op past a deadline of
    ``GRADSERVE_REQUEST_SECONDS`` from now: for work that runs several deadlines' worth
    of parts in one worker thread (a program's iterations, each with its own)."""
    return _run_checked(_stopper(deadline(settings), settings.request_seconds), fn, *args)


def steps_weight(session: Session, steps: Iterable[StepIn | Any]) -> int:
    """Elements the steps read from the session (plus what creation ops will make)."""
    total = 0
    tensors = session.tensors
    for step in steps:
        total += 64
        if not hasattr(step, "reads"):  # a backward, grad or zero_grad item of a program
            total += session.work
            continue
        for name in step.reads:
            if (t := tensors.get(name)) is not None:
                total += t._data.size
        if step.op in CREATION_OPS:  # other estimates need the tensors, not their names
            total += estimate_elements(step.op, list(step.args), dict(step.kwargs)) or 0
    return total


def graph_weight(session: Session, names: Iterable[str]) -> int:
    """For backward/grad: what the steps since the last freeing backward produced."""
    roots = sum(t._data.size for n in names if (t := session.tensors.get(n)) is not None)
    return session.work + roots
