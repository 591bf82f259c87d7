"""Time attacks: a composite op whose loop of engine ops a parameter sets (``niter`` of
``svd_lowrank`` on a 2 x 2 matrix) is stopped at the request's deadline, at the next op
of its loop, instead of running on the event loop forever."""

from __future__ import annotations

import time
from typing import Any

from svc_helpers import SyncClient, assert_problem, make_settings, put

from service.app import create_app


def test_a_composite_loop_stops_at_the_deadline() -> None:
    """The loop's own check stops it: the registered work (which refuses niter=10**9 up
    front, below) is made no bound here by an unbounded GRADSERVE_WORK_PER_SECOND."""
    with SyncClient(create_app(make_settings(request_seconds=0.5))) as c:
        assert c.post("/v1/sessions", json={"name": "a"}).status_code == 201
        put(c, "a", "x", [[1.0, 2.0], [3.0, 4.0]])
        body = {"out": "o", "op": "svd_lowrank", "args": ["x"], "kwargs": {"niter": 10**9}}
        assert_problem(c.post("/v1/sessions/a/ops", json=body), 413, "limit_exceeded")
    settings = make_settings(request_seconds=0.5, work_per_second=1e30)
    with SyncClient(create_app(settings)) as c:
        assert c.post("/v1/sessions", json={"name": "a"}).status_code == 201
        put(c, "a", "x", [[1.0, 2.0], [3.0, 4.0]])
        t0 = time.monotonic()
        r = c.post(
            "/v1/sessions/a/ops",
            json={"out": "o", "op": "svd_lowrank", "args": ["x"], "kwargs": {"niter": 10**9}},
        )
        print(f"answered in {time.monotonic() - t0:.2f} s")  # printed, not asserted
        assert_problem(r, 503, "deadline_exceeded")
        assert r.headers["retry-after"]
        assert c.get("/v1/sessions/a/tensors/o").status_code == 404


def _op(c: SyncClient, **body: Any) -> Any:
    return c.post("/v1/sessions/a/ops?values=false", json={"out": ["u", "s", "v"], **body})


def test_one_numpy_call_longer_than_the_deadline_is_refused_before_it_runs() -> None:
    """A factorization is one LAPACK call that no check interrupts (an SVD of a 4000 x
    4000 matrix, within every size limit, runs for half an hour): its registered work,
    past what the deadline allows at GRADSERVE_WORK_PER_SECOND, is refused (413)."""
    settings = make_settings(request_seconds=10.0, work_per_second=1e8)  # 1e9 multiply-adds
    with SyncClient(create_app(settings)) as c:
        assert c.post("/v1/sessions", json={"name": "a"}).status_code == 201
        for name, n in (("small", 200), ("big", 400)):
            r = c.post(
                "/v1/sessions/a/ops?values=false", json={"out": name, "op": "rand", "args": [n, n]}
            )
            assert r.status_code == 201, r.text
        for body in (
            {"op": "svd", "args": ["big"]},  # 60 x 400³ = 3.8e9
            {"out": "o", "op": "pinv", "args": ["big"]},  # 90 x 400³: a one-tensor plain call
            {"expr": "big.svd()"},
            {"out": "o", "expr": "big.inverse().svd()[1].sum()"},  # inverse fits, svd not
            {
                "out": "o",
                "op": "einsum",
                "args": ["big", "big"],
                "kwargs": {"equation": "ij,kl->"},
            },  # 400⁴ = 2.6e10
            {"out": "o", "op": "matrix_norm", "args": ["big"], "kwargs": {"ord": "nuc"}},
        ):
            r = _op(c, **body)
            problem = assert_problem(r, 413, "limit_exceeded")
            assert "multiply-adds" in problem["detail"] and "WORK_PER_SECOND" in problem["detail"]
        assert _op(c, out="o", op="matrix_norm", args=["big"]).status_code == 201  # 'fro'
        assert _op(c, out="o", expr="big.inverse().sum()").status_code == 201  # 4 x 400³
        assert _op(
            c, out="o", op="einsum", args=["small", "small"], kwargs={"equation": "ij,jk"}
        ).is_success
