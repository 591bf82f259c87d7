"""Each limit is refused with its code and status, before the work and the allocation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from svc_helpers import SyncClient, assert_problem, make_settings, put, snapshot, step

from service.app import create_app

NB = "/v1/sessions/nb"


@pytest.fixture
def small() -> Iterator[SyncClient]:
    settings = make_settings(
        max_tensor_elements=100,
        max_session_bytes=1800,
        max_batch_steps=5,
        max_expr_length=50,
    )
    with SyncClient(create_app(settings)) as c:
        c.post("/v1/sessions", json={"name": "nb"})
        put(c, "nb", "x", [1.0] * 100, requires_grad=True)
        yield c


def test_tensor_elements(small: SyncClient) -> None:
    assert_problem(small.put(f"{NB}/tensors/t", json={"data": [0.0] * 101}), 413, "limit_exceeded")
    huge = {"b64": "AAAA", "dtype": "float32", "shape": [10**6, 10**6]}
    body = assert_problem(small.put(f"{NB}/tensors/t", json=huge), 413, "limit_exceeded")
    assert "1000000000000 elements" in body["detail"]


def test_op_results_checked_before_allocation(small: SyncClient) -> None:
    put(small, "nb", "col", [[1.0]] * 20)
    put(small, "nb", "row", [[1.0] * 20])
    before = snapshot(small, "nb")
    r = small.post(f"{NB}/ops", json={"out": "big", "expr": "col * row"})  # 400 elements
    assert_problem(r, 413, "limit_exceeded")
    r = small.post(f"{NB}/ops", json={"out": "big", "op": "expand", "args": ["col", 20, 10**9]})
    assert_problem(r, 413, "limit_exceeded")
    put(small, "nb", "v", [1.0] * 20)
    for text in (
        "outer(v, v)",
        "stack([v, v, v, v, v, v])",
        "col @ row",
        "row[(v * 0).to('int64')]",
    ):
        r = small.post(f"{NB}/ops", json={"out": "big", "expr": text})
        assert_problem(r, 413, "limit_exceeded")
    small.delete(f"{NB}/tensors/v")
    assert snapshot(small, "nb") == before


def test_session_bytes(small: SyncClient) -> None:
    # x holds 400 bytes; 1800 is the limit
    step(small, "nb", out="a", expr="x * 2")
    step(small, "nb", out="b", expr="x * 3")
    before = snapshot(small, "nb")
    r = small.post(
        f"{NB}/batch",
        json={"steps": [{"out": "c", "expr": "x * 4"}, {"out": "d", "expr": "x * 5"}]},
    )
    assert_problem(r, 507, "limit_exceeded")
    assert snapshot(small, "nb") == before
    assert_problem(
        small.put(f"{NB}/tensors/e", json={"data": [1.0] * 100, "dtype": "float64"}),
        507,
        "limit_exceeded",
    )
    step(small, "nb", out="c", expr="x * 4")  # 1600 bytes now; x's first grad would add 400
    step(small, "nb", out="z", expr="c.sum()")
    r = small.post(f"{NB}/backward", json={"tensors": "z"})
    assert_problem(r, 507, "limit_exceeded")
    assert small.get(f"{NB}/tensors/x/grad").json() == {"grad": None}
    small.delete(f"{NB}/tensors/a")
    assert small.post(f"{NB}/backward", json={"tensors": "z"}).status_code == 200


def test_session_bytes_across_many_steps(small: SyncClient) -> None:
    """Steps keep an upper bound of the session's bytes instead of measuring every tensor:
    rebinding one name many times is never refused (the bound is measured again near the
    limit), and a view keeps its whole buffer counted."""
    for _ in range(30):  # 30 x 400 bytes bound, 800 held
        step(small, "nb", out="a", expr="x * 2")
    assert small.get(f"{NB}").json()["bytes"] == 800
    step(small, "nb", out="b", expr="x * 3")
    step(small, "nb", out="c", expr="x * 4")  # 1600 bytes
    put(small, "nb", "w", [1.0] * 4)  # 1616
    # a 1-element view of a fresh 400-byte buffer holds all of it: 2016 > 1800
    r = small.post(f"{NB}/ops", json={"out": "e", "expr": "(x * w[0])[0:1]"})
    assert_problem(r, 507, "limit_exceeded")
    assert small.get(f"{NB}").json()["bytes"] == 1616
    small.delete(f"{NB}/tensors/c")
    r = small.post(f"{NB}/ops", json={"out": "e", "expr": "(x * w[0])[0:1]"})
    assert r.status_code == 201, r.text
    assert small.get(f"{NB}").json()["bytes"] == 1616


def test_batch_steps(small: SyncClient) -> None:
    steps = [{"out": "y", "expr": "x * 1"}] * 6
    assert_problem(small.post(f"{NB}/batch", json={"steps": steps}), 413, "limit_exceeded")
    r = small.post("/v1/gradient", json={"tensors": {}, "steps": steps})
    assert_problem(r, 413, "limit_exceeded")
    assert small.post(f"{NB}/batch", json={"steps": steps[:5]}).status_code == 200


def test_expression_length(small: SyncClient) -> None:
    long = "x" + " + x" * 20
    body = assert_problem(
        small.post(f"{NB}/ops", json={"out": "y", "expr": long}), 422, "expr_invalid"
    )
    assert "limit is 50" in body["detail"]
