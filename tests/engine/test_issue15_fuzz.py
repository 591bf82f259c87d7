"""Differences the random-program comparison found (issue 15), minimised: each
scenario runs against ``engine`` and ``torch`` and the outcomes are compared
(values, ``.grad``, errors by message)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.test_semantics import both, outcome, quiet_grad
from tests.engine.torch_oracle import assert_values, require_torch
from tests.fuzz.interpreter import error_kind

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1
pytestmark = pytest.mark.torch


def _aten(T: Any, name: str) -> Any:
    return getattr(T.ops.aten, name) if T is torch else getattr(T, name)


@pytest.mark.parametrize("written", ["self", "values"])
def test_masked_index_put_accumulate_saves_nothing(written: str) -> None:
    """Its node keeps mask and indices only: writing self or values in place after the
    call leaves the backward valid (the composite saved values: catalogue op "inv")."""

    def scenario(T: Any) -> Any:
        x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        v = T.tensor([[1.0, 2.0]], requires_grad=True)
        a, b = x * 1, v * 1
        mask = T.tensor([[True, False]])
        idx = [T.tensor([[0, 1]]), T.tensor([[1, 1]])]
        out = _aten(T, "_unsafe_masked_index_put_accumulate")(a, mask, idx, b)
        (a if written == "self" else b).mul_(2)
        return outcome(lambda: out.sum().backward())[0], quiet_grad(x), quiet_grad(v)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_masked_index_saves_nothing() -> None:
    def scenario(T: Any) -> Any:
        x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        a = x * 1
        idx = [T.tensor([[0, 1]]), T.tensor([[1, 1]])]
        out = _aten(T, "_unsafe_masked_index")(a, T.tensor([[True, False]]), idx, 0.0)
        a.mul_(2)
        return outcome(lambda: out.sum().backward())[0], quiet_grad(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


EMPTY_DIM = {
    "amax": lambda T, x: T.amax(x, -1),
    "amin list": lambda T, x: T.amin(x, [-1]),
    "max": lambda T, x: T.max(x, -1),
    "nanmedian": lambda T, x: T.nanmedian(x, -1),
    "kthvalue": lambda T, x: T.kthvalue(x, 1, -1),
    "median": lambda T, x: T.median(x, -1),
}


@pytest.mark.parametrize("call", sorted(EMPTY_DIM))
def test_reduction_over_an_empty_dim_names_it_as_torch(call: str) -> None:
    """amax/amin name the dim as given (-1), others wrapped; nanmedian's message says
    median; kthvalue checks the empty dim before k (seeds 20503, 20615, 20713)."""

    def scenario(T: Any) -> Any:
        try:
            EMPTY_DIM[call](T, T.zeros(2, 0))
        except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
            return error_kind(exc), str(exc)
        return None

    ours, ref = both(scenario)
    assert_values(ours, ref)


def _multi_view(T: Any, kind: str) -> Any:
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1 if kind != "leaf" else x
    if kind == "split":
        return y, y.split(1)[1].view(-1)
    if kind == "no_grad":
        with T.no_grad():
            a = y[0]
        return y, a[1:]
    return y, y.unbind(0)[1].reshape(-1) if kind != "slice" else y.unbind(0)[1][1:]


@pytest.mark.parametrize("kind", ["unbind", "slice", "leaf", "split", "no_grad"])
@pytest.mark.parametrize("stale", [False, True])
def test_a_view_of_a_refused_view_is_refused_too(kind: str, stale: bool) -> None:
    """A view of one of several views an op returned (or of a view made under no_grad)
    inherits its refusal to be written in place, named by its own node (PyTorch's
    creation_meta; seeds 20883, 21554: the engine wrote it, or named the leaf)."""

    def scenario(T: Any) -> Any:
        y, v = _multi_view(T, kind)
        if stale:
            if kind == "leaf":
                return None
            y.mul_(2)
            return outcome(lambda: v.grad_fn)[0], outcome(lambda: v.grad_fn)[1]
        return outcome(lambda: v.mul_(2))[1]

    ours, ref = both(scenario)
    if stale and ref is not None and ref[0] == "error":
        assert ours[0] == "error" and str(ours[1]) == str(ref[1])
    else:
        assert_values(ours, ref)


def test_block_diag_saves_nothing() -> None:
    """A second backward through block_diag without retain_graph works in PyTorch (its
    node keeps sizes only; seed 21327), and in-place writes to its inputs are allowed."""

    def scenario(T: Any) -> Any:
        a = T.tensor([[1.0, 2.0]], requires_grad=True)
        b = T.tensor([3.0], requires_grad=True)
        a2, b2 = a * 1, b * 1
        out = T.block_diag(a2, b2)
        a2.mul_(2)
        g = T.arange(6.0).reshape(2, 3)
        out.backward(g)
        second = outcome(lambda: out.backward(g))[0]
        return second, quiet_grad(a), quiet_grad(b)

    ours, ref = both(scenario)
    assert_values(ours, ref)


SAVED_INPUTS_ONLY = {
    "logaddexp": lambda T, a, b: T.logaddexp(a, b),
    "logaddexp2": lambda T, a, b: T.logaddexp2(a, b),
    "atan2": lambda T, a, b: T.atan2(a, b),
    "hypot": lambda T, a, b: T.hypot(a, b),
    "cov": lambda T, a, b: T.cov(a),
    "cov 2-d": lambda T, a, b: T.cov(T.stack([a, b])),
}


@pytest.mark.parametrize("written", ["result", "input"])
@pytest.mark.parametrize("call", sorted(SAVED_INPUTS_ONLY))
def test_what_a_node_saves_decides_in_place_writes(call: str, written: str) -> None:
    """logaddexp/logaddexp2/atan2 save their inputs, not their result (hypot both); cov's
    decomposition saves the centred input (seeds 22681, 22746)."""

    def scenario(T: Any) -> Any:
        a = T.tensor([1.0, -2.0, 0.5], requires_grad=True)
        b = T.tensor([0.5, 3.0, -1.0], requires_grad=True)
        a2 = a * 1
        out = SAVED_INPUTS_ONLY[call](T, a2, b)
        with T.no_grad():
            (out if written == "result" else a2).mul_(2)
        return outcome(lambda: out.sum().backward())[0], quiet_grad(a), quiet_grad(b)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("op", ["unsafe_chunk", "unsafe_split"])
def test_unsafe_split_pieces_share_the_input_memory(op: str) -> None:
    """Not autograd views, yet the same memory: a write to a piece reaches the input,
    and neither version counter sees the other's writes (seed 31285)."""

    def scenario(T: Any) -> Any:
        x = T.tensor([[0.0, 0.1], [0.2, 0.3], [0.4, 0.5]], requires_grad=True)
        y = x * 1
        pieces = getattr(T, op)(y, 1 if op == "unsafe_split" else 3)
        pieces[1].tanh_()
        (pieces[1].sum() + (y * y).sum()).backward()
        return y.detach(), y._version, pieces[1]._version, quiet_grad(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("op", ["mul_", "div_", "pow_", "atan2_", "addcmul_"])
def test_in_place_op_on_a_tensor_without_grad_keeps_its_old_values(op: str) -> None:
    """``x.mul_(w)`` with only w requiring grad: w's gradient reads x's old values, which
    PyTorch keeps (``original_self``); the engine saved x itself and its backward failed
    the version check (seed 50061, an unfold view of x read afterwards)."""

    def scenario(T: Any) -> Any:
        x = T.tensor([1.0, 2.0, 3.0])
        w = T.tensor([2.0, 3.0, 4.0], requires_grad=True)
        x.addcmul_(w, w) if op == "addcmul_" else getattr(x, op)(w)
        v = x.unfold(0, 2, 1)
        return outcome(lambda: (v * 2).sum().backward())[0], x.detach(), quiet_grad(w)

    ours, ref = both(scenario)
    assert_values(ours, ref)
