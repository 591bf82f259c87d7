"""Ops PyTorch itself writes as compositions of other ops (CompositeImplicitAutograd):
the same composition here, so values, gradients and ``grad_fn`` names follow from
the parts (``msort`` is a ``sort``, ``rms_norm`` ends in a ``mul``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError, DtypeMismatchError
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor


@register(
    samples=lambda rng: [sample(S.rand(rng, 4, 3)), sample(S.rand(rng, 5)), sample(S.rand(rng))]
)
def msort(input: Tensor) -> Tensor:
    """Sorted along dim 0 (``sort(input, dim=0).values``)."""
    return as_tensor(input).sort(dim=0).values


def _diagflat_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """n elements become an (n + |offset|)² matrix: the result outgrows the input."""
    shape = tuple(getattr(args[0], "shape", ())) if args else ()
    offset = args[1] if len(args) > 1 else kwargs.get("offset", 0)
    if not isinstance(offset, int):
        return None
    return (math.prod(shape) + abs(offset)) ** 2


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3)),
        sample(S.rand(rng, 2, 2), 1, note="a matrix, flattened, above the diagonal"),
        sample(S.rand(rng, 3), -2, note="below"),
    ],
    estimate=_diagflat_estimate,
)
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the flattened input on diagonal ``offset``."""
    a = as_tensor(input)
    return a.reshape(-1).diag_embed(offset)


@register(
    samples=lambda rng: [
        sample(Const(np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]))),
        sample(Const(np.array([True, False, True])), note="bool"),
        sample(Const(np.array(2.0)), note="0-d"),
    ],
    differentiable=False,
)
def argwhere(input: Tensor) -> Tensor:
    """The indices of the non-zero elements, one row each (``nonzero(input)``)."""
    return as_tensor(input).nonzero()


def _rms_norm_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), (4,)),
        sample(S.rand(rng, 2, 3, 4), [3, 4], S.rand(rng, 3, 4), note="weight"),
        sample(S.rand(rng, 2, 5), (5,), eps=0.1, note="eps"),
    ]


@register(samples=_rms_norm_samples, method=False)
def rms_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``input / sqrt(mean(input², last dims) + eps)`` (eps: the dtype's epsilon by
    default), times ``weight``."""
    a = as_tensor(input)
    shape = (
        (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    )
    n = len(shape)
    if not n:
        raise BadArgumentsError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []"
        )
    if a.ndim < n or tuple(a.shape[a.ndim - n :]) != shape:
        sizes = ", ".join(str(s) for s in a.shape)
        raise BadArgumentsError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*{', '.join(str(s) for s in shape)}], but got input of size[{sizes}]"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise BadArgumentsError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {list(shape)}"
        )
    if eps is None:
        eps = (
            float(np.finfo(a.dtype).eps) if dtypes.is_floating(a.dtype) else 1.1920928955078125e-07
        )
    dims = tuple(range(a.ndim - n, a.ndim))
    out = (
        a * (a.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
        if dims
        else a * (a.pow(2) + eps).rsqrt()
    )
    return out if weight is None else out * weight


def _vecdot_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), S.rand(rng, 4)),
        sample(S.rand(rng, 2, 3), S.rand(rng, 2, 3), dim=0, note="dim 0"),
    ]


@register(samples=_vecdot_samples, method=False, torch="linalg.vecdot")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``linalg.vecdot``: the dot product along ``dim``, broadcasting the rest."""
    a, b = as_tensor(x), as_tensor(y)
    if a.dtype != b.dtype:
        raise DtypeMismatchError(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{dtypes.type_name(a.dtype)} and y of type {dtypes.type_name(b.dtype)} instead"
        )
    return (a * b).sum(dim)


def _multi_dot_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample([S.rand(rng, 2, 3), S.rand(rng, 3, 4)]),
        sample(
            [S.rand(rng, 3), S.rand(rng, 3, 2), S.rand(rng, 2, 4), S.rand(rng, 4)], note="1-d ends"
        ),
        sample([S.rand(rng, 2, 3), S.rand(rng, 3, 3), S.rand(rng, 3)], note="1-d last"),
    ]


_DTYPE_WORDS = {"float32": "float", "float64": "double", "int64": "long", "int32": "int"}


@register(samples=_multi_dot_samples, method=False, torch="linalg.multi_dot")
def multi_dot(tensors: Any) -> Tensor:
    """``linalg.multi_dot``: the product of a chain of matrices (the first and last may be
    vectors), left to right."""
    ts = [as_tensor(t) for t in tensors]
    if len(ts) < 2:
        raise BadArgumentsError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        where = "the first tensor" if i == 0 else "the last tensor" if i == len(ts) - 1 else ""
        if where and t.ndim not in (1, 2):
            raise BadArgumentsError(f"multi_dot(): {where} must be 1D or 2D but got {t.ndim}D")
        if not where and t.ndim != 2:
            raise BadArgumentsError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        if t.dtype != ts[0].dtype:
            first, this = (
                _DTYPE_WORDS.get(np.dtype(d).name, str(d)) for d in (ts[0].dtype, t.dtype)
            )
            raise DtypeMismatchError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is {first} "
                f"and tensor {i} {this}"
            )
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = list(ts)
    if first_1d:
        mats[0] = mats[0].unsqueeze(0)
    if last_1d:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise BadArgumentsError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                f"{list(ts[i + 1].shape)} cannot be multiplied"
            )
    out = mats[0]
    for m in mats[1:]:
        out = out.mm(m)
    shape = tuple(out.shape)
    if first_1d:
        shape = shape[1:]
    if last_1d:
        shape = shape[:-1]
    return out.view(shape)  # PyTorch ends in a view whatever the ends (``ViewBackward0``)
