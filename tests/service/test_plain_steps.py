"""Plain op steps (names and numbers only) take the executor's short path; every
answer must be the general path's.

Each scenario runs twice on fresh apps: as sent, and with ``OpStepIn.plain`` switched
off so every step goes through ``Executor.run_step``. Status, body (values, grad_fn,
versions, problem details and hints) and the session afterwards must match."""

from __future__ import annotations

from typing import Any

import pytest
from svc_helpers import SyncClient, make_settings

from service.app import create_app
from service.schemas import ExprStepIn, OpStepIn, PlainCall

S = "/v1/sessions/s"
LEAVES = {
    "x": {"data": [1.0, 2.0, 3.0], "requires_grad": True},
    "w": {"data": [0.5, -1.0, 2.0], "requires_grad": True},
    "m": {"data": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]},
    "col": {"data": [[1.0]] * 100},
    "row": {"data": [[1.0] * 100]},
    "i": {"data": [1, 2, 3], "dtype": "int64"},
    "pair": {"data": [1.0, 2.0]},
}


def _op(out: str, op: str, *args: Any) -> dict[str, Any]:
    return {"out": out, "op": op, "args": list(args)}


SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "tensor and number": [
        _op("y", "mul", "x", 2.0),
        _op("y", "pow", "y", 2),
        _op("z", "mul", 3, "x"),
    ],
    "two tensors, then backward through them": [
        _op("y", "mul", "x", "w"),
        _op("z", "matmul", "m", "y"),
        _op("loss", "sum", "z"),
    ],
    "booleans and integers as arguments": [
        _op("s", "sum", "m", 0, True),
        _op("t", "transpose", "m", 0, 1),
        _op("k", "add", "i", 1),
    ],
    "an op with several results bound to one name": [_op("v", "max", "m", 1)],
    "rebinding the input's own name": [_op("x", "exp", "x"), _op("x", "mul", "x", 0.5)],
    "unknown tensor, unknown op, wrong arity": [
        _op("y", "mul", "nope", 2.0),
        _op("y", "nope", "x"),
        _op("y", "exp", "x", "x", "x"),
        _op("y", "exp"),
    ],
    "shapes that broadcast, and shapes that do not": [
        _op("y", "add", "x", "col"),
        _op("y", "add", "x", "pair"),
    ],
    "a result over the element limit, refused before it is made": [_op("y", "mul", "col", "row")],
    "a creation op (sizes are estimated)": [
        _op("z", "zeros", 2, 3),
        _op("z", "zeros", 10**6, 10**6),
    ],
    "an integer and a float tensor (promotion)": [_op("y", "mul", "i", "x")],
}


def _replay(steps: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, plain: bool) -> Any:
    with monkeypatch.context() as patch:
        if not plain:
            patch.setattr(OpStepIn, "plain", None)
        app = create_app(make_settings(max_tensor_elements=1000))
        with SyncClient(app) as c:
            assert c.post("/v1/sessions", json={"name": "s"}).status_code == 201
            for name, leaf in LEAVES.items():
                assert c.put(f"{S}/tensors/{name}", json=leaf).status_code == 201
            answers = []
            for body in steps:  # one at a time, then all in one batch
                r = c.post(f"{S}/ops", json=body)
                answers.append((r.status_code, r.json()))
            r = c.post(f"{S}/batch", json={"steps": steps})
            answers.append((r.status_code, r.json()))
            r = c.post(f"{S}/backward", json={"tensors": "loss"})
            answers.append((r.status_code, r.json()))
            answers.append(c.get(S).json()["tensors"])
            return answers


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_plain_steps_answer_as_the_general_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = SCENARIOS[name]
    assert any(OpStepIn.model_validate(s).plain is not None for s in steps)
    short = _replay(steps, monkeypatch, plain=True)
    general = _replay(steps, monkeypatch, plain=False)
    assert short == general
    assert all(a[0] < 500 for a in short[:-1])


def test_which_steps_are_plain() -> None:
    def plain(body: dict[str, Any]) -> PlainCall | None:
        return OpStepIn.model_validate({"out": "y", "op": "add", **body}).plain

    assert plain({"args": ["x", 2.0]}) == PlainCall(("x", 2.0), (0,))
    assert plain({"args": [3, "x", True, "w"]}) == PlainCall((3, "x", True, "w"), (1, 3))
    assert plain({"args": ["x"], "kwargs": {}}) == PlainCall(("x",), (0,))
    assert plain({"args": ["x"], "kwargs": {"alpha": 2}}) is None
    assert plain({"args": [["x", "w"]]}) is None
    assert plain({"args": ["x", {"data": [1.0]}]}) is None
    assert plain({"args": ["x", None]}) is None
    assert plain({"args": ["x"], "no_grad": True}) is None
    assert plain({"args": ["x"], "assign": True}) is None
    assert OpStepIn.model_validate({"out": ["a", "b"], "op": "max", "args": ["x", 0]}).plain is None
    assert ExprStepIn.model_validate({"out": "y", "expr": "x * 2"}).plain is None


def test_what_steps_read() -> None:
    op = OpStepIn.model_validate({"out": "y", "op": "cat", "args": [["a", "b"], "c", 1.0]})
    assert op.reads == {"a", "b", "c"}
    expr = ExprStepIn.model_validate({"out": "y", "expr": "a * b.grad + exp(c)"})
    assert {"a", "b", "c"} <= expr.reads
