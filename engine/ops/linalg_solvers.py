"""Triangular and least-squares solvers of ``torch.linalg``: ``solve_triangular``,
``triangular_solve``, ``cholesky_solve``, ``cholesky_inverse``, ``lstsq``, the ``_ex``
variants (``inv_ex``, ``solve_ex``, ``cholesky_ex``: an ``info`` instead of an error)
and ``tensorinv``/``tensorsolve``.

Forwards call BLAS/LAPACK through numpy and scipy (``trsm`` never refuses a zero
pivot: it divides, as PyTorch does); backward rules are PyTorch's
(``linalg_solve_triangular_backward``, ``cholesky_solve_backward``,
``cholesky_inverse_backward``, ``linalg_lstsq_backward`` through ``pinv``), written in
engine ops so that ``create_graph`` differentiates them again. Where PyTorch's op is
itself a composite (``tensorinv``, ``tensorsolve``, ``lstsq``'s gradient) ours is too.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple
from typing import Any

import numpy as np
from scipy.linalg import get_blas_funcs

from .. import dtypes, estimates, interrupt
from ..dual import FROM_BACKWARD
from ..errors import BadArgumentsError, ShapeMismatchError
from ..function import Function
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor
from .decompositions import (
    _matrix,
    _spd,
    _well_conditioned,
    cholesky,
    inv,
    leading_not_pd,
    pinv,
    pinv_grad,
    solve,
)
from .linalg import matmul, transpose
from .products import tril, triu

SolveTriangularResult = namedtuple("SolveTriangularResult", ["solution", "cloned_coefficient"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])
InvExResult = namedtuple("InvExResult", ["inverse", "info"])
SolveExResult = namedtuple("SolveExResult", ["result", "info"])
CholeskyExResult = namedtuple("CholeskyExResult", ["L", "info"])


def _op(name: str) -> Any:
    return OPS[name].fn


def _mT(t: Tensor) -> Tensor:
    return transpose(t, -2, -1)


def _same_dtype(op: str, a: Tensor, b: Tensor, names: tuple[str, str] = ("A", "B")) -> None:
    if a._data.dtype != b._data.dtype:
        raise BadArgumentsError(
            f"{op}: Expected {names[0]} and {names[1]} to have the same dtype, but found "
            f"{names[0]} of type {dtypes.torch_name(a._data.dtype).capitalize()} and "
            f"{names[1]} of type {dtypes.torch_name(b._data.dtype).capitalize()} instead"
        )


def _batch_broadcast(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both operands with their batch dims broadcast (the matrices keep their own)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])


def trsm(a: np.ndarray, b: np.ndarray, *, upper: bool, left: bool, unit: bool) -> np.ndarray:
    """``op(A)^{-1} B`` (``B A^{-1}`` when not ``left``) for triangular A, batched: BLAS
    ``trsm``, which divides by a zero pivot (inf/NaN) instead of refusing it."""
    a, b = _batch_broadcast(a, b)
    out = np.zeros(b.shape, b.dtype)
    if out.size == 0 or a.shape[-1] == 0:
        return out
    (fn,) = get_blas_funcs(("trsm",), (a, b))
    flat_a = a.reshape((-1,) + a.shape[-2:])
    flat_out = out.reshape((-1,) + out.shape[-2:])
    with np.errstate(all="ignore"):
        for k, bk in enumerate(b.reshape((-1,) + b.shape[-2:])):
            flat_out[k] = fn(
                1.0,
                flat_a[k],
                bk,
                side=0 if left else 1,
                lower=0 if upper else 1,
                diag=1 if unit else 0,
            )
    return out


# -- solve_triangular, triangular_solve ---------------------------------------------------


class LinalgSolveTriangularBackward0(Function):
    name = "LinalgSolveTriangularBackward0"
    jvp = FROM_BACKWARD
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, *, upper: bool, left: bool, unit: bool) -> Any:
        ctx.upper, ctx.left, ctx.unit = upper, left, unit
        ctx.save_for_backward(a)
        ctx.save_result()
        return trsm(a._data, b._data, upper=upper, left=left, unit=unit)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (a,) = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        gb = solve_triangular(_mT(a), g, upper=not ctx.upper, left=ctx.left, unitriangular=ctx.unit)
        ga = None
        if need_a:
            xh = _mT(ctx.result)
            ga = -matmul(gb, xh) if ctx.left else -matmul(xh, gb)
            k = int(ctx.unit)
            ga = triu(ga, k) if ctx.upper else tril(ga, -k)
        return ga, (gb if need_b else None)


def _triangular(rng: np.random.Generator, *shape: int, upper: bool = True) -> np.ndarray:
    a = _well_conditioned(rng, *shape)
    return np.triu(a) if upper else np.tril(a)


def _solve_triangular_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(_triangular(rng, 3, 3), S.rand(rng, 3, 2), upper=True, note="upper"),
        sample(_triangular(rng, 3, 3, upper=False), S.rand(rng, 3, 2), upper=False, note="lower"),
        sample(_triangular(rng, 2, 3, 3), S.rand(rng, 3, 1), upper=True, note="batched A"),
        sample(_triangular(rng, 3, 3), S.rand(rng, 2, 3), upper=True, left=False, note="XA = B"),
        sample(S.rand(rng, 3, 3), S.rand(rng, 3, 2), upper=False, unitriangular=True, note="unit"),
        sample(_triangular(rng, 3, 3), Const(S.rand(rng, 3, 2)), upper=True, note="const B"),
    ]


@register(
    samples=_solve_triangular_samples,
    torch="linalg.solve_triangular",
    method=False,
    work=estimates.cubic(1),
)
def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """``X`` with ``A X = B`` (``X A = B`` when not ``left``) for triangular ``A``: only
    its ``upper`` or lower triangle is read (and not its diagonal when ``unitriangular``)."""
    a = _matrix(A, "linalg.solve_triangular")
    b = as_tensor(B)
    if b.ndim < 2:
        raise BadArgumentsError(
            "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."
        )
    _same_dtype("linalg.solve_triangular", a, b)
    n = a._data.shape[-1]
    rows, cols = b._data.shape[-2:]
    if (rows if left else cols) != n:
        eq = "AX = B" if left else "XA = B"
        raise ShapeMismatchError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eq} "
            f"({n}x{n} and {rows}x{cols})"
        )
    return LinalgSolveTriangularBackward0.apply(
        a, b, upper=bool(upper), left=bool(left), unit=bool(unitriangular)
    )


def _triangular_solve_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 2), _triangular(rng, 3, 3), note="upper"),
        sample(S.rand(rng, 3, 2), _triangular(rng, 3, 3, upper=False), False, note="lower"),
        sample(S.rand(rng, 2, 3, 1), _triangular(rng, 3, 3), transpose=True, note="transpose"),
        sample(S.rand(rng, 3, 2), S.rand(rng, 3, 3), unitriangular=True, note="unit"),
    ]


class TriangularSolveBackward0(Function):
    """(solution, copy of A): PyTorch's ``triangular_solve_backward``."""

    name = "TriangularSolveBackward0"
    jvp = FROM_BACKWARD
    broadcasts = True

    @staticmethod
    def forward(
        ctx: Any, b: Tensor, a: Tensor, *, upper: bool, transpose: bool, unit: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        ctx.materialize_grads = False
        ctx.upper, ctx.transpose, ctx.unit = upper, transpose, unit
        ctx.save_for_backward(a)
        ctx.save_result()
        ad = a._data
        lhs = np.swapaxes(ad, -1, -2) if transpose else ad
        x = trsm(lhs, b._data, upper=upper != transpose, left=True, unit=unit)
        batch = x.shape[:-2]
        return x, np.broadcast_to(ad, batch + ad.shape[-2:]).copy()

    @staticmethod
    def backward(ctx: Any, gx: Tensor | None, gm: Tensor | None) -> Any:
        (a,) = ctx.saved_tensors
        need_b, need_a = ctx.needs_input_grad
        gb = ga = None
        if gx is not None:
            gb = triangular_solve(gx, a, ctx.upper, not ctx.transpose, ctx.unit)[0]
            if need_a:
                x = ctx.results[0]
                ga = -matmul(x, _mT(gb)) if ctx.transpose else -matmul(gb, _mT(x))
                k = int(ctx.unit)
                ga = triu(ga, k) if ctx.upper else tril(ga, -k)
        if need_a and gm is not None:
            ga = gm if ga is None else ga + gm
        if gb is None and need_b:  # PyTorch's backward: zeros for b when only gm is defined
            gb = Tensor._make(np.zeros_like(ctx.results[0]._data))
        return (gb if need_b else None), (ga if need_a else None)


_TRIANGULAR_SOLVE_DEPRECATED = (
    "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will "
    "be removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
    "reversed and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
    "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, B)."
)


@register(samples=_triangular_solve_samples, results=2, work=estimates.cubic(1))
def triangular_solve(
    input: Tensor,
    A: Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
) -> Any:
    """``torch.triangular_solve`` (deprecated in PyTorch): (the solution of ``op(A) X =
    input``, a copy of ``A`` broadcast to the batch)."""
    b, a = as_tensor(input), as_tensor(A)
    if b.ndim < 2 or a.ndim < 2:
        raise BadArgumentsError(
            f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
            f"{b.ndim} dimensions instead"
            if b.ndim < 2
            else f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
            f"{a.ndim} dimensions instead"
        )
    _same_dtype("triangular_solve", b, a, ("b", "A"))
    warnings.warn(_TRIANGULAR_SOLVE_DEPRECATED, UserWarning, stacklevel=3)
    return SolveTriangularResult(
        *TriangularSolveBackward0.apply(
            b, a, upper=bool(upper), transpose=bool(transpose), unit=bool(unitriangular)
        )
    )


# -- cholesky_solve, cholesky_inverse -------------------------------------------------------


class CholeskySolveBackward0(Function):
    name = "CholeskySolveBackward0"
    jvp = FROM_BACKWARD
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, b: Tensor, low: Tensor, *, upper: bool) -> np.ndarray:
        ctx.upper = upper
        ctx.save_for_backward(low)
        ctx.save_result()
        lo = low._data
        if upper:  # U^T U: solve U^T y = b, then U x = y
            y = trsm(np.swapaxes(lo, -1, -2), b._data, upper=False, left=True, unit=False)
            return trsm(lo, y, upper=True, left=True, unit=False)
        y = trsm(lo, b._data, upper=False, left=True, unit=False)
        return trsm(np.swapaxes(lo, -1, -2), y, upper=True, left=True, unit=False)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (low,) = ctx.saved_tensors
        gb = cholesky_solve(g, low, ctx.upper)
        gl = None
        if ctx.needs_input_grad[1]:
            common = matmul(gb, _mT(ctx.result))
            common = common + _mT(common)
            gl = -matmul(low, common) if ctx.upper else -matmul(common, low)
        return gb, gl


def _cholesky_factor(rng: np.random.Generator, *shape: int, upper: bool = False) -> np.ndarray:
    low = np.linalg.cholesky(_spd(rng, *shape))
    return np.swapaxes(low, -1, -2).copy() if upper else low


# PyTorch's gradient for the factor treats it as a full matrix (``L L^T`` with every
# entry of L) while the forward reads one triangle: finite differences agree on 1x1
# factors only (PyTorch's OpInfo gradchecks through ``tril``); larger ones are compared
# with PyTorch's gradient.
_FULL_L = "PyTorch's gradient reads all of L, the forward one triangle"


def _cholesky_solve_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 1, 2), _cholesky_factor(rng, 1, 1), note="1x1"),
        sample(S.rand(rng, 2, 1, 2), _cholesky_factor(rng, 1, 1), True, note="1x1 upper"),
        sample(S.rand(rng, 3, 2), _cholesky_factor(rng, 3, 3), note=_FULL_L, gradcheck=False),
        sample(
            S.rand(rng, 3, 2),
            _cholesky_factor(rng, 3, 3, upper=True),
            True,
            note="upper; " + _FULL_L,
            gradcheck=False,
        ),
        sample(S.rand(rng, 2, 3, 1), _cholesky_factor(rng, 3, 3), note=_FULL_L, gradcheck=False),
    ]


@register(samples=_cholesky_solve_samples, work=estimates.cubic(1))
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """``X`` with ``(L L^T) X = input`` given the Cholesky factor ``L`` (``U^T U`` when
    ``upper``) as ``input2``."""
    b, low = as_tensor(input), as_tensor(input2)
    if b.ndim < 2:
        raise BadArgumentsError(
            f"cholesky_solve: Expected b to have at least 2 dimensions, but it has {b.ndim} "
            "dimensions instead"
        )
    if low.ndim < 2:
        raise BadArgumentsError(
            f"cholesky_solve: Expected A to have at least 2 dimensions, but it has {low.ndim} "
            "dimensions instead"
        )
    _matrix(low, "cholesky_solve")
    _same_dtype("cholesky_solve", b, low, ("b", "A"))
    if b._data.shape[-2] != low._data.shape[-1]:
        raise ShapeMismatchError(
            f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
            f"{low._data.shape[-1]} by {low._data.shape[-1]} but each b matrix is "
            f"{b._data.shape[-2]} by {b._data.shape[-1]}"
        )
    return CholeskySolveBackward0.apply(b, low, upper=bool(upper))


class CholeskyInverseBackward0(Function):
    name = "CholeskyInverseBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, low: Tensor, *, upper: bool) -> np.ndarray:
        ctx.upper = upper
        ctx.save_for_backward(low)
        ctx.save_result()
        n = low._data.shape[-1]
        eye = np.broadcast_to(np.eye(n, dtype=low._data.dtype), low._data.shape)
        lo = low._data
        if upper:
            y = trsm(np.swapaxes(lo, -1, -2), eye, upper=False, left=True, unit=False)
            return trsm(lo, y, upper=True, left=True, unit=False)
        y = trsm(lo, eye, upper=False, left=True, unit=False)
        return trsm(np.swapaxes(lo, -1, -2), y, upper=True, left=True, unit=False)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (low,) = ctx.saved_tensors
        inverse = ctx.result
        common = matmul(inverse, matmul(g + _mT(g), inverse))
        return -matmul(low, common) if ctx.upper else -matmul(common, low)


@register(
    samples=lambda rng: [
        sample(_cholesky_factor(rng, 1, 1), note="1x1"),
        sample(_cholesky_factor(rng, 2, 1, 1), True, note="1x1 upper"),
        sample(_cholesky_factor(rng, 3, 3), note="lower; " + _FULL_L, gradcheck=False),
        sample(
            _cholesky_factor(rng, 3, 3, upper=True),
            True,
            note="upper; " + _FULL_L,
            gradcheck=False,
        ),
        sample(_cholesky_factor(rng, 2, 2, 2), note="batched; " + _FULL_L, gradcheck=False),
    ],
    work=estimates.cubic(4),
)
def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``L L^T`` (``U^T U`` when ``upper``) from its Cholesky factor."""
    low = as_tensor(input)
    if low.ndim < 2:
        raise BadArgumentsError(
            "cholesky_inverse: The input tensor A must have at least 2 dimensions."
        )
    _matrix(low, "cholesky_inverse")
    return CholeskyInverseBackward0.apply(low, upper=bool(upper))


# -- lstsq ------------------------------------------------------------------------------------

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


class LinalgLstsqBackward0(Function):
    """(solution, residuals): the solution's gradient is PyTorch's, through ``pinv(A) @ B``
    (the same function for a full-rank A); the residuals' is that of ``||A X - B||^2``
    at the optimum. The singular values are not differentiable (as in PyTorch)."""

    name = "LinalgLstsqBackward0"
    jvp = FROM_BACKWARD
    broadcasts = True

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, b: Tensor, *, vector: bool, driver: str, rcond: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        ctx.materialize_grads = False
        ctx.save_result()
        ctx.vector = vector
        ctx.save_for_backward(a, b)
        ad, bd = a._data, (b._data[..., None] if vector else b._data)
        m, n = ad.shape[-2:]
        dt = ad.dtype
        x = (
            np.linalg.pinv(ad) @ bd
            if ad.size
            else np.zeros(np.broadcast_shapes(ad.shape[:-2], bd.shape[:-2]) + (n, bd.shape[-1]), dt)
        )
        sv = _svals(ad)
        ctx.rank = _rank(sv, m, n, rcond)
        res = np.zeros((0,), dt)
        if m > n and driver != "gelsy" and bool(np.all(ctx.rank == n)):
            r = ad @ x - bd
            res = (r * r).sum(-2)
            res = res[..., 0] if vector else res
        return (x[..., 0] if vector else x).astype(dt), res.astype(dt)

    @staticmethod
    def backward(ctx: Any, gx: Tensor | None, gr: Tensor | None) -> Any:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        unsq, sq = _op("unsqueeze"), _op("squeeze")
        if ctx.vector:
            b = unsq(b, -1)
        ga = gb = None
        if gx is not None:
            gx = unsq(gx, -1) if ctx.vector else gx
            p = pinv(a)
            ga = pinv_grad(matmul(gx, _mT(b)), p, a) if need_a else None
            gb = matmul(_mT(p), gx) if need_b else None
        if gr is not None and gr._data.size:  # d ||A X - B||^2 at the optimum (dR/dX = 0)
            x = ctx.results[0]
            x = unsq(x, -1) if ctx.vector else x
            gr = unsq(gr, -1) if ctx.vector else gr
            r = (matmul(a, x) - b) * unsq(gr, -2) * 2.0
            ga_r, gb_r = matmul(r, _mT(x)), -r
            ga = ga_r if ga is None else ga + ga_r
            gb = gb_r if gb is None else gb + gb_r
        if gb is not None and ctx.vector:
            gb = sq(gb, -1)
        return (ga if need_a else None), (gb if need_b else None)


def _svals(a: np.ndarray) -> np.ndarray:
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (min(m, n),), a.dtype)
    return np.linalg.svd(a, compute_uv=False)


def _rank(sv: np.ndarray, m: int, n: int, rcond: Any) -> np.ndarray:
    tol = np.finfo(sv.dtype).eps * max(m, n) if rcond is None else float(rcond)
    top = sv[..., :1] if sv.shape[-1] else np.zeros(sv.shape[:-1] + (1,), sv.dtype)
    return (sv > tol * top).sum(-1).astype(np.int64)


def _lstsq_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 4, 3) + np.eye(4, 3) * 2, S.rand(rng, 4, 2), note="tall"),
        sample(S.rand(rng, 2, 3) + np.eye(2, 3) * 2, S.rand(rng, 2, 2), note="wide"),
        sample(_well_conditioned(rng, 2, 3, 3), S.rand(rng, 2, 3, 1), note="batched"),
        sample(
            S.rand(rng, 4, 3) + np.eye(4, 3) * 2,
            S.rand(rng, 4, 2),
            driver="gelsd",
            note="singular values, not differentiable (as in PyTorch)",
            gradcheck=False,
        ),
        sample(S.rand(rng, 4, 3) + np.eye(4, 3) * 2, S.rand(rng, 4, 2), driver="gels"),
        sample(S.rand(rng, 4, 3) + np.eye(4, 3) * 2, S.rand(rng, 4), note="vector B"),
    ]


@register(
    samples=_lstsq_samples, torch="linalg.lstsq", method=False, results=4, work=estimates.cubic(90)
)
def lstsq(A: Tensor, B: Tensor, rcond: Any = None, *, driver: Any = None) -> Any:
    """(solution, residuals, rank, singular_values) of ``min ||A X - B||``; which of the
    last three are filled depends on the LAPACK ``driver``, as in PyTorch."""
    a, b = as_tensor(A), as_tensor(B)
    if a.ndim < 2:
        raise BadArgumentsError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    _matrix(a, "torch.linalg.lstsq", square=False)
    if b.ndim < 1:
        raise BadArgumentsError("torch.linalg.lstsq: other must have at least 1 dimension.")
    _same_dtype("torch.linalg.lstsq", a, b, ("input", "other"))
    drv = "gelsy" if driver is None else driver
    if drv not in _DRIVERS:
        raise BadArgumentsError(
            "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b._data.shape == a._data.shape[:-1])
    m, n = a._data.shape[-2:]
    rows = b._data.shape[-1] if vector else b._data.shape[-2]
    if rows != m:
        raise ShapeMismatchError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-{1 if vector else 2})"
        )
    x, residuals = LinalgLstsqBackward0.apply(a, b, vector=vector, driver=drv, rcond=rcond)
    sv = _svals(a._data)
    rank_np = _rank(sv, m, n, rcond)
    dt = a._data.dtype
    svals = Tensor._make(sv.astype(dt) if drv in ("gelsd", "gelss") else np.zeros((0,), dt))
    rank = Tensor._make(np.zeros((0,), np.int64) if drv == "gels" else rank_np)
    return LstsqResult(x, residuals, rank, svals)


# -- inv_ex, solve_ex, cholesky_ex -------------------------------------------------------------


def _info(shape: tuple[int, ...]) -> Tensor:
    return Tensor._make(np.zeros(shape, np.int32))


@register(
    samples=lambda rng: [
        sample(_well_conditioned(rng, 3, 3)),
        sample(_well_conditioned(rng, 2, 2, 2), note="batched"),
    ],
    torch="linalg.inv_ex",
    method=False,
    results=2,
    work=estimates.cubic(4),
)
def inv_ex(A: Tensor, *, check_errors: bool = False) -> Any:
    """(inverse, info): ``linalg.inv`` with a LAPACK ``info`` per matrix (0: success)."""
    a = _matrix(A, "linalg.inv_ex")
    return InvExResult(inv(a), _info(a._data.shape[:-2]))


@register(
    samples=lambda rng: [
        sample(_well_conditioned(rng, 3, 3), S.rand(rng, 3, 2)),
        sample(_well_conditioned(rng, 2, 3, 3), S.rand(rng, 2, 3), note="vectors"),
        sample(_well_conditioned(rng, 3, 3), S.rand(rng, 2, 3), left=False, note="XA = B"),
    ],
    torch="linalg.solve_ex",
    method=False,
    results=2,
    work=estimates.cubic(4),
)
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> Any:
    """(result, info): ``linalg.solve`` with a LAPACK ``info`` per matrix (0: success)."""
    x = solve(A, B, left=left)
    a = as_tensor(A)
    batch = np.broadcast_shapes(a._data.shape[:-2], x._data.shape[: a.ndim - 2])
    return SolveExResult(x, _info(batch))


@register(
    samples=lambda rng: [
        sample(Const(_spd(rng, 3, 3)), note="3x3"),
        sample(Const(_spd(rng, 2, 3, 3)), upper=True, note="upper"),
        sample(_spd(rng, 1, 1), note="1x1"),
    ],
    torch="linalg.cholesky_ex",
    method=False,
    results=2,
    work=estimates.cubic(1),
)
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> Any:
    """(L, info): ``linalg.cholesky`` with a LAPACK ``info`` per matrix: the order of the
    first leading minor that is not positive-definite (0: success), instead of an error."""
    a = _matrix(A, "linalg.cholesky_ex")
    x = a._data
    low = np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2)
    flat = low.reshape((math.prod(x.shape[:-2]),) + x.shape[-2:])
    info = np.array([leading_not_pd(m) for m in interrupt.checked(flat)], np.int32).reshape(
        x.shape[:-2]
    )
    if check_errors or not info.any():
        return CholeskyExResult(cholesky(a, upper=upper), Tensor._make(info))
    # PyTorch leaves LAPACK's partial factor; the engine gives NaN where it stopped
    out = np.full(x.shape, np.nan, x.dtype)
    good = info.reshape(-1) == 0
    if good.any():
        out.reshape(flat.shape)[good] = np.linalg.cholesky(flat[good])
    out = np.swapaxes(out, -1, -2) if upper else out
    return CholeskyExResult(Tensor._make(np.ascontiguousarray(out)), Tensor._make(info))


# -- tensorinv, tensorsolve --------------------------------------------------------------------


@register(
    samples=lambda rng: [
        sample(_well_conditioned(rng, 6, 6).reshape(2, 3, 6), 2, note="ind 2"),
        sample(_well_conditioned(rng, 4, 4).reshape(4, 2, 2), 1, note="ind 1"),
    ],
    torch="linalg.tensorinv",
    method=False,
    work=estimates.cubic(4),
)
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` for ``tensordot(·, ·, ind)``: ``A`` read as a square matrix of
    its first ``ind`` dims by the rest."""
    a = as_tensor(A)
    if ind <= 0:
        raise BadArgumentsError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = a._data.shape
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise ShapeMismatchError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    out = inv(_op("reshape")(a, rows, cols))
    # PyTorch's inverse is column-major, so its last reshape records ReshapeAliasBackward0
    return composite("ReshapeAliasBackward0", _reshape_body, out, shape=shape[ind:] + shape[:ind])


def _reshape_body(t: Tensor, *, shape: tuple[int, ...]) -> Tensor:
    return _op("reshape")(t, *shape)


@register(
    samples=lambda rng: [
        sample(_well_conditioned(rng, 6, 6).reshape(2, 3, 6), S.rand(rng, 2, 3)),
        sample(
            _well_conditioned(rng, 6, 6).reshape(6, 2, 3),
            S.rand(rng, 2, 3),
            dims=(0,),
            note="dims",
        ),
    ],
    torch="linalg.tensorsolve",
    method=False,
    work=estimates.cubic(4),
)
def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:
    """``X`` with ``tensordot(A, X, X.ndim) = B``; ``dims`` of ``A`` move to the end first."""
    a, b = as_tensor(A), as_tensor(B)
    if dims is not None:
        nd = a.ndim
        src = [d % nd for d in dims]
        a = _op("movedim")(a, tuple(src), tuple(range(nd - len(src), nd)))
    shape = a._data.shape
    rest = shape[b.ndim :]
    rows, cols = b._data.size, math.prod(rest)
    if rows != cols:
        raise ShapeMismatchError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )
    x = solve(_op("reshape")(a, rows, cols), _op("reshape")(b, rows))
    return _op("reshape")(x, *rest)
