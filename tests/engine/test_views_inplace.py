"""Views and in-place writes with PyTorch 2.13's semantics (DESIGN.md "Views and
in-place writes"): CopySlices, lazy view regeneration (AsStridedBackward0), the
refusals, hooks and retain_grad across an in-place op, ``detach_``, ``__setitem__``
and which saved tensors an in-place write invalidates.

Each scenario is written once against a module ``T`` (``engine`` or ``torch``) and
compared: values, gradients, ``grad_fn`` names (and of their ``next_functions``),
``_version`` and error messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import EngineError, LeafInplaceError, VersionMismatchError
from tests.engine.test_semantics import arr, both, fn_name, node_name, outcome
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()

pytestmark = pytest.mark.torch


def graph(t: Any) -> tuple[Any, ...]:
    """``t``'s grad_fn name and the names of its next functions."""
    fn = t.grad_fn
    if fn is None:
        return (None,)
    return (node_name(fn), tuple(node_name(n) for n, _ in fn.next_functions))


def grads(*ts: Any) -> list[Any]:
    out = []
    for t in ts:
        out.append(None if t.grad is None else arr(t.grad))
        t.grad = None
    return out


# -- a view taken before an in-place write sees the new history ---------------------

VIEWS: dict[str, Callable[[Any], Any]] = {
    "slice": lambda b: b[:1],
    "select": lambda b: b[1],
    "slice step": lambda b: b[::2],
    "view": lambda b: b.view(2, 2),
    "reshape": lambda b: b.reshape(4, 1),
    "unsqueeze": lambda b: b.unsqueeze(0),
    "squeeze": lambda b: b.unsqueeze(1).squeeze(1),
    "expand": lambda b: b[:1].expand(3),
    "permute": lambda b: b.view(2, 2).permute(1, 0),
    "transpose": lambda b: b.view(2, 2).transpose(0, 1),
    "t": lambda b: b.view(2, 2).t(),
    "split": lambda b: b.split(2)[1],
    "view of a view": lambda b: b.view(2, 2)[1][:1],
    "alias": lambda b: b[...],
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_taken_before_an_inplace_write_to_its_base(name: str) -> None:
    """The issue's bug: the stale view backpropagated its old history."""

    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = x.clone()
        v = VIEWS[name](base)
        before = fn_name(v)
        base.mul_(2)
        status, after = outcome(lambda: graph(v))
        if status == "error":  # a multi-output view (split) refuses, as in PyTorch
            return before, after
        w = T.arange(1.0, v.numel() + 1).reshape(v.shape)
        (v * w).sum().backward()
        return before, after, v._version, base._version, arr(v), grads(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert name == "split" or ours[1][0] == "AsStridedBackward0"


def test_the_issue_example() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        base = x.clone()
        v = base[:1]
        base.mul_(2)
        v.sum().backward()
        return grads(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)
    np.testing.assert_array_equal(ours[0], [2.0, 0.0])


INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "mul_ number": lambda v, w: v.mul_(3),
    "mul_ tensor": lambda v, w: v.mul_(w),
    "add_ tensor": lambda v, w: v.add_(w),
    "div_": lambda v, w: v.div_(w),
    "pow_": lambda v, w: v.pow_(2),
    "exp_": lambda v, w: v.exp_(),
    "sigmoid_": lambda v, w: v.sigmoid_(),
    "clamp_": lambda v, w: v.clamp_(min=1.5),
    "copy_": lambda v, w: v.copy_(w),
    "fill_ number": lambda v, w: v.fill_(7.0),
    "fill_ tensor": lambda v, w: v.fill_(w.sum()),
    "zero_": lambda v, w: v.zero_(),
}
WRITTEN: dict[str, Callable[[Any], Any]] = {
    "slice": lambda b: b[1:3],
    "select row": lambda b: b.view(2, 2)[1],
    "column": lambda b: b.view(2, 2)[:, 0],
    "transpose": lambda b: b.view(2, 2).t()[0],
    "view of a view": lambda b: b.view(2, 2)[1][:1],
}


@pytest.mark.parametrize("op", list(INPLACE))
@pytest.mark.parametrize("view", list(WRITTEN))
def test_inplace_through_a_view_records_copyslices(view: str, op: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = x.clone()
        v = WRITTEN[view](base)
        w = T.full(v.shape, 2.5, requires_grad=True)
        INPLACE[op](v, w)
        seen = graph(base), graph(v), v._version, base._version
        weights = T.tensor([1.0, 10.0, 100.0, 1000.0])
        ((base * weights).sum() + (v * v).sum()).backward()
        return seen, arr(base), arr(v), grads(x, w)

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert ours[0][0][0] == "CopySlices"


def test_copyslices_double_backward() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = x * 1
        base[1:].mul_(x[1:])
        (g,) = T.autograd.grad(base.pow(2).sum(), x, create_graph=True)
        g.sum().backward()
        return arr(g), grads(x)

    assert_values(*both(scenario))


def test_write_through_a_sibling_view() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = x.clone()
        a, b = base[1], base[:2]
        a.mul_(3)
        out = (b * T.tensor([1.0, 10.0])).sum() + a
        out.backward()
        return graph(b), grads(x)

    assert_values(*both(scenario))


def test_inplace_through_a_view_of_a_base_that_does_not_require_grad() -> None:
    def scenario(T: Any) -> Any:
        w = T.tensor([2.0, 3.0], requires_grad=True)
        z = T.zeros(4)
        z[1:3].copy_(w)
        seen = graph(z), z.requires_grad, z.is_leaf
        (z * T.arange(4.0)).sum().backward()
        return seen, arr(z), grads(w)

    assert_values(*both(scenario))


def test_view_of_a_base_written_in_place_under_no_grad() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        v = y[1:]
        with T.no_grad():
            y.add_(1)
        seen = graph(v), v._version
        v.sum().backward()
        return seen, arr(v), grads(x)

    assert_values(*both(scenario))


# -- refusals -----------------------------------------------------------------------

REFUSED: dict[str, Callable[[Any], Any]] = {
    "leaf": lambda T: T.tensor([1.0, 2.0], requires_grad=True).mul_(2),
    "view of a leaf": lambda T: T.tensor([1.0, 2.0], requires_grad=True)[:1].mul_(2),
    "view of a view of a leaf": lambda T: T.ones(2, 2, requires_grad=True)[0][1:].zero_(),
    "expand": lambda T: T.ones(2, 1).expand(2, 3).mul_(2),
    "expand of a non-leaf": lambda T: (T.ones(1, requires_grad=True) * 1).expand(3).add_(1),
    "expand copy_": lambda T: T.zeros(1).expand(3).copy_(T.ones(3)),
    "multi-output view": lambda T: (T.ones(4, requires_grad=True) * 1).split(2)[0].mul_(2),
    "view made under no_grad": lambda T: _no_grad_view(T),
    "detach_ a view": lambda T: (T.ones(3, requires_grad=True) * 2)[:1].detach_(),
    "leaf fill_": lambda T: T.ones(2, requires_grad=True).fill_(1.0),
    "leaf setitem": lambda T: T.ones(2, requires_grad=True).__setitem__(0, 1.0),
}


def _no_grad_view(T: Any) -> Any:
    y = T.ones(2, requires_grad=True) * 1
    with T.no_grad():
        v = y[:1]
    return v.mul_(2)


@pytest.mark.parametrize("name", list(REFUSED))
def test_refusals_match_torch(name: str) -> None:
    ours, ref = both(lambda T: outcome(lambda: REFUSED[name](T)))
    assert ref[0] == "error", ref
    assert ours[0] == "error", ours
    assert str(ours[1]) == str(ref[1]).split("\n")[0]
    assert isinstance(ours[1], EngineError)


def test_leaf_errors_have_the_leaf_inplace_code() -> None:
    for name in ("leaf", "view of a leaf", "view of a view of a leaf"):
        with pytest.raises(LeafInplaceError):
            REFUSED[name](E)


def test_inplace_on_a_leaf_or_its_view_works_under_no_grad() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with T.no_grad():
            x[1:].mul_(2)
            x.add_(1)
            x[0] = 10.0
            x.fill_(x[1])
        return arr(x), x._version, x.is_leaf, x.grad_fn

    assert_values(*both(scenario))


def test_zero_d_expand_aliases_its_source() -> None:
    def scenario(T: Any) -> Any:
        a = T.tensor(1.0)
        e = a.expand(())
        e.add_(1)
        f = T.tensor([3.0]).expand(1)
        f.mul_(2)
        return arr(a), arr(e), a._version, e._base is a, arr(f)

    assert_values(*both(scenario))


# -- hooks, retain_grad, detach_ ----------------------------------------------------


def test_hooks_stay_with_the_old_version_and_retain_grad_follows() -> None:
    def scenario(T: Any) -> Any:
        seen: list[Any] = []
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = x.clone()
        a.register_hook(lambda g: seen.append(("old", arr(g))))
        a.retain_grad()
        a.mul_(2)
        a.register_hook(lambda g: seen.append(("new", arr(g))))
        (a * T.tensor([1.0, 2.0, 3.0])).sum().backward()
        return sorted(seen, key=lambda s: s[0]), arr(a.grad), grads(x), fn_name(a)

    assert_values(*both(scenario))


def test_hook_replacing_the_old_gradient_changes_the_result() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        a = x * 1
        a.register_hook(lambda g: g * 10)
        a.add_(1)
        a.sum().backward()
        return grads(x)

    assert_values(*both(scenario))


def test_hooks_and_retain_grad_on_a_view_written_through_its_base() -> None:
    def scenario(T: Any) -> Any:
        seen: list[Any] = []
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = x.clone()
        v = base[1:]
        v.register_hook(lambda g: seen.append(arr(g)))
        v.retain_grad()
        base.mul_(2)
        (v * T.tensor([5.0, 7.0])).sum().backward()
        return seen, arr(v.grad), grads(x)

    assert_values(*both(scenario))


def test_detach_of_a_saved_tensor_is_detected_at_backward() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        z = y * y
        y.detach_()
        seen = y._version, y.requires_grad, y.grad_fn, y.is_leaf
        return seen, outcome(lambda: z.sum().backward())[1], grads(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)
    assert isinstance(ours[1], VersionMismatchError)


def test_detach_then_saved_again_is_fine() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.detach_()
        z = y * x
        z.sum().backward()
        return grads(x)

    assert_values(*both(scenario))


# -- __setitem__ --------------------------------------------------------------------


def _keys(T: Any) -> dict[str, Any]:
    return {
        "int": 0,
        "negative int": -1,
        "slice": slice(0, 2),
        "step slice": slice(None, None, 2),
        "full slice": slice(None),
        "Ellipsis": Ellipsis,
        "tuple": (1, slice(1, 3)),
        "column": (slice(None), 1),
        "0-d tensor": T.tensor(1),
        "int tensor": T.tensor([0, 1]),
        "list": [1, 0],
        "bool mask": T.tensor([True, False]),
        "2-d mask": T.tensor([[True, False, True], [False, False, True]]),
        "int then array": (0, [0, 2]),
        "slice then array": (slice(None), [2, 0]),
        "None": (None, 1),
    }


KEYS = list(_keys(E))


@pytest.mark.parametrize("value_kind", ["number", "0-d tensor", "tensor", "broadcast row"])
@pytest.mark.parametrize("key", KEYS)
def test_setitem(key: str, value_kind: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        b = x * 1
        k = _keys(T)[key]
        shape = b[k].shape
        w: Any
        if value_kind == "number":
            w = 9.0
        elif value_kind == "0-d tensor":
            w = T.tensor(9.0, requires_grad=True)
        elif value_kind == "tensor":
            w = T.arange(10.0, 10.0 + b[k].numel()).reshape(shape).requires_grad_()
        else:
            w = T.tensor([7.0], requires_grad=True)
        b[k] = w
        seen = graph(b), b._version
        (b * T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).pow(2).sum().backward()
        g = grads(x, w) if isinstance(w, T.Tensor) else grads(x)
        return seen, arr(b), g

    assert_values(*both(scenario))


def test_setitem_without_grad_and_its_errors() -> None:
    def scenario(T: Any) -> Any:
        a = T.zeros(2, 3)
        a[0] = 1.0
        a[:, 1] = T.tensor([5.0, 6.0])
        a[a > 5] = -1.0
        a[[1, 1]] = T.tensor(2.0)
        errors = [
            outcome(lambda: a.__setitem__(slice(None), T.ones(4)))[1],
            outcome(lambda: a.__setitem__(T.tensor([0, 1]), T.ones(3, 3)))[1],
        ]
        return arr(a), a._version, a.requires_grad, errors

    assert_values(*both(scenario))


def test_setitem_value_dtype_is_cast() -> None:
    def scenario(T: Any) -> Any:
        a = T.zeros(3, dtype=T.float32)
        w = T.tensor([1.5, 2.5], dtype=T.float64, requires_grad=True)
        a[1:] = w
        a.sum().backward()
        return arr(a), a.dtype == T.float32, grads(w)

    assert_values(*both(scenario))


# -- which saved tensors an in-place write invalidates --------------------------------

SAVES: dict[str, Callable[[Any, Any], Any]] = {
    "gather": lambda T, y: y.gather(1, T.tensor([[0], [1]])),
    "index_select": lambda T, y: y.index_select(1, T.tensor([0])),
    "advanced index": lambda T, y: y[[0, 1]],
    "mask index": lambda T, y: y[T.tensor([True, False])],
    "masked_fill": lambda T, y: y.masked_fill(T.tensor([True, False, True]), 0.0),
    "slice": lambda T, y: y[0],
    "reshape": lambda T, y: y.reshape(6),
    "expand": lambda T, y: y[:1].expand(3, 3),
}


@pytest.mark.parametrize("name", list(SAVES))
def test_inplace_after_a_view_or_indexing_op(name: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        y = x.clone()
        r = SAVES[name](T, y)
        with T.no_grad():
            y.mul_(2)
        err = outcome(lambda: r.sum().backward())[1]
        return type(err).__name__ if isinstance(err, BaseException) else None, grads(x)

    ours, ref = both(scenario)
    assert (ours[0] is None) == (ref[0] is None), (ours, ref)
    assert_values(ours[1], ref[1])


def _operand(T: Any, grad: bool) -> Any:
    t = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    return (t.requires_grad_() * 1) if grad else t


BINARY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "mul": lambda T, a, b: a * b,
    "div": lambda T, a, b: a / b,
    "mm": lambda T, a, b: a @ b,
    "matmul": lambda T, a, b: T.matmul(a, b),
    "outer": lambda T, a, b: T.outer(a[0], b[0]),
    "linear": lambda T, a, b: (T.nn.functional.linear if T is torch else E.linear)(a, b),
}


def _binary_cases() -> list[Any]:
    """(op, which operand requires grad, which one is then written in place)."""
    return [
        pytest.param(op, grad, written)
        for op in BINARY
        for grad in ("a", "b", "ab")
        for written in ("a", "b")
    ]


@pytest.mark.parametrize(("op", "grad", "written"), _binary_cases())
def test_saved_operands_match_torch(op: str, grad: str, written: str) -> None:
    """An operand is version-checked at backward only where PyTorch saved it."""

    def scenario(T: Any) -> Any:
        a, b = _operand(T, "a" in grad), _operand(T, "b" in grad)
        r = BINARY[op](T, a, b)
        with T.no_grad():
            (a if written == "a" else b).mul_(2)
        err = outcome(lambda: r.sum().backward())[1]
        return None if err is None else type(err).__name__

    ours, ref = both(scenario)
    assert (ours is None) == (ref is None), (ours, ref)


# -- grad_fn names where memory layout decides --------------------------------------

LAYOUT: dict[str, Callable[[Any], Any]] = {
    "reshape contiguous": lambda x: x.reshape(6),
    "reshape of softmax": lambda x: x.softmax(-1).reshape(3, 2),
    "reshape of t (copy)": lambda x: x.t().reshape(6),
    "reshape of t (alias)": lambda x: x.t().reshape(3, 1, 2),
    "reshape of a column slice": lambda x: x[:, :2].reshape(4),
    "reshape of a row slice": lambda x: x[:1].reshape(3),
    "reshape of a column": lambda x: x[:, :1].reshape(2),
    "reshape of an expand": lambda x: x[:1].expand(2, 3).reshape(6),
    "reshape of an expand (alias)": lambda x: x[:1].expand(2, 3).reshape(2, 1, 3),
    "view": lambda x: x.view(3, 2),
    "view of t": lambda x: x.t().view(3, 2),
    "flatten": lambda x: x.flatten(),
    "flatten of t": lambda x: x.t().flatten(),
    "flatten of a column slice": lambda x: x[:, :1].flatten(),
    "flatten dims": lambda x: x.unsqueeze(0).flatten(0, 1),
    "contiguous of t": lambda x: x.t().contiguous(),
    "contiguous": lambda x: x.contiguous(),
}


@pytest.mark.parametrize("name", list(LAYOUT))
def test_grad_fn_names_follow_memory_layout(name: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        r = outcome(lambda: LAYOUT[name](x))
        if r[0] == "error":
            return r[1]
        return fn_name(r[1]), arr(r[1]), r[1]._base is not None

    assert_values(*both(scenario))


# -- finite differences: the rules are right, to second order -------------------------

WRITES: dict[str, Callable[[Any, Any], Any]] = {
    "mul_ through a slice": lambda b, w: b[1:].mul_(w),
    "sigmoid_ through a column": lambda b, w: b.view(2, 2)[:, 1].sigmoid_(),
    "setitem slice": lambda b, w: b.__setitem__(slice(0, 3), w * w),
    "setitem int then array": lambda b, w: b.view(2, 2).__setitem__((1, [0, 1]), w[:2]),
    "setitem mask": lambda b, w: b.__setitem__(b > 0.5, w.sum()),
    "copy_ through a transpose": lambda b, w: b.view(2, 2).t()[0].copy_(w[1:]),
    "base write seen by a view": lambda b, w: b.mul_(w.sum()),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_gradcheck_and_gradgradcheck_through_inplace_writes(name: str) -> None:
    def fn(x: Any, w: Any) -> Any:
        b = x * 1
        v = b[1:3]  # taken before the write: regenerated from the new history
        WRITES[name](b, w)
        return (b.sin() * b).sum() + (v * v).sum()

    x = E.tensor([0.3, 0.7, 0.2, 0.9], dtype="float64", requires_grad=True)
    w = E.tensor([0.4, 0.6, 0.8], dtype="float64", requires_grad=True)
    assert E.gradcheck(fn, (x, w))
    assert E.gradgradcheck(fn, (x, w))


# -- an op that saved its result, run in place: the saved result is the tensor written ----

RESULT_SAVERS: dict[str, Callable[[Any], Any]] = {
    "exp_ then mul_": lambda y: (y.exp_(), y.mul_(2)),
    "exp_ through a view, then the base written": lambda y: (y[1:].exp_(), y.mul_(2)),
    "exp_ through a view kept alive": lambda y: [v := y[1:], v.exp_(), y.mul_(2)],
    "sigmoid_ through a view": lambda y: y[1:].sigmoid_(),
    "tanh_ then read": lambda y: y.tanh_(),
}


@pytest.mark.parametrize("name", list(RESULT_SAVERS))
def test_inplace_op_that_saves_its_result(name: str) -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        kept = RESULT_SAVERS[name](y)
        if not isinstance(kept, list):
            del kept  # the view dies: the error names the op that saved it
        err = outcome(lambda: y.sum().backward())[1]
        if isinstance(err, BaseException):
            return err  # names the op of the written tensor's grad_fn now (AsStrided for a view)
        return arr(y), grads(x)

    assert_values(*both(scenario))


STALE: dict[str, Callable[[Any], Any]] = {
    "no_grad view, base written with grad": lambda T: _stale_no_grad_view(
        T, written_with_grad=True
    ),
    "no_grad view, base written under no_grad": lambda T: _stale_no_grad_view(T, False),
    "split output, base written": lambda T: _stale_split(T),
}


def _stale_no_grad_view(T: Any, written_with_grad: bool) -> Any:
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    with T.no_grad():
        v = y[:1]
    if written_with_grad:
        y.mul_(2)
    else:
        with T.no_grad():
            y.mul_(2)
    return v


def _stale_split(T: Any) -> Any:
    y = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True) * 1
    a, _ = y.split(2)
    y.mul_(2)
    return a


@pytest.mark.parametrize("name", list(STALE))
def test_views_that_may_not_regenerate(name: str) -> None:
    """Reading such a view's grad_fn raises; its repr says ``grad_fn=<Invalid>``."""

    def scenario(T: Any) -> Any:
        v = STALE[name](T)
        return outcome(lambda: v.grad_fn)[1], repr(v), v._version

    assert_values(*both(scenario))


def test_base_hooks_and_retain_grad_across_a_write_through_its_view() -> None:
    def scenario(T: Any) -> Any:
        seen: list[Any] = []
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = x.clone()
        b.register_hook(lambda g: seen.append(("old", arr(g))))
        b.retain_grad()
        b[1:].mul_(T.tensor([2.0, 3.0]))
        b.register_hook(lambda g: seen.append(("new", arr(g))))
        (b * T.tensor([1.0, 10.0, 100.0])).sum().backward()
        return sorted(seen, key=lambda s: s[0]), arr(b.grad), grads(x), graph(b)

    assert_values(*both(scenario))


def test_a_hook_removed_after_an_inplace_op_does_not_fire() -> None:
    def scenario(T: Any) -> Any:
        seen: list[Any] = []
        x = T.tensor([1.0, 2.0], requires_grad=True)
        a = x * 1
        handle = a.register_hook(lambda g: seen.append(arr(g)))
        a.add_(1)
        handle.remove()
        a.sum().backward()
        return seen, grads(x)

    assert_values(*both(scenario))
