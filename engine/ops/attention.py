"""Scaled dot-product attention, as ``torch.nn.functional`` computes it.

One composite node: ``softmax(q @ k.T * scale + mask) @ v``. Its name is the
one PyTorch's CPU dispatch records: the fused flash kernel for 4-d inputs of
one head size without a mask that requires grad, ``MmBackward0`` for 2-d, and
the math path's ``UnsafeViewBackward0`` otherwise. A row whose every key is
masked out gives zeros (PyTorch's safe softmax), not NaN.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError, DtypeMismatchError, ShapeMismatchError
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor, broadcast_shape
from .arithmetic import where
from .linalg import matmul, transpose
from .reduction import softmax


def _attention_body(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, scale: float, causal: bool
) -> Tensor:
    s = matmul(q, transpose(k, -2, -1)) * scale
    allowed: np.ndarray | None = None
    if causal:
        allowed = np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool))
    elif mask is not None and mask.dtype == np.dtype(bool):
        allowed = mask.data
    elif mask is not None:
        s = s + mask
    if allowed is not None:
        keep = Tensor._make(np.broadcast_to(allowed, s.shape))
        s = where(keep, s, float("-inf"))
    # safe softmax: a row with no finite score attends to nothing (zeros, not NaN)
    dead = ~np.isfinite(s.data).any(axis=-1, keepdims=True) & (s.data.shape[-1] > 0)
    if dead.any():
        live = Tensor._make(np.broadcast_to(~dead, s.shape))
        s = where(live, s, 0.0)
        return matmul(where(live, softmax(s, -1), 0.0), v)
    return matmul(softmax(s, -1), v)


def _node_name(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> str:
    if q.ndim == 2 and k.ndim == 2 and v.ndim == 2:
        return "MmBackward0"
    flash = (
        q.ndim == k.ndim == v.ndim == 4
        and q.shape[-1] == k.shape[-1] == v.shape[-1]
        and q.shape[:2] == k.shape[:2] == v.shape[:2]
        and (mask is None or not mask.requires_grad)
    )
    return "ScaledDotProductFlashAttentionForCpuBackward0" if flash else "UnsafeViewBackward0"


def _sdpa_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    causal_free = np.array([[True, False, True], [False, False, False], [True, True, False]])
    return [
        sample(r(rng, 2, 3, 4), r(rng, 2, 5, 4), r(rng, 2, 5, 6), note="3-d, other lengths"),
        sample(r(rng, 1, 2, 3, 4), r(rng, 1, 2, 3, 4), r(rng, 1, 2, 3, 4), note="4-d (flash)"),
        sample(
            r(rng, 1, 2, 3, 4),
            r(rng, 1, 2, 3, 4),
            r(rng, 1, 2, 3, 4),
            is_causal=True,
            note="4-d causal",
        ),
        sample(r(rng, 2, 4, 3), r(rng, 2, 4, 3), r(rng, 2, 4, 3), is_causal=True, note="causal"),
        sample(
            r(rng, 2, 3, 4),
            r(rng, 2, 3, 4),
            r(rng, 2, 3, 4),
            attn_mask=Const(causal_free),
            note="bool mask, a fully masked row",
        ),
        sample(
            r(rng, 2, 3, 4),
            r(rng, 2, 3, 4),
            r(rng, 2, 3, 4),
            attn_mask=Const(r(rng, 3, 3)),
            note="float mask",
        ),
        sample(
            r(rng, 1, 2, 3, 4),
            r(rng, 1, 2, 3, 4),
            r(rng, 1, 2, 3, 4),
            attn_mask=r(rng, 3, 3),
            note="float mask that requires grad",
        ),
        sample(r(rng, 3, 4), r(rng, 3, 4), r(rng, 3, 2), scale=0.3, note="2-d, scale"),
        sample(r(rng, 2, 3, 4), r(rng, 1, 3, 4), r(rng, 1, 3, 4), note="batch broadcast"),
    ]


def _sdpa_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The larger of the attention matrix (batch x queries x keys) and the result."""
    q, k, v = (list(args) + [kwargs.get("query"), kwargs.get("key"), kwargs.get("value")])[:3]
    shapes = [tuple(getattr(t, "shape", ())) for t in (q, k, v)]
    if any(len(sh) < 2 for sh in shapes):
        return None
    try:
        batch = math.prod(np.broadcast_shapes(*(sh[:-2] for sh in shapes)))
    except ValueError:
        return None
    return batch * shapes[0][-2] * max(shapes[1][-2], shapes[2][-1])


@register(
    samples=_sdpa_samples,
    method=False,
    torch="nn.functional.scaled_dot_product_attention",
    estimate=_sdpa_estimate,
)
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(q @ k.T * scale + mask) @ v``; a bool mask keeps where True, ``is_causal``
    keeps the lower triangle. Only ``dropout_p=0``: dropout needs the session generator."""
    q, k, v = as_tensor(query), as_tensor(key), as_tensor(value)
    mask = None if attn_mask is None else as_tensor(attn_mask)
    if dropout_p != 0.0:
        raise BadArgumentsError(
            "scaled_dot_product_attention: dropout_p > 0 is not supported (attention dropout "
            "would need the session's generator); pass dropout_p=0.0"
        )
    if enable_gqa:
        raise BadArgumentsError("scaled_dot_product_attention: enable_gqa is not supported")
    if is_causal and mask is not None:
        raise BadArgumentsError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
        )
    for t in (q, k, v):
        if t.ndim < 2:
            raise ShapeMismatchError(
                "scaled_dot_product_attention: query, key and value need at least 2 dimensions"
            )
        if not dtypes.is_floating(t.dtype) or t.dtype != q.dtype:
            raise DtypeMismatchError(
                "Expected query, key, and value to have the same dtype, but got "
                f"query.dtype: {dtypes.torch_name(q.dtype)} key.dtype: "
                f"{dtypes.torch_name(k.dtype)}, and value.dtype: {dtypes.torch_name(v.dtype)} instead."
            )
    if q.shape[-1] != k.shape[-1]:
        raise ShapeMismatchError(
            f"scaled_dot_product_attention: query and key must have the same last dimension, "
            f"got {q.shape[-1]} and {k.shape[-1]}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ShapeMismatchError(
            f"scaled_dot_product_attention: key and value must have the same length, got "
            f"{k.shape[-2]} and {v.shape[-2]}"
        )
    broadcast_shape(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        if mask.dtype != np.dtype(bool) and mask.dtype != q.dtype:
            raise DtypeMismatchError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {dtypes.torch_name(mask.dtype)} and query.dtype: "
                f"{dtypes.torch_name(q.dtype)} instead."
            )
        broadcast_shape(mask.shape, q.shape[:-1] + (k.shape[-2],))
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return composite(
        _node_name(q, k, v, mask), _attention_body, q, k, v, mask, scale=s, causal=bool(is_causal)
    )
