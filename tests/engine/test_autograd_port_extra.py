"""More of PyTorch's ``TestAutograd`` (test/test_autograd.py), ported as in
``test_autograd_port``: each case written once against a namespace, run with torch
and with the engine (``_both``); values, gradients and error class + message agree.
Issue 15 listed these as still differing."""

from __future__ import annotations

import copy
import pickle
from types import SimpleNamespace
from typing import Any

import pytest

from tests.engine.test_autograd_api import _both

T = SimpleNamespace


@pytest.mark.parametrize("reads", [1, 2])
def test_clear_saved_tensors_on_access(torch: Any, reads: int) -> None:
    """With ``clear_saved_tensors_on_access`` the node drops its saved tensors when
    backward reads them: a second read (in the same backward, or a second backward
    with ``retain_graph``) is torch's RuntimeError."""

    def scenario(t: T) -> Any:
        class Mul2(t.lib.autograd.Function):
            clear_saved_tensors_on_access = True

            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                for _ in range(reads):
                    (x,) = ctx.saved_tensors
                return 2 * g * x

        x = t.lib.tensor([1.0, 3.0], requires_grad=True)
        y = Mul2.apply(x).sum()
        y.backward(retain_graph=True)
        first = x.grad.clone()
        y.backward()  # the saved tensor is gone: torch refuses
        return [first, x.grad]

    _both(torch, scenario)


def test_clear_saved_tensors_on_access_off_by_default(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class Mul2(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                (x2,) = ctx.saved_tensors
                return g * (x + x2)

        x = t.lib.tensor([1.0, 3.0], requires_grad=True)
        y = Mul2.apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return [Mul2.clear_saved_tensors_on_access, x.grad]

    _both(torch, scenario)


@pytest.mark.parametrize(
    "variant", ["view", "view_inplace", "two_views", "dirty_returned", "dirty_and_view"]
)
def test_custom_function_outputs_view_of_intermediate_or_dirty_input(
    torch: Any, variant: str
) -> None:
    """A custom Function returning a view of a tensor made inside forward (a view
    of an intermediate: an in-place write on it is refused), or an input it marked
    dirty and returns (alone or with a view of it)."""

    def scenario(t: T) -> Any:
        class F(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                if variant.startswith("dirty"):
                    x.mul_(2)
                    ctx.mark_dirty(x)
                    return x if variant == "dirty_returned" else (x, x[:1])
                tmp = x * 2
                return (tmp[:1], tmp[1:]) if variant == "two_views" else tmp[:1]

            @staticmethod
            def backward(ctx: Any, *g: Any) -> Any:
                if variant.startswith("dirty"):
                    return g[0] * 2
                return t.lib.cat([g[0] * 2, g[0] * 0])  # wrong size for two_views

        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        inp = x.clone() if variant.startswith("dirty") else x
        out = F.apply(inp)
        first = out[0] if isinstance(out, tuple) else out
        facts = [first._base is not None, type(first.grad_fn).__name__, inp.grad_fn is not None]
        if variant == "view_inplace":
            first.mul_(3)
        total = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
        total.backward()
        return [facts, first, x.grad]

    _both(torch, scenario)


@pytest.mark.parametrize("value", ["int_tensor", "list", "float", "other_shape", "float64"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_set_data_checks(torch: Any, value: str, requires_grad: bool) -> None:
    """``x.data = y``: ``y`` must be a tensor (TypeError), and floating when ``x``
    requires grad; another shape or dtype is taken as is."""

    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=requires_grad)
        new = {
            "int_tensor": lambda: t.lib.tensor([1, 2]),
            "list": lambda: [1.0, 2.0],
            "float": lambda: 3.0,
            "other_shape": lambda: t.lib.ones(3),
            "float64": lambda: t.lib.ones(2, dtype=t.float64),
        }[value]()
        x.data = new
        return [x.detach(), x.requires_grad, x.is_leaf]

    _both(torch, scenario)


@pytest.mark.parametrize("kind", ["leaf", "leaf_with_grad", "non_leaf", "view", "ints"])
def test_pickle_tensor(torch: Any, kind: str) -> None:
    """pickle keeps values, dtype and requires_grad; the copy is a leaf without .grad,
    a non-leaf's too; a view comes back as a tensor of its own."""

    def scenario(t: T) -> Any:
        x = t.lib.tensor([1.0, 2.0, 3.0], requires_grad=kind != "ints")
        if kind == "leaf_with_grad":
            (x * x).sum().backward()
        src = {"non_leaf": lambda: x * 2, "view": lambda: x.detach()[1:]}.get(kind, lambda: x)()
        if kind == "ints":
            src = t.lib.tensor([1, 2])
        got = pickle.loads(pickle.dumps(src))
        return [got.detach(), got.requires_grad, got.is_leaf, got.grad, got._base is None]

    _both(torch, scenario)


@pytest.mark.parametrize("leaf", [True, False])
def test_deepcopy_tensor(torch: Any, leaf: bool) -> None:
    """deepcopy of a leaf copies values and .grad; of a non-leaf, torch's RuntimeError."""

    def scenario(t: T) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        got = copy.deepcopy(x if leaf else x * 2)
        return [got.detach(), got.grad, got.grad is x.grad, got.requires_grad]

    _both(torch, scenario)


@pytest.mark.parametrize("kind", ["leaf", "non_leaf", "detached"])
def test_numpy_on_tensor_that_requires_grad(torch: Any, kind: str) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.tensor([1.0, 2.0], requires_grad=True)
        src = {"leaf": x, "non_leaf": x * 2, "detached": x.detach()}[kind]
        return src.numpy().tolist()

    _both(torch, scenario)


@pytest.mark.parametrize("case", ["good", "not_multiplied", "raises_on_zero", "two_outputs"])
@pytest.mark.parametrize("undefined", [True, False])
def test_gradcheck_zero_and_undefined_output_grads(torch: Any, case: str, undefined: bool) -> None:
    """gradcheck's checks after the Jacobians: zero grad_outputs must give zero grads
    ("backward not multiplied by grad_output"), and ``check_undefined_grad`` (the engine
    has no undefined tensors: zeros stand for them) must not break a good function."""

    def scenario(t: T) -> Any:
        class Fn(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return (x * 2, x.sin()) if case == "two_outputs" else x * 2

            @staticmethod
            def backward(ctx: Any, g: Any, *more: Any) -> Any:
                if case == "raises_on_zero" and not g.any():
                    raise RuntimeError("backward of zeros")
                extra = (g == 0).all().double() if case == "not_multiplied" else 0.0
                return g * 2 + extra

        class Two(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x * 2, x.sin()

            @staticmethod
            def backward(ctx: Any, g1: Any, g2: Any) -> Any:
                (x,) = ctx.saved_tensors
                return g1 * 2 + g2 * x.cos()

        x = t.lib.tensor([0.5, -1.0], dtype=t.float64, requires_grad=True)
        fn = Two.apply if case == "two_outputs" else Fn.apply
        check = getattr(t.lib.autograd, "gradcheck", None) or t.lib.gradcheck
        try:
            return check(fn, (x,), check_undefined_grad=undefined)
        except Exception as exc:  # noqa: BLE001 - GradcheckError is torch's RuntimeError
            return [type(exc).__name__, str(exc)]

    _both(torch, scenario)


@pytest.mark.parametrize("dtypes", [True, False])
def test_gradcheck_grad_dtypes(torch: Any, dtypes: bool) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.tensor([0.5, -1.0], dtype=t.float64, requires_grad=True)
        check = getattr(t.lib.autograd, "gradcheck", None) or t.lib.gradcheck
        return check(lambda a: a.exp() * 2, (x,), check_grad_dtypes=dtypes)

    _both(torch, scenario)
