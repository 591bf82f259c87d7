"""LDL^T of symmetric matrices, as LAPACK's sytrf/sytrs make and use it:
``linalg.ldl_factor_ex`` (LD packed in the lower triangle, LAPACK's 1-based Bunch-Kaufman
pivots, negative for a 2x2 block, and an info code), ``linalg.ldl_factor`` and
``linalg.ldl_solve``. Not differentiable (neither is PyTorch's).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.linalg import lapack

from .. import dtypes, estimates, interrupt
from ..binding import Binding
from ..complex_guard import not_in_engine
from ..errors import BadArgumentsError, DtypeMismatchError, ShapeMismatchError
from ..estimates import copies_of
from ..registry import Const, register, sample
from ..tensor import Tensor
from ._util import as_tensor
from .decompositions import LinAlgError


def _square(A: Any, op: str) -> Tensor:
    a = as_tensor(A)
    if a.ndim < 2:
        raise BadArgumentsError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise BadArgumentsError(
            f"{op}: A must be batches of square matrices, but they are {a.shape[-2]} by "
            f"{a.shape[-1]} matrices"
        )
    if a._data.dtype.kind == "c":
        raise not_in_engine(op, a._data.dtype)
    if not dtypes.is_floating(a._data.dtype):
        raise DtypeMismatchError(
            f"{op}: Expected a floating point or complex tensor as input. Got "
            f"{dtypes.torch_name(a.dtype).capitalize()}"
        )
    return a


def _symmetric_samples(rng: np.random.Generator) -> list[Any]:
    a = rng.standard_normal((2, 3, 3))
    spd = a @ a.transpose(0, 2, 1) + 3 * np.eye(3)
    indefinite = a[0] + a[0].T
    return [
        sample(Const(spd[0]), note="positive definite"),
        sample(Const(indefinite), hermitian=True, note="indefinite"),
        sample(Const(spd), note="batched"),
    ]


@register(
    "linalg_ldl_factor_ex",
    samples=_symmetric_samples,
    method=False,
    differentiable=False,
    results=3,
    torch="linalg.ldl_factor_ex",
    estimate=copies_of(3, "A"),
    binding=Binding(tensors=("A",)),
    work=estimates.cubic(4),
)
def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> Any:
    """(LD, pivots, info) of a symmetric ``A = P L D L^T P^T`` (its lower triangle is read)."""
    op = "torch.linalg.ldl_factor_ex"
    a = _square(A, op)
    n = a.shape[-1]
    batch = a.shape[:-2]
    flat = a._data.reshape(math.prod(batch), n, n)
    ld = np.zeros(flat.shape, a._data.dtype)
    piv = np.empty((flat.shape[0], n), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    fn = lapack.dsytrf if a._data.dtype == np.float64 else lapack.ssytrf
    for b in interrupt.checked(range(flat.shape[0] if n else 0)):
        out, ipiv, code = fn(flat[b], lower=1)
        ld[b], piv[b], info[b] = np.tril(out), ipiv, code
    if check_errors and info.any():
        raise LinAlgError(
            f"{op}: The factorization could not be completed because the input is not "
            f"invertible (error code: {int(info[np.flatnonzero(info)[0]])})."
        )
    return (
        Tensor._make(ld.reshape(a.shape)),
        Tensor._make(piv.reshape(*batch, n)),
        Tensor._make(info.reshape(batch)),
    )


@register(
    "linalg_ldl_factor",
    samples=_symmetric_samples,
    method=False,
    differentiable=False,
    results=2,
    torch="linalg.ldl_factor",
    estimate=copies_of(3, "A"),
    binding=Binding(tensors=("A",)),
    work=estimates.cubic(4),
)
def ldl_factor(A: Tensor, *, hermitian: bool = False) -> Any:
    """(LD, pivots) of a symmetric ``A``; a singular block is an error (``ldl_factor_ex``
    reports it instead)."""
    ld, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    bad = np.flatnonzero(info._data.reshape(-1))
    if bad.size:
        raise LinAlgError(
            "torch.linalg.ldl_factor: The factorization could not be completed because the "
            f"input is not invertible (error code: {int(info._data.reshape(-1)[bad[0]])})."
        )
    return ld, piv


def _solve_samples(rng: np.random.Generator) -> list[Any]:
    a = rng.standard_normal((3, 3))
    ld, piv, _ = lapack.dsytrf(a + a.T, lower=1)
    return [
        sample(Const(np.tril(ld)), Const(piv.astype(np.int32)), Const(rng.standard_normal((3, 2)))),
    ]


def _solve_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The broadcast of LD's and B's batches, times B's matrix and LD's copy."""
    ld: Any = args[0] if args else kwargs.get("LD")
    b: Any = args[2] if len(args) > 2 else kwargs.get("B")
    if not (hasattr(ld, "shape") and hasattr(b, "shape")) or len(ld.shape) < 2 or len(b.shape) < 2:
        return None
    try:
        batch = np.broadcast_shapes(tuple(ld.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        return None
    return math.prod(batch) * (math.prod(b.shape[-2:]) + math.prod(ld.shape[-2:])) * 2 + 64


@register(
    "linalg_ldl_solve",
    complex_inputs="linalg_ldl_solve is not implemented for '{type}' in this engine",
    samples=_solve_samples,
    method=False,
    differentiable=False,
    torch="linalg.ldl_solve",
    estimate=_solve_estimate,
    binding=Binding(tensors=("LD", "pivots", "B")),
    work=estimates.cubic(4),
)
def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """``X`` with ``A X = B`` from ``ldl_factor``'s (LD, pivots), batches broadcast."""
    op = "torch.linalg.ldl_solve"
    ld, piv, b = as_tensor(LD), as_tensor(pivots), as_tensor(B)
    if ld.ndim < 2:
        raise BadArgumentsError(f"{op}: The input tensor LD must have at least 2 dimensions.")
    if b.ndim < 2:
        raise BadArgumentsError(f"{op}: The input tensor B must have at least 2 dimensions.")
    n = ld.shape[-1]
    if ld.shape[-2] != n:
        raise BadArgumentsError(
            f"{op}: LD must be batches of square matrices, but they are {ld.shape[-2]} by "
            f"{n} matrices"
        )
    if piv._data.dtype != np.int32:
        raise DtypeMismatchError(
            f"{op}: Expected pivots to be integers. Got {dtypes.torch_name(piv.dtype)}"
        )
    if piv.shape != ld.shape[:-1]:
        raise ShapeMismatchError(
            f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots "
            f"with shape {list(piv.shape)} instead"
        )
    if b.shape[-2] != n:
        raise ShapeMismatchError(
            f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} but each b "
            f"matrix is {b.shape[-2]} by {b.shape[-1]}"
        )
    if b.dtype != ld.dtype:
        raise DtypeMismatchError(
            f"{op}: Expected LD and B to have the same dtype, but got LD with dtype "
            f"{dtypes.torch_name(ld.dtype)} and B with dtype {dtypes.torch_name(b.dtype)} instead"
        )
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    k = b.shape[-1]
    count = math.prod(batch)
    lds = np.broadcast_to(ld._data, (*batch, n, n)).reshape(count, n, n)
    pivs = np.broadcast_to(piv._data, (*batch, n)).reshape(count, n)
    bs = np.broadcast_to(b._data, (*batch, n, k)).reshape(count, n, k)
    out = np.empty(bs.shape, b._data.dtype)
    fn = lapack.dsytrs if b._data.dtype == np.float64 else lapack.ssytrs
    for i in interrupt.checked(range(bs.shape[0] if n and k else 0)):
        out[i] = fn(lds[i], pivs[i], bs[i], lower=1)[0]
    return Tensor._make(out.reshape(*batch, n, k))
