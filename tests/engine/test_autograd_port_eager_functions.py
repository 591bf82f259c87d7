"""functorch's ``test/functorch/test_eager_transforms.py`` ``TestAutogradFunction``,
``TestAutogradFunctionVmapAPI`` (the cases without a ``vmap`` staticmethod) and
``TestVmapOfGrad``, ported: custom ``autograd.Function``s and per-sample gradients
under ``torch.func`` transforms, run with torch and with the engine; values within the
shared oracle's tolerance, and errors (class and message) agree. Not ported: a
Function's own ``vmap`` staticmethod and ``generate_vmap_rule`` (the engine batches a
Function by running it per sample), functorch internals (dead wrappers),
``make_functional``/``functional_call`` (the engine has no ``nn.Module``)."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any

import pytest

from tests.engine.test_autograd_port_eager_transforms import _t
from tests.engine.test_autograd_port_functional import _both, _catch

T = SimpleNamespace


def test_set_materialize_grads(torch: Any) -> None:
    def scenario(t: T) -> Any:
        seen = []

        class A(t.lib.autograd.Function):
            @staticmethod
            def forward(x: Any, y: Any) -> Any:
                return x, y

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                ctx.set_materialize_grads(False)

            @staticmethod
            def backward(ctx: Any, gx: Any, gy: Any) -> Any:
                seen.append((gx is not None, gy is None))
                return gx, gy

        def f(y: Any, x: Any) -> Any:
            x, y = A.apply(x, y)
            return x**2

        x, y = t.lib.tensor(2.0), t.lib.tensor(3.0)
        g = t.lib.func.grad
        return [g(f)(y, x), g(g(f))(y, x), seen]

    _both(torch, scenario)


def test_needs_input_grads(torch: Any) -> None:
    def scenario(t: T) -> Any:
        seen = []

        class A(t.lib.autograd.Function):
            @staticmethod
            def forward(x: Any, y: Any) -> Any:
                return x * y

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                return

            @staticmethod
            def backward(ctx: Any, grad_output: Any) -> Any:
                seen.append(tuple(ctx.needs_input_grad))
                return None, None

        x, y = t.lib.tensor(2.0), t.lib.tensor(3.0)
        g = t.lib.func.grad
        return [g(A.apply)(x, y), g(g(A.apply))(x, y), seen]

    _both(torch, scenario)


def _numpy_cube(t: T) -> Any:
    class NumpyCubeNotComposable(t.lib.autograd.Function):
        @staticmethod
        def forward(input: Any) -> Any:
            input_np = input.detach().numpy()
            return t.lib.tensor(input_np**3), input_np

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.input_np = output[1]

        @staticmethod
        @t.lib.autograd.function.once_differentiable
        def backward(ctx: Any, grad_output: Any, grad_saved: Any) -> Any:
            return t.lib.tensor(3 * (ctx.input_np**2)) * grad_output

    return NumpyCubeNotComposable


def test_once_differentiable_autograd_vjp(torch: Any) -> None:
    def scenario(t: T) -> Any:
        cube = _numpy_cube(t)
        x = _t(t, requires_grad=True)
        grad_y = _t(t, seed=1, requires_grad=True)
        _, vjp_fn = t.lib.func.vjp(lambda x: cube.apply(x)[0], x)
        (gx,) = vjp_fn(grad_y)
        return [gx, _catch(lambda: gx.backward())]

    _both(torch, scenario)


def test_grad_fn_name_of_a_function(torch: Any) -> None:
    """Upstream's ``test_grad_fn_name`` expects functorch's ``FooBarGeneratedBackward``
    inside ``grad``; outside a transform both libraries call the node
    ``FooBarBackward``, which is what the engine gives everywhere."""

    def scenario(t: T) -> Any:
        class FooBar(t.lib.autograd.Function):
            @staticmethod
            def forward(x: Any) -> Any:
                return x.clone()

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                return

            @staticmethod
            def backward(ctx: Any, grad_output: Any) -> Any:
                return grad_output

        y = FooBar.apply(t.lib.tensor(1.0, requires_grad=True))
        return type(y.grad_fn).__name__ if t.lib.__name__ == "torch" else y.grad_fn.name

    _both(torch, scenario)


# -- TestVmapOfGrad --------------------------------------------------------------------------


@pytest.mark.parametrize("inplace_view", [False, True])
def test_per_sample_grads(torch: Any, inplace_view: bool) -> None:
    """``test_per_sample_grads_simple``, ``test_per_sample_grads_inplace_view``: vmap of
    grad equals the stacked per-sample grads."""

    def scenario(t: T) -> Any:
        f = t.lib.func

        def compute_loss(weight: Any, x: Any, tg: Any) -> Any:
            if inplace_view:
                y = x.mm(weight).squeeze_(0)
                return (y - tg).sum()
            return ((x @ weight - tg) ** 2).sum()

        weight = _t(t, (16, 2))
        x = _t(t, (8, 1, 16) if inplace_view else (8, 16), 1)
        tg = _t(t, (8, 2), 2)
        result = f.vmap(partial(f.grad(compute_loss), weight))(x, tg)
        expected = t.lib.stack([f.grad(compute_loss)(weight, x[i], tg[i]) for i in range(8)])
        return [result, expected]

    _both(torch, scenario)


@pytest.mark.parametrize("factory", ["new_zeros", "new_empty"])
def test_new_zeros_materializes_tensor(torch: Any, factory: str) -> None:
    """Also ``test_new_empty_materializes_tensor``."""

    def scenario(t: T) -> Any:
        def foo(y: Any, x: Any) -> Any:
            result = getattr(x, factory)((5,))
            result.copy_(y)
            return result.sum()

        return t.lib.func.vmap(t.lib.func.grad(foo))(_t(t, (3, 5), 1), _t(t, (3,)))

    _both(torch, scenario)


def test_log_softmax(torch: Any) -> None:
    def scenario(t: T) -> Any:
        f = t.lib.func
        x, v = _t(t, (3, 5)), _t(t, (5,), 1)

        def foo(x: Any, v: Any) -> Any:
            _, vjp_fn = f.vjp(partial(t.lib.log_softmax, dim=-1), x)
            return vjp_fn(v)[0]

        result = f.vmap(foo, (0, None))(x, v)
        x.requires_grad_()
        t.lib.log_softmax(x, dim=-1).backward(v.expand_as(x))
        return [result, x.grad]

    _both(torch, scenario)
