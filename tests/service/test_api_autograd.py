from __future__ import annotations

import pytest
from svc_helpers import SyncClient, assert_problem, put, snapshot, step

NB = "/v1/sessions/nb"


def backward(client: SyncClient, **body: object) -> dict:
    r = client.post(f"{NB}/backward", json=body)
    assert r.status_code == 200, r.text
    return r.json()["grads"]


def test_tutorial_backward_with_grad_tensors(client: SyncClient, session: str) -> None:
    step(client, "nb", out="y", expr="x ** 2")
    grads = backward(client, tensors=["y"], grad_tensors=[[1.0, 1.0]])
    assert grads == {"x": {"data": [2.0, 4.0], "dtype": "float32"}}


def test_grad_tensor_forms(client: SyncClient, session: str) -> None:
    step(client, "nb", out="y", expr="x ** 2")
    put(client, "nb", "v", [1.0, 0.5])
    assert backward(client, tensors="y", grad_tensors=["v"], retain_graph=True)["x"]["data"] == [
        2.0,
        2.0,
    ]
    g = {"data": [0.0, 1.0], "dtype": "float64"}
    assert backward(client, tensors="y", grad_tensors=[g], retain_graph=True)["x"]["data"] == [
        2.0,
        6.0,
    ]
    raw = {"b64": "AACAPwAAAAA=", "dtype": "float32", "shape": [2]}
    assert backward(client, tensors="y", grad_tensors=[raw])["x"]["data"] == [4.0, 6.0]


def test_accumulates_and_inputs_restrict(client: SyncClient, session: str) -> None:
    put(client, "nb", "w", [3.0], requires_grad=True)
    step(client, "nb", out="z", expr="(x * w).sum()")
    assert set(backward(client, tensors="z", retain_graph=True)) == {"x", "w"}
    grads = backward(client, tensors="z", inputs=["w"], retain_graph=True)
    assert grads == {"w": {"data": [6.0], "dtype": "float32"}}
    assert client.get(f"{NB}/tensors/x/grad").json()["grad"]["data"] == [3.0, 3.0]


def test_unreached_leaf_keeps_none(client: SyncClient, session: str) -> None:
    put(client, "nb", "u", [1.0], requires_grad=True)
    step(client, "nb", out="z", expr="x.sum()")
    assert set(backward(client, tensors="z")) == {"x"}
    assert client.get(f"{NB}/tensors/u/grad").json() == {"grad": None}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"tensors": "y"}, 422, "not_scalar"),
        ({"tensors": "y", "grad_tensors": [[1.0, 1.0, 1.0]]}, 422, "shape_mismatch"),
        ({"tensors": "y", "grad_tensors": [[[1.0], [2.0, 3.0]]]}, 422, "invalid_tensor"),
        ({"tensors": "y", "grad_tensors": [[1.0, 1.0], [1.0, 1.0]]}, 422, "bad_arguments"),
        ({"tensors": "c"}, 422, "no_grad_fn"),
        ({"tensors": ["z", "c"]}, 422, "no_grad_fn"),
        ({"tensors": "nope"}, 404, "tensor_not_found"),
        ({"tensors": "z", "inputs": ["nope"]}, 404, "tensor_not_found"),
        ({"tensors": "y", "grad_tensors": ["nope"]}, 404, "tensor_not_found"),
        ({"tensors": "z", "retain_graph": "maybe"}, 422, "validation_error"),
        ({"tensors": []}, 422, "validation_error"),
        ({}, 422, "validation_error"),
    ],
)
def test_failed_backward_changes_nothing(
    client: SyncClient, session: str, body: dict, status: int, code: str
) -> None:
    put(client, "nb", "c", [1.0])
    step(client, "nb", out="y", expr="x ** 2")
    step(client, "nb", out="z", expr="y.sum()")
    backward(client, tensors="z", retain_graph=True)  # x.grad = [2, 4]
    before = snapshot(client, "nb")
    assert_problem(client.post(f"{NB}/backward", json=body), status, code)
    assert snapshot(client, "nb") == before
    assert backward(client, tensors="z")["x"]["data"] == [4.0, 8.0]  # graph not freed either


def test_graph_freed_hint_names_the_backward(client: SyncClient, session: str) -> None:
    step(client, "nb", out="y", expr="x ** 2")
    step(client, "nb", out="z", expr="y.sum()")
    backward(client, tensors="z")
    body = assert_problem(client.post(f"{NB}/backward", json={"tensors": "z"}), 409, "graph_freed")
    assert body["detail"].startswith("Trying to backward through the graph a second time")
    assert "retain_graph=true" in body["hint"] and "'z'" in body["hint"] and "'y'" in body["hint"]
    assert client.get(f"{NB}/tensors/x/grad").json()["grad"]["data"] == [2.0, 4.0]


def test_version_mismatch_after_assign(client: SyncClient, session: str) -> None:
    step(client, "nb", out="y", expr="(x * x).sum()")
    step(client, "nb", out="x", expr="x + 1", assign=True)
    body = assert_problem(
        client.post(f"{NB}/backward", json={"tensors": "y"}), 409, "version_mismatch"
    )
    assert "modified by an inplace operation" in body["detail"]
    assert "MulBackward0" in body["hint"]


def test_grad_endpoint(client: SyncClient, session: str) -> None:
    step(client, "nb", out="y", expr="x ** 3")
    r = client.post(
        f"{NB}/grad",
        json={
            "outputs": "y",
            "inputs": ["x"],
            "grad_outputs": [[1.0, 1.0]],
            "create_graph": True,
            "out": ["dx"],
        },
    )
    assert r.status_code == 200, r.text
    assert r.json()["grads"] == [{"data": [3.0, 12.0], "dtype": "float32"}]
    assert client.get(f"{NB}/tensors/x/grad").json() == {"grad": None}  # untouched
    dx = client.get(f"{NB}/tensors/dx", params={"values": "false"}).json()
    assert dx["requires_grad"] and not dx["is_leaf"]
    r = client.post(
        f"{NB}/grad", json={"outputs": ["dx"], "inputs": "x", "grad_outputs": [[1.0, 1.0]]}
    )
    assert r.json()["grads"] == [{"data": [6.0, 12.0], "dtype": "float32"}]  # x**3 -> 3x^2 -> 6x


def test_grad_unused_input(client: SyncClient, session: str) -> None:
    put(client, "nb", "u", [1.0], requires_grad=True)
    step(client, "nb", out="z", expr="x.sum()")
    body = {"outputs": "z", "inputs": ["x", "u"], "retain_graph": True}
    assert_problem(client.post(f"{NB}/grad", json=body), 422, "unused_input")
    r = client.post(f"{NB}/grad", json={**body, "allow_unused": True})
    assert r.json()["grads"] == [{"data": [1.0, 1.0], "dtype": "float32"}, None]
    r = client.post(f"{NB}/grad", json={**body, "allow_unused": True, "out": ["gx"]})
    assert_problem(r, 422, "bad_arguments")


def test_graph_formats(client: SyncClient, session: str) -> None:
    step(client, "nb", out="y", expr="x ** 2")
    step(client, "nb", out="z", expr="y.sum()")
    g = client.get(f"{NB}/graph", params={"roots": "z"}).json()
    assert g["roots"] == ["z"] and g["leaves"] == ["x"] and not g["truncated"]
    names = {n["name"]: n for n in g["nodes"]}
    assert names["SumBackward0"]["tensors"] == ["z"] and names["PowBackward0"]["tensors"] == ["y"]
    assert len(g["edges"]) == 2
    backward(client, tensors="z")
    g = client.get(f"{NB}/graph").json()
    assert {n["name"]: n["freed"] for n in g["nodes"]}["PowBackward0"] is True
    dot = client.get(f"{NB}/graph", params={"roots": "z", "format": "dot"})
    assert dot.headers["content-type"].startswith("text/vnd.graphviz")
    assert dot.text.startswith("digraph") and "PowBackward0" in dot.text
    mermaid = client.get(f"{NB}/graph", params={"roots": "y,z", "format": "mermaid"})
    assert mermaid.text.startswith("flowchart TB") and "class n" in mermaid.text
    svg = client.get(f"{NB}/graph", params={"roots": "z", "format": "svg"})
    assert svg.headers["content-type"].startswith("image/svg+xml") and "<svg" in svg.text
    assert_problem(client.get(f"{NB}/graph", params={"roots": "nope"}), 404, "tensor_not_found")
    assert_problem(client.get(f"{NB}/graph", params={"roots": "1x"}), 422, "invalid_name")
    assert_problem(client.get(f"{NB}/graph", params={"format": "png"}), 422, "validation_error")


def test_long_chain(client: SyncClient, session: str) -> None:
    """The tutorial loop `while y.norm() < 1000: y = y * 2` as one batch of 2,000 steps."""
    steps = [{"out": "y", "expr": "x * 1"}] + [{"out": "y", "expr": "y * 1"}] * 2000
    assert (
        client.post(f"{NB}/batch", params={"values": "false"}, json={"steps": steps}).status_code
        == 200
    )
    grads = backward(client, tensors="y", grad_tensors=[[1.0, 1.0]])
    assert grads["x"]["data"] == [1.0, 1.0]
