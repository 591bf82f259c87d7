"""The store interface, the same on each backend (memory, a SQLite file, a real Redis):
names are unique per owner, appends are fenced by sequence number, a checkpoint drops the
records up to it, leases exclude other holders until they lapse."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.session.backends import Fenced, MemoryStore, Meta, Store, open_store


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "redis":
        yield request.getfixturevalue("redis_url")
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sub' / 'g.db'}"
    else:
        yield "memory"


def test_store_contract(store_url: str) -> None:
    asyncio.run(_contract(open_store(store_url)))


async def _contract(store: Store) -> None:
    await store.open()
    try:
        owner = "ab" * 16
        m = Meta(owner, "s1", created=100.0, last_used=100.0, ttl=50.0)
        assert await store.create(m)
        assert not await store.create(m)
        assert await store.create(Meta(None, "s1", 101.0, 101.0, 10.0))  # another owner
        assert [x.name for x in await store.listing(owner)] == ["s1"]
        assert [(x.owner, x.seq) for x in await store.listing(None)] == [(None, 0)]
        for seq in (1, 2, 3):
            await store.append(Meta(owner, "s1", 100.0, 100.0 + seq, 50.0, seq, 8 * seq, seq),
                               b"rec%d" % seq)  # fmt: skip
        with pytest.raises(Fenced):  # a second writer that also read seq 2
            await store.append(Meta(owner, "s1", 100.0, 110.0, 50.0, 3), b"fork")
        with pytest.raises(Fenced):
            await store.append(Meta(owner, "nope", 100.0, 110.0, 50.0, 1), b"x")
        meta = await store.meta(owner, "s1")
        assert meta is not None
        assert (meta.seq, meta.last_used, meta.bytes, meta.tensor_count) == (3, 103.0, 24, 3)
        assert await store.records(owner, "s1", 1) == [(2, b"rec2"), (3, b"rec3")]
        with pytest.raises(Fenced):  # a checkpoint must be of the last record
            await store.put_checkpoint(owner, "s1", 2, b"old")
        await store.put_checkpoint(owner, "s1", 3, b"\x00ck\xff")
        assert await store.checkpoint(owner, "s1") == (3, b"\x00ck\xff")
        assert await store.records(owner, "s1", 0) == []
        await store.append(Meta(owner, "s1", 100.0, 104.0, 50.0, 4), b"rec4")
        assert await store.records(owner, "s1", 0) == [(4, b"rec4")]
        assert await store.records(owner, "s1", 3) == [(4, b"rec4")]
        await store.touch(owner, "s1", 140.0)
        assert sorted(await store.expired(150.0)) == [(None, "s1")]  # 101 + 10
        assert set(await store.expired(191.0)) == {(None, "s1"), (owner, "s1")}
        if store.shared or isinstance(store, MemoryStore):
            assert await store.lease(owner, "s1", "A", 5.0) == (0.0, 4)
            wait, seq = await store.lease(owner, "s1", "B", 5.0)
            assert 0 < wait <= 5.0 and seq == 4
            assert await store.lease(owner, "s1", "B", 5.0, force=True) == (0.0, 4)
            assert (await store.lease(owner, "s1", "A", 0.05))[0] > 0
        assert await store.delete(owner, "s1")
        assert not await store.delete(owner, "s1")
        assert await store.meta(owner, "s1") is None
        assert await store.checkpoint(owner, "s1") is None
        assert await store.records(owner, "s1", 0) == []
        assert await store.listing(owner) == []
        assert await store.lease(owner, "s1", "C", 1.0) == (0.0, None)
    finally:
        await store.close()


def test_unknown_store_url() -> None:
    with pytest.raises(ValueError, match="GRADSERVE_STORE"):
        open_store("postgres://x")
