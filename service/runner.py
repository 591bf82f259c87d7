"""Running a stored program ``repeat`` times: in chunks, each journaled before anything
about it is said.

A chunk runs iterations until its share of the run is done or a short time has passed
(so no run holds the event loop, and progress can be reported at least once a second),
inline or in a worker thread as ``offload`` decides for one iteration's weight. The
iterations a chunk completed are journaled as one ``run`` record (the program's name and
a count) inside a shielded scope, so a cancelled request (a client that went away)
still records what it changed: after ``kill -9``, the session holds every iteration
acknowledged by a progress event or the answer, and a whole number of iterations.
Each iteration is all or nothing; a failing one stops the run, the problem carrying
``iteration`` (counted from 0) and ``step``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from engine import Tensor
from engine.errors import EngineError

from . import compiled
from .compiled import Program
from .deps import Output
from .errors import ServiceError
from .session import journal, offload
from .session.state import Session
from .settings import Settings
from .views import value

INLINE_SLICE = 0.02  # seconds a chunk may hold the event loop
THREAD_SLICE = 0.25  # seconds a chunk runs in a worker thread
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
    weight: int = 0

    def __post_init__(self) -> None:
        self.weight = offload.steps_weight(self.session, self.program.items)
        self.history = {k: [] for k in self.fetch} if self.every else {}

    async def chunk(self) -> None:
        """Run the next chunk and journal it; raises the failing iteration's problem (the
        iterations before it kept and journaled)."""
        inline = self.weight <= self.settings.offload_elements
        budget = INLINE_SLICE if inline else THREAD_SLICE
        target = self.repeat
        if self.every:  # stop where the history (and a progress event) is due
            target = min(target, (self.done // self.every + 1) * self.every)
        failure: BaseException | None = None
        with anyio.CancelScope(shield=True):
            if inline:
                ran, failure = self._iterate(target - self.done, budget)
            else:
                ran, failure = await anyio.to_thread.run_sync(
                    self._iterate, target - self.done, budget
                )
            if ran:
                await journal.record(self.session, "run", self.program.name, ran)
            self.done += ran
        if self.every and self.done % self.every == 0 and ran:
            for key, v in compiled.fetch_values(self.session, self.fetch, copy=True).items():
                self.history[key].append(v)
        if failure is not None:
            _mark(failure, self.done)
            raise failure
        if inline:
            await anyio.sleep(0)  # let other requests in between chunks

    def _iterate(self, n: int, budget: float) -> tuple[int, BaseException | None]:
        """Up to ``n`` iterations within ``budget`` seconds (at least one)."""
        until = time.perf_counter() + budget
        session, program, settings = self.session, self.program, self.settings
        for k in range(n):
            try:
                compiled.run_iteration(session, program, settings)
            except (ServiceError, EngineError) as exc:
                return k, exc
            if time.perf_counter() > until:
                return k + 1, None
        return n, None

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
