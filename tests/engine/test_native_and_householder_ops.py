"""ATen's native norms, softmax pieces, Householder and LDL ops against PyTorch, where
op_db's samples leave a gap: running statistics written in place, a fully masked row's
zero gradient, second-order gradients of the reflectors, LDL's pivots and
broadcast solves, and the low-rank SVD following PyTorch's random stream."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E
from tests.engine.torch_oracle import require_torch

torch = require_torch()

pytestmark = pytest.mark.torch

RNG = np.random.default_rng(15)


def _pair(arr: np.ndarray, grad: bool = True) -> tuple[Any, Any]:
    return E.Tensor(arr.copy(), requires_grad=grad), torch.from_numpy(arr.copy()).requires_grad_(
        grad
    )


def test_batch_norm_with_update_writes_running_stats_as_torch() -> None:
    x = RNG.standard_normal((4, 3, 2))
    rm, rv = RNG.standard_normal(3), RNG.random(3) + 0.5
    ex, tx = _pair(x)
    erm, trm = _pair(rm, False)
    erv, trv = _pair(rv, False)
    e = E._batch_norm_with_update(ex, None, None, erm, erv, 0.3, 1e-5)
    t = torch.ops.aten._batch_norm_with_update(tx, None, None, trm, trv, 0.3, 1e-5)
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
        assert np.dtype(a.dtype).name == str(b.dtype).removeprefix("torch.")
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-12)
    assert e[0].grad_fn.name == type(t[0].grad_fn).__name__ == "BatchNormWithUpdateBackward0"
    assert not e[1].requires_grad and not t[1].requires_grad


def test_native_group_norm_statistics_carry_gradients() -> None:
    x = RNG.standard_normal((2, 4, 3))
    ex, tx = _pair(x)
    e = E.native_group_norm(ex, None, None, 2, 4, 3, 2, 1e-5)
    t = torch.native_group_norm(tx, None, None, 2, 4, 3, 2, 1e-5)
    ge = E.grad([e[1].sum() + (e[2] * e[2]).sum()], [ex])[0]
    gt = torch.autograd.grad([t[1].sum() + (t[2] * t[2]).sum()], [tx])[0]
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-8, atol=1e-10)
    assert [a.grad_fn.name for a in e] == [type(b.grad_fn).__name__ for b in t]


def test_safe_softmax_masked_row_is_zero_with_zero_gradient() -> None:
    x = RNG.standard_normal((3, 4))
    x[1] = -np.inf
    x[2, :2] = -np.inf
    ex, tx = _pair(x)
    e = E._safe_softmax(ex, 1)
    t = torch.ops.aten._safe_softmax.default(tx, 1)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-12)
    g = RNG.standard_normal((3, 4))
    ge = E.grad([e], [ex], [E.tensor(g)])[0].numpy()
    gt = torch.autograd.grad([t], [tx], [torch.from_numpy(g)])[0].numpy()
    np.testing.assert_allclose(ge, gt, rtol=1e-10, atol=1e-12)
    assert np.all(ge[1] == 0) and np.isfinite(ge).all()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_householder_product_gradients_of_second_order(k: int) -> None:
    a, tau = RNG.uniform(-1, 1, (4, 3)), RNG.uniform(-1, 1, k)
    (ea, ta), (et, tt) = _pair(a), _pair(tau)
    e = E.linalg.householder_product(ea, et)
    t = torch.linalg.householder_product(ta, tt)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal((4, 3))
    ge = E.grad([e], [ea, et], [E.tensor(g)], create_graph=True)
    gt = torch.autograd.grad([t], [ta, tt], [torch.from_numpy(g)], create_graph=True)
    for x, y in zip(ge, gt):
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-9, atol=1e-12)
        assert x.requires_grad == y.requires_grad
    assert e.grad_fn.name == "LinalgHouseholderProductBackward0"


@pytest.mark.parametrize(
    ("left", "transpose"), [(True, False), (True, True), (False, False), (False, True)]
)
def test_ormqr_from_geqrf_matches_torch(left: bool, transpose: bool) -> None:
    a = RNG.uniform(-1, 1, (2, 5, 3))
    qr_e, tau_e = E.geqrf(E.tensor(a))
    qr_t, tau_t = torch.geqrf(torch.from_numpy(a))
    np.testing.assert_allclose(qr_e.numpy(), qr_t.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tau_e.numpy(), tau_t.numpy(), rtol=1e-10, atol=1e-12)
    c = RNG.standard_normal((2, 5, 4) if left else (2, 4, 5))
    ec, tc = _pair(c)
    e = E.ormqr(qr_e, tau_e, ec, left, transpose)
    t = torch.ormqr(qr_t, tau_t, tc, left, transpose)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_ldl_factor_and_broadcast_solve_match_torch() -> None:
    a = RNG.standard_normal((2, 4, 4))
    a = a + a.transpose(0, 2, 1)  # symmetric, indefinite: 2x2 pivots may appear
    e = E.linalg.ldl_factor_ex(E.tensor(a))
    t = torch.linalg.ldl_factor_ex(torch.from_numpy(a))
    for x, y in zip(e, t):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)
        assert np.dtype(x.dtype).name == str(y.dtype).removeprefix("torch.")
    b = RNG.standard_normal((4, 2))  # one B for both matrices
    xe = E.linalg.ldl_solve(e[0], e[1], E.tensor(b))
    xt = torch.linalg.ldl_solve(t[0], t[1], torch.from_numpy(b))
    np.testing.assert_allclose(xe.numpy(), xt.numpy(), rtol=1e-9, atol=1e-11)


def test_svd_lowrank_follows_torch_random_stream() -> None:
    a = RNG.standard_normal((6, 5))  # full rank: the result depends on the random basis
    E.manual_seed(3)
    torch.manual_seed(3)
    ue, se, ve = E.svd_lowrank(E.tensor(a), q=3)
    ut, st, vt = torch.svd_lowrank(torch.from_numpy(a), q=3)
    np.testing.assert_allclose(se.numpy(), st.numpy(), rtol=1e-9)
    np.testing.assert_allclose((ue @ ve.mT).numpy(), (ut @ vt.mT).numpy(), rtol=1e-8, atol=1e-10)


def test_linear_cross_entropy_errors_as_torch() -> None:
    x, w = E.tensor(RNG.standard_normal((2, 3))), E.tensor(RNG.standard_normal((2, 4)))
    with pytest.raises(RuntimeError, match=r"got 3 and 4, respectively"):
        E.nn.functional.linear_cross_entropy(x, w, E.tensor(np.array([0, 1])))
