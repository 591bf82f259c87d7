"""The scatter/gather family against PyTorch, beyond the op database: second-order
gradients, scatter_reduce's rules (ties, zeros in prod, include_self), in-place
forms, scatter with reduce= (no derivative, as in PyTorch), gather saving its
index, and PyTorch's error messages."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E
from engine import OPS
from engine.errors import EngineError
from tests.engine.test_cumulative_ops import compare
from tests.engine.torch_oracle import assert_same, assert_same_error, require_torch

torch = require_torch()

pytestmark = pytest.mark.torch

RNG = np.random.default_rng(23)
X = RNG.uniform(-2, 2, (3, 4))
SRC = RNG.uniform(-2, 2, (3, 4))
IDX = np.array([[0, 1, 2, 0], [0, 2, 2, 1], [1, 1, 0, 0]])


def idx(lib: Any, a: np.ndarray = IDX) -> Any:
    return E.tensor(a) if lib is E else torch.from_numpy(a.copy())


def both(fn: Any) -> tuple[Any, Any]:
    """One spelling for both libraries: ``fn(lib, *tensors)``."""
    return (lambda *a: fn(E, *a)), (lambda *a: fn(torch, *a))


CASES = {
    "scatter src": lambda L, x, s: L.scatter(x, 0, idx(L, IDX[:1]), s[:1]),
    "scatter value": lambda L, x: L.scatter(x, 1, idx(L, np.array([[3], [0], [1]])), 2.5),
    "scatter_add": lambda L, x, s: L.scatter_add(x, 0, idx(L), s),
    "index_add alpha": lambda L, x, s: L.index_add(
        x, 1, idx(L, np.array([3, 0, 3])), s[:, :3], alpha=-1.5
    ),
    "index_copy": lambda L, x, s: L.index_copy(x, 0, idx(L, np.array([2, 0])), s[:2]),
    "index_fill value": lambda L, x: L.index_fill(x, 1, idx(L, np.array([1, -1])), -2.0),
    "masked_scatter": lambda L, x, s: L.masked_scatter(x, idx(L, X > 0), s),
    "masked_select": lambda L, x: L.masked_select(x, idx(L, np.array([True, False, True, True]))),
    "take": lambda L, x: L.take(x, idx(L, np.array([[0, 11], [-1, 5]]))),
    "take_along_dim": lambda L, x: L.take_along_dim(x, idx(L, np.array([[2], [0], [3]])), 1),
    "gather": lambda L, x: L.gather(x, 0, idx(L)),
}


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_second_order(name: str) -> None:
    fn = CASES[name]
    fn_e, fn_t = both(fn)
    n = fn.__code__.co_argcount - 1
    compare(fn_e, fn_t, *[X, SRC][:n])


def test_index_fill_with_a_tensor_value() -> None:
    fn_e, fn_t = both(lambda L, x, v: L.index_fill(x, 0, idx(L, np.array([0, 2, 2])), v))
    compare(fn_e, fn_t, X, np.array(0.7))


REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_second_order(reduce: str, include_self: bool) -> None:
    fn_e, fn_t = both(
        lambda L, x, s: L.scatter_reduce(x, 0, idx(L), s, reduce, include_self=include_self)
    )
    compare(fn_e, fn_t, X, SRC)


def test_scatter_reduce_prod_with_zeros() -> None:
    """One zero at a position, two zeros at a position, and a zero in self."""
    x, s = X.copy(), SRC.copy()
    x[0, 3] = 0.0
    s[0, 0] = 0.0  # position (0, 0): a single zero from src
    s[1, 1] = s[2, 1] = 0.0  # position (2, 1) and (1, 1)
    for include_self in (True, False):
        fn_e, fn_t = both(
            lambda L, a, b, inc=include_self: L.scatter_reduce(
                a, 0, idx(L), b, "prod", include_self=inc
            )
        )
        compare(fn_e, fn_t, x, s, second=False)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_ties_share_the_gradient(reduce: str) -> None:
    x = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 1.0, 2.0], [1.0, 0.0, 3.0, 2.0]])
    fn_e, fn_t = both(lambda L, a, b: L.scatter_reduce(a, 0, idx(L), b, reduce))
    compare(fn_e, fn_t, x, x.copy(), second=False)


INPLACE = {
    "scatter_": lambda L, y, s: y.scatter_(0, idx(L, IDX[:1]), s[:1]),
    "scatter_ value": lambda L, y, s: y.scatter_(0, idx(L, IDX[:1]), 1.25),
    "scatter_add_": lambda L, y, s: y.scatter_add_(0, idx(L), s),
    "scatter_reduce_": lambda L, y, s: y.scatter_reduce_(0, idx(L), s, "amax"),
    "index_add_": lambda L, y, s: y.index_add_(0, idx(L, np.array([1])), s[:1]),
    "index_copy_": lambda L, y, s: y.index_copy_(0, idx(L, np.array([1])), s[:1]),
    "index_fill_": lambda L, y, s: y.index_fill_(1, idx(L, np.array([1])), 3.0),
    "masked_scatter_": lambda L, y, s: y.masked_scatter_(idx(L, X > 0), s),
}


@pytest.mark.parametrize("name", list(INPLACE), ids=list(INPLACE))
def test_inplace_forms(name: str) -> None:
    """``y.op_(...)`` writes into y, bumps its version and records PyTorch's node."""
    fn = INPLACE[name]
    outs = []
    for L in (E, torch):
        leaf = (E.Tensor if L is E else torch.tensor)(X.copy(), requires_grad=True)
        src = (E.Tensor if L is E else torch.tensor)(SRC.copy(), requires_grad=True)
        y = leaf * 1
        returned = fn(L, y, src * 1)
        assert returned is y
        assert y._version == 1
        g = np.linspace(-1, 1, 12).reshape(3, 4)
        y.backward((E.Tensor if L is E else torch.from_numpy)(g))
        outs.append((y, leaf.grad, src.grad))
    (y_e, gx_e, gs_e), (y_t, gx_t, gs_t) = outs
    assert_same(y_e, y_t)
    assert_same(gx_e, gx_t, graph=False)
    if gs_t is None:
        assert gs_e is None
    else:
        assert_same(gs_e, gs_t, graph=False)


def test_inplace_forms_are_registered() -> None:
    for name in (
        "scatter",
        "scatter_add",
        "scatter_reduce",
        "index_add",
        "index_copy",
        "index_fill",
        "masked_scatter",
    ):
        assert OPS[name].inplace, name


def test_scatter_with_reduce_has_no_derivative() -> None:
    x = E.Tensor(X.copy(), requires_grad=True)
    y = E.scatter(x * 1, 0, idx(E), 2.0, reduce="add")
    assert y.grad_fn.name == "NotImplemented"
    t = torch.from_numpy(X.copy()).requires_grad_(True)
    u = torch.scatter(t * 1, 0, idx(torch), 2.0, reduce="add")
    assert_same(y, u)
    with pytest.raises(RuntimeError) as theirs:
        u.sum().backward()
    with pytest.raises(EngineError) as mine:
        y.sum().backward()
    assert str(mine.value) == str(theirs.value)
    with pytest.warns(UserWarning, match="deprecated"):
        E.scatter(E.Tensor(X), 0, idx(E), E.Tensor(SRC), reduce="multiply")


def test_gather_records_the_saved_index() -> None:
    """gather's node saves the index: a second backward without retain_graph fails."""
    x = E.Tensor(X.copy(), requires_grad=True)
    y = E.gather(x, 0, idx(E)).sum()
    y.backward()
    with pytest.raises(EngineError, match="second time"):
        y.backward()


def test_nonzero() -> None:
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    assert_same(E.nonzero(E.tensor(x)), torch.nonzero(torch.from_numpy(x)))
    assert_same(
        E.nonzero(E.tensor(x), as_tuple=True), torch.nonzero(torch.from_numpy(x), as_tuple=True)
    )
    rule = OPS["nonzero"].results
    assert not isinstance(rule, int)
    assert rule.evaluate({"input": E.tensor(x), "as_tuple": True}) == (2, True)
    assert rule.evaluate({"input": E.tensor(x), "as_tuple": False}) == (1, False)


T, ET = torch.from_numpy(X.copy()), E.Tensor(X.copy())

ERRORS = {
    "scatter index out of range": (
        lambda: E.scatter(ET, 0, idx(E, np.array([[5]])), 1.0),
        lambda: torch.scatter(T, 0, idx(torch, np.array([[5]])), 1.0),
    ),
    "scatter index ndim": (
        lambda: E.scatter(ET, 0, idx(E, np.array([0])), 1.0),
        lambda: torch.scatter(T, 0, idx(torch, np.array([0])), 1.0),
    ),
    "scatter dtype": (
        lambda: E.scatter(ET, 0, idx(E), E.Tensor(SRC.astype(np.float32))),
        lambda: torch.scatter(T, 0, idx(torch), torch.from_numpy(SRC.astype(np.float32))),
    ),
    "scatter index too large": (
        lambda: E.scatter(ET, 0, idx(E, np.zeros((1, 5), np.int64)), ET),
        lambda: torch.scatter(T, 0, idx(torch, np.zeros((1, 5), np.int64)), T),
    ),
    "scatter_reduce reduce": (
        lambda: E.scatter_reduce(ET, 0, idx(E), ET, "foo"),
        lambda: torch.scatter_reduce(T, 0, idx(torch), T, "foo"),
    ),
    "scatter reduce": (
        lambda: E.scatter(ET, 0, idx(E), ET, reduce="mean"),
        lambda: torch.scatter(T, 0, idx(torch), T, reduce="mean"),
    ),
    "index_add out of range": (
        lambda: E.index_add(ET, 0, idx(E, np.array([3])), ET[:1]),
        lambda: torch.index_add(T, 0, idx(torch, np.array([3])), T[:1]),
    ),
    "index_add negative": (
        lambda: E.index_add(ET, 1, idx(E, np.array([-1])), ET[:, :1]),
        lambda: torch.index_add(T, 1, idx(torch, np.array([-1])), T[:, :1]),
    ),
    "index_add count": (
        lambda: E.index_add(ET, 0, idx(E, np.array([0])), ET[:2]),
        lambda: torch.index_add(T, 0, idx(torch, np.array([0])), T[:2]),
    ),
    "index_fill out of range": (
        lambda: E.index_fill(ET, 0, idx(E, np.array([3])), 1.0),
        lambda: torch.index_fill(T, 0, idx(torch, np.array([3])), 1.0),
    ),
    "index_fill value tensor": (
        lambda: E.index_fill(ET, 0, idx(E, np.array([1])), E.Tensor(np.ones(2))),
        lambda: torch.index_fill(T, 0, idx(torch, np.array([1])), torch.ones(2)),
    ),
    "index_copy out of range": (
        lambda: E.index_copy(ET, 0, idx(E, np.array([7])), ET[:1]),
        lambda: torch.index_copy(T, 0, idx(torch, np.array([7])), T[:1]),
    ),
    "masked_scatter short source": (
        lambda: E.masked_scatter(ET, idx(E, X > 0), E.Tensor(np.ones(1))),
        lambda: torch.masked_scatter(T, idx(torch, X > 0), torch.ones(1, dtype=torch.float64)),
    ),
    "masked_scatter float mask": (
        lambda: E.masked_scatter(ET, E.Tensor(np.ones((3, 4), np.float32)), ET),
        lambda: torch.masked_scatter(T, torch.ones(3, 4), T),
    ),
    "masked_select float mask": (
        lambda: E.masked_select(ET, E.Tensor(np.ones((3, 1), np.float32))),
        lambda: torch.masked_select(T, torch.ones(3, 1)),
    ),
    "take out of range": (
        lambda: E.take(ET, idx(E, np.array([12]))),
        lambda: torch.take(T, idx(torch, np.array([12]))),
    ),
    "take negative out of range": (
        lambda: E.take(ET, idx(E, np.array([-13]))),
        lambda: torch.take(T, idx(torch, np.array([-13]))),
    ),
    "take float index": (
        lambda: E.take(ET, E.Tensor(np.array([1.0], np.float32))),
        lambda: torch.take(T, torch.tensor([1.0])),
    ),
}


@pytest.mark.parametrize("name", list(ERRORS), ids=list(ERRORS))
def test_errors_match_torch(name: str) -> None:
    fn_e, fn_t = ERRORS[name]
    assert_same_error(fn_e, fn_t)
