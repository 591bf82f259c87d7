"""``torch.linalg`` ops read from a spectrum or built from other ops: ``eigvalsh``,
``matrix_rank``, ``cond``, ``matrix_exp`` and ``vander``.

``eigvalsh``, ``cond`` and ``vander`` are PyTorch's own composites (``eigh``'s values;
``svdvals`` or ``matrix_norm(A) * matrix_norm(inv(A))``; a ``cumprod`` after a row of
ones), so their gradients come from the ops they call. ``matrix_exp``'s backward is
PyTorch's ``linalg_matrix_exp_differential``: the exponential of a block matrix,
written with ``matrix_exp`` itself so that double backward works.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.linalg import expm

from .. import dtypes, estimates, interrupt
from ..dual import FROM_BACKWARD
from ..errors import BadArgumentsError, DtypeMismatchError
from ..function import Function
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor
from .decompositions import (
    _distinct_singular,
    _distinct_spectrum,
    _hermitian_samples,
    _matrix,
    _svd_np,
    _tolerance,
    _well_conditioned,
    eigh,
    inv,
    matrix_norm,
    svdvals,
)
from .linalg import transpose


def _op(name: str) -> Any:
    return OPS[name].fn


@register(
    samples=lambda rng: [
        *_hermitian_samples(rng, _distinct_spectrum),
        sample(_distinct_spectrum(rng, 3, 3), "U", note="upper", gradcheck=False),
    ],
    torch="linalg.eigvalsh",
    method=False,
    work=estimates.cubic(40),
)
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of symmetric matrices, read from one triangle."""
    return eigh(_matrix(A, "linalg.eigvalsh"), UPLO).eigenvalues  # type: ignore[no-any-return]


# -- matrix_rank -------------------------------------------------------------------------------


def _rank_samples(rng: np.random.Generator) -> list[Any]:
    low = S.rand(rng, 4, 2) @ S.rand(rng, 2, 4)
    return [
        sample(Const(_distinct_singular(rng, 3, 3)), note="full rank"),
        sample(Const(low), note="rank 2"),
        sample(Const(_distinct_singular(rng, 2, 3, 4)), atol=1.0, note="atol"),
        sample(Const(_distinct_singular(rng, 3, 3)), rtol=0.5, note="rtol"),
        sample(Const(low @ low.T), hermitian=True, note="hermitian"),
        sample(Const(np.zeros((2, 0, 0))), note="empty"),
    ]


@register(
    samples=_rank_samples,
    torch="linalg.matrix_rank",
    method=False,
    differentiable=False,
    work=estimates.cubic(30),
)
def matrix_rank(
    A: Tensor,
    tol: Any = None,
    hermitian: bool = False,
    *,
    atol: Any = None,
    rtol: Any = None,
) -> Tensor:
    """The number of singular values above ``max(atol, rtol * largest)`` (``rtol``
    defaults to ``eps * max(m, n)`` with no ``atol``, else to 0; ``tol`` is ``atol``)."""
    a = _matrix(A, "linalg.matrix_rank", square=False)
    if tol is not None:
        if atol is not None or rtol is not None:
            raise BadArgumentsError("linalg.matrix_rank: tol and atol/rtol are mutually exclusive")
        atol, rtol = tol, 0.0
    x = a._data
    m, n = x.shape[-2:]
    if x.size == 0:
        return Tensor._make(np.zeros(x.shape[:-2], np.int64))
    if hermitian:
        s = np.abs(np.linalg.eigvalsh(x))
    else:
        s = _svd_np(x, compute_uv=False)
    if rtol is None:
        zero = atol is None or not np.any(atol._data if isinstance(atol, Tensor) else atol)
        rtol = np.finfo(x.dtype).eps * max(m, n) if zero else 0.0
    batch = x.shape[:-2]
    tol_ = np.maximum(
        _tolerance(0.0 if atol is None else atol, batch),
        _tolerance(rtol, batch) * s.max(-1, keepdims=True),
    )
    return Tensor._make((s > tol_).sum(-1).astype(np.int64))


# -- cond --------------------------------------------------------------------------------------


def _cond_samples(rng: np.random.Generator) -> list[Any]:
    out = [
        sample(_distinct_singular(rng, 3, 3), note="2-norm"),
        sample(_distinct_singular(rng, 2, 3, 3), -2, note="-2"),
        sample(_distinct_singular(rng, 2, 4), note="rectangular"),
    ]
    out.append(sample(_well_conditioned(rng, 3, 3), "nuc", note="nuc"))
    # PyTorch's own backward fails for 'fro', 1 and inf (it writes the inverse in place
    # after the norm saved it): compared as values; the same composite's gradient is
    # checked by the 'nuc' sample
    for p in ("fro", 1, -1, math.inf, -math.inf):
        out.append(sample(Const(_well_conditioned(rng, 3, 3)), p, note=f"{p}"))
    out.append(sample(Const(np.array([[1.0, 2.0], [2.0, 4.0]])), "fro", note="singular: inf"))
    out.append(sample(Const(np.array([[1.0, 2.0], [2.0, 4.0]])), 1, note="singular, 1: inf"))
    return out


@register(samples=_cond_samples, torch="linalg.cond", method=False, work=estimates.cubic(30))
def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number ``norm(A) * norm(inv(A))`` in ``p`` (the 2-norm ratio of the
    extreme singular values by default; inf for a singular matrix)."""
    two = p is None or (not isinstance(p, str) and abs(p) == 2)
    a = _matrix(A, "linalg.cond", square=not two)
    x = a._data
    if two:
        if x.size == 0:
            return Tensor._make(np.zeros(x.shape[:-2], x.dtype))
        s = svdvals(a)
        top, bottom = _op("narrow")(s, -1, 0, 1), _op("narrow")(s, -1, -1, 1)
        ratio = bottom / top if p == -2 else top / bottom
        return _op("squeeze")(ratio, -1)  # type: ignore[no-any-return]
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise BadArgumentsError(f"linalg.cond got an invalid norm type: {p}")
    if x.size == 0:
        return Tensor._make(np.zeros(x.shape[:-2], x.dtype))
    flat = x.reshape((-1,) + x.shape[-2:])
    singular = np.array(
        [np.linalg.matrix_rank(m) < m.shape[-1] for m in interrupt.checked(flat)]
    ).reshape(x.shape[:-2] + (1, 1))
    if singular.any():  # PyTorch fills the inverse of a singular matrix with inf
        eye = np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape)
        safe = _op("where")(Tensor._make(singular), Tensor._make(eye), a)
        inverse = _op("where")(Tensor._make(singular), math.inf, inv(safe))
    else:
        inverse = inv(a)
    out = matrix_norm(a, p) * matrix_norm(inverse, p)
    if p == "nuc":  # PyTorch records no nan_to_num for it
        return out
    return _op("nan_to_num")(out, math.inf, math.inf, -math.inf)  # type: ignore[no-any-return]


# -- matrix_exp --------------------------------------------------------------------------------


class LinalgMatrixExpBackward0(Function):
    """``exp(A)``; the gradient is the upper-right block of ``exp([[A^T, G], [0, A^T]])``."""

    name = "LinalgMatrixExpBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        x = a._data
        if x.size == 0:
            return x.copy()
        return np.asarray(expm(x), x.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        n = a._data.shape[-1]
        at = transpose(a, -2, -1)
        zero = Tensor._make(np.zeros(a._data.shape, g._data.dtype))
        top = _op("cat")([at, g], -1)
        bottom = _op("cat")([zero, at], -1)
        big = matrix_exp(_op("cat")([top, bottom], -2))
        return _op("narrow")(_op("narrow")(big, -2, 0, n), -1, n, n)  # type: ignore[no-any-return]


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 3), note="3x3"),
        sample(S.rand(rng, 2, 2, 2), note="batched"),
        sample(S.rand(rng, 1, 1), note="1x1"),
    ],
    method=True,
    work=estimates.cubic(25),
)
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of each square matrix."""
    return LinalgMatrixExpBackward0.apply(_matrix(A, "linalg.matrix_exp"))


# -- vander ------------------------------------------------------------------------------------


def _vander_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The powers of each element: ``x.numel() * N``."""
    x = args[0] if args else kwargs.get("x")
    n = kwargs.get("N", args[1] if len(args) > 1 else None)
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    count = math.prod(shape) or 1
    return count * (int(n) if isinstance(n, int) else (shape[-1] if shape else 1))


@register(
    "linalg_vander",
    samples=lambda rng: [
        sample(S.rand(rng, 4), note="square"),
        sample(S.rand(rng, 2, 3), N=5, note="batched, N"),
        sample(np.array([0.0, 1.5, -2.0]), N=3, note="a zero"),
    ],
    torch="linalg.vander",
    method=False,
    estimate=_vander_estimate,
)
def linalg_vander(x: Tensor, *, N: Any = None) -> Tensor:
    """The Vandermonde matrix ``[1, x, x^2, ..., x^(N-1)]`` of each vector (``N`` = its
    length by default), increasing powers as in ``torch.linalg.vander``."""
    t = as_tensor(x)
    dt = t._data.dtype
    if not (dtypes.is_floating(dt) or dt.kind in "iu") or dt == np.bool_:
        raise DtypeMismatchError(
            "linalg.vander supports floating point, complex, and integer tensors, but got "
            + dtypes.torch_name(dt).capitalize()
        )
    if t.ndim == 0:
        t = _op("unsqueeze")(t, -1)
    shape = t._data.shape
    n = shape[-1] if N is None else int(N)
    if n <= 1:
        raise BadArgumentsError("N must be greater than 1.")
    powers = _op("cumprod")(_op("expand")(_op("unsqueeze")(t, -1), *shape, n - 1), -1)
    ones = Tensor._make(np.ones(shape + (1,), powers._data.dtype))
    return _op("cat")([ones, powers], -1)  # type: ignore[no-any-return]
