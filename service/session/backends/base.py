"""The store interface and its records of sessions (see ``service.session.backends``)."""

from __future__ import annotations

import abc
from dataclasses import dataclass


class StoreError(Exception):
    """The store cannot be reached or did not keep a write."""


class Fenced(Exception):
    """An append or checkpoint whose expected sequence number is not the journal's last."""


class Full(Exception):
    """A create refused: the owner already holds ``held`` live sessions, the limit."""

    def __init__(self, held: int) -> None:
        super().__init__(f"the owner holds {held} sessions")
        self.held = held


@dataclass
class Meta:
    """What the store keeps about a session besides its journal."""

    owner: str | None
    name: str
    created: float
    last_used: float
    ttl: float
    seq: int = 0  # number of the last record
    bytes: int = 0
    tensor_count: int = 0

    @property
    def expires(self) -> float:
        return self.last_used + self.ttl


def session_key(owner: str | None, name: str) -> str:
    """One string per (owner, name); owners are hex digests, so '-' cannot collide."""
    return f"{owner or '-'}/{name}"


class Store(abc.ABC):
    """The async interface every backend implements."""

    #: False only for the memory backend: nothing outlives the process.
    durable: bool = True
    #: True when several processes may serve the same sessions (leases needed).
    shared: bool = False

    async def open(self) -> None:  # noqa: B027 - optional for a backend
        """Connect and create what is missing; raise ``StoreError`` if unreachable."""

    async def close(self) -> None:  # noqa: B027 - optional for a backend
        """Release connections."""

    @abc.abstractmethod
    async def create(self, meta: Meta, limit: int | None = None) -> bool:
        """Add a session with an empty journal; False if the name is taken. With ``limit``,
        raise ``Full`` instead when the owner holds that many live sessions, counted in
        the same atomic step as the insert (exact across processes sharing the store)."""

    @abc.abstractmethod
    async def count(self, owner: str | None, now: float) -> int:
        """The owner's sessions not expired at ``now``."""

    @abc.abstractmethod
    async def meta(self, owner: str | None, name: str) -> Meta | None: ...

    @abc.abstractmethod
    async def listing(self, owner: str | None) -> list[Meta]: ...

    @abc.abstractmethod
    async def delete(self, owner: str | None, name: str) -> bool:
        """Drop the session, its journal, checkpoint and lease; False if it was absent."""

    @abc.abstractmethod
    async def append(self, meta: Meta, record: bytes) -> None:
        """Add record ``meta.seq`` if the journal's last record is ``meta.seq - 1``, and
        store ``meta``'s last_used, bytes and tensor_count; else raise ``Fenced``."""

    @abc.abstractmethod
    async def records(self, owner: str | None, name: str, after: int) -> list[tuple[int, bytes]]:
        """The records numbered above ``after``, in order."""

    @abc.abstractmethod
    async def put_checkpoint(self, owner: str | None, name: str, seq: int, blob: bytes) -> None:
        """Keep ``blob`` as the state after record ``seq`` (the journal's last; else
        ``Fenced``) and drop the records up to it."""

    @abc.abstractmethod
    async def checkpoint(self, owner: str | None, name: str) -> tuple[int, bytes] | None: ...

    @abc.abstractmethod
    async def touch(self, owner: str | None, name: str, last_used: float) -> None: ...

    @abc.abstractmethod
    async def expired(self, now: float) -> list[tuple[str | None, str]]:
        """Sessions idle past their TTL."""

    async def lease(
        self, owner: str | None, name: str, holder: str, seconds: float, force: bool = False
    ) -> tuple[float, int | None]:
        """Take or renew the session's lease for ``holder`` (``force``: whoever holds it).

        Returns the seconds left on another holder's lease (0.0 when ``holder`` now
        holds it) and the journal's last ``seq`` (None when the session is absent).
        Only shared stores need it; the others grant every lease."""
        m = await self.meta(owner, name)
        return 0.0, None if m is None else m.seq
