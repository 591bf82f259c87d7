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
        assert code in PROBLEMS
        assert "{closest}" not in (hint_for(code) or "")
