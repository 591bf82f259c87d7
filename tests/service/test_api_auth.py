"""With API keys, key A can neither see nor touch key B's sessions (they are a 404)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from svc_helpers import SyncClient, assert_problem, make_settings

from service.app import create_app

A = {"Authorization": "Bearer key-a"}
B = {"Authorization": "Bearer key-b"}
NB = "/v1/sessions/nb"


@pytest.fixture
def app_client() -> Iterator[SyncClient]:
    with SyncClient(create_app(make_settings(api_keys="key-a,key-b"))) as c:
        yield c


def test_missing_or_wrong_key(app_client: SyncClient) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic a2V5LWE="}):
        for method, path in (
            ("GET", "/v1/sessions"),
            ("POST", "/v1/sessions"),
            ("GET", "/v1/ops"),
            ("GET", NB),
        ):
            r = app_client.request(method, path, headers=headers)
            assert_problem(r, 401, "unauthorized")
            assert r.headers["www-authenticate"] == "Bearer"


def test_health_needs_no_key(app_client: SyncClient) -> None:
    for path in ("/healthz", "/readyz", "/metrics"):
        assert app_client.get(path).status_code == 200


def test_key_a_cannot_reach_key_b(app_client: SyncClient) -> None:
    c = app_client
    assert c.post("/v1/sessions", json={"name": "nb"}, headers=A).status_code == 201
    assert (
        c.put(f"{NB}/tensors/x", json={"data": [1.0], "requires_grad": True}, headers=A).status_code
        == 201
    )
    assert c.get("/v1/sessions", headers=B).json() == {"sessions": []}
    for method, path, body in [
        ("GET", NB, None),
        ("DELETE", NB, None),
        ("GET", f"{NB}/tensors/x", None),
        ("PUT", f"{NB}/tensors/x", {"data": [9.0]}),
        ("PATCH", f"{NB}/tensors/x", {"requires_grad": False}),
        ("DELETE", f"{NB}/tensors/x", None),
        ("GET", f"{NB}/tensors/x/grad", None),
        ("DELETE", f"{NB}/tensors/x/grad", None),
        ("POST", f"{NB}/zero_grad", {}),
        ("POST", f"{NB}/ops", {"out": "y", "expr": "x * 2"}),
        ("POST", f"{NB}/batch", {"steps": []}),
        ("POST", f"{NB}/backward", {"tensors": "x"}),
        ("POST", f"{NB}/grad", {"outputs": "x", "inputs": "x"}),
        ("GET", f"{NB}/graph", None),
    ]:
        r = c.request(method, path, json=body, headers=B)
        assert_problem(r, 404, "session_not_found")
    # B may use the same name: namespaces are per key
    assert c.post("/v1/sessions", json={"name": "nb"}, headers=B).status_code == 201
    assert c.get(f"{NB}/tensors/x", headers=B).status_code == 404
    a = c.get(f"{NB}/tensors/x", headers=A).json()
    assert a["data"]["data"] == [1.0] and a["requires_grad"] is True
    assert [s["name"] for s in c.get("/v1/sessions", headers=A).json()["sessions"]] == ["nb"]


def test_one_key_cannot_lock_out_another() -> None:
    settings = make_settings(api_keys="key-a,key-b", key_max_sessions=3, max_sessions=10)
    with SyncClient(create_app(settings)) as c:
        for _ in range(3):
            assert c.post("/v1/sessions", headers=A).status_code == 201
        r = c.post("/v1/sessions", headers=A)
        assert_problem(r, 429, "limit_exceeded")
        assert "per key" in r.json()["detail"] and r.headers["retry-after"]
        assert c.post("/v1/sessions", headers=B).status_code == 201  # B is not refused
        first = c.get("/v1/sessions", headers=A).json()["sessions"][0]["name"]
        assert c.delete(f"/v1/sessions/{first}", headers=A).status_code == 204
        assert c.post("/v1/sessions", headers=A).status_code == 201  # a freed place is A's again


def test_readyz_counts_only_the_callers_sessions(app_client: SyncClient) -> None:
    app_client.post("/v1/sessions", headers=A)
    app_client.post("/v1/sessions", headers=A)
    app_client.post("/v1/sessions", headers=B)
    assert app_client.get("/readyz").json() == {"status": "ready"}  # no key: no count
    assert app_client.get("/readyz", headers={"Authorization": "Bearer nope"}).json() == {
        "status": "ready"
    }
    assert app_client.get("/readyz", headers=A).json() == {"status": "ready", "sessions": 2}
    assert app_client.get("/readyz", headers=B).json() == {"status": "ready", "sessions": 1}
