"""Linear algebra with gradients: inv, det, slogdet, solve, cholesky, qr, eigh,
svd, svdvals, pinv, matrix_norm and vector_norm (``torch.linalg`` names, with
``inverse``/``pinverse`` aliases). Inputs may be batched (leading dims).

Forwards use ``numpy.linalg``; backward rules are PyTorch's (FunctionsManual:
``linalg_det_backward``, ``cholesky_backward``, ``linalg_qr_backward``,
``linalg_eig_backward``, ``svd_backward``, ``pinv_backward``), written in engine
ops so ``create_graph`` differentiates them again.

Eigenvectors and singular vectors are unique only up to sign. The engine picks
one sign per vector (its largest-magnitude entry positive; for SVD the pair
``U[:, k]``, ``Vh[k]`` flips together), so results are reproducible and locally
smooth; the op database aligns PyTorch's vectors to the same convention.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple
from typing import Any

import numpy as np
import scipy.linalg

from .. import dtypes, estimates, interrupt
from ..complex_guard import not_in_engine
from ..dual import FROM_BACKWARD
from ..errors import BadArgumentsError, DtypeMismatchError, ShapeMismatchError
from ..function import Function
from ..grad_mode import _enabled
from ..primitives import conj
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, normalize_dim
from .arithmetic import where
from .linalg import matmul, transpose
from .rearrange import diag_embed, diagonal, narrow
from .reduction import LinalgVectorNormBackward0, _no_identity, amax, amin, prod
from .reduction import sum as sum_
from .shape import cat, permute, to_dtype, unsqueeze

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
QRResult = namedtuple("QRResult", ["Q", "R"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
TorchSVDResult = namedtuple("TorchSVDResult", ["U", "S", "V"])


class LinAlgError(BadArgumentsError):
    """``torch.linalg.LinAlgError``: a singular or non positive-definite input."""


_TYPE = {"int64": "Long", "int32": "Int", "bool": "Bool", "float16": "Half"}


def _matrix(a: Any, op: str, square: bool = True, complex_ok: bool = False) -> Tensor:
    """A floating tensor of (batches of) matrices, with PyTorch's checks and messages
    (complex too where the op's rules are written for it)."""
    t = as_tensor(a)
    if t.ndim < 2:
        raise BadArgumentsError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if complex_ok and t._data.dtype.kind == "c":
        pass
    elif t._data.dtype.kind == "c":
        raise not_in_engine(op, t._data.dtype)
    elif not dtypes.is_floating(t._data.dtype) or t._data.dtype == np.float16:
        name = _TYPE.get(dtypes.torch_name(t._data.dtype), str(t._data.dtype))
        raise DtypeMismatchError(
            f"{op}: Expected a floating point or complex tensor as input. Got {name}"
        )
    m, n = t._data.shape[-2:]
    if square and m != n:
        raise ShapeMismatchError(
            f"{op}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )
    return t


def _batches(x: np.ndarray) -> np.ndarray:
    return x.reshape((-1,) + x.shape[-2:])


def _batch_prefix(x: np.ndarray, k: int) -> str:
    return f"(Batch element {k}): " if x.ndim > 2 else ""


def _first_zero_pivot(a: np.ndarray) -> int:
    """The 1-based position of LAPACK getrf's first zero pivot (partial pivoting)."""
    lu = np.array(a, dtype=np.float64)
    n = lu.shape[0]
    for k in interrupt.checked(range(n)):
        p = k + int(np.argmax(np.abs(lu[k:, k])))
        if lu[p, k] == 0:
            return k + 1
        lu[[k, p]] = lu[[p, k]]
        lu[k + 1 :, k:] -= np.outer(lu[k + 1 :, k] / lu[k, k], lu[k, k:])
    return n


def _singular(op: str, x: np.ndarray, solver: bool = False) -> LinAlgError:
    for k, a in enumerate(interrupt.checked(_batches(x))):
        if not np.isfinite(a).all():
            continue
        try:
            np.linalg.inv(a)
        except np.linalg.LinAlgError:
            prefix = _batch_prefix(x, k)
            if solver:
                return LinAlgError(
                    f"{op}: {prefix}The solver failed because the input matrix is singular."
                )
            return LinAlgError(
                f"{op}: {prefix}The diagonal element {_first_zero_pivot(a)} is zero, the "
                "inversion could not be completed because the input matrix is singular."
            )
    return LinAlgError(f"{op}: The input matrix is singular.")


def _mT(t: Tensor) -> Tensor:
    return transpose(t, -2, -1)


def _mm(a: Tensor, b: Tensor) -> Tensor:
    return matmul(a, b)


def _const(x: np.ndarray) -> Tensor:
    return Tensor._make(x)


def _tril(x: Tensor, k: int = 0) -> Tensor:
    n, m = x._data.shape[-2:]
    return where(_const(np.tri(n, m, k, dtype=bool)), x, 0.0)


def _diag_embed(v: Tensor) -> Tensor:
    return diag_embed(v)


def _diagonal(x: Tensor) -> Tensor:
    return diagonal(x, 0, -2, -1)


def _unsq(t: Tensor, dim: int) -> Tensor:
    return unsqueeze(t, dim)


# -- inv, det, slogdet ------------------------------------------------------------------------


class LinalgInvExBackward0(Function):
    name = "LinalgInvExBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_result()
        try:
            return np.linalg.inv(a._data)
        except np.linalg.LinAlgError:
            raise _singular("linalg.inv", a._data) from None

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        inv_t = _mT(ctx.result)
        return -_mm(inv_t, _mm(g, inv_t))


def _well_conditioned(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random square matrices kept far from singular (diagonally dominant)."""
    n = shape[-1]
    return S.rand(rng, *shape, low=-1.0, high=1.0) + n * np.eye(n)


def _spd(rng: np.random.Generator, *shape: int) -> np.ndarray:
    b = S.rand(rng, *shape, low=-1.0, high=1.0)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


def _square_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_well_conditioned(rng, 3, 3), note="3x3"),
        sample(_well_conditioned(rng, 2, 2, 2), note="batched"),
        sample(_well_conditioned(rng, 1, 1), note="1x1"),
        sample(_well_conditioned(rng, 0, 3, 3), note="empty batch"),
    ]


@register(samples=_square_samples, torch="linalg.inv", method=False, work=estimates.cubic(4))
def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix (LinAlgError when singular)."""
    return LinalgInvExBackward0.apply(_matrix(A, "linalg.inv"))


@register(samples=_square_samples, torch="inverse", work=estimates.cubic(4))
def inverse(input: Tensor) -> Tensor:
    """Alias of ``linalg.inv`` (PyTorch's ``torch.inverse``)."""
    return inv(input)


class LinalgDetBackward0(Function):
    name = "LinalgDetBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.save_result()
        with np.errstate(all="ignore"):  # NaN inputs give NaN, as in PyTorch
            return np.asarray(np.linalg.det(a._data), a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        det = ctx.result
        if a._data.size == 0:  # nothing to differentiate: PyTorch's gradient is a constant
            return _const(np.zeros(a._data.shape, a._data.dtype))
        scale = _unsq(_unsq(g * det, -1), -1)
        zero = det._data == 0
        if not zero.any():
            return scale * _mT(inv(a))
        if _enabled.get():  # create_graph: PyTorch switches to the SVD formula (the adjugate)
            return _det_grad_singular(g, a)
        # a plain backward: PyTorch solves with zero pivots nudged by eps, times det = 0
        inverses = np.zeros(a._data.shape, a._data.dtype)
        flat = inverses.reshape((-1,) + a._data.shape[-2:])
        for k, (m, z) in enumerate(interrupt.checked(zip(_batches(a._data), zero.reshape(-1)))):
            if not z:
                flat[k] = np.linalg.inv(m)
        return scale * _const(np.swapaxes(inverses, -1, -2))


def _det_grad_singular(g: Tensor, a: Tensor) -> Tensor:
    """d det / dA through the SVD, defined for singular A (PyTorch's singular case):
    ``U diag(g * det(U) det(Vh) * prod_{j != i} s_j) Vh``."""

    u, s, vh = linalg_svd(a, full_matrices=False)
    sign = np.linalg.det(u._data) * np.linalg.det(vh._data)
    n = s._data.shape[-1]
    others = prod(where(_const(np.eye(n, dtype=bool)), 1.0, _unsq(s, -2)), -1)
    scale = _unsq(g * _const(sign.astype(g.dtype)), -1) * others
    return _mm(u, _mm(_diag_embed(scale), vh))


def _det_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *_square_samples(rng),
        sample(
            np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.0, 2.0]]),
            note="singular: PyTorch's first-order gradient is zero",
            gradcheck=False,
        ),
    ]


@register(
    out_overlap="unchecked", samples=_det_samples, torch="linalg.det", work=estimates.cubic(4)
)
def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix."""
    return LinalgDetBackward0.apply(_matrix(A, "linalg.det"))


class LinalgSlogdetBackward0(Function):
    name = "LinalgSlogdetBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> tuple[np.ndarray, np.ndarray]:
        ctx.materialize_grads = False  # the sign alone sends no gradient (A.grad stays None)
        ctx.save_for_backward(a)
        with np.errstate(all="ignore"):
            sign, logabs = np.linalg.slogdet(a._data)
        sign = np.where(np.isnan(logabs), np.copysign(0.0, sign), sign)  # PyTorch: no sign of NaN
        ctx.singular = bool(np.isneginf(logabs).any())
        dt = a._data.dtype
        return np.asarray(sign, dt), np.asarray(logabs, dt)

    @staticmethod
    def backward(ctx: Any, _g_sign: Tensor | None, g: Tensor | None) -> Tensor | None:
        if g is None:
            return None
        (a,) = ctx.saved_tensors
        # PyTorch's plain backward solves with the forward's LU, dividing by the zero pivot
        # (inf/NaN, no error); under create_graph it calls linalg.solve, which refuses
        if ctx.singular and not _enabled.get():
            return _unsq(_unsq(g, -1), -1) * _const(_lu_inverse_t(a._data))
        return _unsq(_unsq(g, -1), -1) * _mT(inv(a))


def _lu_inverse_t(a: np.ndarray) -> np.ndarray:
    """``A^{-T}`` by LAPACK's getrf/getrs as PyTorch's ``lu_solve(adjoint=True)``: a zero
    pivot gives inf/NaN entries instead of an error."""
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.empty_like(flat)
    eye = np.eye(a.shape[-1], dtype=a.dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        for k, m in enumerate(flat):
            lu = scipy.linalg.lu_factor(m, check_finite=False)
            out[k] = scipy.linalg.lu_solve(lu, eye, trans=1, check_finite=False)
    return out.reshape(a.shape)


def _slogdet_samples(rng: np.random.Generator) -> list[Any]:
    neg = _well_conditioned(rng, 3, 3)
    neg[0] *= -1
    return [*_square_samples(rng), sample(neg, note="negative determinant")]


@register(samples=_slogdet_samples, torch="linalg.slogdet", results=2, work=estimates.cubic(4))
def slogdet(A: Tensor) -> Any:
    """(sign, log|det|) of each square matrix: the determinant without overflow."""
    return SlogdetResult(*LinalgSlogdetBackward0.apply(_matrix(A, "linalg.slogdet")))


# -- solve, cholesky --------------------------------------------------------------------------


class LinalgSolveExBackward0(Function):
    """``X = A^{-1} B``; B is a (batch of) vector(s) when PyTorch reads it so."""

    name = "LinalgSolveExBackward0"
    complex_ok = True  # through A^H and X^H
    jvp = FROM_BACKWARD
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, *, vector: bool, left: bool) -> np.ndarray:
        ctx.vector, ctx.left = vector, left
        ctx.save_for_backward(a)
        ctx.save_result()
        rhs = b._data[..., None] if vector else b._data
        lhs = a._data
        if not left:  # X A = B is A^T X^T = B^T
            lhs, rhs = np.swapaxes(lhs, -1, -2), np.swapaxes(rhs, -1, -2)
        try:
            x = np.linalg.solve(lhs, rhs)
        except np.linalg.LinAlgError:
            raise _singular("torch.linalg.solve", a._data, solver=True) from None
        if not left:
            return np.swapaxes(x, -1, -2)
        return x[..., 0] if vector else x

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (a,) = ctx.saved_tensors
        x = conj(ctx.result)
        need_a, need_b = ctx.needs_input_grad
        gb = solve(conj(_mT(a)), g, left=ctx.left)
        ga = None
        if need_a and not ctx.left:  # X = B A^{-1}: gA = -X^T gB
            ga = -_mm(_mT(x), gb)
        elif need_a:
            ga = -(_unsq(gb, -1) * _unsq(x, -2)) if ctx.vector else -_mm(gb, _mT(x))
        return ga, (gb if need_b else None)


def _solve_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_well_conditioned(rng, 3, 3), S.rand(rng, 3, 2), note="matrix B"),
        sample(_well_conditioned(rng, 3, 3), S.rand(rng, 3), note="vector B"),
        sample(_well_conditioned(rng, 2, 3, 3), S.rand(rng, 2, 3), note="batch of vectors"),
        sample(_well_conditioned(rng, 2, 3, 3), S.rand(rng, 3, 1), note="B broadcasts"),
        sample(_well_conditioned(rng, 3, 3), S.rand(rng, 2, 3, 2), note="A broadcasts"),
        sample(_well_conditioned(rng, 3, 3), Const(S.rand(rng, 3)), note="constant B"),
        sample(_well_conditioned(rng, 2, 3, 3), S.rand(rng, 4, 3), left=False, note="XA = B"),
    ]


@register(samples=_solve_samples, torch="linalg.solve", method=False, work=estimates.cubic(4))
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``X`` with ``A @ X = B`` (``X @ A = B`` when not ``left``); batched, and ``B`` may
    be a vector or a batch of vectors."""
    a = _matrix(A, "linalg.solve", complex_ok=True)
    b = as_tensor(B)
    if b._data.dtype != a._data.dtype:
        raise DtypeMismatchError(
            "linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{dtypes.torch_name(a._data.dtype)} and B of type {dtypes.torch_name(b._data.dtype)} instead"
        )
    n = a._data.shape[-1]
    if not left:
        if b.ndim < 2 or b._data.shape[-1] != n:
            rows, cols = (b._data.shape[0], 1) if b.ndim < 2 else b._data.shape[-2:]
            raise ShapeMismatchError(
                "linalg.solve: Incompatible shapes of A and B for the equation XA = B "
                f"({n}x{n} and {rows}x{cols})"
            )
        return LinalgSolveExBackward0.apply(a, b, vector=False, left=False)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b._data.shape == a._data.shape[:-1])
    rows = b._data.shape[-1] if vector else (b._data.shape[-2] if b.ndim >= 2 else -1)
    if rows != n:
        cols = 1 if vector else b._data.shape[-1]
        raise ShapeMismatchError(
            "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            f"({n}x{n} and {b._data.shape[-1] if vector else rows}x{cols})"
        )
    return LinalgSolveExBackward0.apply(a, b, vector=vector, left=True)


class LinalgCholeskyExBackward0(Function):
    name = "LinalgCholeskyExBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, upper: bool) -> np.ndarray:
        ctx.upper = upper
        ctx.save_result()
        low = np.tril(a._data)  # LAPACK reads the lower triangle only
        sym = low + np.swapaxes(np.tril(a._data, -1), -1, -2)
        try:
            out = np.linalg.cholesky(sym)
        except np.linalg.LinAlgError:
            raise _not_positive_definite(sym) from None
        diag = np.diagonal(out, 0, -2, -1)
        if np.isnan(diag).any():  # LAPACK stops at a NaN pivot; NumPy lets it through
            raise _nan_pivot(diag) from None
        return np.swapaxes(out, -1, -2).copy() if upper else out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        low, gl = ctx.result, g
        if ctx.upper:
            low, gl = _mT(low), _mT(gl)
        phi = _tril(_mm(_mT(low), gl))
        phi = 0.5 * (phi + _mT(_tril(phi, -1)))
        left = solve(_mT(low), phi)  # L^{-T} phi
        return _mT(solve(_mT(low), _mT(left)))  # ... L^{-1}


def leading_not_pd(a: np.ndarray) -> int:
    """LAPACK potrf's info for one matrix (its lower triangle): the order of the first
    leading minor that is not positive-definite, 0 when none. One factorization, as
    PyTorch's kernel makes (a Cholesky per leading minor costs n^4/4: minutes at n=300)."""
    (potrf,) = scipy.linalg.get_lapack_funcs(("potrf",), (a,))
    return max(int(potrf(a, lower=1, clean=0)[1]), 0)


def _not_positive_definite(x: np.ndarray) -> LinAlgError:
    for k, a in enumerate(interrupt.checked(_batches(x))):
        order = leading_not_pd(a)
        if order:
            return LinAlgError(
                f"linalg.cholesky: {_batch_prefix(x, k)}The factorization could not be "
                "completed because the input is not positive-definite (the leading minor of "
                f"order {order} is not positive-definite)."
            )
    return LinAlgError("linalg.cholesky: The input is not positive-definite.")


def _nan_pivot(diag: np.ndarray) -> LinAlgError:
    flat = diag.reshape(-1, diag.shape[-1])
    k = int(np.argmax(np.isnan(flat).any(axis=-1)))
    order = int(np.argmax(np.isnan(flat[k]))) + 1
    prefix = f"(Batch element {k}): " if diag.ndim > 1 else ""
    return LinAlgError(
        f"linalg.cholesky: {prefix}The factorization could not be completed because the input "
        f"is not positive-definite (the leading minor of order {order} is not positive-definite)."
    )


def _not_converged(op: str, x: np.ndarray, what: str) -> LinAlgError:
    if not np.isfinite(x).all():
        return LinAlgError(
            f"{op}: The algorithm failed to converge because the input matrix contained "
            "non-finite values."
        )
    return LinAlgError(
        f"{op}: The algorithm failed to converge because the input matrix is ill-conditioned "
        f"or has too many repeated {what}."
    )


def _svd_np(x: np.ndarray, **kwargs: Any) -> Any:
    try:
        return np.linalg.svd(x, **kwargs)
    except np.linalg.LinAlgError:
        raise _not_converged("linalg.svd", x, "singular values") from None


def _hermitian_samples(rng: np.random.Generator, make: Any) -> list[Any]:
    """Symmetric samples: gradcheck perturbs one entry at a time, which breaks symmetry,
    so only 1x1 matrices are gradchecked here; tests/engine/test_decomposition_ops.py
    gradchecks the larger ones through a symmetrizing wrapper, as PyTorch's OpInfo does."""
    return [
        sample(make(rng, 1, 1), note="1x1"),
        sample(make(rng, 2, 1, 1), note="batched 1x1"),
        sample(make(rng, 3, 3), note="3x3", gradcheck=False),
        sample(make(rng, 2, 2, 2), note="batched", gradcheck=False),
    ]


@register(
    samples=lambda rng: [
        *_hermitian_samples(rng, _spd),
        sample(_spd(rng, 3, 3), upper=True, note="upper", gradcheck=False),
    ],
    torch="linalg.cholesky",
    method=False,
    work=estimates.cubic(1),
)
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The lower (or ``upper``) Cholesky factor of symmetric positive-definite matrices."""
    return LinalgCholeskyExBackward0.apply(_matrix(A, "linalg.cholesky"), upper=bool(upper))


# -- qr, eigh, svd -------------------------------------------------------------------------


class LinalgQrBackward0(Function):
    name = "LinalgQrBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, mode: str) -> tuple[np.ndarray, np.ndarray]:
        ctx.mode = mode
        ctx.save_result()
        if mode == "r":  # PyTorch returns an empty Q
            r = np.linalg.qr(a._data, mode="r")
            return np.zeros(0, a._data.dtype), r  # type: ignore[return-value]
        q, r = np.linalg.qr(a._data, mode=mode)  # type: ignore[call-overload]
        return q, r

    @staticmethod
    def backward(ctx: Any, gq: Tensor, gr: Tensor) -> Tensor:
        if ctx.mode == "r":
            raise BadArgumentsError(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                "through linalg.qr."
            )
        q, r = ctx.results
        m, n = q._data.shape[-2], r._data.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise BadArgumentsError(
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
            )
        if m >= n:
            return _qr_grad(q, r, gq, gr)
        # wide: A = Q [X | Y] with X = Q R1 square, Y = Q R2
        r1, r2 = _columns(r, 0, m), _columns(r, m, n - m)
        gr1, gr2 = _columns(gr, 0, m), _columns(gr, m, n - m)
        y = _mm(q, r2)
        gx = _qr_grad(q, r1, gq + _mm(y, _mT(gr2)), gr1)
        return cat([gx, _mm(q, gr2)], -1)


def _columns(t: Tensor, start: int, length: int) -> Tensor:
    """Columns ``start .. start + length`` (a view, as PyTorch's narrow)."""

    return narrow(t, -1, start, length)


def _qr_grad(q: Tensor, r: Tensor, gq: Tensor, gr: Tensor) -> Tensor:
    """``(gQ + Q copyltu(M)) R^{-T}``, ``M = R gR^T - gQ^T Q`` (tall or square A)."""
    m_ = _mm(r, _mT(gr)) - _mm(_mT(gq), q)
    low = _tril(m_, -1)
    sym = low + _mT(low) + _diag_embed(_diagonal(m_))
    b = gq + _mm(q, sym)
    return _mT(solve(r, _mT(b)))


def _qr_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_well_conditioned(rng, 3, 3), note="square"),
        sample(S.rand(rng, 4, 3) + np.eye(4, 3) * 3, note="tall"),
        sample(S.rand(rng, 2, 4) + np.eye(2, 4) * 3, note="wide"),
        sample(_well_conditioned(rng, 2, 3, 3), note="batched"),
        sample(S.rand(rng, 2, 4) + np.eye(2, 4) * 3, mode="complete", note="wide complete"),
        sample(Const(_well_conditioned(rng, 3, 3)), mode="r", note="mode r"),
    ]


@register(
    samples=_qr_samples,
    torch="linalg.qr",
    method=False,
    results=2,
    estimate=estimates.qr,
    work=estimates.cubic(25),
)
def qr(A: Tensor, mode: str = "reduced") -> Any:
    """(Q, R) with orthonormal Q and upper-triangular R (``mode``: reduced or complete)."""
    a = _matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise BadArgumentsError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    return QRResult(*LinalgQrBackward0.apply(a, mode=mode))


def canonical_signs(v: np.ndarray) -> np.ndarray:
    """Per column of ``v`` (last axis), +1 or -1 making its largest-magnitude entry positive."""
    if v.shape[-2] == 0:
        return np.ones(v.shape[:-2] + (1, v.shape[-1]), v.dtype)
    idx = np.argmax(np.abs(v), axis=-2)[..., None, :]
    s = np.sign(np.take_along_axis(v, idx, axis=-2))
    return np.where(s == 0, 1, s).astype(v.dtype)


class LinalgEighBackward0(Function):
    name = "LinalgEighBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, uplo: str) -> tuple[np.ndarray, np.ndarray]:
        ctx.save_result()
        try:
            w, v = np.linalg.eigh(a._data, UPLO=uplo)  # type: ignore[call-overload]
        except np.linalg.LinAlgError:
            raise _not_converged("linalg.eigh", a._data, "eigenvalues") from None
        return w.astype(a._data.dtype), v * canonical_signs(v)

    @staticmethod
    def backward(ctx: Any, gl: Tensor, gv: Tensor) -> Tensor:
        lam, v = ctx.results
        n = lam._data.shape[-1]
        eye = _const(np.eye(n, dtype=bool))
        vtgv = _mm(_mT(v), gv)
        skew = 0.5 * (vtgv - _mT(vtgv))  # the tangent direction of V
        e = where(eye, 1.0, _unsq(lam, -2) - _unsq(lam, -1))  # E_ij = L_j - L_i
        inner = skew / e + _diag_embed(gl)
        return _mm(v, _mm(inner, _mT(v)))


def _distinct_spectrum(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Symmetric matrices with well-separated eigenvalues (eigenvectors well defined)."""
    n = shape[-1]
    q, _ = np.linalg.qr(S.rand(rng, *shape))
    lam = np.linspace(-2.0, 3.0, n) + rng.uniform(-0.2, 0.2, size=shape[:-1])
    out = (q * lam[..., None, :]) @ np.swapaxes(q, -1, -2)
    return 0.5 * (out + np.swapaxes(out, -1, -2))


def _torch_eigh(torch: Any, A: Any, UPLO: str = "L") -> Any:
    """torch.linalg.eigh with its eigenvectors flipped (through ``.data``, which leaves
    the graph alone) to the engine's sign convention, so outputs and gradients compare."""
    res = torch.linalg.eigh(A, UPLO=UPLO)
    v = res.eigenvectors
    v.data.mul_(torch.from_numpy(canonical_signs(v.detach().numpy())))
    return res


@register(
    samples=lambda rng: [
        *_hermitian_samples(rng, _distinct_spectrum),
        sample(_distinct_spectrum(rng, 3, 3), "U", note="upper", gradcheck=False),
    ],
    torch=_torch_eigh,
    method=False,
    results=2,
    work=estimates.cubic(40),
)
def eigh(A: Tensor, UPLO: str = "L") -> Any:
    """(eigenvalues ascending, eigenvectors) of symmetric matrices, read from one triangle."""
    a = _matrix(A, "linalg.eigh")
    if UPLO not in ("L", "U"):
        raise BadArgumentsError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return EighResult(*LinalgEighBackward0.apply(a, uplo=UPLO))


class LinalgSvdBackward0(Function):
    name = "LinalgSvdBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, full_matrices: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ctx.save_result()
        u, s, vh = _svd_np(a._data, full_matrices=full_matrices)
        k = s.shape[-1]
        signs = canonical_signs(u[..., :k])
        u = u.copy()
        u[..., :k] *= signs
        vh = vh.copy()
        vh[..., :k, :] *= np.swapaxes(signs, -1, -2)
        return u, s.astype(a._data.dtype), vh

    @staticmethod
    def backward(ctx: Any, gu: Tensor, gs: Tensor, gvh: Tensor) -> Tensor:
        u, s, vh = ctx.results
        k = s._data.shape[-1]
        if u._data.shape[-1] != k:  # full_matrices: PyTorch drops the free columns
            u, gu = _columns(u, 0, k), _columns(gu, 0, k)
        if vh._data.shape[-2] != k:
            vh, gvh = narrow(vh, -2, 0, k), narrow(gvh, -2, 0, k)
        return _svd_grad(u, s, vh, gu, gs, gvh)


def _svd_grad(u: Tensor, s: Tensor, vh: Tensor, gu: Tensor, gs: Tensor, gvh: Tensor) -> Tensor:
    """PyTorch's svd_backward (real case), for U (m, k), S (k,), Vh (k, n)."""

    m, k, n = u._data.shape[-2], s._data.shape[-1], vh._data.shape[-1]
    v, gv = _mT(vh), _mT(gvh)
    s2 = s * s
    e = where(_const(np.eye(k, dtype=bool)), 1.0, _unsq(s2, -2) - _unsq(s2, -1))  # s_j^2 - s_i^2
    utgu = _mm(_mT(u), gu)
    vtgv = _mm(_mT(v), gv)
    j = (utgu - _mT(utgu)) / e
    kk = (vtgv - _mT(vtgv)) / e
    inner = j * _unsq(s, -2) + _unsq(s, -1) * kk + _diag_embed(gs)
    ga = _mm(u, _mm(inner, vh))
    if m > k:
        gus = gu / _unsq(s, -2)
        ga = ga + _mm(gus - _mm(u, _mm(_mT(u), gus)), vh)
    if n > k:
        gvs = gv / _unsq(s, -2)
        ga = ga + _mm(u, _mT(gvs - _mm(v, _mm(_mT(v), gvs))))
    return ga


def _distinct_singular(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Matrices with well-separated singular values (singular vectors well defined)."""
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(S.rand(rng, *shape[:-2], m, k))
    v, _ = np.linalg.qr(S.rand(rng, *shape[:-2], n, k))
    s = np.linspace(3.0, 0.8, k) + rng.uniform(-0.1, 0.1, size=shape[:-2] + (k,))
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def _torch_svd(torch: Any, A: Any, full_matrices: bool = True) -> Any:
    """torch.linalg.svd with U's columns and Vh's rows flipped in pairs (through ``.data``)
    to the engine's sign convention."""
    res = torch.linalg.svd(A, full_matrices=full_matrices)
    k = res.S.shape[-1]
    signs = torch.from_numpy(canonical_signs(res.U.detach().numpy()[..., :k]))
    res.U.data[..., :k].mul_(signs)
    res.Vh.data[..., :k, :].mul_(signs.transpose(-1, -2))
    return res


def _svd_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_distinct_singular(rng, 3, 3), full_matrices=False, note="square"),
        sample(_distinct_singular(rng, 4, 2), full_matrices=False, note="tall"),
        sample(_distinct_singular(rng, 2, 4), full_matrices=False, note="wide"),
        sample(_distinct_singular(rng, 2, 3, 2), full_matrices=False, note="batched"),
        sample(_distinct_singular(rng, 3, 3), note="square, full_matrices"),
    ]


def _svd_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Full U and V (m·m + n·n) and S per matrix: the most either svd returns."""
    shape = getattr(args[0] if args else kwargs.get("A", kwargs.get("input")), "shape", None)
    if shape is None or len(shape) < 2:
        return None
    m, n = shape[-2:]
    return math.prod(shape[:-2]) * (m * m + n * n + min(m, n))


@register(
    "linalg_svd",
    samples=_svd_samples,
    torch=_torch_svd,
    method=False,
    results=3,
    estimate=estimates.svd,
    work=estimates.cubic(60),
)
def linalg_svd(A: Tensor, full_matrices: bool = True) -> Any:
    """(U, S, Vh) with ``A = U diag(S) Vh``; gradients need ``full_matrices=False`` when not square."""
    a = _matrix(A, "linalg.svd", square=False)
    return SVDResult(*LinalgSvdBackward0.apply(a, full_matrices=bool(full_matrices)))


def _torch_svd_v(torch: Any, A: Any, some: bool = True, compute_uv: bool = True) -> Any:
    """torch.svd with U's and V's columns flipped in pairs (through ``.data``) to the
    engine's sign convention."""
    res = torch.svd(A, some=some, compute_uv=compute_uv)
    if compute_uv:
        k = res.S.shape[-1]
        signs = torch.from_numpy(canonical_signs(res.U.detach().numpy()[..., :k]))
        res.U.data[..., :k].mul_(signs)
        res.V.data[..., :k].mul_(signs)
    return res


def _svd_v_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_distinct_singular(rng, 3, 3), note="square"),
        sample(_distinct_singular(rng, 4, 2), note="tall"),
        sample(_distinct_singular(rng, 2, 3, 2), note="batched"),
        sample(_distinct_singular(rng, 3, 3), some=False, note="square, some=False"),
        sample(_distinct_singular(rng, 4, 2), compute_uv=False, note="values only"),
    ]


@register(
    samples=_svd_v_samples,
    torch=_torch_svd_v,
    results=3,
    estimate=_svd_estimate,
    work=estimates.cubic(60),
)
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """``torch.svd``: (U, S, V) with ``A = U diag(S) V^T`` (V, not Vh; reduced unless
    ``some=False``); with ``compute_uv=False``, U and V are zero-filled."""
    a = _matrix(input, "linalg.svd", square=False)
    if not compute_uv:
        m, n = a._data.shape[-2:]
        batch = a._data.shape[:-2]
        u = Tensor(np.zeros(batch + (m, m), dtype=a._data.dtype))
        v = Tensor(np.zeros(batch + (n, n), dtype=a._data.dtype))
        return TorchSVDResult(u, svdvals(a), v)
    u, s, vh = linalg_svd(a, full_matrices=not some)
    return TorchSVDResult(u, s, transpose(vh, -2, -1))


class _Svdvals(Function):
    """The singular values alone; the gradient ``U diag(gS) Vh`` recomputes U and Vh
    with the differentiable ``svd`` so that double backward works."""

    name = "LinalgSvdBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        return _svd_np(a._data, compute_uv=False).astype(a._data.dtype)

    @staticmethod
    def backward(ctx: Any, gs: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        u, _, vh = linalg_svd(a, full_matrices=False)
        return _mm(u, _mm(_diag_embed(gs), vh))


@register(
    samples=lambda rng: [
        sample(_distinct_singular(rng, 3, 3), note="square"),
        sample(_distinct_singular(rng, 2, 4, 2), note="batched tall"),
    ],
    torch="linalg.svdvals",
    method=False,
    work=estimates.cubic(30),
)
def svdvals(A: Tensor) -> Tensor:
    """The singular values, descending."""
    return _Svdvals.apply(_matrix(A, "linalg.svdvals", square=False))


# -- pinv -----------------------------------------------------------------------------------


class LinalgPinvBackward0(Function):
    name = "LinalgPinvBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False
    ) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.save_result()
        return _pinv_np(a._data, atol, rtol, hermitian)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return pinv_grad(g, ctx.result, a)


def pinv_grad(g: Tensor, p: Tensor, a: Tensor) -> Tensor:
    """PyTorch's pinv_backward: the gradient through ``P = pinv(A)`` for cotangent ``g``."""
    m, n = a._data.shape[-2:]
    ph, gh = _mT(p), _mT(g)
    if m <= n:
        k = _mm(gh, p)
        kph = _mm(k, ph)
        return -_mT(_mm(p, k)) + kph - _mm(_mm(a, p), kph) + _mm(_mm(ph, p), gh - _mm(k, a))
    k = _mm(p, gh)
    phk = _mm(ph, k)
    return -_mT(_mm(k, p)) + _mm(_mm(gh - _mm(a, k), p), ph) + phk - _mm(_mm(phk, p), a)


def _pinv_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_distinct_singular(rng, 3, 3), note="square"),
        sample(_distinct_singular(rng, 4, 2), note="tall"),
        sample(_distinct_singular(rng, 2, 3), note="wide"),
        sample(_distinct_singular(rng, 2, 3, 2), note="batched"),
    ]


def _tolerance(value: Any, batch: tuple[int, ...]) -> np.ndarray:
    """An ``atol``/``rtol`` (number or tensor) broadcast over the batch, one per matrix."""
    v = value._data if isinstance(value, Tensor) else np.asarray(value, np.float64)
    return np.broadcast_to(v, np.broadcast_shapes(v.shape, batch))[..., None]


def _pinv_np(x: np.ndarray, atol: Any, rtol: Any, hermitian: bool) -> np.ndarray:
    """PyTorch's pinv: singular values at most ``max(atol, rtol * largest)`` count as zero
    (``rtol`` defaults to ``eps * max(m, n)`` with no ``atol``, else to 0)."""
    m, n = x.shape[-2:]
    dt = x.dtype
    if x.size == 0:
        return np.zeros(x.shape[:-2] + (n, m), dt)
    if rtol is None:
        rtol = np.finfo(dt).eps * max(m, n) if atol is None or _all_zero(atol) else 0.0
    batch = x.shape[:-2]
    at = _tolerance(0.0 if atol is None else atol, batch)
    rt = _tolerance(rtol, batch)
    if hermitian:
        try:
            s, u = np.linalg.eigh(x)
        except np.linalg.LinAlgError:
            raise _not_converged("linalg.eigh", x, "eigenvalues") from None
        top = np.abs(s).max(-1, keepdims=True)
        tol = np.maximum(at, rt * top)
        with np.errstate(divide="ignore"):
            sp = np.where(np.abs(s) > tol, 1.0 / s, 0.0)
        return ((u * sp[..., None, :]) @ np.swapaxes(u, -1, -2)).astype(dt)
    # LAPACK decides: a non-finite matrix fails when the SVD does not converge (an error,
    # as numpy's and PyTorch's) and otherwise gives NaN, as PyTorch's pinv does
    u, s, vh = _svd_np(x, full_matrices=False)
    tol = np.maximum(at, rt * s[..., :1])
    with np.errstate(divide="ignore"):
        sp = np.where(s > tol, 1.0 / s, 0.0)
    return ((np.swapaxes(vh, -1, -2) * sp[..., None, :]) @ np.swapaxes(u, -1, -2)).astype(dt)


def _all_zero(v: Any) -> bool:
    return not np.any(v._data if isinstance(v, Tensor) else v)


def _pinv_args(rng: np.random.Generator) -> list[Any]:
    return [
        *_pinv_samples(rng),
        # a cut singular value makes the result another matrix's pseudo-inverse, where
        # PyTorch's gradient (pinv_backward, ours too) is not the derivative
        sample(_distinct_singular(rng, 3, 3), rtol=0.5, note="rtol cuts", gradcheck=False),
        sample(_distinct_singular(rng, 3, 3), atol=0.1, note="atol"),
        sample(
            _distinct_singular(rng, 2, 3, 3),
            Const(np.array([0.1, 0.9])),
            note="rcond tensor cuts",
            gradcheck=False,
        ),
        sample(_distinct_spectrum(rng, 3, 3), hermitian=True, note="hermitian", gradcheck=False),
        sample(np.zeros((0, 3)), note="empty"),
    ]


@register(
    out_overlap="unchecked",
    samples=_pinv_args,
    torch="linalg.pinv",
    method=False,
    work=estimates.cubic(90),
)
def pinv(
    A: Tensor,
    rcond: Any = None,
    hermitian: bool = False,
    *,
    atol: Any = None,
    rtol: Any = None,
) -> Tensor:
    """The Moore-Penrose pseudo-inverse: singular values up to ``max(atol, rtol * largest)``
    count as zero (``rcond`` is ``rtol``); ``hermitian`` reads one triangle with ``eigh``."""
    a = _matrix(A, "linalg.pinv", square=False)
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise BadArgumentsError("linalg.pinv: rcond and rtol are mutually exclusive")
        atol, rtol = 0.0, rcond
    return LinalgPinvBackward0.apply(a, atol=atol, rtol=rtol, hermitian=bool(hermitian))


@register(samples=_pinv_samples, torch="pinverse", work=estimates.cubic(90))
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``linalg.pinv`` with ``rcond`` as its ``rtol`` (PyTorch's ``torch.pinverse``)."""
    return pinv(input, rcond)


# -- norms -------------------------------------------------------------------------------------


def _vector_norm_samples(rng: np.random.Generator) -> list[Any]:
    inf = math.inf
    return [
        sample(S.rand(rng, 2, 3), note="2, all"),
        sample(S.rand(rng, 2, 3), 1, 1, note="1, dim"),
        sample(S.rand(rng, 2, 3), 3, (0, 1), True, note="3, dims keepdim"),
        sample(S.rand(rng, 2, 3), inf, note="inf"),
        sample(S.rand(rng, 2, 3), -inf, 0, note="-inf dim"),
        sample(S.rand(rng, 2, 3), 0, note="0"),
        sample(S.rand(rng, 2, 3), 0.5, -1, note="0.5"),
        sample(S.rand(rng), note="0-d"),
        sample(np.zeros((2, 3)), dim=1, note="zero vector", gradcheck=False),
    ]


@register(
    out_overlap="unchecked", samples=_vector_norm_samples, torch="linalg.vector_norm", method=False
)
def vector_norm(
    x: Tensor,
    ord: Any = 2,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,  # noqa: A002
) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all elements when None) as a vector."""

    a = as_tensor(x)
    if dtype is not None:
        a = to_dtype(a, dtype)
    if a._data.dtype.kind == "c":
        raise not_in_engine("linalg.vector_norm", a._data.dtype)
    if not dtypes.is_floating(a._data.dtype):
        raise DtypeMismatchError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            + _TYPE.get(dtypes.torch_name(a._data.dtype), str(a._data.dtype))
        )
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise BadArgumentsError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    p = float(ord)
    if isinstance(dim, (list, tuple)):
        dims = tuple(sorted(normalize_dim(d, a.ndim) for d in dim)) if dim else tuple(range(a.ndim))
    elif dim is None:
        dims = tuple(range(a.ndim))
    else:
        dims = (normalize_dim(dim, a.ndim),)
    dims = dims if a.ndim else ()
    if (p < 0 or math.isinf(p)) and any(a._data.shape[d] == 0 for d in dims):
        _no_identity(p, a, dim)
    return LinalgVectorNormBackward0.apply(a, p=p, dims=dims, keepdim=bool(keepdim))


def _matrix_norm_samples(rng: np.random.Generator) -> list[Any]:
    inf = math.inf
    out = [
        sample(_distinct_singular(rng, 2, 3, 3), note="fro"),
        sample(_distinct_singular(rng, 3, 2), "nuc", note="nuc"),
        sample(_distinct_singular(rng, 3, 3), "nuc", keepdim=True, note="nuc keepdim"),
        sample(_distinct_singular(rng, 2, 3), 2, note="2"),
        sample(_distinct_singular(rng, 3, 3), -2, note="-2"),
        sample(_distinct_singular(rng, 3, 3, 2), 2, (0, 2), note="2, dims"),
    ]
    for o in (1, -1, inf, -inf):
        out.append(sample(S.rand(rng, 2, 3, 4), o, note=f"{o}"))
    out.append(sample(S.rand(rng, 3, 4), 1, (1, 0), True, note="1, dims swapped, keepdim"))
    return out


def _matrix_norm_work(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """An SVD's for the spectral and nuclear norms; the others are sums."""
    ord_ = kwargs.get("ord", args[1] if len(args) > 1 else "fro")
    return _SVD_WORK(args, kwargs) if ord_ in (2, -2, "nuc") else None


_SVD_WORK = estimates.cubic(30)


@register(
    samples=_matrix_norm_samples, torch="linalg.matrix_norm", method=False, work=_matrix_norm_work
)
def matrix_norm(
    A: Tensor,
    ord: Any = "fro",
    dim: Any = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,  # noqa: A002
) -> Tensor:
    """A matrix norm over the two ``dim``: 'fro', 'nuc', 2, -2, 1, -1, inf or -inf."""

    a = as_tensor(A)
    if dtype is not None:
        a = to_dtype(a, dtype)
    if a.ndim < 2:
        raise BadArgumentsError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
        )
    if not isinstance(dim, (list, tuple)) or len(dim) != 2:
        raise BadArgumentsError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = normalize_dim(dim[0], a.ndim), normalize_dim(dim[1], a.ndim)
    if d0 == d1:
        raise BadArgumentsError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return vector_norm(a, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        rest = [d for d in range(a.ndim) if d not in (d0, d1)]
        perm = [*rest, d0, d1]
        s = svdvals(permute(a, *perm))
        if ord == "nuc":
            out = sum_(s, -1, keepdim)
        else:
            out = (amax if ord == 2 else amin)(s, -1, keepdim)
        if keepdim:
            inverse_perm = [perm.index(k) for k in range(a.ndim)]
            out = permute(_unsq(out, -1), *inverse_perm)
        return out
    if ord in (1, -1, math.inf, -math.inf):
        if ord in (math.inf, -math.inf):
            d0, d1 = d1, d0
        inner = vector_norm(a, 1, d0, keepdim)
        if not keepdim and d0 < d1:
            d1 -= 1
        return (amax if ord > 0 else amin)(inner, d1, keepdim)
    raise BadArgumentsError(f"linalg.matrix_norm: Order {ord} not supported.")
