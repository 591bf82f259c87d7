"""PyTorch's ``test/test_autograd.py`` (``TestAutograd``), ported: each case is written
once against a namespace and run with torch and with the engine (``_both`` from
``test_autograd_api``); values, gradients, grad_fn names, hook calls, and error
classes and messages must agree. Test names keep PyTorch's so a failure maps back."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.engine.test_autograd_api import _both

T = SimpleNamespace


def _vals(shape: tuple[int, ...], seed: int = 0) -> Any:
    """Deterministic values (the same on both sides, unlike ``randn``)."""
    return np.random.default_rng(seed).standard_normal(shape).round(3).tolist()


def _leaf(t: T, shape: tuple[int, ...], seed: int = 0, dtype: Any = None) -> Any:
    return t.lib.tensor(_vals(shape, seed), requires_grad=True, dtype=dtype or t.float32)


def _name(fn: Any) -> str | None:
    """A node's PyTorch class name (torch: ``type(fn).__name__``; the engine: ``.name``)."""
    if fn is None:
        return None
    return type(fn).__name__ if callable(fn.name) else fn.name


def _graph_desc(fn: Any) -> str:
    """PyTorch's ``graph_desc`` helper from test_autograd.py."""
    if fn is None:
        return "None"
    inner = ", ".join(_graph_desc(nxt) for nxt, _ in fn.next_functions)
    return f"{_name(fn)}({inner})"


# -- custom Functions ----------------------------------------------------------------------


def _my_function(t: T, once: bool = False) -> Any:
    def backward(ctx: Any, grad_output: Any) -> Any:
        var1, var2 = ctx.saved_tensors
        assert t.lib.is_grad_enabled() is not once
        return (
            grad_output + grad_output * var2,
            None,
            grad_output * ctx.pyscalar + grad_output * var1,
        )

    class MyFunction(t.lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, tensor1: Any, pyscalar: Any, tensor2: Any) -> Any:
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

    if once:
        MyFunction.backward = staticmethod(t.lib.autograd.function.once_differentiable(backward))
    else:
        MyFunction.backward = staticmethod(backward)
    return MyFunction


def _function_test(t: T, cls: Any) -> Any:
    x, y = _leaf(t, (5, 5), 1), _leaf(t, (5, 5), 2)
    result = cls.apply(x, 2, y)
    go = t.lib.ones((), requires_grad=True)
    result.sum().backward(go, create_graph=True)
    return x, y, result


def test_function(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, y, result = _function_test(t, _my_function(t))
        assert x.grad.grad_fn is not None and y.grad.grad_fn is not None
        return [_name(result.grad_fn), result, x.grad, y.grad]

    _both(torch, scenario)


def test_once_differentiable(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, y, _ = _function_test(t, _my_function(t, once=True))
        # x.grad is a copy of the Error node's output: differentiating it again fails
        desc = _graph_desc(x.grad.grad_fn.next_functions[1][0])
        try:
            x.grad.sum().backward()
        except RuntimeError as exc:
            return [desc, str(exc), x.grad, y.grad]
        return None

    _both(torch, scenario)


@pytest.mark.parametrize("shape", [(1,), ()])
def test_function_returns_input(torch: Any, shape: tuple[int, ...]) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                return grad * 2

        v = t.lib.ones(shape, requires_grad=True)
        out = MyFunction.apply(v)
        facts = [out is v, out.is_leaf, _name(out.grad_fn)]
        out.backward()
        first = v.grad.clone()
        with t.lib.no_grad():
            v.grad.zero_()
        MyFunction.apply(v.clone()).backward()
        return [facts, first, v.grad]

    _both(torch, scenario)


def test_function_returns_undefined_tensor(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                return None

        x = t.lib.ones(1, requires_grad=True)
        MyFunction.apply(x).backward()
        a = x.grad
        MyFunction.apply(x**2).backward()
        b = x.grad
        MyFunction.apply(x).sum().backward()
        return [a, b, x.grad, t.lib.autograd.grad(MyFunction.apply(x), x, allow_unused=True)]

    _both(torch, scenario)


@pytest.mark.parametrize("materialize", [True, False])
def test_materialize_grads(torch: Any, materialize: bool) -> None:
    """An output no gradient reached: zeros in backward, or None without materializing
    (PyTorch's test makes the undefined gradient with ``UndefinedGrad``)."""

    def scenario(t: T) -> Any:
        seen = []

        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx: Any, ga: Any, gb: Any) -> Any:
                seen.append(gb if gb is None else gb.tolist())
                return ga * 2

        x = t.lib.ones(2, requires_grad=True)
        a, _ = MyFunction.apply(x)
        a.sum().backward()
        return [seen, x.grad]

    _both(torch, scenario)


def test_legacy_function_deprecation_exception(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            def forward(self, x: Any) -> Any:  # type: ignore[override]
                return x

            def backward(self, grad_output: Any) -> Any:  # type: ignore[override]
                return grad_output

        return MyFunction()(t.lib.ones(3, 4))

    _both(torch, scenario)


def test_custom_function_exception(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class SimulateBackwardError(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, input: Any) -> Any:
                return input.clone()

            @staticmethod
            @t.lib.autograd.function.once_differentiable
            def backward(ctx: Any, input: Any) -> Any:
                raise RuntimeError("Simulate error on backward pass")

        t1, t2 = _leaf(t, (3, 3), 1), _leaf(t, (3, 3), 2)
        tmp = (t1 + t2) * (t1 + t2)
        t3 = SimulateBackwardError.apply(tmp)
        try:
            t3.sum().backward()
        finally:
            assert t1.grad is None

    _both(torch, scenario)


@pytest.mark.parametrize("shape", [(10,), (5,), (1, 5), (5, 5), (2, 5, 5), (5, 1)])
def test_invalid_gradients(torch: Any, shape: tuple[int, ...]) -> None:
    """A wrong gradient shape is an error unless it broadcasts (then it is summed)."""

    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, grad_output: Any) -> Any:
                return t.lib.ones(shape, dtype=t.float64)

        x = _leaf(t, (5, 5))
        MyFunction.apply(x).sum().backward()
        return x.grad

    _both(torch, scenario)


def test_wrong_number_of_gradients(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, y: Any) -> Any:
                return x * y

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        x = _leaf(t, (3,))
        MyFunction.apply(x, x).sum().backward()

    _both(torch, scenario)


def test_extra_none_gradients_are_dropped(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2, None, None

        x = _leaf(t, (3,))
        MyFunction.apply(x).sum().backward()
        return x.grad

    _both(torch, scenario)


def test_gradient_for_a_non_tensor_input(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, k: Any) -> Any:
                return x * k

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2, g

        x = _leaf(t, (3,))
        MyFunction.apply(x, 2.0).sum().backward()

    _both(torch, scenario)


def test_hook_none(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class NoneGradientFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, y: Any) -> Any:
                assert ctx.needs_input_grad[0]
                assert not ctx.needs_input_grad[1]
                return x, y

            @staticmethod
            def backward(ctx: Any, grad_x: Any, grad_y: Any) -> Any:
                return grad_x, None

        was_called = []

        def hook(grad: Any) -> None:
            assert grad is not None
            was_called.append(grad.shape)

        x = _leaf(t, (5, 5))
        y = t.lib.ones(5, 5)
        rx, ry = NoneGradientFunction.apply(x, y)
        rx.register_hook(hook)
        facts = [rx.requires_grad, ry.requires_grad, ry is y]
        (rx + ry).sum().backward()
        return [facts, len(was_called), x.grad]

    _both(torch, scenario)


def test_save_output_nr(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _leaf(t, (10,))

        class MultiOutputFn(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x[:5], x[5:]

            @staticmethod
            def backward(ctx: Any, *grad: Any) -> Any:
                return t.lib.cat(grad)

        a, b = MultiOutputFn.apply(x)
        nrs = []

        class TestFn(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, b: Any) -> Any:
                ctx.save_for_backward(b)
                return b * 2

            @staticmethod
            def backward(ctx: Any, grad_b: Any) -> Any:
                (b,) = ctx.saved_tensors
                nrs.append(b.output_nr)
                return grad_b * 2

        TestFn.apply(b).sum().backward()
        return [a.output_nr, b.output_nr, nrs, x.grad]

    _both(torch, scenario)


def test_no_grad_python_function(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(5, 5, requires_grad=True)

        class MyOp(t.lib.autograd.Function):
            @staticmethod
            def forward(self: Any, x: Any) -> Any:
                assert not t.lib.is_grad_enabled()
                return x + 1

            @staticmethod
            def backward(self: Any, dy: Any) -> Any:
                return dy

        with t.lib.no_grad():
            y = MyOp.apply(x)
        return [y.requires_grad, y.grad_fn is None]

    _both(torch, scenario)


def test_mark_non_differentiable(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, input: Any) -> Any:
                output = input > 0
                ctx.mark_non_differentiable(output)
                return output

            @staticmethod
            def backward(ctx: Any, grad_output: Any) -> Any:
                return (grad_output * 0).to(t.float64)

        x = _leaf(t, (5, 5))
        mask = MyFunction.apply(x)
        y = x.masked_fill(mask, 0)
        y.sum().backward()
        return [mask.requires_grad, mask, x.grad]

    _both(torch, scenario)


def test_mark_non_differentiable_mixed(torch: Any) -> None:
    def scenario(t: T) -> Any:
        seen = []

        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, input: Any) -> Any:
                a = input + 1
                b = input + 2
                ctx.mark_non_differentiable(a)
                return a, b

            @staticmethod
            def backward(ctx: Any, grad_a: Any, grad_b: Any) -> Any:
                seen.append([grad_a, grad_b])
                return grad_b

        x = _leaf(t, (5, 5))
        a, b = MyFunction.apply(x)
        facts = [a.requires_grad, b.requires_grad, _name(b.grad_fn)]
        b.sum().backward()
        return [facts, seen, x.grad]

    _both(torch, scenario)


def test_mark_non_differentiable_none(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyFunction(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, input: Any) -> Any:
                output = input.clone()
                ctx.mark_non_differentiable(output)
                return output

            @staticmethod
            def backward(ctx: Any, grad_output: Any) -> Any:
                return None

        x = _leaf(t, (5, 5))
        r = MyFunction.apply(x * x)
        (r * x).sum().backward()
        return [r.requires_grad, x.grad]

    _both(torch, scenario)


def test_return_duplicate(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class DoubleDuplicate(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                output = x * 2
                return output, output

            @staticmethod
            def backward(ctx: Any, grad1: Any, grad2: Any) -> Any:
                return grad1 * 2 + grad2 * 2

        x = _leaf(t, (3, 3), dtype=t.float64)
        a, b = DoubleDuplicate.apply(x)
        assert a is b
        (g,) = t.lib.autograd.grad((a + b).sum(), x, create_graph=True)
        (gg,) = t.lib.autograd.grad(g.sum(), x, allow_unused=True)
        return [a, g, gg]

    _both(torch, scenario)


def test_return_duplicate_inplace(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class DoubleInplace(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                x.mul_(2)
                ctx.mark_dirty(x)
                return x, x

            @staticmethod
            def backward(ctx: Any, grad1: Any, grad2: Any) -> Any:
                return grad1 * 2 + grad2 * 2

        x = _leaf(t, (3, 3), dtype=t.float64)
        c = x.clone()
        a, b = DoubleInplace.apply(c)
        facts = [a is b, a is c, c._version, _name(c.grad_fn)]
        (a + b).sum().backward()
        return [facts, a, x.grad]

    _both(torch, scenario)


@pytest.mark.parametrize("case", ["leaf", "clone", "view", "not_returned"])
def test_mark_dirty(torch: Any, case: str) -> None:
    """``mark_dirty``: the modified input is the output and takes the node as its
    history; a leaf that requires grad refuses (PyTorch's ``InplaceFunction`` cases)."""

    def scenario(t: T) -> Any:
        class Inplace(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                x.mul_(3)
                ctx.mark_dirty(x)
                return x if case != "not_returned" else x * 1

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 3

        x = _leaf(t, (2, 3), dtype=t.float64)
        if case == "leaf":
            return Inplace.apply(x)
        if case == "view":
            base = x * 1
            out = Inplace.apply(base[0])
            base.sum().backward()
            return [out, base, _name(base.grad_fn), x.grad]
        out = Inplace.apply(x.clone())
        out.sum().backward()
        return [out, out._version, x.grad]

    _both(torch, scenario)


def test_naughty_autograd_function_stashing_ctx(torch: Any) -> None:
    def scenario(t: T) -> Any:
        saved_ctx = []

        class Id(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx: Any, grad_x: Any) -> Any:
                saved_ctx.append(ctx)
                return ctx.saved_tensors

        p = t.lib.zeros(1, requires_grad=True)
        loss = Id.apply(p)
        loss.backward(retain_graph=True)
        ok = saved_ctx[0].saved_tensors
        loss.backward()
        return [ok, p.grad, saved_ctx[0].saved_tensors]

    _both(torch, scenario)


def test_custom_autograd_repeated_grad_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        def mult1(x: Any) -> Any:
            return x.prod(dim=-1).prod(dim=-1)

        class Mult(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                y = mult1(x)
                ctx.save_for_backward(x, y)
                return y

            @staticmethod
            def backward(ctx: Any, grad_output: Any) -> Any:
                x, y = ctx.saved_tensors
                return (grad_output * y)[:, None, None] / x

        def check(x: Any, y: Any) -> Any:
            (gy,) = t.lib.autograd.grad(y[0], x, create_graph=True)
            (ggy_1,) = t.lib.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
            (gy,) = t.lib.autograd.grad(y[0], x, create_graph=True)
            (ggy_2,) = t.lib.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
            return [ggy_1, ggy_2]

        x = t.lib.ones(2, 4, 4).requires_grad_()
        return [check(x, mult1(x)), check(x, Mult.apply(x))]

    _both(torch, scenario)


def test_saved_tensor_modified_in_place(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class Square(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = _leaf(t, (3,))
        h = x * 1
        y = Square.apply(h)
        h.add_(1)
        y.sum().backward()

    _both(torch, scenario)


def test_save_for_backward_refuses_non_tensors(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class Bad(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x, 3)
                return x * 1

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        return Bad.apply(_leaf(t, (2,)))

    _both(torch, scenario)


def test_setup_context_style(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class Scale(t.lib.autograd.Function):
            @staticmethod
            def forward(x: Any, k: Any = 3.0) -> Any:
                return x * k

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                ctx.k = inputs[1]
                ctx.save_for_backward(inputs[0], output)

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                x, out = ctx.saved_tensors
                return g * ctx.k + 0 * out, None

        x = _leaf(t, (3,))
        y = Scale.apply(x)
        z = Scale.apply(x, k=5.0)
        (y + z).sum().backward()
        return [_name(y.grad_fn), y, z, x.grad]

    _both(torch, scenario)


def test_saved_output_is_usable_in_double_backward(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class Exp(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                out = x.exp()
                ctx.save_for_backward(out)
                return out

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (out,) = ctx.saved_tensors
                return g * out

        x = _leaf(t, (3,), dtype=t.float64)
        y = Exp.apply(x)
        (g,) = t.lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = t.lib.autograd.grad(g.sum(), x)
        return [y, g, gg]

    _both(torch, scenario)


def test_free_deep_graph_pyfunction(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class MyOp(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, tensor1: Any, tensor2: Any) -> Any:
                return tensor1 + tensor2

            @staticmethod
            def backward(ctx: Any, grad_output: Any) -> Any:
                return grad_output, grad_output * 0

        x = t.lib.ones(1, requires_grad=True)
        y = x.clone()
        for _ in range(3000):
            y = MyOp.apply(y, y)
        y.backward()
        return x.grad

    _both(torch, scenario)
