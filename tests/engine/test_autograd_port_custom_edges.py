"""Custom ``autograd.Function`` edge cases and graph-node hooks from PyTorch's
``TestAutograd`` (test/test_autograd.py), ported: ``mark_non_differentiable`` of a
returned input, ``set_materialize_grads(False)``, ``needs_input_grad`` in forward and
backward, views returned by a Function written in place, ``mark_dirty``,
``once_differentiable`` under ``create_graph``, wrong gradient counts, shapes and types,
freed saved tensors, non-Tensor inputs, ``Node.register_prehook``/``register_hook``
(and a hook that replaces a None gradient), post-accumulate-grad hooks, tensor hooks
with ``retain_grad`` in either order. Each case is written once against a library and
run with torch and the engine."""

# ruff: noqa: ANN001, ANN202, ANN205, N805, B023  (cases are probe scripts: torch style)

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.test_autograd_api import _both


def c1(lib: Any) -> Any:
    F = lib.autograd.Function

    class MyFunction(F):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_non_differentiable(x)  # input returned marked
            return x.clone(), x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + g2

    x = lib.ones(2, requires_grad=True)
    a, b = MyFunction.apply(x)
    return [a.requires_grad, b.requires_grad]


def c2(lib: Any) -> Any:
    F = lib.autograd.Function

    class Dbl(F):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return (
                (0 if g1 is None else g1 * 2) + (0 if g2 is None else g2 * 3)
                if (g1 is not None or g2 is not None)
                else None
            )

    x = lib.ones(2, requires_grad=True)
    a, b = Dbl.apply(x)
    a.sum().backward()
    return x.grad.tolist()


def c3(lib: Any) -> Any:
    F = lib.autograd.Function
    seen = []

    class F3(F):
        @staticmethod
        def forward(ctx, a, b, c):
            seen.append(ctx.needs_input_grad)
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g, g, None

    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2)
    F3.apply(a, b, 3).sum().backward()
    return [list(s) for s in seen]


def c4(lib: Any) -> Any:
    F = lib.autograd.Function

    class F4(F):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g

    x = lib.ones(2, requires_grad=True)
    y = F4.apply(x * 1)
    try:
        y.add_(1)
    except Exception as e:
        return str(e)
    return "ok"


def c5(lib: Any) -> Any:
    F = lib.autograd.Function

    class F5(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = lib.ones(2, requires_grad=True)
    y = x * 1
    z = F5.apply(y)
    r = [z is y, type(z.grad_fn).__name__, y._version]
    z.sum().backward()
    return r + [x.grad.tolist()]


def c6(lib: Any) -> Any:
    F = lib.autograd.Function

    class F6(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            return g * 2

    x = lib.ones(2, requires_grad=True)
    y = F6.apply(x)
    (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    r = [g.requires_grad, type(g.grad_fn).__name__]
    try:
        g.sum().backward()
    except Exception as e:
        r.append(str(e))
    return r


def c7(lib: Any) -> Any:
    F = lib.autograd.Function

    class F7(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    x = lib.ones(2, requires_grad=True)
    try:
        F7.apply(x).sum().backward()
    except Exception as e:
        return str(e)


def c8(lib: Any) -> Any:
    F = lib.autograd.Function

    class F8(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return lib.ones(3)

    x = lib.ones(2, requires_grad=True)
    try:
        F8.apply(x).sum().backward()
    except Exception as e:
        return str(e)


def c9(lib: Any) -> Any:
    F = lib.autograd.Function

    class F9(F):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return "x"

    x = lib.ones(2, requires_grad=True)
    try:
        F9.apply(x).sum().backward()
    except Exception as e:
        return str(e)


def c10(lib: Any) -> Any:
    F = lib.autograd.Function

    class F10(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = F10.apply(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    try:
        y.sum().backward()
    except Exception as e:
        return [x.grad.tolist(), str(e)[:60]]


def c11(lib: Any) -> Any:
    F = lib.autograd.Function

    class F11(F):
        @staticmethod
        def forward(ctx, x, y):
            return x + y, x.detach() * 0 + 1

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, ga

    x = lib.ones(2, requires_grad=True)
    a, b = F11.apply(x, 3.0)
    return [a.requires_grad, b.requires_grad, type(b.grad_fn).__name__]


def c12(lib: Any) -> Any:
    F = lib.autograd.Function

    class F12(F):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * ctx.x

    x = lib.tensor([3.0, 4.0], requires_grad=True)
    F12.apply(x).sum().backward()
    return x.grad.tolist()


def c13(lib: Any) -> Any:
    F = lib.autograd.Function

    class F13(F):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with lib.no_grad():
        x = lib.ones(2, requires_grad=True)
        y = F13.apply(x)
    return [y.requires_grad, y is x, y.grad_fn]


def c14(lib: Any) -> Any:
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    calls = []
    y.grad_fn.register_prehook(lambda go: calls.append("pre") or (go[0] * 3,))
    y.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    y.sum().backward()
    return [calls, x.grad.tolist()]


def c15(lib: Any) -> Any:
    x = lib.ones(2, requires_grad=True)
    y = x * 2

    def bad(gi, go):
        return (gi[0], gi[0])

    y.grad_fn.register_hook(bad)
    try:
        y.sum().backward()
    except Exception as e:
        return str(e)


def c16(lib: Any) -> Any:
    x = lib.ones(2, requires_grad=True)
    acc = []
    x.register_post_accumulate_grad_hook(lambda t: acc.append(t.grad.tolist()))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    return acc


def c17(lib: Any) -> Any:
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 5)
    z = y * 3
    z.sum().backward()
    return [y.grad.tolist(), x.grad.tolist()]


def c18(lib: Any) -> Any:
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 5)
    y.retain_grad()
    (y * 3).sum().backward()
    return [y.grad.tolist(), x.grad.tolist()]


CASES = {
    "mark_nd_input": c1,
    "materialize_false": c2,
    "needs_input_grad": c3,
    "view_output_inplace": c4,
    "mark_dirty": c5,
    "once_diff": c6,
    "too_many": c7,
    "bad_shape": c8,
    "bad_type": c9,
    "saved_freed": c10,
    "non_tensor_input": c11,
    "ctx_attr": c12,
    "no_grad_apply": c13,
    "node_hooks": c14,
    "node_hook_bad": c15,
    "post_acc": c16,
    "retain_then_hook": c17,
    "hook_then_retain": c18,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_custom_function_and_node_hook_case(torch: Any, case: str) -> None:
    _both(torch, lambda t: CASES[case](t.lib))
