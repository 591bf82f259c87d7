"""``torch.linalg`` over the registered ops (the catalogue's linear-algebra ops already
have ``torch.linalg``'s meaning: ``qr`` is ``linalg.qr``; ``svd`` is the op
``linalg_svd``, as ``engine.svd`` is ``torch.svd``).
Where ``torch.linalg`` and ``torch`` differ in defaults (``cross``, ``diagonal``,
``norm``) the function here has ``torch.linalg``'s."""

from __future__ import annotations

from typing import Any

from .errors import BadArgumentsError
from .ops.decompositions import LinAlgError
from .registry import OPS
from .tensor import Tensor

_SAME = [
    "inv",
    "det",
    "slogdet",
    "solve",
    "cholesky",
    "qr",
    "eigh",
    "svdvals",
    "pinv",
    "vector_norm",
    "matrix_norm",
    "matmul",
    "multi_dot",
    "matrix_power",
    "vecdot",
    "eigvalsh",
    "inv_ex",
    "cholesky_ex",
    "solve_triangular",
    "lstsq",
    "solve_ex",
    "tensorinv",
    "tensorsolve",
    "matrix_rank",
    "cond",
    "matrix_exp",
    "lu_factor",
    "lu_factor_ex",
]
globals().update({name: OPS[name].fn for name in _SAME if name in OPS})
svd = OPS["linalg_svd"].fn  # (U, S, Vh), full_matrices=True: engine.svd is torch.svd
lu = OPS["linalg_lu"].fn  # (P, L, U): torch.lu is lu_factor
lu_solve = OPS["linalg_lu_solve"].fn  # (LU, pivots, B): torch.lu_solve takes B first
vander = OPS["linalg_vander"].fn  # increasing powers, N=: not torch.vander
householder_product = OPS["linalg_householder_product"].fn
ldl_factor = OPS["linalg_ldl_factor"].fn
ldl_factor_ex = OPS["linalg_ldl_factor_ex"].fn
ldl_solve = OPS["linalg_ldl_solve"].fn
eig = OPS["linalg_eig"].fn  # torch.eig is the removed (pre-1.9) function
eigvals = OPS["linalg_eigvals"].fn


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """``linalg.cross``: along ``dim`` (-1 by default, where ``torch.cross`` finds one)."""
    if out is not None:
        return OPS["cross"].fn(input, other, dim, out=out)
    return OPS["cross"].fn(input, other, dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``linalg.diagonal``: the diagonals of the last two dims by default."""
    return OPS["diagonal"].fn(A, offset, dim1, dim2)


def norm(
    A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """``linalg.norm``: a vector norm over one dim (or all, flattened, with no ``ord``),
    a matrix norm over two dims (or a matrix's with an ``ord``)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or dim is None and ord is not None and A.ndim == 2:
        return OPS["matrix_norm"].fn(
            A,
            "fro" if ord is None else ord,
            (-2, -1) if dim is None else dim,
            keepdim,
            dtype=dtype,
        )
    if dim is None and ord is not None and A.ndim != 1:
        raise BadArgumentsError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A.ndim}D."
        )
    return OPS["vector_norm"].fn(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


__all__ = [
    *(n for n in _SAME if n in OPS),
    "LinAlgError",
    "cross",
    "diagonal",
    "norm",
    "svd",
    "vander",
    "lu",
    "lu_solve",
    "householder_product",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "eig",
    "eigvals",
]
