"""``multi_head_attention_forward``: PyTorch writes it in Python over linear, bmm,
softmax and dropout; so does this, over the engine's ops (its nodes, gradients and
double backward are theirs, and dropout draws from the same stream as PyTorch's)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ShapeMismatchError
from ..registry import OPS, register, sample
from ..tensor import Tensor
from ._composite import ArgumentAssertionError
from ._util import as_tensor


def _op(name: str) -> Any:
    return OPS[name].fn


def _float_mask(mask: Tensor | None, dtype: np.dtype) -> Tensor | None:
    """PyTorch's ``_canonical_mask``: a bool mask becomes ``-inf`` where true."""
    if mask is None or mask.dtype.kind == "f":
        return mask
    return Tensor._make(np.where(mask._data.astype(bool), -np.inf, 0.0).astype(dtype))


def _samples(rng: np.random.Generator) -> list[Any]:
    e, n, b = 4, 3, 2

    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape)

    q, k = r(n, b, e), r(n, b, e)
    return [
        sample(
            q, k, k, e, 2, r(3 * e, e), r(3 * e), None, None, False, 0.0, r(e, e), r(e),
            note="self-shaped, no dropout",
        ),
        sample(
            r(n, e), r(n, e), r(n, e), e, 1, r(3 * e, e), r(3 * e), None, None, False, 0.0,
            r(e, e), r(e), attn_mask=r(n, n), note="unbatched, float mask",
        ),
    ]  # fmt: skip


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    q = args[0] if args else kwargs.get("query")
    k = args[1] if len(args) > 1 else kwargs.get("key")
    qs, ks = getattr(q, "shape", None), getattr(k, "shape", None)
    if qs is None or ks is None or len(qs) < 2 or len(ks) < 1:
        return None
    return 12 * math.prod(qs) + 6 * math.prod(ks) + 4 * math.prod(qs[:-1]) * ks[0]


@register(
    samples=_samples,
    method=False,
    torch="nn.functional.multi_head_attention_forward",
    results=2,
    estimate=_estimate,
    numpy_names=False,
)
def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> Any:
    """Multi-head attention as ``nn.MultiheadAttention`` computes it: the output and
    (with ``need_weights``) the attention weights."""
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    batched = query.ndim == 3
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ArgumentAssertionError(
            "query should be unbatched 2D or batched 3D tensor but received "
            f"{query.ndim}-D query tensor"
        )
    if not batched:
        query, key, value = (_op("unsqueeze")(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = _op("unsqueeze")(as_tensor(key_padding_mask), 0)
    tgt_len, bsz, embed_dim = query.shape
    dt = query.dtype
    kpm = _float_mask(None if key_padding_mask is None else as_tensor(key_padding_mask), dt)
    if is_causal and attn_mask is None:
        raise ShapeMismatchError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    mask = _float_mask(None if attn_mask is None else as_tensor(attn_mask), dt)
    if embed_dim != embed_dim_to_check:
        raise ArgumentAssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise ArgumentAssertionError(
            f"embed_dim {embed_dim} not divisible by num_heads {num_heads}"
        )
    linear = _op("linear")
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise ArgumentAssertionError(
                "use_separate_proj_weight is False but in_proj_weight is None"
            )
        w_q, w_k, w_v = _op("chunk")(in_proj_weight, 3)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ArgumentAssertionError(
                "use_separate_proj_weight is True but a projection weight is None"
            )
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = _op("chunk")(in_proj_bias, 3)
    q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
    src_len = key.shape[0]
    if mask is not None:
        if mask.ndim == 2:
            if mask.shape != (tgt_len, src_len):
                raise ShapeMismatchError(
                    f"The shape of the 2D attn_mask is torch.Size({list(mask.shape)}), but "
                    f"should be {(tgt_len, src_len)}."
                )
            mask = _op("unsqueeze")(mask, 0)
        elif mask.ndim == 3:
            want = (bsz * num_heads, tgt_len, src_len)
            if mask.shape != want:
                raise ShapeMismatchError(
                    f"The shape of the 3D attn_mask is torch.Size({list(mask.shape)}), but "
                    f"should be {want}."
                )
        else:
            raise ShapeMismatchError(f"attn_mask's dimension {mask.ndim} is not supported")
    pad = _op("pad")
    if bias_k is not None and bias_v is not None:
        k = _op("cat")([k, _op("repeat")(bias_k, 1, bsz, 1)])
        v = _op("cat")([v, _op("repeat")(bias_v, 1, bsz, 1)])
        if mask is not None:
            mask = pad(mask, (0, 1))
        if kpm is not None:
            kpm = pad(kpm, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise ArgumentAssertionError("bias_k and bias_v must both be set or both be None")
    bh = bsz * num_heads

    def heads(t: Tensor) -> Tensor:
        return _op("transpose")(_op("reshape")(t, (t.shape[0], bh, head_dim)), 0, 1)

    q = heads(q)
    k = heads(k) if static_k is None else as_tensor(static_k)
    v = heads(v) if static_v is None else as_tensor(static_v)
    if add_zero_attn:
        zeros = Tensor._make(np.zeros((bh, 1, head_dim), dtype=dt))
        k = _op("cat")([k, zeros], 1)
        v = _op("cat")([v, zeros], 1)
        if mask is not None:
            mask = pad(mask, (0, 1))
        if kpm is not None:
            kpm = pad(kpm, (0, 1))
    src_len = k.shape[1]
    if kpm is not None:
        kpm = _op("reshape")(
            _op("expand")(_op("reshape")(kpm, (bsz, 1, 1, src_len)), -1, num_heads, -1, -1),
            (bh, 1, src_len),
        )
        mask = kpm if mask is None else mask + kpm
    if not training:
        dropout_p = 0.0
    q_scaled = q * math.sqrt(1.0 / float(head_dim))
    kt = _op("transpose")(k, -2, -1)
    if mask is not None:
        weights = _op("baddbmm")(mask, q_scaled, kt)
    else:
        weights = _op("bmm")(q_scaled, kt)
    weights = _op("softmax")(weights, -1)
    if dropout_p > 0.0:
        weights = _op("dropout")(weights, dropout_p)
    out = _op("bmm")(weights, v)
    out = _op("reshape")(_op("transpose")(out, 0, 1), (tgt_len * bsz, embed_dim))
    out = linear(out, out_proj_weight, out_proj_bias)
    out = _op("reshape")(out, (tgt_len, bsz, out.shape[1]))
    if not need_weights:
        return (out if batched else _op("squeeze")(out, 1)), None
    weights = _op("reshape")(weights, (bsz, num_heads, tgt_len, src_len))
    if average_attn_weights:
        weights = _op("mean")(weights, 1)
    if not batched:
        out, weights = _op("squeeze")(out, 1), _op("squeeze")(weights, 0)
    return out, weights
