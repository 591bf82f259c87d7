"""More of PyTorch's ``TestAutograd`` (test/test_autograd.py), ported: grad-mode
decorators and calls, inference mode, ``detach_``, ``requires_grad_`` on non-leaves,
version counters shared through ``detach``/``.data``, ``increment_version``, the
gradient layout contract, hooks on leaves and tensors without grad, ``.grad``
assignment checks. Each scenario is written once and run with torch and the engine."""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any

from tests.engine.test_autograd_api import _both

T = SimpleNamespace


def _errors(*calls: Any) -> list[str]:
    out = []
    for call in calls:
        try:
            call()
            out.append("ok")
        except (RuntimeError, ValueError) as exc:
            out.append(str(exc))
    return out


def test_set_grad_enabled_as_decorator(torch: Any) -> None:
    def scenario(t: T) -> Any:
        lib = t.lib
        x = lib.ones(2, requires_grad=True)

        @lib.set_grad_enabled(False)
        def off(v: Any) -> Any:
            return v * 2

        @lib.enable_grad
        def on(v: Any) -> Any:
            return v * 2

        @lib.no_grad
        def bare(v: Any) -> Any:
            return v * 2

        with lib.no_grad():
            inside = on(x)
        return [off(x).requires_grad, inside.requires_grad, bare(x).requires_grad]

    _both(torch, scenario)


def test_set_grad_enabled_as_a_call(torch: Any) -> None:
    def scenario(t: T) -> Any:
        lib = t.lib
        seen = [lib.is_grad_enabled()]
        lib.set_grad_enabled(False)
        seen.append(lib.is_grad_enabled())
        x = lib.ones(2, requires_grad=True)
        seen.append((x * 2).requires_grad)
        lib.set_grad_enabled(True)
        return [*seen, lib.is_grad_enabled(), (x * 2).requires_grad]

    _both(torch, scenario)


def test_no_grad_decorates_a_generator(torch: Any) -> None:
    def scenario(t: T) -> Any:
        lib = t.lib
        x = lib.ones(2, requires_grad=True)

        @lib.no_grad()
        def gen() -> Any:
            for i in range(2):
                yield [(x * i).requires_grad, lib.is_grad_enabled()]

        return [list(gen()), lib.is_grad_enabled()]

    _both(torch, scenario)


def test_inference_mode_context_and_decorator(torch: Any) -> None:
    def scenario(t: T) -> Any:
        lib = t.lib
        x = lib.ones(2, requires_grad=True)
        with lib.inference_mode():
            y = x * 2
            inside = [lib.is_inference_mode_enabled(), lib.is_grad_enabled(), y.requires_grad]
        with lib.inference_mode(False):
            off = [lib.is_inference_mode_enabled(), lib.is_grad_enabled(), (x * 2).requires_grad]

        @lib.inference_mode()
        def f() -> Any:
            return (x * 2).requires_grad

        return [inside, off, f(), lib.is_inference_mode_enabled()]

    _both(torch, scenario)


def test_detach_(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        y = x * 2
        view = y[:1]
        errors = _errors(view.detach_)
        y.detach_()
        return [errors, y.requires_grad, y.is_leaf, y.grad_fn]

    _both(torch, scenario)


def test_requires_grad_of_a_non_leaf(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        y = x * 2

        def assign() -> None:
            y.requires_grad = False

        i = t.lib.ones(2, dtype=t.int64)
        errors = _errors(lambda: y.requires_grad_(False), assign, i.requires_grad_)
        y.requires_grad_(True)
        return [errors, y.requires_grad]

    _both(torch, scenario)


def test_version_counter_shared_by_detach_and_data(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        d = x.detach()
        with t.lib.no_grad():
            x.add_(1)
        seen = [x._version, d._version]
        d.mul_(2)
        seen += [x._version, d._version, x.tolist()]
        y = x.data
        y.add_(1)
        return [*seen, x._version, y._version]

    _both(torch, scenario)


def test_increment_version(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.ones(2, requires_grad=True)
        b = a * 1
        c = b * b
        graph = t.lib.autograd.graph
        graph.increment_version(a)
        graph.increment_version([b, b])
        seen = [a._version, b._version]
        try:
            c.sum().backward()
        except RuntimeError as exc:
            return [seen, str(exc)]
        return seen

    _both(torch, scenario)


def test_retain_grad_of_a_leaf_and_non_leaf_grad_warning(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        x.retain_grad()  # a no-op on a leaf
        (x * 2).sum().backward()
        y = x * 3
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = y.grad
        return [x.retains_grad, y.retains_grad, x.grad, g, len(caught)]

    _both(torch, scenario)


def test_backward_twice_without_saved_values(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        y = (x + 1).sum()
        y.backward()
        y.backward()  # nothing saved: runs again
        z = (x * x).sum()
        z.backward()
        return [x.grad, _errors(z.backward)]

    _both(torch, scenario)


def test_backward_inputs_unreachable(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        w = t.lib.ones(2, requires_grad=True)
        (x * 2).sum().backward(inputs=[w])
        return [x.grad, w.grad]

    _both(torch, scenario)


def test_grad_layout_follows_the_leaf(torch: Any) -> None:
    """AccumulateGrad's layout contract: a non-contiguous incoming gradient is stored
    with the (contiguous) leaf's strides."""

    def scenario(t: T) -> Any:
        x = t.lib.ones(2, 3, requires_grad=True)
        g = t.lib.arange(6.0).reshape(3, 2).t()
        (x * 1).backward(g)
        first = [x.grad.is_contiguous(), x.grad.stride(), x.grad]
        (x * 1).backward(g)  # accumulated in place: the layout stays
        return [first, x.grad.is_contiguous(), x.grad]

    _both(torch, scenario)


def test_accumulate_grad_with_create_graph(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x * x).sum().backward(create_graph=True)
        g = x.grad
        facts = [g.requires_grad, g.grad_fn is not None]
        (g * g).sum().backward()
        return [facts, x.grad]

    _both(torch, scenario)


def test_detach_then_requires_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(3, requires_grad=True)
        y = x.detach()
        y.requires_grad_()
        (y * 2).sum().backward()
        return [x.grad, y.grad, y.is_leaf]

    _both(torch, scenario)


def test_leaf_hook_changes_the_gradient(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        h = x.register_hook(lambda g: g * 10)
        (x * 2).sum().backward()
        h.remove()
        (x * 2).sum().backward()
        return x.grad

    _both(torch, scenario)


def test_hook_on_a_tensor_without_grad_and_grad_assignment(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        plain = t.lib.ones(2)

        def wrong_size() -> None:
            x.grad = t.lib.ones(3)

        def wrong_dtype() -> None:
            x.grad = t.lib.ones(2, dtype=t.float64)

        return _errors(lambda: plain.register_hook(lambda g: g), wrong_size, wrong_dtype)

    _both(torch, scenario)


# -- autograd.grad's arguments -------------------------------------------------------------


def test_grad_materialize_grads(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, w = t.lib.ones(2, requires_grad=True), t.lib.ones(2, requires_grad=True)
        got = t.grad((x * 2).sum(), [x, w], allow_unused=True, materialize_grads=True)
        return [
            got,
            _errors(lambda: t.grad((x * 2).sum(), x, allow_unused=False, materialize_grads=True)),
        ]

    _both(torch, scenario)


def test_grad_only_inputs_is_deprecated(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = t.grad((x * x).sum(), x, only_inputs=False)
            positional = t.grad((x * x).sum(), x, None, None, False, True, True)
        return [got, positional, [(w.category.__name__, str(w.message)) for w in caught]]

    _both(torch, scenario)


def test_grad_of_several_outputs_and_inputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        y1, y2 = (x * 2).sum(), x * x
        mixed = t.grad([y1, y2], [x], grad_outputs=[None, t.lib.ones(2)], retain_graph=True)
        twice = t.grad(y1, [x, x], retain_graph=True)
        y = x * 2
        z = y.sum()
        non_leaf = t.grad(z, [x, y])
        return [mixed, twice, non_leaf]

    _both(torch, scenario)


def test_grad_argument_errors(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        return _errors(
            lambda: t.grad((x.detach() * 2).sum(), x),
            lambda: t.grad((x * 2).sum(), []),
            lambda: t.grad([], [x]),
            lambda: t.backward(x * 2),
        )

    _both(torch, scenario)


def test_backward_gradient_keyword_and_dtype(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        (x * 2).backward(gradient=t.lib.tensor([1.0, 2.0]))
        first = x.grad.clone()
        (x * 2).sum().backward(t.lib.ones((), dtype=t.float64))
        return [first, x.grad]

    _both(torch, scenario)


def test_third_order_with_allow_unused(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        (g1,) = t.grad(x.pow(2).sum(), x, create_graph=True)
        (g2,) = t.grad(g1.sum(), x, create_graph=True)
        (g3,) = t.grad(g2.sum(), x, allow_unused=True)
        return [g1, g2, g3]

    _both(torch, scenario)


def test_graph_node_and_gradient_edge(torch: Any) -> None:
    def scenario(t: T) -> Any:
        graph = t.lib.autograd.graph

        class Id(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x.clone()

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        x = t.lib.ones(2, requires_grad=True)
        y = x * 2
        z = Id.apply(y)
        kinds = [
            isinstance(y.grad_fn, graph.Node),
            isinstance(y.grad_fn.next_functions[0][0], graph.Node),
            isinstance(z.grad_fn, graph.Node),
            isinstance(x, graph.Node),
            issubclass(type(y.grad_fn), graph.Node),
        ]
        edge = graph.get_gradient_edge(y)
        leaf = graph.get_gradient_edge(x)
        facts = [edge.node is y.grad_fn, edge.output_nr, type(leaf.node).__name__]
        facts.append(leaf.node is y.grad_fn.next_functions[0][0])
        return [kinds, facts, _errors(lambda: graph.get_gradient_edge(t.lib.ones(1)))]

    _both(torch, scenario)
