"""Householder reflectors, as LAPACK stores them: ``geqrf`` (the packed QR factors,
LAPACK's own), ``linalg.householder_product`` (LAPACK's orgqr: the first columns of
``Q = H_0 ... H_{k-1}``) and ``ormqr`` (``Q`` or its transpose times a matrix, from
either side), with ``H_i = I - tau_i v_i v_i^T`` and ``v_i`` column ``i`` below the
diagonal, a one on it.

The products are composites of matmuls over the reflectors, one at a time (never
forming ``Q`` where only its action is asked), so their gradients of every order
follow from the same lines.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.linalg import lapack

from .. import dtypes, estimates, interrupt
from ..binding import Binding
from ..errors import BadArgumentsError, DtypeMismatchError
from ..estimates import copies_of
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor
from .linalg import matmul, transpose
from .reduction import sum as sum_
from .shape import unsqueeze


def _reflectors(x: Tensor, k: int) -> Tensor:
    """The k reflector vectors as columns: x's strict lower part, ones on the diagonal."""
    m = x.shape[-2]
    lower = np.tril(np.ones((m, k), x._data.dtype), -1)
    return x[..., :, :k] * Tensor._make(lower) + Tensor._make(np.eye(m, k, dtype=x._data.dtype))


def _apply(v: Tensor, tau: Tensor, y: Tensor, order: range, left: bool) -> Tensor:
    """``y`` times the reflectors in ``order``: ``H y`` from the left, ``y H`` from the right."""
    for i in order:
        vi = v[..., :, i : i + 1]
        ti = unsqueeze(tau[..., i : i + 1], -1)
        if left:
            y = y - matmul(vi, ti * matmul(transpose(vi, -1, -2), y))
        else:
            y = y - matmul(ti * matmul(y, vi), transpose(vi, -1, -2))
    return y


def _tied(y: Tensor, x: Tensor, tau: Tensor) -> Tensor:
    """``y`` times an exact one made of the inputs' empty parts. With no reflectors
    (k = 0) the result is the identity's or ``other``'s, yet PyTorch's backward formula
    still reads the inputs: the gradient exists and, under create_graph, is a function
    of them, as here."""
    s = sum_(x[..., :0, :0]) + sum_(tau[..., :0])
    return y * (s * s + 1.0)


def _householder_body(x: Tensor, tau: Tensor) -> Tensor:
    m, n = x.shape[-2:]
    k = tau.shape[-1]
    eye = Tensor._make(np.broadcast_to(np.eye(m, n, dtype=x._data.dtype), x.shape).copy())
    if not k or not eye._data.size:
        return _tied(eye, x, tau)
    return _apply(_reflectors(x, k), tau, eye, range(k - 1, -1, -1), left=True)


def _ormqr_body(x: Tensor, tau: Tensor, c: Tensor, *, left: bool, transpose: bool) -> Tensor:
    k = tau.shape[-1]
    forward = range(k)
    backward = range(k - 1, -1, -1)
    # Q = H_0 ... H_{k-1}: Q c applies H_{k-1} first; c Q applies H_0 first
    order = (forward if transpose else backward) if left else (backward if transpose else forward)
    if not k or not c._data.size:
        return _tied(c, x, tau)
    return _apply(_reflectors(x, k), tau, c, order, left)


def _check_dtypes(op: str, x: Tensor, *others: tuple[str, Tensor]) -> None:
    if not dtypes.is_floating(x._data.dtype):
        raise DtypeMismatchError(f"\"{op}\" not implemented for '{dtypes.torch_name(x.dtype)}'")
    for what, t in others:
        if t.dtype != x.dtype:
            raise DtypeMismatchError(
                f"{op}: Expected input and {what} to have the same dtype, but input has dtype "
                f"{dtypes.torch_name(x.dtype)} and {what} has dtype {dtypes.torch_name(t.dtype)}"
            )


def _hp_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 4, 3), r(rng, 3), note="tall"),
        sample(r(rng, 2, 3, 3), r(rng, 2, 2), note="batched, fewer reflectors"),
    ]


@register(
    "linalg_householder_product",
    samples=_hp_samples,
    method=False,
    torch="linalg.householder_product",
    estimate=copies_of(4, "input"),
    binding=Binding(tensors=("input", "tau")),
    work=estimates.cubic(4),
)
def householder_product(input: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of ``H_0 ... H_{k-1}`` for reflectors stored as ``geqrf``
    leaves them (LAPACK's orgqr)."""
    x, t = as_tensor(input), as_tensor(tau)
    op = "torch.linalg.householder_product"
    if x.ndim < 2:
        raise BadArgumentsError(f"{op}: input must have at least 2 dimensions.")
    if x.shape[-2] < x.shape[-1]:
        raise BadArgumentsError(
            f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if x.shape[-1] < (t.shape[-1] if t.ndim else 1):
        raise BadArgumentsError(
            f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        )
    if x.ndim - t.ndim != 1:
        raise BadArgumentsError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {t.ndim} and input.ndim is equal to {x.ndim}"
        )
    if t.shape[:-1] != x.shape[:-2]:
        raise BadArgumentsError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(t.shape[:-1])}"
        )
    _check_dtypes(op, x, ("tau", t))
    return composite("LinalgHouseholderProductBackward0", _householder_body, x, t)


def _ormqr_samples(rng: np.random.Generator) -> list[Any]:
    a = rng.uniform(-1, 1, (4, 3))
    qr, tau = lapack.dgeqrf(a)[:2]
    r = S.rand
    return [
        sample(qr, tau, r(rng, 4, 2), note="left"),
        sample(qr, tau, r(rng, 2, 4), left=False, transpose=True, note="right, transposed"),
    ]


def _ormqr_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The result and a few working matrices of ``other``'s and the input's size."""
    sizes = [math.prod(a.shape) for a in (*args, *kwargs.values()) if hasattr(a, "shape")]
    return 4 * sum(sizes) + 64 if sizes else None


@register(
    samples=_ormqr_samples,
    torch="ormqr",
    estimate=_ormqr_estimate,
    binding=Binding(tensors=("input", "input2", "input3")),
    work=estimates.cubic(4),
)
def ormqr(
    input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False
) -> Tensor:
    """``Q @ other`` (``Q.mT`` with ``transpose``; ``other @ Q`` when not ``left``) for the
    ``Q`` of reflectors stored as ``geqrf`` leaves them (LAPACK's ormqr)."""
    x, t, c = as_tensor(input), as_tensor(input2), as_tensor(input3)
    op = "torch.ormqr"
    if x.ndim < 2:
        raise BadArgumentsError(f"{op}: input must have at least 2 dimensions.")
    if c.ndim < 2:
        raise BadArgumentsError(f"{op}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if t.ndim != x.ndim - 1:
        raise BadArgumentsError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {t.ndim} and input.ndim is equal to {x.ndim}"
        )
    if t.shape[-1] != min(c.shape[side], x.shape[-1]):
        raise BadArgumentsError(
            f"{op}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])"
        )
    if c.shape[side] != x.shape[-2]:
        raise BadArgumentsError(f"{op}: other.shape[{side}] must be equal to input.shape[-2]")
    if t.shape[:-1] != x.shape[:-2]:
        raise BadArgumentsError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(t.shape[:-1])}"
        )
    if c.shape[:-2] != x.shape[:-2]:
        raise BadArgumentsError(
            f"{op}: Expected batch dimensions of other to be equal to input.shape[:-2], but "
            f"got {list(c.shape[:-2])}"
        )
    _check_dtypes(op, x, ("tau", t), ("other", c))
    return composite(
        "OrmqrBackward0", _ormqr_body, x, t, c, left=bool(left), transpose=bool(transpose)
    )


# -- geqrf --------------------------------------------------------------------------------------


def _geqrf_one(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, n = a.shape
    if not m or not n:
        return a.copy(), np.zeros(min(m, n), a.dtype)
    fn = lapack.dgeqrf if a.dtype == np.float64 else lapack.sgeqrf
    qr, tau, _, _ = fn(a)
    return qr, tau


@register(
    samples=lambda rng: [sample(Const(S.rand(rng, 4, 3))), sample(Const(S.rand(rng, 2, 2, 3)))],
    differentiable=False,
    results=2,
    estimate=copies_of(3, "input"),
    binding=Binding(tensors=("input",)),
    work=estimates.cubic(25),
)
def geqrf(input: Tensor) -> Any:
    """(a, tau): LAPACK's packed QR, R on and above the diagonal, the Householder
    reflectors below it and their scales in ``tau`` (not differentiable, as in PyTorch)."""
    x = as_tensor(input)
    if x.ndim < 2:
        raise BadArgumentsError("torch.geqrf: input must have at least 2 dimensions.")
    if not dtypes.is_floating(x._data.dtype):
        raise DtypeMismatchError(
            f"\"geqrf_cpu\" not implemented for '{dtypes.torch_name(x.dtype)}'"
        )
    m, n = x.shape[-2:]
    flat = x._data.reshape(math.prod(x.shape[:-2]), m, n)
    a = np.empty(flat.shape, x._data.dtype)
    tau = np.empty((flat.shape[0], min(m, n)), x._data.dtype)
    for b in interrupt.checked(range(flat.shape[0])):
        a[b], tau[b] = _geqrf_one(flat[b])
    return Tensor._make(a.reshape(x.shape)), Tensor._make(tau.reshape(*x.shape[:-2], min(m, n)))
