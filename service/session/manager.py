"""The one session manager of a process: the sessions held in memory, the store they
are kept in (``GRADSERVE_STORE``: memory, SQLite or Redis), their journals, the limits
on how many there are, and the background sweeper, opened and stopped by one lifespan
(``running``).

Sessions are found by (owner, name); with API keys each key has its own namespace, so
another key's session is simply not found (404). Idle sessions expire after the TTL:
lazily when touched, in the background sweep, and whenever sessions are created or
listed. With the memory store the sessions held here are all there is; with a durable
one they are a cache of the store: a session missing from memory is rebuilt from its
journal, and with a shared store (Redis) a replica serves a session while it holds the
session's lease, catching up on the journal before it answers.

How many sessions a key holds is counted where the sessions are: here for the memory
store, in the store for a durable one (in the same transaction that adds a session), so
``GRADSERVE_KEY_MAX_SESSIONS`` is exact across the workers and replicas sharing it.

Nothing a request does here costs in proportion to the sessions other clients hold:
bytes and counts are running totals (``ledger``), a key's sessions are indexed by key,
and expiry is a heap ordered by when each session may expire (a sweep pops only what
is due).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

from ..errors import (
    LimitExceededError,
    SessionExistsError,
    SessionMovedError,
    SessionNotFoundError,
)
from ..names import check_session_name
from ..settings import Settings
from . import journal
from .backends import Full, Meta, Store, StoreError, open_store
from .checkpoints import restore
from .journal import Tracked
from .ledger import Ledger
from .state import Session, iso

log = logging.getLogger("gradserve.sessions")

Key = tuple[str | None, str]


class SessionManager:
    """The sessions of one process and the store behind them; ``clock`` is injectable
    for TTL tests (the memory store's sessions)."""

    def __init__(
        self, settings: Settings, store: Store | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.store = open_store(settings.store) if store is None else store
        self.durable = self.store.durable
        self.holder = uuid.uuid4().hex  # this replica, for leases
        self._sessions: dict[Key, Session] = {}
        self._owned: dict[str | None, dict[str, Session]] = {}  # owner -> name -> session
        self.ledger = Ledger()  # bytes held, in all and per key
        # (expires as of scheduling, tie-break, key): the session held under the key may
        # expire at that time at the earliest (a touch only moves it later); entries of
        # sessions gone are skipped (keys, not sessions: a deleted one is freed at once)
        self._expiry: list[tuple[float, int, Key]] = []
        self._tick = itertools.count()
        self._opened = False
        self._loading: dict[Key, asyncio.Lock] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self.swept = 0  # rounds of the background sweeper

    def __len__(self) -> int:
        """Sessions held in memory (a gauge of this process's load)."""
        return len(self._sessions)

    def recount(self) -> tuple[int, dict[str | None, tuple[int, int]]]:
        """The ledger's totals computed afresh from every session held (O(sessions), for
        tests and checks): (bytes of all, owner -> (sessions, bytes))."""
        by: dict[str | None, tuple[int, int]] = {}
        total = 0
        for (owner, _), s in self._sessions.items():
            bound = s.bytes_bound if s.bytes_bound is not None else s.nbytes()
            held = bound + s.program_bytes()
            total += held
            n, b = by.get(owner, (0, 0))
            by[owner] = (n + 1, b + held)
        return total, by

    # -- the lifespan -------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While the app serves: the store open (one unreachable at startup stops the
        process with the reason) and idle sessions swept in the background."""
        try:
            await self._ready()
        except StoreError as exc:
            log.critical("gradserve cannot start: %s", exc)
            raise RuntimeError(f"gradserve cannot start: {exc}") from exc
        self._sweeper = asyncio.create_task(self.sweep_forever(), name="gradserve-sweep")
        try:
            yield
        finally:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
            if self._opened:
                await self.store.close()
                self._opened = False

    async def _ready(self) -> None:
        """Open the store on first use (in-process tests run without the lifespan)."""
        if not self._opened:
            await self.store.open()
            self._opened = True
            if self.durable:
                log.info("sessions are kept in %s", self.settings.store)

    async def reachable(self) -> bool:
        """Whether the store answers (always, for memory): what /readyz reports."""
        if not self.durable:
            return True
        try:
            await self._ready()
            await self.store.meta(None, "-")
        except StoreError as exc:
            log.warning("readiness: session store unavailable: %s", exc)
            return False
        return True

    # -- the routes' calls --------------------------------------------------------------------
    async def session(self, name: str, owner: str | None) -> Session:
        """The caller's session, touched (rebuilt or caught up with the store if needed)."""
        if not self.durable:
            return self._get(name, owner)
        try:
            await self._ready()
            return await self._current(name, owner)
        except StoreError as exc:
            raise journal.unavailable(exc) from exc

    async def create(self, name: str | None, owner: str | None) -> Session:
        """A new session (409 if the name is taken; 429 past a limit on sessions)."""
        limits = self.settings
        self.sweep_memory()
        self._check_room()
        if not self.durable:
            if owner is not None and (held := self.count_held(owner)) >= limits.key_max_sessions:
                raise _key_full(held, limits)
            if name is None:
                name = self._fresh_name(owner)
            return self._add(check_session_name(name), owner)
        try:
            await self._ready()
            for _ in range(8):
                candidate = name if name is not None else "s-" + secrets.token_hex(6)
                check_session_name(candidate)
                stale = self._sessions.get((owner, candidate))
                if stale is not None and await self.store.meta(owner, candidate) is None:
                    self.forget(stale)  # deleted through another replica
                s = self._add(candidate, owner)
                meta = Meta(owner, s.name, s.created, s.last_used, s.ttl)
                limit = limits.key_max_sessions if owner is not None else None
                try:
                    created = await self.store.create(meta, limit)
                except Full as full:
                    self.forget(s)
                    raise _key_full(full.held, self.settings) from None
                except BaseException:
                    self.forget(s)
                    raise
                if created:
                    journal.track(s, self._tracked(touched=s.last_used))
                    return s
                self.forget(s)
                if name is not None:
                    break
        except StoreError as exc:
            raise journal.unavailable(exc) from exc
        raise SessionExistsError(f"session {name!r} already exists", hint="pick another name")

    async def summaries(self, owner: str | None) -> list[dict[str, Any]]:
        """``SessionSummaryOut`` of every session of ``owner`` (in the store, if durable)."""
        if not self.durable:
            self.sweep_memory()
            return [_summary(s) for s in self._owned.get(owner, {}).values()]
        try:
            await self._ready()
            metas = await self.store.listing(owner)
        except StoreError as exc:
            raise journal.unavailable(exc) from exc
        now = time.time()
        out = []
        for m in metas:
            if m.expires <= now:
                continue
            s = self._sessions.get((owner, m.name))
            t = None if s is None else journal.tracked(s)
            if s is not None and t is not None and t.seq == m.seq:
                out.append(_summary(s))
                continue
            out.append(
                {"name": m.name, "created": iso(m.created), "last_used": iso(m.last_used),
                 "expires": iso(m.expires), "bytes": m.bytes, "tensor_count": m.tensor_count}
            )  # fmt: skip
        return out

    async def count(self, owner: str | None) -> int:
        """The live sessions of ``owner``: here, or in the store when it is durable."""
        if not self.durable:
            return self.count_held(owner)
        try:
            await self._ready()
            return await self.store.count(owner, time.time())
        except StoreError as exc:
            raise journal.unavailable(exc) from exc

    async def delete(self, name: str, owner: str | None) -> None:
        """Drop the session from the store and memory, waiting for its running request;
        one whose journal cannot be replayed can still be deleted."""
        name = check_session_name(name)
        s = self._sessions.get((owner, name)) if self.durable else self._get(name, owner)
        if s is None:
            await self._delete_held(None, name, owner)
            return
        async with s.lock:
            await self._delete_held(s, name, owner)

    async def _delete_held(self, s: Session | None, name: str, owner: str | None) -> None:
        if self.durable:
            try:
                await self._ready()
                found = await self.store.delete(owner, name)
            except StoreError as exc:
                raise journal.unavailable(exc) from exc
            if s is not None and (t := journal.tracked(s)) is not None:
                t.dead = True
            if not found:
                if s is not None:
                    self.forget(s)
                raise _not_found(name)
        if s is not None:
            self.forget(s)

    # -- the sessions held in memory ----------------------------------------------------------
    def held(self, name: str, owner: str | None) -> Session | None:
        """The session held in memory, untouched (no TTL check)."""
        return self._sessions.get((owner, name))

    def count_held(self, owner: str | None) -> int:
        """Sessions of ``owner`` held here."""
        owned = self._owned.get(owner)
        return len(owned) if owned is not None else 0

    def bytes_held(self, exclude: Session | None = None) -> tuple[int, int]:
        """Bytes held by every session but ``exclude``, and by those of ``exclude``'s key:
        running totals of each session's count as of its last change (its bound, which
        each change leaves exact or above the exact count, and its programs)."""
        return self.ledger.held(exclude)

    def forget(self, s: Session) -> None:
        """Stop holding ``s`` (if it is still the one held under its name)."""
        if self._sessions.get((s.owner, s.name)) is s:
            self._remove(s)

    def _remove(self, s: Session) -> None:
        del self._sessions[(s.owner, s.name)]
        owned = self._owned[s.owner]
        del owned[s.name]
        if not owned:
            del self._owned[s.owner]
        self.ledger.leave(s)

    def _add(self, name: str, owner: str | None) -> Session:
        if (owner, name) in self._sessions:
            raise SessionExistsError(
                f"session {name!r} already exists", hint="pick another name, or omit it"
            )
        now = self.clock()
        s = Session(name, owner, self.settings.session_ttl_seconds, now, now)
        self._adopt(s)
        return s

    def _adopt(self, s: Session) -> None:
        s.held_elsewhere = partial(self.ledger.held, s)
        self._sessions[(s.owner, s.name)] = s
        self._owned.setdefault(s.owner, {})[s.name] = s
        self.ledger.join(s)
        self._schedule(s)

    def _schedule(self, s: Session) -> None:
        """Put ``s`` on the expiry heap at its current expiry; the heap is rebuilt from
        the sessions held when stale entries (deleted sessions) outnumber them."""
        heap = self._expiry
        heapq.heappush(heap, (s.expires, next(self._tick), (s.owner, s.name)))
        if len(heap) > 2 * len(self._sessions) + 64:
            heap[:] = [(x.expires, next(self._tick), k) for k, x in self._sessions.items()]
            heapq.heapify(heap)

    def _get(self, name: str, owner: str | None) -> Session:
        """The held session, touched; an expired one is evicted and reported missing."""
        s = self._sessions.get((owner, name))
        now = self.clock()
        if s is not None and s.expires <= now and not s.lock.locked():
            self._remove(s)
            s = None
        if s is None:
            raise _not_found(name)
        s.last_used = now
        return s

    def _fresh_name(self, owner: str | None) -> str:
        while True:
            name = "s-" + secrets.token_hex(6)
            if (owner, name) not in self._sessions:
                return name

    def _check_room(self) -> None:
        """429 when this process holds ``max_sessions`` (a bound on its memory)."""
        if len(self._sessions) >= self.settings.max_sessions:
            raise LimitExceededError(
                f"the server holds {len(self._sessions)} sessions; the limit is "
                f"{self.settings.max_sessions}",
                status=429,
                hint="delete sessions you no longer need, or retry later",
                headers={"Retry-After": "60"},
            )

    # -- durable sessions: leases, rebuilds, catching up --------------------------------------
    def _tracked(self, touched: float) -> Tracked:
        return Tracked(self.store, self.settings, self._drop, touched=touched)

    def _drop(self, s: Session) -> None:
        self.forget(s)

    async def _current(self, name: str, owner: str | None) -> Session:
        s = self._sessions.get((owner, name))
        t = None if s is None else journal.tracked(s)
        if s is not None and (t is None or t.dead):
            self.forget(s)
            s = t = None
        if self.store.shared:
            seq = await self._lease(name, owner)
            if seq is None:
                if s is not None:
                    self.forget(s)
                raise _not_found(name)
            if s is not None and t is not None and t.seq > seq:
                log.error("session %r: the store has fewer records than this replica", name)
                t.dead = True  # the store lost records: serve what it has
                self.forget(s)
                s = t = None
            if s is not None and t is not None and t.seq != seq:
                async with s.lock:
                    if not t.dead and t.seq != seq:
                        await journal.replay(s, t, seq)
                if t.dead:
                    s = None
        if s is None:
            s = await self._load(name, owner)
        try:
            s = self._get(name, owner)  # touches; evicts if idle past its TTL here
        except SessionNotFoundError:
            s = await self._load(name, owner)  # another replica may have used it since
            s = self._get(name, owner)
        t = journal.tracked(s)
        assert t is not None
        if s.last_used - t.touched > min(1.0, s.ttl / 10):
            t.touched = s.last_used
            await self.store.touch(owner, name, s.last_used)
        return s

    async def _lease(self, name: str, owner: str | None) -> int | None:
        """Hold the session's lease, waiting out another replica's (at most the lease time)."""
        seconds = self.settings.lease_seconds
        deadline = time.monotonic() + seconds
        while True:
            wait, seq = await self.store.lease(owner, name, self.holder, seconds)
            if wait <= 0:
                return seq
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("taking over session %r from a replica that held it", name)
                _, seq = await self.store.lease(owner, name, self.holder, seconds, force=True)
                return seq
            await asyncio.sleep(min(wait, left, 0.05))

    async def _load(self, name: str, owner: str | None) -> Session:
        """Rebuild a session from its checkpoint and records (one load at a time per name)."""
        key = (owner, name)
        lock = self._loading.setdefault(key, asyncio.Lock())
        async with lock:
            held = self._sessions.get(key)
            if held is not None and (t := journal.tracked(held)) is not None and not t.dead:
                return held
            try:
                return await self._rebuild(name, owner)
            finally:
                self._loading.pop(key, None)

    async def _rebuild(self, name: str, owner: str | None) -> Session:
        meta = await self.store.meta(owner, name)
        if meta is None:
            raise _not_found(name)
        if meta.expires <= time.time():
            await self.store.delete(owner, name)
            raise _not_found(name)
        started = time.perf_counter()
        for _ in range(3):  # again if another replica checkpointed past what we read
            s = Session(name, owner, meta.ttl, meta.created, meta.last_used)
            t = self._tracked(touched=meta.last_used)
            ck = await self.store.checkpoint(owner, name)
            if ck is not None:
                try:
                    restore(s, ck[1])
                except Exception as exc:  # noqa: BLE001 - any failure means a bad checkpoint
                    raise journal.corrupt(name, ck[0], exc) from exc
                t.seq = ck[0]
            await journal.replay(s, t, meta.seq)
            if not t.dead:
                break
        else:
            raise SessionMovedError(f"session {name!r} is changing too fast to be loaded")
        self._adopt(s)
        journal.track(s, t)
        log.info(
            "session %r rebuilt from the store: %d records in %.3f s",
            name,
            t.seq,
            time.perf_counter() - started,
        )
        return s

    # -- expiry -------------------------------------------------------------------------------
    def sweep_memory(self) -> int:
        """Drop every expired session held here that no request holds; returns how many.
        Pops only the heap entries that are due: a session touched since its entry was
        pushed goes back at its new expiry, one in use at its old (the next sweep)."""
        now = self.clock()
        heap = self._expiry
        dropped = 0
        busy: list[Session] = []
        while heap and heap[0][0] <= now:
            found = self._sessions.get(heapq.heappop(heap)[2])
            if found is None:
                continue  # deleted: not held any more
            s = found
            if s.expires > now:
                self._schedule(s)
            elif s.lock.locked():
                busy.append(s)
            else:
                self._remove(s)
                dropped += 1
        for s in busy:
            self._schedule(s)
        return dropped

    async def sweep(self) -> int:
        """Drop expired sessions from memory and the store; returns how many."""
        dropped = self.sweep_memory()
        if not self.durable:
            return dropped
        await self._ready()
        for owner, name in await self.store.expired(time.time()):
            s = self._sessions.get((owner, name))
            if s is not None and (s.lock.locked() or s.expires > time.time()):
                continue  # in use here: its last_used is newer than the store's
            if await self.store.delete(owner, name):
                dropped += 1
            if s is not None:
                self.forget(s)
        return dropped

    async def sweep_forever(self) -> None:
        """``sweep()`` every ``sweep_seconds``; ``swept`` counts the rounds."""
        while True:
            await asyncio.sleep(self.settings.sweep_seconds)
            try:
                await self.sweep()
            except StoreError as exc:
                log.error("sweep skipped, session store unavailable: %s", exc)
            except Exception:  # noqa: BLE001 - the sweeper must outlive one bad sweep
                log.exception("sweep failed")
            self.swept += 1


def _key_full(held: int, settings: Settings) -> LimitExceededError:
    """429 for a key holding ``key_max_sessions``: one key cannot take every place."""
    return LimitExceededError(
        f"this API key holds {held} sessions; the limit per key is {settings.key_max_sessions}",
        status=429,
        hint="delete sessions you no longer need (GRADSERVE_KEY_MAX_SESSIONS)",
        headers={"Retry-After": "60"},
    )


def _not_found(name: str) -> SessionNotFoundError:
    return SessionNotFoundError(
        f"no session {name!r}", hint="sessions expire after being idle; create it again"
    )


def _summary(s: Session) -> dict[str, Any]:
    """A listing's row: bytes as the store's rows count them (the session's bound, kept
    by every change), so a listing walks no graph (``GET /v1/sessions/{s}`` is exact)."""
    nbytes = s.bytes_bound if s.bytes_bound is not None else s.nbytes()
    return {"name": s.name, "created": iso(s.created), "last_used": iso(s.last_used),
            "expires": iso(s.expires), "bytes": nbytes, "tensor_count": len(s.tensors)}  # fmt: skip
