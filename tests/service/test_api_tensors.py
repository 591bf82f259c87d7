from __future__ import annotations

import base64

import numpy as np
from svc_helpers import SyncClient, assert_problem, put, step

NB = "/v1/sessions/nb"


def test_put_creates_then_rebinds(client: SyncClient, session: str) -> None:
    r = client.put(f"{NB}/tensors/w", json={"data": [[1, 2], [3, 4]], "requires_grad": True})
    assert r.status_code == 201
    body = r.json()
    assert body["dtype"] == "float32" and body["shape"] == [2, 2] and body["is_leaf"]
    assert body["data"] == {"data": [[1.0, 2.0], [3.0, 4.0]], "dtype": "float32"}
    r = client.put(f"{NB}/tensors/w", json={"data": 5, "dtype": "int64"})
    assert r.status_code == 200 and r.json()["dtype"] == "int64" and r.json()["shape"] == []


def test_get_tensor_and_encodings(client: SyncClient, session: str) -> None:
    t = client.get(f"{NB}/tensors/x").json()
    assert t["data"]["data"] == [1.0, 2.0] and t["grad"] is None and t["version"] == 0
    meta = client.get(f"{NB}/tensors/x", params={"values": "false"}).json()
    assert "data" not in meta and "grad" not in meta and meta["has_grad"] is False
    raw = client.get(f"{NB}/tensors/x", params={"encoding": "base64"}).json()["data"]
    assert raw["shape"] == [2] and raw["dtype"] == "float32"
    assert np.frombuffer(base64.b64decode(raw["b64"]), "<f4").tolist() == [1.0, 2.0]
    assert_problem(
        client.get(f"{NB}/tensors/x", params={"encoding": "xml"}), 422, "validation_error"
    )


def test_put_b64(client: SyncClient, session: str) -> None:
    wire = {"b64": "AACAPwAAAEA=", "dtype": "float32", "shape": [2]}
    r = client.put(f"{NB}/tensors/v", json=wire)
    assert r.json()["data"]["data"] == [1.0, 2.0]


def test_non_finite_values(client: SyncClient, session: str) -> None:
    put(client, "nb", "c", [0.0, "Infinity", "NaN"], requires_grad=True)
    step(client, "nb", out="l", expr="log(c)")
    r = client.post(f"{NB}/backward", json={"tensors": "l", "grad_tensors": [[1.0, 1.0, 1.0]]})
    assert r.json()["grads"]["c"]["data"] == ["Infinity", 0.0, "NaN"]


def test_integer_tensors_cannot_require_grad(client: SyncClient, session: str) -> None:
    r = client.put(f"{NB}/tensors/i", json={"data": [1], "dtype": "int64", "requires_grad": True})
    assert_problem(r, 422, "dtype_not_differentiable")
    assert_problem(client.get(f"{NB}/tensors/i"), 404, "tensor_not_found")


def test_unknown_tensor(client: SyncClient, session: str) -> None:
    body = assert_problem(client.get(f"{NB}/tensors/xx"), 404, "tensor_not_found")
    assert "'x'" in body["hint"]
    for method in ("GET", "DELETE"):
        assert_problem(client.request(method, f"{NB}/tensors/nope/grad"), 404, "tensor_not_found")
    assert_problem(client.delete(f"{NB}/tensors/nope"), 404, "tensor_not_found")
    r = client.patch(f"{NB}/tensors/nope", json={"requires_grad": True})
    assert_problem(r, 404, "tensor_not_found")


def test_invalid_tensor_names(client: SyncClient, session: str) -> None:
    for name in ("a" * 65, "1x", "class", "__dunder__", "x-y"):
        r = client.put(f"{NB}/tensors/{name}", json={"data": 1})
        assert_problem(r, 422, "invalid_name")
        assert_problem(client.get(f"{NB}/tensors/{name}"), 422, "invalid_name")
    assert client.put(f"{NB}/tensors/{'a' * 64}", json={"data": 1}).status_code == 201


def test_patch_requires_grad_and_retain_grad(client: SyncClient, session: str) -> None:
    put(client, "nb", "a", [3.0])
    r = client.patch(f"{NB}/tensors/a", json={"requires_grad": True})
    assert r.status_code == 200 and r.json()["requires_grad"] is True
    step(client, "nb", out="y", expr="x * 2")
    step(client, "nb", out="z", expr="y.sum()")
    r = client.patch(f"{NB}/tensors/y", json={"retain_grad": True})
    assert r.json()["retains_grad"] is True
    client.post(f"{NB}/backward", json={"tensors": "z"})
    assert client.get(f"{NB}/tensors/y/grad").json() == {
        "grad": {"data": [1.0, 1.0], "dtype": "float32"}
    }
    assert_problem(client.patch(f"{NB}/tensors/y", json={"requires_grad": False}), 422, "not_leaf")


def test_patch_refusals_change_nothing(client: SyncClient, session: str) -> None:
    put(client, "nb", "i", [1], dtype="int64")
    assert_problem(
        client.patch(f"{NB}/tensors/i", json={"requires_grad": True}),
        422,
        "dtype_not_differentiable",
    )
    put(client, "nb", "c", [1.0])
    assert_problem(client.patch(f"{NB}/tensors/c", json={"retain_grad": True}), 422, "no_grad_fn")
    r = client.patch(f"{NB}/tensors/x", json={"requires_grad": False, "retain_grad": True})
    assert_problem(r, 422, "no_grad_fn")
    assert client.get(f"{NB}/tensors/x").json()["requires_grad"] is True
    assert_problem(
        client.patch(f"{NB}/tensors/x", json={"retain_grad": False}), 422, "validation_error"
    )


def test_non_leaf_grad_warns_like_pytorch(client: SyncClient, session: str) -> None:
    from engine import NONLEAF_GRAD_WARNING

    step(client, "nb", out="y", expr="x ** 2")
    assert client.get(f"{NB}/tensors/y/grad").json() == {
        "grad": None,
        "warning": NONLEAF_GRAD_WARNING,
    }
    assert client.get(f"{NB}/tensors/x/grad").json() == {"grad": None}


def test_delete_tensor_keeps_the_graph(client: SyncClient, session: str) -> None:
    step(client, "nb", out="y", expr="(x * 3).sum()")
    assert client.delete(f"{NB}/tensors/x").status_code == 204
    assert_problem(client.get(f"{NB}/tensors/x"), 404, "tensor_not_found")
    assert client.post(f"{NB}/backward", json={"tensors": "y"}).json() == {"grads": {}}


def test_delete_grad_and_zero_grad(client: SyncClient, session: str) -> None:
    put(client, "nb", "w", [1.0, 1.0, 1.0], requires_grad=True)
    step(client, "nb", out="z", expr="(x * 2).sum() + (w * w).sum()")
    client.post(f"{NB}/backward", json={"tensors": "z", "retain_graph": True})
    r = client.post(f"{NB}/zero_grad", json={"tensors": ["x"]})
    assert r.json() == {"tensors": ["x"]}
    x = client.get(f"{NB}/tensors/x").json()
    assert x["grad"]["data"] == [0.0, 0.0]
    assert client.get(f"{NB}/tensors/w").json()["grad"]["data"] == [2.0, 2.0, 2.0]
    assert client.post(f"{NB}/zero_grad").json() == {"tensors": ["x", "w"]}
    r = client.post(f"{NB}/zero_grad", json={"set_to_none": True})
    assert client.get(f"{NB}/tensors/w/grad").json() == {"grad": None}
    assert r.json()["tensors"] == ["x", "w"]
    client.post(f"{NB}/backward", json={"tensors": "z"})
    assert client.delete(f"{NB}/tensors/x/grad").status_code == 204
    assert client.get(f"{NB}/tensors/x/grad").json() == {"grad": None}
    assert client.get(f"{NB}/tensors/w/grad").json()["grad"]["data"] == [2.0, 2.0, 2.0]


def test_zero_grad_with_unknown_name_changes_nothing(client: SyncClient, session: str) -> None:
    step(client, "nb", out="z", expr="(x * x).sum()")
    client.post(f"{NB}/backward", json={"tensors": "z"})
    assert_problem(
        client.post(f"{NB}/zero_grad", json={"tensors": ["x", "nope"]}), 404, "tensor_not_found"
    )
    assert client.get(f"{NB}/tensors/x/grad").json()["grad"]["data"] == [2.0, 4.0]


def test_large_body_round_trip(client: SyncClient, session: str) -> None:
    """Above 1 MiB the body is parsed in a worker thread; the result is the same."""
    values = [float(i % 7) for i in range(200_000)]
    r = client.put(f"{NB}/tensors/big", json={"data": values, "dtype": "float64"})
    assert r.status_code == 201 and r.json()["shape"] == [200_000]
    raw = client.get(f"{NB}/tensors/big", params={"encoding": "base64"}).json()["data"]
    assert np.array_equal(np.frombuffer(base64.b64decode(raw["b64"]), "<f8"), values)
