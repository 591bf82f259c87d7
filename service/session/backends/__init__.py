"""Where durable sessions live: one small async interface, three backends.

A session in a store is its metadata (``Meta``), its journal (records numbered
1, 2, ... by ``seq``) and at most one checkpoint (the state after record
``seq``; the records up to it are dropped). ``append`` is fenced by the
sequence number: it succeeds only if the journal's last record is the one the
caller expects, so two writers can never fork a journal.

``open_store(url)`` picks the backend from ``GRADSERVE_STORE``: ``memory``,
``sqlite:///path`` or ``redis://host:port/db``. The store never sees API keys
(owners are digests) and holds only JSON and raw bytes, never pickles.
"""

from __future__ import annotations

from .base import Fenced, Full, Meta, Store, StoreError, session_key
from .memory import MemoryStore
from .redis import RedisStore
from .sqlite import SQLiteStore


def open_store(url: str) -> Store:
    """The backend named by ``url`` (not yet opened)."""
    if url == "memory":
        return MemoryStore()
    if url.startswith("sqlite:///"):
        return SQLiteStore(url.removeprefix("sqlite:///"))
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(url)
    raise ValueError(
        f"GRADSERVE_STORE={url!r} is not 'memory', 'sqlite:///path' or 'redis://host:port/db'"
    )


__all__ = [
    "Fenced",
    "Full",
    "MemoryStore",
    "Meta",
    "RedisStore",
    "SQLiteStore",
    "Store",
    "StoreError",
    "open_store",
    "session_key",
]
