"""Transformer-block benchmark for ``bench/engine.py``: one pre-norm block
(layer_norm, qkv linear, causal scaled_dot_product_attention over 4 heads, output
projection, residual, layer_norm, gelu MLP, residual), forward and backward of
its sum, batch 8 x 64 tokens x width 64, float32. The block is written once over
a namespace of ops; the engine and PyTorch run the same code and weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

BATCH, CONTEXT, WIDTH, HEADS, HIDDEN = 8, 64, 64, 4, 256
BLOCK_OPS = ("layer_norm", "linear", "scaled_dot_product_attention", "gelu", "chunk")


def block_weights() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    d, h = WIDTH, HIDDEN

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    x = rng.standard_normal((BATCH, CONTEXT, d)).astype(np.float32)
    return x, {
        "ln1_w": np.ones(d, np.float32),
        "ln1_b": np.zeros(d, np.float32),
        "qkv_w": normal(3 * d, d),
        "qkv_b": np.zeros(3 * d, np.float32),
        "proj_w": normal(d, d),
        "proj_b": np.zeros(d, np.float32),
        "ln2_w": np.ones(d, np.float32),
        "ln2_b": np.zeros(d, np.float32),
        "fc_w": normal(h, d),
        "fc_b": np.zeros(h, np.float32),
        "out_w": normal(d, h),
        "out_b": np.zeros(d, np.float32),
    }


def block(F: Any, x: Any, p: dict[str, Any]) -> Any:
    b, t, d, nh = BATCH, CONTEXT, WIDTH, HEADS
    h = F.layer_norm(x, [d], p["ln1_w"], p["ln1_b"])
    qkv = F.chunk(F.linear(h, p["qkv_w"], p["qkv_b"]), 3, -1)
    q, k, v = (F.transpose(F.reshape(z, (b, t, nh, d // nh)), 1, 2) for z in qkv)
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = F.add(x, F.linear(F.reshape(F.transpose(a, 1, 2), (b, t, d)), p["proj_w"], p["proj_b"]))
    h = F.layer_norm(x, [d], p["ln2_w"], p["ln2_b"])
    return F.add(x, F.linear(F.gelu(F.linear(h, p["fc_w"], p["fc_b"])), p["out_w"], p["out_b"]))


class _Ops:
    def __init__(self, lookup: Callable[[str], Any]) -> None:
        self._lookup = lookup

    def __getattr__(self, name: str) -> Any:
        return self._lookup(name)


def engine_block(E: Any) -> Callable[[], Any]:
    x0, w0 = block_weights()
    F = _Ops(lambda name: E.OPS[name].fn)
    x = E.tensor(x0, requires_grad=True)
    params = {k: E.tensor(w, requires_grad=True) for k, w in w0.items()}

    def step() -> Any:
        out = block(F, x, params).sum()
        out.backward()
        for t in (x, *params.values()):
            t.grad = None
        return out

    return step


def torch_block(torch: Any) -> Callable[[], Any]:
    x0, w0 = block_weights()
    nn = torch.nn.functional
    F = _Ops(lambda name: getattr(nn, name, None) or getattr(torch, name))
    x = torch.from_numpy(x0).requires_grad_()
    params = {k: torch.from_numpy(w).requires_grad_() for k, w in w0.items()}

    def step() -> Any:
        out = block(F, x, params).sum()
        out.backward()
        for t in (x, *params.values()):
            t.grad = None
        return out

    return step
