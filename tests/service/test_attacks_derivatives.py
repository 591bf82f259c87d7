"""Derivatives whose results or batched intermediates are huge though every input is
small: a Jacobian or Hessian of n inputs is n^2 elements, and jacrev/jacfwd/hessian
vmap the program over a basis of n rows, so each intermediate the program makes is held
n times. Refused (413) before the transform allocates (it used to build 1.6 GB for
n = 20,000, and n = 60,000 would take the machine), on the program routes and on the
stateless /v1/gradient alike; nothing changes."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from svc_helpers import SyncClient, assert_problem, make_settings, snapshot

from service.app import create_app

N = 20_000  # a Jacobian of N x N: 4e8 elements, 25 times the tensor limit
M = 3_000  # outer(x, x) is 9e6 elements (within it), held M times by jacrev's basis

PROGRAM = {
    "steps": [
        {"out": "y", "expr": "x * 2"},
        {"out": "s", "expr": "(x * x).sum()"},
        {"out": "t", "expr": "(xb * xb).sum() + w.sum()"},
        {"out": "z", "expr": "outer(v, v).sum(1)"},
    ]
}


@pytest.fixture(scope="module")
def c() -> Any:
    with SyncClient(create_app(make_settings(request_seconds=20.0))) as client:
        assert client.post("/v1/sessions", json={"name": "a"}).status_code == 201
        for name, expr in (
            ("x", f"ones({N})"),
            ("w", f"ones({N})"),
            ("xb", "ones(1000, 2)"),
            ("v", f"ones({M})"),
            ("small", "ones(3)"),
        ):
            r = client.post("/v1/sessions/a/ops?values=false", json={"out": name, "expr": expr})
            assert r.status_code == 201, r.text
        assert client.put("/v1/sessions/a/programs/p", json=PROGRAM).status_code == 201
        yield client


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("jacobian", {"of": ["y"], "wrt": ["x"]}, "the Jacobian of 'y' by 'x'"),
    ("jacobian", {"of": ["y"], "wrt": ["x"], "mode": "fwd"}, "the Jacobian of 'y' by 'x'"),
    ("hessian", {"of": "s", "wrt": ["x"]}, "the Hessian block of 'x' by 'x'"),
    # w unbatched: its gradient once per sample of xb (1000 x N)
    ("per_sample_grad", {"of": "t", "wrt": ["w"], "batch": {"xb": 0}}, "per-sample gradients"),
    # a 9e6 Jacobian, but jacrev holds outer(v, v) once per row of its basis: 2.7e10
    ("jacobian", {"of": ["z"], "wrt": ["v"]}, "GRADSERVE_MAX_SESSION_BYTES"),
]


@pytest.mark.parametrize(("kind", "body", "says"), REFUSED, ids=[r[2] for r in REFUSED])
def test_a_huge_derivative_is_refused_before_it_allocates(
    c: SyncClient, kind: str, body: dict[str, Any], says: str
) -> None:
    before = snapshot(c, "a")
    r = c.post(f"/v1/sessions/a/programs/p/{kind}?values=false", json=body)
    problem = assert_problem(r, 413, "limit_exceeded")
    assert says in problem["detail"], problem
    assert snapshot(c, "a") == before


def test_the_stateless_route_refuses_it_too() -> None:
    zeros = base64.b64encode(bytes(4 * N)).decode()
    body = {
        "tensors": {"x": {"b64": zeros, "shape": [N], "requires_grad": True}},
        "steps": [{"out": "y", "expr": "x * 2"}],
        "jacobian": {"of": ["y"], "wrt": ["x"]},
    }
    with SyncClient(create_app(make_settings())) as client:
        r = client.post("/v1/gradient?values=false", json=body)
    problem = assert_problem(r, 413, "limit_exceeded")
    assert "the Jacobian of 'y' by 'x'" in problem["detail"]


def test_a_small_derivative_still_answers(c: SyncClient) -> None:
    r = c.put("/v1/sessions/a/programs/q", json={"steps": [{"out": "y", "expr": "small * small"}]})
    assert r.status_code == 201, r.text
    r = c.post("/v1/sessions/a/programs/q/jacobian", json={"of": ["y"], "wrt": ["small"]})
    assert r.status_code == 200, r.text
    assert r.json()["jacobian"]["y"]["small"]["data"] == [[2.0, 0, 0], [0, 2.0, 0], [0, 0, 2.0]]
