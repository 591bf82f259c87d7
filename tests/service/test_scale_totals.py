"""A request costs the same however much other clients hold: budget checks read running
totals (``SessionManager.ledger``), a key's sessions are indexed by key, expiry pops a
heap. These tests check structure, never time: the totals equal a fresh recount after
random sequences of requests (failures and rollbacks, deletes, expiry, programs,
rebuilds from a durable store), and the hot paths do not iterate the sessions held."""

from __future__ import annotations

import asyncio
import gc
import random
import sqlite3
import weakref
from pathlib import Path
from typing import Any

import pytest
from svc_helpers import SyncClient, make_settings

from service.app import create_app
from service.session.backends.sqlite import SCHEMA
from service.session.manager import SessionManager
from service.session.state import owner_of

KEYS = ["key-a", "key-b"]
TTL = 100.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_totals(mgr: SessionManager) -> None:
    """The running totals equal a recount, and each session's bound is one."""
    total, by = mgr.recount()
    assert mgr.ledger.held() == (total, by.get(None, (0, 0))[1])
    assert mgr.ledger.owners() == by
    for owner, (n, _) in by.items():
        assert mgr.count_held(owner) == n
        assert mgr.ledger.held(None)[0] == total
    for (_, name), s in list(mgr._sessions.items()):
        assert s.bytes_bound is not None, name  # every change left a count behind
        assert s.bytes_bound >= s.nbytes(), name  # and it bounds the exact count
        assert s.counted == s.bytes_bound + s.program_bytes()


GRAPH = [{"out": "h", "expr": "x * 1.5"}, {"out": "h", "expr": "(h * h).exp()"},
         {"out": "loss", "expr": "h.sum()"}]  # fmt: skip


def _random_request(c: SyncClient, rng: random.Random, clock: Clock, names: list[str]) -> None:
    s = rng.choice(names)
    key = KEYS[names.index(s) % 2]  # its owner; now and then the other key (404s)
    h = _auth(key if rng.random() > 0.1 else KEYS[1 - KEYS.index(key)])
    base = f"/v1/sessions/{s}"
    # how often each kind comes: sessions are recreated about as often as they go
    kind = rng.choices(range(14), weights=[3, 1, 3, 2, 2, 2, 1, 1, 1, 1, 1, 2, 1, 1])[0]
    if kind == 0:
        c.post("/v1/sessions", json={"name": s}, headers=h)
    elif kind == 1:
        c.delete(base, headers=h)
    elif kind == 2:
        n = rng.choice([1, 10, 100])
        c.put(f"{base}/tensors/x", json={"data": [0.5] * n, "requires_grad": True}, headers=h)
    elif kind == 3:
        c.post(f"{base}/ops", json={"out": rng.choice(["y", "x2"]), "expr": "x * 2.0"}, headers=h)
    elif kind == 4:  # a retained graph
        steps = [*GRAPH, {"backward": {"tensors": "loss", "retain_graph": True}}]
        c.post(f"{base}/batch", json={"steps": steps}, headers=h)
    elif kind == 5:  # fails after its backward wrote grads: all rolled back
        steps = [*GRAPH, {"backward": {"tensors": "loss"}}, {"out": "z", "expr": "nope * 2"}]
        c.post(f"{base}/batch", json={"steps": steps}, headers=h)
    elif kind == 6:  # frees the graph; a second one fails (graph_freed)
        c.post(f"{base}/backward", json={"tensors": "loss"}, headers=h)
    elif kind == 7:
        body = {"outputs": "loss", "inputs": "x", "out": ["gx"], "retain_graph": True}
        c.post(f"{base}/grad", json=body, headers=h)
    elif kind == 8:
        c.delete(f"{base}/tensors/{rng.choice(['x', 'y', 'h', 'gx'])}", headers=h)
    elif kind == 9:
        c.delete(f"{base}/tensors/x/grad", headers=h)
    elif kind == 10:
        c.post(f"{base}/zero_grad", json={}, headers=h)
    elif kind == 11:
        body = {"steps": [{"out": "p", "expr": "x * 3.0 + 1.0"}]}
        c.put(f"{base}/programs/{rng.choice(['p1', 'p2'])}", json=body, headers=h)
        c.post(f"{base}/programs/p1/run", json={"repeat": 2}, headers=h)
    elif kind == 12:
        c.delete(f"{base}/programs/{rng.choice(['p1', 'p2'])}", headers=h)
    else:  # time passes: some sessions expire (lazily, or swept by the next create)
        clock.now += rng.choice([1.0, 1.0, TTL / 2, TTL + 1])
        c.get("/v1/sessions", headers=h)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_totals_equal_a_recount_after_random_requests(seed: int) -> None:
    rng = random.Random(seed)
    settings = make_settings(api_keys=",".join(KEYS), session_ttl_seconds=TTL)
    app = create_app(settings)
    clock = Clock()
    mgr: SessionManager = app.state.sessions
    mgr.clock = clock
    names = [f"s{i}" for i in range(6)]
    with SyncClient(app) as c:
        for i, n in enumerate(names):
            c.post("/v1/sessions", json={"name": n}, headers=_auth(KEYS[i % 2]))
        peak = 0
        for _ in range(160):
            _random_request(c, rng, clock, names)
            assert_totals(mgr)
            peak = max(peak, mgr.ledger.held()[0])
        assert peak > 200  # the sequence held graphs, grads or programs at some point
        for key in KEYS:
            for n in names:
                c.delete(f"/v1/sessions/{n}", headers=_auth(key))
        assert len(mgr) == 0 and mgr.ledger.held() == (0, 0) and mgr.ledger.owners() == {}


class _NoIteration(dict):  # type: ignore[type-arg]
    """The sessions held, refusing to be iterated: what a per-request cost would do."""

    def _refuse(self, *_: Any) -> Any:
        raise AssertionError("a request iterated every session held")

    __iter__ = values = items = keys = _refuse


def test_requests_do_not_iterate_the_sessions_held() -> None:
    """Budget checks, counts per key, creation, listing and expiry of one key's
    session cost the same with 200 other sessions held (some with retained graphs)."""
    settings = make_settings(
        api_keys=",".join(KEYS), session_ttl_seconds=TTL, key_max_sessions=1000
    )
    app = create_app(settings)
    clock = Clock()
    mgr: SessionManager = app.state.sessions
    mgr.clock = clock
    a, b = _auth(KEYS[0]), _auth(KEYS[1])
    with SyncClient(app) as c:
        for i in range(200):
            c.post("/v1/sessions", json={"name": f"i{i}"}, headers=a)
            c.put(f"/v1/sessions/i{i}/tensors/x", json={"data": [1.0] * 4, "requires_grad": True}, headers=a)  # fmt: skip
            if i % 20 == 0:
                steps = [*GRAPH, {"backward": {"tensors": "loss", "retain_graph": True}}]
                assert c.post(f"/v1/sessions/i{i}/batch", json={"steps": steps}, headers=a).status_code == 200  # fmt: skip
        mgr._sessions = _NoIteration(mgr._sessions)
        assert c.post("/v1/sessions", json={"name": "m"}, headers=b).status_code == 201
        assert c.put("/v1/sessions/m/tensors/x", json={"data": [2.0, 3.0], "requires_grad": True}, headers=b).status_code == 201  # fmt: skip
        assert c.post("/v1/sessions/m/ops", json={"out": "y", "expr": "(x * x).sum()"}, headers=b).status_code == 201  # fmt: skip
        assert c.post("/v1/sessions/m/backward", json={"tensors": "y"}, headers=b).status_code == 200  # fmt: skip
        assert [s["name"] for s in c.get("/v1/sessions", headers=b).json()["sessions"]] == ["m"]
        assert c.delete("/v1/sessions/m", headers=b).status_code == 204
        clock.now += TTL + 1  # everything is due: a sweep pops the heap, no scan
        assert mgr.sweep_memory() == 200
        assert len(mgr) == 0 and mgr.ledger.held() == (0, 0)


def test_expiry_pops_only_what_is_due_and_the_heap_stays_bounded() -> None:
    mgr = SessionManager(make_settings(session_ttl_seconds=TTL, max_sessions=10_000))
    clock = Clock()
    mgr.clock = clock
    for i in range(100):
        asyncio.run(mgr.create(f"s{i}", None))
    clock.now += TTL / 2
    for i in range(0, 100, 2):
        asyncio.run(mgr.session(f"s{i}", None))  # touched: expires later
    clock.now += TTL / 2 + 1
    assert mgr.sweep_memory() == 50
    assert sorted(int(k[1][1:]) for k in mgr._sessions) == list(range(0, 100, 2))
    assert mgr.count_held(None) == 50
    # churn: a session created and deleted over and over leaves no pile of heap entries
    for _ in range(2000):
        asyncio.run(mgr.create("churn", None))
        asyncio.run(mgr.delete("churn", None))
        assert len(mgr._expiry) <= 2 * (len(mgr) + 1) + 65
    clock.now += TTL + 1
    assert mgr.sweep_memory() == 50 and len(mgr) == 0


def test_deleted_and_expired_sessions_are_freed_without_the_cyclic_collector() -> None:
    """Nothing the manager keeps (ledger, expiry heap, budget closure) holds a session
    once it is gone: its graph is freed by reference counting, at once."""
    app = create_app(make_settings(session_ttl_seconds=TTL))
    clock = Clock()
    mgr: SessionManager = app.state.sessions
    mgr.clock = clock
    steps = [*GRAPH, {"backward": {"tensors": "loss", "retain_graph": True}}]
    with SyncClient(app) as c:
        for i in range(40):
            c.post("/v1/sessions", json={"name": f"g{i}"})
            c.put(f"/v1/sessions/g{i}/tensors/x", json={"data": [1.0] * 100, "requires_grad": True})  # fmt: skip
            assert c.post(f"/v1/sessions/g{i}/batch", json={"steps": steps}).status_code == 200
            c.put(f"/v1/sessions/g{i}/programs/p", json={"steps": [{"out": "q", "expr": "x * 2"}]})
        gc.collect()
        refs = []
        for i in range(40):
            s = mgr.held(f"g{i}", None)
            assert s is not None
            refs.append((weakref.ref(s), weakref.ref(s.tensors["h"])))
        del s
        gc.disable()
        try:
            for i in range(20):
                assert c.delete(f"/v1/sessions/g{i}").status_code == 204
            clock.now += TTL + 1
            assert mgr.sweep_memory() == 20
            alive = [i for i, (rs, rt) in enumerate(refs) if rs() is not None or rt() is not None]
        finally:
            gc.enable()
        assert alive == []


def test_totals_after_rebuilds_from_a_durable_store(tmp_path: Path) -> None:
    """Sessions rebuilt from a checkpoint and their journal (and a live copy whose
    graphs a checkpoint dropped) count exactly what a recount finds."""
    settings = make_settings(
        store=f"sqlite:///{tmp_path / 'g.db'}",
        api_keys=",".join(KEYS),
        checkpoint_records=3,
        journal_max_bytes=4096,
    )
    app = create_app(settings)
    mgr: SessionManager = app.state.sessions
    rng = random.Random(7)
    clock = Clock()
    with SyncClient(app) as c:
        names = ["d0", "d1", "d2"]
        for i, n in enumerate(names):
            c.post("/v1/sessions", json={"name": n}, headers=_auth(KEYS[i % 2]))
        for i in range(60):
            _random_request(c, rng, clock, names)
            if i % 10 == 9:  # drop the copies held: the next requests rebuild them
                for key in KEYS:
                    for n in names:
                        s = mgr.held(n, owner_of(key))
                        if s is not None:
                            mgr.forget(s)
                for k, n in enumerate(names):
                    c.get(f"/v1/sessions/{n}", headers=_auth(KEYS[k % 2]))
            assert_totals(mgr)


def test_metrics_labels_do_not_grow_with_what_clients_send() -> None:
    """Labels are route templates, known methods and statuses: many sessions and made-up
    methods add no series (each series is memory kept for the process's life)."""
    app = create_app(make_settings())
    with SyncClient(app) as c:
        for i in range(30):
            c.post("/v1/sessions", json={"name": f"m{i}"})
            c.get(f"/v1/sessions/m{i}")
            c.request(f"BREW{i}", "/healthz")
        text = c.get("/metrics").text
    series = [line for line in text.splitlines() if line.startswith("gradserve_requests_total")]
    assert not any("m1" in line or "BREW" in line for line in series)
    assert any('method="other"' in line for line in series)
    assert len(series) < 12


def test_sqlite_sweep_and_key_count_read_indexes() -> None:
    """The background sweep and a key's session count search an index, not every row."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    plans = [
        db.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()[0][3]
        for sql, args in (
            ("SELECT owner, name FROM sessions WHERE last_used + ttl <= ?", (1.0,)),
            ("SELECT count(*) FROM sessions WHERE owner IS ? AND last_used + ttl > ?", ("o", 1.0)),
        )
    ]
    assert all("USING INDEX" in p for p in plans), plans
    db.close()
