from __future__ import annotations

import pytest
from svc_helpers import SyncClient, assert_problem, make_settings, put

from service.app import create_app


def test_create_with_name(client: SyncClient) -> None:
    r = client.post("/v1/sessions", json={"name": "nb.1-a_b"})
    assert r.status_code == 201
    assert r.headers["location"] == "/v1/sessions/nb.1-a_b"
    body = r.json()
    assert body["name"] == "nb.1-a_b" and body["tensors"] == [] and body["bytes"] == 0
    assert body["created"].endswith("Z") and body["expires"] > body["created"]


@pytest.mark.parametrize("kwargs", [{}, {"json": {}}, {"json": {"name": None}}])
def test_create_generates_a_name(client: SyncClient, kwargs: dict) -> None:
    r = client.post("/v1/sessions", **kwargs)
    assert r.status_code == 201, r.text
    assert r.json()["name"].startswith("s-")


def test_name_taken(client: SyncClient) -> None:
    client.post("/v1/sessions", json={"name": "nb"})
    body = assert_problem(client.post("/v1/sessions", json={"name": "nb"}), 409, "session_exists")
    assert "nb" in body["detail"]


@pytest.mark.parametrize("name", ["a" * 65, "-lead", "has space", "slash/x", "", "é"])
def test_invalid_name_in_body(client: SyncClient, name: str) -> None:
    assert_problem(client.post("/v1/sessions", json={"name": name}), 422, "invalid_name")


@pytest.mark.parametrize("name", ["a" * 65, "-lead", "has%20space", "%C3%A9"])
def test_invalid_name_in_path(client: SyncClient, name: str) -> None:
    assert_problem(client.get(f"/v1/sessions/{name}"), 422, "invalid_name")
    assert_problem(client.delete(f"/v1/sessions/{name}"), 422, "invalid_name")


def test_list_get_delete(client: SyncClient, session: str) -> None:
    listed = client.get("/v1/sessions").json()["sessions"]
    assert [s["name"] for s in listed] == ["nb"] and listed[0]["tensor_count"] == 1
    one = client.get("/v1/sessions/nb").json()
    assert one["bytes"] == 8
    (x,) = one["tensors"]
    assert x["name"] == "x" and x["shape"] == [2] and "data" not in x
    assert client.delete("/v1/sessions/nb").status_code == 204
    assert_problem(client.get("/v1/sessions/nb"), 404, "session_not_found")
    assert_problem(client.delete("/v1/sessions/nb"), 404, "session_not_found")
    assert_problem(client.get("/v1/sessions/nb/tensors/x"), 404, "session_not_found")


def test_too_many_sessions() -> None:
    with SyncClient(create_app(make_settings(max_sessions=2))) as c:
        for name in ("a", "b"):
            assert c.post("/v1/sessions", json={"name": name}).status_code == 201
        r = c.post("/v1/sessions", json={"name": "c"})
        assert_problem(r, 429, "limit_exceeded")
        assert r.headers["retry-after"]
        c.delete("/v1/sessions/a")
        assert c.post("/v1/sessions", json={"name": "c"}).status_code == 201


def test_idle_sessions_expire() -> None:
    app = create_app(make_settings(session_ttl_seconds=60))
    now = [1_000_000.0]
    app.state.sessions.clock = lambda: now[0]
    with SyncClient(app) as c:
        c.post("/v1/sessions", json={"name": "old"})
        c.post("/v1/sessions", json={"name": "busy"})
        put(c, "busy", "x", [1.0])
        now[0] += 45
        c.get("/v1/sessions/busy")  # using a session keeps it alive
        now[0] += 30
        assert_problem(c.get("/v1/sessions/old"), 404, "session_not_found")
        assert [s["name"] for s in c.get("/v1/sessions").json()["sessions"]] == ["busy"]
        now[0] += 61
        assert c.get("/v1/sessions").json()["sessions"] == []
        assert c.get("/readyz").json()["sessions"] == 0
