"""jacobian / hessian / vjp / jvp against ``torch.autograd.functional``: values,
return structures (Tensor vs tuple vs tuple of tuples), create_graph and strict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine
from engine import Tensor, hessian, jacobian, jvp, vjp
from engine.errors import BadArgumentsError, EngineError, ShapeMismatchError
from tests.engine.torch_oracle import assert_same, to_torch


def _structure(x: Any) -> Any:
    """The nesting of a result: 'T' for a tensor, tuples of those."""
    if isinstance(x, tuple):
        return tuple(_structure(el) for el in x)
    return "T" if hasattr(x, "shape") and hasattr(x, "requires_grad") else type(x).__name__


def _convert(x: Any, torch: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_convert(el, torch) for el in x)
    return to_torch(x) if isinstance(x, Tensor) else x


def _same(mine: Any, theirs: Any, create_graph: bool = False) -> None:
    assert _structure(mine) == _structure(theirs)
    # grad_fn names of create_graph results depend on how each library composes
    # its backward; values and requires_grad must agree
    assert_same(mine, theirs, graph=False)
    flat_m = mine if isinstance(mine, tuple) else (mine,)
    flat_t = theirs if isinstance(theirs, tuple) else (theirs,)
    for m, t in zip(_flatten(flat_m), _flatten(flat_t)):
        assert m.requires_grad == t.requires_grad
        assert m.requires_grad == create_graph or not t.requires_grad


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, tuple):
        return [el for item in x for el in _flatten(item)]
    return [x]


def _inputs(rng: np.random.Generator, *shapes: tuple[int, ...]) -> tuple[Tensor, ...]:
    return tuple(Tensor(rng.uniform(0.5, 2.0, size=s)) for s in shapes)


# Written with operators/methods both libraries share, so one lambda serves both.
FUNCTIONS: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    "one in, one out": (lambda x: x * x * x, [(3,)]),
    "matrix reducer": (lambda x: (x * x).sum(dim=1), [(2, 3)]),
    "two in, one out": (lambda x, y: x * y + x / y, [(3,), (3,)]),
    "one in, two out": (lambda x: (x * 2.0, x * x), [(2,)]),
    "two in, two out": (lambda x, y: (x * y, x - y * y), [(2,), (2,)]),
    "broadcast": (lambda x, y: x * y, [(2, 3), (3,)]),
    "0-d": (lambda x: x * x, [()]),
}


def _call(name: str, rng: np.random.Generator) -> tuple[Callable[..., Any], tuple[Tensor, ...]]:
    fn, shapes = FUNCTIONS[name]
    return fn, _inputs(rng, *shapes)


def _both(inputs: tuple[Tensor, ...], torch: Any, as_tuple: bool) -> tuple[Any, Any]:
    mine = inputs if as_tuple else inputs[0]
    return mine, _convert(mine, torch)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_jacobian(name: str, create_graph: bool, torch: Any, rng: np.random.Generator) -> None:
    fn, ins = _call(name, rng)
    for as_tuple in [True, False] if len(ins) == 1 else [True]:
        mine, theirs = _both(ins, torch, as_tuple)
        _same(
            jacobian(fn, mine, create_graph=create_graph),
            torch.autograd.functional.jacobian(fn, theirs, create_graph=create_graph),
            create_graph,
        )


@pytest.mark.parametrize("name", ["one in, one out", "two in, two out", "broadcast"])
def test_vjp(name: str, torch: Any, rng: np.random.Generator) -> None:
    fn, ins = _call(name, rng)
    outs = fn(*ins)
    outs_t = outs if isinstance(outs, tuple) else (outs,)
    vs = tuple(Tensor(rng.uniform(-1, 1, o.shape)) for o in outs_t)
    v = vs if isinstance(outs, tuple) else vs[0]
    for create_graph in (False, True):
        for as_tuple in [True, False] if len(ins) == 1 else [True]:
            mine, theirs = _both(ins, torch, as_tuple)
            _same(
                vjp(fn, mine, v, create_graph=create_graph),
                torch.autograd.functional.vjp(
                    fn, theirs, _convert(v, torch), create_graph=create_graph
                ),
                create_graph,
            )


@pytest.mark.parametrize("name", ["one in, one out", "two in, two out", "broadcast", "0-d"])
def test_jvp(name: str, torch: Any, rng: np.random.Generator) -> None:
    fn, ins = _call(name, rng)
    vs = tuple(Tensor(rng.uniform(-1, 1, x.shape)) for x in ins)
    for create_graph in (False, True):
        for as_tuple in [True, False] if len(ins) == 1 else [True]:
            mine, theirs = _both(ins, torch, as_tuple)
            v = vs if as_tuple else vs[0]
            _same(
                jvp(fn, mine, v, create_graph=create_graph),
                torch.autograd.functional.jvp(
                    fn, theirs, _convert(v, torch), create_graph=create_graph
                ),
                create_graph,
            )


def test_vjp_and_jvp_default_v_for_one_element(torch: Any) -> None:
    x = Tensor(np.array([1.5]))
    fn = lambda a: (a * a * a).sum()  # noqa: E731
    _same(vjp(fn, x), torch.autograd.functional.vjp(fn, to_torch(x)))
    _same(jvp(fn, x), torch.autograd.functional.jvp(fn, to_torch(x)))


@pytest.mark.parametrize("create_graph", [False, True])
def test_hessian(create_graph: bool, torch: Any, rng: np.random.Generator) -> None:
    x, y = _inputs(rng, (3,), (2,))
    one = lambda a: (a * a * a).sum()  # noqa: E731
    two = lambda a, b: (a * a).sum() * (b * b * b).sum()  # noqa: E731
    _same(
        hessian(one, x, create_graph=create_graph),
        torch.autograd.functional.hessian(one, to_torch(x), create_graph=create_graph),
        create_graph,
    )
    _same(
        hessian(two, (x, y), create_graph=create_graph),
        torch.autograd.functional.hessian(
            two, (to_torch(x), to_torch(y)), create_graph=create_graph
        ),
        create_graph,
    )


def test_create_graph_results_differentiate_again(torch: Any, rng: np.random.Generator) -> None:
    (a,) = _inputs(rng, (3,))
    x = Tensor(a.data, requires_grad=True)
    tx = to_torch(x)
    fn = lambda t: (t * t * t).sum()  # noqa: E731
    (h,) = engine.grad(jacobian(fn, x, create_graph=True).sum(), x)
    (th,) = torch.autograd.grad(
        torch.autograd.functional.jacobian(fn, tx, create_graph=True).sum(), tx
    )
    assert_same(h, th, graph=False)


def test_inputs_are_detached_without_create_graph(rng: np.random.Generator) -> None:
    x = Tensor(rng.uniform(size=3), requires_grad=True)
    out, grad = vjp(lambda a: a * a, x, Tensor(np.ones(3)))
    assert not out.requires_grad and not grad.requires_grad
    assert x.grad is None


def test_independent_input_gives_zeros_or_strict_error(torch: Any) -> None:
    x, y = Tensor(np.array([1.0, 2.0])), Tensor(np.array([3.0, 4.0]))
    fn = lambda a, b: a * 2.0  # noqa: E731
    mine = jacobian(fn, (x, y))
    _same(mine, torch.autograd.functional.jacobian(fn, (to_torch(x), to_torch(y))))
    with pytest.raises(EngineError) as info:
        jacobian(fn, (x, y), strict=True)
    assert str(info.value) == (
        "Output 0 of the user-provided function is independent of input 1. "
        "This is not allowed in strict mode."
    )
    with pytest.raises(EngineError) as info:
        vjp(fn, (x, y), Tensor(np.ones(2)), strict=True)
    assert "is independent of input 1" in str(info.value)


def test_bad_v_messages_match_torch(torch: Any) -> None:
    x = Tensor(np.array([1.0, 2.0]))
    fn = lambda a: a * a  # noqa: E731
    with pytest.raises(BadArgumentsError) as info:
        vjp(fn, x)
    with pytest.raises(RuntimeError) as tinfo:
        torch.autograd.functional.vjp(fn, to_torch(x))
    assert str(info.value) == str(tinfo.value)
    with pytest.raises(ShapeMismatchError) as info:
        vjp(fn, x, Tensor(np.ones(3)))
    with pytest.raises(RuntimeError) as tinfo:
        torch.autograd.functional.vjp(fn, to_torch(x), torch.ones(3, dtype=torch.float64))
    assert str(info.value) == str(tinfo.value)
    with pytest.raises(ShapeMismatchError) as info:
        jvp(fn, (x,), (Tensor(np.ones(3)),))
    with pytest.raises(RuntimeError) as tinfo:
        torch.autograd.functional.jvp(fn, (to_torch(x),), (torch.ones(3, dtype=torch.float64),))
    assert str(info.value) == str(tinfo.value)


def test_inputs_must_be_tensors() -> None:
    with pytest.raises(BadArgumentsError) as info:
        jacobian(lambda a: a, [Tensor(np.ones(2))])  # type: ignore[arg-type]
    assert str(info.value).startswith("The inputs given to jacobian must be either a Tensor")


def test_hessian_needs_a_single_element_output() -> None:
    with pytest.raises(EngineError) as info:
        hessian(lambda a: a * a, Tensor(np.ones(2)))
    assert str(info.value) == (
        "The Tensor returned by the function given to hessian should contain a single element"
    )


def test_output_that_is_an_unrelated_leaf_has_zero_derivative(torch: Any) -> None:
    """A function returning a leaf it closes over: ``grad(w, x, allow_unused=True)``
    must give None (so zeros here), not fail inside the engine."""
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    tw = to_torch(w)
    x = Tensor(np.array([3.0, 4.0]))
    _same(
        vjp(lambda a: w, x, Tensor(np.ones(2))),
        torch.autograd.functional.vjp(
            lambda a: tw, to_torch(x), torch.ones(2, dtype=torch.float64)
        ),
    )
    _same(jacobian(lambda a: w, x), torch.autograd.functional.jacobian(lambda a: tw, to_torch(x)))
