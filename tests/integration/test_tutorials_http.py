"""Every backward() tutorial example, over HTTP against a real server process,
built once with op steps and once with expressions, checked against PyTorch
run in the same test and against the tutorials' printed answers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from .api import Api

pytestmark = pytest.mark.integration

MODES = ["op", "expr"]


def step(api: Api, mode: str, out: str, expr: str, op: str, *args: Any, **kwargs: Any) -> None:
    """One step, spelled as an op call or as the equivalent expression."""
    if mode == "op":
        api.op(out, op, *args, **kwargs)
    else:
        api.expr(out, expr)


@pytest.fixture
def api(http):  # type: ignore[no-untyped-def]
    session = Api(http)
    yield session
    session.delete()


@pytest.mark.parametrize("mode", MODES)
def test_cube_at_one_gives_three(api: Api, mode: str, torch: Any) -> None:
    api.put("x", 1.0, requires_grad=True)
    step(api, mode, "z", "x ** 3", "pow", "x", 3)
    assert api.backward("z").status_code == 200
    x = torch.tensor(1.0, requires_grad=True)
    (x**3).backward()
    np.testing.assert_allclose(api.grad("x"), x.grad.numpy())
    assert api.grad("x") == pytest.approx(3.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("weights", "expected"), [([1.0, 1.0], [2.0, 4.0]), ([1.0, 2.0], [2.0, 8.0])]
)
def test_square_weighted_by_grad_tensors(
    api: Api, mode: str, weights: list[float], expected: list[float], torch: Any
) -> None:
    api.put("x", [1.0, 2.0], requires_grad=True)
    step(api, mode, "y", "x**2", "pow", "x", 2)
    assert api.backward("y", [weights]).status_code == 200
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x**2).backward(torch.tensor(weights))
    np.testing.assert_allclose(api.grad("x"), x.grad.numpy())
    np.testing.assert_allclose(api.grad("x"), expected)


@pytest.mark.parametrize("mode", MODES)
def test_retained_chain_accumulates_and_nonleaf_grad_is_none(
    api: Api, mode: str, torch: Any
) -> None:
    api.put("x", [1.0, 2.0], requires_grad=True)
    step(api, mode, "y", "x**2", "pow", "x", 2)
    step(api, mode, "z", "y**3", "pow", "y", 3)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    z = (x**2) ** 3
    for expected in ([6.0, 192.0], [12.0, 384.0]):
        assert api.backward("z", [[1.0, 1.0]], retain_graph=True).status_code == 200
        z.backward(torch.tensor([1.0, 1.0]), retain_graph=True)
        np.testing.assert_allclose(api.grad("x"), x.grad.numpy())
        np.testing.assert_allclose(api.grad("x"), expected)
    r = api.http.get(f"{api.base}/tensors/y/grad")
    assert r.json()["grad"] is None
    assert "not a leaf" in r.json()["warning"]


@pytest.mark.parametrize("mode", MODES)
def test_three_retained_backwards_accumulate(api: Api, mode: str, torch: Any) -> None:
    api.put("x", [2.0, 2.0], requires_grad=True)
    api.put("z", [4.0, 4.0], requires_grad=True)
    if mode == "op":
        api.op("x2", "pow", "x", 2)
        api.op("z3", "pow", "z", 3)
        api.op("y", "add", "x2", "z3")
    else:
        api.expr("y", "x**2 + z**3")
    for k in (1, 2, 3):
        assert api.backward("y", [[1.0, 1.0]], retain_graph=True).status_code == 200
        np.testing.assert_allclose(api.grad("x"), [4.0 * k, 4.0 * k])
        np.testing.assert_allclose(api.grad("z"), [48.0 * k, 48.0 * k])


@pytest.mark.parametrize("mode", MODES)
def test_second_backward_without_retain_graph_is_refused(api: Api, mode: str, torch: Any) -> None:
    api.put("x", [2.0, 2.0], requires_grad=True)
    api.put("z", [4.0, 4.0], requires_grad=True)
    if mode == "op":
        api.op("x2", "pow", "x", 2)
        api.op("z3", "pow", "z", 3)
        api.op("y", "add", "x2", "z3")
    else:
        api.expr("y", "x**2 + z**3")
    assert api.backward("y", [[1.0, 1.0]]).status_code == 200
    before = api.grad("x")
    r = api.backward("y", [[1.0, 1.0]])
    assert r.status_code == 409
    assert r.headers["content-type"].startswith("application/problem+json")
    problem = r.json()
    assert problem["code"] == "graph_freed"
    assert "Trying to backward through the graph a second time" in problem["detail"]
    assert "retain_graph" in problem.get("hint", "")
    np.testing.assert_allclose(api.grad("x"), before)  # a failed backward changes nothing
    x = torch.tensor([2.0, 2.0], requires_grad=True)
    y = x**2
    y.backward(torch.ones(2))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward(torch.ones(2))


@pytest.mark.parametrize("mode", MODES)
def test_vector_jacobian_product_of_3a_2b2_logc(api: Api, mode: str, torch: Any) -> None:
    a, b, c = [1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]
    for name, value in zip("abc", (a, b, c)):
        api.put(name, value, requires_grad=True)
    if mode == "op":
        api.op("a3", "mul", 3, "a")
        api.op("b2", "mul", 2, "b")
        api.op("b2b", "mul", "b2", "b")
        api.op("s", "add", "a3", "b2b")
        api.op("lc", "log", "c")
        api.op("y", "add", "s", "lc")
    else:
        api.expr("y", "3*a + 2*b*b + log(c)")
    weights = [0.1, 1.0, 0.0001]
    assert api.backward("y", [weights], retain_graph=True).status_code == 200
    ta, tb, tc = (torch.tensor(v, requires_grad=True) for v in (a, b, c))
    (3 * ta + 2 * tb * tb + torch.log(tc)).backward(torch.tensor(weights))
    for name, t in zip("abc", (ta, tb, tc)):
        np.testing.assert_allclose(api.grad(name), t.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(api.grad("a"), [0.3, 3.0, 0.0003], rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_scalar_output_with_matrix_gradient_is_a_shape_mismatch(api: Api, mode: str) -> None:
    api.put("x", [[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    if mode == "op":
        api.op("y", "mul", 2, "x")
        api.op("z", "pow", "y", 3)
        api.op("out", "mean", "z")
    else:
        api.expr("out", "mean((2*x)**3)")
    r = api.backward("out", [[[1.0, 1.0], [1.0, 1.0]]], retain_graph=True)
    assert r.status_code == 422
    assert r.json()["code"] == "shape_mismatch"
    assert "Mismatch in shape" in r.json()["detail"]
    assert api.grad("x") is None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("row", [0, 1, 2])
def test_one_hot_rows_of_2x(api: Api, mode: str, row: int, torch: Any) -> None:
    api.put("x", [1.0, 2.0, 3.0], requires_grad=True)
    step(api, mode, "z", "2*x", "mul", 2, "x")
    onehot = np.eye(3)[row]
    assert api.backward("z", [onehot]).status_code == 200
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (2 * x).backward(torch.tensor(onehot, dtype=torch.float32))
    np.testing.assert_allclose(api.grad("x"), x.grad.numpy())
    np.testing.assert_allclose(api.grad("x"), 2 * onehot)


@pytest.mark.parametrize("mode", MODES)
def test_doubling_until_norm_passes_1000(api: Api, mode: str, torch: Any) -> None:
    x0 = [0.5, -0.25, 1.0]
    api.put("x", x0, requires_grad=True)
    step(api, mode, "y", "x * 2", "mul", "x", 2)
    k = 1
    while float(np.linalg.norm(api.value("y"))) < 1000:
        step(api, mode, "y", "y * 2", "mul", "y", 2)
        k += 1
    weights = [0.1, 1.0, 0.0001]
    assert api.backward("y", [weights]).status_code == 200
    x = torch.tensor(x0, requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    y.backward(torch.tensor(weights))
    np.testing.assert_allclose(api.grad("x"), x.grad.numpy())
    np.testing.assert_allclose(api.grad("x"), np.array(weights) * 2.0**k, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_log_at_zero_gives_infinite_gradient(api: Api, mode: str, torch: Any) -> None:
    api.put("c", [0.0, 1.0], requires_grad=True)
    step(api, mode, "y", "log(c)", "log", "c")
    assert api.backward("y", [[1.0, 1.0]]).status_code == 200
    c = torch.tensor([0.0, 1.0], requires_grad=True)
    torch.log(c).backward(torch.ones(2))
    grad = api.grad("c")
    assert grad is not None and np.isposinf(grad[0]) and grad[1] == 1.0
    np.testing.assert_array_equal(grad, c.grad.numpy())


@pytest.mark.parametrize("mode", MODES)
def test_zero_grad_then_recompute(api: Api, mode: str) -> None:
    api.put("x", [1.0, 2.0], requires_grad=True)
    step(api, mode, "y", "x**2", "pow", "x", 2)
    api.backward("y", [[1.0, 1.0]], retain_graph=True)
    api.zero_grad("x")
    np.testing.assert_allclose(api.grad("x"), [0.0, 0.0])
    api.backward("y", [[1.0, 1.0]])
    np.testing.assert_allclose(api.grad("x"), [2.0, 4.0])


def test_gradient_of_gradient_with_create_graph(api: Api) -> None:
    api.put("x", 1.0, requires_grad=True)
    api.expr("y", "x ** 3")
    r = api.http.post(
        f"{api.base}/grad",
        json={"outputs": ["y"], "inputs": ["x"], "create_graph": True, "out": ["dx"]},
    )
    assert r.status_code == 200, r.text
    r = api.http.post(
        f"{api.base}/grad",
        json={"outputs": ["dx"], "inputs": ["x"], "create_graph": True, "out": ["ddx"]},
    )
    assert r.status_code == 200, r.text
    assert float(api.value("ddx")) == pytest.approx(6.0)
    r = api.http.post(f"{api.base}/grad", json={"outputs": ["ddx"], "inputs": ["x"]})
    assert r.status_code == 200, r.text
    assert r.json()["grads"][0]["data"] == pytest.approx(6.0)
