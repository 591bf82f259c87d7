"""The one way a request changes a session: ``mutate(session, verb, payload, ...)``.

In order: the session's lock (waited for at most until the request's deadline), the
verb applied (on the event loop or in a worker thread, stopped at the next op past the
deadline, all or nothing), the change journaled, then the answer built from the
session while the lock is still held. Every route that changes a session calls it;
the journal's replay applies the same verbs (``changes.VERBS``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from ..errors import DeadlineExceededError
from ..settings import Settings
from . import journal, offload
from .changes import Verb
from .state import Session

P = TypeVar("P")
R = TypeVar("R")
T = TypeVar("T")


async def mutate(
    session: Session,
    verb: Verb[P, R],
    payload: P,
    settings: Settings,
    view: Callable[[R], T],
) -> T:
    """Apply ``verb`` to ``session`` for one request; ``view(result)`` is the answer."""
    until = offload.deadline(settings)
    async with hold(session, settings, until):
        result = await apply(session, verb, payload, settings, until)
        return view(result)


@asynccontextmanager
async def hold(session: Session, settings: Settings, until: float) -> AsyncIterator[None]:
    """The session's lock, waited for at most until ``until``."""
    lock = session.lock
    if lock.locked():  # wait for the session's earlier requests, within the deadline
        try:
            await asyncio.wait_for(lock.acquire(), max(0.0, until - time.monotonic()))
        except TimeoutError:
            raise DeadlineExceededError(
                f"session {session.name!r} stayed busy with earlier requests past this "
                f"request's deadline of {settings.request_seconds:g} s"
            ) from None
    else:
        await lock.acquire()
    try:
        yield
    finally:
        lock.release()


async def apply(
    session: Session, verb: Verb[P, R], payload: P, settings: Settings, until: float
) -> R:
    """Under the held lock: the verb applied (all or nothing, stopped past ``until``),
    then journaled. A stored program's run holds the lock once and applies its ``RUN``
    verb here chunk by chunk."""
    weight = verb.weight(session, payload)
    result = await offload.run(
        settings, weight, _counted, verb, session, settings, payload, until=until
    )
    if verb.changed(result):
        await journal.record(session, verb, payload, result)
    return result


def _counted(verb: Verb[P, R], session: Session, settings: Settings, payload: P) -> R:
    """``verb`` applied, then the session's byte count made exact where the verb dropped
    it (a backward's new grads): every other session's budget check reads this number,
    and a missing one would make each of them walk this session's whole graph."""
    try:
        return verb.apply(session, settings, payload, False)
    finally:  # also after a failure: a rolled-back batch may have dropped the count
        session.settle()
