"""PyTorch's saved-tensor hook tests (``torch.autograd.graph.saved_tensors_hooks``,
``disable_saved_tensors_hooks``, ``save_on_cpu``; test_autograd.py's
``test_saved_variable_*``/``test_default_saved_tensors_hooks_*``/``test_disabling_*``
cases), ported: each scenario is written once and run with torch and the engine."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.engine.test_autograd_api import _both

T = SimpleNamespace


def _hooks(t: T, pack: Any, unpack: Any) -> Any:
    return t.lib.autograd.graph.saved_tensors_hooks(pack, unpack)


def test_default_saved_variable_hooks_double_backward(torch: Any) -> None:
    def scenario(t: T) -> Any:
        out = []
        with _hooks(t, lambda x: x, lambda x: x):
            a = t.lib.tensor([1.0, -2.0, 0.5], dtype=t.float64, requires_grad=True)
            s = (a**3).sum()
            (g,) = t.grad(s, (a,), create_graph=True)
            g.sum().backward()
            out.append(a.grad)
        with _hooks(t, lambda x: 2 * x, lambda x: x):
            a = t.lib.tensor([1.0, -2.0, 0.5], dtype=t.float64, requires_grad=True)
            s = (a**3).sum()
        (g,) = t.grad(s, (a,), create_graph=True)
        g.sum().backward()  # factor 2: only a is saved (and packed) once
        out.append(a.grad)
        with _hooks(t, lambda x: 2 * x, lambda x: x):
            a = t.lib.tensor([1.0, -2.0, 0.5], dtype=t.float64, requires_grad=True)
            s = (a * a).sum()  # a saved twice
        (g,) = t.grad(s, (a,), create_graph=True)
        g.sum().backward()
        return [*out, g, a.grad]

    _both(torch, scenario)


def test_default_saved_variable_hooks_on_non_leaf_double_backward(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, -2.0, 0.5], dtype=t.float64, requires_grad=True)
        with _hooks(t, lambda x: 2 * x, lambda x: x):
            b = a * 3
            s = (b**3).sum()
        (g,) = t.grad(s, (a,), create_graph=True)
        g.sum().backward()
        return [g, a.grad]

    _both(torch, scenario)


def test_pack_and_unpack_calls(torch: Any) -> None:
    """What each hook sees: saved inputs are the tensors themselves, a saved output has
    its node as grad_fn; pack runs under no_grad, unpack in the backward's grad mode."""

    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        log: list[Any] = []

        def pack(x: Any) -> Any:
            name = None if x.grad_fn is None else type(x.grad_fn).__name__
            log.append(["pack", x is a, name, t.lib.is_grad_enabled()])
            return x

        def unpack(x: Any) -> Any:
            log.append(["unpack", t.lib.is_grad_enabled()])
            return x

        with _hooks(t, pack, unpack):
            y = a * a
            z = a.exp()
            w = z.sin()
        w.sum().backward(retain_graph=True)
        y.sum().backward(create_graph=False)
        t.grad(w.sum(), a, create_graph=True)
        return [log, a.grad]

    _both(torch, scenario)


def test_saved_tensors_hooks_innermost_wins(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        log: list[str] = []
        with _hooks(t, lambda x: log.append("outer") or x, lambda x: x):
            with _hooks(t, lambda x: log.append("inner") or x, lambda x: x):
                y = a * a
            z = a * a
        after = a * a  # no hooks: nothing packed
        (y + z + after).sum().backward()
        return [log, a.grad]

    _both(torch, scenario)


def test_no_pack_without_graph(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        log: list[int] = []
        with _hooks(t, lambda x: log.append(1) or x, lambda x: x):
            with t.lib.no_grad():
                a * a
            b = t.lib.ones(2)
            b * b
        return log

    _both(torch, scenario)


def test_unpack_every_access_and_retain_graph(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        log: list[str] = []
        with _hooks(t, lambda x: x, lambda x: log.append("u") or x):
            y = a.exp()
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        try:
            y.sum().backward()
        except RuntimeError as exc:
            return [log, a.grad, str(exc)]
        return None

    _both(torch, scenario)


def test_saved_variable_packing_unpacking_with_hooks_changes_value(torch: Any) -> None:
    """The unpack hook's value is what backward reads (not the original)."""

    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0, 3.0], dtype=t.float64, requires_grad=True)
        with _hooks(t, lambda x: x * 10, lambda x: x / 5):
            y = a * a  # both saved a come back as 2 * a
        y.sum().backward()
        return a.grad

    _both(torch, scenario)


def test_hooks_skip_the_version_check(torch: Any) -> None:
    """PyTorch cannot see through hooks: a saved tensor modified in place is not caught."""

    def scenario(t: T) -> Any:
        b = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        with _hooks(t, lambda x: x, lambda x: x):
            c = b * 1
            d = c * c
            c.mul_(2)
        d.sum().backward()
        return b.grad

    _both(torch, scenario)


def test_unpack_hook_must_return_a_tensor(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        with _hooks(t, lambda x: x, lambda x: 1):
            y = a * a
        y.sum().backward()

    _both(torch, scenario)


def test_pack_hook_with_inplace_modification_should_fail(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)

        def inc(x: Any) -> Any:
            x += 1
            return x

        with _hooks(t, inc, lambda x: x):
            (a * 1).exp()

    _both(torch, scenario)


def test_pack_hook_error_propagates(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)

        def pack(x: Any) -> Any:
            raise RuntimeError("pack failed")

        with _hooks(t, pack, lambda x: x):
            a * a

    _both(torch, scenario)


def test_saved_tensor_hooks_custom_function(torch: Any) -> None:
    """A custom Function's ``save_for_backward`` is packed when forward ends."""

    def scenario(t: T) -> Any:
        log: list[Any] = []

        class Sq(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                out = x * x
                ctx.save_for_backward(x, out, None)
                return out

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                x, out, nothing = ctx.saved_tensors
                log.append(["backward", nothing is None])
                return 2 * g * x + 0 * out

        def pack(x: Any) -> Any:
            log.append(["pack", None if x.grad_fn is None else type(x.grad_fn).__name__])
            return x * 3

        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        with _hooks(t, pack, lambda x: x / 3):
            y = Sq.apply(a)
        y.sum().backward()
        return [log, a.grad]

    _both(torch, scenario)


def test_disabling_saved_tensor_hooks(torch: Any) -> None:
    def scenario(t: T) -> Any:
        graph = t.lib.autograd.graph
        out = []
        with graph.disable_saved_tensors_hooks("error message"):
            try:
                with _hooks(t, lambda x: x, lambda x: x):
                    pass
            except RuntimeError as exc:
                out.append(str(exc))
        with _hooks(t, lambda x: x, lambda x: x):  # enabled again
            out.append("ok")
        with _hooks(t, lambda x: x, lambda x: x):
            try:
                with graph.disable_saved_tensors_hooks("error message"):
                    out.append("entered")
            except RuntimeError as exc:
                out.append(str(exc))
        with _hooks(t, lambda x: x, lambda x: x):
            out.append("still ok")
        return out

    _both(torch, scenario)


def test_disabling_saved_tensor_hooks_nested(torch: Any) -> None:
    def scenario(t: T) -> Any:
        graph = t.lib.autograd.graph
        out = []
        with graph.disable_saved_tensors_hooks("outer"):
            with graph.disable_saved_tensors_hooks("inner"):
                try:
                    with _hooks(t, lambda x: x, lambda x: x):
                        pass
                except RuntimeError as exc:
                    out.append(str(exc))
            try:
                with _hooks(t, lambda x: x, lambda x: x):
                    pass
            except RuntimeError as exc:
                out.append(str(exc))
        with _hooks(t, lambda x: x, lambda x: x):
            out.append("ok")
        return out

    _both(torch, scenario)


def test_save_on_cpu(torch: Any) -> None:
    def scenario(t: T) -> Any:
        a = t.lib.tensor([1.0, 2.0], dtype=t.float64, requires_grad=True)
        with t.lib.autograd.graph.save_on_cpu():
            y = (a * a).exp()
        y.sum().backward()
        return a.grad

    _both(torch, scenario)


@pytest.mark.parametrize("op", ["tanh", "sigmoid", "exp", "relu", "sqrt"])
def test_saved_results_through_hooks(torch: Any, op: str) -> None:
    """Ops that save their result unpack it with their own node as history."""

    def scenario(t: T) -> Any:
        a = t.lib.tensor([0.5, 2.0], dtype=t.float64, requires_grad=True)
        with _hooks(t, lambda x: x + 1, lambda x: x - 1):
            y = getattr(a, op)()
        (g,) = t.grad(y.sum(), a, create_graph=True)
        g.sum().backward()
        return [g, a.grad]

    _both(torch, scenario)


def test_hooks_with_views_and_inplace_ops(torch: Any) -> None:
    """What is packed when in-place ops write through views (CopySlices wraps the op
    that saved) and when an op saves its result that is then written in place."""

    def scenario(t: T) -> Any:
        log: list[Any] = []
        x = t.lib.tensor([1.0, 2.0, 3.0], dtype=t.float64, requires_grad=True)
        with _hooks(t, lambda v: log.append(tuple(v.shape)) or v * 1, lambda v: v):
            y = x * 1
            y[1:].mul_(x[1:])
            z = y.exp()
            y.sin_()
        (z.sum() + y.sum()).backward()
        return [log, x.grad]

    _both(torch, scenario)


def test_hooks_on_matmul_and_tanh(torch: Any) -> None:
    def scenario(t: T) -> Any:
        log: list[Any] = []
        x = t.lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=t.float64, requires_grad=True)
        with _hooks(t, lambda v: log.append(tuple(v.shape)) or v, lambda v: v):
            y = (x @ x).tanh().sum(0)
        y.sum().backward()
        return [log, x.grad * 1e5]

    _both(torch, scenario)
