"""``linalg.eig`` and ``linalg.eigvals`` against PyTorch and finite differences, and the
complex gradients of the ops their backward is made of (PyTorch's conjugate convention).

An eigenvector has a free phase: gradients are checked through functions that do not
see it (the eigenvalues, ``|V|``), as op_db's ``sample_inputs_linalg_eig`` does; a loss
that sees it fails with PyTorch's error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import engine.autograd.forward_ad as fwAD
import numpy as np
import pytest

import engine
from engine import Tensor, gradcheck, gradgradcheck
from engine.errors import BadArgumentsError
from engine.ops.complex_ops import ImagBackward0, RealBackward0
from tests.engine.torch_oracle import assert_values

RNG = np.random.default_rng(7)
REAL = RNG.standard_normal((4, 4))  # complex-conjugate pairs and real eigenvalues
BATCH = RNG.standard_normal((2, 3, 3))
CPLX = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))


def _as_real(m: Any, z: Any) -> Any:
    """``view_as_real`` (the engine's parts, stacked: it has no public ``view_as_real``)."""
    if m is not engine:
        return m.view_as_real(z)
    return engine.stack([RealBackward0.apply(z), ImagBackward0.apply(z)], -1)


def _real(m: Any, z: Any) -> Any:
    return z.real if m is not engine else RealBackward0.apply(z)


def _phase_free(m: Any, A: Any) -> Any:
    """A real loss of eig's results that no eigenvector phase changes."""
    L, V = m.linalg.eig(A)
    w = m.linspace(0.5, 1.5, V.shape[-1], dtype=V.abs().dtype)
    return (L.abs() ** 2).sum() + (_as_real(m, L) ** 3).sum() + (V.abs() * w).sum()


def _grads(fn: Callable[[Any, Any], Any], x: np.ndarray, torch: Any) -> None:
    """First and second order (a vector-Hessian product) of ``fn``, engine vs torch."""
    ea = engine.tensor(x, requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    (ge,) = engine.grad(fn(engine, ea), [ea], create_graph=True)
    (gt,) = torch.autograd.grad(fn(torch, ta), [ta], create_graph=True)
    assert_values(ge.detach(), gt.detach(), rtol=1e-7, atol=1e-9)
    v = np.random.default_rng(1).standard_normal(x.shape) * (1 + 1j if x.dtype.kind == "c" else 1)
    v = v.astype(x.dtype)
    (gge,) = engine.grad(_loss(engine, ge * engine.tensor(v)), [ea])
    (ggt,) = torch.autograd.grad(_loss(torch, gt * torch.tensor(v)), [ta])
    assert_values(gge, ggt, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("x", [REAL, BATCH, CPLX], ids=["real", "batched", "complex"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_match_torch(x: np.ndarray, dtype: str, torch: Any) -> None:
    x = x.astype(
        dtype if x.dtype.kind == "f" else {"float32": "complex64", "float64": "complex128"}[dtype]
    )
    L, V = engine.linalg.eig(engine.tensor(x))
    tL, tV = torch.linalg.eig(torch.tensor(x))
    assert f"torch.{L.dtype}" == str(tL.dtype) and f"torch.{V.dtype}" == str(tV.dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(L.numpy(), tL.numpy(), rtol=tol, atol=tol)
    # the same vectors up to a phase each (LAPACK builds differ in signs), of norm 1
    v, tv = V.numpy(), tV.numpy()
    np.testing.assert_allclose(np.abs((np.conj(v) * tv).sum(-2)), 1.0, rtol=tol, atol=tol)
    np.testing.assert_allclose(x @ v, v * L.numpy()[..., None, :], rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(engine.linalg.eigvals(engine.tensor(x)).numpy(), L.numpy())


@pytest.mark.parametrize("x", [REAL, BATCH, CPLX], ids=["real", "batched", "complex"])
def test_phase_free_gradients_match_torch(x: np.ndarray, torch: Any) -> None:
    _grads(_phase_free, x, torch)
    _grads(lambda m, A: (m.linalg.eigvals(A).abs() ** 3).sum(), x, torch)


def test_gradcheck_through_phase_free_results() -> None:
    def fn(a: Tensor) -> Any:
        L, V = engine.linalg.eig(a)
        return L, V.abs()

    for x in (REAL, BATCH):
        a = engine.tensor(x, requires_grad=True)
        assert gradcheck(fn, [a])
        assert gradgradcheck(fn, [a])
        assert gradcheck(engine.linalg.eigvals, [a])


def test_a_phase_dependent_loss_fails_as_in_torch(torch: Any) -> None:
    a = engine.tensor(REAL, requires_grad=True)
    with pytest.raises(BadArgumentsError) as mine:
        ImagBackward0.apply(engine.linalg.eig(a)[1]).sum().backward()
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.eig(torch.tensor(REAL, requires_grad=True))[1].imag.sum().backward()
    assert str(mine.value) == str(theirs.value)
    assert a.grad is None


def test_forward_ad_matches_torch(torch: Any) -> None:
    t = np.random.default_rng(2).standard_normal(REAL.shape)
    with fwAD.dual_level():
        L, V = engine.linalg.eig(fwAD.make_dual(engine.tensor(REAL), engine.tensor(t)))
        dl, dv = (fwAD.unpack_dual(r).tangent.detach().numpy() for r in (L, V))
        v = V.detach().numpy()
    tfw = torch.autograd.forward_ad
    with tfw.dual_level():
        tL, tV = torch.linalg.eig(tfw.make_dual(torch.tensor(REAL), torch.tensor(t)))
        tdl, tdv = (tfw.unpack_dual(r).tangent.numpy() for r in (tL, tV))
        tv = tV.detach().numpy()
    np.testing.assert_allclose(dl, tdl, rtol=1e-8, atol=1e-10)
    # dV follows V's phase: compared after turning torch's V into the engine's
    phase = (np.conj(tv) * v).sum(-2, keepdims=True)
    np.testing.assert_allclose(dv, tdv * phase, rtol=1e-7, atol=1e-9)


def test_eigvals_records_eig_and_gives_nan_for_nan_without_grad(torch: Any) -> None:
    a = engine.tensor(REAL, requires_grad=True)
    assert engine.linalg.eigvals(a).grad_fn.name() == "LinalgEigBackward0"
    bad = np.array([[[1.0, np.nan], [0.0, 1.0]], [[2.0, 0.0], [0.0, 3.0]]])
    out = engine.linalg.eigvals(engine.tensor(bad)).numpy()
    assert np.isnan(out[0]).all() and np.allclose(out[1], [2.0, 3.0])
    with pytest.raises(BadArgumentsError, match="should not contain infs or NaNs"):
        engine.linalg.eig(engine.tensor(bad))


@pytest.mark.parametrize(
    "x",
    [np.ones((2, 3)), np.ones(3), np.ones((2, 2), np.int64)],
    ids=["not square", "1-d", "int64"],
)
@pytest.mark.parametrize("name", ["eig", "eigvals"])
def test_errors_match_torch(x: np.ndarray, name: str, torch: Any) -> None:
    with pytest.raises(RuntimeError) as mine:
        getattr(engine.linalg, name)(engine.tensor(x))
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch.linalg, name)(torch.tensor(x))
    assert str(mine.value) == str(theirs.value)


# -- the complex-aware ops eig's backward is made of -------------------------------------


Z = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
W = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)) + 3 * np.eye(3)


def _loss(m: Any, out: Any) -> Any:
    """A real loss that sees both parts of a complex result."""
    r = _as_real(m, out) if "complex" in str(out.dtype) else out
    return (r**3 * r.detach().cos()).sum()


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, a, b: a * b,
        lambda m, a, b: a * _real(m, b),
        lambda m, a, b: a / b,
        lambda m, a, b: a / 2.0 - _real(m, b) / a,
        lambda m, a, b: a @ b,
        lambda m, a, b: m.matmul(a[0], b),
        lambda m, a, b: m.matmul(a.unsqueeze(0).expand(2, 3, 3), b),
        lambda m, a, b: m.dot(a[0], b[1]).reshape(1),
        lambda m, a, b: m.mv(a, b[1]),
        lambda m, a, b: m.linalg.solve(b, a),
        lambda m, a, b: m.linalg.solve(b, a[0]),
        lambda m, a, b: a.abs() * b.abs(),
        lambda m, a, b: m.sgn(a) + b.sgn(),
        lambda m, a, b: m.diag_embed(m.diagonal(a, 0, -2, -1)) - b.transpose(0, 1),
        lambda m, a, b: m.where(m.eye(3, dtype=m.bool), a, b),
    ],
    ids=[
        "mul",
        "mul real",
        "div",
        "div number",
        "matmul",
        "matmul 1-d",
        "matmul batched",
        "dot",
        "mv",
        "solve",
        "solve vector",
        "abs",
        "sgn",
        "diagonal",
        "where",
    ],
)
def test_complex_gradients_match_torch(fn: Callable[..., Any], torch: Any) -> None:
    """First and second order of a real loss of complex intermediates."""
    ea, eb = (engine.tensor(x, requires_grad=True) for x in (Z, W))
    ta, tb = (torch.tensor(x, requires_grad=True) for x in (Z, W))
    ge = engine.grad(_loss(engine, fn(engine, ea, eb)), [ea, eb], create_graph=True)
    gt = torch.autograd.grad(_loss(torch, fn(torch, ta, tb)), [ta, tb], create_graph=True)
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(
            a.detach().numpy(), b.detach().resolve_conj().numpy(), rtol=1e-9, atol=1e-12
        )
    se = engine.grad(sum(_loss(engine, g) for g in ge), [ea, eb], allow_unused=True)
    st = torch.autograd.grad(sum(_loss(torch, g) for g in gt), [ta, tb], allow_unused=True)
    for a, b in zip(se, st):
        if b is None:
            assert a is None or not np.any(a.numpy())
        else:
            np.testing.assert_allclose(a.numpy(), b.resolve_conj().numpy(), rtol=1e-8, atol=1e-10)


def test_complex_gradients_match_finite_differences() -> None:
    """d loss / d re + i d loss / d im, by central differences, for the eig backward's ops."""

    def loss(z: np.ndarray) -> float:
        a = engine.tensor(z)
        L = engine.linalg.eigvals(engine.linalg.solve(engine.tensor(W), a @ a) / 2.0)
        return float((L.abs() ** 2).sum().item())

    a = engine.tensor(Z, requires_grad=True)
    L = engine.linalg.eigvals(engine.linalg.solve(engine.tensor(W), a @ a) / 2.0)
    (L.abs() ** 2).sum().backward()
    eps = 1e-6
    fd = np.zeros_like(Z)
    for idx in np.ndindex(Z.shape):
        for unit in (1.0, 1j):
            d = np.zeros_like(Z)
            d[idx] = eps * unit
            fd[idx] += unit * (loss(Z + d) - loss(Z - d)) / (2 * eps)
    np.testing.assert_allclose(a.grad.numpy(), fd, rtol=1e-5, atol=1e-6)
