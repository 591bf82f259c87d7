"""The LU family: ``linalg.lu_factor(_ex)``, ``linalg.lu``, ``lu_unpack``,
``linalg.lu_solve`` and the older ``torch.lu``/``torch.lu_solve`` spellings.

The factorization is LAPACK ``getrf`` (scipy), partial pivoting, pivots 1-based int32
as PyTorch returns them. The backward is PyTorch's ``linalg_lu_backward`` (square, wide
and tall cases) in engine ops; ``lu_unpack`` and ``lu_solve`` are composites of
triangular solves and masks, so their gradients come from those.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple
from typing import Any

import numpy as np
from scipy.linalg import lu_factor as _getrf

from .. import estimates, interrupt
from ..dual import FROM_BACKWARD
from ..errors import BadArgumentsError
from ..function import Function
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor
from .decompositions import LinAlgError, _matrix, _well_conditioned
from .linalg import matmul, transpose
from .linalg_solvers import solve_triangular
from .products import tril, triu

LUFactorResult = namedtuple("LUFactorResult", ["LU", "pivots"])
LUFactorExResult = namedtuple("LUFactorExResult", ["LU", "pivots", "info"])
LUResult = namedtuple("LUResult", ["P", "L", "U"])


def _op(name: str) -> Any:
    return OPS[name].fn


def _mT(t: Tensor) -> Tensor:
    return transpose(t, -2, -1)


def _getrf_np(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(LU, 1-based int32 pivots, info) per matrix of a batch."""
    m, n = x.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    lu = np.zeros(x.shape, x.dtype)
    piv = np.zeros(batch + (k,), np.int32)
    info = np.zeros(batch, np.int32)
    count = math.prod(batch)
    if x.size == 0:
        piv[...] = np.arange(1, k + 1, dtype=np.int32)
        return lu, piv, info
    flat_x = x.reshape((count, m, n))
    flat_lu, flat_piv, flat_info = (
        lu.reshape(flat_x.shape),
        piv.reshape(count, k),
        info.reshape(count),
    )
    with np.errstate(all="ignore"):
        for b in interrupt.checked(range(count)):
            f, p = _getrf(flat_x[b], check_finite=False, overwrite_a=False)
            flat_lu[b], flat_piv[b] = f, p + 1
            zero = np.flatnonzero(np.diagonal(f)[:k] == 0)
            flat_info[b] = zero[0] + 1 if zero.size else 0
    return lu, piv, info


def _permutation(piv: np.ndarray, m: int, dtype: np.dtype) -> np.ndarray:
    """P with ``A = P L U`` from LAPACK's row swaps (1-based)."""
    batch = piv.shape[:-1]
    count = math.prod(batch)
    perm = np.tile(np.arange(m), (count, 1))
    for b, row in enumerate(piv.reshape(count, piv.shape[-1])):
        for i, p in enumerate(row):
            j = int(p) - 1
            perm[b, [i, j]] = perm[b, [j, i]]
    eye = np.eye(m, dtype=dtype)
    p_t = eye[perm]  # row i of P^T is e_{perm[i]}
    return np.swapaxes(p_t, -1, -2).reshape(batch + (m, m)).copy()


def _split(lu: Tensor) -> tuple[Tensor, Tensor]:
    """(L unit lower m x k, U upper k x n) read from a packed LU (differentiable)."""
    m, n = lu._data.shape[-2:]
    k = min(m, n)
    eye = Tensor._make(np.eye(m, k, dtype=lu._data.dtype))
    low = tril(_op("narrow")(lu, -1, 0, k), -1) + eye
    up = triu(_op("narrow")(lu, -2, 0, k))
    return low, up


def lu_grad(p: Tensor, low: Tensor, up: Tensor, gl: Tensor | None, gu: Tensor | None) -> Tensor:
    """PyTorch's linalg_lu_backward (real case)."""
    m, n = low._data.shape[-2], up._data.shape[-1]
    k = min(m, n)
    cat, narrow = _op("cat"), _op("narrow")
    # only L's strictly lower and U's upper entries vary: the rest take no gradient
    gl = tril(gl, -1) if gl is not None else None
    gu = triu(gu) if gu is not None else None
    if m == n:
        ga = tril(matmul(_mT(low), gl), -1) if gl is not None else None
        if gu is not None:
            t = triu(matmul(gu, _mT(up)))
            ga = t if ga is None else ga + t
        assert ga is not None
        ga = solve_triangular(_mT(up), ga, upper=False, left=False)
        ga = solve_triangular(_mT(low), ga, upper=True, unitriangular=True)
        return matmul(p, ga)
    if m < n:
        u1 = narrow(up, -1, 0, k)
        ga = matmul(_mT(low), gl) if gl is not None else None
        if gu is not None:
            t = -matmul(triu(gu), _mT(up))
            ga = t if ga is None else ga + t
        assert ga is not None
        ga = solve_triangular(_mT(u1), tril(ga, -1), upper=False, left=False)
        if gu is not None:
            ga = cat([ga + triu(narrow(gu, -1, 0, k)), narrow(gu, -1, k, n - k)], -1)
        ga = solve_triangular(_mT(low), ga, upper=True, unitriangular=True)
        if gu is None:
            ga = cat([ga, _op("zeros_like")(narrow(up, -1, k, n - k))], -1)
        return matmul(p, ga)
    l1 = narrow(low, -2, 0, k)
    ga = matmul(gu, _mT(up)) if gu is not None else None
    if gl is not None:
        t = -matmul(_mT(low), gl)
        ga = t if ga is None else ga + t
    assert ga is not None
    ga = solve_triangular(_mT(l1), triu(ga), upper=True, unitriangular=True)
    if gl is not None:
        ga = cat([ga + tril(narrow(gl, -2, 0, k), -1), narrow(gl, -2, k, m - k)], -2)
    ga = solve_triangular(_mT(up), ga, upper=False, left=False)
    if gl is None:
        ga = cat([ga, _op("zeros_like")(narrow(low, -2, k, m - k))], -2)
    return matmul(p, ga)


class LinalgLuBackward0(Function):
    name = "LinalgLuBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> tuple[np.ndarray, np.ndarray]:
        ctx.materialize_grads = False
        ctx.save_result()
        x = a._data
        lu, piv, _ = _getrf_np(x)
        m, n = x.shape[-2:]
        k = min(m, n)
        low = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=x.dtype)
        ctx.p = _permutation(piv, m, x.dtype)
        return low, np.triu(lu[..., :k, :])

    @staticmethod
    def backward(ctx: Any, gl: Tensor | None, gu: Tensor | None) -> Any:
        low, up = ctx.results
        if gl is None and gu is None:
            return None
        return lu_grad(Tensor._make(ctx.p), low, up, gl, gu)


class LinalgLuFactorExBackward0(Function):
    name = "LinalgLuFactorExBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_result()
        lu, piv, info = _getrf_np(a._data)
        ctx.piv, ctx.info = piv, info
        ctx.p = _permutation(piv, a._data.shape[-2], a._data.dtype)
        return lu

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        low, up = _split(ctx.result)
        gl, gu = _split(g)
        k = min(g._data.shape[-2:])
        gl = gl - Tensor._make(np.eye(g._data.shape[-2], k, dtype=g._data.dtype))
        return lu_grad(Tensor._make(ctx.p), low, up, gl, gu)


def _check_pivot(op: str, pivot: bool) -> None:
    if not pivot:
        raise BadArgumentsError(f"{op}: LU without pivoting is not implemented on the CPU")


def _lu_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 3), note="square"),
        sample(S.rand(rng, 2, 3, 3), note="batched"),
        sample(S.rand(rng, 4, 2), note="tall"),
        sample(S.rand(rng, 2, 4), note="wide"),
    ]


@register(
    samples=_lu_samples,
    torch="linalg.lu_factor_ex",
    method=False,
    results=3,
    work=estimates.cubic(4),
)
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> Any:
    """(LU, pivots, info): ``A = P L U`` packed in one matrix (L's unit diagonal left
    out), LAPACK's 1-based row swaps, and the first zero pivot's position (0: none)."""
    a = _matrix(A, "torch.linalg.lu_factor_ex", square=False)
    _check_pivot("linalg.lu_factor", pivot)
    node_out = LinalgLuFactorExBackward0.apply(a)
    _, piv, info = _getrf_np(a._data)
    return LUFactorExResult(node_out, Tensor._make(piv), Tensor._make(info))


@register(
    samples=_lu_samples, torch="linalg.lu_factor", method=False, results=2, work=estimates.cubic(4)
)
def lu_factor(A: Tensor, *, pivot: bool = True) -> Any:
    """(LU, pivots) of ``A = P L U``; a zero pivot is an error (``lu_factor_ex`` reports)."""
    lu, piv, info = lu_factor_ex(A, pivot=pivot)
    bad = np.flatnonzero(info._data.reshape(-1))
    if bad.size:
        k = int(info._data.reshape(-1)[bad[0]])
        raise LinAlgError(
            f"torch.linalg.lu_factor: U[{k},{k}] is zero and using it on lu_solve would result "
            "in a division by zero. If you still want to perform the factorization, consider "
            "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
        )
    return LUFactorResult(lu, piv)


def _plu_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """P (m x m), L (m x k) and U (k x n) per matrix."""
    a = args[0] if args else kwargs.get("A", kwargs.get("LU_data"))
    shape = getattr(a, "shape", None)
    if shape is None or len(shape) < 2:
        return None
    m, n = shape[-2:]
    k = min(m, n)
    return math.prod(shape[:-2]) * (m * m + m * k + k * n + m * n)


@register(
    "linalg_lu",
    samples=_lu_samples,
    torch="linalg.lu",
    method=False,
    results=3,
    estimate=_plu_estimate,
    work=estimates.cubic(4),
)
def linalg_lu(A: Tensor, *, pivot: bool = True) -> Any:
    """(P, L, U) with ``A = P L U``: L unit lower (m x k), U upper (k x n)."""
    a = _matrix(A, "linalg.lu", square=False)
    _check_pivot("linalg.lu", pivot)
    low, up = LinalgLuBackward0.apply(a)
    _, piv, _ = _getrf_np(a._data)
    p = Tensor._make(_permutation(piv, a._data.shape[-2], a._data.dtype))
    return LUResult(p, low, up)


def _unpack_l(lu: Tensor) -> Tensor:
    return _split(lu)[0]


def _unpack_u(lu: Tensor) -> Tensor:
    return _split(lu)[1]


def _lu_unpack_samples(rng: np.random.Generator) -> list[Any]:
    out = []
    for shape in ((3, 3), (2, 4, 2), (2, 4)):
        lu, piv, _ = _getrf_np(S.rand(rng, *shape))
        out.append(sample(lu, Const(piv), note=f"{shape}"))
    return out


@register(samples=_lu_unpack_samples, method=False, results=3, estimate=_plu_estimate)
def lu_unpack(
    LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True
) -> Any:
    """(P, L, U) from ``lu_factor``'s packed result and pivots."""
    lu, piv = as_tensor(LU_data), as_tensor(LU_pivots)
    m = lu._data.shape[-2]
    dt = lu._data.dtype
    empty = Tensor._make(np.zeros((0,), dt))
    p = Tensor._make(_permutation(piv._data, m, dt)) if unpack_pivots else empty
    if not unpack_data:
        return LUResult(p, empty, empty)
    low = composite("LuUnpackBackward0", _unpack_l, lu)
    up = composite("LuUnpackBackward0", _unpack_u, lu)
    return LUResult(p, low, up)


def _lu_solve_body(lu: Tensor, b: Tensor, *, p: np.ndarray, left: bool, adjoint: bool) -> Tensor:
    """``A X = B`` with ``A = P L U`` (``A^T``, ``X A = B``, as asked)."""
    low, up = _split(lu)
    pt = Tensor._make(p)
    if left and not adjoint:  # X = U^-1 L^-1 P^T B
        y = solve_triangular(low, matmul(_mT(pt), b), upper=False, unitriangular=True)
        return solve_triangular(up, y, upper=True)
    if left:  # A^T X = B: U^T L^T P^T X = B
        y = solve_triangular(_mT(up), b, upper=False)
        y = solve_triangular(_mT(low), y, upper=True, unitriangular=True)
        return matmul(pt, y)
    if not adjoint:  # X P L U = B
        y = solve_triangular(up, b, upper=True, left=False)
        y = solve_triangular(low, y, upper=False, left=False, unitriangular=True)
        return matmul(y, _mT(pt))
    # X A^T = B: X U^T L^T P^T = B
    y = solve_triangular(_mT(low), matmul(b, pt), upper=True, left=False, unitriangular=True)
    return solve_triangular(_mT(up), y, upper=False, left=False)


def _lu_solve_samples(rng: np.random.Generator) -> list[Any]:
    out = []
    for kw in ({}, {"adjoint": True}, {"left": False}, {"left": False, "adjoint": True}):
        lu, piv, _ = _getrf_np(_well_conditioned(rng, 3, 3))
        b = S.rand(rng, 3, 2) if kw.get("left", True) else S.rand(rng, 2, 3)
        out.append(sample(lu, Const(piv), b, note=str(kw), **kw))
    return out


@register(
    "linalg_lu_solve",
    samples=_lu_solve_samples,
    torch="linalg.lu_solve",
    method=False,
    work=estimates.cubic(4),
)
def linalg_lu_solve(
    LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False
) -> Tensor:
    """``X`` with ``A X = B`` from ``lu_factor``'s (LU, pivots) (``A^T`` with ``adjoint``,
    ``X A = B`` when not ``left``)."""
    lu, piv, b = as_tensor(LU), as_tensor(pivots), as_tensor(B)
    p = _permutation(piv._data, lu._data.shape[-2], lu._data.dtype)
    return composite(
        "LinalgLuSolveBackward0",
        _lu_solve_body,
        lu,
        b,
        p=p,
        left=bool(left),
        adjoint=bool(adjoint),
    )


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 3)), sample(S.rand(rng, 2, 3, 3))],
    results=2,
    work=estimates.cubic(4),
)
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> Any:
    """``torch.lu``: (LU, pivots), with the infos when ``get_infos``."""
    warnings.warn(_LU_DEPRECATED, UserWarning, stacklevel=3)
    out = lu_factor_ex(A, pivot=pivot)
    return tuple(out) if get_infos else (out[0], out[1])


_LU_DEPRECATED = (
    "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and "
    "will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\n"
    "should be replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
    "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\n"
    "LU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)"
)


_LU_SOLVE_DEPRECATED = (
    "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a "
    "future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\n"
    "X = torch.lu_solve(B, LU, pivots)\nshould be replaced with\n"
    "X = torch.linalg.lu_solve(LU, pivots, B)"
)


def _old_lu_solve_samples(rng: np.random.Generator) -> list[Any]:
    lu, piv, _ = _getrf_np(_well_conditioned(rng, 3, 3))
    return [sample(S.rand(rng, 3, 2), lu, Const(piv))]


@register(samples=_old_lu_solve_samples, work=estimates.cubic(4))
def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """``torch.lu_solve``: ``linalg.lu_solve(LU_data, LU_pivots, input)``."""
    warnings.warn(_LU_SOLVE_DEPRECATED, UserWarning, stacklevel=3)
    return linalg_lu_solve(LU_data, LU_pivots, input)
