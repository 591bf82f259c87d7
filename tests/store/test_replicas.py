"""Two replicas on one real Redis: a replica killed mid-training, the other continuing, the
first restarted; requests alternating between live replicas; concurrent requests for one
session on both. Identical answers, no 404, no stale read, no forked journal."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from store_helpers import Server, http_run, same, script

pytestmark = pytest.mark.integration


def _pair(tmp_path: Path, url: str, servers: list[Server], lease: str) -> tuple[Server, Server]:
    env = {"GRADSERVE_STORE": url, "GRADSERVE_LEASE_SECONDS": lease,
           "GRADSERVE_CHECKPOINT_RECORDS": "5"}  # fmt: skip
    a, b = Server(env, tmp_path / "a.log"), Server(env, tmp_path / "b.log")
    servers += [a, b]
    return a.start(), b.start()


def test_replica_killed_then_restarted(
    tmp_path: Path, redis_url: str, servers: list[Server], reference: list[Any]
) -> None:
    a, b = _pair(tmp_path, redis_url, servers, lease="0.5")
    steps = script()
    got = http_run(a.url, steps[:16])
    a.kill()  # mid-training, holding the lease
    got += http_run(b.url, steps[16:30])
    a.start()
    got += http_run(a.url, steps[30:])
    same(got, reference)


def test_alternating_replicas_never_read_stale(
    tmp_path: Path, redis_url: str, servers: list[Server], reference: list[Any]
) -> None:
    a, b = _pair(tmp_path, redis_url, servers, lease="0.2")
    steps = script()
    got: list[Any] = []
    for lo in range(0, len(steps), 7):  # the same replica gets A's stale copy back each time
        got += http_run((a if lo // 7 % 2 == 0 else b).url, steps[lo : lo + 7])
    same(got, reference)


def test_concurrent_requests_on_two_replicas_never_fork(
    tmp_path: Path, redis_url: str, servers: list[Server]
) -> None:
    a, b = _pair(tmp_path, redis_url, servers, lease="0.3")
    http_run(a.url, [("POST", "/v1/sessions", {"name": "nb"}),
                      ("PUT", "/v1/sessions/nb/tensors/x", {"data": [1.0, 2.0], "requires_grad": True})])  # fmt: skip
    statuses: dict[str, int] = {}

    def hammer(server: Server, tag: str) -> None:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            for i in range(8):
                body = {"out": f"{tag}{i}", "expr": f"x * {i + 1}"}
                statuses[f"{tag}{i}"] = c.post("/v1/sessions/nb/ops", json=body).status_code

    threads = [threading.Thread(target=hammer, args=(s, t)) for s, t in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(statuses.values()) <= {201, 503}, statuses
    kept = sorted(n for n, s in statuses.items() if s == 201)
    assert kept, statuses
    r = redis.Redis.from_url(redis_url)
    assert int(r.hget("gs:m:-/nb", "seq") or 0) == 1 + len(kept)  # one record per 2xx, no fork
    views = []
    for server in (a, b, Server(a.env, tmp_path / "c.log")):
        if server.proc is None:
            servers.append(server.start())
        body = httpx.get(f"{server.url}/v1/sessions/nb", timeout=30).json()
        views.append(sorted(t["name"] for t in body["tensors"]))
    assert views[0] == views[1] == views[2] == sorted(["x", *kept])


def test_listing_deletion_and_expiry_go_through_the_store(
    tmp_path: Path, redis_url: str, servers: list[Server]
) -> None:
    env = {"GRADSERVE_STORE": redis_url, "GRADSERVE_LEASE_SECONDS": "0.2",
           "GRADSERVE_SESSION_TTL_SECONDS": "1.5", "GRADSERVE_SWEEP_SECONDS": "0.1"}  # fmt: skip
    a = Server(env, tmp_path / "a.log").start()
    b = Server(env, tmp_path / "b.log").start()
    servers += [a, b]
    ca, cb = httpx.Client(base_url=a.url, timeout=30), httpx.Client(base_url=b.url, timeout=30)
    for name in ("s1", "s2"):
        assert ca.post("/v1/sessions", json={"name": name}).status_code == 201
        assert ca.put(f"/v1/sessions/{name}/tensors/x", json={"data": [1.0]}).status_code == 201
    assert cb.post("/v1/sessions", json={"name": "s1"}).json()["code"] == "session_exists"
    listed = cb.get("/v1/sessions").json()["sessions"]
    assert [(s["name"], s["tensor_count"]) for s in listed] == [("s1", 1), ("s2", 1)]
    assert cb.delete("/v1/sessions/s1").status_code == 204
    assert ca.get("/v1/sessions/s1").status_code == 404  # A held it in memory: not served
    assert [s["name"] for s in ca.get("/v1/sessions").json()["sessions"]] == ["s2"]
    assert ca.post("/v1/sessions", json={"name": "s1"}).status_code == 201
    r = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + 10
    while r.exists("gs:m:-/s2") and time.monotonic() < deadline:  # swept, without traffic
        time.sleep(0.05)
    assert not r.exists("gs:m:-/s2", "gs:r:-/s2")
    assert cb.get("/v1/sessions/s2").status_code == 404
