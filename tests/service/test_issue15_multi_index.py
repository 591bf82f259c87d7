"""Issue 15: indexing a multi-result call inside an expression (``svd(A)[1]``) picks
that result, as Python indexes PyTorch's returned tuple."""

from __future__ import annotations

import numpy as np
from svc_helpers import SyncClient, assert_problem, put, step


def test_multi_result_call_indexed_in_an_expression(client: SyncClient, session: str) -> None:
    put(client, "nb", "A", [[3.0, 1.0], [1.0, 2.0]], requires_grad=True)
    s = step(client, "nb", out="s", expr="svd(A)[1]")
    assert s["shape"] == [2]
    want = np.linalg.svd(np.array([[3.0, 1.0], [1.0, 2.0]]), compute_uv=False)
    got = client.get("/v1/sessions/nb/tensors/s").json()["data"]["data"]
    np.testing.assert_allclose(got, want, rtol=1e-6)  # float32
    m = step(client, "nb", out="m", expr="A.max(dim=1)[0].sum() + svd(A)[-1].sum()")
    assert m["shape"] == []
    assert m["requires_grad"] is True


def test_multi_result_index_out_of_range_is_a_problem(client: SyncClient, session: str) -> None:
    put(client, "nb", "A", [[3.0, 1.0], [1.0, 2.0]])
    r = client.post("/v1/sessions/nb/ops", json={"out": "z", "expr": "svd(A)[3]"})
    assert_problem(r, 422, "index_out_of_range")
    r = client.post("/v1/sessions/nb/ops", json={"out": "z", "expr": "svd(A)[1.5]"})
    assert_problem(r, 422, "bad_arguments")
