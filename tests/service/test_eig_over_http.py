"""``linalg_eig`` and ``linalg_eigvals`` over HTTP: their results are complex, which the
wire cannot carry (JSON has no complex numbers), so a call that makes one, even inside
an expression, is refused as ``bad_arguments`` and changes nothing."""

from __future__ import annotations

from svc_helpers import SyncClient, assert_problem, put


def test_complex_results_are_refused_and_change_nothing(client: SyncClient, session: str) -> None:
    put(client, "nb", "A", [[0.0, 1.0], [-2.0, 0.5]], requires_grad=True)
    before = client.get("/v1/sessions/nb/tensors").json()
    for body in (
        {"out": "L", "op": "linalg_eigvals", "args": ["A"]},
        {"out": "L", "expr": "linalg_eigvals(A).abs()"},
        {"out": "L", "expr": "linalg_eig(A)[0].abs().sum()"},
    ):
        r = client.post("/v1/sessions/nb/ops", json=body)
        body_json = assert_problem(r, 422, "bad_arguments")
        assert "complex" in body_json["detail"]
    assert client.get("/v1/sessions/nb/tensors").json() == before
