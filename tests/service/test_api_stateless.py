from __future__ import annotations

from svc_helpers import SyncClient, assert_problem

TUTORIAL = {
    "tensors": {"x": {"data": [1.0, 2.0], "requires_grad": True}},
    "steps": [{"out": "y", "expr": "x ** 2"}],
    "backward": {"tensors": "y", "grad_tensors": [[1.0, 1.0]]},
    "fetch": ["x.grad", "y", "y.grad"],
}


def test_one_call(client: SyncClient) -> None:
    r = client.post("/v1/gradient", json=TUTORIAL)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "values": {
            "x.grad": {"data": [2.0, 4.0], "dtype": "float32"},
            "y": {"data": [1.0, 4.0], "dtype": "float32"},
            "y.grad": None,
        }
    }
    assert client.get("/v1/sessions").json() == {"sessions": []}  # nothing kept


def test_without_backward_and_base64(client: SyncClient) -> None:
    body = {**TUTORIAL, "backward": None, "fetch": ["y"]}
    r = client.post("/v1/gradient", params={"encoding": "base64"}, json=body)
    assert r.json()["values"]["y"] == {"b64": "AACAPwAAgEA=", "dtype": "float32", "shape": [2]}


def test_errors(client: SyncClient) -> None:
    assert_problem(
        client.post("/v1/gradient", json={**TUTORIAL, "fetch": ["x.data"]}), 422, "invalid_name"
    )
    assert_problem(
        client.post("/v1/gradient", json={**TUTORIAL, "fetch": ["nope"]}), 404, "tensor_not_found"
    )
    bad_step = {**TUTORIAL, "steps": [{"out": "y", "expr": "x.__dict__"}]}
    assert_problem(client.post("/v1/gradient", json=bad_step), 422, "expr_invalid")
    not_scalar = {**TUTORIAL, "backward": {"tensors": "y"}}
    assert_problem(client.post("/v1/gradient", json=not_scalar), 422, "not_scalar")
    bad_leaf = {**TUTORIAL, "tensors": {"x": {"data": [[1.0], [1.0, 2.0]]}}}
    assert_problem(client.post("/v1/gradient", json=bad_leaf), 422, "invalid_tensor")
    bad_name = {**TUTORIAL, "tensors": {"1x": {"data": 1.0}}}
    assert_problem(client.post("/v1/gradient", json=bad_name), 422, "invalid_name")
