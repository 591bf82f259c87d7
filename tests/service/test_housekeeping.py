"""CORS, the background sweep of idle sessions, and the memory bound over all sessions."""

from __future__ import annotations

import asyncio

from svc_helpers import SyncClient, assert_problem, make_settings

from service.app import create_app
from service.session.manager import SessionManager

ORIGIN = "https://notebook.example"
PREFLIGHT = {
    "origin": ORIGIN,
    "access-control-request-method": "POST",
    "access-control-request-headers": "content-type,authorization",
}


def test_cors_preflight_and_simple_request() -> None:
    app = create_app(make_settings(cors_origins=f"{ORIGIN}, https://other.example"))
    with SyncClient(app) as c:
        r = c.request("OPTIONS", "/v1/sessions/s/ops", headers=PREFLIGHT)
        assert r.status_code == 200, r.text
        assert r.headers["access-control-allow-origin"] == ORIGIN
        assert "POST" in r.headers["access-control-allow-methods"]
        assert "authorization" in r.headers["access-control-allow-headers"].lower()
        r = c.post("/v1/sessions", json={"name": "s"}, headers={"origin": ORIGIN})
        assert r.status_code == 201
        assert r.headers["access-control-allow-origin"] == ORIGIN
        assert "location" in r.headers["access-control-expose-headers"].lower()


def test_cors_refuses_another_origin_as_a_problem() -> None:
    app = create_app(make_settings(cors_origins=ORIGIN))
    with SyncClient(app) as c:
        r = c.request("OPTIONS", "/v1/sessions", headers={**PREFLIGHT, "origin": "https://evil"})
        assert_problem(r, 400, "bad_request")
        r = c.get("/v1/sessions", headers={"origin": "https://evil"})
        assert r.status_code == 200
        assert "access-control-allow-origin" not in r.headers


def test_cors_star() -> None:
    with SyncClient(create_app(make_settings(cors_origins="*"))) as c:
        r = c.request("OPTIONS", "/v1/ops", headers={**PREFLIGHT, "origin": "https://any"})
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "*"


def test_no_cors_by_default(client: SyncClient) -> None:
    r = client.request("OPTIONS", "/v1/sessions", headers=PREFLIGHT)
    assert_problem(r, 405, "method_not_allowed")
    assert "access-control-allow-origin" not in r.headers


def test_sweep_with_a_fake_clock() -> None:
    now = [1000.0]
    sessions = SessionManager(make_settings(session_ttl_seconds=10), clock=lambda: now[0])

    async def scenario() -> None:
        await sessions.create("old", None)
        now[0] += 6
        await sessions.create("young", None)
        now[0] += 5  # 'old' idle 11 s, 'young' 5 s
        assert await sessions.sweep() == 1
        assert [s["name"] for s in await sessions.summaries(None)] == ["young"]
        now[0] += 10
        assert await sessions.sweep() == 1
        assert len(sessions) == 0

    asyncio.run(scenario())


def test_sweep_spares_a_session_in_use() -> None:
    now = [0.0]
    sessions = SessionManager(make_settings(session_ttl_seconds=1), clock=lambda: now[0])

    async def scenario() -> None:
        busy = await sessions.create("busy", None)
        now[0] = 5
        async with busy.lock:
            assert await sessions.sweep() == 0
        assert await sessions.sweep() == 1

    asyncio.run(scenario())


def test_the_sweeper_runs_with_the_app_lifespan() -> None:
    app = create_app(make_settings(sweep_seconds=0.001, session_ttl_seconds=0.001))

    async def scenario() -> None:
        async with app.router.lifespan_context(app):
            sessions = app.state.sessions
            await sessions.create("idle", None)
            for _ in range(10_000):  # the task sweeps every millisecond
                if sessions.swept >= 2 and len(sessions) == 0:
                    break
                await asyncio.sleep(0.001)
            assert len(sessions) == 0
            assert [t for t in asyncio.all_tasks() if t.get_name() == "gradserve-sweep"]
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "gradserve-sweep"]

    asyncio.run(scenario())


def test_a_failing_sweep_does_not_stop_the_sweeper() -> None:
    app = create_app(make_settings(sweep_seconds=0.001))
    calls = []

    def broken() -> int:
        calls.append(1)
        raise RuntimeError("boom")

    app.state.sessions.sweep_memory = broken

    async def scenario() -> None:
        task = asyncio.create_task(app.state.sessions.sweep_forever())
        for _ in range(10_000):
            if len(calls) >= 2:
                break
            await asyncio.sleep(0.001)
        assert len(calls) >= 2
        assert not task.done()
        task.cancel()

    asyncio.run(scenario())


def test_total_bytes_over_all_sessions() -> None:
    app = create_app(make_settings(max_total_bytes=100))
    with SyncClient(app) as c:
        for s in ("a", "b"):
            assert c.post("/v1/sessions", json={"name": s}).status_code == 201
        assert c.put("/v1/sessions/a/tensors/x", json={"data": [1.0] * 16}).status_code == 201
        r = c.put("/v1/sessions/b/tensors/y", json={"data": [1.0] * 16})
        assert_problem(r, 507, "limit_exceeded")
        assert c.put("/v1/sessions/b/tensors/y", json={"data": [1.0] * 4}).status_code == 201
        r = c.post("/v1/sessions/b/ops", json={"out": "z", "op": "cat", "args": [["y", "y"]]})
        assert_problem(r, 507, "limit_exceeded")  # 64 + 16 + 32 > 100
        assert c.get("/v1/sessions/b/tensors/z").status_code == 404
        assert c.delete("/v1/sessions/a").status_code == 204
        r = c.post("/v1/sessions/b/ops", json={"out": "z", "op": "cat", "args": [["y", "y"]]})
        assert r.status_code == 201, r.text
