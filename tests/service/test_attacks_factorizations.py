"""A factorization's error path is as cheap as its work fact says: finding which leading
minor of a matrix is not positive-definite was one Cholesky per minor (n^4/4
multiply-adds, 73 s for a 300 x 300 matrix, past any deadline for 500 x 500, while its
registered work promised n^3); it is now LAPACK's own answer from one factorization."""

from __future__ import annotations

from svc_helpers import SyncClient, assert_problem, make_settings

from service.app import create_app

N = 500


def test_the_not_positive_definite_error_comes_in_one_factorization() -> None:
    with SyncClient(create_app(make_settings(request_seconds=30.0))) as c:
        assert c.post("/v1/sessions", json={"name": "a"}).status_code == 201
        made = c.post("/v1/sessions/a/ops?values=false", json={"out": "i", "expr": f"eye({N})"})
        assert made.status_code == 201, made.text
        # the last leading minor is the first that is not positive-definite
        bad = c.post(
            "/v1/sessions/a/ops?values=false",
            json={"out": "a", "expr": f"i - 2 * (arange({N}) == {N - 1}).float().diag()"},
        )
        assert bad.status_code == 201, bad.text
        r = c.post("/v1/sessions/a/ops", json={"out": "l", "op": "cholesky", "args": ["a"]})
        problem = assert_problem(r, 422, "bad_arguments")
        assert f"leading minor of order {N} is not positive-definite" in problem["detail"]
        r = c.post("/v1/sessions/a/ops", json={"out": ["l", "info"], "expr": "cholesky_ex(a)"})
        assert r.status_code == 201, r.text
        assert r.json()["tensors"][1]["data"]["data"] == N
        r = c.post("/v1/sessions/a/ops", json={"out": ["l", "info"], "expr": "cholesky_ex(i)"})
        assert r.json()["tensors"][1]["data"]["data"] == 0
