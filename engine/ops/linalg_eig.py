"""``linalg.eig`` and ``linalg.eigvals``: the eigen decomposition of general square
matrices, complex even for a real input (LAPACK's ``geev`` through numpy, as PyTorch
calls it: the same order of eigenvalues, eigenvectors of norm 1 with LAPACK's phase).

The backward is PyTorch's ``linalg_eig_backward``, written in complex-aware engine ops
so that ``create_graph`` differentiates it again: with ``E_ij = conj(L_j - L_i)``,
``gA = V^{-H} (diag(gL) + (V^H gV - V^H V diag(re(V^H gV))) / E) V^H``, its real
part for a real input. An eigenvector is defined up to a phase ``e^{i phi}``: a loss
that depends on it has no gradient, and the backward refuses it with PyTorch's error
(``|V|`` or ``V V^{-1}`` are fine). ``eigvals`` of a matrix that needs a gradient is
``eig``'s first result (PyTorch's ``LinalgEigBackward0`` too).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..dual import needs_derivative
from ..errors import BadArgumentsError, ShapeMismatchError
from ..function import Function
from ..primitives import cast
from ..registry import Const, register, sample
from ..tensor import Tensor
from ._util import as_tensor
from .arithmetic import where
from .complex_ops import conjugate, real_part
from .decompositions import LinAlgError, solve
from .linalg import matmul, transpose
from .rearrange import diag_embed, diagonal
from .shape import unsqueeze

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])

GAUGE_MESSAGE = (
    "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
    "multiplication by e^{i phi}. The specified loss function depends on this quantity, so "
    "it is ill-defined."
)


def _square(a: Any, op: str) -> Tensor:
    """A float or complex tensor of (batches of) square matrices, with PyTorch's checks."""
    t = as_tensor(a)
    if t.ndim < 2:
        raise BadArgumentsError(f"{op}: The input tensor A must have at least 2 dimensions.")
    m, n = t._data.shape[-2:]
    if m != n:
        raise ShapeMismatchError(
            f"{op}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )
    dt = t._data.dtype
    if dt not in (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128):
        raise BadArgumentsError(f"Unknown Complex ScalarType for {dtypes.type_name(dt)}")
    return t


def _geev(x: np.ndarray, vectors: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """LAPACK's eigenvalues (and eigenvectors) of each matrix, complex."""
    cdt = dtypes.to_complex(x.dtype)
    if x.size == 0:
        v = np.zeros(x.shape, cdt) if vectors else None
        return np.zeros(x.shape[:-1], cdt), v
    try:
        if vectors:
            w, v = np.linalg.eig(x)
            return w.astype(cdt), v.astype(cdt)
        return np.linalg.eigvals(x).astype(cdt), None
    except np.linalg.LinAlgError:
        raise LinAlgError(
            "linalg.eig: The algorithm failed to converge because the input matrix is "
            "ill-conditioned or has too many repeated eigenvalues (error code: 1)."
        ) from None


def _mH(t: Tensor) -> Tensor:
    return conjugate(transpose(t, -2, -1))


def _eye(n: int) -> Tensor:
    return Tensor._make(np.eye(n, dtype=bool))


class LinalgEigBackward0(Function):
    """(L, V) with ``A V = V diag(L)``; PyTorch's backward and forward formulas."""

    name = "LinalgEigBackward0"
    complex_ok = True

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> tuple[np.ndarray, np.ndarray]:
        x = a._data
        if not np.isfinite(x).all():
            raise BadArgumentsError(
                "torch.linalg.eig: input tensor should not contain infs or NaNs."
            )
        ctx.real_input = x.dtype.kind == "f"
        ctx.save_result()
        w, v = _geev(x, vectors=True)
        assert v is not None
        return w, v

    @staticmethod
    def backward(ctx: Any, gl: Tensor, gv: Tensor) -> Tensor:
        lam, v = ctx.results
        n = lam._data.shape[-1]
        eye = _eye(n)
        vh = _mH(v)
        vhgv = matmul(vh, gv)
        d = diagonal(vhgv, 0, -2, -1)
        if not np.allclose(d._data.imag, 0.0, rtol=1e-2, atol=1e-2):
            raise BadArgumentsError(GAUGE_MESSAGE)
        # project onto the skew-Hermitian directions (V's columns keep norm 1)
        vhgv = vhgv - matmul(vh, v * unsqueeze(real_part(d), -2))
        lc = conjugate(lam)
        econj = where(eye, 1.0, unsqueeze(lc, -2) - unsqueeze(lc, -1))
        inner = where(eye, diag_embed(gl), vhgv / econj)
        ga = solve(vh, matmul(inner, vh))
        return real_part(ga) if ctx.real_input else ga

    @staticmethod
    def jvp(ctx: Any, da: Tensor) -> tuple[Tensor, Tensor]:
        """PyTorch's ``linalg_eig_jvp``: ``dP = V^{-1} dA V``, ``dL = diag(dP)``,
        ``dV = V (dP / E off the diagonal)`` made orthogonal to V's columns in real part."""
        lam, v = ctx.results
        n = lam._data.shape[-1]
        eye = _eye(n)
        dp = solve(v, matmul(cast(da, v._data.dtype), v))
        dl = diagonal(dp, 0, -2, -1)
        e = where(eye, 1.0, unsqueeze(lam, -2) - unsqueeze(lam, -1))
        dv = matmul(v, where(eye, 0.0, dp / e))
        dv = dv - v * unsqueeze(real_part(diagonal(matmul(_mH(v), dv), 0, -2, -1)), -2)
        return dl, dv


def _real_spectrum(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Non-symmetric matrices with distinct real eigenvalues (``P diag(L) P^{-1}``)."""
    n = shape[-1]
    p = rng.uniform(-1.0, 1.0, shape) + 2.0 * np.eye(n)
    lam = np.linspace(-2.0, 3.0, n) + rng.uniform(-0.2, 0.2, shape[:-1])
    return np.asarray((p * lam[..., None, :]) @ np.linalg.inv(p))


def _rotations(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Matrices with complex-conjugate eigenvalue pairs (a rotation block inside)."""
    x = rng.uniform(-1.0, 1.0, shape)
    x[..., 0, 1] += 2.0
    x[..., 1, 0] -= 2.0
    return x


def _torch_eig(torch: Any, A: Any) -> Any:
    """torch.linalg.eig with each eigenvector's phase (through ``.data``) set to the
    engine's: LAPACK builds (MKL, OpenBLAS) may pick different signs."""
    return _aligned(torch, torch.linalg.eig(A), A)


def _aligned(torch: Any, res: Any, A: Any) -> Any:
    mine = np.linalg.eig(A.detach().numpy())[1].astype(res.eigenvectors.detach().numpy().dtype)
    theirs = res.eigenvectors.detach().numpy()
    dot = np.sum(np.conj(theirs) * mine, axis=-2, keepdims=True)
    phase = np.where(np.abs(dot) > 0, dot / np.maximum(np.abs(dot), 1e-300), 1.0)
    res.eigenvectors.data.mul_(torch.from_numpy(phase.astype(theirs.dtype)))
    return res


def _eig_samples(rng: np.random.Generator) -> list[Any]:
    # gradients of V are compared through real cotangents, which a real V with real
    # eigenvalues turns into a loss with no phase in it; complex spectra: values only
    return [
        sample(_real_spectrum(rng, 3, 3), note="real spectrum", gradcheck=False),
        sample(_real_spectrum(rng, 2, 3, 3), note="batched", gradcheck=False),
        sample(Const(_rotations(rng, 3, 3)), note="complex pairs"),
        sample(Const(np.zeros((2, 0, 0))), note="empty"),
    ]


@register(
    "linalg_eig",
    samples=_eig_samples,
    torch=_torch_eig,
    method=False,
    results=2,
    estimate=estimates.eig,
    work=estimates.cubic(120),  # geev with vectors: measured ~2x svd's time here
)
def linalg_eig(A: Tensor) -> Any:
    """(eigenvalues, eigenvectors) of square matrices, complex: ``A V = V diag(L)``."""
    return EigResult(*LinalgEigBackward0.apply(_square(A, "linalg.eig")))


def _eigvals_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_real_spectrum(rng, 3, 3), note="real spectrum"),
        sample(_rotations(rng, 3, 3), note="complex pairs"),
        sample(_rotations(rng, 2, 4, 4), note="batched"),
        sample(Const(_rotations(rng, 3, 3)), note="no gradient"),
        sample(Const(np.zeros((0, 2, 2))), note="empty"),
    ]


@register(
    "linalg_eigvals",
    samples=_eigvals_samples,
    torch="linalg.eigvals",
    method=False,
    estimate=estimates.eig,
    work=estimates.cubic(50),  # geev without vectors
)
def linalg_eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of square matrices, complex, in LAPACK's order."""
    a = _square(A, "linalg.eigvals")
    if needs_derivative(a):  # the eigenvectors are needed for the gradient
        return LinalgEigBackward0.apply(a)[0]  # type: ignore[no-any-return]
    x = a._data
    finite = np.isfinite(x).all(axis=(-2, -1))
    if finite.all():
        return Tensor._make(_geev(x, vectors=False)[0])
    # LAPACK's answer for a NaN or inf input is meaningless: NaN where it was
    out = np.full(x.shape[:-1], np.nan, dtypes.to_complex(x.dtype))
    out[finite] = _geev(x[finite], vectors=False)[0]
    return Tensor._make(out)
