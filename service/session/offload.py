"""Where work runs: small numpy work stays on the event loop (a thread hop costs more
than it saves), large work goes to a worker thread so other sessions keep flowing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

from ..schemas import StepIn
from ..settings import Settings
from .limits import CREATION_OPS, estimate_elements
from .state import Session

T = TypeVar("T")


async def run(settings: Settings, weight: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` inline, or in a worker thread when ``weight`` (elements) is large.

    The caller holds the session lock; a cancelled request still waits for its
    thread to finish, so the session is never touched by two threads at once."""
    if weight > settings.offload_elements:
        return await anyio.to_thread.run_sync(partial(fn, *args))
    return fn(*args)


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
