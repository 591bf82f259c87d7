"""Every common mistake's problem names the fix (``HINTS`` in service/errors.py), once
each; and ``x.detach()`` works as a method in an expression."""

from __future__ import annotations

import pytest
from svc_helpers import SyncClient, assert_problem, put

from service.errors import HINTS, PROBLEMS, closest, hint_for

NB = "/v1/sessions/nb"


@pytest.mark.parametrize(
    "step",
    [
        {"op": "sigmoud", "args": ["x"], "out": "y"},  # a plain step
        {"expr": "sigmoud(x)", "out": "y"},  # the function form
        {"expr": "x.sigmoud()", "out": "y"},  # the method form
    ],
)
def test_unknown_op_names_the_closest(client: SyncClient, session: str, step: dict) -> None:
    body = assert_problem(client.post(f"{NB}/ops", json=step), 422, "unknown_op")
    assert body["hint"].startswith("did you mean 'sigmoid'?"), body


def test_shape_mismatch_shows_the_shapes(client: SyncClient, session: str) -> None:
    put(client, "nb", "w", [1.0, 2.0, 3.0])
    r = client.post(f"{NB}/ops", json={"expr": "x + w", "out": "y"})
    body = assert_problem(r, 422, "shape_mismatch")
    assert "(2,) and (3,)" in body["hint"] and "unsqueeze" in body["hint"]


def test_a_gradient_of_the_wrong_shape_is_not_told_to_broadcast(
    client: SyncClient, session: str
) -> None:
    """backward and grad never broadcast a given gradient: the hint says so, not the
    broadcasting rule of ops."""
    assert client.post(f"{NB}/ops", json={"expr": "x * 2", "out": "y"}).status_code == 201
    for path, body in [
        ("backward", {"tensors": "y", "grad_tensors": [[1.0]]}),
        ("grad", {"outputs": ["y"], "inputs": ["x"], "grad_outputs": [[1.0, 1.0, 1.0]]}),
    ]:
        hint = assert_problem(client.post(f"{NB}/{path}", json=body), 422, "shape_mismatch")["hint"]
        assert "shape exactly" in hint and "unsqueeze" not in hint, hint


@pytest.mark.parametrize("expr", ["m @ x", "m.mm(w)", "x @ v"])
def test_a_matrix_product_names_the_inner_sizes(
    client: SyncClient, session: str, expr: str
) -> None:
    put(client, "nb", "m", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    put(client, "nb", "w", [[1.0], [2.0]])
    put(client, "nb", "v", [1.0, 2.0, 3.0])
    r = client.post(f"{NB}/ops", json={"expr": expr, "out": "y"})
    hint = assert_problem(r, 422, "shape_mismatch")["hint"]
    assert "(n, k) @ (k, m)" in hint and "broadcast" not in hint, hint


def test_backward_without_grad_names_requires_grad(client: SyncClient, session: str) -> None:
    put(client, "nb", "c", [1.0, 2.0])
    assert client.post(f"{NB}/ops", json={"expr": "(c * 2).sum()", "out": "q"}).status_code == 201
    body = assert_problem(client.post(f"{NB}/backward", json={"tensors": "q"}), 422, "no_grad_fn")
    assert '"requires_grad": true' in body["hint"] and "no_grad" in body["hint"]


def test_an_integer_leaf_requiring_grad_names_a_float_dtype(
    client: SyncClient, session: str
) -> None:
    r = client.put(
        f"{NB}/tensors/i", json={"data": [1, 2], "dtype": "int64", "requires_grad": True}
    )
    body = assert_problem(r, 422, "dtype_not_differentiable")
    assert '"dtype": "float32"' in body["hint"]


def test_writing_a_view_in_place_is_inplace_view(client: SyncClient, session: str) -> None:
    """A view of several (split's) or one made under no_grad: PyTorch's refusal, 409 like
    leaf_inplace; reading the session afterwards still works (PyTorch refuses to read a
    stale view's grad_fn; the session shows the node it had)."""
    steps = [{"out": "y", "expr": "x * 1"}, {"out": ["a", "b"], "expr": "y.split(1)"}]
    assert client.post(f"{NB}/batch", json={"steps": steps}).status_code == 200
    r = client.post(f"{NB}/ops", json={"expr": "a.mul_(2)", "out": "a"})
    body = assert_problem(r, 409, "inplace_view")
    assert "Output 0 of Split is a view" in body["detail"] and "clone" in body["hint"]
    assert client.post(f"{NB}/ops", json={"expr": "y[:1]", "out": "v", "no_grad": True}).is_success
    r = client.post(f"{NB}/ops", json={"expr": "v.mul_(2)", "out": "v"})
    assert "created in no_grad mode" in assert_problem(r, 409, "inplace_view")["detail"]
    assert client.post(f"{NB}/ops", json={"expr": "y.mul_(2)", "out": "y"}).status_code == 201
    for url in (NB, f"{NB}/tensors/a"):
        assert client.get(url).status_code == 200, client.get(url).text
    # a backward and zero_grad that do not touch the stale view work, as in PyTorch
    assert client.post(f"{NB}/ops", json={"expr": "y.sum()", "out": "q"}).status_code == 201
    r = client.post(f"{NB}/backward", json={"tensors": "q"})
    assert r.status_code == 200 and r.json()["grads"]["x"]["data"] == [2.0, 2.0], r.text
    assert client.post(f"{NB}/zero_grad", json={}).json() == {"tensors": ["x"]}
    r = client.post(f"{NB}/ops", json={"expr": "a * 2", "out": "z"})
    assert "has been modified inplace" in assert_problem(r, 409, "inplace_view")["detail"]


def test_non_scalar_backward_names_grad_tensors(client: SyncClient, session: str) -> None:
    assert client.post(f"{NB}/ops", json={"expr": "x * 2", "out": "y"}).status_code == 201
    body = assert_problem(client.post(f"{NB}/backward", json={"tensors": ["y"]}), 422, "not_scalar")
    assert "grad_tensors" in body["hint"] and "y.sum().backward()" in body["hint"]


def test_inplace_on_a_leaf_names_no_grad_and_assign(client: SyncClient, session: str) -> None:
    r = client.post(f"{NB}/ops", json={"expr": "x.add_(1)", "out": "z"})
    body = assert_problem(r, 409, "leaf_inplace")
    assert "no_grad" in body["hint"] and "assign" in body["hint"]


def test_dtype_mismatch_names_float(client: SyncClient, session: str) -> None:
    put(client, "nb", "d", [1.0, 2.0], dtype="float64")
    body = assert_problem(
        client.post(f"{NB}/ops", json={"expr": "x @ d", "out": "z"}), 422, "dtype_mismatch"
    )
    assert "float32 and float64" in body["hint"] and "x.float()" in body["hint"]


def test_405_allows_every_method_of_the_path(client: SyncClient, session: str) -> None:
    r = client.post(f"{NB}/tensors/x")
    body = assert_problem(r, 405, "method_not_allowed")
    allowed = {m.strip() for m in r.headers["allow"].split(",")}
    assert {"GET", "PUT", "PATCH", "DELETE"} <= allowed and "POST" not in allowed
    assert body["hint"] == f"this route allows {r.headers['allow']}"


def test_a_wrong_content_type_is_a_415(client: SyncClient, session: str) -> None:
    r = client.post(f"{NB}/ops", content=b'{"expr": "x"}', headers={"content-type": "text/plain"})
    body = assert_problem(r, 415, "unsupported_media_type")
    assert "Content-Type: application/json" in body["hint"]


def test_detach_is_a_method_in_expressions(client: SyncClient, session: str) -> None:
    r = client.post(f"{NB}/ops", json={"expr": "x.detach() * 2", "out": "z"})
    assert r.status_code == 201, r.text
    assert r.json()["requires_grad"] is False and r.json()["data"]["data"] == [2.0, 4.0]


def test_hints_are_data() -> None:
    """Optional parts drop out when their field is unknown; each entry formats."""
    assert hint_for("unknown_op") == "GET /v1/ops lists the catalogue"
    assert hint_for("unknown_op", closest=closest("sigmoud", ["sigmoid", "tanh"])).startswith(
        "did you mean 'sigmoid'?"
    )
    assert closest("qwertyuiop", ["sigmoid"]) is None
    for code in HINTS:
        assert code.split(".")[0] in PROBLEMS
        assert "{closest}" not in (hint_for(code) or "")
