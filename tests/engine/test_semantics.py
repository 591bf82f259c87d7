"""Autograd semantics (issue 2, DESIGN.md "Engine semantics"), each checked against
PyTorch 2.13 where PyTorch applies.

Scenarios are written once against a module ``T`` (``engine`` or ``torch``) and
run on both; ``outcome`` turns a call into (value or error message) so the two
runs can be compared, and the engine's error is then checked for its type and
stable ``code``. The one deliberate difference (a failed backward changes
nothing) is tested on its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import (
    DtypeNotDifferentiableError,
    EngineError,
    GraphFreedError,
    LeafInplaceError,
    NoGradFnError,
    NotLeafError,
    NotScalarError,
    ShapeMismatchError,
    UnusedInputError,
    VersionMismatchError,
)
from engine.registry import OPS
from engine.tensor import NONLEAF_GRAD_WARNING
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1

pytestmark = pytest.mark.torch

BOTH = pytest.mark.parametrize("T", [E, torch], ids=["engine", "torch"])


# -- helpers ----------------------------------------------------------------------


def require_ops(*names: str) -> None:
    """Fail (not skip) while an op this test needs is not registered."""
    missing = [n for n in names if n not in OPS]
    if missing:
        pytest.fail(f"ops not registered (yet): {', '.join(missing)}", pytrace=False)


def arr(t: Any) -> Any:
    """A tensor's values as numpy (None stays None)."""
    if t is None:
        return None
    return np.array(t.detach().numpy(), copy=True)


def node_name(node: Any) -> str | None:
    if node is None:
        return None
    name = getattr(node, "name", None)
    return name if isinstance(name, str) else type(node).__name__


def fn_name(t: Any) -> str | None:
    return node_name(t.grad_fn)


def dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def quiet_grad(t: Any) -> Any:
    """``t.grad`` without the non-leaf warning (tests that check it do so explicitly)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or ("error", exception): comparable across engine and torch."""
    try:
        return "ok", fn()
    except (EngineError, RuntimeError) as exc:
        return "error", exc


def both(scenario: Callable[[Any], Any]) -> tuple[Any, Any]:
    return scenario(E), scenario(torch)


# == accumulation ====================================================================


def test_gradients_accumulate_across_backward_calls() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        seen = []
        for _ in range(3):
            (x**2).sum().backward()  # a fresh graph each time
            seen.append(x.grad.detach() * 1)  # a copy: x.grad accumulates in place
        first = x.grad
        (x * 3).sum().backward()
        return seen, x.grad, first is x.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    np.testing.assert_array_equal(arr(ours[1]), [9.0, -9.0, 21.0])


def test_accumulated_grad_has_the_leaf_dtype_and_no_history() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
        (x * T.tensor(2.0)).sum().backward()
        return dtype_name(x.grad), x.grad.requires_grad, x.grad.grad_fn is None

    assert both(scenario)[0] == both(scenario)[1] == ("float64", False, True)


# == per-node freeing ================================================================

FREEING_CASES: dict[str, tuple[Callable[[Any, Any], Any], tuple[str, ...]]] = {
    "2*x": (lambda T, x: 2 * x, ()),
    "x*2": (lambda T, x: x * 2, ()),
    "x*x": (lambda T, x: x * x, ()),
    "x**2": (lambda T, x: x**2, ()),
    "exp": (lambda T, x: T.exp(x), ()),
    "log": (lambda T, x: T.log(x), ()),
    "x/2": (lambda T, x: x / 2, ()),
    "abs": (lambda T, x: T.abs(x), ()),
    "x+1": (lambda T, x: x + 1, ()),
    "x+x": (lambda T, x: x + x, ()),
    "-x": (lambda T, x: -x, ()),
    "x-2": (lambda T, x: x - 2, ()),
    "2-x": (lambda T, x: 2 - x, ()),
    "sum": (lambda T, x: x.sum(), ()),
    "sum(dim)": (lambda T, x: x.reshape(3, 1).sum(dim=1), ()),
    "mean": (lambda T, x: x.mean(), ()),
    "reshape": (lambda T, x: x.reshape(1, 3), ()),
    "view": (lambda T, x: x.view(3, 1), ()),
    "expand": (lambda T, x: x.expand(2, 3), ()),
    "getitem": (lambda T, x: x[1:], ("getitem",)),
    "t": (lambda T, x: x.reshape(3, 1).t(), ("t",)),
    "transpose": (lambda T, x: x.reshape(3, 1).transpose(0, 1), ("transpose",)),
    "unsqueeze": (lambda T, x: x.unsqueeze(0), ("unsqueeze",)),
    "squeeze": (lambda T, x: x.reshape(1, 3).squeeze(0), ("squeeze",)),
    "permute": (lambda T, x: x.reshape(1, 3).permute(1, 0), ("permute",)),
    "flatten": (lambda T, x: x.reshape(1, 3).flatten(), ("flatten",)),
    "add+neg+views": (lambda T, x: (-(x + x)).reshape(3, 1).expand(3, 2), ()),
}


@pytest.mark.parametrize("case", list(FREEING_CASES))
def test_second_backward_raises_graph_freed_exactly_where_torch_does(case: str) -> None:
    """Through nodes that saved tensors (2*x, x**2, exp) the second backward raises;
    graphs of only add/sum/neg/views can be run again, accumulating."""
    build, needs = FREEING_CASES[case]
    require_ops(*needs)

    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = build(T, x).sum()
        y.backward()
        first = arr(x.grad)
        second = outcome(y.backward)
        return first, second[0], second[1] if second[0] == "error" else None, arr(x.grad)

    ours, ref = both(scenario)
    assert_values(ours, ref)
    if ours[1] == "error":
        assert isinstance(ours[2], GraphFreedError) and ours[2].code == "graph_freed"


def test_saved_tensor_graphs_named_in_the_design_do_free() -> None:
    for case in ("2*x", "x**2", "exp"):
        build, _ = FREEING_CASES[case]
        x = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = build(E, x).sum()
        y.backward()
        with pytest.raises(GraphFreedError):
            y.backward()
    for case in ("x+1", "-x", "sum", "reshape", "view", "expand"):
        build, _ = FREEING_CASES[case]
        x = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = build(E, x).sum()
        y.backward()
        y.backward()


def test_grad_frees_the_graph_too() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = (x**2).sum()
        (g,) = T.autograd.grad(y, x)
        return g, outcome(y.backward)[1]

    assert_values(*both(scenario))


def test_retain_graph_keeps_saved_tensors_for_another_backward() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = (T.exp(x) * x).sum()
        y.backward(retain_graph=True)
        y.backward(retain_graph=True)
        y.backward()
        return x.grad, outcome(y.backward)[1]

    assert_values(*both(scenario))


# == implicit and explicit root gradients ============================================


def test_implicit_gradient_only_for_one_element_outputs() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        vec = outcome(lambda: (x * 2).backward())
        one = outcome(lambda: (x * 2).sum().reshape(1, 1).backward())  # one element, 2-d
        zero_d = outcome(lambda: (x * 2).sum().backward())
        grad_vec = outcome(lambda: T.autograd.grad(x * 2, x))
        return vec[1], one[0], zero_d[0], grad_vec[1], x.grad

    (ours, ref) = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours[0], NotScalarError) and ours[0].code == "not_scalar"
    assert str(ours[0]) == "grad can be implicitly created only for scalar outputs"
    assert isinstance(ours[3], NotScalarError)


@pytest.mark.parametrize(
    "grad_shape", [(1, 3), (3, 1), (1,), (), (2, 3)], ids=lambda s: f"shape{list(s)}"
)
def test_grad_tensors_must_match_the_output_shape_exactly(grad_shape: tuple[int, ...]) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        g = T.tensor(np.ones(grad_shape, dtype=np.float32))
        err = outcome(lambda: y.backward(g, retain_graph=True))[1]
        err_grad = outcome(lambda: T.autograd.grad(y, x, grad_outputs=g))[1]
        return err, err_grad, quiet_grad(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours[0], ShapeMismatchError) and ours[0].code == "shape_mismatch"
    assert str(ours[0]).startswith("Mismatch in shape: ")
    assert isinstance(ours[1], ShapeMismatchError)
    assert ours[2] is None


def test_grad_tensors_of_another_float_dtype_are_accepted() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).backward(T.tensor([1.0, 0.5], dtype=T.float64))
        return x.grad

    assert_values(*both(scenario))


def test_backward_on_a_tensor_without_grad_fn_raises_no_grad_fn() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0])
        return outcome(lambda: (x * 2).sum().backward())[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours, NoGradFnError) and ours.code == "no_grad_fn"


# == which leaves get .grad ==========================================================


def test_leaves_never_reached_keep_none_not_zeros() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([3.0, 4.0], requires_grad=True)  # in no graph at all
        v = T.tensor([5.0, 6.0], requires_grad=True)  # reached only through a comparison
        out = (x * 2 * (v > 5.5)).sum()
        out.backward()
        return x.grad, w.grad, v.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert ours[1] is None and ours[2] is None


def test_nonleaf_grad_is_none_with_torch_warning_text() -> None:
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match=re.escape(NONLEAF_GRAD_WARNING)):
        assert y.grad is None
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = tx * 2
    ty.sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ty.grad is None
    (torch_warning,) = [str(w.message) for w in caught]
    torch_text = torch_warning.split(" (Triggered internally")[0]
    assert torch_text == NONLEAF_GRAD_WARNING


def test_retain_grad_populates_a_nonleaf_grad() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.retain_grad()  # twice is harmless
        x.retain_grad()  # a no-op on leaves
        z = (y**2).sum()
        z.backward(retain_graph=True)
        first = y.grad.detach() * 1
        z.backward()
        return y.retains_grad, x.retains_grad, first, y.grad, x.grad, y.grad.requires_grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a retained grad is read without a warning
        x = E.tensor([1.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.sum().backward()
        assert arr(y.grad).tolist() == [1.0]


def test_retain_grad_on_a_tensor_without_grad_raises_like_torch() -> None:
    def scenario(T: Any) -> Any:
        return outcome(lambda: T.tensor([1.0]).retain_grad())[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours, EngineError), "user errors are typed EngineErrors"


# == backward(inputs=...) ============================================================


def test_backward_inputs_restricts_accumulation_to_the_given_leaves() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([3.0, 4.0], requires_grad=True)
        (x * w).sum().backward(inputs=[x])
        only_x = (x.grad, w.grad)
        (x * w).sum().backward(inputs=w)
        return only_x, x.grad, w.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert ours[0][1] is None


def test_backward_inputs_may_name_a_nonleaf() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        (y**2).sum().backward(inputs=[y])
        return quiet_grad(y), x.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    np.testing.assert_array_equal(arr(ours[0]), [4.0, 8.0, 12.0])


def test_backward_inputs_empty_is_refused_like_torch() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0], requires_grad=True)
        return outcome(lambda: (x * 2).sum().backward(inputs=[]))[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours, EngineError)


# == grad(...) ========================================================================


def test_grad_returns_gradients_without_touching_dot_grad() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([0.5, -1.0], requires_grad=True)
        gx, gw = T.autograd.grad((x**3 * w).sum(), [x, w])
        return gx, gw, x.grad, w.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert ours[2] is None and ours[3] is None


def test_grad_of_an_unused_input_raises_unless_allow_unused() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([3.0], requires_grad=True)
        y = (x * 2).sum()
        err = outcome(lambda: T.autograd.grad(y, [x, w], retain_graph=True))[1]
        allowed = T.autograd.grad(y, [x, w], retain_graph=True, allow_unused=True)
        materialized = T.autograd.grad(y, [x, w], materialize_grads=True)
        return err, allowed, materialized

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours[0], UnusedInputError) and ours[0].code == "unused_input"
    assert ours[1][1] is None


def test_higher_order_gradients_of_x_cubed() -> None:
    """x**3 -> 3x**2 -> 6x -> 6 with create_graph=True."""

    def scenario(T: Any) -> Any:
        x = T.tensor([2.0, -1.0], requires_grad=True)
        (g1,) = T.autograd.grad((x**3).sum(), x, create_graph=True)
        (g2,) = T.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = T.autograd.grad(g2.sum(), x)
        flags = [(g.requires_grad, fn_name(g)) for g in (g1, g2, g3)]
        return g1, g2, g3, flags

    ours, ref = both(scenario)
    assert_values(ours, ref)
    np.testing.assert_array_equal(arr(ours[0]), [12.0, 3.0])
    np.testing.assert_array_equal(arr(ours[1]), [12.0, -6.0])
    np.testing.assert_array_equal(arr(ours[2]), [6.0, 6.0])


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_with_create_graph_gives_a_differentiable_grad() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([2.0], requires_grad=True)
        (x**3).sum().backward(create_graph=True)
        g = x.grad
        first = (g.requires_grad, g.detach() * 1)
        x.grad = None
        g.sum().backward()
        return first, x.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    np.testing.assert_array_equal(arr(ours[1]), [12.0])


def test_retain_graph_defaults_to_create_graph() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = (x**3).sum()
        T.autograd.grad(y, x, create_graph=True)
        again = outcome(lambda: T.autograd.grad(y, x))  # retained by create_graph
        third = outcome(lambda: T.autograd.grad(y, x))  # freed by the plain call
        return again[0], third[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert ours[0] == "ok" and isinstance(ours[1], GraphFreedError)


# == grad mode ======================================================================


@BOTH
def test_no_grad_enable_grad_and_set_grad_enabled_nest(T: Any) -> None:
    x = T.tensor([1.0], requires_grad=True)
    with T.no_grad():
        assert not (x * 2).requires_grad
        assert not T.is_grad_enabled()
        with T.enable_grad():
            assert (x * 2).requires_grad
        with T.set_grad_enabled(True):
            assert (x * 2).grad_fn is not None
        assert not (x * 2).requires_grad
    assert T.is_grad_enabled()

    @T.no_grad()
    def infer() -> Any:
        return x * 2

    assert not infer().requires_grad
    assert (x * 2).requires_grad


def test_grad_mode_is_thread_local() -> None:
    x = E.tensor([1.0], requires_grad=True)
    inside, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def worker() -> None:
        with E.no_grad():
            seen.append((x * 2).requires_grad)
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=worker)
    thread.start()
    assert inside.wait(5)
    try:
        assert E.is_grad_enabled()
        assert (x * 2).requires_grad  # the other thread's no_grad does not leak here
    finally:
        release.set()
        thread.join()
    assert seen == [False]


def test_grad_mode_is_context_local() -> None:
    x = E.tensor([1.0], requires_grad=True)
    ctx = contextvars.copy_context()
    ctx.run(lambda: E.set_grad_enabled(False).__enter__())  # left disabled in ctx only
    assert ctx.run(E.is_grad_enabled) is False
    assert ctx.run(lambda: (x * 2).requires_grad) is False
    assert E.is_grad_enabled() and (x * 2).requires_grad


def test_grad_mode_is_task_local_under_asyncio() -> None:
    x = E.tensor([1.0], requires_grad=True)

    async def inference(entered: asyncio.Event, done: asyncio.Event) -> bool:
        with E.no_grad():
            entered.set()
            await done.wait()
            return (x * 2).requires_grad

    async def training(entered: asyncio.Event, done: asyncio.Event) -> bool:
        await entered.wait()
        try:
            return (x * 2).requires_grad
        finally:
            done.set()

    async def main() -> tuple[bool, bool]:
        entered, done = asyncio.Event(), asyncio.Event()
        a, b = await asyncio.gather(inference(entered, done), training(entered, done))
        return a, b

    assert asyncio.run(main()) == (False, True)


# == detach, requires_grad_, in-place ==================================================


def test_detach_shares_data_and_version_counter() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        d = x.detach()
        flags = (d.requires_grad, d.is_leaf, d.grad_fn is None)
        d.add_(1)  # writes x's memory too
        return flags, arr(x), x._version, d._version

    ours, ref = both(scenario)
    assert_values(ours, ref)
    x = E.tensor([1.0, 2.0], requires_grad=True)
    assert np.shares_memory(x.detach().data, x.data)


def test_writing_a_saved_leaf_through_detach_raises_version_mismatch() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
        y = x * x
        x.detach().add_(1)
        return outcome(lambda: y.sum().backward())[1]

    ours, ref = both(scenario)
    assert isinstance(ours, VersionMismatchError) and ours.code == "version_mismatch"
    assert _version_prefix(ours) == _version_prefix(ref)


def test_requires_grad_only_on_leaves() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0], requires_grad=True)
        y = x * 2
        off = outcome(lambda: y.requires_grad_(False))[1]
        on = outcome(lambda: y.requires_grad_(True))[0]  # already true: allowed
        leaf = T.tensor([1.0])
        leaf.requires_grad_()
        leaf.requires_grad = False
        return off, on, leaf.requires_grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours[0], NotLeafError)


def test_requires_grad_on_integer_tensors_raises_dtype_not_differentiable() -> None:
    def scenario(T: Any) -> Any:
        method = outcome(lambda: T.tensor([1, 2]).requires_grad_())[1]
        factory = outcome(lambda: T.tensor([1, 2], requires_grad=True))[1]
        boolean = outcome(lambda: T.tensor([True]).requires_grad_())[1]
        return method, factory, boolean

    ours, ref = both(scenario)
    for err in ours:
        assert isinstance(err, DtypeNotDifferentiableError)
        assert err.code == "dtype_not_differentiable"
    assert_values(ours, ref)


INPLACE = {
    "add_": lambda x: x.add_(1),
    "mul_": lambda x: x.mul_(2),
    "zero_": lambda x: x.zero_(),
    "+=": lambda x: x.__iadd__(1),
    "-=": lambda x: x.__isub__(1),
}


@pytest.mark.parametrize("op", list(INPLACE))
def test_inplace_on_a_leaf_requiring_grad_raises_leaf_inplace(op: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        err = outcome(lambda: INPLACE[op](x))[1]
        return err, arr(x), x._version

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours[0], LeafInplaceError) and ours[0].code == "leaf_inplace"


@pytest.mark.parametrize("op", list(INPLACE))
def test_inplace_on_a_leaf_under_no_grad_works_and_bumps_version(op: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        with T.no_grad():
            y = INPLACE[op](x)
        return arr(x), x._version, y is x, x.is_leaf, x.requires_grad, x.grad_fn is None

    assert_values(*both(scenario))


def test_sgd_update_under_no_grad_keeps_the_leaf() -> None:
    def scenario(T: Any) -> Any:
        w = T.tensor([1.0, -2.0], requires_grad=True)
        (w**2).sum().backward()
        with T.no_grad():
            w -= 0.1 * w.grad
        w.grad.zero_()
        (w**2).sum().backward()
        return w, w.grad, w._version, w.is_leaf

    assert_values(*both(scenario))


def _version_prefix(err: BaseException) -> str:
    """PyTorch's version-counter message up to its hint (the hint text may differ)."""
    return str(err).split(" Hint:")[0]


VERSION_CASES: dict[str, Callable[[Any], Any]] = {
    "saved input of pow": lambda T: _modify_saved_input(T),
    "saved result of exp": lambda T: _modify_saved_result(T),
    "saved result, then rebased": lambda T: _modify_result_twice(T),
    "float64 saved input of mul": lambda T: _modify_saved_input(T, T.float64),
}


def _modify_saved_input(T: Any, dtype: Any = None) -> Any:
    x = T.tensor([1.0, 2.0, 3.0], dtype=dtype or T.float32, requires_grad=True)
    y = x * 2
    z = y**2  # saves y
    y.add_(1)
    return outcome(lambda: z.sum().backward())[1], x.grad


def _modify_saved_result(T: Any) -> Any:
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = T.exp(x)  # saves its result
    y.add_(1)
    return outcome(lambda: y.sum().backward())[1], x.grad


def _modify_result_twice(T: Any) -> Any:
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = T.exp(x * 2)
    z.mul_(2)
    return outcome(lambda: z.sum().backward())[1], x.grad


@pytest.mark.parametrize("case", list(VERSION_CASES))
def test_modified_saved_tensor_raises_version_mismatch(case: str) -> None:
    ours, ref = both(VERSION_CASES[case])
    assert isinstance(ours[0], VersionMismatchError) and ours[0].code == "version_mismatch"
    assert isinstance(ref[0], RuntimeError)
    assert _version_prefix(ours[0]) == _version_prefix(ref[0])
    assert ours[1] is None


VIEWS: dict[str, Callable[[Any], Any]] = {
    "view": lambda t: t.view(3, 1),
    "reshape": lambda t: t.reshape(1, 3),
    "slice": lambda t: t[1:],
    "unsqueeze": lambda t: t.unsqueeze(0),
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_inplace_on_a_view_of_a_leaf_raises_leaf_inplace(view: str) -> None:
    """A view shares its base's memory: writing it writes the leaf."""

    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        err = outcome(lambda: VIEWS[view](x).mul_(2))[1]
        return err, arr(x), x._version

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours[0], LeafInplaceError)


@pytest.mark.parametrize("view", list(VIEWS))
def test_views_share_the_version_counter_with_their_base(view: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with T.no_grad():
            v = VIEWS[view](x)
            v.mul_(2)
        return arr(x), x._version, v._version

    assert_values(*both(scenario))


@pytest.mark.parametrize("view", list(VIEWS))
def test_writing_a_saved_tensor_through_a_view_raises_version_mismatch(view: str) -> None:
    """Otherwise backward silently uses the modified values."""

    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        z = y**2  # saves y
        VIEWS[view](y).mul_(2)
        return outcome(lambda: z.sum().backward())[1], x.grad

    ours, ref = both(scenario)
    assert isinstance(ref[0], RuntimeError) and ref[1] is None
    assert isinstance(ours[0], VersionMismatchError), f"engine gave {ours[0]!r}"
    assert str(ours[0]).startswith(
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation"
    )
    assert ours[1] is None


def test_inplace_on_a_nonleaf_rebases_its_history() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1  # MulBackward0 with a number saves nothing of y
        y.mul_(3)
        y.sum().backward()
        return fn_name(y), y._version, x.grad

    assert_values(*both(scenario))


# == ties and kinks ===================================================================


def _ties(T: Any, case: str) -> Any:
    x = T.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    weights = T.tensor([1.0, 2.0])
    if case == "max":
        out = x.max()
    elif case == "min":
        x = T.tensor([[0.0, 3.0, 0.0], [2.0, 2.0, 9.0]], requires_grad=True)
        out = x.min()
    elif case == "amax(dim=1)":
        out = x.amax(dim=1).sum()
    elif case == "amin(dim=1)":
        out = (x.amin(dim=1) * weights).sum()
    elif case == "amax()":
        out = x.amax()
    elif case == "max(dim=1)":
        values, indices = x.max(dim=1)
        return values, indices, _grad_of(values.sum(), x)
    elif case == "min(dim=0)":
        values, indices = x.min(dim=0)
        return values, indices, _grad_of((values * T.tensor([1.0, 2.0, 3.0])).sum(), x)
    else:
        raise AssertionError(case)
    return out, _grad_of(out, x)


def _grad_of(out: Any, x: Any) -> Any:
    out.backward()
    return x.grad


TIE_OPS = {
    "max": ("max",),
    "min": ("min",),
    "amax(dim=1)": ("amax",),
    "amin(dim=1)": ("amin",),
    "amax()": ("amax",),
    "max(dim=1)": ("max",),
    "min(dim=0)": ("min",),
}


@pytest.mark.parametrize("case", list(TIE_OPS))
def test_ties_split_as_torch_splits_them(case: str) -> None:
    """max/min/amax spread the gradient evenly over ties; max(dim) sends it to the
    returned index."""
    require_ops(*TIE_OPS[case])
    assert_values(_ties(E, case), _ties(torch, case))


def test_max_of_ties_spreads_evenly() -> None:
    require_ops("max")
    x = E.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(arr(x.grad), [0.0, 0.5, 0.5, 0.0])


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_and_minimum_halve_the_gradient_on_ties(op: str) -> None:
    require_ops(op)

    def scenario(T: Any) -> Any:
        a = T.tensor([1.0, 2.0, 5.0], requires_grad=True)
        b = T.tensor([1.0, 3.0, 4.0], requires_grad=True)
        getattr(T, op)(a, b).sum().backward()
        return a.grad, b.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert arr(ours[0])[0] == 0.5 and arr(ours[1])[0] == 0.5


KINKS: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = {
    "relu at 0": (("relu",), lambda T, x: T.relu(x)),
    "abs at 0": (("abs",), lambda T, x: T.abs(x)),
    "clamp(0, 1) at both bounds": (("clamp",), lambda T, x: T.clamp(x, 0.0, 1.0)),
    "clamp(min=0)": (("clamp",), lambda T, x: T.clamp(x, min=0.0)),
    "clamp(max=1)": (("clamp",), lambda T, x: x.clamp(max=1.0)),
}


@pytest.mark.parametrize("case", list(KINKS))
def test_kinks_take_torch_subgradients(case: str) -> None:
    """relu'(0)=0, abs'(0)=0, clamp passes the gradient at its boundaries."""
    needs, build = KINKS[case]
    require_ops(*needs)

    def scenario(T: Any) -> Any:
        x = T.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], requires_grad=True)
        y = build(T, x)
        y.sum().backward()
        return y, x.grad, fn_name(y)

    ours, ref = both(scenario)
    assert_values(ours, ref)
    if case.startswith(("relu", "abs")):
        assert arr(ours[1])[1] == 0.0
    if case.startswith("clamp(0, 1)"):
        np.testing.assert_array_equal(arr(ours[1]), [0.0, 1.0, 1.0, 1.0, 0.0])


# == type promotion ===================================================================

PROMOTION: dict[str, Callable[[Any], Any]] = {
    "float32 * float64 0-d": lambda T: (
        T.tensor([1.0, 2.0], requires_grad=True),
        T.tensor(3.0, dtype=T.float64, requires_grad=True),
        lambda a, b: a * b,
    ),
    "float32 * python float": lambda T: (
        T.tensor([1.0, 2.0], requires_grad=True),
        2.5,
        lambda a, b: a * b,
    ),
    "float64 0-d + float32": lambda T: (
        T.tensor(3.0, dtype=T.float64, requires_grad=True),
        T.tensor([1.0, 2.0], requires_grad=True),
        lambda a, b: a + b,
    ),
    "float32 + float64 1-d": lambda T: (
        T.tensor([1.0, 2.0], requires_grad=True),
        T.tensor([0.5, 0.25], dtype=T.float64, requires_grad=True),
        lambda a, b: a + b,
    ),
    "int64 * 2.5": lambda T: (T.tensor([1, 2, 3]), 2.5, lambda a, b: a * b),
    "int64 * float32 0-d": lambda T: (
        T.tensor([1, 2, 3]),
        T.tensor(0.5, requires_grad=True),
        lambda a, b: a * b,
    ),
    "int64 + 2": lambda T: (T.tensor([1, 2, 3]), 2, lambda a, b: a + b),
    "int64 / 2": lambda T: (T.tensor([1, 2, 3]), 2, lambda a, b: a / b),
    "float32 ** float64 0-d": lambda T: (
        T.tensor([1.0, 2.0], requires_grad=True),
        T.tensor(2.0, dtype=T.float64, requires_grad=True),
        lambda a, b: a**b,
    ),
    "python float - float64": lambda T: (
        1.5,
        T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True),
        lambda a, b: a - b,
    ),
}


@pytest.mark.parametrize("case", list(PROMOTION))
def test_type_promotion_and_grad_dtypes_match_torch(case: str) -> None:
    def scenario(T: Any) -> Any:
        a, b, f = PROMOTION[case](T)
        out = f(a, b)
        result = (dtype_name(out), out, out.requires_grad)
        if out.requires_grad:
            out.sum().backward()
        grads = [
            (dtype_name(t.grad), t.grad) if getattr(t, "grad", None) is not None else None
            for t in (a, b)
        ]
        return result, grads

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_promotion_named_in_the_issue() -> None:
    x = E.tensor([1.0, 2.0])
    assert (x * E.tensor(2.0, dtype=E.float64)).dtype == E.float32
    assert (x * 2.0).dtype == E.float32
    assert (E.tensor([1, 2]) * 2.5).dtype == E.float32
    leaf = E.tensor(2.0, dtype=E.float64, requires_grad=True)
    (x * leaf).sum().backward()
    assert leaf.grad.dtype == E.float64


# == a failed backward changes nothing (our deliberate difference) ====================


def test_failed_backward_changes_nothing() -> None:
    x = E.tensor([1.0, 2.0], requires_grad=True)
    w = E.tensor([3.0, 4.0], requires_grad=True)
    p = x**2
    p.sum().backward()  # frees PowBackward0 (the p branch)
    q = w * 3
    q.retain_grad()
    hooked: list[Any] = []
    q.register_hook(lambda g: hooked.append(g))
    loss = p.sum() + q.sum()
    with pytest.raises(GraphFreedError) as info:
        loss.backward()
    assert info.value.code == "graph_freed"
    np.testing.assert_array_equal(arr(x.grad), [2.0, 4.0])  # unchanged
    assert w.grad is None  # the q branch accumulated nothing
    assert q.grad is None
    q.sum().backward()  # the q branch was not freed by the failed call
    np.testing.assert_array_equal(arr(w.grad), [3.0, 3.0])


def test_failed_backward_after_version_error_changes_nothing() -> None:
    x = E.tensor([1.0, 2.0], requires_grad=True)
    w = E.tensor([3.0, 4.0], requires_grad=True)
    y = x * 2
    z = y**2
    y.add_(1)
    loss = z.sum() + (w * w).sum()
    with pytest.raises(VersionMismatchError):
        loss.backward()
    assert x.grad is None and w.grad is None
    (w * w).sum().backward()
    np.testing.assert_array_equal(arr(w.grad), [6.0, 8.0])


def test_torch_raises_on_the_same_partly_freed_graph() -> None:
    """The same scenario in PyTorch raises the same error (it may accumulate part)."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    p = x**2
    p.sum().backward()
    loss = p.sum() + (w * 3).sum()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


# == deep graphs ======================================================================


def test_100000_op_chain_backpropagates_without_recursion() -> None:
    """The tutorial's ``while y.norm() < 1000: y = y * 2`` taken far (a tiny factor
    instead of 2 so 100,000 steps do not overflow)."""
    n, c = 100_000, 1.00001
    x = E.tensor([1.0, 0.5], dtype=E.float64, requires_grad=True)
    y = x * 1.0
    for _ in range(n):
        y = y * c
    y.backward(E.tensor([1.0, 1.0], dtype=E.float64))
    expected = np.float64(1.0)
    for _ in range(n):
        expected *= c  # the backward multiplies by c in the same order
    np.testing.assert_allclose(arr(x.grad), [expected, expected], rtol=1e-12)
    np.testing.assert_allclose(expected, np.exp(n * np.log(c)), rtol=1e-9)
    del y  # tearing down a 100,000-node graph must not overflow the C stack either


def test_deep_chain_with_grad_and_retain_graph() -> None:
    x = E.tensor(1.0, dtype=E.float64, requires_grad=True)
    y = x
    for i in range(30_000):
        y = y + 1e-6 if i % 2 else y * 1.000001
    (g,) = E.grad(y, x, retain_graph=True)
    (g2,) = E.grad(y, x)
    assert float(g.item()) == float(g2.item()) > 1.0


# == hooks ============================================================================


def test_register_hook_on_a_nonleaf_can_replace_the_gradient() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = x**2
        seen: list[Any] = []
        y.register_hook(lambda g: seen.append(g.detach() * 1))
        y.register_hook(lambda g: g * 10)
        (y * 3).sum().backward()
        return seen, x.grad

    ours, ref = both(scenario)
    assert_values(ours, ref)
    np.testing.assert_array_equal(arr(ours[1]), [60.0, 120.0])


def test_register_hook_on_a_leaf_sees_and_replaces_the_accumulated_gradient() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        seen: list[Any] = []
        x.register_hook(lambda g: seen.append(g.detach() * 1))
        x.register_hook(lambda g: g + 1)
        (x * 2).sum().backward()
        (x * 2).sum().backward()
        return seen, x.grad

    assert_values(*both(scenario))


def test_register_hook_returns_a_removable_handle() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        handle = x.register_hook(lambda g: g * 100)
        handle.remove()
        (x * 2).sum().backward()
        return x.grad

    assert_values(*both(scenario))


def test_register_hook_needs_requires_grad() -> None:
    def scenario(T: Any) -> Any:
        return outcome(lambda: T.tensor([1.0]).register_hook(lambda g: g))[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours, EngineError), "user errors are typed EngineErrors"


# == graph structure ==================================================================

EDGE_CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "2*x": lambda T, x, w: 2 * x,
    "x*2": lambda T, x, w: x * 2,
    "2+x": lambda T, x, w: 2 + x,
    "2-x": lambda T, x, w: 2 - x,
    "x-2": lambda T, x, w: x - 2,
    "2/x": lambda T, x, w: 2 / x,
    "x*w": lambda T, x, w: x * w,
    "c*x (tensor constant)": lambda T, x, w: T.tensor([2.0, 3.0]) * x,
    "2**x": lambda T, x, w: 2**x,
    "x**w": lambda T, x, w: x**w,
}


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_next_functions_match_torch(case: str) -> None:
    """grad_fn names and the order of their edges (the /graph endpoint shows them)."""

    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        w = T.tensor([0.5, 1.5], requires_grad=True)
        y = EDGE_CASES[case](T, x, w)

        def walk(node: Any) -> Any:
            if node is None:
                return None
            return (node_name(node), [walk(n) for n, _ in node.next_functions])

        return walk(y.grad_fn)

    assert_values(*both(scenario))


def test_accumulate_grad_node_points_at_its_leaf() -> None:
    x = E.tensor([1.0], requires_grad=True)
    y = x * x
    nodes = [n for n, _ in y.grad_fn.next_functions]
    assert [node_name(n) for n in nodes] == ["AccumulateGrad", "AccumulateGrad"]
    assert all(n.variable is x for n in nodes)


# == repr =============================================================================

REPRS: dict[str, Callable[[Any], Any]] = {
    "leaf requires_grad": lambda T: T.tensor([[-0.6955]], requires_grad=True),
    "grad_fn": lambda T: T.tensor([1.0, 2.0], requires_grad=True) ** 2,
    "0-d": lambda T: T.tensor(3.0),
    "0-d negative": lambda T: T.tensor(-36.0),
    "0-d fraction": lambda T: T.tensor(5.643412),
    "0-d grad_fn": lambda T: (T.tensor([1.0, 2.0], requires_grad=True) * 3).mean(),
    "integral floats": lambda T: T.tensor([6.0, 192.0]),
    "integral floats 2": lambda T: T.tensor([12.0, 384.0]),
    "fixed 2x2": lambda T: T.tensor([[152.5527, 38.8946], [0.0322, 0.1349]]),
    "mixed sign 2x2": lambda T: T.tensor([[-2.5212, 1.2730], [0.0366, -0.0750]]),
    "scientific": lambda T: T.tensor([0.3, 3.0, 0.0003]),
    "scientific 2": lambda T: T.tensor([1.6667e-02, 1.4286e-01, 1.2500e-05]),
    "scientific 3": lambda T: T.tensor([102.4, 1024.0, 0.1024]),
    "large": lambda T: T.tensor([1e10, 1.0]),
    "inf": lambda T: T.tensor([float("inf")]),
    "-inf with grad_fn": lambda T: T.log(T.tensor([0.0], requires_grad=True)),
    "nan": lambda T: T.tensor([float("nan"), 1.0]),
    "zeros": lambda T: T.tensor([[0.0, 0.0], [0.0, 0.0]]),
    "one-hot row": lambda T: T.tensor([[2.0, 0.0, 0.0, 0.0]]),
    "3-d": lambda T: T.tensor([[[1.0, 2.0], [3.0, 4.0]]]),
    "float64": lambda T: T.tensor([1.0, 2.0], dtype=T.float64),
    "float64 0-d requires_grad": lambda T: T.tensor(2.5, dtype=T.float64, requires_grad=True),
    "int64": lambda T: T.tensor([1, 2, 3]),
    "int64 negative": lambda T: T.tensor([[-1, 20], [3, 4]]),
    "bool": lambda T: T.tensor([True, False]),
    "empty": lambda T: T.tensor([]),
    "empty float64": lambda T: T.tensor([], dtype=T.float64),
    "empty 2-d": lambda T: T.tensor(np.zeros((2, 0), dtype=np.float32)),
}


@pytest.mark.parametrize("case", list(REPRS))
def test_repr_matches_torch(case: str) -> None:
    assert repr(REPRS[case](E)) == repr(REPRS[case](torch))
