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
from ._util import as_tensor, broadcast_shape, normalize_dim
from .arithmetic import where
from .linalg import matmul, transpose
from .random_ops import _dropout_p, _generator
from .rearrange import repeat_interleave
from .reduction import softmax


def _attention_body(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    noise: Tensor | None,
    *,
    scale: float,
    causal: bool,
    gqa: bool,
) -> Tensor:
    if gqa:  # PyTorch's pre_process_group_query_attention_input
        k = repeat_interleave(k, q.shape[-3] // k.shape[-3], -3)
        v = repeat_interleave(v, q.shape[-3] // v.shape[-3], -3)
    s = matmul(q, transpose(k, -2, -1)) * scale
    allowed: np.ndarray | None = None
    if causal:
        allowed = np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool))
    elif mask is not None and mask.dtype == np.dtype(bool):
        allowed = mask._data
    elif mask is not None:
        s = s + mask
    if allowed is not None:
        keep = Tensor._make(np.broadcast_to(allowed, s.shape))
        s = where(keep, s, float("-inf"))
    # safe softmax: a row whose every score is -inf (masked out) attends to nothing
    # (zeros, not NaN); a NaN score still spoils its row, as in PyTorch
    dead = (s._data == -np.inf).all(axis=-1, keepdims=True) & (s._data.shape[-1] > 0)
    if dead.any():
        live = Tensor._make(np.broadcast_to(~dead, s.shape))
        s = where(live, s, 0.0)
        attn = where(live, softmax(s, -1), 0.0)
    else:
        attn = softmax(s, -1)
    if noise is not None:  # the math path's dropout: a mask drawn before the node
        attn = attn * noise
    return matmul(attn, v)


def _node_name(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout: bool, gqa: bool
) -> str:
    if q.ndim == 2 and k.ndim == 2 and v.ndim == 2:
        return "MmBackward0"
    flash = (
        q.ndim == k.ndim == v.ndim == 4
        and q.shape[-1] == k.shape[-1] == v.shape[-1]
        and q.shape[0] == k.shape[0] == v.shape[0]
        and k.shape[1] == v.shape[1]
        and (gqa or q.shape[1] == k.shape[1])
        and (mask is None or not mask.requires_grad)
        and not dropout
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
    complex_inputs="\"softmax_lastdim_kernel_impl\" not implemented for '{type}'",
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
    *,
    generator: Any = None,
    seed: int | None = None,
) -> Tensor:
    """``softmax(q @ k.T * scale + mask) @ v``; a bool mask keeps where True, ``is_causal``
    keeps the lower triangle; ``dropout_p`` draws PyTorch's mask (``generator``/``seed`` as
    ``dropout``'s: the default generator unless given);
    ``enable_gqa`` repeats key/value heads (dim -3) to the query's."""
    q, k, v = as_tensor(query), as_tensor(key), as_tensor(value)
    mask = None if attn_mask is None else as_tensor(attn_mask)
    p = _dropout_p(dropout_p)
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
    gqa = bool(enable_gqa) and _gqa_heads(q, k, v)
    heads = q.shape[:-3] + q.shape[-3:-2] if gqa else q.shape[:-2]
    batch = broadcast_shape(heads, k.shape[:-3] if gqa else k.shape[:-2])
    broadcast_shape(batch, v.shape[:-3] if gqa else v.shape[:-2])
    if mask is not None:
        if mask.dtype != np.dtype(bool) and mask.dtype != q.dtype:
            raise DtypeMismatchError(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                f"attn_mask.dtype: {dtypes.torch_name(mask.dtype)} and query.dtype: "
                f"{dtypes.torch_name(q.dtype)} instead."
            )
        broadcast_shape(mask.shape, q.shape[:-1] + (k.shape[-2],))
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    noise = None
    if p > 0:
        shape = batch + (q.shape[-2], k.shape[-2])
        full = broadcast_shape(shape, mask.shape) if mask is not None else shape
        noise = _dropout_noise(full, p, q, _generator(seed, generator))
    return composite(
        _node_name(q, k, v, mask, noise is not None, gqa),
        _attention_body,
        q,
        k,
        v,
        mask,
        noise,
        scale=s,
        causal=bool(is_causal),
        gqa=gqa,
    )


def _gqa_heads(q: Tensor, k: Tensor, v: Tensor) -> bool:
    """Whether ``enable_gqa`` repeats key and value heads (dim -3) up to the query's;
    PyTorch's check and its error where they do not divide."""
    for t in (q, k, v):
        normalize_dim(-3, t.ndim)
    hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
    if hq == hk == hv:
        return False
    if not (hk and hv and hq % hk == 0 and hq % hv == 0):
        raise BadArgumentsError(
            "Number of heads in key and value must divide the number of heads in "
        )
    return True


def _dropout_noise(shape: tuple[int, ...], p: float, q: Tensor, gen: Any) -> Tensor:
    """PyTorch's math path ``dropout(attn, p)``: ``bernoulli_(1 - p) / (1 - p)`` drawn
    from the default generator over the attention matrix (zeros for ``p = 1``)."""
    dt = q.dtype
    if p == 1:
        return Tensor._make(np.zeros(shape, dt))
    noise = gen.bernoulli(1.0 - p, shape, dt)
    return Tensor._make((noise / dt.type(1.0 - p)).astype(dt))
