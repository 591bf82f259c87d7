"""Running totals of what the sessions held by one process count: bytes of all of them
and, per key, their bytes and how many there are.

A budget check (``quotas.over_budget``) reads these totals instead of summing every
session (or walking a session's graph), so one client's request costs the same however
much other clients hold. Each session's share (``Session.counted``) changes in one
place, ``Session.settle`` (after every verb, restore and replay); it joins when the
manager adopts it and leaves when the manager stops holding it. Verbs run in worker
threads too, so the totals move under a lock.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .state import Session


class Ledger:
    """The byte totals of the sessions that joined it: the server's and each key's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0
        self._keys: dict[str | None, list[int]] = {}  # owner -> [sessions, bytes]

    def join(self, s: Session) -> None:
        """Count ``s`` (its bytes made exact first)."""
        s.ledger = None
        held = s.settle()
        with self._lock:
            s.ledger = self
            s.counted = held
            self.total += held
            key = self._keys.setdefault(s.owner, [0, 0])
            key[0] += 1
            key[1] += held

    def leave(self, s: Session) -> None:
        """Stop counting ``s`` (no-op if it is not counted here)."""
        with self._lock:
            if s.ledger is not self:
                return
            s.ledger = None
            self.total -= s.counted
            key = self._keys[s.owner]
            key[0] -= 1
            key[1] -= s.counted
            if key[0] == 0:
                del self._keys[s.owner]
        s.held_elsewhere = None  # the partial that holds ``s``: freed without the cyclic gc

    def move(self, s: Session, held: int) -> None:
        """``s`` now counts ``held`` bytes."""
        with self._lock:
            if s.ledger is not self:
                s.counted = held
                return
            delta = held - s.counted
            s.counted = held
            self.total += delta
            self._keys[s.owner][1] += delta

    def held(self, exclude: Session | None = None) -> tuple[int, int]:
        """Bytes counted for every session but ``exclude``, and for those of its key."""
        owner = exclude.owner if exclude is not None else None
        with self._lock:
            total = self.total
            key = self._keys.get(owner)
            same = key[1] if key is not None else 0
            if exclude is not None and exclude.ledger is self:
                total -= exclude.counted
                same -= exclude.counted
        return total, same

    def sessions(self, owner: str | None) -> int:
        """How many sessions of ``owner`` are counted."""
        key = self._keys.get(owner)
        return key[0] if key is not None else 0

    def owners(self) -> dict[str | None, tuple[int, int]]:
        """owner -> (sessions, bytes): a snapshot, for tests and metrics."""
        with self._lock:
            return {o: (k[0], k[1]) for o, k in self._keys.items()}
