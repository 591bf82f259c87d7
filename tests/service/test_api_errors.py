"""The bad-input list: every malformed request is a problem+json with a stable code,
never a 500, and never changes the session."""

from __future__ import annotations

import base64

import numpy as np
import orjson
import pytest
from svc_helpers import SyncClient, assert_problem, make_settings, snapshot

from service.app import create_app
from service.http import LARGE_BODY, parse_large_json

NB = "/v1/sessions/nb"
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ({"data": [[1.0, 2.0], [3.0]]}, "invalid_tensor"),  # ragged
        ({"b64": "AACAPw==", "dtype": "float32", "shape": [2]}, "invalid_tensor"),  # length
        ({"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [3]}, "invalid_tensor"),
        ({"data": [1.0], "dtype": "complex64"}, "invalid_tensor"),  # unknown dtype
        ({"data": [1.0], "dtype": 32}, "invalid_tensor"),
        ({"b64": "AACAPw==", "shape": ["NaN"]}, "invalid_tensor"),  # NaN in shape
        ({"b64": "AACAPw==", "shape": [1.5]}, "invalid_tensor"),
        ({"data": [1.0, "nan"]}, "invalid_tensor"),
        ({"data": None}, "invalid_tensor"),
        ({"data": {"a": 1}}, "invalid_tensor"),
        ({}, "invalid_tensor"),
        ({"data": [1.0], "colour": "red"}, "validation_error"),
        ({"data": [1.0], "requires_grad": "perhaps"}, "validation_error"),
    ],
)
def test_bad_tensor_values(client: SyncClient, session: str, value: dict, code: str) -> None:
    before = snapshot(client, "nb")
    assert_problem(client.put(f"{NB}/tensors/x", json=value), 422, code)
    assert snapshot(client, "nb") == before


def test_validation_errors_list_each_field(client: SyncClient, session: str) -> None:
    r = client.post(f"{NB}/backward", json={"tensors": 5, "create_graph": "maybe", "extra": 1})
    body = assert_problem(r, 422, "validation_error")
    locs = {tuple(e["loc"]) for e in body["errors"]}
    assert ("body", "create_graph") in locs and ("body", "extra") in locs
    assert all({"loc", "msg", "type"} == set(e) for e in body["errors"])


def test_invalid_json(client: SyncClient, session: str) -> None:
    for raw in (b"{bad", b'{"out": "y", "expr": "x"', b"\xff\xfe", b'{"a": NaN}'):
        r = client.post(f"{NB}/ops", content=raw, headers={"content-type": "application/json"})
        assert_problem(r, 400, "invalid_json")


def test_body_of_the_wrong_type(client: SyncClient, session: str) -> None:
    for body in ([1, 2], "text", 3, None):
        r = client.post(f"{NB}/ops", json=body)
        assert_problem(r, 422, "validation_error")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_wrong_content_type(client: SyncClient, session: str, content_type: str | None) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    r = client.post(f"{NB}/ops", content=b'{"out": "y", "expr": "x"}', headers=headers)
    assert_problem(r, 415, "unsupported_media_type")
    ok = client.post(
        f"{NB}/ops",
        content=b'{"out": "y", "expr": "x"}',
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert ok.status_code == 201


def test_body_too_large() -> None:
    with SyncClient(create_app(make_settings(max_body_bytes=1000))) as c:
        c.post("/v1/sessions", json={"name": "nb"})
        big = {"data": [1.0] * 1000}
        assert_problem(c.put(f"{NB}/tensors/x", json=big), 413, "limit_exceeded")

        async def chunks():  # no Content-Length: the limit applies to what streams in
            for _ in range(50):
                yield b" " * 100

        r = c.put(f"{NB}/tensors/x", content=chunks(), headers={"content-type": "application/json"})
        assert_problem(r, 413, "limit_exceeded")
        assert_problem(c.get("/v1/sessions", content=b"x" * 2000), 413, "limit_exceeded")
        assert c.put(f"{NB}/tensors/x", json={"data": [1.0] * 10}).status_code == 201


def test_unknown_route_and_method(client: SyncClient) -> None:
    assert_problem(client.get("/v2/sessions"), 404, "not_found")
    assert_problem(client.get("/"), 404, "not_found")
    r = client.delete("/v1/ops")
    assert_problem(r, 405, "method_not_allowed")
    assert "GET" in r.headers["allow"]
    assert_problem(client.put("/v1/sessions"), 405, "method_not_allowed")


def test_garbage_everywhere_is_never_a_500(client: SyncClient, session: str) -> None:
    bodies = [
        {},
        [],
        {"steps": "x"},
        {"steps": [None]},
        {"tensors": {"x": 1}},
        {"out": None, "op": 1},
        {"args": [[["x"]]], "op": "exp", "out": "y"},
        {"out": "y", "op": "exp", "args": [{"b64": 5}]},
        {"out": "y", "op": "sum", "args": ["x"], "kwargs": {"dim": "x"}},
        {"out": "y", "op": "sum", "args": ["x"], "kwargs": {"dim": 7}},
        {"out": "y", "op": "reshape", "args": ["x", -5]},
        {"out": "y", "op": "expand", "args": ["x", 10**30]},
        {"out": "y", "expr": "x[10**30]"},
        {"out": "y", "expr": "x ** 'a'"},
        {"out": "y", "expr": "sum(x, dim=None, keepdim='x')"},
        {"out": "y", "expr": "x.to('complex128')"},
        {"out": "y", "expr": "x @ x @ x"},
        {"tensors": "x", "grad_tensors": [{"data": "Infinity"}]},
        {"outputs": "x", "inputs": "x"},
        {"outputs": "x", "inputs": "x", "out": ["a", "b"]},
    ]
    paths = ["/ops", "/batch", "/backward", "/grad", "/zero_grad"]
    for path in paths:
        for body in bodies:
            r = client.post(NB + path, json=body)
            assert r.status_code < 500, (path, body, r.text)
            if r.status_code >= 400:
                assert r.headers["content-type"].startswith("application/problem+json")
    r = client.post("/v1/gradient", json={"tensors": {"x": {"data": 1.0}}, "fetch": [5]})
    assert_problem(r, 422, "validation_error")


def test_large_bodies_parse_like_small_ones(client: SyncClient, session: str) -> None:
    """Bodies over 1 MiB that are mostly one base64 string are parsed by jiter, not orjson:
    the same values, and the same problem for the same mistakes."""
    raw = np.arange(400_000, dtype="<f4").tobytes()
    leaf = {"b64": base64.b64encode(raw).decode(), "dtype": "float32", "shape": [400_000]}
    body = orjson.dumps(leaf)
    assert len(body) > LARGE_BODY and parse_large_json(body) == orjson.loads(body)
    numbers = orjson.dumps({"data": list(range(300_000))})
    assert len(numbers) > LARGE_BODY and parse_large_json(numbers) == orjson.loads(numbers)

    r = client.put(f"{NB}/tensors/big?values=false", content=body, headers=JSON)
    assert r.status_code == 201 and r.json()["shape"] == [400_000]
    expected = np.arange(400_000, dtype=np.float32)
    got = client.get(f"{NB}/tensors/big?encoding=base64").json()["data"]["b64"]
    assert np.array_equal(np.frombuffer(base64.b64decode(got), "<f4"), expected)

    for broken in (body[:-1], body.replace(b'"dtype"', b"dtype"), body[:-1] + b', "x": NaN}'):
        with pytest.raises(orjson.JSONDecodeError) as orjson_error:
            orjson.loads(broken)
        r = client.put(f"{NB}/tensors/bad", content=broken, headers=JSON)
        problem = assert_problem(r, 400, "invalid_json")
        assert problem["errors"][0]["loc"] == ["body", orjson_error.value.pos]
    assert client.get(f"{NB}/tensors/bad").status_code == 404
