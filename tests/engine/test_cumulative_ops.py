"""Cumulative, ordering and rearranging ops against PyTorch, beyond the op database:
cumprod's exact gradient through zeros (first and second order), ties and NaN in
sort/cummax/median, second-order gradients, views sharing memory and version,
which nodes free saved tensors, registration facts and PyTorch's error messages."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import engine as E
from engine import OPS
from engine.errors import GraphFreedError
from engine.registry import Results
from tests.engine.torch_oracle import (
    assert_same,
    assert_same_error,
    compare_functions,
    require_torch,
)

torch = require_torch()
compare = compare_functions

pytestmark = pytest.mark.torch


RNG = np.random.default_rng(11)
X = RNG.uniform(-2, 2, (3, 4))


# -- cumprod: the exact gradient through zeros ---------------------------------------------


def _with_zeros(*positions: tuple[int, int]) -> np.ndarray:
    x = np.random.default_rng(5).uniform(0.5, 2.0, (3, 5)) * np.array([1, -1, 1, -1, 1])
    for p in positions:
        x[p] = 0.0
    return x


ZERO_CASES = {
    "no zero": _with_zeros(),
    "one zero": _with_zeros((0, 2)),
    "zero first": _with_zeros((1, 0)),
    "zero last": _with_zeros((2, 4)),
    "two zeros in a row": _with_zeros((0, 1), (0, 3)),
    "all zeros": np.zeros((2, 3)),
}


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("case", list(ZERO_CASES), ids=list(ZERO_CASES))
def test_cumprod_gradient_through_zeros(case: str, dim: int) -> None:
    x = ZERO_CASES[case]
    compare(lambda a: E.cumprod(a, dim), lambda a: torch.cumprod(a, dim), x)


def test_cumprod_of_a_single_element_and_0d() -> None:
    compare(lambda a: E.cumprod(a, 0), lambda a: torch.cumprod(a, 0), np.array([0.0]))
    compare(lambda a: E.cumprod(a, 0), lambda a: torch.cumprod(a, 0), np.array(1.5))


def test_cumsum_and_logcumsumexp_second_order() -> None:
    compare(lambda a: E.cumsum(a, 1), lambda a: torch.cumsum(a, 1), X)
    big = X * 40
    compare(lambda a: E.logcumsumexp(a, 0), lambda a: torch.logcumsumexp(a, 0), big)


def test_cumsum_dtypes() -> None:
    ints = np.array([[1, 2], [3, 4]])
    mine = E.cumsum(E.tensor(ints), 0)
    assert_same(mine, torch.cumsum(torch.from_numpy(ints), 0))
    x = X.astype(np.float32)
    assert_same(
        E.cumsum(E.Tensor(x), 1, dtype="float64"),
        torch.cumsum(torch.from_numpy(x), 1, dtype=torch.float64),
    )


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_ties_and_nan(op: str) -> None:
    for x in (
        np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0, 0.0, 1.0]]),
        np.array([1.0, np.nan, 0.0, np.nan, 2.0]),
    ):
        mine = getattr(E, op)(E.tensor(x), -1)
        theirs = getattr(torch, op)(torch.from_numpy(x), -1)
        assert_same(tuple(mine), tuple(theirs))
        assert_same(mine.indices, theirs.indices)


def test_cummax_gradient_goes_to_the_selected_index() -> None:
    x = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0]])
    compare(lambda a: E.cummax(a, 1), lambda a: torch.cummax(a, 1), x)
    compare(lambda a: E.cummin(a, 1), lambda a: torch.cummin(a, 1), x)


# -- ordering --------------------------------------------------------------------------------


@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_nan_largest(descending: bool) -> None:
    x = np.array([[2.0, np.nan, 1.0, 2.0, -np.inf, 1.0, np.nan, np.inf]])
    mine = E.sort(E.tensor(x), descending=descending)
    theirs = torch.sort(torch.from_numpy(x), descending=descending, stable=True)
    assert_same(tuple(mine), tuple(theirs))
    assert_same(
        E.argsort(E.tensor(x), descending=descending),
        torch.argsort(torch.from_numpy(x), descending=descending, stable=True),
    )


def test_ordering_second_order() -> None:
    x = RNG.uniform(-2, 2, (3, 5))
    compare(lambda a: E.sort(a, 0), lambda a: torch.sort(a, 0), x)
    compare(lambda a: E.topk(a, 3), lambda a: torch.topk(a, 3), x)
    compare(lambda a: E.kthvalue(a, 2, 0), lambda a: torch.kthvalue(a, 2, 0), x)
    compare(lambda a: E.median(a, 1), lambda a: torch.median(a, 1), x)
    compare(lambda a: E.median(a), lambda a: torch.median(a), x)


def test_median_is_the_lower_median_and_ties_share_the_gradient() -> None:
    compare(lambda a: E.median(a), lambda a: torch.median(a), np.array([4.0, 1.0, 3.0, 2.0]))
    compare(lambda a: E.median(a), lambda a: torch.median(a), np.array([2.0, 1.0, 2.0, 3.0, 2.0]))
    x = np.array([[1.0, np.nan, 0.0], [3.0, 1.0, 2.0]])
    mine, theirs = E.median(E.tensor(x), 1), torch.median(torch.from_numpy(x), 1)
    assert_same(tuple(mine), tuple(theirs))


def test_ties_pick_equal_values() -> None:
    """On ties topk/kthvalue/median may return another equal element's index in PyTorch
    (its selection algorithms are not stable); the values agree and each engine index
    points at an element holding that value."""
    x = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0, 0.0, 1.0]])
    for name, args in (("topk", (3,)), ("kthvalue", (2,)), ("median", (1,))):
        mine = getattr(E, name)(E.tensor(x), *args)
        theirs = getattr(torch, name)(torch.from_numpy(x), *args)
        assert_same(mine.values, theirs.values)
        idx = mine.indices._data.reshape(2, -1)
        np.testing.assert_array_equal(
            np.take_along_axis(x, idx, -1), mine.values._data.reshape(2, -1)
        )


# -- rearranging -----------------------------------------------------------------------------

REARRANGE = {
    "flip": (lambda a: E.flip(a, (0, 1)), lambda a: torch.flip(a, (0, 1))),
    "roll": (lambda a: E.roll(a, (1, -2), (0, 1)), lambda a: torch.roll(a, (1, -2), (0, 1))),
    "roll flat": (lambda a: E.roll(a, 5), lambda a: torch.roll(a, 5)),
    "repeat": (lambda a: E.repeat(a, 2, 1, 3), lambda a: a.repeat(2, 1, 3)),
    "tile": (lambda a: E.tile(a, (2,)), lambda a: torch.tile(a, (2,))),
    "repeat_interleave": (
        lambda a: E.repeat_interleave(a, 3, dim=0),
        lambda a: torch.repeat_interleave(a, 3, dim=0),
    ),
    "repeat_interleave tensor": (
        lambda a: E.repeat_interleave(a, E.tensor(np.array([0, 2, 1, 3])), dim=1),
        lambda a: torch.repeat_interleave(a, torch.tensor([0, 2, 1, 3]), dim=1),
    ),
    "narrow": (lambda a: E.narrow(a, 1, 1, 2), lambda a: torch.narrow(a, 1, 1, 2)),
    "unbind": (lambda a: E.unbind(a, 1), lambda a: torch.unbind(a, 1)),
    "movedim": (lambda a: E.movedim(a, 0, 1), lambda a: torch.movedim(a, 0, 1)),
    "diagonal": (lambda a: E.diagonal(a, 1), lambda a: torch.diagonal(a, 1)),
    "diag": (lambda a: E.diag(a, -1), lambda a: torch.diag(a, -1)),
    "diag_embed": (lambda a: E.diag_embed(a, 1, 0, 2), lambda a: torch.diag_embed(a, 1, 0, 2)),
    "trace": (lambda a: E.trace(a), lambda a: torch.trace(a)),
}


@pytest.mark.parametrize("name", list(REARRANGE), ids=list(REARRANGE))
def test_rearranging_ops_second_order(name: str) -> None:
    """All linear: the second-order product is zero on both sides (None in torch)."""
    fn_e, fn_t = REARRANGE[name]
    compare(fn_e, fn_t, X)


def test_repeat_interleave_without_dim_and_output_size() -> None:
    compare(
        lambda a: E.repeat_interleave(a, 2),
        lambda a: torch.repeat_interleave(a, 2),
        X,
    )
    compare(
        lambda a: E.repeat_interleave(a, E.tensor(np.array([2, 0, 1])), dim=0, output_size=3),
        lambda a: torch.repeat_interleave(a, torch.tensor([2, 0, 1]), dim=0, output_size=3),
        X,
    )


def test_views_share_memory_and_version() -> None:
    """narrow, diagonal, unbind and movedim are views, as in PyTorch: a write through
    the base shows in them, and their version counter is the base's."""
    base = E.Tensor(np.arange(12.0).reshape(3, 4))
    views = [
        E.narrow(base, 1, 1, 2),
        E.diagonal(base),
        *E.unbind(base, 0),
        E.movedim(base, 0, 1),
    ]
    before = [v._data.copy() for v in views]
    base.add_(1.0)
    for v, old in zip(views, before):
        np.testing.assert_array_equal(v.data, old + 1.0)
        assert v._version == base._version == 1
    copies = [E.flip(base, (0,)), E.diag(base), E.repeat(base, 1, 1)]
    for c in copies:
        assert not np.shares_memory(c.data, base.data)


def test_write_through_a_diagonal_view() -> None:
    base = E.Tensor(np.zeros((3, 3)))
    E.diagonal(base).add_(2.0)
    t = torch.zeros(3, 3)
    torch.diagonal(t).add_(2.0)
    np.testing.assert_array_equal(base.data, t.numpy())


def test_nodes_that_save_tensors_free_them() -> None:
    """sort saves its indices (a second backward fails); flip saves nothing (it works)."""
    x = E.Tensor(X.copy(), requires_grad=True)
    y = E.sort(x, 1).values.sum()
    y.backward()
    with pytest.raises(GraphFreedError):
        y.backward()
    z = E.flip(x, (0,)).sum()
    z.backward()
    z.backward()
    tx = torch.from_numpy(X.copy()).requires_grad_(True)
    tz = torch.flip(tx, (0,)).sum()
    tz.backward()
    tz.backward()


def test_registration_facts() -> None:
    for name in ("sort", "topk", "kthvalue", "cummax", "cummin"):
        assert OPS[name].results == 2
    median = OPS["median"].results
    assert isinstance(median, Results)
    assert median.evaluate({"input": E.tensor(X), "dim": None}) == (1, False)
    assert median.evaluate({"input": E.tensor(X), "dim": 1}) == (2, True)
    unbind = OPS["unbind"].results
    assert isinstance(unbind, Results)
    assert unbind.evaluate({"input": E.tensor(X), "dim": 1}) == (4, True)
    repeat, tile = OPS["repeat"].estimate, OPS["tile"].estimate
    interleave = OPS["repeat_interleave"].estimate
    assert repeat is not None and tile is not None and interleave is not None
    assert repeat((E.tensor(X), 2, 1, 3), {}) == 2 * 3 * 12
    assert tile((E.tensor(X), (2,)), {}) == 24
    assert interleave((E.tensor(X), 3), {}) == 36
    assert interleave((E.tensor(X), E.tensor(np.array([1, 5, 0]))), {"dim": 0}) == 6 * 12
    assert OPS["cumsum"].inplace and OPS["cumprod"].inplace
    assert not OPS["repeat"].function


def test_inplace_cumsum_records_like_torch() -> None:
    x = E.Tensor(X.copy(), requires_grad=True)
    y = x * 1
    y.cumsum_(1)
    t = torch.from_numpy(X.copy()).requires_grad_(True)
    u = t * 1
    u.cumsum_(1)
    assert_same(y, u)


# -- errors ----------------------------------------------------------------------------------

T = torch.from_numpy(X.copy())
ET = E.Tensor(X.copy())

ERRORS = {
    "cumsum dim": (lambda: E.cumsum(ET, 2), lambda: torch.cumsum(T, 2)),
    "sort dim": (lambda: E.sort(ET, -3), lambda: torch.sort(T, -3)),
    "topk k": (lambda: E.topk(ET, 5), lambda: torch.topk(T, 5)),
    "kthvalue k": (lambda: E.kthvalue(ET, 0), lambda: torch.kthvalue(T, 0)),
    "flip repeated dim": (lambda: E.flip(ET, (0, 0)), lambda: torch.flip(T, (0, 0))),
    "roll misaligned": (lambda: E.roll(ET, 1, (0, 1)), lambda: torch.roll(T, 1, (0, 1))),
    "repeat too few": (lambda: E.repeat(ET, 2), lambda: T.repeat(2)),
    "repeat negative": (lambda: E.repeat(ET, -1, 1), lambda: T.repeat(-1, 1)),
    "interleave negative": (
        lambda: E.repeat_interleave(ET, -1),
        lambda: torch.repeat_interleave(T, -1),
    ),
    "interleave sizes": (
        lambda: E.repeat_interleave(ET, E.tensor(np.array([1, 2])), dim=0),
        lambda: torch.repeat_interleave(T, torch.tensor([1, 2]), dim=0),
    ),
    "narrow start": (lambda: E.narrow(ET, 0, 5, 1), lambda: torch.narrow(T, 0, 5, 1)),
    "narrow negative start": (lambda: E.narrow(ET, 0, -4, 1), lambda: torch.narrow(T, 0, -4, 1)),
    "narrow length": (lambda: E.narrow(ET, 0, 1, 5), lambda: torch.narrow(T, 0, 1, 5)),
    "narrow negative length": (lambda: E.narrow(ET, 0, 1, -1), lambda: torch.narrow(T, 0, 1, -1)),
    "unbind dim": (lambda: E.unbind(ET, 2), lambda: torch.unbind(T, 2)),
    "movedim counts": (
        lambda: E.movedim(ET, (0, 1), (1,)),
        lambda: torch.movedim(T, (0, 1), (1,)),
    ),
    "movedim range": (lambda: E.movedim(ET, 0, 3), lambda: torch.movedim(T, 0, 3)),
    "diagonal same dims": (lambda: E.diagonal(ET, 0, 0, 0), lambda: torch.diagonal(T, 0, 0, 0)),
    "diag 3-d": (
        lambda: E.diag(E.Tensor(np.zeros((2, 2, 2)))),
        lambda: torch.diag(torch.zeros(2, 2, 2)),
    ),
    "trace vector": (lambda: E.trace(E.Tensor(np.zeros(3))), lambda: torch.trace(torch.zeros(3))),
}


@pytest.mark.parametrize("name", list(ERRORS), ids=list(ERRORS))
def test_errors_match_torch(name: str) -> None:
    fn_e, fn_t = ERRORS[name]
    assert_same_error(fn_e, fn_t)


EXTREMES = {
    "minus infinity": (np.array([-math.inf, -math.inf, 0.0, 1.0]), np.array([0.5, -1.0, 2.0, 1.0])),
    "huge then tiny": (np.array([1e3, -1e3, 2.0]), np.ones(3)),
    "tiny then huge, a zero gradient": (np.array([-1e3, 1e3, 2.0]), np.array([1.0, 0.0, -1.0])),
}


@pytest.mark.parametrize("case", list(EXTREMES), ids=list(EXTREMES))
def test_logcumsumexp_extremes_without_warnings(case: str) -> None:
    """PyTorch's log-space gradient: no overflow, NaN where PyTorch has NaN, and no
    numpy warning escapes."""
    x, g = EXTREMES[case]
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    out_t = torch.logcumsumexp(t, 0)
    out_t.backward(torch.from_numpy(g))
    e = E.Tensor(x.copy(), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out_e = E.logcumsumexp(e, 0)
        out_e.backward(E.Tensor(g))
    assert_same(out_e, out_t)
    assert_same(e.grad, t.grad, graph=False)


def test_aminmax() -> None:
    x = np.array([[1.0, 3.0, 3.0], [1.0, 0.0, 0.0]])
    compare(lambda a: E.aminmax(a), lambda a: torch.aminmax(a), x)
    compare(lambda a: E.aminmax(a, dim=1), lambda a: torch.aminmax(a, dim=1), x)
    compare(
        lambda a: E.aminmax(a, dim=0, keepdim=True),
        lambda a: torch.aminmax(a, dim=0, keepdim=True),
        x,
    )
    assert_same_error(lambda: E.aminmax(E.Tensor(np.ones(0))), lambda: torch.aminmax(torch.ones(0)))
    assert_same_error(
        lambda: E.aminmax(E.Tensor(np.ones((2, 0))), dim=1),
        lambda: torch.aminmax(torch.ones(2, 0), dim=1),
    )
    assert OPS["aminmax"].results == 2


def test_diag_estimates_the_matrix_it_builds() -> None:
    v = E.Tensor(np.ones(1000))
    assert OPS["diag_embed"].estimate((v,), {}) == 1000 * 1000
    assert OPS["diag"].estimate((v, 2), {}) == 1002 * 1002
    assert OPS["diag_embed"].estimate((E.Tensor(np.ones((3, 4))),), {"offset": -1}) == 3 * 25
