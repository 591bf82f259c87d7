"""Durable sessions: a session is its journal.

The engine is deterministic, so every request that changes a session appends one
record (the validated request; a leaf's values as raw bytes) in the critical section
that applied it, before the answer is sent (``mutate`` calls ``record``), and a session
missing from memory is rebuilt by replaying its records through the same verbs
(``replay``). A checkpoint (``checkpoints``) bounds the replay. Nothing is ever
unpickled: records and checkpoints are JSON headers and raw arrays.

A session held by the memory store has no journal: ``record`` returns at once. A change
the store does not keep is not acknowledged: the request answers 503
(``store_unavailable`` or ``session_moved``) and the in-memory copy, which holds the
unkept change, is dropped, to be rebuilt from the store by the next request.
"""

from __future__ import annotations

import gc
import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import SessionCorruptError, SessionMovedError, StoreUnavailableError
from ..settings import Settings
from .backends import Fenced, Meta, Store, StoreError
from .changes import VERBS, Verb, encode
from .checkpoints import checkpointable, restore, snapshot
from .records import unpack
from .state import Session

P = TypeVar("P")
R = TypeVar("R")

log = logging.getLogger("gradserve.journal")


@dataclass(eq=False)
class Tracked:
    """The journal of a session held in memory: where it is kept and how far it goes."""

    store: Store
    settings: Settings
    drop: Callable[[Session], None]  # stop holding the session (it holds an unkept change)
    seq: int = 0  # the last record applied to the in-memory copy
    since_checkpoint: int = 0  # records since the last checkpoint
    since_bytes: int = 0  # their bytes
    next_try: int = 0  # since_checkpoint at which a checkpoint is tried again
    dead: bool = False  # holds a change the store did not keep: never serve it again
    touched: float = field(default_factory=time.time)


_TRACKED: weakref.WeakKeyDictionary[Session, Tracked] = weakref.WeakKeyDictionary()


def tracked(s: Session) -> Tracked | None:
    """The journal of ``s`` (None: the memory store keeps none)."""
    return _TRACKED.get(s)


def track(s: Session, t: Tracked) -> None:
    _TRACKED[s] = t


async def record(session: Session, verb: Verb[P, R], payload: P, result: R) -> None:
    """Append what a request changed (``mutate`` calls it under the session's lock, after
    the change and before the answer). Free for untracked sessions (memory store)."""
    t = _TRACKED.get(session)
    if t is not None:
        await append(session, t, encode(verb, payload, result, t.seq + 1))


def unavailable(exc: BaseException) -> StoreUnavailableError:
    log.error("session store unavailable: %s", exc)
    return StoreUnavailableError(f"the session store is unavailable: {exc}")


def corrupt(name: str, seq: int, exc: BaseException) -> SessionCorruptError:
    log.error("session %r: journal record %d cannot be replayed: %r", name, seq, exc)
    return SessionCorruptError(
        f"session {name!r} cannot be rebuilt from its journal (record {seq}: {type(exc).__name__})",
        hint="delete the session and create it again; other sessions are not affected",
    )


async def append(s: Session, t: Tracked, blob: bytes) -> None:
    if t.dead:
        raise SessionMovedError(f"session {s.name!r} was reloaded; the change was not kept")
    # bytes: the steps' upper bound when they kept one (walking every tensor per
    # request costs), else exact; what GET /v1/sessions shows from the store
    nbytes = s.bytes_bound if s.bytes_bound is not None else s.nbytes()
    meta = Meta(s.owner, s.name, s.created, s.last_used, s.ttl, t.seq + 1,
                nbytes, len(s.tensors))  # fmt: skip
    try:
        await t.store.append(meta, blob)
    except Fenced as exc:
        t.dead = True
        t.drop(s)
        log.warning("session %r: another replica extended its journal; reloading", s.name)
        raise SessionMovedError(
            f"session {s.name!r} was changed by another replica; this change was not kept"
        ) from exc
    except StoreError as exc:
        t.dead = True
        t.drop(s)
        raise unavailable(exc) from exc
    t.seq += 1
    t.touched = s.last_used
    t.since_checkpoint += 1
    t.since_bytes += len(blob)
    settings = t.settings
    if (
        t.since_checkpoint >= max(settings.checkpoint_records, t.next_try)
        or t.since_bytes > settings.journal_max_bytes
    ):
        await checkpoint(s, t)


async def checkpoint(s: Session, t: Tracked) -> None:
    """Write a checkpoint if the session has no graph; else try again a bit later, and
    past ``journal_max_bytes`` drop the graphs (the live copy too, so a restart answers
    exactly as this process will)."""
    settings = t.settings
    lossy = not checkpointable(s)
    if lossy and t.since_bytes <= settings.journal_max_bytes:
        t.next_try = t.since_checkpoint + max(1, settings.checkpoint_records // 8)
        return
    blob = snapshot(s)
    try:
        await t.store.put_checkpoint(s.owner, s.name, t.seq, blob)
    except (StoreError, Fenced) as exc:  # the records are kept: only the shortcut is lost
        log.warning("session %r: checkpoint not written: %s", s.name, exc)
        return
    if lossy:
        log.warning(
            "session %r: journal past %d bytes while holding a graph: graphs dropped",
            s.name,
            settings.journal_max_bytes,
        )
        restore(s, blob)
    t.since_checkpoint = t.since_bytes = t.next_try = 0


async def replay(s: Session, t: Tracked, acknowledged: int) -> None:
    """Apply the records the in-memory copy lacks, through record ``acknowledged`` at
    least (the store's last ``seq``): a journal that ends short of it lost a change that
    was answered, and is corrupt, never served one change short."""
    records = await t.store.records(s.owner, s.name, t.seq)
    if records and records[0][0] != t.seq + 1:
        t.dead = True  # a checkpoint passed our copy: start again from it
        return
    # a long journal rebuilds a deep graph: the cyclic collector's passes over it would
    # cost more than the replay (nothing replayed is garbage until it ends)
    collecting = gc.isenabled()
    gc.disable()
    try:
        for seq, blob in records:
            try:
                if seq != t.seq + 1:
                    raise ValueError(f"record {t.seq + 1} is missing")
                head, raw = unpack(blob)
                if head.get("q", seq) != seq:
                    raise ValueError(f"record {seq} says it is record {head['q']}")
                verb = VERBS[head["k"]]
                verb.apply(s, t.settings, verb.read(head, raw), True)
            except Exception as exc:  # noqa: BLE001 - any failure means a bad journal
                t.dead = True
                raise corrupt(s.name, seq, exc) from exc
            t.seq = seq
            t.since_checkpoint += 1
            t.since_bytes += len(blob)
    finally:
        if collecting:
            gc.enable()
    s.settle()  # replayed verbs may leave no byte count: the totals read an exact one
    if t.seq < acknowledged:
        t.dead = True
        raise corrupt(s.name, t.seq + 1, ValueError(f"the journal ends at record {t.seq}"))


__all__ = ["Tracked", "append", "record", "replay", "track", "tracked"]
