"""One backward rule per op: a numpy twin (``Function.vjp``) only where a row of
``bench/engine.py`` earns it, named beside the twin (``vjp_row``), ten at most.

Each twin must name a bench row, actually run in that row's backward, and agree
with the op's engine-op ``backward`` (the reference rule, what ``create_graph``
runs) on every op-database sample whose graph records it.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import engine as E
from engine import OPS, Function, Tensor
from engine import autograd as engine_autograd
from tests.engine.torch_oracle import engine_inputs

ROOT = Path(__file__).resolve().parents[2]
MAX_TWINS = 10


def _bench() -> Any:
    """bench/engine.py as a module (its file name would shadow the package as a script)."""
    spec = importlib.util.spec_from_file_location("bench_engine_rows", ROOT / "bench" / "engine.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def _functions() -> list[type[Function]]:
    found: list[type[Function]] = []
    stack = [Function]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("engine.") and sub not in found:
                found.append(sub)
    return found


def _owner(fn: type[Function]) -> type[Function] | None:
    """The class whose ``vjp`` a node of ``fn`` runs (a subclass inherits its parent's)."""
    return next((c for c in fn.__mro__ if c.__dict__.get("vjp") is not None), None)


TWINS = sorted(
    (c for c in _functions() if c.__dict__.get("vjp") is not None), key=lambda c: c.__qualname__
)


def test_twins_are_few_and_each_names_its_bench_row() -> None:
    assert len(TWINS) <= MAX_TWINS, [c.__qualname__ for c in TWINS]
    for cls in TWINS:
        assert cls.__dict__.get("vjp_row") in BENCH.ROWS, (
            f"{cls.__qualname__}.vjp names no bench/engine.py row (vjp_row must be one of "
            f"{BENCH.ROWS})"
        )


def _row_steps() -> dict[str, Callable[[], Any]]:
    """Each row's engine step, small (the same functions the bench times)."""
    from bench import block  # beside the bench script (a namespace package)

    return {
        "per-op": BENCH.engine_chain(8),
        "mlp": BENCH.engine_mlp(4),
        "sum-sq": BENCH.engine_sumsq(16),
        "cnn": BENCH.cnn_convs(E, E.tensor, 2),
        "block": block.engine_block(E),
    }


def test_each_twin_runs_on_the_row_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: set[type[Function]] = set()
    free = engine_autograd._free  # called with the nodes a backward ran

    def spy(executed: list[Any], tag: Any) -> None:
        ran.update(o for o in (_owner(n.fn) for n in executed) if o is not None)
        free(executed, tag)

    monkeypatch.setattr(engine_autograd, "_free", spy)
    steps = _row_steps()
    for row in BENCH.ROWS:
        ran.clear()
        steps[row]()
        named = {c for c in TWINS if c.vjp_row == row}
        assert named <= ran, f"row {row!r} never runs {sorted(c.__qualname__ for c in named - ran)}"


def _graph_twins(outputs: list[Tensor]) -> set[type[Function]]:
    seen: set[type[Function]] = set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    visited: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in visited or not hasattr(node, "fn"):
            continue
        visited.add(id(node))
        owner = _owner(node.fn)
        if owner is not None:
            seen.add(owner)
        stack.extend(e[0] for e in node.next_edges if e is not None)
    return seen


def _float_outputs(result: Any) -> list[Tensor]:
    """The real outputs with a graph (a loss over a complex one would need complex weights)."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [
        t
        for t in items
        if isinstance(t, Tensor) and t.grad_fn is not None and t.detach().numpy().dtype.kind != "c"
    ]


def _agreement_cases() -> dict[type[Function], list[tuple[str, Callable[[], Any]]]]:
    """Op-database samples whose graph records a twin, as calls that rebuild them."""
    cases: dict[type[Function], list[tuple[str, Callable[[], Any]]]] = {c: [] for c in TWINS}
    for name in sorted(OPS):
        spec = OPS[name]
        if spec.samples is None or not spec.differentiable:
            continue
        for i, s in enumerate(spec.samples(np.random.default_rng(0))):

            def call(spec: Any = spec, s: Any = s) -> tuple[list[Tensor], list[Tensor]]:
                args, kwargs, leaves = engine_inputs(s, np.float64)
                return _float_outputs(spec.fn(*args, **kwargs)), leaves

            with warnings.catch_warnings():  # the op database's own tests check warnings
                warnings.simplefilter("ignore")
                try:
                    outputs, leaves = call()
                except Exception:  # error samples belong to the op database's own tests
                    continue
            if leaves:
                for twin in _graph_twins(outputs):
                    cases[twin].append((f"{name}[{i}]", call))
    return cases


CASES = _agreement_cases()


@pytest.mark.parametrize("twin", TWINS, ids=lambda c: c.__qualname__)
def test_twin_agrees_with_backward(twin: type[Function]) -> None:
    assert CASES[twin], f"no op-database sample records {twin.__qualname__}"
    for label, call in CASES[twin]:
        grads: list[list[Any]] = []
        for create_graph in (False, True):  # the twin, then the engine-op rule
            outputs, leaves = call()
            rng = np.random.default_rng(0)
            weights = [Tensor(rng.standard_normal(o.shape)) for o in outputs]
            loss = sum((o * w).sum() for o, w in zip(outputs, weights))
            got = E.grad(loss, leaves, create_graph=create_graph, allow_unused=True)
            grads.append([None if g is None else g.detach().numpy() for g in got])
        for fast, graph in zip(*grads):
            assert (fast is None) == (graph is None), label
            if fast is not None:
                np.testing.assert_allclose(fast, graph, rtol=1e-10, atol=1e-12, err_msg=label)
