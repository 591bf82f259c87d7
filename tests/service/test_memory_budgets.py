"""Memory is accounted for what a session really holds: tensors, grads and the arrays
its live graph saved for backward, a shared buffer once; budgets per session, per API
key and per server, each refused (507) with the budget, the bytes used and the limit."""

from __future__ import annotations

from svc_helpers import SyncClient, assert_problem, make_settings, put, step

from service.app import create_app

KB = 1024
A = {"Authorization": "Bearer key-a"}
B = {"Authorization": "Bearer key-b"}


def _bytes(c: SyncClient, s: str, headers: dict[str, str] | None = None) -> int:
    return int(c.get(f"/v1/sessions/{s}", headers=headers).json()["bytes"])


def _chain(c: SyncClient, s: str, n: int, headers: dict[str, str] | None = None) -> list[int]:
    """``y = exp(y * 0.5)`` n times under one name: each exp saves its result, so the
    graph holds every intermediate while the session names one tensor."""
    codes = []
    for _ in range(n):
        r = c.post(
            f"/v1/sessions/{s}/ops", json={"out": "y", "expr": "(y * 0.5).exp()"}, headers=headers
        )
        codes.append(r.status_code)
        if r.status_code != 201:
            break
    return codes


def test_saved_graph_counted_and_released_by_backward() -> None:
    with SyncClient(create_app(make_settings())) as c:
        c.post("/v1/sessions", json={"name": "g"})
        put(c, "g", "x", [0.1] * 1000, requires_grad=True)  # float32: 4000 bytes
        step(c, "g", out="y", expr="x * 1.0")
        base = _bytes(c, "g")
        assert _chain(c, "g", 5) == [201] * 5
        held = _bytes(c, "g")
        assert base == 8000 and held == 4000 + 5 * 4000  # x and five saved exp results
        step(c, "g", out="z", expr="y.sum()")
        assert c.post("/v1/sessions/g/backward", json={"tensors": "z"}).status_code == 200
        after = _bytes(c, "g")
        assert after == 3 * 4000 + 4  # x, its grad, y and z: the freed graph holds nothing
        # names and views of one buffer count once
        step(c, "g", out="v", expr="x[0:10]")
        step(c, "g", out="w", expr="x.view(10, 100)")
        assert _bytes(c, "g") == after


def test_graph_memory_refused_before_the_session_budget() -> None:
    settings = make_settings(max_session_bytes=64 * KB)
    with SyncClient(create_app(settings)) as c:
        c.post("/v1/sessions", json={"name": "g"})
        put(c, "g", "x", [0.1] * 1000, requires_grad=True)
        step(c, "g", out="y", expr="x * 1.0")
        codes = _chain(c, "g", 40)
        assert codes[-1] == 507 and len(codes) < 20
        r = c.post("/v1/sessions/g/ops", json={"out": "y", "expr": "(y * 0.5).exp()"})
        body = assert_problem(r, 507, "limit_exceeded")
        assert body["budget"] == "session" and body["limit"] == 64 * KB
        assert body["used"] == _bytes(c, "g") <= 64 * KB
        # a batch that would cross the budget is refused before its later steps run
        steps = [{"out": f"t{i}", "expr": "(y * 0.5).exp()"} for i in range(10)]
        assert_problem(c.post("/v1/sessions/g/batch", json={"steps": steps}), 507, "limit_exceeded")
        assert _bytes(c, "g") == body["used"]


def test_server_budget_covers_every_session() -> None:
    settings = make_settings(max_total_bytes=96 * KB)
    with SyncClient(create_app(settings)) as c:
        for s in ("p", "q"):
            c.post("/v1/sessions", json={"name": s})
            put(c, s, "x", [0.1] * 1000, requires_grad=True)
            step(c, s, out="y", expr="x * 1.0")
        first = _chain(c, "p", 40)
        assert first[-1] == 507
        assert _chain(c, "q", 5)[-1] == 507  # q's first step replaces y: it holds no more
        r = c.post("/v1/sessions/q/ops", json={"out": "y", "expr": "(y * 0.5).exp()"})
        body = assert_problem(r, 507, "limit_exceeded")
        assert body["budget"] == "server" and body["limit"] == 96 * KB
        assert body["used"] <= 96 * KB
        c.delete("/v1/sessions/p")
        assert _chain(c, "q", 3) == [201] * 3


def test_key_budget_isolates_keys() -> None:
    settings = make_settings(api_keys="key-a,key-b", key_max_bytes=64 * KB)
    with SyncClient(create_app(settings)) as c:
        for h in (A, B):
            assert c.post("/v1/sessions", json={"name": "s"}, headers=h).status_code == 201
        r = c.put(
            "/v1/sessions/s/tensors/x",
            json={"data": [0.1] * 1000, "requires_grad": True},
            headers=A,
        )
        assert r.status_code in (200, 201)
        c.post("/v1/sessions/s/ops", json={"out": "y", "expr": "x * 1.0"}, headers=A)
        codes = _chain(c, "s", 40, A)
        assert codes[-1] == 507
        r = c.post("/v1/sessions/s/ops", json={"out": "y", "expr": "(y * 0.5).exp()"}, headers=A)
        body = assert_problem(r, 507, "limit_exceeded")
        assert body["budget"] in ("key", "session") and body["used"] <= 64 * KB
        # key B still has its whole budget
        r = c.put(
            "/v1/sessions/s/tensors/x",
            json={"data": [0.1] * 1000, "requires_grad": True},
            headers=B,
        )
        assert r.status_code in (200, 201)
        c.post("/v1/sessions/s/ops", json={"out": "y", "expr": "x * 1.0"}, headers=B)
        assert _chain(c, "s", 8, B) == [201] * 8


def test_other_sessions_are_not_walked_after_their_backward(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every budget check sums the other sessions' counts. A verb that drops its own
    count (a backward's new grads, grad with ``out``) must leave an exact one behind:
    else each request of every other session walks that session's whole graph (a
    retained 100-node graph made unrelated single ops 4x slower)."""
    from service.session.state import Session

    with SyncClient(create_app(make_settings())) as c:
        for s in ("a", "b"):
            c.post("/v1/sessions", json={"name": s})
            put(c, s, "x", [0.5] * 10, requires_grad=True)
        step(c, "a", out="z", expr="(x * x).exp().sum()")
        body = {"tensors": "z", "retain_graph": True}
        assert c.post("/v1/sessions/a/backward", json=body).status_code == 200
        grad = {"outputs": "z", "inputs": "x", "out": ["gx"], "retain_graph": True}
        assert c.post("/v1/sessions/a/grad", json=grad).status_code == 200
        exact = _bytes(c, "a")

        walked: list[str] = []
        real = Session.nbytes
        monkeypatch.setattr(Session, "nbytes", lambda s: walked.append(s.name) or real(s))
        step(c, "b", out="y", expr="x * 2.0")
        assert "a" not in walked
        assert exact == 4 * (10 + 10 + 10 + 10) + 4  # x, x.grad, gx, exp's saved result, z
