"""Linear algebra against PyTorch, beyond the op database: second-order gradients,
eigh/cholesky gradchecked through a symmetrizing wrapper (as PyTorch's OpInfo
does: a perturbation of one entry breaks symmetry), eigen/singular vectors
compared through sign-invariant functions (no sign alignment), det at a singular
matrix, and LinAlgError / shape errors with PyTorch's messages."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import engine as E
from engine import gradcheck, gradgradcheck
from engine.errors import EngineError
from engine.ops.decompositions import LinAlgError
from tests.engine.test_cumulative_ops import compare
from tests.engine.torch_oracle import assert_same, assert_same_error, require_torch

torch = require_torch()

pytestmark = pytest.mark.torch

RNG = np.random.default_rng(31)


def well_conditioned(*shape: int) -> np.ndarray:
    n = shape[-1]
    return RNG.uniform(-1, 1, shape) + n * np.eye(n)


def spd(*shape: int) -> np.ndarray:
    b = RNG.uniform(-1, 1, shape)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


def distinct_spectrum(*shape: int) -> np.ndarray:
    q, _ = np.linalg.qr(RNG.uniform(-1, 1, shape))
    lam = np.linspace(-2.0, 3.0, shape[-1])
    a = (q * lam) @ np.swapaxes(q, -1, -2)
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def distinct_singular(*shape: int) -> np.ndarray:
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(RNG.uniform(-1, 1, shape[:-2] + (m, k)))
    v, _ = np.linalg.qr(RNG.uniform(-1, 1, shape[:-2] + (n, k)))
    return (u * np.linspace(3.0, 0.8, k)) @ np.swapaxes(v, -1, -2)


def sym(lib: Any, a: Any) -> Any:
    return (a + lib.transpose(a, -2, -1)) * 0.5


# -- second order against PyTorch ---------------------------------------------------------

LA = torch.linalg
SQUARE = well_conditioned(2, 3, 3)
CASES: dict[str, tuple[Any, Any, list[np.ndarray]]] = {
    "inv": (E.inv, LA.inv, [SQUARE]),
    "inverse": (E.inverse, torch.inverse, [SQUARE]),
    "det": (E.det, LA.det, [SQUARE]),
    "slogdet": (E.slogdet, LA.slogdet, [SQUARE]),
    "solve matrix": (E.solve, LA.solve, [SQUARE, RNG.uniform(-1, 1, (2, 3, 2))]),
    "solve vectors": (E.solve, LA.solve, [SQUARE, RNG.uniform(-1, 1, (2, 3))]),
    "solve left=False": (
        lambda a, b: E.solve(a, b, left=False),
        lambda a, b: LA.solve(a, b, left=False),
        [SQUARE, RNG.uniform(-1, 1, (2, 4, 3))],
    ),
    "solve broadcast": (E.solve, LA.solve, [well_conditioned(3, 3), RNG.uniform(-1, 1, (2, 3, 1))]),
    "cholesky": (
        lambda a: E.cholesky(sym(E, a)),
        lambda a: LA.cholesky(sym(torch, a)),
        [spd(2, 3, 3)],
    ),
    "cholesky upper": (
        lambda a: E.cholesky(sym(E, a), upper=True),
        lambda a: LA.cholesky(sym(torch, a), upper=True),
        [spd(3, 3)],
    ),
    "qr tall": (E.qr, LA.qr, [RNG.uniform(-1, 1, (4, 3)) + 2 * np.eye(4, 3)]),
    "qr wide": (E.qr, LA.qr, [RNG.uniform(-1, 1, (2, 4)) + 2 * np.eye(2, 4)]),
    "svdvals": (E.svdvals, LA.svdvals, [distinct_singular(2, 4, 3)]),
    "pinv tall": (E.pinv, LA.pinv, [distinct_singular(4, 2)]),
    "pinv wide": (E.pinv, LA.pinv, [distinct_singular(2, 2, 3)]),
    "eigh eigenvalues": (
        lambda a: E.eigh(sym(E, a)).eigenvalues,
        lambda a: LA.eigh(sym(torch, a)).eigenvalues,
        [distinct_spectrum(2, 3, 3)],
    ),
    "eigh projector": (
        # V diag(c) V^T does not depend on the eigenvectors' signs
        lambda a: _projector(E, E.eigh(sym(E, a)).eigenvectors),
        lambda a: _projector(torch, LA.eigh(sym(torch, a)).eigenvectors),
        [distinct_spectrum(3, 3)],
    ),
    "svd pairs": (
        # U diag(c) Vh does not depend on the joint sign of each (u_k, v_k)
        lambda a: _pairs(E, E.linalg.svd(a, full_matrices=False)),
        lambda a: _pairs(torch, LA.svd(a, full_matrices=False)),
        [distinct_singular(2, 4, 3)],
    ),
    "svd wide pairs": (
        lambda a: _pairs(E, E.linalg.svd(a, full_matrices=False)),
        lambda a: _pairs(torch, LA.svd(a, full_matrices=False)),
        [distinct_singular(2, 4)],
    ),
}


def _projector(lib: Any, v: Any) -> Any:
    c = (
        lib.tensor(np.array([1.0, -2.0, 0.5]))
        if lib is E
        else torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    )
    return lib.matmul(v * c, lib.transpose(v, -2, -1))


def _pairs(lib: Any, usv: Any) -> Any:
    u, s, vh = usv
    k = s.shape[-1]
    c = np.linspace(1.0, -1.0, k) + 2.0
    ct = E.tensor(c) if lib is E else torch.from_numpy(c)
    return lib.matmul(u * ct, vh) + lib.matmul(u * s.unsqueeze(-2), vh)


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_second_order_matches_torch(name: str) -> None:
    fn_e, fn_t, arrays = CASES[name]
    compare(fn_e, fn_t, *arrays)


NORMS = [
    ("fro", (-2, -1), False),
    ("nuc", (-2, -1), False),
    ("nuc", (-2, -1), True),
    (2, (-2, -1), False),
    (2, (0, 2), True),
    (-2, (-2, -1), False),
    (1, (-2, -1), False),
    (1, (-1, -2), True),
    (-1, (0, 1), False),
    (math.inf, (-2, -1), False),
    (-math.inf, (-2, -1), True),
]


@pytest.mark.parametrize("ord_,dim,keepdim", NORMS, ids=[f"{o}-{d}-{k}" for o, d, k in NORMS])
def test_matrix_norm(ord_: Any, dim: Any, keepdim: bool) -> None:
    a = distinct_singular(3, 3, 3) + RNG.uniform(-0.1, 0.1, (3, 3, 3))
    compare(
        lambda x: E.matrix_norm(x, ord_, dim, keepdim),
        lambda x: LA.matrix_norm(x, ord_, dim, keepdim),
        a,
    )


@pytest.mark.parametrize("ord_", [2, 1, 3, 0.5, math.inf, -math.inf, 0])
def test_vector_norm(ord_: float) -> None:
    x = RNG.uniform(0.3, 2.0, (2, 3)) * np.array([1, -1, 1])
    compare(lambda a: E.vector_norm(a, ord_, 1), lambda a: LA.vector_norm(a, ord_, 1), x)
    compare(lambda a: E.vector_norm(a, ord_), lambda a: LA.vector_norm(a, ord_), x)


# -- gradcheck through a symmetrizing wrapper ---------------------------------------------


@pytest.mark.parametrize(
    "name,fn,a",
    [
        ("cholesky", lambda x: E.cholesky(sym(E, x)), spd(2, 3, 3)),
        ("cholesky upper", lambda x: E.cholesky(sym(E, x), upper=True), spd(3, 3)),
        ("eigh", lambda x: tuple(E.eigh(sym(E, x))), distinct_spectrum(2, 3, 3)),
        ("eigh upper", lambda x: tuple(E.eigh(sym(E, x), "U")), distinct_spectrum(3, 3)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_hermitian_ops_gradcheck(name: str, fn: Any, a: np.ndarray) -> None:
    x = E.Tensor(a.copy(), requires_grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_eigenvectors_are_a_valid_decomposition() -> None:
    a = distinct_spectrum(2, 4, 4)
    lam, v = E.eigh(E.tensor(a))
    np.testing.assert_allclose(
        (v.numpy() * lam.numpy()[..., None, :]) @ np.swapaxes(v.numpy(), -1, -2), a, atol=1e-12
    )
    u, s, vh = E.linalg.svd(E.tensor(a), full_matrices=False)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a, atol=1e-12)
    tl, _ = torch.linalg.eigh(torch.from_numpy(a))
    np.testing.assert_allclose(lam.data, tl.numpy(), atol=1e-12)


# -- det at a singular matrix -------------------------------------------------------------

SINGULAR = np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.0, 2.0]])


def test_det_gradient_at_a_singular_matrix() -> None:
    """PyTorch's plain backward gives zero there; with create_graph it switches to the
    SVD formula and gives the adjugate. The engine does the same."""
    compare(E.det, LA.det, SINGULAR, second=False)
    x = E.Tensor(SINGULAR.copy(), requires_grad=True)
    t = torch.from_numpy(SINGULAR.copy()).requires_grad_(True)
    (ge,) = E.grad(E.det(x), [x], create_graph=True)
    (gt,) = torch.autograd.grad(LA.det(t), [t], create_graph=True)
    assert_same(ge, gt)
    cofactors = np.array(
        [
            [
                (-1) ** (i + j) * np.linalg.det(np.delete(np.delete(SINGULAR, i, 0), j, 1))
                for j in range(3)
            ]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(ge.data, cofactors, atol=1e-12)


# -- errors -------------------------------------------------------------------------------

S2 = np.array([[1.0, 2.0], [2.0, 4.0]])
BATCH = np.stack([np.eye(2), S2])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])


def _pair(a: np.ndarray) -> tuple[Any, Any]:
    return E.tensor(a), torch.from_numpy(a.copy())


LINALG_ERRORS = {
    "inv singular": (lambda L, a: L.inv(a), S2),
    "inv singular batch": (lambda L, a: L.inv(a), BATCH),
    "solve singular": (lambda L, a: L.solve(a, a[..., 0]), S2),
    "solve singular batch": (lambda L, a: L.solve(a, a[..., :1]), BATCH),
    "cholesky not positive-definite": (lambda L, a: L.cholesky(a), NOT_PD),
    "cholesky batch": (lambda L, a: L.cholesky(a), np.stack([np.eye(2), NOT_PD])),
    "cholesky zero": (lambda L, a: L.cholesky(a), np.zeros((2, 2))),
}


@pytest.mark.parametrize("name", list(LINALG_ERRORS), ids=list(LINALG_ERRORS))
def test_linalg_errors(name: str) -> None:
    """LinAlgError, a RuntimeError as torch.linalg.LinAlgError, with PyTorch's message."""
    fn, a = LINALG_ERRORS[name]
    ea, ta = _pair(a)
    with pytest.raises(torch.linalg.LinAlgError) as theirs:
        fn(torch.linalg, ta)
    with pytest.raises(LinAlgError) as mine:
        fn(E, ea)
    assert isinstance(mine.value, RuntimeError)
    assert str(mine.value) == str(theirs.value)


RECT, VEC = np.ones((2, 3)), np.ones(3)
ERRORS = {
    "inv not square": (lambda: E.inv(E.tensor(RECT)), lambda: LA.inv(torch.ones(2, 3))),
    "inv vector": (lambda: E.inv(E.tensor(VEC)), lambda: LA.inv(torch.ones(3))),
    "inv integer": (
        lambda: E.inv(E.tensor(np.eye(2, dtype=np.int64))),
        lambda: LA.inv(torch.eye(2, dtype=torch.int64)),
    ),
    "det not square": (lambda: E.det(E.tensor(RECT)), lambda: LA.det(torch.ones(2, 3))),
    "eigh not square": (lambda: E.eigh(E.tensor(RECT)), lambda: LA.eigh(torch.ones(2, 3))),
    "svd vector": (lambda: E.linalg.svd(E.tensor(VEC)), lambda: LA.svd(torch.ones(3))),
    "qr vector": (lambda: E.qr(E.tensor(VEC)), lambda: LA.qr(torch.ones(3))),
    "solve shapes": (
        lambda: E.solve(E.tensor(np.eye(2)), E.tensor(VEC)),
        lambda: LA.solve(torch.eye(2, dtype=torch.float64), torch.ones(3, dtype=torch.float64)),
    ),
    "solve left=False vector": (
        lambda: E.solve(E.tensor(np.eye(3)), E.tensor(VEC), left=False),
        lambda: LA.solve(
            torch.eye(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), left=False
        ),
    ),
    "solve left=False shapes": (
        lambda: E.solve(E.tensor(np.eye(3)), E.tensor(np.ones((3, 2))), left=False),
        lambda: LA.solve(
            torch.eye(3, dtype=torch.float64), torch.ones(3, 2, dtype=torch.float64), left=False
        ),
    ),
    "matrix_norm vector": (
        lambda: E.matrix_norm(E.tensor(VEC)),
        lambda: LA.matrix_norm(torch.ones(3)),
    ),
    "matrix_norm order": (
        lambda: E.matrix_norm(E.tensor(np.eye(2)), 3),
        lambda: LA.matrix_norm(torch.eye(2), 3),
    ),
    "vector_norm dim": (
        lambda: E.vector_norm(E.tensor(np.ones(2)), dim=2),
        lambda: LA.vector_norm(torch.ones(2), dim=2),
    ),
}


@pytest.mark.parametrize("name", list(ERRORS), ids=list(ERRORS))
def test_errors_match_torch(name: str) -> None:
    fn_e, fn_t = ERRORS[name]
    assert_same_error(fn_e, fn_t)


def test_qr_complete_tall_is_not_differentiable() -> None:
    a = RNG.uniform(-1, 1, (3, 2))
    x = E.Tensor(a.copy(), requires_grad=True)
    t = torch.from_numpy(a.copy()).requires_grad_(True)
    q, _ = E.qr(x, mode="complete")
    tq, _ = LA.qr(t, mode="complete")
    with pytest.raises(RuntimeError) as theirs:
        tq.sum().backward()
    with pytest.raises(EngineError) as mine:
        q.sum().backward()
    assert str(mine.value) == str(theirs.value)


NON_FINITE = {
    "nan": np.array([[1.0, np.nan], [np.nan, 2.0]]),
    "inf in a batch": np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, np.inf], [np.inf, 2.0]]]),
}
OPS_ON_ONE = ["inv", "det", "slogdet", "cholesky", "qr", "eigh", "svd", "svdvals", "pinv"]


@pytest.mark.parametrize("op", OPS_ON_ONE)
@pytest.mark.parametrize("case", list(NON_FINITE), ids=list(NON_FINITE))
def test_non_finite_inputs(case: str, op: str) -> None:
    """NaN/inf: the same values, or the same LinAlgError, as PyTorch, and no numpy warning."""
    a = NON_FINITE[case]
    try:
        theirs = getattr(LA, op)(torch.from_numpy(a.copy()))
    except RuntimeError as exc:
        with pytest.raises(LinAlgError) as mine:
            getattr(E.linalg, op)(E.tensor(a))
        assert str(mine.value) == str(exc)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = getattr(E.linalg, op)(E.tensor(a))
    if op in ("inv", "det", "slogdet"):
        assert_same(result, theirs)


def test_qr_mode_r_is_not_differentiable() -> None:
    a = well_conditioned(3, 3)
    x = E.Tensor(a.copy(), requires_grad=True)
    t = torch.from_numpy(a.copy()).requires_grad_(True)
    mine, theirs = E.qr(x, mode="r"), LA.qr(t, mode="r")
    assert_same(tuple(mine), tuple(theirs))
    with pytest.raises(RuntimeError) as their_error:
        theirs.R.sum().backward()
    with pytest.raises(EngineError) as my_error:
        mine.R.sum().backward()
    assert str(my_error.value) == str(their_error.value)
