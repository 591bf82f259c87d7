"""matmul, mm, bmm, mv, dot, outer, t, transpose and linear against PyTorch:
the result's grad_fn name in every shape case and requires_grad combination,
values and gradients (with and without create_graph), and error messages."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import DtypeMismatchError, EngineError, ShapeMismatchError
from tests.engine.torch_oracle import compare, require_torch

torch = require_torch()

pytestmark = pytest.mark.torch

F = torch.nn.functional


SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3, 4)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((1, 4), (2, 4, 5)),
    ((3, 4), (2, 4, 1)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((1, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (1, 4, 5)),
    ((1, 1, 3, 4), (2, 2, 4, 5)),
    ((3, 4), (2, 2, 4, 5)),
    ((2, 2, 3, 4), (4, 5)),
    ((0, 3), (3, 2)),
    ((2, 0), (0, 3)),
    ((0, 3, 4), (4, 2)),
    ((3, 4), (0, 4, 2)),
    ((2, 3, 0), (0,)),
    ((0,), (2, 0, 4)),
    ((2, 0, 3), (3,)),
    ((2, 3, 0), (0, 4)),
    ((0,), (0,)),
]
REQUIRES = [(True, True), (True, False), (False, True), (False, False)]


@pytest.mark.parametrize("requires", REQUIRES, ids=["both", "a", "b", "none"])
@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_matmul_matches_torch(shapes: Any, requires: tuple[bool, bool]) -> None:
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]
    compare(E.matmul, torch.matmul, *arrays, requires_grad=requires)


@pytest.mark.parametrize("shapes", SHAPES[:17], ids=[f"{a}@{b}" for a, b in SHAPES[:17]])
def test_matmul_double_backward(shapes: Any) -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in shapes]
    compare(E.matmul, torch.matmul, *arrays, requires_grad=(True, True), second=True)


def test_matmul_operator_and_float32() -> None:
    rng = np.random.default_rng(3)
    arrays = [
        rng.standard_normal((4, 3)).astype(np.float32),
        rng.standard_normal((3, 2)).astype(np.float32),
    ]
    compare(lambda a, b: a @ b, lambda a, b: a @ b, *arrays, requires_grad=(True, True))


def test_matmul_non_contiguous_operands() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 4, 3))
    b = rng.standard_normal((5, 4))
    compare(
        lambda x, y: E.matmul(E.transpose(x, 1, 2), E.t(y)),
        lambda x, y: torch.matmul(x.transpose(1, 2), y.t()),
        a,
        b,
        requires_grad=(True, False),
    )


FIXED = [
    ("mm", E.mm, torch.mm, [(2, 3), (3, 4)]),
    ("bmm", E.bmm, torch.bmm, [(2, 2, 3), (2, 3, 4)]),
    ("mv", E.mv, torch.mv, [(2, 3), (3,)]),
    ("dot", E.dot, torch.dot, [(3,), (3,)]),
    ("outer", E.outer, torch.outer, [(3,), (4,)]),
    ("t", E.t, torch.t, [(2, 3)]),
    ("t 1-d", E.t, torch.t, [(3,)]),
    ("transpose", lambda x: E.transpose(x, 0, 2), lambda x: torch.transpose(x, 0, 2), [(2, 3, 4)]),
    ("transpose neg", lambda x: x.transpose(-1, 0), lambda x: x.transpose(-1, 0), [(2, 3)]),
]


@pytest.mark.parametrize("create_graph", [False, True], ids=["first", "second order"])
@pytest.mark.parametrize("case", FIXED, ids=[c[0] for c in FIXED])
def test_fixed_shape_products(case: Any, create_graph: bool) -> None:
    _, fe, ft, shapes = case
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in shapes]
    compare(fe, ft, *arrays, requires_grad=(True,) * len(arrays), second=create_graph)


LINEAR = [
    ((3, 4), (5, 4), (5,)),
    ((3, 4), (5, 4), None),
    ((2, 3, 4), (5, 4), (5,)),
    ((2, 3, 4), (5, 4), None),
    ((6, 2, 3, 4), (5, 4), (5,)),
    ((4,), (5, 4), (5,)),
    ((4,), (5, 4), None),
    ((4,), (4,), None),
    ((3, 4), (4,), None),
    ((3, 4), (5, 4), (3, 5)),
    ((3, 4), (5, 4), (1,)),
    ((3, 4), (5, 4), ()),
    ((2, 3, 4), (5, 4), (3, 5)),
    ((2, 3, 4), (5, 4), ()),
    ((4,), (5, 4), ()),
    ((0, 4), (5, 4), (5,)),
]


@pytest.mark.parametrize(
    "requires",
    [(True, True, True), (True, False, False), (False, True, True)],
    ids=["all", "x", "params"],
)
@pytest.mark.parametrize("shapes", LINEAR, ids=[str(s) for s in LINEAR])
def test_linear_matches_torch(shapes: Any, requires: tuple[bool, ...]) -> None:
    rng = np.random.default_rng(6)
    arrays = [None if s is None else rng.standard_normal(s) for s in shapes]
    compare(E.linear, F.linear, *arrays, requires_grad=requires)


@pytest.mark.parametrize("shapes", LINEAR[:6], ids=[str(s) for s in LINEAR[:6]])
def test_linear_double_backward(shapes: Any) -> None:
    rng = np.random.default_rng(7)
    arrays = [None if s is None else rng.standard_normal(s) for s in shapes]
    compare(E.linear, F.linear, *arrays, requires_grad=(True, True, True), second=True)


def test_linear_non_contiguous_input_adds_bias() -> None:
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal((4, 3, 2)), rng.standard_normal((5, 4)), rng.standard_normal(5)]
    compare(
        lambda x, w, b: E.linear(E.transpose(x, 0, 2), w, b),
        lambda x, w, b: F.linear(x.transpose(0, 2), w, b),
        *arrays,
        requires_grad=(True, True, True),
    )


def test_linear_float32_mixed_bias_dtype_in_place_add() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal((3, 5))
    compare(E.linear, F.linear, *[x, w, b], requires_grad=(True, True, True))


# -- errors --------------------------------------------------------------------------------


def _f32(*s: int) -> np.ndarray:
    return np.ones(s, np.float32)


def _f64(*s: int) -> np.ndarray:
    return np.ones(s, np.float64)


def _i64(*s: int) -> np.ndarray:
    return np.ones(s, np.int64)


def _b(*s: int) -> np.ndarray:
    return np.ones(s, bool)


ERRORS = [
    ("matmul", (_f32(2, 3), _f64(3, 4))),
    ("matmul", (_f64(2, 3), _f32(3, 4))),
    ("matmul", (_f32(3), _f64(3))),
    ("matmul", (_f32(2, 3), _f64(3))),
    ("matmul", (_f64(2, 3), _f32(3))),
    ("matmul", (_f32(3), _f64(3, 4))),
    ("matmul", (_f32(2, 2, 3), _f64(2, 3, 4))),
    ("matmul", (_f32(2, 2, 3), _f64(3, 4))),
    ("matmul", (_f32(2, 2, 3), _f64(3))),
    ("matmul", (_i64(2, 3), _f32(3, 4))),
    ("matmul", (_f32(2, 3), _f32(4, 5))),
    ("matmul", (_f32(3), _f32(4))),
    ("matmul", (_f32(2, 3), _f32(4))),
    ("matmul", (_f32(3), _f32(4, 5))),
    ("matmul", (_f32(2, 2, 3), _f32(2, 4, 5))),
    ("matmul", (_f32(2, 2, 3), _f32(3, 3, 5))),
    ("matmul", (_f32(2, 2, 3), _f32(4, 5))),
    ("matmul", (_f32(2, 3), _f32(2, 4, 5))),
    ("matmul", (_f32(2, 2, 3), _f32(4))),
    ("matmul", (_f32(3), _f32(2, 4, 5))),
    ("matmul", (_f32(), _f32(3))),
    ("matmul", (_f32(3), _f32())),
    ("matmul", (_b(2, 2), _b(2, 2))),
    ("matmul", (_b(3), _b(3))),
    ("matmul", (_b(2, 3), _b(3))),
    ("matmul", (_b(2, 2, 3), _b(2, 3, 2))),
    ("mm", (_f32(3), _f32(3, 2))),
    ("mm", (_f32(2, 3), _f32(2, 3, 4))),
    ("mm", (_f32(2, 3), _f32(4, 2))),
    ("mm", (_f32(2, 3), _f64(3, 2))),
    ("bmm", (_f32(2, 3), _f32(3, 2))),
    ("bmm", (_f32(2, 2, 3), _f32(3, 4))),
    ("bmm", (_f32(2, 2, 3), _f32(3, 3, 2))),
    ("bmm", (_f32(2, 2, 3), _f32(2, 4, 2))),
    ("bmm", (_f32(2, 2, 3), _f64(2, 3, 2))),
    ("dot", (_f32(2, 3), _f32(2, 3))),
    ("dot", (_f32(3), _f64(3))),
    ("dot", (_f32(3), _f32(2))),
    ("mv", (_f32(3), _f32(3))),
    ("mv", (_f32(2, 3), _f64(3))),
    ("mv", (_f32(2, 3), _f32(2))),
    ("outer", (_f32(3, 1), _f32(2))),
    ("outer", (_f32(3), _f32(3, 1))),
    ("t", (_f32(2, 3, 4),)),
    ("transpose", (_f32(2, 3), 0, 2)),
]
LINEAR_ERRORS = [
    (_f32(2, 3), _f64(4, 3), None),
    (_f32(2, 3), _f32(4, 3), _f64(4)),
    (_f32(2, 3), _f32(4, 2), None),
    (_f32(2, 3), _f32(4, 3), _f32(3)),
    (_f32(2, 3), _f32(4, 3), _f32(3, 4)),
    (_f32(2, 3), _f32(4, 3), _f32(1, 2, 4)),
    (_f32(), _f32(4, 3), None),
    (_f32(3), _f32(), None),
    (_f32(2, 3), _f32(3), _f32()),
    (_f32(2, 3), _f32(2, 4, 3), None),
    (_f32(5, 2, 3), _f32(4, 3), _f64(4)),
    (_f32(5, 2, 3), _f32(4, 3), _f32(3, 5, 2, 4)),
    (_i64(2, 3), _f32(4, 3), None),
]


def _messages(fe: Any, ft: Any, args: tuple[Any, ...]) -> tuple[EngineError, str]:
    ea = [E.Tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    ta = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(Exception) as theirs:
        ft(*ta)
    with pytest.raises(EngineError) as mine:
        fe(*ea)
    return mine.value, str(theirs.value)


@pytest.mark.parametrize(
    "case",
    ERRORS,
    ids=[
        f"{n}{tuple(getattr(a, 'shape', a) for a in args)}-{i}"
        for i, (n, args) in enumerate(ERRORS)
    ],
)
def test_errors_match_torch(case: Any) -> None:
    name, args = case
    mine, theirs = _messages(getattr(E, name), getattr(torch, name), args)
    assert str(mine) == theirs
    assert isinstance(mine, (ShapeMismatchError, DtypeMismatchError)) or mine.code in (
        "index_out_of_range",
    )


@pytest.mark.parametrize("args", LINEAR_ERRORS, ids=[str(i) for i in range(len(LINEAR_ERRORS))])
def test_linear_errors_match_torch(args: Any) -> None:
    mine, theirs = _messages(E.linear, F.linear, args)
    assert str(mine) == theirs


def test_error_codes() -> None:
    with pytest.raises(DtypeMismatchError) as err:
        E.matmul(E.Tensor(_f32(2, 3)), E.Tensor(_f64(3, 4)))
    assert err.value.code == "dtype_mismatch"
    assert str(err.value) == "expected m1 and m2 to have the same dtype, but got: float != double"
    with pytest.raises(ShapeMismatchError) as shape_err:
        E.matmul(E.Tensor(_f32(2, 3)), E.Tensor(_f32(4, 5)))
    assert shape_err.value.code == "shape_mismatch"
    assert str(shape_err.value) == "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"


def test_integer_matmul_has_no_grad() -> None:
    for shapes in [((2, 3), (3, 4)), ((3,), (3,)), ((2, 2, 3), (2, 3, 4)), ((2, 3), (3,))]:
        a, b = (np.arange(np.prod(s)).reshape(s) for s in shapes)
        mine = E.matmul(E.Tensor(a), E.Tensor(b))
        theirs = torch.matmul(torch.from_numpy(a), torch.from_numpy(b))
        assert mine.dtype == np.int64 and not mine.requires_grad
        np.testing.assert_array_equal(mine.data, theirs.numpy())


@pytest.mark.parametrize("view", ["t", "transpose"])
def test_views_share_the_version_counter(view: str) -> None:
    """t/transpose are views: writing through them bumps the base's version, and an
    in-place write on a view of a leaf that requires grad raises, as in PyTorch."""

    def make(T: Any, x: Any) -> Any:
        return x.t() if view == "t" else T.transpose(x, 0, 1)

    for T in (E, torch):
        x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        with T.no_grad():
            make(T, x).mul_(2)
        assert x._version == 1
        with pytest.raises((EngineError, RuntimeError)):
            make(T, x).mul_(2)
        y = x * 1
        z = y**2  # saves y
        make(T, y).mul_(2)
        with pytest.raises((EngineError, RuntimeError)) as err:
            z.sum().backward()
        assert "modified by an inplace operation" in str(err.value)


def test_views_share_memory_and_freeing() -> None:
    x = E.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x.t()
    assert np.shares_memory(y.data, x.data)
    z = E.transpose(x, 0, 1)
    assert np.shares_memory(z.data, x.data)
    # mm saves its operands: a second backward without retain_graph fails as in PyTorch
    w = E.Tensor(np.ones((3, 2)), requires_grad=True)
    out = E.sum(E.mm(x, w))
    out.backward()
    with pytest.raises(EngineError) as err:
        out.backward()
    assert err.value.code == "graph_freed"


def test_linear_backward_reuses_buffers() -> None:
    """linear's weight gradient is one fresh matmul result: no extra copy on the way."""
    rng = np.random.default_rng(10)
    x = E.Tensor(rng.standard_normal((64, 20)).astype(np.float32))
    w = E.Tensor(rng.standard_normal((8, 20)).astype(np.float32), requires_grad=True)
    b = E.Tensor(np.zeros(8, np.float32), requires_grad=True)
    out = E.linear(x, w, b)
    assert out.grad_fn.name == "AddmmBackward0"
    E.sum(out).backward()
    np.testing.assert_allclose(w.grad.data, np.ones((64, 8), np.float32).T @ x.data, rtol=1e-5)
    np.testing.assert_allclose(b.grad.data, np.full(8, 64.0, np.float32))
    assert w.grad.dtype == np.float32 and w.grad._data.flags.c_contiguous


@pytest.mark.parametrize("create_graph", [False, True])
def test_hessian_of_quadratic_form(create_graph: bool) -> None:
    """x^T A x: gradient (A + A^T) x, Hessian A + A^T (second order through matmul)."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 4))
    x = E.Tensor(rng.standard_normal(4), requires_grad=True)
    y = E.matmul(x, E.matmul(E.Tensor(a), x))
    (g,) = E.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.data, (a + a.T) @ x.data)
    rows = [E.grad(g[i], x, retain_graph=True)[0].data for i in range(4)]
    np.testing.assert_allclose(np.stack(rows), a + a.T)


def test_every_shape_case_is_covered_by_samples() -> None:
    notes = {s.note for s in E.OPS["matmul"].samples(np.random.default_rng(0))}
    for needed in [
        "1-d @ 1-d",
        "2-d @ 2-d",
        "2-d @ 1-d",
        "1-d @ 2-d",
        "3-d @ 3-d",
        "3-d @ 2-d",
        "broadcast batch",
    ]:
        assert needed in notes


def test_all_combinations_small() -> None:
    """Exhaustive small sweep: every pair of ranks 1..4 with broadcastable batches."""
    rng = np.random.default_rng(12)
    for ra, rb in itertools.product(range(1, 5), repeat=2):
        sa = (2, 1, 3, 4)[4 - ra :] if ra > 1 else (4,)
        sb = (1, 2, 4, 2)[4 - rb :] if rb > 1 else (4,)
        arrays = [rng.standard_normal(sa), rng.standard_normal(sb)]
        for req in REQUIRES[:3]:
            compare(E.matmul, torch.matmul, *arrays, requires_grad=req)
