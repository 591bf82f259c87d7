"""GRADSERVE_KEY_MAX_SESSIONS is exact across the workers and replicas sharing a store:
the sessions of a key are counted in the store, in the same atomic step that adds one
(a SQLite transaction, a Redis script), so two processes cannot both take the last place."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from svc_helpers import SyncClient, assert_problem

from service.app import create_app
from service.session.backends import Full, Meta, open_store
from service.settings import Settings

A = {"Authorization": "Bearer key-a"}
B = {"Authorization": "Bearer key-b"}


@pytest.fixture(params=["sqlite", "redis"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "redis":
        yield request.getfixturevalue("redis_url")
    else:
        yield f"sqlite:///{tmp_path / 'g.db'}"


def _worker(url: str, **kw: Any) -> SyncClient:
    settings = Settings(_env_file=None, store=url, api_keys="key-a,key-b", **kw)  # type: ignore[call-arg]
    return SyncClient(create_app(settings))


def test_the_key_limit_holds_across_workers(shared_url: str) -> None:
    with (
        _worker(shared_url, key_max_sessions=3) as one,
        _worker(shared_url, key_max_sessions=3) as two,
    ):
        for client, name in ((one, "a1"), (two, "a2"), (one, "a3")):
            r = client.post("/v1/sessions", json={"name": name}, headers=A)
            assert r.status_code == 201, r.text
        for client in (one, two):  # each worker holds fewer than 3: the store has 3
            r = client.post("/v1/sessions", json={"name": "a4"}, headers=A)
            body = assert_problem(r, 429, "limit_exceeded")
            assert "holds 3 sessions" in body["detail"] and r.headers["retry-after"]
        assert one.get("/readyz", headers=A).json()["sessions"] == 3  # counted in the store
        assert two.post("/v1/sessions", json={"name": "b1"}, headers=B).status_code == 201
        assert two.delete("/v1/sessions/a1", headers=A).status_code == 204  # via the other
        assert one.post("/v1/sessions", json={"name": "a4"}, headers=A).status_code == 201
        r = two.post("/v1/sessions", headers=A)
        assert_problem(r, 429, "limit_exceeded")


def test_concurrent_creates_never_pass_the_limit(shared_url: str) -> None:
    """Two threads, each with its own connection to the same database, racing to create
    six sessions each for one key: exactly the limit is created."""

    def worker(first: int) -> list[bool | str]:
        async def go() -> list[bool | str]:
            store = open_store(shared_url)
            await store.open()
            out: list[bool | str] = []
            try:
                for i in range(first, first + 6):
                    try:
                        out.append(await store.create(Meta("ab" * 16, f"s{i}", 1.0, 1.0, 1e12), 5))
                    except Full:
                        out.append("full")
            finally:
                await store.close()
            return out

        return asyncio.run(go())

    with ThreadPoolExecutor(2) as pool:
        results = [r for rs in pool.map(worker, (0, 6)) for r in rs]
    assert results.count(True) == 5 and results.count("full") == 7


def test_expired_sessions_do_not_count(shared_url: str) -> None:
    async def scenario() -> None:
        store = open_store(shared_url)
        await store.open()
        try:
            owner = "cd" * 16
            assert await store.create(Meta(owner, "old", 0.0, 0.0, 10.0), 1)  # expired at 10
            assert await store.count(owner, 100.0) == 0
            assert await store.create(Meta(owner, "new", 100.0, 100.0, 10.0), 1)
            with pytest.raises(Full) as info:
                await store.create(Meta(owner, "newer", 101.0, 101.0, 10.0), 1)
            assert info.value.held == 1
            assert not await store.create(Meta(owner, "new", 101.0, 101.0, 10.0), 1)  # taken
            assert await store.count(owner, 101.0) == 1
            assert await store.count(None, 101.0) == 0
        finally:
            await store.close()

    asyncio.run(scenario())
