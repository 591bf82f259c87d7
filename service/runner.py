"""Running a stored program ``repeat`` times on the session's one mutation path, in
chunks, each journaled before anything about it is said.

The run holds the session's lock once; each chunk is the ``RUN`` verb applied through
``mutate.apply``: iterations, each all or nothing, for a short while (so progress is
reported at least once a second and other sessions get the event loop), on the event
loop or in a worker thread as one iteration's weight says, stopped past the chunk's
deadline (``GRADSERVE_REQUEST_SECONDS`` applies per chunk, so per iteration; a run's
total is bounded by ``repeat`` times that), then journaled as one ``run`` record (the
program's name and a count) inside a shielded scope, so a cancelled request (a client
that went away) still records what it changed: after ``kill -9`` the session holds
every iteration acknowledged by a progress event or the answer, and a whole number of
iterations. A failing iteration stops the run; its problem carries ``iteration`` (from
0) and ``step``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from engine import Tensor
from engine.errors import EngineError

from .compute import compiled
from .compute.compiled import Program
from .deps import Output
from .errors import ServiceError
from .session import mutate, offload
from .session.changes import RUN, Iterations, Ran
from .session.state import Session
from .settings import Settings
from .views import value

PROGRESS_SECONDS = 1.0  # a streaming run reports at least this often


@dataclass
class Run:
    """One run of ``program`` on ``session`` (the caller holds the session's lock)."""

    session: Session
    program: Program
    settings: Settings
    repeat: int
    fetch: Sequence[str]
    every: int | None
    done: int = 0
    history: dict[str, list[Tensor | None]] = field(default_factory=dict)
    heavy: bool = False  # a chunk outgrew the event loop: the rest go to a thread at once

    def __post_init__(self) -> None:
        self.history = {k: [] for k in self.fetch} if self.every else {}

    async def chunk(self) -> None:
        """Run the next chunk through the one mutation path (``mutate.apply``: on the
        event loop or in a worker thread, journaled); raises the failing iteration's
        problem (the iterations before it kept and journaled)."""
        target = self.repeat
        if self.every:  # stop where the history (and a progress event) is due
            target = min(target, (self.done // self.every + 1) * self.every)
        session, settings = self.session, self.settings
        todo = Iterations(self.program.name, target - self.done, self.heavy)
        with anyio.CancelScope(shield=True):  # what ran is journaled, even if cancelled
            try:
                ran = await mutate.apply(session, RUN, todo, settings, offload.deadline(settings))
            except (ServiceError, EngineError) as exc:  # stopped before its first iteration
                ran = Ran(0, exc)
            self.done += ran.done
            self.heavy = self.heavy or not ran.on_loop
        if self.every and ran.done and self.done % self.every == 0:
            for key, v in compiled.fetch_values(session, self.fetch, copy=True).items():
                self.history[key].append(v)
        if ran.failure is not None:
            _mark(ran.failure, self.done)
            raise ran.failure
        if self.done < self.repeat:
            await anyio.sleep(0)  # let other requests in between chunks

    def result(self, out: Output) -> dict[str, Any]:
        """A ``RunOut``: the iterations and the values read after the last one."""
        values = compiled.fetch_values(self.session, self.fetch)
        body: dict[str, Any] = {
            "iterations": self.done,
            "values": {k: value(v, out) for k, v in values.items()},
        }
        if self.every:
            body["history"] = {k: [value(v, out) for v in vs] for k, vs in self.history.items()}
        return body

    def progress(self, out: Output) -> dict[str, Any]:
        values = compiled.fetch_values(self.session, self.fetch)
        return {"iteration": self.done, "values": {k: value(v, out) for k, v in values.items()}}

    async def events(self, out: Output) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """``progress`` events while the run goes on; the caller sends the result."""
        last = time.perf_counter()
        while self.done < self.repeat:
            await self.chunk()
            due = self.every is not None and self.done % self.every == 0
            if self.done < self.repeat and (due or time.perf_counter() - last >= PROGRESS_SECONDS):
                last = time.perf_counter()
                yield "progress", self.progress(out)


def _mark(exc: BaseException, iteration: int) -> None:
    """The failing iteration's index on its problem."""
    if isinstance(exc, ServiceError):
        exc.extra["iteration"] = iteration
    elif isinstance(exc, EngineError):
        exc.context["iteration"] = iteration
