"""Every example of the five backward() tutorials (shared/seeds/*.txt), written once
against a torch-like namespace ``T`` and run three ways: with PyTorch (the reference),
with the engine, and with a client ``Session`` against a real server (eager, and
batched). Each run records what the tutorial prints (values, dtypes, reprs, grad_fn
names and graphs, flags, warnings, errors: class and PyTorch's message); every record
must equal PyTorch's, and each test then checks the tutorial's known answers.

``randn`` inputs are replaced by the values the tutorial printed, so its printed
gradients are checkable. The tutorials' legacy spellings are translated to what
PyTorch 2.13 runs: ``Variable(FloatTensor(v))``/``T.Tensor(v)`` -> ``T.tensor(v)``,
``volatile`` -> ``no_grad``; ``x.grad.data.zero_()`` and ``y.data.norm()`` run as
written, while a printed ``t.data`` is recorded as ``t.detach()`` (the client's
``.data`` is a numpy array, without the tensor attributes the record reads);
grad_fn names are the modern ones (``MulBackward0``, ``MeanBackward0``, not
``MulBackward``/``MeanBackward1``).

Two things exist in-process only and are recorded only there (``rec.local``): a
hook, which is a Python callable, and a ``grad_fn`` object's repr (the client's
``grad_fn`` is its name).
"""

from __future__ import annotations

import re
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import engine as E
from client import LocalServer, Session
from engine.registry import OPS
from tests.conftest import ROOT
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1

pytestmark = pytest.mark.torch


# -- the three namespaces ---------------------------------------------------------


class TorchNS:
    """``torch`` with ``T.grad`` at top level, as the engine and the client have it."""

    float32 = torch.float32
    grad = staticmethod(torch.autograd.grad)

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)


class ClientNS:
    """A client ``Session`` as ``T``: its ops, ``tensor``, ``no_grad``, ``grad``; dtypes
    by name."""

    float32 = "float32"

    def __init__(self, session: Any) -> None:
        self.session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def _is_client(value: Any) -> bool:
    return type(value).__module__ == "client.tensor"


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (E.Tensor, torch.Tensor)) or _is_client(value)


# -- recording what a tutorial prints ---------------------------------------------


def _node_name(node: Any) -> str | None:
    """The class name PyTorch shows (engine nodes carry it as ``.name``, the client's
    ``grad_fn`` is the name itself)."""
    if node is None or isinstance(node, str):
        return node
    name = getattr(node, "name", None)
    return name if isinstance(name, str) else type(node).__name__


def _fn_name(t: Any) -> str | None:
    return _node_name(t.grad_fn)


def _local_graph(t: Any, depth: int) -> Any:
    def walk(node: Any, d: int) -> Any:
        if node is None:
            return None
        name = _node_name(node)
        if d == 0:
            return name
        # constants (None edges) are left out: their position is checked in test_semantics
        return [name, [walk(child, d - 1) for child, _ in node.next_functions if child]]

    return walk(t.grad_fn, depth)


def _remote_graph(T: ClientNS, t: Any, depth: int) -> Any:
    """The same nesting from the server's graph (``GET .../graph``: nodes, and edges
    from a node to its inputs in input order)."""
    if t.grad_fn is None:
        return None
    graph = T.session.graph([t])
    names = {n["id"]: n["name"] for n in graph["nodes"]}
    inputs: dict[str, list[tuple[int, str]]] = {}
    for edge in graph["edges"]:
        inputs.setdefault(edge["source"], []).append((edge["input"], edge["target"]))
    (root,) = [n["id"] for n in graph["nodes"] if t.name in n["tensors"]]

    def walk(node: str, d: int) -> Any:
        if d == 0:
            return names[node]
        return [names[node], [walk(child, d - 1) for _, child in sorted(inputs.get(node, []))]]

    return walk(root, depth)


def _values(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return np.array(t.detach().numpy(), copy=True)
    if _is_client(t):
        return np.array(t.numpy(), copy=True)
    return np.array(t.detach()._data, copy=True)


def _snapshot(value: Any) -> Any:
    """What a ``print`` shows, frozen now (later in-place edits do not change it)."""
    if _is_tensor(value):
        return {
            "value": _values(value),
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": tuple(value.shape),
            "requires_grad": value.requires_grad,
            "is_leaf": value.is_leaf,
            "grad_fn": _fn_name(value),
            "repr": repr(value),
        }
    if isinstance(value, BaseException):
        return {"error": _builtin_class(value), "message": message(value)}
    if isinstance(value, (list, tuple)):
        return [_snapshot(v) for v in value]
    return value


def _builtin_class(exc: BaseException) -> str:
    """PyTorch's exception class (the engine's and the client's errors derive from it)."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


def message(exc: BaseException) -> str:
    """An error's message: the client's ``detail`` is PyTorch's message (its ``str``
    adds the server's hint)."""
    detail = getattr(exc, "detail", None)
    return detail if isinstance(detail, str) else str(exc)


def _warning_text(warning: Warning | str) -> str:
    return str(warning).split(" (Triggered internally at")[0]


class Record(dict):
    """An ordered log of one tutorial run on namespace ``T``. ``local``: the run is
    in-process (the reference run beside a client run records only what a client can)."""

    def __init__(self, T: Any, local: bool) -> None:
        super().__init__()
        self.T = T
        self.local = local
        self.errors: dict[str, BaseException] = {}

    def show(self, key: str, value: Any) -> None:
        self[key] = _snapshot(value)

    def graph(self, key: str, t: Any, depth: int = 3) -> None:
        """The grad_fn tree as nested [name, [children]] down to ``depth`` levels."""
        if isinstance(self.T, ClientNS):
            self[key] = _remote_graph(self.T, t, depth)
        else:
            self[key] = _local_graph(t, depth)

    def nonleaf_grad(self, key: str, t: Any) -> None:
        """``print(y.grad)`` on a non-leaf: None, with PyTorch's warning."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = t.grad
        self[key] = _snapshot(g)
        self[key + " warning"] = [
            _warning_text(w.message) for w in caught if issubclass(w.category, UserWarning)
        ]

    def attempt(self, key: str, fn: Callable[[], Any]) -> bool:
        """Run ``fn``; record its error (the tutorial's traceback) if it raises."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - its class and message are the record
            self.errors[key] = exc
            self[key] = _snapshot(exc)
            return False
        self[key] = None
        return True


Example = Callable[[Any, Record], None]
Run = Callable[[Example], tuple[Record, Record]]


def _runner(T: Any, local: bool) -> Run:
    def run(example: Example) -> tuple[Record, Record]:
        """Run an example on ``T`` and on PyTorch; their records must agree."""
        ours, ref = Record(T, local), Record(TorchNS(), local)
        example(T, ours)
        example(ref.T, ref)
        assert_values(dict(ours), dict(ref), rtol=2e-6, atol=1e-7)
        return ours, ref

    return run


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """``python -m service serve`` on a free port, for this module's client runs."""
    srv = LocalServer(cwd=ROOT, env={"GRADSERVE_LOG_LEVEL": "warning"})
    url = srv.start()
    try:
        yield url
    finally:
        srv.stop()


BACKENDS = [
    "engine",
    pytest.param("client", marks=pytest.mark.integration),
    pytest.param("client-batch", marks=pytest.mark.integration),
]


@pytest.fixture(params=BACKENDS)
def run(request: pytest.FixtureRequest) -> Iterator[Run]:
    """Runs an example on one of: the engine, the client, the batching client."""
    if request.param == "engine":
        yield _runner(E, local=True)
        return
    url = request.getfixturevalue("server")
    session = Session(
        url, name=f"tut-{uuid.uuid4().hex[:10]}", batch=request.param == "client-batch"
    )
    try:
        yield _runner(ClientNS(session), local=False)
    finally:
        session.delete()
        session.close()


@pytest.fixture
def run_local() -> Run:
    """Runs an example in-process only (it needs a Python callable inside the graph)."""
    return _runner(E, local=True)


def require_ops(*names: str) -> None:
    missing = [n for n in names if n not in OPS]
    if missing:
        pytest.fail(f"ops not registered (yet): {', '.join(missing)}", pytrace=False)


def value(rec: Record, key: str) -> np.ndarray:
    return rec[key]["value"]


# == 000: Linlin, "Understanding backward() in PyTorch (Updated for V0.4)" =========

X_SIMPLE = [[-0.6955]]


def linlin_simple(T: Any, rec: Record) -> None:
    x = T.tensor(X_SIMPLE, requires_grad=True)  # x is a leaf created by user
    rec.show("x", x)
    y = 2 * x
    rec.show("y", y)
    z = y**3
    rec.show("z", z)
    rec.graph("graph", z)
    z.backward()
    rec.nonleaf_grad("z.grad", z)
    rec.nonleaf_grad("y.grad", y)
    rec.show("x.grad", x.grad)
    rec.show("x.grad.requires_grad", x.grad.requires_grad)


def test_linlin_simple_backward(run: Run) -> None:
    ours, _ = run(linlin_simple)
    assert ours["x"]["repr"] == "tensor([[-0.6955]], requires_grad=True)"
    assert ours["x"]["is_leaf"] and ours["x"]["grad_fn"] is None
    assert ours["y"]["grad_fn"] == "MulBackward0"  # the tutorial's MulBackward, renamed
    assert ours["z"]["grad_fn"] == "PowBackward0"
    assert not ours["y"]["is_leaf"] and ours["y"]["requires_grad"]
    assert ours["graph"][0] == "PowBackward0" and ours["graph"][1][0][0] == "MulBackward0"
    assert ours["z.grad"] is None and ours["y.grad"] is None
    # dz/dx = 24 x**2; the tutorial printed 11.6105 for its unrounded x
    np.testing.assert_allclose(value(ours, "x.grad"), 24 * np.square(X_SIMPLE), rtol=1e-5)
    np.testing.assert_allclose(value(ours, "x.grad"), [[11.6105]], rtol=1e-3)
    assert ours["x.grad.requires_grad"] is False
    assert not ours["x.grad"]["requires_grad"] and ours["x.grad"]["grad_fn"] is None


X_SCALES = [[-0.7207]]


def linlin_grad_tensors_scale(T: Any, rec: Record) -> None:
    x = T.tensor(X_SCALES, requires_grad=True)
    rec.show("x", x)
    y = 2 * x
    z = y**3
    z.backward(retain_graph=True)
    rec.nonleaf_grad("default.z.grad", z)
    rec.nonleaf_grad("default.y.grad", y)
    rec.show("default.x.grad", x.grad)
    for scale in ([[1.0]], [[0.1]], [[0.5]]):
        x.grad.data.zero_()
        z.backward(T.tensor(scale), retain_graph=True)
        rec.nonleaf_grad(f"{scale}.z.grad", z)
        rec.nonleaf_grad(f"{scale}.y.grad", y)
        rec.show(f"{scale}.x.grad", x.grad)


def test_linlin_grad_tensors_act_as_scaling_factors(run: Run) -> None:
    ours, _ = run(linlin_grad_tensors_scale)
    base = 24 * np.square(np.array(X_SCALES, dtype=np.float32))
    np.testing.assert_allclose(value(ours, "default.x.grad"), base, rtol=1e-5)
    np.testing.assert_allclose(value(ours, "default.x.grad"), [[12.4668]], rtol=1e-3)
    np.testing.assert_allclose(value(ours, "[[1.0]].x.grad"), base, rtol=1e-5)
    np.testing.assert_allclose(value(ours, "[[0.1]].x.grad"), 0.1 * base, rtol=1e-5)
    np.testing.assert_allclose(value(ours, "[[0.5]].x.grad"), 0.5 * base, rtol=1e-5)
    np.testing.assert_allclose(value(ours, "[[0.5]].x.grad"), [[6.2334]], rtol=1e-3)
    for key in ours:
        if key.endswith((".z.grad", ".y.grad")):
            assert ours[key] is None


X_MATRIX = [[-2.5212, 1.2730], [0.0366, -0.0750]]


def linlin_matrix_rows_and_columns(T: Any, rec: Record) -> None:
    x = T.tensor(X_MATRIX, requires_grad=True)
    rec.show("x", x)
    y = 2 * x
    z = y**3
    rec.show("z.size()", tuple(z.size()))
    z.backward(T.tensor([[1.0, 1], [1, 1]]), retain_graph=True)
    rec.show("all", x.grad)
    x.grad.data.zero_()  # the gradient for x is accumulated: clear it
    z.backward(T.tensor([[0.0, 1], [0, 1]]), retain_graph=True)
    rec.show("second column", x.grad)
    x.grad.data.zero_()
    z.backward(T.tensor([[1.0, 1], [0, 0]]), retain_graph=True)
    rec.show("first row", x.grad)


def test_linlin_matrix_grad_tensors_select_rows_and_columns(run: Run) -> None:
    ours, _ = run(linlin_matrix_rows_and_columns)
    assert ours["x"]["repr"] == (
        "tensor([[-2.5212,  1.2730],\n        [ 0.0366, -0.0750]], requires_grad=True)"
    )
    assert ours["z.size()"] == [2, 2]
    full = 24 * np.square(np.array(X_MATRIX, dtype=np.float32))
    np.testing.assert_allclose(value(ours, "all"), full, rtol=1e-5)
    np.testing.assert_allclose(
        value(ours, "all"), [[152.5527, 38.8946], [0.0322, 0.1349]], rtol=2e-3
    )
    np.testing.assert_allclose(value(ours, "second column"), full * [[0, 1], [0, 1]], rtol=1e-5)
    np.testing.assert_allclose(value(ours, "first row"), full * [[1, 1], [0, 0]], rtol=1e-5)


X_MEAN = [[1.8528, 0.2083], [-1.5296, 0.3136]]


def linlin_mean(T: Any, rec: Record) -> None:
    x = T.tensor(X_MEAN, requires_grad=True)
    y = 2 * x
    z = y**3
    out = z.mean()
    rec.show("out", out)
    out.backward(retain_graph=True)
    rec.show("x.grad", x.grad)


def linlin_mean_complaint(T: Any, rec: Record) -> None:
    x = T.tensor(X_MEAN, requires_grad=True)
    out = ((2 * x) ** 3).mean()
    out.backward(retain_graph=True)
    # a scalar output given a (2, 2) gradient: "We will get complaints"
    x.grad.data.zero_()
    rec.attempt("complaint", lambda: out.backward(T.tensor([[1.0, 1], [1, 1]]), retain_graph=True))
    rec.show("x.grad after complaint", x.grad)


def test_linlin_mean_of_cubes(run: Run) -> None:
    ours, _ = run(linlin_mean)
    assert ours["out"]["grad_fn"] == "MeanBackward0"  # the tutorial's MeanBackward1 (v0.4)
    x = np.array(X_MEAN, dtype=np.float32)
    np.testing.assert_allclose(value(ours, "out"), np.mean((2 * x) ** 3), rtol=1e-5)
    np.testing.assert_allclose(value(ours, "out"), 5.6434, rtol=1e-3)
    assert (
        ours["out"]["repr"] == f"tensor({float(value(ours, 'out')):.4f}, grad_fn=<MeanBackward0>)"
    )
    np.testing.assert_allclose(value(ours, "x.grad"), 6 * x**2, rtol=1e-5)
    np.testing.assert_allclose(
        value(ours, "x.grad"), [[20.5970, 0.2604], [14.0375, 0.5903]], rtol=2e-3
    )


def test_linlin_scalar_output_given_matrix_gradient_raises_mismatch_in_shape(run: Run) -> None:
    ours, ref = run(linlin_mean_complaint)
    err = ours.errors["complaint"]
    assert err.code == "shape_mismatch" and isinstance(err, RuntimeError)
    assert message(err).startswith("Mismatch in shape")
    assert message(err) == message(ref.errors["complaint"])
    assert "torch.Size([2, 2])" in message(err) and "torch.Size([])" in message(err)
    np.testing.assert_array_equal(value(ours, "x.grad after complaint"), np.zeros((2, 2)))


X_RETAIN = [[-0.7452, 1.5727], [0.1702, 0.7374]]


def linlin_retain_graph(T: Any, rec: Record) -> None:
    x = T.tensor(X_RETAIN, requires_grad=True)
    y = 2 * x
    z = y**3
    out = z.mean()
    rec.show("out", out)
    out.backward()  # without retain_graph: fine the first time
    rec.show("x.grad", x.grad)
    x.grad.data.zero_()
    rec.attempt("second backward", out.backward)  # no graph left to trace back
    rec.show("x.grad after", x.grad)


def test_linlin_second_backward_without_retain_graph_raises(
    run: Run, request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["run"] == "client-batch":
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="a batch is all or nothing: the failing backward also undoes the "
                "x.grad.data.zero_() queued before it, which PyTorch has done",
            )
        )
    ours, ref = run(linlin_retain_graph)
    np.testing.assert_allclose(value(ours, "out"), 7.7630, rtol=1e-3)
    x = np.array(X_RETAIN, dtype=np.float32)
    np.testing.assert_allclose(value(ours, "x.grad"), 6 * x**2, rtol=1e-5)
    np.testing.assert_allclose(
        value(ours, "x.grad"), [[3.3323, 14.8394], [0.1738, 3.2623]], rtol=2e-3
    )
    err = ours.errors["second backward"]
    assert err.code == "graph_freed" and isinstance(err, RuntimeError)
    assert message(err) == message(ref.errors["second backward"])
    assert message(err).startswith("Trying to backward through the graph a second time")
    np.testing.assert_array_equal(value(ours, "x.grad after"), np.zeros((2, 2)))


def linlin_register_hook(T: Any, rec: Record) -> None:
    """Point 1 of the post: .grad of an intermediate via register_hook."""
    x = T.tensor(X_SIMPLE, requires_grad=True)
    y = 2 * x
    z = y**3
    seen: list[Any] = []
    y.register_hook(lambda g: seen.append(g))
    z.backward()
    rec.show("hooked y grad", seen)
    rec.nonleaf_grad("y.grad", y)
    rec.show("x.grad", x.grad)


def test_linlin_register_hook_reads_intermediate_gradient(run_local: Run) -> None:
    ours, _ = run_local(linlin_register_hook)
    (g,) = ours["hooked y grad"]
    y = 2 * np.array(X_SIMPLE, dtype=np.float32)
    np.testing.assert_allclose(g["value"], 3 * y**2, rtol=1e-5)
    assert ours["y.grad"] is None


# == 001: notebook "PyTorch autograd: understanding the heart of PyTorch's magic" ==


def notebook_leaf_attributes(T: Any, rec: Record) -> None:
    x = T.tensor(1.0, requires_grad=True)
    y = T.tensor(2.0)
    z = x * y
    for t, name in zip([x, y], "xy"):
        rec.show(f"{name}.data", t.detach())
        rec.show(f"{name}.requires_grad", t.requires_grad)
        rec.show(f"{name}.grad", t.grad)
        rec.show(f"{name}.grad_fn", _fn_name(t))
        rec.show(f"{name}.is_leaf", t.is_leaf)
    rec.show("z.data", z.detach())
    rec.show("z.requires_grad", z.requires_grad)
    rec.nonleaf_grad("z.grad", z)
    rec.show("z.grad_fn", _fn_name(z))
    if rec.local:  # the client's grad_fn is the node's name, not an object
        rec.show("z.grad_fn repr", re.sub(r"0x[0-9a-f]+", "0x", repr(z.grad_fn)))
    rec.show("z.is_leaf", z.is_leaf)


def test_notebook_displaying_leaf_and_nonleaf_attributes(run: Run) -> None:
    ours, _ = run(notebook_leaf_attributes)
    assert ours["x.data"]["repr"] == "tensor(1.)"
    assert ours["x.requires_grad"] is True and ours["x.is_leaf"] is True
    assert ours["x.grad"] is None and ours["x.grad_fn"] is None
    assert ours["y.requires_grad"] is False and ours["y.is_leaf"] is True
    assert ours["y.grad"] is None and ours["y.grad_fn"] is None
    assert ours["z.data"]["repr"] == "tensor(2.)"
    assert ours["z.requires_grad"] is True and ours["z.is_leaf"] is False
    assert ours["z.grad"] is None
    assert ours["z.grad_fn"] == "MulBackward0"
    if ours.local:
        assert ours["z.grad_fn repr"] == "<MulBackward0 object at 0x>"


def notebook_cube(T: Any, rec: Record) -> None:
    x = T.tensor(1.0, requires_grad=True)
    z = x**3
    z.backward()  # Computes the gradient
    rec.show("x.grad.data", x.grad.detach())  # Prints '3' which is dz/dx


def test_notebook_x_cubed_at_one_gives_three(run: Run) -> None:
    ours, _ = run(notebook_cube)
    assert ours["x.grad.data"]["repr"] == "tensor(3.)"
    assert float(value(ours, "x.grad.data")) == 3.0


def notebook_square_weights(T: Any, rec: Record) -> None:
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    rec.show("y", y)
    y.backward(T.tensor([1.0, 1.0]))  # the tensor provided to .backward acts as a weight
    rec.show("x.grad", x.grad)


def notebook_square_weights_named(T: Any, rec: Record) -> None:
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    w = T.tensor([1.0, 1.0])
    y.backward(w)  # notice that we do not provide backward(x)
    rec.show("x.grad", x.grad)


def notebook_square_backward_x(T: Any, rec: Record) -> None:
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    y.backward(x)  # x as an argument outputs the "wrong" derivatives
    rec.show("x.grad", x.grad)


def test_notebook_square_with_ones_gives_2_4(run: Run) -> None:
    ours, _ = run(notebook_square_weights)
    assert ours["y"]["repr"] == "tensor([1., 4.], grad_fn=<PowBackward0>)"
    assert ours["x.grad"]["repr"] == "tensor([2., 4.])"


def test_notebook_square_with_named_weights_gives_2_4(run: Run) -> None:
    ours, _ = run(notebook_square_weights_named)
    assert ours["x.grad"]["repr"] == "tensor([2., 4.])"


def test_notebook_square_with_x_as_gradient_gives_2_8(run: Run) -> None:
    ours, _ = run(notebook_square_backward_x)
    assert ours["x.grad"]["repr"] == "tensor([2., 8.])"


def notebook_chain_retained_twice(T: Any, rec: Record) -> None:
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    z = y**3
    w = T.tensor([1.0, 1.0])
    z.backward(w, retain_graph=True)
    rec.nonleaf_grad("first y.grad", y)
    rec.show("first x.grad", x.grad)
    z.backward(w, retain_graph=True)
    rec.nonleaf_grad("second y.grad", y)  # "why y is None?"
    rec.show("second x.grad", x.grad)


def test_notebook_increase_the_size_of_x_retained_twice_accumulates(run: Run) -> None:
    ours, _ = run(notebook_chain_retained_twice)
    assert ours["first y.grad"] is None and ours["second y.grad"] is None
    assert ours["first x.grad"]["repr"] == "tensor([  6., 192.])"
    assert ours["second x.grad"]["repr"] == "tensor([ 12., 384.])"


def notebook_two_leaves_three_passes(T: Any, rec: Record) -> None:
    x = T.tensor([2.0, 2.0], requires_grad=True)  # independent variable
    z = T.tensor([4.0, 4.0], requires_grad=True)  # independent variable
    y = x**2 + z**3
    rec.show("y", y)
    w = T.tensor([1.0, 1.0])
    for i in range(3):
        y.backward(w, retain_graph=True)
        rec.show(f"pass {i} x.grad", x.grad)
        rec.show(f"pass {i} z.grad", z.grad)


def test_notebook_three_retained_backwards_accumulate(run: Run) -> None:
    ours, _ = run(notebook_two_leaves_three_passes)
    assert ours["y"]["grad_fn"] == "AddBackward0"
    for i, (gx, gz) in enumerate([(4, 48), (8, 96), (12, 144)]):
        np.testing.assert_array_equal(value(ours, f"pass {i} x.grad"), [gx, gx])
        np.testing.assert_array_equal(value(ours, f"pass {i} z.grad"), [gz, gz])
    assert ours["pass 2 z.grad"]["repr"] == "tensor([144., 144.])"


def notebook_without_retain_graph(T: Any, rec: Record) -> None:
    x = T.tensor([2.0, 2.0], requires_grad=True)
    z = T.tensor([4.0, 4.0], requires_grad=True)
    y = x**2 + z**3
    w = T.tensor([1.0, 1.0])
    y.backward(w)
    rec.show("x.grad", x.grad)
    rec.show("z.grad", z.grad)
    rec.attempt("second try", lambda: y.backward(w))
    rec.attempt("third try", lambda: y.backward(w))
    rec.show("x.grad after", x.grad)
    rec.show("z.grad after", z.grad)


def test_notebook_what_happens_if_we_turn_off_retain_graph(run: Run) -> None:
    ours, ref = run(notebook_without_retain_graph)
    np.testing.assert_array_equal(value(ours, "x.grad"), [4, 4])
    np.testing.assert_array_equal(value(ours, "z.grad"), [48, 48])
    for key in ("second try", "third try"):
        err = ours.errors[key]
        assert err.code == "graph_freed" and isinstance(err, RuntimeError)
        assert message(err) == message(ref.errors[key])
        assert "Specify retain_graph=True" in message(err)
    np.testing.assert_array_equal(value(ours, "x.grad after"), [4, 4])
    np.testing.assert_array_equal(value(ours, "z.grad after"), [48, 48])


def one_hot_rows(T: Any, rec: Record) -> None:
    x = T.tensor([[1.0, 2, 3, 4]], requires_grad=True)
    z = 2 * x
    loss = z.sum(dim=1)  # "scalar"
    rec.show("z", z)
    rec.show("loss", loss)
    rec.graph("z graph", z)
    for i, weights in enumerate(([[1.0, 0, 0, 0]], [[0.0, 1, 0, 0]], [[1.0, 1, 1, 1]])):
        z.backward(T.tensor(weights), retain_graph=True)
        rec.show(f"row {i}", x.grad.detach())
        x.grad.data.zero_()  # remove gradient in x.grad, or it will be accumulated
    loss.backward()  # equivalent to loss.backward(torch.FloatTensor([1.0]))
    rec.show("loss grad", x.grad.detach())


@pytest.mark.parametrize("source", ["notebook", "stackoverflow"])
def test_one_hot_rows_of_z_equals_2x(run: Run, source: str) -> None:
    """In the notebook (001) and in the Stack Overflow answer it quotes (002)."""
    ours, _ = run(one_hot_rows)
    assert ours["z"]["repr"] == "tensor([[2., 4., 6., 8.]], grad_fn=<MulBackward0>)"
    assert ours["loss"]["repr"] == "tensor([20.], grad_fn=<SumBackward1>)"
    assert ours["row 0"]["repr"] == "tensor([[2., 0., 0., 0.]])"
    assert ours["row 1"]["repr"] == "tensor([[0., 2., 0., 0.]])"
    assert ours["row 2"]["repr"] == "tensor([[2., 2., 2., 2.]])"
    assert ours["loss grad"]["repr"] == "tensor([[2., 2., 2., 2.]])"


# == 002: Stack Overflow, "Pytorch, what are the gradient arguments" ================


def so_example_1(T: Any, rec: Record) -> None:
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = T.tensor([3.0, 4.0, 5.0], requires_grad=True)
    c = T.tensor([6.0, 7.0, 8.0], requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    rec.graph("y graph", y, 4)
    gradients = T.tensor([0.1, 1.0, 0.0001])
    y.backward(gradients, retain_graph=True)
    rec.show("a.grad", a.grad)
    rec.show("b.grad", b.grad)
    rec.show("c.grad", c.grad)


def test_stackoverflow_example_1_weighted_vector_gradient(run: Run) -> None:
    ours, _ = run(so_example_1)
    assert ours["a.grad"]["repr"] == "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])"
    assert ours["b.grad"]["repr"] == "tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])"
    assert ours["c.grad"]["repr"] == "tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])"
    v = np.array([0.1, 1.0, 0.0001], dtype=np.float32)
    np.testing.assert_allclose(value(ours, "a.grad"), 3 * v, rtol=1e-6)
    np.testing.assert_allclose(value(ours, "b.grad"), 4 * np.array([3, 4, 5]) * v, rtol=1e-6)
    np.testing.assert_allclose(value(ours, "c.grad"), v / np.array([6, 7, 8]), rtol=1e-6)
    assert ours["y graph"][0] == "AddBackward0"


def so_example_2(T: Any, rec: Record) -> None:
    a = T.tensor(0.1, requires_grad=True)
    b = T.tensor(1.0, requires_grad=True)
    c = T.tensor(0.1, requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    y.backward()
    rec.show("a.grad", a.grad)
    rec.show("b.grad", b.grad)
    rec.show("c.grad", c.grad)


def test_stackoverflow_example_2_scalar_without_gradients(run: Run) -> None:
    ours, _ = run(so_example_2)
    assert ours["a.grad"]["repr"] == "tensor(3.)"
    assert ours["b.grad"]["repr"] == "tensor(4.)"
    assert ours["c.grad"]["repr"] == "tensor(10.)"


def so_example_3(T: Any, rec: Record) -> None:
    """``torch.empty(1)`` inputs (values unknown: the tutorial's b=0, c=0 made explicit).
    A 3-element gradient for a 1-element output is refused by PyTorch 2.x; given as
    the one-element sum it used to be reduced to, it reproduces the printed grads."""
    a = T.tensor([0.5], requires_grad=True)
    b = T.tensor([0.0], requires_grad=True)
    c = T.tensor([0.0], requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    rec.show("y", y)
    rec.attempt(
        "three for one", lambda: y.backward(T.tensor([0.1, 1.0, 0.0001]), retain_graph=True)
    )
    rec.show("a.grad before", a.grad)
    y.backward(T.tensor([0.1 + 1.0 + 0.0001]))
    rec.show("a.grad", a.grad)
    rec.show("b.grad", b.grad)
    rec.show("c.grad", c.grad)


def test_stackoverflow_example_3_empty_inputs_and_log_at_zero(run: Run) -> None:
    ours, ref = run(so_example_3)
    err = ours.errors["three for one"]
    assert err.code == "shape_mismatch" and isinstance(err, RuntimeError)
    assert message(err) == message(ref.errors["three for one"])
    assert "torch.Size([3])" in message(err) and "torch.Size([1])" in message(err)
    assert ours["a.grad before"] is None  # the refused backward accumulated nothing
    assert ours["y"]["repr"] == "tensor([-inf], grad_fn=<AddBackward0>)"
    assert ours["a.grad"]["repr"] == "tensor([3.3003])"
    assert ours["b.grad"]["repr"] == "tensor([0.])"
    assert ours["c.grad"]["repr"] == "tensor([inf])"  # log at 0: an infinite gradient
    assert np.isposinf(value(ours, "c.grad")).all()


def so_example_4(T: Any, rec: Record) -> None:
    a = T.tensor(1.0, requires_grad=True)
    b = T.tensor(1.0, requires_grad=True)
    c = T.tensor(1.0, requires_grad=True)
    y = 3 * a + 2 * b * b + T.log(c)
    y.backward(retain_graph=True)
    y.backward()
    rec.show("a.grad", a.grad)
    rec.show("b.grad", b.grad)
    rec.show("c.grad", c.grad)
    rec.attempt("third", y.backward)


def test_stackoverflow_example_4_gradients_accumulate(run: Run) -> None:
    ours, ref = run(so_example_4)
    assert ours["a.grad"]["repr"] == "tensor(6.)"
    assert ours["b.grad"]["repr"] == "tensor(8.)"
    assert ours["c.grad"]["repr"] == "tensor(2.)"
    assert ours.errors["third"].code == "graph_freed"
    assert message(ours.errors["third"]) == message(ref.errors["third"])


W_LOSSES = [0.7, -1.3, 2.1]


def so_loss_vector(T: Any, rec: Record) -> None:
    """``loss = [loss1, loss2, loss3]``: ones sum the gradients; weights weigh them."""
    w = T.tensor(W_LOSSES, requires_grad=True)
    k = T.tensor([1.0, 2.0, 3.0])
    loss = (w * k) ** 2
    loss.backward(T.tensor([1.0, 1.0, 1.0]), retain_graph=True)
    rec.show("ones", w.grad)
    w.grad = None
    loss.backward(T.tensor([-0.1, 1.0, 0.0001]))
    rec.show("weighted", w.grad)


def test_stackoverflow_loss_vector_weights(run: Run) -> None:
    ours, _ = run(so_loss_vector)
    w, k = np.array(W_LOSSES, dtype=np.float32), np.array([1, 2, 3], dtype=np.float32)
    per_loss = 2 * k * k * w
    np.testing.assert_allclose(value(ours, "ones"), per_loss, rtol=1e-6)
    np.testing.assert_allclose(value(ours, "weighted"), per_loss * [-0.1, 1.0, 0.0001], rtol=1e-6)


X_DOUBLING = [0.6, -0.9, 0.7]  # norm 1.29: ten doublings pass 1000, as the tutorial printed


def doubling_until_norm(T: Any, rec: Record) -> None:
    x = T.tensor(X_DOUBLING, requires_grad=True)
    y = x * 2
    k = 1
    while y.data.norm() < 1000:
        y = y * 2
        k += 1
    rec.show("k", k)
    rec.show("y", y)
    v = T.tensor([0.1, 1.0, 0.0001], dtype=T.float32)
    y.backward(v)
    rec.show("x.grad", x.grad)


@pytest.mark.parametrize("source", ["stackoverflow_original", "medium"])
def test_doubling_until_norm_passes_1000_gives_v_times_2_to_the_k(run: Run, source: str) -> None:
    """The official tutorial's loop, quoted by the Stack Overflow answer (002) and the
    Medium post (004), which printed ``tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])``."""
    require_ops("norm")
    ours, _ = run(doubling_until_norm)
    k = ours["k"]
    assert k == 10
    v = np.array([0.1, 1.0, 0.0001], dtype=np.float32)
    np.testing.assert_array_equal(value(ours, "x.grad"), v * np.float32(2.0**k))
    assert ours["x.grad"]["repr"] == "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])"
    assert ours["y"]["grad_fn"] == "MulBackward0"


# == 003: Kathuria, "Getting Started with PyTorch Part 1: ... Automatic Differentiation" ==


VAR_EX = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)


def kathuria_variable_and_function(T: Any, rec: Record) -> None:
    """Building blocks 3.1 and 3.2: a Variable (now a tensor) and ``c = a + b``."""
    var_ex = T.tensor(VAR_EX)  # Variable(torch.randn((4,3)))
    rec.show("var_ex", var_ex)
    rec.show("var_ex.data", var_ex.detach())
    rec.show("var_ex.grad", var_ex.grad)
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    c = a + b
    rec.show("c", c)
    rec.graph("c graph", c)


def test_kathuria_variable_and_add_function(run: Run) -> None:
    ours, _ = run(kathuria_variable_and_function)
    assert ours["var_ex"]["requires_grad"] is False and ours["var_ex"]["is_leaf"] is True
    assert ours["var_ex"]["grad_fn"] is None and ours["var_ex.grad"] is None
    np.testing.assert_array_equal(value(ours, "var_ex.data"), VAR_EX)
    assert ours["c"]["repr"] == "tensor([4., 6.], grad_fn=<AddBackward0>)"
    assert ours["c graph"] == ["AddBackward0", [["AccumulateGrad", []], ["AccumulateGrad", []]]]


def kathuria_graph(T: Any, rec: Record) -> None:
    # Define the leaf nodes (lines 5-9)
    a = T.tensor([4.0])
    weights = [T.tensor([float(i)], requires_grad=True) for i in (2, 5, 9, 7)]
    w1, w2, w3, w4 = weights
    # Create the graph on the fly (lines 12-15)
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    L = 10 - d
    rec.show("a", a)
    rec.show("b", b)
    rec.show("d", d)
    rec.show("L", L)
    rec.graph("L graph", L, 4)
    L.backward()  # line 18
    for index, weight in enumerate(weights, start=1):
        gradient, *_ = weight.grad.detach()
        rec.show(f"Gradient of w{index} w.r.t to L", gradient)
    rec.nonleaf_grad("d.grad", d)
    rec.attempt("backward again", L.backward)  # the graph was destroyed
    # calling forward again makes an entirely new graph
    L2 = 10 - (w3 * (w1 * a) + w4 * (w2 * a))
    L2.backward()
    rec.show("w1.grad after a new graph", w1.grad)
    # gradient descent on w1: a new (non-leaf) tensor
    learning_rate = 0.01
    w1_new = w1 - learning_rate * w1.grad
    rec.show("w1 updated", w1_new)


def test_kathuria_graph_of_functions_and_leaf_gradients(run: Run) -> None:
    ours, ref = run(kathuria_graph)
    grads = [float(value(ours, f"Gradient of w{i} w.r.t to L")) for i in range(1, 5)]
    assert grads == [-36.0, -28.0, -8.0, -20.0]
    assert ours["Gradient of w1 w.r.t to L"]["repr"] == "tensor(-36.)"
    assert ours["a"]["requires_grad"] is False and ours["a"]["is_leaf"]
    assert ours["b"]["requires_grad"] is True  # requires_grad is contagious
    assert ours["L"]["grad_fn"] == "RsubBackward1"  # "loss is replaced by a minus Function"
    # "d is replaced by three Functions, two multiplications and an addition"
    name, children = ours["L graph"]
    assert name == "RsubBackward1"
    d_node = children[0]
    assert d_node[0] == "AddBackward0"
    assert [child[0] for child in d_node[1]] == ["MulBackward0", "MulBackward0"]
    assert ours["d.grad"] is None  # non-leaf grads are not kept by default
    err = ours.errors["backward again"]
    assert err.code == "graph_freed"
    assert message(err) == message(ref.errors["backward again"])
    assert ours["w1.grad after a new graph"]["repr"] == "tensor([-72.])"
    assert ours["w1 updated"]["grad_fn"] == "SubBackward0"
    assert ours["w1 updated"]["is_leaf"] is False
    np.testing.assert_allclose(value(ours, "w1 updated"), [2.0 + 0.01 * 72], rtol=1e-6)


def kathuria_retain_grad(T: Any, rec: Record) -> None:
    a = T.tensor([4.0])
    w1, w2, w3, w4 = (T.tensor([float(i)], requires_grad=True) for i in (2, 5, 9, 7))
    b = w1 * a
    b.retain_grad()  # "calling .retain_grad() on the Variable just after defining it"
    d = w3 * b + w4 * (w2 * a)
    d.retain_grad()
    L = 10 - d
    L.backward()
    rec.show("b.grad", b.grad)
    rec.show("d.grad", d.grad)
    rec.show("b.retains_grad", b.retains_grad)


def test_kathuria_retain_grad_keeps_intermediate_gradients(run: Run) -> None:
    ours, _ = run(kathuria_retain_grad)
    assert ours["d.grad"]["repr"] == "tensor([-1.])"  # dL/dd = -1
    assert ours["b.grad"]["repr"] == "tensor([-9.])"  # dL/db = -w3
    assert ours["b.retains_grad"] is True


def kathuria_requires_grad_false(T: Any, rec: Record) -> None:
    """Freezing a weight: no gradient flows to it; the rest still get theirs."""
    a = T.tensor([4.0])
    w1 = T.tensor([2.0], requires_grad=False)
    w2, w3, w4 = (T.tensor([float(i)], requires_grad=True) for i in (5, 9, 7))
    b = w1 * a
    rec.show("b", b)
    c = w2 * a
    d = w3 * b + w4 * c
    L = 10 - d
    L.backward()
    rec.show("w1.grad", w1.grad)
    rec.show("w2.grad", w2.grad)
    rec.show("w3.grad", w3.grad)


def test_kathuria_requires_grad_false_excludes_a_branch(run: Run) -> None:
    ours, _ = run(kathuria_requires_grad_false)
    assert ours["b"]["requires_grad"] is False and ours["b"]["grad_fn"] is None
    assert ours["w1.grad"] is None
    assert ours["w2.grad"]["repr"] == "tensor([-28.])"
    assert ours["w3.grad"]["repr"] == "tensor([-8.])"


def kathuria_no_grad_inference(T: Any, rec: Record) -> None:
    """``volatile`` is gone; inference code goes under ``torch.no_grad()``."""
    a = T.tensor([4.0])
    w1 = T.tensor([2.0], requires_grad=True)
    with T.no_grad():
        b = w1 * a
        out = 10 - b
    rec.show("b", b)
    rec.show("out", out)
    rec.attempt("backward", out.backward)


def test_kathuria_no_grad_builds_no_graph(run: Run) -> None:
    ours, ref = run(kathuria_no_grad_inference)
    assert ours["b"]["requires_grad"] is False and ours["b"]["grad_fn"] is None
    assert ours["out"]["repr"] == "tensor([2.])"
    err = ours.errors["backward"]
    assert err.code == "no_grad_fn"
    assert message(err) == message(ref.errors["backward"])


# == 004: Medium, "How Pytorch Backward() function works" ============================


def medium_scalar_sum(T: Any, rec: Record) -> None:
    x = T.tensor([-0.3, 1.2, 0.05], requires_grad=True)  # randn(3), seeded
    y = x.sum()
    rec.show("y", y)
    y.backward()  # is equivalent to y.backward(torch.tensor(1.))
    rec.show("x.grad", x.grad)
    x.grad = None
    y2 = x.sum()
    y2.backward(T.tensor(1.0))
    rec.show("explicit", x.grad)


def test_medium_scalar_output_sum_gives_ones(run: Run) -> None:
    ours, _ = run(medium_scalar_sum)
    assert ours["y"]["grad_fn"] == "SumBackward0"
    assert ours["x.grad"]["repr"] == "tensor([1., 1., 1.])"
    assert ours["explicit"]["repr"] == "tensor([1., 1., 1.])"


def medium_jacobian_vector_product(T: Any, rec: Record) -> None:
    """Step 4: y = F1(x), z = F2(y); backward of z with a weight vector [0.2, 0.8]."""
    x = T.tensor([1.5, -0.5], requires_grad=True)
    y = x**2
    z = 3 * y
    z.backward(T.tensor([0.2, 0.8]))
    rec.show("x.grad", x.grad)


def test_medium_external_gradient_weights_the_jacobian(run: Run) -> None:
    ours, _ = run(medium_jacobian_vector_product)
    x = np.array([1.5, -0.5], dtype=np.float32)
    np.testing.assert_allclose(value(ours, "x.grad"), np.array([0.2, 0.8]) * 6 * x, rtol=1e-6)


# == beyond the seeds: what the tutorials' readers write next ========================


def sgd_update(T: Any, rec: Record) -> None:
    """The update the tutorials lead to: ``w -= lr * w.grad`` in place under no_grad,
    ``w.grad.zero_()``, and PyTorch's refusal of an in-place write on the leaf outside."""
    w = T.tensor([0.5, -0.25], requires_grad=True)
    x = T.tensor([1.0, 2.0])
    loss = ((w * x).sum() - 1) ** 2
    loss.backward()
    with T.no_grad():
        w -= 0.1 * w.grad
    rec.show("w", w)
    rec.show("w.grad", w.grad)
    w.grad.zero_()
    rec.show("w.grad zeroed", w.grad)
    rec.attempt("leaf in place", lambda: w.add_(1.0))
    rec.show("w after", w)


def test_sgd_update_in_place_under_no_grad(run: Run) -> None:
    ours, _ = run(sgd_update)
    # loss = (0.5 - 0.5 - 1)^2: dloss/dw = 2 * (-1) * x = [-2, -4]
    np.testing.assert_allclose(value(ours, "w.grad"), [-2.0, -4.0], rtol=1e-6)
    np.testing.assert_allclose(value(ours, "w"), [0.7, 0.15], rtol=1e-6)
    assert ours["w"]["is_leaf"] and ours["w"]["requires_grad"] and ours["w"]["grad_fn"] is None
    np.testing.assert_array_equal(value(ours, "w.grad zeroed"), [0.0, 0.0])
    assert ours.errors["leaf in place"].code == "leaf_inplace"
    assert message(ours.errors["leaf in place"]).startswith("a leaf Variable that requires grad")


def no_grad_detach(T: Any, rec: Record) -> None:
    """no_grad builds no graph; ``detach`` and ``requires_grad_`` as PyTorch does them."""
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.no_grad():
        y = x * 2
    rec.show("y under no_grad", y)
    d = (x * 3).detach()
    rec.show("detached", d)
    e = T.tensor([1.0, 2.0])
    e.requires_grad_()
    rec.show("requires_grad_", e)
    (e * e).sum().backward()
    rec.show("e.grad", e.grad)


def test_no_grad_detach_and_requires_grad_(run: Run) -> None:
    ours, _ = run(no_grad_detach)
    assert ours["y under no_grad"]["requires_grad"] is False
    assert ours["detached"]["grad_fn"] is None and ours["detached"]["is_leaf"]
    assert ours["requires_grad_"]["requires_grad"] is True
    np.testing.assert_array_equal(value(ours, "e.grad"), [2.0, 4.0])


def higher_order(T: Any, rec: Record) -> None:
    """A gradient of a gradient: x**3 -> 3x^2 -> 6x (``create_graph``)."""
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x**3).sum()
    (g,) = T.grad(y, [x], create_graph=True)
    rec.show("dy/dx", g)
    (h,) = T.grad(g.sum(), [x])
    rec.show("d2y/dx2", h)
    rec.show("x.grad untouched", x.grad)


def test_higher_order_gradient(run: Run) -> None:
    ours, _ = run(higher_order)
    np.testing.assert_array_equal(value(ours, "dy/dx"), [3.0, 12.0, 27.0])
    assert ours["dy/dx"]["grad_fn"] == "MulBackward0" and ours["dy/dx"]["requires_grad"]
    np.testing.assert_array_equal(value(ours, "d2y/dx2"), [6.0, 12.0, 18.0])
    assert ours["x.grad untouched"] is None
