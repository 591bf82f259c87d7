"""Durable sessions: a session is its journal.

The engine is deterministic, so every request that changes a session appends one
record (the validated request; a leaf's values as raw bytes) in the critical
section that applied it, before the answer is sent, and a session missing from
memory is rebuilt by replaying its records through the executor functions the
routes call. A checkpoint (leaves, grads, versions and names as JSON plus raw
bytes, written when no bound tensor holds a graph) bounds the replay. Nothing is
ever unpickled: records and checkpoints are JSON headers and raw arrays.

With ``GRADSERVE_STORE=memory`` the journal is off: ``Journal.session`` and
friends fall through to the in-memory ``SessionStore``, and ``record`` returns
at once (no session is tracked). With a shared store (Redis) a replica serves a
session while it holds the session's lease; every request renews it and reads
the journal's last ``seq``, so a replica whose copy is behind catches up before
it answers, and appends are fenced by ``seq`` (see ``service.session.backends``).

A change the store does not keep is not acknowledged: the request answers 503
(``store_unavailable`` or ``session_moved``) and the in-memory copy, which holds
the unkept change, is dropped, to be rebuilt from the store by the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import secrets
import time
import uuid
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from engine import Tensor
from engine.function import Function, Node

from .. import codec, compiled
from ..errors import (
    GraphLostError,
    SessionCorruptError,
    SessionExistsError,
    SessionMovedError,
    SessionNotFoundError,
    StoreUnavailableError,
)
from ..names import check_session_name
from ..settings import Settings
from .backends import Fenced, Meta, Store, StoreError, open_store
from .changes import VERBS, Verb, encode
from .records import pack, unpack
from .state import Session, SessionStore, _buffer, grad_of, iso

P = TypeVar("P")
R = TypeVar("R")

log = logging.getLogger("gradserve.journal")

FORMAT = 1  # version of records and checkpoints

# --- checkpoints ----------------------------------------------------------------------------


def checkpointable(s: Session) -> bool:
    """True when the bound tensors are plain leaves that share no memory, so their values,
    grads, flags and versions are the whole state (no graph, view or hook to keep)."""
    seen: set[int] = set()
    tensors: dict[int, Tensor] = {id(t): t for t in s.tensors.values()}
    for t in tensors.values():
        g = t._grad
        if t.grad_fn is not None or t._hooks or t._base is not None:
            return False
        parts = [t] if g is None else [t, g]
        if g is not None and (g.grad_fn is not None or g._hooks or id(g) in tensors):
            return False
        for p in parts:
            buf = id(_buffer(p._data))
            if buf in seen or not p._data.flags.writeable:
                return False
            seen.add(buf)
    return True


def _array_head(arr: np.ndarray) -> dict[str, Any]:
    return {"dtype": codec.dtype_name(arr.dtype), "shape": list(arr.shape), "nbytes": arr.nbytes}


def snapshot(s: Session) -> bytes:
    """The checkpoint of a ``checkpointable`` session, or, for any other session, the
    state with its graphs dropped: each non-leaf keeps its value, flags, retained grad and
    grad_fn name, and the bound leaves its graph reached (see ``GraphLost``)."""
    entries: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    chunks: list[bytes] = []
    for name, t in s.tensors.items():
        if id(t) in index:
            entries[index[id(t)]]["names"].append(name)
            continue
        index[id(t)] = len(entries)
        entry = {"names": [name], "data": _array_head(t._data),
                 "requires_grad": t.requires_grad, "version": t._version, "grad": None}  # fmt: skip
        chunks.append(np.ascontiguousarray(t._data).tobytes())
        if (g := grad_of(t)) is not None:
            entry["grad"] = {**_array_head(g._data), "version": g._version}
            chunks.append(np.ascontiguousarray(g._data).tobytes())
        if t.grad_fn is not None:
            entry["lost"] = {"grad_fn": t.grad_fn.name, "retains_grad": t.retains_grad}
        entries.append(entry)
    for t_id, i in index.items():
        if "lost" in entries[i]:
            t = next(t for t in s.tensors.values() if id(t) == t_id)
            entries[i]["lost"]["leaves"] = sorted(
                index[id(leaf)] for leaf in _leaves(t) if id(leaf) in index
            )
    order = list(s.tensors)
    head = {"v": FORMAT, "work": s.work, "tensors": entries, "order": order}
    head["generator"] = s.generator.get_state()  # later draws continue the same stream
    head["programs"] = {name: p.stored for name, p in s.programs.items()}
    return pack(head, b"".join(chunks))


def _leaves(t: Tensor) -> list[Tensor]:
    """The leaf tensors ``t``'s graph reaches (iteratively: graphs may be 100,000 deep)."""
    seen: set[int] = set()
    leaves: list[Tensor] = []
    stack: list[Any] = [t.grad_fn]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for edge in getattr(node, "next_edges", ()):
            if edge is None:
                continue
            target = edge[0]
            if isinstance(target, Tensor):
                leaves.append(target)
            else:
                stack.append(target)
    return leaves


class GraphLost(Function):
    """The grad_fn of a non-leaf whose graph the store could not keep: any backward or
    grad that needs it answers 409 ``graph_lost`` (before any grad changes)."""

    name = "GraphLost"

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        names = ", ".join(repr(n) for n in getattr(ctx, "lost_names", ()))
        raise GraphLostError(
            f"the graph behind {names} was dropped: the session's journal passed "
            "GRADSERVE_JOURNAL_MAX_BYTES while a graph was held",
            hint=f"recompute {names} from the leaves (their values and grads are kept), "
            "then run backward again",
        )


_LOST_FNS: dict[str, type[GraphLost]] = {}


def _lost_fn(name: str) -> type[GraphLost]:
    """A ``GraphLost`` that shows the dropped node's name (``MulBackward0``)."""
    fn = _LOST_FNS.get(name)
    if fn is None:
        fn = _LOST_FNS[name] = type(name, (GraphLost,), {"name": name})
    return fn


def _lost_tensor(
    arr: np.ndarray, lost: dict[str, Any], names: list[str], leaves: list[Tensor]
) -> Tensor:
    node = Node(_lost_fn(str(lost["grad_fn"])))
    node.next_edges = tuple((leaf, 0) for leaf in leaves)
    node.out_shape, node.out_dtype = arr.shape, arr.dtype
    node.lost_names = names  # type: ignore[attr-defined]  # Node has a __dict__ for rare fields
    t = Tensor._make(arr, requires_grad=True, grad_fn=node)
    if lost.get("retains_grad"):
        t.retain_grad()
    return t


def _array(head: dict[str, Any], raw: memoryview, at: int) -> tuple[np.ndarray, int]:
    dtype = codec.dtype_of(head["dtype"])
    n = int(head["nbytes"])
    arr = np.frombuffer(raw[at : at + n], dtype=dtype.newbyteorder("<")).astype(dtype)
    return arr.reshape(head["shape"]), at + n


def restore(s: Session, blob: bytes) -> None:
    """Rebind the checkpoint's tensors in ``s`` (which must be empty)."""
    head, raw = unpack(blob)
    if head.get("v") != FORMAT:
        raise ValueError(f"checkpoint format {head.get('v')!r} is not {FORMAT}")
    if head.get("generator") is not None:
        s.generator.set_state(head["generator"])
    at = 0
    bound: dict[str, Tensor] = {}
    made: list[Tensor] = []
    for entry in head["tensors"]:
        arr, at = _array(entry["data"], raw, at)
        if (lost := entry.get("lost")) is not None:
            t = _lost_tensor(arr, lost, entry["names"], [made[i] for i in lost["leaves"]])
        else:
            t = Tensor(arr, requires_grad=bool(entry["requires_grad"]))
        made.append(t)
        t._vc[0] = int(entry["version"])
        if (gh := entry["grad"]) is not None:
            garr, at = _array(gh, raw, at)
            g = Tensor(garr)
            g._vc[0] = int(gh["version"])
            t._grad = g
        for name in entry["names"]:
            bound[name] = t
    s.tensors = {name: bound[name] for name in head["order"]}
    for name, body in head.get("programs", {}).items():
        if name not in s.programs:  # a live copy whose graphs were dropped keeps its own
            s.programs[name] = compiled.compile_stored(name, body)
    s.work = int(head["work"])
    s.bytes_bound = None


# --- the journal ----------------------------------------------------------------------------


@dataclass(eq=False)
class Tracked:
    """What the journal knows of a session held in memory."""

    journal: Journal
    seq: int = 0  # the last record applied to the in-memory copy
    since_checkpoint: int = 0  # records since the last checkpoint
    since_bytes: int = 0  # their bytes
    next_try: int = 0  # since_checkpoint at which a checkpoint is tried again
    dead: bool = False  # holds a change the store did not keep: never serve it again
    touched: float = field(default_factory=time.time)


_TRACKED: weakref.WeakKeyDictionary[Session, Tracked] = weakref.WeakKeyDictionary()


async def record(session: Session, verb: Verb[P, R], payload: P, result: R) -> None:
    """Append what a request changed (``mutate`` calls it under the session's lock, after
    the change and before the answer). Free for untracked sessions (memory store)."""
    tracked = _TRACKED.get(session)
    if tracked is not None:
        blob = encode(verb, payload, result, tracked.seq + 1)
        await tracked.journal.append(session, tracked, blob)


class Journal:
    """The sessions of one process, kept in ``sessions`` and, unless ``store`` is the memory
    backend, in ``store`` as journals."""

    def __init__(self, settings: Settings, sessions: SessionStore | Any, store: Store) -> None:
        self.settings = settings
        self._sessions = sessions  # a SessionStore, or an app's state holding one as .store
        self.store = store
        self.enabled = store.durable
        self.holder = uuid.uuid4().hex  # this replica, for leases
        self._opened = False
        self._loading: dict[tuple[str | None, str], asyncio.Lock] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self.swept = 0  # rounds of the background sweeper

    @classmethod
    def from_settings(cls, settings: Settings, sessions: SessionStore | Any) -> Journal:
        return cls(settings, sessions, open_store(settings.store))

    @property
    def sessions(self) -> SessionStore:
        """The in-memory sessions (read from the app's state: tests may replace them)."""
        s = self._sessions
        return s if isinstance(s, SessionStore) else s.store

    # -- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the store (``StoreError`` if unreachable) and start the sweeper."""
        await self._ready()
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self.sweep_forever(), name="gradserve-sweep")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        if self._opened:
            await self.store.close()
            self._opened = False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While the app serves: the store open (one unreachable at startup stops the
        process with the reason) and idle sessions swept in the background."""
        try:
            await self.start()
        except StoreError as exc:
            log.critical("gradserve cannot start: %s", exc)
            raise RuntimeError(f"gradserve cannot start: {exc}") from exc
        try:
            yield
        finally:
            await self.stop()

    async def _ready(self) -> None:
        if not self._opened:
            await self.store.open()
            self._opened = True
            if self.enabled:
                log.info("sessions are kept in %s", self.settings.store)

    async def reachable(self) -> bool:
        """Whether the store answers (always, for memory): what /readyz reports."""
        if not self.enabled:
            return True
        try:
            await self._ready()
            await self.store.meta(None, "-")
        except StoreError as exc:
            log.warning("readiness: session store unavailable: %s", exc)
            return False
        return True

    def _unavailable(self, exc: BaseException) -> StoreUnavailableError:
        log.error("session store unavailable: %s", exc)
        return StoreUnavailableError(f"the session store is unavailable: {exc}")

    # -- the routes' calls --------------------------------------------------------------------
    async def session(self, name: str, owner: str | None) -> Session:
        """The caller's session, current with the store (rebuilt or caught up if needed)."""
        if not self.enabled:
            return self.sessions.get(name, owner)
        try:
            await self._ready()
            return await self._current(name, owner)
        except StoreError as exc:
            raise self._unavailable(exc) from exc

    async def _current(self, name: str, owner: str | None) -> Session:
        s = self.sessions.peek(name, owner)
        tracked = None if s is None else _TRACKED.get(s)
        if s is not None and (tracked is None or tracked.dead):
            self.sessions.forget(s)
            s = tracked = None
        if self.store.shared:
            seq = await self._lease(name, owner)
            if seq is None:
                if s is not None:
                    self.sessions.forget(s)
                raise _not_found(name)
            if s is not None and tracked is not None and tracked.seq > seq:
                log.error("session %r: the store has fewer records than this replica", name)
                tracked.dead = True  # the store lost records: serve what it has
                self.sessions.forget(s)
                s = tracked = None
            if s is not None and tracked is not None and tracked.seq != seq:
                async with s.lock:
                    if not tracked.dead and tracked.seq != seq:
                        await self._catch_up(s, tracked, seq)
                if tracked.dead:
                    s = None
        if s is None:
            s = await self._load(name, owner)
        try:
            s = self.sessions.get(name, owner)  # touches; evicts if idle past its TTL here
        except SessionNotFoundError:
            s = await self._load(name, owner)  # another replica may have used it since
            s = self.sessions.get(name, owner)
        tracked = _TRACKED[s]
        if s.last_used - tracked.touched > min(1.0, s.ttl / 10):
            tracked.touched = s.last_used
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
            held = self.sessions.peek(name, owner)
            if held is not None and (t := _TRACKED.get(held)) is not None and not t.dead:
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
            tracked = Tracked(self, touched=meta.last_used)
            ck = await self.store.checkpoint(owner, name)
            if ck is not None:
                try:
                    restore(s, ck[1])
                except Exception as exc:  # noqa: BLE001 - any failure means a bad checkpoint
                    raise self._corrupt(name, ck[0], exc) from exc
                tracked.seq = ck[0]
            await self._catch_up(s, tracked, meta.seq)
            if not tracked.dead:
                break
        else:
            raise SessionMovedError(f"session {name!r} is changing too fast to be loaded")
        self.sessions.adopt(s)
        _TRACKED[s] = tracked
        log.info(
            "session %r rebuilt from the store: %d records in %.3f s",
            name,
            tracked.seq,
            time.perf_counter() - started,
        )
        return s

    async def _catch_up(self, s: Session, tracked: Tracked, acknowledged: int) -> None:
        """Apply the records the in-memory copy lacks, through record ``acknowledged`` at
        least (the store's last ``seq``): a journal that ends short of it lost a change
        that was answered, and is corrupt, never served one change short."""
        records = await self.store.records(s.owner, s.name, tracked.seq)
        if records and records[0][0] != tracked.seq + 1:
            # a checkpoint passed our copy: start again from it
            tracked.dead = True
            return
        # a long journal rebuilds a deep graph: the cyclic collector's passes over it
        # would cost more than the replay (nothing replayed is garbage until it ends)
        collecting = gc.isenabled()
        gc.disable()
        try:
            for seq, blob in records:
                try:
                    if seq != tracked.seq + 1:
                        raise ValueError(f"record {tracked.seq + 1} is missing")
                    head, raw = unpack(blob)
                    if head.get("q", seq) != seq:
                        raise ValueError(f"record {seq} says it is record {head['q']}")
                    verb = VERBS[head["k"]]
                    verb.apply(s, self.settings, verb.read(head, raw), True)
                except Exception as exc:  # noqa: BLE001 - any failure means a bad journal
                    tracked.dead = True
                    raise self._corrupt(s.name, seq, exc) from exc
                tracked.seq = seq
                tracked.since_checkpoint += 1
                tracked.since_bytes += len(blob)
        finally:
            if collecting:
                gc.enable()
        if tracked.seq < acknowledged:
            tracked.dead = True
            missing = ValueError(f"the journal ends at record {tracked.seq}")
            raise self._corrupt(s.name, tracked.seq + 1, missing)

    def _corrupt(self, name: str, seq: int, exc: BaseException) -> SessionCorruptError:
        log.error("session %r: journal record %d cannot be replayed: %r", name, seq, exc)
        return SessionCorruptError(
            f"session {name!r} cannot be rebuilt from its journal (record {seq}: "
            f"{type(exc).__name__})",
            hint="delete the session and create it again; other sessions are not affected",
        )

    async def create(self, name: str | None, owner: str | None) -> Session:
        """A new session, in memory and in the store (409 if either has the name)."""
        if not self.enabled:
            return self.sessions.create(name, owner)
        try:
            await self._ready()
            for _ in range(8):
                candidate = name if name is not None else "s-" + secrets.token_hex(6)
                check_session_name(candidate)
                stale = self.sessions.peek(candidate, owner)
                if stale is not None and await self.store.meta(owner, candidate) is None:
                    self.sessions.forget(stale)  # deleted through another replica
                s = self.sessions.create(candidate, owner)
                meta = Meta(owner, s.name, s.created, s.last_used, s.ttl)
                try:
                    created = await self.store.create(meta)
                except BaseException:
                    self.sessions.forget(s)
                    raise
                if created:
                    _TRACKED[s] = Tracked(self, touched=s.last_used)
                    return s
                self.sessions.forget(s)
                if name is not None:
                    break
        except StoreError as exc:
            raise self._unavailable(exc) from exc
        raise SessionExistsError(f"session {name!r} already exists", hint="pick another name")

    async def summaries(self, owner: str | None) -> list[dict[str, Any]]:
        """``SessionSummaryOut`` of every session of ``owner`` in the store."""
        if not self.enabled:
            return [_summary(s) for s in self.sessions.list(owner)]
        try:
            await self._ready()
            metas = await self.store.listing(owner)
        except StoreError as exc:
            raise self._unavailable(exc) from exc
        now = time.time()
        out = []
        for m in metas:
            if m.expires <= now:
                continue
            s = self.sessions.peek(m.name, owner)
            tracked = None if s is None else _TRACKED.get(s)
            if s is not None and tracked is not None and tracked.seq == m.seq:
                out.append(_summary(s))
                continue
            out.append(
                {"name": m.name, "created": iso(m.created), "last_used": iso(m.last_used),
                 "expires": iso(m.expires), "bytes": m.bytes, "tensor_count": m.tensor_count}
            )  # fmt: skip
        return out

    async def delete(self, name: str, owner: str | None) -> None:
        """Drop the session from the store and memory, waiting for its running request;
        one whose journal cannot be replayed can still be deleted."""
        name = check_session_name(name)
        s = self.sessions.get(name, owner) if not self.enabled else self.sessions.peek(name, owner)
        if s is not None:
            async with s.lock:
                await self._delete_held(s, name, owner)
        else:
            await self._delete_held(None, name, owner)

    async def _delete_held(self, s: Session | None, name: str, owner: str | None) -> None:
        if self.enabled:
            try:
                await self._ready()
                found = await self.store.delete(owner, name)
            except StoreError as exc:
                raise self._unavailable(exc) from exc
            if s is not None and (tracked := _TRACKED.get(s)) is not None:
                tracked.dead = True
            if not found:
                if s is not None:
                    self.sessions.forget(s)
                raise _not_found(name)
        if s is not None:
            self.sessions.forget(s)

    # -- appending ----------------------------------------------------------------------------
    async def append(self, s: Session, tracked: Tracked, blob: bytes) -> None:
        if tracked.dead:
            raise SessionMovedError(f"session {s.name!r} was reloaded; the change was not kept")
        # bytes: the steps' upper bound when they kept one (walking every tensor per
        # request costs), else exact; what GET /v1/sessions shows from the store
        nbytes = s.bytes_bound if s.bytes_bound is not None else s.nbytes()
        meta = Meta(s.owner, s.name, s.created, s.last_used, s.ttl, tracked.seq + 1,
                    nbytes, len(s.tensors))  # fmt: skip
        try:
            await self.store.append(meta, blob)
        except Fenced as exc:
            self._drop(s, tracked)
            log.warning("session %r: another replica extended its journal; reloading", s.name)
            raise SessionMovedError(
                f"session {s.name!r} was changed by another replica; this change was not kept"
            ) from exc
        except StoreError as exc:
            self._drop(s, tracked)
            raise self._unavailable(exc) from exc
        tracked.seq += 1
        tracked.touched = s.last_used
        tracked.since_checkpoint += 1
        tracked.since_bytes += len(blob)
        if (
            tracked.since_checkpoint >= max(self.settings.checkpoint_records, tracked.next_try)
            or tracked.since_bytes > self.settings.journal_max_bytes
        ):
            await self._checkpoint(s, tracked)

    def _drop(self, s: Session, tracked: Tracked) -> None:
        tracked.dead = True
        self.sessions.forget(s)

    async def _checkpoint(self, s: Session, tracked: Tracked) -> None:
        """Write a checkpoint if the session has no graph; else try again a bit later, and
        past ``journal_max_bytes`` drop the graphs (the live copy too, so a restart
        answers exactly as this process will)."""
        lossy = not checkpointable(s)
        if lossy and tracked.since_bytes <= self.settings.journal_max_bytes:
            step = max(1, self.settings.checkpoint_records // 8)
            tracked.next_try = tracked.since_checkpoint + step
            return
        blob = snapshot(s)
        try:
            await self.store.put_checkpoint(s.owner, s.name, tracked.seq, blob)
        except (StoreError, Fenced) as exc:  # the records are kept: only the shortcut is lost
            log.warning("session %r: checkpoint not written: %s", s.name, exc)
            return
        if lossy:
            log.warning(
                "session %r: journal past %d bytes while holding a graph: graphs dropped",
                s.name,
                self.settings.journal_max_bytes,
            )
            restore(s, blob)
        tracked.since_checkpoint = tracked.since_bytes = tracked.next_try = 0

    # -- expiry -------------------------------------------------------------------------------
    async def sweep(self) -> int:
        """Drop expired sessions from the store and memory; returns how many."""
        dropped = self.sessions.sweep()
        if not self.enabled:
            return dropped
        await self._ready()
        for owner, name in await self.store.expired(time.time()):
            s = self.sessions.peek(name, owner)
            if s is not None and (s.lock.locked() or s.expires > time.time()):
                continue  # in use here: its last_used is newer than the store's
            if await self.store.delete(owner, name):
                dropped += 1
            if s is not None:
                self.sessions.forget(s)
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


def _not_found(name: str) -> SessionNotFoundError:
    return SessionNotFoundError(
        f"no session {name!r}", hint="sessions expire after being idle; create it again"
    )


def _summary(s: Session) -> dict[str, Any]:
    return {"name": s.name, "created": iso(s.created), "last_used": iso(s.last_used),
            "expires": iso(s.expires), "bytes": s.nbytes(), "tensor_count": len(s.tensors)}  # fmt: skip


__all__ = ["Journal", "checkpointable", "record", "restore", "snapshot"]
