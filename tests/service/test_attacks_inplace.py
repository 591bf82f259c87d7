"""In-place methods are checked as their out-of-place op is: the engine computes that
result and then writes it into the target, so ``x.pow_(col)`` with a column against a
row would build the whole broadcast (N x N) before noticing it does not fit ``x``.
Refused (413) by the estimate before it allocates, and nothing changes."""

from __future__ import annotations

import pytest
from svc_helpers import SyncClient, assert_problem, make_settings, put, snapshot

from service.app import create_app

N = 2000  # the broadcast of a 1 x N row and an N x 1 column: 4M elements, over the 1M limit

ATTACKS = [
    "x.add_(col)",  # x records a graph: the copying path
    "x.mul_(col)",
    "x.pow_(col)",
    "x.atan2_(col)",
    "x.lerp_(col, 0.5)",
    "row.add_(col)",  # no graph: numpy's ufunc writing in place
    "row.pow_(col)",
    "row.clamp_(col)",
    "row.masked_fill_(col > 0, 1.0)",
]


@pytest.fixture(scope="module")
def small() -> SyncClient:
    with SyncClient(create_app(make_settings(max_tensor_elements=1_000_000))) as c:
        assert c.post("/v1/sessions", json={"name": "a"}).status_code == 201
        put(c, "a", "a", [[1.0] * N], requires_grad=True)
        put(c, "a", "col", [[1.0]] * N)
        put(c, "a", "row", [[1.0] * N])
        assert c.post("/v1/sessions/a/ops", json={"out": "x", "expr": "a * 1"}).is_success
        yield c


@pytest.mark.parametrize("text", ATTACKS)
def test_an_inplace_method_is_refused_before_it_allocates(small: SyncClient, text: str) -> None:
    before = snapshot(small, "a")
    r = small.post("/v1/sessions/a/ops?values=false", json={"out": "o", "expr": text})
    problem = assert_problem(r, 413, "limit_exceeded")
    assert "would have 4000000 elements" in problem["detail"], problem
    assert snapshot(small, "a") == before


def test_an_inplace_method_within_the_limits_still_runs(small: SyncClient) -> None:
    r = small.post("/v1/sessions/a/ops", json={"out": "o", "expr": "row.mul_(2.0)"})
    assert r.status_code == 201, r.text
    assert r.json()["data"]["data"] == [[2.0] * N]
    r = small.post("/v1/sessions/a/ops", json={"out": "o", "expr": "row.div_(2.0)"})
    assert r.json()["data"]["data"] == [[1.0] * N]
