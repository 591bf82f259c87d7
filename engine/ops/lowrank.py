"""Randomized low-rank SVD and PCA (Halko et al., 2009), as ``torch.svd_lowrank`` and
``torch.pca_lowrank`` compute them: a random basis from the default generator (the
engine's follows PyTorch's, draw for draw), a few subspace iterations of QR, then the
SVD of the small projected matrix. Written with engine ops, so gradients of every order
come from the same lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ArgumentValueError
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor
from .decompositions import linalg_svd, qr
from .linalg import matmul, transpose
from .random_ops import randn
from .reduction import mean
from .shape import broadcast_to


def _mT(x: Tensor) -> Tensor:
    return transpose(x, -2, -1)


def _basis(a: Tensor, q: int, niter: int, m: Tensor | None) -> Tensor:
    """An orthonormal Q whose span approximates the range of ``a - m``."""
    dt = a.dtype if dtypes.is_floating(a.dtype) else np.dtype(np.float32)
    r = randn(a.shape[-1], q, dtype=dt)
    x = matmul(a, r)
    if m is not None:
        x = x - matmul(m, r)
    basis = qr(x)[0]
    for _ in range(niter):
        x = matmul(_mT(a), basis)
        if m is not None:
            x = x - matmul(_mT(m), basis)
        basis = qr(x)[0]
        x = matmul(a, basis)
        if m is not None:
            x = x - matmul(m, basis)
        basis = qr(x)[0]
    return basis


def _svd_lowrank(a: Tensor, q: int, niter: int, m: Tensor | None) -> Any:
    rows, cols = a.shape[-2:]
    if m is not None:
        m = broadcast_to(m, a.shape)
    if rows < cols:
        a = _mT(a)
        m = None if m is None else _mT(m)
    basis = _basis(a, q, niter, m)
    b = matmul(_mT(basis), a)
    if m is not None:
        b = b - matmul(_mT(basis), m)
    u, s, vh = linalg_svd(b, full_matrices=False)
    v = _mT(vh)
    u = matmul(basis, u)
    if rows < cols:
        u, v = v, u
    return u, s, v


def _lowrank_samples(rng: np.random.Generator) -> list[Any]:
    """One column or row: the random basis then decides nothing (each of its signs
    cancels), so finite differences and PyTorch see one function. Its first entry is the
    most negative: the projected 1 x 1 matrix is then positive, whose SVD has no sign
    left to choose (LAPACK builds differ on a negative one)."""
    col = np.abs(S.rand(rng, 4, 1)) + 0.1
    col[0, 0] = -1.5
    return [
        sample(col, 1, note="a column"),
        sample(col.T.copy(), q=1, niter=1, note="a row, one iteration"),
    ]


def _pca_samples(rng: np.random.Generator) -> list[Any]:
    col, row = (s.args[0] for s in _lowrank_samples(rng))
    return [
        sample(col, 1, note="a column, centered"),
        sample(row, q=1, center=False, niter=1, note="a row"),
    ]


def _lowrank_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """A few copies of the input, of its (rows + columns) x q bases and q x q factors."""
    a: Any = args[0] if args else kwargs.get("A")
    if not hasattr(a, "shape") or len(a.shape) < 2:
        return None
    q = args[1] if len(args) > 1 else kwargs.get("q")
    q = min(a.shape[-2:]) if not isinstance(q, int) or isinstance(q, bool) else abs(q)
    batch = math.prod(a.shape[:-2])
    return 8 * (math.prod(a.shape) + batch * q * (sum(a.shape[-2:]) + q)) + 64


def _lowrank_work_at(niter_index: int) -> Callable[[tuple[Any, ...], dict[str, Any]], int | None]:
    """Its whole loop, so a huge ``niter`` is refused before it starts (each call also
    stops at a deadline): 2 * niter + 2 calls of A times an (rows or columns) x q basis
    and a QR or SVD of that basis. ``niter`` is argument ``niter_index``."""

    def work(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
        a: Any = args[0] if args else kwargs.get("A")
        if not hasattr(a, "shape") or len(a.shape) < 2:
            return None
        q = args[1] if len(args) > 1 else kwargs.get("q")
        q = min(a.shape[-2:]) if not isinstance(q, int) or isinstance(q, bool) else abs(q)
        niter = args[niter_index] if len(args) > niter_index else kwargs.get("niter", 2)
        real = isinstance(niter, (int, float)) and not isinstance(niter, bool)
        calls = 2 * abs(int(niter)) + 2 if real and math.isfinite(niter) else 6
        m, n = a.shape[-2:]
        return calls * math.prod(a.shape[:-2]) * q * (m * n + 30 * (m + n) * q)

    return work


@register(
    samples=_lowrank_samples,
    method=False,
    results=3,
    estimate=_lowrank_estimate,
    work=_lowrank_work_at(2),
    torch="svd_lowrank",
)
def svd_lowrank(
    A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None
) -> Any:
    """(U, S, V) with ``A - M ~ U diag(S) V^T`` of rank ``q``, from a random basis drawn
    from the default generator."""
    a = as_tensor(A)
    return _svd_lowrank(
        a,
        6 if q is None else int(q),
        2 if niter is None else int(niter),
        None if M is None else as_tensor(M),
    )


@register(
    samples=_pca_samples,
    method=False,
    results=3,
    estimate=_lowrank_estimate,
    work=_lowrank_work_at(3),
    torch="pca_lowrank",
)
def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> Any:
    """(U, S, V) of the (column-centered, with ``center``) matrix's rank-``q``
    approximation: V's columns are the principal directions."""
    a = as_tensor(A)
    rows, cols = a.shape[-2:]
    if q is None:
        q = min(6, rows, cols)
    elif not 0 <= q <= min(rows, cols):
        raise ArgumentValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(rows, cols)}"
        )
    if not niter >= 0:
        raise ArgumentValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(a, q, niter, None)
    return _svd_lowrank(a - mean(a, (-2,), keepdim=True), q, niter, None)
