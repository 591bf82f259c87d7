"""Running a stored program ``repeat`` times on the session's one mutation path, in
chunks, each journaled before anything about it is said.

Each iteration is the ``RUN`` verb applied once through ``offload.run``: all or nothing,
on the event loop or in a worker thread as its weight says, stopped past its own
deadline (``GRADSERVE_REQUEST_SECONDS`` applies per iteration; a run's total is bounded
by ``repeat`` times that). A chunk runs iterations until its share of the run is done or
a short time has passed (so progress is reported at least once a second and other
sessions get the event loop), then journals them as one ``run`` record (the program's
name and a count) inside a shielded scope, so a cancelled request (a client that went
away) still records what it changed: after ``kill -9`` the session holds every iteration
acknowledged by a progress event or the answer, and a whole number of iterations. A
failing iteration stops the run; its problem carries ``iteration`` (from 0) and ``step``.
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
from .session.changes import RUN, Iterations
from .session.state import Session
from .settings import Settings
from .views import value

CHUNK_SECONDS = 0.05  # a chunk of light iterations on the event loop
THREAD_SECONDS = 0.25  # a chunk of heavy ones in a worker thread (one hop)
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
        target = self.repeat
        if self.every:  # stop where the history (and a progress event) is due
            target = min(target, (self.done // self.every + 1) * self.every)
        session, settings = self.session, self.settings
        failure: BaseException | None = None
        with anyio.CancelScope(shield=True):
            if self.weight <= settings.offload_elements:  # on the loop, one at a time
                ran, failure = await self._inline(target - self.done)
            else:  # in a worker thread, a chunk per hop
                ran, failure = await anyio.to_thread.run_sync(self._iterate, target - self.done)
            if ran:
                name = self.program.name
                await journal.record(session, RUN, Iterations(name, ran), ran)
            self.done += ran
        if self.every and ran and self.done % self.every == 0:
            for key, v in compiled.fetch_values(session, self.fetch, copy=True).items():
                self.history[key].append(v)
        if failure is not None:
            _mark(failure, self.done)
            raise failure
        if self.done < self.repeat:
            await anyio.sleep(0)  # let other requests in between chunks

    async def _inline(self, n: int) -> tuple[int, BaseException | None]:
        """Up to ``n`` iterations within ``CHUNK_SECONDS``, each through ``offload.run``
        (which moves one that outgrows the event loop to a thread)."""
        session, settings = self.session, self.settings
        one = Iterations(self.program.name, 1)
        until = time.perf_counter() + CHUNK_SECONDS
        for k in range(n):
            try:
                await offload.run(settings, self.weight, RUN.apply, session, settings, one,
                                  False, until=offload.deadline(settings))  # fmt: skip
            except (ServiceError, EngineError) as exc:
                return k, exc
            if time.perf_counter() > until:
                return k + 1, None
        return n, None

    def _iterate(self, n: int) -> tuple[int, BaseException | None]:
        """In a worker thread: up to ``n`` iterations within ``THREAD_SECONDS``, each with
        its own deadline."""
        session, settings, program = self.session, self.settings, self.program
        until = time.perf_counter() + THREAD_SECONDS
        for k in range(n):
            try:
                offload.call_checked(settings, compiled.run_iteration, session, program, settings)
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
