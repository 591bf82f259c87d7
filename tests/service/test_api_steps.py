from __future__ import annotations

import pytest
from svc_helpers import SyncClient, assert_problem, put, snapshot, step

NB = "/v1/sessions/nb"


def test_op_and_expr_steps(client: SyncClient, session: str) -> None:
    y = step(client, "nb", out="y", op="pow", args=["x", 2])
    assert y["grad_fn"] == "PowBackward0" and y["data"]["data"] == [1.0, 4.0]
    s = step(client, "nb", out="s", op="sum", args=["y"], kwargs={"dim": 0, "keepdim": True})
    assert s["shape"] == [1] and s["data"]["data"] == [5.0]
    put(client, "nb", "a", 1.0, requires_grad=True)
    put(client, "nb", "b", 2.0, requires_grad=True)
    put(client, "nb", "c", 3.0, requires_grad=True)
    q = step(client, "nb", out="q", expr="3*a + 2*b*b + log(c)")
    assert q["grad_fn"] == "AddBackward0" and q["data"]["data"] == pytest.approx(12.0986123)


def test_constants_lists_and_several_results(client: SyncClient, session: str) -> None:
    c = step(client, "nb", out="c", op="mul", args=["x", {"data": [10, 100]}])
    assert c["data"]["data"] == [10.0, 200.0]
    st = step(client, "nb", out="st", op="stack", args=[["x", "c"]])
    assert st["shape"] == [2, 2]
    r = client.post(f"{NB}/ops", json={"out": ["p", "q"], "op": "chunk", "args": ["x", 2]})
    assert r.status_code == 201
    assert [t["name"] for t in r.json()["tensors"]] == ["p", "q"]
    r = client.post(f"{NB}/ops", json={"out": "p", "op": "chunk", "args": ["x", 2]})
    assert_problem(r, 422, "bad_arguments")


def test_no_grad_and_rebinding(client: SyncClient, session: str) -> None:
    assert step(client, "nb", out="d", expr="x * 2", no_grad=True)["requires_grad"] is False
    step(client, "nb", out="y", expr="x * 1")
    for _ in range(3):
        step(client, "nb", out="y", expr="y * 2")
    r = client.post(f"{NB}/backward", json={"tensors": "y", "grad_tensors": [[1.0, 1.0]]})
    assert r.json()["grads"]["x"]["data"] == [8.0, 8.0]


def test_assign_writes_in_place(client: SyncClient, session: str) -> None:
    step(client, "nb", out="z", expr="(x * x).sum()")
    client.post(f"{NB}/backward", json={"tensors": "z"})
    w = step(client, "nb", out="x", expr="x - 0.5 * x.grad", assign=True)
    assert w["data"]["data"] == [0.0, 0.0] and w["version"] == 1 and w["is_leaf"]
    assert w["grad"]["data"] == [2.0, 4.0]  # same tensor: its grad is still there
    r = client.post(f"{NB}/ops", json={"out": "x", "expr": "x.sum() + 1", "assign": True})
    assert r.status_code == 201  # a scalar broadcasts into the leaf
    r = client.post(f"{NB}/ops", json={"out": "x", "expr": "stack([x, x])", "assign": True})
    assert_problem(r, 422, "shape_mismatch")
    assert_problem(
        client.post(f"{NB}/ops", json={"out": "nope", "expr": "x", "assign": True}),
        404,
        "tensor_not_found",
    )


def test_grad_of_tensor_without_grad(client: SyncClient, session: str) -> None:
    r = client.post(f"{NB}/ops", json={"out": "w", "expr": "x - 0.1 * x.grad"})
    body = assert_problem(r, 422, "bad_arguments")
    assert "x.grad is None" in body["detail"] and body["position"] == {"line": 1, "col": 11}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"out": "y", "op": "nope", "args": ["x"]}, 422, "unknown_op"),
        ({"out": "y", "expr": "nope(x)"}, 422, "unknown_op"),
        ({"out": "y", "op": "exp", "args": ["x", "x", "x"]}, 422, "bad_arguments"),
        ({"out": "y", "op": "exp", "args": []}, 422, "bad_arguments"),
        ({"out": "y", "op": "sum", "args": ["x"], "kwargs": {"axes": 0}}, 422, "bad_arguments"),
        (
            {"out": "y", "op": "sum", "args": ["x"], "kwargs": {"dim": {"a": 1}}},
            422,
            "bad_arguments",
        ),
        ({"out": "y", "op": "exp", "args": ["nope"]}, 404, "tensor_not_found"),
        ({"out": "y", "expr": "x + nope"}, 404, "tensor_not_found"),
        (
            {"out": "y", "op": "add", "args": ["x", {"data": [1.0, 2.0, 3.0]}]},
            422,
            "shape_mismatch",
        ),
        ({"out": "y", "expr": "x.data.sum"}, 422, "expr_invalid"),
        ({"out": "y", "expr": "x.where(x, x)"}, 422, "bad_arguments"),
        ({"out": "y", "expr": "lambda: x"}, 422, "expr_invalid"),
        ({"out": "y", "expr": "[v for v in x]"}, 422, "expr_invalid"),
        ({"out": "y", "expr": "x.__class__"}, 422, "expr_invalid"),
        ({"out": "y", "expr": "__import__('os')"}, 422, "expr_invalid"),
        ({"out": "y", "expr": "(" * 10_000 + "x" + ")" * 10_000}, 422, "expr_invalid"),
        ({"out": "y", "expr": "'text'"}, 422, "bad_arguments"),
        ({"out": "y", "op": "exp", "args": [{"data": [[1], [1, 2]]}]}, 422, "invalid_tensor"),
        (
            {"out": "y", "op": "exp", "args": [{"data": [1], "dtype": "half"}]},
            422,
            "invalid_tensor",
        ),
        ({"out": "y", "op": "exp", "expr": "x"}, 422, "validation_error"),
        ({"out": "y"}, 422, "validation_error"),
        ({"out": "y", "expr": "x", "args": ["x"]}, 422, "validation_error"),
        ({"out": ["a", "b"], "expr": "x", "assign": True}, 422, "validation_error"),
        ({"out": "a" * 65, "expr": "x"}, 422, "invalid_name"),
        ({"out": ["ok", "1bad"], "expr": "x"}, 422, "invalid_name"),
    ],
)
def test_step_errors(client: SyncClient, session: str, body: dict, status: int, code: str) -> None:
    before = snapshot(client, "nb")
    assert_problem(client.post(f"{NB}/ops", json=body), status, code)
    assert snapshot(client, "nb") == before


def test_expr_problem_has_position(client: SyncClient, session: str) -> None:
    body = assert_problem(
        client.post(f"{NB}/ops", json={"out": "y", "expr": "x + x.dat"}), 422, "expr_invalid"
    )
    assert body["position"] == {"line": 1, "col": 7}
    assert "line 1, column 7" in body["detail"]


def test_batch_is_all_or_nothing(client: SyncClient, session: str) -> None:
    put(client, "nb", "w", [1.0, 1.0], requires_grad=True)
    step(client, "nb", out="y", expr="(x * w).sum()")
    client.post(f"{NB}/backward", json={"tensors": "y", "retain_graph": True})
    before = snapshot(client, "nb")
    steps = [
        {"out": "a", "expr": "x * 2"},
        {"out": "y", "expr": "a.sum()"},  # rebinds an existing name
        {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},  # in place
        {"out": "x", "expr": "x * 0", "assign": True},
        {"out": "b", "expr": "a + nope"},  # the 5th step fails
        {"out": "c", "expr": "a * 3"},
    ]
    r = client.post(f"{NB}/batch", json={"steps": steps})
    body = assert_problem(r, 404, "tensor_not_found")
    assert body["step"] == 4
    assert snapshot(client, "nb") == before  # names, values, grads and versions
    # and the graph still works: w was restored in place, so its saved version matches
    assert client.post(f"{NB}/backward", json={"tensors": "y"}).status_code == 200


def test_engine_error_in_batch_names_the_step(client: SyncClient, session: str) -> None:
    steps = [
        {"out": "a", "expr": "x * 2"},
        {"out": "b", "op": "add", "args": ["a", {"data": [1, 2, 3]}]},
    ]
    body = assert_problem(client.post(f"{NB}/batch", json={"steps": steps}), 422, "shape_mismatch")
    assert body["step"] == 1
    assert_problem(client.get(f"{NB}/tensors/a"), 404, "tensor_not_found")


def test_batch_returns_what_it_bound(client: SyncClient, session: str) -> None:
    steps = [
        {"out": "y", "expr": "x * 2"},
        {"out": "y", "expr": "y * 2"},
        {"out": "z", "expr": "y.sum()"},
    ]
    r = client.post(f"{NB}/batch", params={"values": "false"}, json={"steps": steps})
    assert r.status_code == 200
    assert [(t["name"], t["grad_fn"]) for t in r.json()["tensors"]] == [
        ("y", "MulBackward0"),
        ("z", "SumBackward0"),
    ]
    assert client.post(f"{NB}/batch", json={"steps": []}).json() == {"tensors": []}


def test_indexing_and_matmul_smoke(client: SyncClient, session: str) -> None:
    put(client, "nb", "m", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    cases = {
        "m[0]": [3],
        "m[:, 1:3]": [2, 2],
        "m[None, ..., 0]": [1, 2],
        "m[[0, 1]]": [2, 3],
        "m[-1]": [3],
        "m @ m.t()": [2, 2],
        "sum(m, dim=1)": [2],
        "m.sum(dim=(0, 1))": [],
    }
    for text, shape in cases.items():
        assert step(client, "nb", out="y", expr=text)["shape"] == shape, text
    r = client.post(f"{NB}/ops", json={"out": ["v", "i"], "expr": "m.max(dim=1)"})
    assert [t["dtype"] for t in r.json()["tensors"]] == ["float32", "int64"]
    assert_problem(
        client.post(f"{NB}/ops", json={"out": "y", "expr": "m[10]"}), 422, "index_out_of_range"
    )


def test_assign_into_expanded_refused_every_time(client: SyncClient, session: str) -> None:
    """An assign into an expanded non-leaf is torch's overlap error, and the failed
    request leaves the tensor expanded: the next assign is refused again."""
    step(client, "nb", out="b", expr="expand(x.sum() * 2, [3])")
    for _ in range(2):
        r = client.post(
            f"{NB}/ops", json={"out": "b", "op": "mul", "args": ["b", 3], "assign": True}
        )
        body = assert_problem(r, 422, "bad_arguments")
        assert "more than one element of the written-to tensor" in body["detail"]
    b = client.get(f"{NB}/tensors/b").json()
    assert b["version"] == 0 and b["data"]["data"] == [6.0, 6.0, 6.0]
