"""The fast lane answers runOp, runBatch and backward exactly as the FastAPI routes do.

Every scenario runs twice, on an app with the lane and on one without it
(``GRADSERVE_FAST_LANE=false``), and every response must match: status, media type
and body. The unit tests check that the lane really answers what it accepts (the
router behind it is never called) and hands everything else over untouched."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from svc_helpers import PROBLEM, SyncClient, make_settings

import engine
from service.app import create_app
from service.fastlane import FastLane
from service.routes import ROUTERS
from service.sessions import SessionStore

S = "/v1/sessions/s"
JSON = {"content-type": "application/json"}

# (method, path, body, extra headers): run in order on a session 's' with x = [1, 2, 3]
Request = tuple[str, str, Any, dict[str, str]]


def _op(out: str, op: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"out": out, "op": op, "args": list(args), "kwargs": kwargs}


SCENARIOS: dict[str, list[Request]] = {
    "op step": [("POST", f"{S}/ops", _op("y", "mul", "x", 2.0), {})],
    "values=false": [("POST", f"{S}/ops?values=false", _op("y", "pow", "x", 2), {})],
    "base64": [("POST", f"{S}/ops?encoding=base64", _op("y", "exp", "x"), {})],
    "unusual query spellings (FastAPI's)": [
        ("POST", f"{S}/ops?values=False", _op("y", "exp", "x"), {}),
        ("POST", f"{S}/ops?values=no&encoding=json", _op("y", "exp", "x"), {}),
        ("POST", f"{S}/ops?encoding=json&encoding=base64", _op("y", "exp", "x"), {}),
        ("POST", f"{S}/ops?unknown=1", _op("y", "exp", "x"), {}),
        ("POST", f"{S}/ops?encoding=xml", _op("y", "exp", "x"), {}),
        ("POST", f"{S}/ops?values=maybe", _op("y", "exp", "x"), {}),
    ],
    "expressions and several outputs": [
        ("POST", f"{S}/ops", {"out": "y", "expr": "3 * x ** 2 + x.sum()"}, {}),
        ("POST", f"{S}/ops", {"out": ["v", "i"], "expr": "x.max(dim=0)"}, {}),
        ("POST", f"{S}/ops", {"out": "b", "expr": "x.foo"}, {}),
    ],
    "batch, backward, assign, backward again": [
        (
            "POST",
            f"{S}/batch",
            {"steps": [_op("y", "mul", "x", "x"), _op("loss", "sum", "y")]},
            {},
        ),
        ("POST", f"{S}/backward", {"tensors": "loss"}, {}),
        ("POST", f"{S}/backward", {"tensors": "loss"}, {}),  # graph_freed, with its hint
        ("POST", f"{S}/ops", {"out": "x", "expr": "x - 0.1 * x.grad", "assign": True}, {}),
        ("POST", f"{S}/batch?values=false", {"steps": [_op("loss", "sum", "x")]}, {}),
        ("POST", f"{S}/backward?encoding=base64", {"tensors": ["loss"]}, {}),
    ],
    "a batch whose 3rd step fails changes nothing": [
        (
            "POST",
            f"{S}/batch",
            {"steps": [_op("a", "exp", "x"), _op("b", "mul", "a", 2.0), _op("c", "nope", "b")]},
            {},
        ),
        ("POST", f"{S}/ops", {"out": "d", "expr": "a + 1"}, {}),  # 'a' was never bound
    ],
    "engine errors": [
        ("POST", f"{S}/ops", _op("y", "add", "x", {"data": [1.0, 2.0]}), {}),  # shapes
        ("POST", f"{S}/ops", _op("y", "mul", "x"), {}),  # arity
        ("POST", f"{S}/ops", _op("y", "mul", "nope", 2.0), {}),  # unknown tensor
        ("POST", f"{S}/backward", {"tensors": "x", "grad_tensors": [[1.0]]}, {}),
        ("POST", f"{S}/ops", _op("y", "zeros", 10**7, 10**7), {}),  # limit
    ],
    "bodies FastAPI refuses": [
        ("POST", f"{S}/ops", b"{not json", JSON),
        ("POST", f"{S}/ops", b"", JSON),
        (
            "POST",
            f"{S}/ops",
            b'{"out": "y", "op": "exp", "args": ["x"]}',
            {"content-type": "text/plain"},
        ),
        ("POST", f"{S}/ops", b'{"out": "y", "op": "exp", "args": ["x"]}', {"content-type": ""}),
        ("POST", f"{S}/ops", {"out": "y", "op": "exp", "expr": "x"}, {}),
        ("POST", f"{S}/ops", {"out": "__y__", "op": "exp", "args": ["x"]}, {}),
        ("POST", f"{S}/ops", [1, 2], {}),
        ("POST", f"{S}/batch", {"steps": [{"out": "y"}]}, {}),
        ("POST", f"{S}/backward", {"tensors": "x", "surprise": 1}, {}),
    ],
    "sessions and routes": [
        ("POST", "/v1/sessions/nope/ops", _op("y", "exp", "x"), {}),
        ("POST", "/v1/sessions/bad name/ops", _op("y", "exp", "x"), {}),
        ("POST", "/v1/sessions/s/ops/extra", _op("y", "exp", "x"), {}),
        ("GET", f"{S}/ops", None, {}),
        ("PUT", f"{S}/batch", {"steps": []}, {}),
    ],
}


def _send(c: SyncClient, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    if isinstance(body, bytes):
        r = c.request(method, path, content=body, headers=headers)
    elif body is None:
        r = c.request(method, path, headers=headers)
    else:
        r = c.request(method, path, json=body, headers=headers)
    media = r.headers.get("content-type")
    return r.status_code, media, r.json() if r.content else None


def _replay(requests: list[Request], *, fast_lane: bool, **settings: Any) -> list[Any]:
    app = create_app(make_settings(fast_lane=fast_lane, **settings))
    with SyncClient(app) as c:
        assert c.post("/v1/sessions", json={"name": "s"}).status_code == 201
        leaf = {"data": [1.0, 2.0, 3.0], "requires_grad": True}
        assert c.put(f"{S}/tensors/x", json=leaf).status_code == 201
        return [_send(c, *request) for request in requests]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_answers_as_fastapi(name: str) -> None:
    fast = _replay(SCENARIOS[name], fast_lane=True)
    slow = _replay(SCENARIOS[name], fast_lane=False)
    assert fast == slow
    assert all(status < 500 for status, _, _ in fast)


def test_same_answers_with_api_keys() -> None:
    key = {"authorization": "Bearer key-a"}
    requests: list[Request] = [
        ("POST", f"{S}/ops", _op("y", "exp", "x"), key),
        ("POST", f"{S}/ops", _op("y", "exp", "x"), {}),  # no key: 401
        ("POST", f"{S}/ops", _op("y", "exp", "x"), {"authorization": "Bearer nope"}),
        ("POST", f"{S}/ops", _op("y", "exp", "x"), {"authorization": "Bearer key-b"}),  # 404
        ("POST", f"{S}/backward", {"tensors": "y", "grad_tensors": [[1, 1, 1]]}, key),
    ]

    def run(fast_lane: bool) -> list[Any]:
        app = create_app(make_settings(fast_lane=fast_lane, api_keys="key-a,key-b"))
        with SyncClient(app, headers={"authorization": "Bearer key-a"}) as c:
            assert c.post("/v1/sessions", json={"name": "s"}).status_code == 201
            leaf = {"data": [1.0, 2.0, 3.0], "requires_grad": True}
            assert c.put(f"{S}/tensors/x", json=leaf).status_code == 201
            c.client.headers.pop("authorization")
            return [_send(c, *request) for request in requests]

    fast, slow = run(True), run(False)
    assert fast == slow
    assert [status for status, _, _ in fast] == [201, 401, 401, 404, 200]


def test_body_over_the_limit_while_streaming() -> None:
    """No Content-Length: the limit is found while the lane reads the body."""

    async def chunks() -> Any:
        for _ in range(4):
            yield b" " * 1000

    for fast_lane in (True, False):
        with SyncClient(create_app(make_settings(fast_lane=fast_lane, max_body_bytes=2000))) as c:
            c.post("/v1/sessions", json={"name": "s"})
            r = c.post(f"{S}/ops", content=chunks(), headers=JSON)
            assert r.status_code == 413, r.text
            assert r.headers["content-type"] == PROBLEM
            assert r.json()["code"] == "limit_exceeded"


def test_metrics_name_the_route() -> None:
    with SyncClient(create_app(make_settings())) as c:
        c.post("/v1/sessions", json={"name": "s"})
        c.put(f"{S}/tensors/x", json={"data": [1.0], "requires_grad": True})
        assert c.post(f"{S}/ops", json=_op("y", "exp", "x")).status_code == 201
        text = c.get("/metrics").text
    assert 'route="/v1/sessions/{session}/ops",status="201"' in text


# --- the lane on its own, with a router behind it that records what reaches it -------------


class _Behind:
    """The app behind the lane: records the requests and bodies handed to it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.seen.append((scope["path"], body))
        await send({"type": "http.response.start", "status": 599, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _lane() -> tuple[FastLane, _Behind]:
    app = create_app(make_settings())
    app.state.store = SessionStore(app.state.settings)
    behind = _Behind()
    routes = [route for router in ROUTERS for route in router.routes]
    return FastLane(behind, state=app.state, routes=routes), behind


def _drive(
    lane: FastLane,
    path: str,
    messages: list[dict[str, Any]],
    query: bytes = b"",
    headers: tuple[tuple[bytes, bytes], ...] = ((b"content-type", b"application/json"),),
) -> list[dict[str, Any]]:
    """One POST through the lane, its body given as ``receive`` messages; what it sent."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": query,
        "headers": list(headers),
        "root_path": "",
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(lane(scope, receive, send))
    return sent


def _call(
    lane: FastLane, path: str, body: bytes, query: bytes = b"", ctype: bytes = b"application/json"
) -> int:
    chunks = [  # two chunks: the lane reads the whole body
        {"type": "http.request", "body": body[:3], "more_body": True},
        {"type": "http.request", "body": body[3:], "more_body": False},
    ]
    return int(_drive(lane, path, chunks, query, ((b"content-type", ctype),))[0]["status"])


def test_lane_answers_what_it_accepts() -> None:
    lane, behind = _lane()
    session = lane.state.store.create("s", None)
    session.tensors["x"] = engine.tensor([1.0, 2.0], requires_grad=True)
    step = orjson.dumps(_op("y", "exp", "x"))
    assert _call(lane, f"{S}/ops", step) == 201
    assert _call(lane, f"{S}/ops", step, b"values=false&encoding=base64") == 201
    batch = orjson.dumps({"steps": [_op("loss", "sum", "y")]})
    assert _call(lane, f"{S}/batch", batch) == 200
    assert _call(lane, f"{S}/backward", orjson.dumps({"tensors": "loss"})) == 200
    assert behind.seen == []
    assert session.tensors["x"].grad is not None
    assert len(lane.parsed) == 3  # the repeated step was validated once


def test_lane_hands_the_rest_over_with_the_body() -> None:
    lane, behind = _lane()
    lane.state.store.create("s", None)
    step = orjson.dumps(_op("y", "exp", "x"))
    cases = [
        (f"{S}/ops", b"{oops", b"", b"application/json"),  # invalid JSON
        (f"{S}/ops", b'{"out": 1}', b"", b"application/json"),  # invalid body
        (f"{S}/ops", step, b"values=False", b"application/json"),  # unusual spelling
        (f"{S}/ops", step, b"", b"text/plain"),  # not JSON
        ("/v1/sessions/nope/ops", step, b"", b"application/json"),  # unknown session
        (f"{S}/grad", step, b"", b"application/json"),  # not a hot route
    ]
    for path, body, query, ctype in cases:
        assert _call(lane, path, body, query, ctype) == 599
    # refused after reading the body (the first two): replayed; before: never read
    assert behind.seen == [(path, body) for path, body, _, _ in cases]


def test_remembered_bodies_are_frozen() -> None:
    lane, _ = _lane()
    lane.state.store.create("s", None)
    step = orjson.dumps(_op("y", "exp", "x"))
    _call(lane, f"{S}/ops", step)
    (model,) = lane.parsed.values()
    with pytest.raises(ValueError):
        model.out = "z"


def test_first_header_counts_as_in_fastapi() -> None:
    """Two Content-Type headers: Request.headers.get reads the first, and so does the lane."""
    lane, behind = _lane()
    lane.state.store.create("s", None)
    body = orjson.dumps(_op("y", "exp", "x"))
    message = {"type": "http.request", "body": body, "more_body": False}
    types = ((b"content-type", b"text/plain"), (b"content-type", b"application/json"))
    _drive(lane, f"{S}/ops", [message], headers=types)
    assert behind.seen == [(f"{S}/ops", body)]  # handed over: FastAPI answers 415


def test_a_client_that_leaves_gets_no_answer() -> None:
    lane, behind = _lane()
    lane.state.store.create("s", None)
    messages = [
        {"type": "http.request", "body": b'{"out"', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent = _drive(lane, f"{S}/ops", messages)
    assert sent == [] and behind.seen == []
