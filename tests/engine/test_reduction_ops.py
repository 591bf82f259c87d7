"""Reductions against PyTorch: sum, mean, prod, max/min, amax/amin,
argmax/argmin, norm, var/std, logsumexp, softmax and log_softmax. Values,
grad_fn names, gradients (first order through the numpy fast path, second
order through the engine-op rules), tie splitting, zeros in prod, numerical
stability and error messages."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import EngineError
from tests.engine.torch_oracle import assert_same, compare, grad_fn_name, require_torch

torch = require_torch()

pytestmark = pytest.mark.torch

INF = float("inf")
NAN = float("nan")


def check(call: Any, x: np.ndarray, create_graph: bool = False, grad: bool = True) -> None:
    """``call(T, tensor)`` through the oracle: outputs, gradients and, with
    ``create_graph``, second order (float32 sums may round in another order: 2e-5)."""
    tol = 2e-5 if x.dtype == np.float32 else None
    compare(
        lambda t: call(E, t),
        lambda t: call(torch, t),
        x,
        requires_grad=grad,
        second=create_graph,
        rtol=tol,
        atol=tol,
    )


RNG = np.random.default_rng(123)
M = RNG.uniform(-2, 2, (3, 4))
M3 = RNG.uniform(-2, 2, (2, 3, 4))
V = RNG.uniform(-2, 2, 5)
EMPTY = np.zeros((0, 3))
ZERO_D = np.array(1.3)
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, -1.0], [0.5, -4.0, 0.25, 0.5]])
WITH_ZERO = M.copy()
WITH_ZERO[1, 2] = 0.0
TWO_ZEROS = M.copy()
TWO_ZEROS[0, 1] = TWO_ZEROS[0, 3] = 0.0
THREE_ZEROS = M.copy()
THREE_ZEROS[2, :3] = 0.0
WITH_NAN = np.array([[1.0, NAN, 3.0], [2.0, 1.0, 0.0]])
ZEROS = np.zeros((2, 3))

CASES: list[tuple[str, Any, np.ndarray]] = [
    ("sum", lambda T, x: x.sum(), M),
    ("sum dim", lambda T, x: x.sum(1), M),
    ("sum dims keepdim", lambda T, x: x.sum((0, 2), keepdim=True), M3),
    ("sum dim []", lambda T, x: x.sum(dim=[]), M),
    ("sum 0-d", lambda T, x: x.sum(), ZERO_D),
    ("sum empty", lambda T, x: x.sum(0), EMPTY),
    ("mean", lambda T, x: x.mean(), M),
    ("mean dim", lambda T, x: x.mean(-1, keepdim=True), M3),
    ("mean dim []", lambda T, x: x.mean(dim=[]), M),
    ("mean empty", lambda T, x: x.mean(), EMPTY),
    ("mean empty dim 0", lambda T, x: x.mean(0), EMPTY),
    ("mean empty dim 1", lambda T, x: x.mean(1), EMPTY),
    ("prod", lambda T, x: x.prod(), M),
    ("prod dim", lambda T, x: x.prod(1), M),
    ("prod dim keepdim", lambda T, x: x.prod(0, keepdim=True), M),
    ("prod 0-d", lambda T, x: x.prod(), ZERO_D),
    ("prod 0-d dim", lambda T, x: x.prod(0), ZERO_D),
    ("prod one zero", lambda T, x: x.prod(), WITH_ZERO),
    ("prod one zero dim", lambda T, x: x.prod(1), WITH_ZERO),
    ("prod one zero dim0", lambda T, x: x.prod(0), WITH_ZERO),
    ("prod two zeros", lambda T, x: x.prod(), TWO_ZEROS),
    ("prod two zeros dim", lambda T, x: x.prod(1), TWO_ZEROS),
    ("prod three zeros dim", lambda T, x: x.prod(1), THREE_ZEROS),
    ("prod empty", lambda T, x: x.prod(), EMPTY),
    ("prod empty dim", lambda T, x: x.prod(0), EMPTY),
    ("max", lambda T, x: x.max(), M),
    ("max ties", lambda T, x: x.max(), TIES),
    ("min ties", lambda T, x: x.min(), TIES),
    ("max 0-d", lambda T, x: x.max(), ZERO_D),
    ("max nan", lambda T, x: x.max(), WITH_NAN),
    ("max dim", lambda T, x: x.max(1), M),
    ("max dim keepdim", lambda T, x: x.max(0, keepdim=True), M),
    ("max dim ties", lambda T, x: T.max(x, 1), TIES),
    ("min dim ties", lambda T, x: T.min(x, dim=0), TIES),
    ("max dim nan", lambda T, x: x.max(1), WITH_NAN),
    ("max 0-d dim", lambda T, x: x.max(0), ZERO_D),
    ("max 0-d dim keepdim", lambda T, x: x.max(0, True), ZERO_D),
    ("max empty dim", lambda T, x: x.max(1), EMPTY),
    ("amax", lambda T, x: x.amax(), M),
    ("amax dim", lambda T, x: x.amax(1), TIES),
    ("amax dims keepdim", lambda T, x: x.amax((0, 1), keepdim=True), TIES),
    ("amin dim", lambda T, x: x.amin(0), TIES),
    ("amax nan", lambda T, x: x.amax(1), WITH_NAN),
    ("amax 0-d", lambda T, x: x.amax(), ZERO_D),
    ("amax empty", lambda T, x: x.amax(1), EMPTY),
    ("argmax", lambda T, x: x.argmax(), TIES),
    ("argmax dim", lambda T, x: x.argmax(1), TIES),
    ("argmin dim keepdim", lambda T, x: x.argmin(0, keepdim=True), TIES),
    ("argmax keepdim no dim", lambda T, x: x.argmax(keepdim=True), TIES),
    ("argmax 0-d", lambda T, x: x.argmax(0), ZERO_D),
    ("argmax empty", lambda T, x: x.argmax(1), EMPTY),
    ("norm", lambda T, x: x.norm(), M),
    ("norm p1", lambda T, x: x.norm(1), M),
    ("norm p3", lambda T, x: x.norm(3), M),
    ("norm p1.5", lambda T, x: x.norm(1.5), WITH_ZERO),
    ("norm p0.5", lambda T, x: x.norm(0.5), WITH_ZERO),
    ("norm p-1", lambda T, x: x.norm(-1), M),
    ("norm p0", lambda T, x: x.norm(0), WITH_ZERO),
    ("norm inf", lambda T, x: x.norm(INF), TIES),
    ("norm -inf", lambda T, x: x.norm(-INF), TIES),
    ("norm inf dim", lambda T, x: x.norm(INF, dim=1), TIES),
    ("norm fro", lambda T, x: x.norm("fro"), M),
    ("norm fro dims", lambda T, x: x.norm("fro", dim=(0, 2)), M3),
    ("norm dim keepdim", lambda T, x: x.norm(dim=1, keepdim=True), M),
    ("norm keepdim", lambda T, x: x.norm(keepdim=True), M),
    ("norm zero vector", lambda T, x: x.norm(), ZEROS),
    ("norm zero rows", lambda T, x: x.norm(dim=1), ZEROS),
    ("norm p3 zero", lambda T, x: x.norm(3, dim=0), ZEROS),
    ("norm 0-d", lambda T, x: x.norm(), ZERO_D),
    ("norm empty", lambda T, x: x.norm(), EMPTY),
    ("norm torch.norm", lambda T, x: T.norm(x, 2, 1), M),
    ("var", lambda T, x: x.var(), M),
    ("var dim", lambda T, x: x.var(1), M),
    ("var dims keepdim", lambda T, x: x.var((0, 2), keepdim=True), M3),
    ("var correction 0", lambda T, x: x.var(1, correction=0), M),
    ("var correction 2.5", lambda T, x: x.var(0, correction=2.5), M),
    ("var unbiased False", lambda T, x: x.var(1, False), M),
    ("var unbiased positional", lambda T, x: x.var(1, True, True), M),
    ("var bool overload", lambda T, x: x.var(False), M),
    ("var 1-d dim", lambda T, x: x.var(0), V),
    ("var one element", lambda T, x: x.var(), np.array([1.5])),
    ("var one per slice", lambda T, x: x.var(0), M[:1]),
    ("var correction too big", lambda T, x: x.var(correction=20), M),
    ("var empty", lambda T, x: x.var(), EMPTY),
    ("std", lambda T, x: x.std(), M),
    ("std dim", lambda T, x: x.std(1, keepdim=True), M),
    ("std correction 0", lambda T, x: x.std(correction=0), M),
    ("std constant slice", lambda T, x: x.std(1), np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])),
    ("std 0-d", lambda T, x: x.std(correction=0), ZERO_D),
    ("logsumexp", lambda T, x: x.logsumexp(1), M),
    ("logsumexp keepdim", lambda T, x: x.logsumexp(0, True), M),
    ("logsumexp dims", lambda T, x: x.logsumexp((0, 2)), M3),
    ("logsumexp large", lambda T, x: x.logsumexp(1), M * 500),
    (
        "logsumexp -inf",
        lambda T, x: x.logsumexp(1),
        np.array([[-INF, 0.0, 1.0], [-INF, -INF, -INF]]),
    ),
    ("logsumexp 0-d", lambda T, x: x.logsumexp(0), ZERO_D),
    ("logsumexp empty", lambda T, x: x.logsumexp(0), EMPTY),
    ("softmax", lambda T, x: x.softmax(1), M),
    ("softmax dim 0", lambda T, x: T.softmax(x, 0), M),
    ("softmax 3-d", lambda T, x: x.softmax(-2), M3),
    ("softmax large", lambda T, x: x.softmax(1), M * 500),
    ("softmax -inf", lambda T, x: x.softmax(1), np.array([[-INF, 0.0, 1.0], [2.0, -INF, 0.5]])),
    ("softmax 0-d", lambda T, x: x.softmax(0), ZERO_D),
    ("softmax empty", lambda T, x: x.softmax(1), EMPTY),
    ("log_softmax", lambda T, x: x.log_softmax(1), M),
    ("log_softmax dim 0", lambda T, x: T.log_softmax(x, 0), M),
    ("log_softmax large", lambda T, x: x.log_softmax(1), M * 500),
    ("log_softmax 0-d", lambda T, x: x.log_softmax(-1), ZERO_D),
    ("log_softmax empty", lambda T, x: x.log_softmax(0), EMPTY),
]
SECOND_ORDER_SKIP = {"logsumexp -inf", "softmax -inf"}  # NaN second derivatives in both


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_first_order_matches_torch(case: Any, dtype: str) -> None:
    _, call, x = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(call, x.astype(dtype))


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c[0] not in SECOND_ORDER_SKIP],
    ids=[c[0] for c in CASES if c[0] not in SECOND_ORDER_SKIP],
)
def test_second_order_matches_torch(case: Any) -> None:
    _, call, x = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(call, x, create_graph=True)


def test_int_and_bool_inputs() -> None:
    ints = np.array([[1, 2, 3], [4, 0, 6]])
    for call in [
        lambda T, x: x.sum(),
        lambda T, x: x.prod(),
        lambda T, x: x.prod(1),
        lambda T, x: x.max(),
        lambda T, x: x.max(1),
        lambda T, x: x.amax(0),
        lambda T, x: x.argmax(1),
        lambda T, x: x.logsumexp(1),
    ]:
        check(call, ints, grad=False)
    bools = np.array([True, False, True])
    for call in [lambda T, x: x.prod(), lambda T, x: x.sum(), lambda T, x: x.max()]:
        check(call, bools, grad=False)


def test_max_with_tensor_is_maximum() -> None:
    if "maximum" not in E.OPS:
        pytest.skip("maximum is registered by the elementwise module")
    a, b = np.array([1.0, 5.0, 2.0]), np.array([3.0, 5.0, 0.0])
    for name in ("max", "min"):
        xe, ye = E.Tensor(a, requires_grad=True), E.Tensor(b, requires_grad=True)
        xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        oe, ot = getattr(E, name)(xe, ye), getattr(torch, name)(xt, yt)
        assert grad_fn_name(oe) == grad_fn_name(ot)
        oe.sum().backward()
        ot.sum().backward()
        assert_same(xe.grad, xt.grad, graph=False)
        assert_same(ye.grad, yt.grad, graph=False)


def test_max_dim_returns_named_values_and_indices() -> None:
    x = E.Tensor(TIES, requires_grad=True)
    values, indices = x.max(1)
    result = x.max(dim=1)
    assert result.values.shape == (3,) and result.indices.dtype == np.int64
    assert indices.grad_fn is None and not indices.requires_grad
    np.testing.assert_array_equal(indices.data, [1, 0, 0])
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]])


def test_ties_split_evenly() -> None:
    x = E.Tensor(TIES, requires_grad=True)
    x.max().backward()
    expected = np.zeros_like(TIES)
    expected[0, 1] = expected[0, 2] = 0.5
    np.testing.assert_array_equal(x.grad.data, expected)


def test_norm_gradient_at_zero_is_zero() -> None:
    x = E.Tensor(np.zeros(3), requires_grad=True)
    x.norm().backward()
    np.testing.assert_array_equal(x.grad.data, np.zeros(3))


def test_mean_of_empty_is_nan_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(E.Tensor(np.zeros((0,))).mean().item())
        assert np.isnan(E.Tensor(np.zeros((0, 2))).mean(0).data).all()


def test_var_warns_like_torch_when_dof_is_not_positive() -> None:
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        E.Tensor(np.array([1.0])).var()


def test_softmax_is_stable_in_float32() -> None:
    x = np.array([[1000.0, 0.0, -1000.0], [88.0, 89.0, 90.0]], np.float32)
    for name in ("softmax", "log_softmax"):
        mine = getattr(E.Tensor(x), name)(1)
        theirs = getattr(torch.from_numpy(x), name)(1)
        assert np.isfinite(mine._data).all() or name == "log_softmax"
        assert_same(mine, theirs, rtol=2e-5, atol=2e-5)


def test_softmax_dtype_argument() -> None:
    x = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)
    xe = E.Tensor(x, requires_grad=True)
    xt = torch.from_numpy(x).requires_grad_()
    oe, ot = E.softmax(xe, 1, dtype="float64"), torch.softmax(xt, 1, dtype=torch.float64)
    assert oe.dtype == np.float64 and grad_fn_name(oe) == grad_fn_name(ot)
    oe.sum().backward()
    ot.sum().backward()
    assert xe.grad.dtype == np.float32
    assert_same(xe.grad, xt.grad, graph=False, rtol=2e-5, atol=2e-5)


def test_log_softmax_backward_chain_like_cross_entropy() -> None:
    """-log_softmax(x)[range, y].mean(): the gradient is (softmax - onehot) / n."""
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((6, 4))
    y = rng.integers(0, 4, 6)
    x = E.Tensor(logits, requires_grad=True)
    lp = E.log_softmax(x, 1)
    onehot = np.eye(4)[y]
    loss = -E.mean(E.sum(lp * E.Tensor(onehot), 1))
    loss.backward()
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(x.grad.data, (p - onehot) / 6, rtol=1e-12, atol=1e-12)


def test_saved_result_version_check() -> None:
    x = E.Tensor(M.copy(), requires_grad=True)
    y = x.softmax(1)
    with E.no_grad():
        y.mul_(2.0)
    with pytest.raises(EngineError) as err:
        y.sum().backward()
    assert err.value.code == "version_mismatch"


ERRORS = [
    ("max empty", lambda T, x: x.max(), EMPTY),
    ("max empty dim", lambda T, x: x.max(0), EMPTY),
    ("min empty", lambda T, x: x.min(), EMPTY),
    ("amax empty all", lambda T, x: x.amax(), EMPTY),
    ("amax empty dim", lambda T, x: x.amax(0), EMPTY),
    ("argmax empty", lambda T, x: x.argmax(), EMPTY),
    ("argmin empty dim", lambda T, x: x.argmin(0), EMPTY),
    ("argmax bool", lambda T, x: x.argmax(), M > 0),
    ("argmin bool", lambda T, x: x.argmin(), M > 0),
    ("dim out of range", lambda T, x: x.sum(2), M),
    ("amax repeated dim", lambda T, x: x.amax((0, 0)), M),
    ("max dim out of range", lambda T, x: x.max(-3), M),
    ("var int", lambda T, x: x.long().var() if T is torch else T.to(x, "int64").var(), M),
    ("norm int", lambda T, x: x.long().norm() if T is torch else T.to(x, "int64").norm(), M),
    ("norm bad order", lambda T, x: x.norm("foo"), M),
    ("norm inf empty", lambda T, x: x.norm(INF), EMPTY),
    ("norm inf empty dim", lambda T, x: x.norm(-INF, dim=0), EMPTY),
    ("norm fro 3 dims", lambda T, x: x.norm("fro", dim=(0, 1, 2)), M3),
    (
        "softmax int",
        lambda T, x: x.long().softmax(0) if T is torch else T.to(x, "int64").softmax(0),
        M,
    ),
    (
        "softmax int last dim",
        lambda T, x: x.long().softmax(1) if T is torch else T.to(x, "int64").softmax(1),
        M,
    ),
    (
        "log_softmax int",
        lambda T, x: x.long().log_softmax(-1) if T is torch else T.to(x, "int64").log_softmax(-1),
        M,
    ),
    ("norm -1 empty", lambda T, x: x.norm(-1), EMPTY),
    ("norm -1.5 empty dims", lambda T, x: x.norm(-1.5, dim=(1, -2)), EMPTY),
    ("mean int", lambda T, x: x.long().mean() if T is torch else T.to(x, "int64").mean(), M),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_torch(case: Any) -> None:
    _, call, x = case
    with pytest.raises(Exception) as theirs:
        call(torch, torch.from_numpy(x.copy()))
    with pytest.raises(EngineError) as mine:
        call(E, E.Tensor(x.copy()))
    assert str(mine.value) == str(theirs.value)


# -- numpy's names, dtype=, and the newer reductions -----------------------------------------

X = np.array([[1.5, -2.0, 0.0, 4.0], [3.0, 3.0, -1.0, 0.5], [np.nan, 2.0, 1.0, -3.0]])
FINITE = np.array([[1.5, -2.0, 0.0, 4.0], [3.0, 3.0, -1.0, 0.5], [0.25, 2.0, 1.0, -3.0]])

# name -> (data, kwargs): each is called through numpy's keyword names on both sides
AXIS_CALLS: list[tuple[str, np.ndarray, dict[str, Any]]] = [
    (name, FINITE, kwargs)
    for name in [
        "sum",
        "mean",
        "prod",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "var",
        "std",
        "logsumexp",
        "nansum",
        "nanmean",
        "any",
        "all",
        "max",
        "min",
        "var_mean",
        "std_mean",
    ]
    for kwargs in ({"axis": 1}, {"axis": 0, "keepdims": True})
] + [(name, FINITE, {"axis": 1}) for name in ["softmax", "log_softmax", "count_nonzero"]]


def _run(lib: Any, name: str, data: np.ndarray, kwargs: dict[str, Any]) -> tuple[Any, Any]:
    if lib is E:
        x = E.tensor(data, dtype="float64", requires_grad=True)
    else:
        x = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    return x, getattr(lib, name)(x, **kwargs)


@pytest.mark.parametrize(
    ("name", "data", "kwargs"), AXIS_CALLS, ids=[f"{n}-{k}" for n, _, k in AXIS_CALLS]
)
def test_numpy_keyword_names_match_torch(name: str, data: np.ndarray, kwargs: dict) -> None:
    x, mine = _run(E, name, data, kwargs)
    tx, theirs = _run(torch, name, data, kwargs)
    outs = list(mine) if isinstance(mine, tuple) else [mine]
    touts = list(theirs) if isinstance(theirs, tuple) else [theirs]
    assert_same(outs, touts)
    floats = [m for m in outs if m.requires_grad]
    if floats:
        E.backward(floats, [E.ones_like(m) for m in floats])
        torch.autograd.backward(
            [t for t in touts if t.requires_grad],
            [torch.ones_like(t) for t in touts if t.requires_grad],
        )
        assert_same(x.grad, tx.grad, graph=False)


def test_norm_refuses_numpy_names_as_torch() -> None:
    with pytest.raises(TypeError):
        torch.norm(torch.ones(2), axis=0)
    with pytest.raises(TypeError):
        E.norm(E.ones(2), axis=0)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "nansum"])
@pytest.mark.parametrize("source", ["float32", "int32", "uint8", "bool", "float16"])
def test_dtype_argument_matches_torch(name: str, source: str) -> None:
    data = np.array([[1, 2, 0], [3, 1, 2]]).astype(source)
    for dtype in ("float64", "float32"):
        try:
            want = getattr(torch, name)(torch.from_numpy(data.copy()), dtype=getattr(torch, dtype))
        except Exception as exc:
            with pytest.raises(type(exc)):
                getattr(E, name)(E.Tensor(data.copy()), dtype=dtype)
            continue
        got = getattr(E, name)(E.Tensor(data.copy()), dtype=dtype)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.data, want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["sum", "prod", "nansum", "amax", "amin", "any", "all"])
@pytest.mark.parametrize("source", ["int32", "uint8", "int8", "bool", "float16"])
def test_reductions_of_small_dtypes_match_torch(name: str, source: str) -> None:
    data = np.array([[1, 2, 0], [3, 1, 2]]).astype(source)
    for kwargs in ({}, {"dim": 1}):
        if name in ("amax", "amin") and not kwargs:
            kwargs = {"dim": (0, 1)}
        try:
            want = getattr(torch, name)(torch.from_numpy(data.copy()), **kwargs)
        except Exception as exc:
            with pytest.raises(type(exc)):
                getattr(E, name)(E.Tensor(data.copy()), **kwargs)
            continue
        got = getattr(E, name)(E.Tensor(data.copy()), **kwargs)
        assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch.")), kwargs
        np.testing.assert_array_equal(got.data, want.numpy())


def test_sum_in_float64_keeps_the_float32_leaf_gradient() -> None:
    x = E.tensor([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
    tx = torch.tensor([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
    y, ty = x.sum(1, dtype="float64"), tx.sum(1, dtype=torch.float64)
    assert y.dtype == np.float64 and grad_fn_name(y) == grad_fn_name(ty)
    y.backward(E.tensor([1.0, 2.0], dtype="float64"))
    ty.backward(torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.data, tx.grad.numpy())


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_nan_reductions_and_their_gradients_match_torch(dim: Any) -> None:
    data = np.array([[np.nan, 2.0, 1.0], [np.nan, np.nan, 4.0]])
    for name in ("nansum", "nanmean"):
        x = E.tensor(data, dtype="float64", requires_grad=True)
        tx = torch.tensor(data, requires_grad=True)
        args = () if dim is None else (dim,)
        y, ty = getattr(E, name)(x, *args), getattr(torch, name)(tx, *args)
        assert_same(y, ty, graph=False)
        assert grad_fn_name(y) == grad_fn_name(ty)
        y.backward(E.ones_like(y))
        ty.backward(torch.ones_like(ty))
        assert_same(x.grad, tx.grad, graph=False)


def test_logical_reductions_count_nan_as_true() -> None:
    data = np.array([[0.0, np.nan], [0.0, 0.0]])
    for name in ("any", "all"):
        for kwargs in ({}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}):
            got = getattr(E, name)(E.tensor(data), **kwargs)
            want = getattr(torch, name)(torch.tensor(data), **kwargs)
            assert got.tolist() == want.tolist() and got.dtype == np.bool_
    got = E.count_nonzero(E.tensor(data), dim=0)
    assert got.tolist() == torch.count_nonzero(torch.tensor(data), dim=0).tolist()


@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}])
def test_aminmax_values_ties_and_gradients_match_torch(kwargs: dict[str, Any]) -> None:
    data = np.array([[1.0, 3.0, 3.0], [-1.0, 2.0, -1.0]])
    x = E.tensor(data, dtype="float64", requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    lo, hi = E.aminmax(x, **kwargs)
    tlo, thi = torch.aminmax(tx, **kwargs)
    for m, t in ((lo, tlo), (hi, thi)):
        assert_same(m, t, graph=False)
        assert grad_fn_name(m) == grad_fn_name(t) == "AminmaxBackward0"
    (lo * 2 + hi * 3).sum().backward()
    (tlo * 2 + thi * 3).sum().backward()
    assert_same(x.grad, tx.grad, graph=False)
    with pytest.raises(RuntimeError) as theirs:
        torch.aminmax(torch.ones(0))
    with pytest.raises(EngineError) as mine:
        E.aminmax(E.ones(0))
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
@pytest.mark.parametrize(
    "kwargs", [{}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}, {"dim": 0, "correction": 0}]
)
def test_spread_and_mean_together_match_torch(name: str, kwargs: dict[str, Any]) -> None:
    x = E.tensor(FINITE, dtype="float64", requires_grad=True)
    tx = torch.tensor(FINITE, requires_grad=True)
    spread, m = getattr(E, name)(x, **kwargs)
    tspread, tm = getattr(torch, name)(tx, **kwargs)
    for a, b in ((spread, tspread), (m, tm)):
        assert_same(a, b, graph=False)
        assert grad_fn_name(a) == grad_fn_name(b)
    grads = E.grad((spread * spread * 3 + m).sum(), [x], create_graph=True)[0]
    tgrads = torch.autograd.grad((tspread * tspread * 3 + tm).sum(), [tx], create_graph=True)[0]
    assert_same(grads, tgrads, graph=False)
    (second,) = E.grad((grads * grads).sum(), [x])
    (tsecond,) = torch.autograd.grad((tgrads * tgrads).sum(), [tx])
    assert_same(second, tsecond, graph=False)
