"""Time attacks: a composite op whose loop of engine ops a parameter sets (``niter`` of
``svd_lowrank`` on a 2 x 2 matrix) is stopped at the request's deadline, at the next op
of its loop, instead of running on the event loop forever."""

from __future__ import annotations

import time

from svc_helpers import SyncClient, assert_problem, make_settings, put

from service.app import create_app


def test_a_composite_loop_stops_at_the_deadline() -> None:
    with SyncClient(create_app(make_settings(request_seconds=0.5))) as c:
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
