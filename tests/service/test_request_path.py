"""One request path: every route, the hot ones included, goes through FastAPI's router,
its dependencies and its exception handlers (no second HTTP stack beside it)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import Depends, Request
from svc_helpers import PROBLEM, SyncClient, assert_problem, make_settings

from service.app import create_app

S = "/v1/sessions/s"
HOT = {"runOp", "runBatch", "backward", "grad"}


def _url(path: str) -> str:
    return path.replace("{session}", "s").replace("{tensor}", "x").replace("{format}", "dot")


def test_an_app_dependency_runs_on_every_route() -> None:
    seen: list[tuple[str, str]] = []

    async def spy(request: Request) -> None:
        seen.append((request.method, request.url.path))

    app = create_app(make_settings(), dependencies=[Depends(spy)])
    with SyncClient(app) as c:
        c.post("/v1/sessions", json={"name": "s"})
        c.put(f"{S}/tensors/x", json={"data": [1.0, 2.0], "requires_grad": True})
        operations = [
            (method.upper(), path, op["operationId"])
            for path, item in app.openapi()["paths"].items()
            for method, op in item.items()
        ]
        assert {op_id for _, _, op_id in operations} >= HOT
        for method, path, op_id in operations:
            seen.clear()
            url = _url(path)
            body = {"steps": []} if op_id == "runBatch" else None
            c.request(method, url, json=body)
            assert seen == [(method, url)], op_id


def _op(out: str, op: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"out": out, "op": op, "args": list(args), "kwargs": kwargs}


@pytest.fixture
def s(client: SyncClient) -> str:
    assert client.post("/v1/sessions", json={"name": "s"}).status_code == 201
    leaf = {"data": [1.0, 2.0, 3.0], "requires_grad": True}
    assert client.put(f"{S}/tensors/x", json=leaf).status_code == 201
    return "s"


def test_output_options_on_the_hot_routes(client: SyncClient, s: str) -> None:
    r = client.post(f"{S}/ops?values=false", json=_op("y", "pow", "x", 2))
    assert r.status_code == 201 and "data" not in r.json()
    r = client.post(f"{S}/ops?encoding=base64", json=_op("y", "exp", "x"))
    assert set(r.json()["data"]) == {"b64", "dtype", "shape"}
    r = client.post(f"{S}/ops?values=False&encoding=json", json=_op("y", "exp", "x"))
    assert r.status_code == 201 and "data" not in r.json()  # FastAPI's bool spellings
    r = client.post(f"{S}/ops?unknown=1", json=_op("y", "exp", "x"))
    assert r.status_code == 201  # unknown query parameters are ignored, as by FastAPI


@pytest.mark.parametrize(
    ("query", "loc"),
    [("encoding=xml", ["query", "encoding"]), ("values=maybe", ["query", "values"])],
)
def test_bad_output_options(client: SyncClient, s: str, query: str, loc: list[str]) -> None:
    r = client.post(f"{S}/ops?{query}", json=_op("y", "exp", "x"))
    problem = assert_problem(r, 422, "validation_error")
    assert problem["errors"][0]["loc"] == loc


@pytest.mark.parametrize(
    ("path", "content", "headers", "status", "code"),
    [
        ("ops", b"{not json", {"content-type": "application/json"}, 400, "invalid_json"),
        ("ops", b"", {"content-type": "application/json"}, 422, "validation_error"),
        ("ops", b'{"out": "y", "op": "exp", "args": ["x"]}', {"content-type": "text/plain"},
         415, "unsupported_media_type"),
        ("ops", b'{"out": "y", "op": "exp", "expr": "x"}', {"content-type": "application/json"},
         422, "validation_error"),
        ("ops", b'{"out": "__y__", "op": "exp", "args": ["x"]}',
         {"content-type": "application/json"}, 422, "invalid_name"),
        ("ops", b"[1, 2]", {"content-type": "application/json"}, 422, "validation_error"),
        ("batch", b'{"steps": [{"out": "y"}]}', {"content-type": "application/json"},
         422, "validation_error"),
        ("backward", b'{"tensors": "x", "surprise": 1}', {"content-type": "application/json"},
         422, "validation_error"),
        ("grad", b'{"outputs": "x"}', {"content-type": "application/json"},
         422, "validation_error"),
    ],
)  # fmt: skip
def test_bodies_refused_on_the_hot_routes(
    client: SyncClient,
    s: str,
    path: str,
    content: bytes,
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    r = client.post(f"{S}/{path}", content=content, headers=headers)
    assert_problem(r, status, code)


def test_a_remembered_body_answers_the_same(client: SyncClient, s: str) -> None:
    """A repeated body is validated once; the answers still follow the session."""
    body = {"out": "x2", "expr": "x * 2"}
    first = client.post(f"{S}/ops", json=body).json()
    client.put(f"{S}/tensors/x", json={"data": [5.0]})
    second = client.post(f"{S}/ops", json=body).json()
    assert first["data"]["data"] == [2.0, 4.0, 6.0]
    assert second["data"]["data"] == [10.0]


@pytest.mark.parametrize(
    ("method", "url", "status", "code"),
    [
        ("POST", "/v1/sessions/nope/ops", 404, "session_not_found"),
        ("POST", "/v1/sessions/bad name/ops", 422, "invalid_name"),
        ("POST", f"{S}/ops/extra", 404, "not_found"),
        ("GET", f"{S}/ops", 405, "method_not_allowed"),
        ("PUT", f"{S}/batch", 405, "method_not_allowed"),
    ],
)
def test_sessions_and_routes(
    client: SyncClient, s: str, method: str, url: str, status: int, code: str
) -> None:
    r = client.request(method, url, json=_op("y", "exp", "x"))
    assert_problem(r, status, code)


def test_hot_routes_with_api_keys() -> None:
    app = create_app(make_settings(api_keys="key-a,key-b"))
    with SyncClient(app, headers={"authorization": "Bearer key-a"}) as c:
        assert c.post("/v1/sessions", json={"name": "s"}).status_code == 201
        c.put(f"{S}/tensors/x", json={"data": [1.0], "requires_grad": True})
        assert c.post(f"{S}/ops", json=_op("y", "exp", "x")).status_code == 201
        other = {"authorization": "Bearer key-b"}
        r = c.post(f"{S}/ops", json=_op("y", "exp", "x"), headers=other)
        assert_problem(r, 404, "session_not_found")
        wrong = {"authorization": "Bearer nope"}
        assert_problem(c.post(f"{S}/backward", json={"tensors": "y"}, headers=wrong), 401,
                       "unauthorized")  # fmt: skip
        c.client.headers.pop("authorization")
        assert_problem(c.post(f"{S}/batch", json={"steps": []}), 401, "unauthorized")


def test_body_over_the_limit_while_streaming() -> None:
    """No Content-Length: the limit is found while the route reads the body."""

    async def chunks() -> Any:
        for _ in range(4):
            yield b" " * 1000

    with SyncClient(create_app(make_settings(max_body_bytes=2000))) as c:
        c.post("/v1/sessions", json={"name": "s"})
        r = c.post(f"{S}/ops", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413, r.text
        assert r.headers["content-type"] == PROBLEM
        assert r.json()["code"] == "limit_exceeded"


def test_metrics_name_the_route(client: SyncClient, s: str) -> None:
    assert client.post(f"{S}/ops", json=_op("y", "exp", "x")).status_code == 201
    text = client.get("/metrics").text
    assert 'route="/v1/sessions/{session}/ops",status="201"' in text


def test_every_v1_route_needs_the_key() -> None:
    app = create_app(make_settings(api_keys="key-a"))
    with SyncClient(app) as c:
        key = {"authorization": "Bearer key-a"}
        assert c.post("/v1/sessions", json={"name": "s"}, headers=key).status_code == 201
        c.put(f"{S}/tensors/x", json={"data": [1.0], "requires_grad": True}, headers=key)
        for path, item in app.openapi()["paths"].items():
            if not path.startswith("/v1/"):
                continue
            for method, op in item.items():
                for headers in ({}, {"authorization": "Bearer nope"}):
                    r = c.request(method.upper(), _url(path), json={}, headers=headers)
                    assert_problem(r, 401, "unauthorized")
                    assert r.headers["www-authenticate"] == "Bearer", op["operationId"]
