"""``backward`` and ``grad`` against PyTorch: each scenario is written once against a
namespace and run with torch and with the engine; gradients, ``.grad`` fields,
``None``s and errors (exception class and message) must agree."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import engine


def _ns(lib: Any) -> SimpleNamespace:
    if lib is engine:
        return SimpleNamespace(
            lib=engine,
            grad=engine.grad,
            backward=engine.backward,
            float32=engine.float32,
            float64=engine.float64,
            int64=engine.int64,
            dtype=lambda name: name,
        )
    return SimpleNamespace(
        lib=lib,
        grad=lib.autograd.grad,
        backward=lib.autograd.backward,
        float32=lib.float32,
        float64=lib.float64,
        int64=lib.int64,
        dtype=lambda name: getattr(lib, name),
    )


def _plain(value: Any) -> Any:
    """A comparable form: tensors as (dtype, values), containers element-wise."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    arr = np.asarray(value.detach().numpy())
    return (str(arr.dtype), arr.shape, arr.round(6).tolist())


def _outcome(scenario: Callable[[SimpleNamespace], Any], lib: Any) -> Any:
    try:
        return ("ok", _plain(scenario(_ns(lib))))
    except (TypeError, ValueError, RuntimeError) as exc:
        kind = next(k for k in (TypeError, ValueError, RuntimeError) if isinstance(exc, k))
        return (kind.__name__, str(exc))


def _both(torch: Any, scenario: Callable[[SimpleNamespace], Any]) -> Any:
    expected = _outcome(scenario, torch)
    got = _outcome(scenario, engine)
    assert got == expected
    return got


def _grads(*tensors: Any) -> list[Any]:
    return [t.grad for t in tensors]


# -- backward(inputs=...) ------------------------------------------------------------------


def test_backward_inputs_accumulate_into_non_leaf_grads(torch: Any) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        k = x * 3
        m = (k * k).sum()
        m.backward(inputs=[k], retain_graph=True)
        first = [k.grad, x.grad]
        m.backward(inputs=[k, x])
        return first + [k.grad, x.grad, k.is_leaf]

    _both(torch, scenario)


@pytest.mark.parametrize("leaf", [True, False])
def test_backward_inputs_refuse_tensors_without_grad(torch: Any, leaf: bool) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        z = t.lib.tensor([1.0, 2.0]) if leaf else x.detach() * 2
        y = (x * z).sum()
        y.backward(inputs=[x, z])
        return x.grad

    _both(torch, scenario)


@pytest.mark.parametrize("inputs", ["empty list", "dict"])
def test_backward_inputs_forms(torch: Any, inputs: str) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        w = t.lib.tensor([3.0, 4.0], requires_grad=True)
        y = (x * w).sum()
        t.backward(y, inputs=[] if inputs == "empty list" else {"x": x})
        return _grads(x, w)

    _both(torch, scenario)


# -- grad() runs only the graph between its outputs and its inputs -----------------------------


def test_grad_leaves_the_graph_behind_its_inputs_unrun(torch: Any) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = x * x  # saves x: would be freed if grad() ran it
        v = w.exp().sum()
        (gw,) = t.grad(v, w)
        (w * 3).sum().backward()  # through MulBackward0 of w: still there
        return [gw, x.grad]

    _both(torch, scenario)


def test_grad_frees_what_it_ran(torch: Any) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        w = x * x
        v = w.exp().sum()
        t.grad(v, w)
        return t.grad(v, w)  # ExpBackward0 ran and was freed

    _both(torch, scenario)


def test_grad_with_a_duplicate_input_gives_it_twice(torch: Any) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        y = (h * h).sum()
        return [t.grad(y, [x, x], retain_graph=True), t.grad(y, [h, x, h])]

    _both(torch, scenario)


@pytest.mark.parametrize("op", ["split", "chunk"])
@pytest.mark.parametrize("allow_unused", [False, True])
def test_outputs_of_one_split_do_not_use_each_other(
    torch: Any, op: str, allow_unused: bool
) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        a, b = getattr(x, op)(2)
        return t.grad((a * a).sum(), [b, x, a], allow_unused=allow_unused)

    _both(torch, scenario)


def test_a_retained_output_no_gradient_reached_stays_none(torch: Any) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        a, b = x.split(2)
        a.retain_grad()
        b.retain_grad()
        (a * 2).sum().backward()
        return [a.grad, b.grad, x.grad]

    _both(torch, scenario)


@pytest.mark.parametrize("allow_unused", [None, True, False])
@pytest.mark.parametrize("create_graph", [False, True])
def test_materialize_grads(torch: Any, allow_unused: bool | None, create_graph: bool) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        z = t.lib.tensor([[1.0], [2.0]], dtype=t.float64, requires_grad=True)
        y = (x * x).sum()
        out = t.grad(
            y,
            [x, z],
            allow_unused=allow_unused,
            materialize_grads=True,
            create_graph=create_graph,
        )
        return [out, [g.requires_grad for g in out]]

    _both(torch, scenario)


def test_grad_with_a_dict_of_inputs(torch: Any) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        w = t.lib.tensor([3.0, 4.0], requires_grad=True)
        return t.grad((x * w).sum(), {"x": x, "w": w})

    _both(torch, scenario)


# -- given gradients ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_a_given_gradient_is_cast_to_the_output_dtype(torch: Any, dtype: str) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)  # float32
        g = t.lib.tensor([1, 0], dtype=t.dtype(dtype))
        (gx,) = t.grad(x * 2, x, g, retain_graph=True)
        (x * 3).backward(g)
        return [gx, x.grad]

    _both(torch, scenario)


_GRAD_TENSORS: dict[str, Callable[[SimpleNamespace, Any], Any]] = {
    "too few": lambda t, y: ([y, y], [t.lib.tensor(1.0)]),
    "too many": lambda t, y: ([y], [t.lib.tensor(1.0), t.lib.tensor(2.0)]),
    "a float in a list": lambda t, y: ([y], [1.0]),
    "a bare float": lambda t, y: ([y], 1.0),
    "a list": lambda t, y: ([y], [[1.0]]),
    "wrong shape": lambda t, y: ([y], [t.lib.tensor([1.0, 1.0])]),
    "None for a scalar": lambda t, y: ([y], [None]),
    "None for a vector": lambda t, y: ([y * t.lib.tensor([1.0, 1.0])], [None]),
}


@pytest.mark.parametrize("case", sorted(_GRAD_TENSORS))
@pytest.mark.parametrize("fn", ["backward", "grad"])
def test_grad_tensors_validation(torch: Any, case: str, fn: str) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 2).sum()
        tensors, grads = _GRAD_TENSORS[case](t, y)
        if fn == "backward":
            t.backward(tensors, grads, retain_graph=True)
            return x.grad
        return t.grad(tensors, x, grads, retain_graph=True)

    _both(torch, scenario)


@pytest.mark.parametrize("case", ["empty inputs", "no grad input", "output without grad"])
def test_grad_argument_errors(torch: Any, case: str) -> None:
    def scenario(t: SimpleNamespace) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        c = t.lib.tensor([1.0, 2.0])
        y = (x * 2).sum()
        if case == "empty inputs":
            return t.grad(y, [])
        if case == "no grad input":
            return t.grad(y, [x, c])
        return t.grad(c.sum(), x)

    _both(torch, scenario)
