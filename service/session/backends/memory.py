"""The memory backend: the store interface over dicts, for ``GRADSERVE_STORE=memory``
(where the journal is off) and for tests of the journal that need no files."""

from __future__ import annotations

import time
from dataclasses import replace

from .base import Fenced, Full, Meta, Store, session_key


class MemoryStore(Store):
    durable = False

    def __init__(self) -> None:
        self._meta: dict[str, Meta] = {}
        self._records: dict[str, list[tuple[int, bytes]]] = {}
        self._checkpoints: dict[str, tuple[int, bytes]] = {}
        self._leases: dict[str, tuple[str, float]] = {}

    async def create(self, meta: Meta, limit: int | None = None) -> bool:
        key = session_key(meta.owner, meta.name)
        if key in self._meta:
            return False
        if limit is not None and (held := await self.count(meta.owner, meta.last_used)) >= limit:
            raise Full(held)
        self._meta[key] = replace(meta, seq=0)
        self._records[key] = []
        return True

    async def count(self, owner: str | None, now: float) -> int:
        return sum(1 for m in self._meta.values() if m.owner == owner and m.expires > now)

    async def meta(self, owner: str | None, name: str) -> Meta | None:
        m = self._meta.get(session_key(owner, name))
        return None if m is None else replace(m)

    async def listing(self, owner: str | None) -> list[Meta]:
        return [replace(m) for m in self._meta.values() if m.owner == owner]

    async def delete(self, owner: str | None, name: str) -> bool:
        key = session_key(owner, name)
        self._records.pop(key, None)
        self._checkpoints.pop(key, None)
        self._leases.pop(key, None)
        return self._meta.pop(key, None) is not None

    async def append(self, meta: Meta, record: bytes) -> None:
        key = session_key(meta.owner, meta.name)
        kept = self._meta.get(key)
        if kept is None or kept.seq != meta.seq - 1:
            raise Fenced(key)
        self._records[key].append((meta.seq, record))
        kept.seq, kept.last_used = meta.seq, meta.last_used
        kept.bytes, kept.tensor_count = meta.bytes, meta.tensor_count

    async def records(self, owner: str | None, name: str, after: int) -> list[tuple[int, bytes]]:
        return [r for r in self._records.get(session_key(owner, name), []) if r[0] > after]

    async def put_checkpoint(self, owner: str | None, name: str, seq: int, blob: bytes) -> None:
        key = session_key(owner, name)
        kept = self._meta.get(key)
        if kept is None or kept.seq != seq:
            raise Fenced(key)
        self._checkpoints[key] = (seq, blob)
        self._records[key] = [r for r in self._records[key] if r[0] > seq]

    async def checkpoint(self, owner: str | None, name: str) -> tuple[int, bytes] | None:
        return self._checkpoints.get(session_key(owner, name))

    async def touch(self, owner: str | None, name: str, last_used: float) -> None:
        kept = self._meta.get(session_key(owner, name))
        if kept is not None:
            kept.last_used = max(kept.last_used, last_used)

    async def expired(self, now: float) -> list[tuple[str | None, str]]:
        return [(m.owner, m.name) for m in self._meta.values() if m.expires <= now]

    async def lease(
        self, owner: str | None, name: str, holder: str, seconds: float, force: bool = False
    ) -> tuple[float, int | None]:
        key = session_key(owner, name)
        now = time.monotonic()
        current = self._leases.get(key)
        kept = self._meta.get(key)
        seq = None if kept is None else kept.seq
        if not force and current is not None and current[0] != holder and current[1] > now:
            return current[1] - now, seq
        self._leases[key] = (holder, now + seconds)
        return 0.0, seq
