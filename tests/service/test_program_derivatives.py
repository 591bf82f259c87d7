"""Derivatives of a pure program, compared with torch.func on the same function; the
session is unchanged by every one of them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_helpers import SyncClient, assert_problem, put, snapshot

from tests.engine.torch_oracle import assert_values

P = "/v1/sessions/f/programs"

# f(W, x, b) = (tanh(W @ x + b), sum(y ** 2)); a pure program of two outputs
FORWARD = [
    {"out": "h", "expr": "W @ x + b"},
    {"out": "y", "expr": "tanh(h)"},
    {"out": "s", "expr": "(y ** 2).sum()"},
]


@pytest.fixture
def f(client: SyncClient, rng: np.random.Generator) -> dict[str, np.ndarray]:
    assert client.post("/v1/sessions", json={"name": "f"}).status_code == 201
    values = {
        "W": rng.standard_normal((3, 4)),
        "x": rng.standard_normal(4),
        "b": rng.standard_normal(3),
    }
    for name, v in values.items():
        put(client, "f", name, v.tolist(), dtype="float64", requires_grad=name == "W")
    r = client.put(f"{P}/fwd", json={"steps": FORWARD})
    assert r.status_code == 201 and r.json()["pure"] is True, r.text
    assert r.json()["reads"] == ["W", "x", "b"]
    return values


def _torch_f(torch: Any) -> Any:
    def fn(W: Any, x: Any, b: Any) -> Any:
        y = torch.tanh(W @ x + b)
        return y, (y**2).sum()

    return fn


def _t(torch: Any, values: dict[str, np.ndarray]) -> tuple[Any, ...]:
    return tuple(torch.tensor(values[k]) for k in ("W", "x", "b"))


def _close(got: dict[str, Any], want: Any) -> None:
    """A JSON tensor of the service against torch's, through the oracle."""
    assert_values(np.array(got["data"]), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_jacobian(client: SyncClient, f: dict[str, np.ndarray], torch: Any, mode: str) -> None:
    before = snapshot(client, "f")
    r = client.post(f"{P}/fwd/jacobian", json={"of": ["y", "s"], "wrt": ["W", "x"], "mode": mode})
    assert r.status_code == 200, r.text
    jac = torch.func.jacrev if mode == "rev" else torch.func.jacfwd
    want = jac(_torch_f(torch), argnums=(0, 1))(*_t(torch, f))
    got = r.json()["jacobian"]
    for i, of in enumerate(["y", "s"]):
        for j, wrt in enumerate(["W", "x"]):
            _close(got[of][wrt], want[i][j])
    assert got["y"]["W"]["dtype"] == "float64"
    assert snapshot(client, "f") == before


def test_hessian(client: SyncClient, f: dict[str, np.ndarray], torch: Any) -> None:
    r = client.post(f"{P}/fwd/hessian", json={"of": "s", "wrt": ["x", "b"]})
    assert r.status_code == 200, r.text
    W, x, b = _t(torch, f)
    want = torch.func.hessian(lambda x, b: _torch_f(torch)(W, x, b)[1], argnums=(0, 1))(x, b)
    for i, a in enumerate(["x", "b"]):
        for j, c in enumerate(["x", "b"]):
            _close(r.json()["hessian"][a][c], want[i][j])


def test_vjp_and_jvp(client: SyncClient, f: dict[str, np.ndarray], torch: Any) -> None:
    u = [1.0, -2.0, 0.5]
    r = client.post(f"{P}/fwd/vjp", json={"of": ["y"], "wrt": ["W", "b"],
                                          "cotangents": {"y": {"data": u}}})  # fmt: skip
    assert r.status_code == 200, r.text
    W, x, b = _t(torch, f)
    _, pull = torch.func.vjp(lambda W, b: _torch_f(torch)(W, x, b)[0], W, b)
    gW, gb = pull(torch.tensor(u, dtype=torch.float64))
    _close(r.json()["vjp"]["W"], gW)
    _close(r.json()["vjp"]["b"], gb)

    t = [0.3, 0.1, -1.0, 2.0]
    r = client.post(f"{P}/fwd/jvp", json={"of": ["y", "s"], "tangents": {"x": {"data": t}}})
    assert r.status_code == 200, r.text
    outs, jv = torch.func.jvp(
        lambda x: _torch_f(torch)(W, x, b), (x,), (torch.tensor(t, dtype=torch.float64),)
    )
    _close(r.json()["values"]["y"], outs[0])
    _close(r.json()["jvp"]["y"], jv[0])
    _close(r.json()["jvp"]["s"], jv[1])


def test_hvp(client: SyncClient, f: dict[str, np.ndarray], torch: Any) -> None:
    v = [[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, -1.0, 0.0], [0.0, 2.0, 0.0, 1.0]]
    r = client.post(f"{P}/fwd/hvp", json={"of": "s", "wrt": ["W"], "v": {"W": {"data": v}}})
    assert r.status_code == 200, r.text
    W, x, b = _t(torch, f)
    g = torch.func.grad(lambda W: _torch_f(torch)(W, x, b)[1])
    _, want = torch.func.jvp(g, (W,), (torch.tensor(v, dtype=torch.float64),))
    _close(r.json()["hvp"]["W"], want)


def test_per_sample_grad(client: SyncClient, torch: Any, rng: np.random.Generator) -> None:
    client.post("/v1/sessions", json={"name": "f"})
    X, Y, w = rng.standard_normal((5, 3)), rng.standard_normal(5), rng.standard_normal(3)
    for name, v in {"X": X, "Y": Y, "w": w}.items():
        put(client, "f", name, v.tolist(), dtype="float64")
    client.put(f"{P}/loss", json={"steps": [{"out": "loss", "expr": "((X @ w - Y) ** 2).mean()"}]})
    r = client.post(f"{P}/loss/per_sample_grad", json={"of": "loss", "wrt": ["w"],
                                                       "batch": {"X": 0, "Y": 0}})  # fmt: skip
    assert r.status_code == 200, r.text

    def loss(w: Any, x: Any, y: Any) -> Any:
        return ((x @ w - y) ** 2).mean()

    tX, tY, tw = (torch.tensor(a) for a in (X, Y, w))
    want = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(tw, tX, tY)
    _close(r.json()["grads"]["w"], want)
    assert np.array(r.json()["grads"]["w"]["data"]).shape == (5, 3)


def test_errors(client: SyncClient, f: dict[str, np.ndarray]) -> None:
    client.put(f"{P}/impure", json={"steps": [{"out": "x", "expr": "x * 2", "assign": True}]})
    body = {"of": ["y"], "wrt": ["x"]}
    assert_problem(client.post(f"{P}/impure/jacobian", json=body), 409, "program_not_pure")
    assert_problem(client.post(f"{P}/nope/jacobian", json=body), 404, "program_not_found")
    r = client.post(f"{P}/fwd/jacobian", json={"of": ["y"], "wrt": ["h"]})
    assert_problem(r, 422, "bad_arguments")
    r = client.post(f"{P}/fwd/jacobian", json={"of": ["q"], "wrt": ["x"]})
    assert_problem(r, 422, "bad_arguments")
    r = client.post(f"{P}/fwd/hessian", json={"of": "y", "wrt": ["x"]})
    assert_problem(r, 422, "not_scalar")
    r = client.post(f"{P}/fwd/vjp", json={"of": ["y"], "wrt": ["x"], "cotangents": {}})
    assert_problem(r, 422, "bad_arguments")
    r = client.post(f"{P}/fwd/vjp", json={"of": ["y"], "wrt": ["x"],
                                          "cotangents": {"y": {"data": [1.0]}}})  # fmt: skip
    assert_problem(r, 422, "func_error")
    r = client.post(f"{P}/fwd/per_sample_grad", json={"of": "s", "wrt": ["W"],
                                                      "batch": {"x": 5}})  # fmt: skip
    assert "in_dim=5" in assert_problem(r, 422, "vmap_error")["detail"]
    r = client.post(f"{P}/fwd/jacobian", json={"of": ["y"], "wrt": ["x"], "mode": "side"})
    assert_problem(r, 422, "validation_error")


def test_stateless_gradient_kinds(client: SyncClient, torch: Any, rng: np.random.Generator) -> None:
    """The one-shot form: the steps as a function of the leaves, beside fetch and backward."""
    W, x, b = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    leaves = {
        k: {"data": v.tolist(), "dtype": "float64"} for k, v in {"W": W, "x": x, "b": b}.items()
    }
    body = {
        "tensors": {**leaves, "W": {**leaves["W"], "requires_grad": True}},
        "steps": FORWARD,
        "backward": {"tensors": "s"},
        "fetch": ["W.grad", "s"],
        "jacobian": {"of": ["y"], "wrt": ["x"]},
        "hessian": {"of": "s", "wrt": ["b"]},
        "jvp": {"of": ["s"], "tangents": {"b": {"data": [1.0, 0.0, 0.0]}}},
    }
    r = client.post("/v1/gradient", json=body)
    assert r.status_code == 200, r.text
    tW, tx, tb = (torch.tensor(a) for a in (W, x, b))
    fn = _torch_f(torch)
    _close(r.json()["jacobian"]["y"]["x"], torch.func.jacrev(lambda x: fn(tW, x, tb)[0])(tx))
    _close(r.json()["hessian"]["b"]["b"], torch.func.hessian(lambda b: fn(tW, tx, b)[1])(tb))
    _, jv = torch.func.jvp(
        lambda b: fn(tW, tx, b)[1], (tb,), (torch.tensor([1.0, 0, 0], dtype=torch.float64),)
    )
    _close(r.json()["jvp"]["s"], jv)
    _close(r.json()["values"]["W.grad"], torch.func.grad(lambda W: fn(W, tx, tb)[1])(tW))


def test_stateless_impure_steps_refused(client: SyncClient) -> None:
    body = {
        "tensors": {"x": {"data": [1.0, 2.0]}},
        "steps": [{"out": "x", "expr": "x * 2", "assign": True}],
        "jacobian": {"of": ["x"], "wrt": ["x"]},
    }
    assert_problem(client.post("/v1/gradient", json=body), 409, "program_not_pure")
