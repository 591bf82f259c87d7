"""Comparisons, bitwise/logical operators, //, %, casts, ``.data`` and in-place methods in
expressions, each against what PyTorch answers for the same Python expression."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_helpers import SyncClient, assert_problem, put

from engine import OPS
from tests.engine.torch_oracle import assert_values

S = "/v1/sessions/nb"
VALUES: dict[str, tuple[list[Any], str]] = {
    "x": ([-1.5, 0.0, 2.0], "float32"),
    "y": ([5.0, 0.0, -2.0], "float32"),
    "i": ([6, -3, 5], "int64"),
    "b": ([True, False, True], "bool"),
}


@pytest.fixture
def nb(client: SyncClient, session: str) -> SyncClient:
    for name, (data, dtype) in VALUES.items():
        put(client, session, name, data, dtype=dtype, requires_grad=name == "x")
    return client


def _torch_env(torch: Any) -> dict[str, Any]:
    dtypes = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}
    env = {n: torch.tensor(d, dtype=dtypes[t]) for n, (d, t) in VALUES.items()}
    env["x"].requires_grad_(True)
    env["where"] = torch.where
    return env


def _same_as_torch(client: SyncClient, torch: Any, text: str) -> None:
    r = client.post(f"{S}/ops", json={"out": "r", "expr": text})
    assert r.status_code == 201, r.text
    got = r.json()
    want = eval(text, {"__builtins__": {}}, _torch_env(torch))  # the oracle: torch itself
    data = np.array(got["data"]["data"], dtype=got["dtype"]).reshape(got["shape"])
    assert_values(data, want, rtol=0, atol=0, path=text)
    want_fn = None if want.grad_fn is None else type(want.grad_fn).__name__
    assert got["grad_fn"] == want_fn, text


@pytest.mark.parametrize(
    "text",
    [
        "x > 0",
        "0 < x",
        "x == y",
        "x != 0",
        "x <= y",
        "x >= 2",
        "2 >= x",
        "i < 0",
        "(x > 0) == b",
        "where(x > 0, x, y)",
        "where(x > y, x * 2, y)",
        "x[x > 0]",
        "x * (x > 0)",
        "b & b",
        "b | ~b",
        "~b",
        "(x > 0) & (y > 0)",
        "(x > 0) | b",
        "x.float()",
        "x.double()",
        "i.float()",
        "x.long()",
        "x.bool()",
        "(x > 0).float() * x",
        "x.data * 2",
        "x.data",
    ],
)
def test_operators_like_torch(nb: SyncClient, torch: Any, text: str) -> None:
    _same_as_torch(nb, torch, text)


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("i & 3", "bitwise_and"),
        ("i | i", "bitwise_or"),
        ("~i", "bitwise_not"),
        ("b ^ b", "bitwise_xor"),
        ("i ^ 5", "bitwise_xor"),
        ("x // 2", "floor_divide"),
        ("i // 4", "floor_divide"),
        ("x % 2", "remainder"),
        ("-7 % i", "remainder"),
    ],
)
def test_operators_that_need_their_engine_op(
    nb: SyncClient, torch: Any, text: str, op: str
) -> None:
    """Each operator runs its engine op, exactly as torch's operator does."""
    assert op in OPS
    _same_as_torch(nb, torch, text)


def test_literals_fold_like_python(nb: SyncClient) -> None:
    for text, value in [("7 // 2", 3), ("-7 % 3", 2), ("6 & 3", 2), ("1 < 2", True)]:
        r = nb.post(f"{S}/ops", json={"out": "r", "expr": text})
        assert r.status_code == 201, r.text
        assert r.json()["data"]["data"] == value


@pytest.mark.parametrize(
    ("text", "col"),
    [("x < y < 3", 7), ("0 <= x <= 1", 8), ("x in y", 3), ("x is y", 3)],
)
def test_refused_with_position(nb: SyncClient, text: str, col: int) -> None:
    problem = assert_problem(nb.post(f"{S}/ops", json={"out": "r", "expr": text}), 422,
                             "expr_invalid")  # fmt: skip
    assert problem["position"] == {"line": 1, "col": col}


def test_data_has_no_history_and_shares_values(nb: SyncClient) -> None:
    r = nb.post(f"{S}/ops", json={"out": "d", "expr": "x.data"})
    assert r.json()["requires_grad"] is False and r.json()["grad_fn"] is None
    nb.post(f"{S}/ops", json={"out": "d", "expr": "d.mul_(2)"})
    assert nb.get(f"{S}/tensors/x").json()["data"]["data"] == [-3.0, 0.0, 4.0]


def test_inplace_methods(nb: SyncClient) -> None:
    r = nb.post(f"{S}/ops", json={"out": "y", "expr": "y.add_(1)"})
    assert r.status_code == 201, r.text
    assert r.json()["data"]["data"] == [6.0, 1.0, -1.0] and r.json()["version"] == 1
    r = nb.post(f"{S}/ops", json={"out": "x", "expr": "x.add_(1)"})
    assert_problem(r, 409, "leaf_inplace")
    r = nb.post(f"{S}/ops", json={"out": "y", "expr": "y.sum_()"})
    assert_problem(r, 422, "bad_arguments")


def test_inplace_method_in_a_failing_batch_is_rolled_back(nb: SyncClient) -> None:
    body = {"steps": [{"out": "y", "expr": "y.mul_(3)"}, {"out": "z", "op": "nope"}]}
    assert_problem(nb.post(f"{S}/batch", json=body), 422, "unknown_op")
    after = nb.get(f"{S}/tensors/y").json()
    assert after["data"]["data"] == [5.0, 0.0, -2.0] and after["version"] == 0


@pytest.mark.parametrize(
    "text", ["svd(A)[1]", "svd(A)[0][:, 0].abs()", "A.max(dim=0)[1]", "svd(A)[-1].shape"]
)
def test_indexing_a_multi_result_call(
    client: SyncClient, session: str, torch: Any, text: str
) -> None:
    """``svd(A)[1]``: a call that returns several results indexes as PyTorch's tuple."""
    data = [[3.0, 1.0], [1.0, 2.0], [0.5, -1.0]]
    put(client, session, "A", data, dtype="float64", requires_grad=True)
    r = client.post(f"/v1/sessions/{session}/ops", json={"out": "r", "expr": text})
    want = eval(
        text,
        {"__builtins__": {}},
        {"A": torch.tensor(data, dtype=torch.float64, requires_grad=True), "svd": torch.svd},
    )
    if text.endswith(".shape"):
        assert r.status_code in (201, 422), r.text  # a shape is not a tensor result
        return
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["shape"] == list(want.shape)
    np.testing.assert_allclose(np.array(got["data"]["data"]), want.detach().numpy(), atol=1e-12)
