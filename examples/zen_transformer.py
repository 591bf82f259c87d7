"""A one-block causal transformer that learns the Zen of Python, character by character.

    python examples/zen_transformer.py --backend torch    # PyTorch, the reference
    python examples/zen_transformer.py --backend engine   # gradserve's numpy engine, in process
    python examples/zen_transformer.py --backend client --url http://127.0.0.1:8000
                                                          # the HTTP service (no --url: starts one)

The model is written once, against a namespace of ops (``F``): token and position
embeddings, layer_norm, two-head causal scaled_dot_product_attention, a gelu MLP,
a final layer_norm, a linear head and cross_entropy. Every backend starts from the
same numpy weights (seeded) and sees the same batches; Adam is written by hand in
numpy (float32) and writes the new weights back in place, so the three runs print
the same losses at every iteration, up to float32 rounding.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def zen_text() -> str:
    """The Zen of Python, decoded from ``this.s`` without printing it."""
    with contextlib.redirect_stdout(None):
        import this
    return codecs.decode(this.s, "rot13")


# -- the model, written once ------------------------------------------------------------------


class Config:
    context = 16
    batch = 8
    width = 32
    heads = 2
    hidden = 64


def init_weights(vocab: int, cfg: Config, seed: int) -> dict[str, np.ndarray]:
    """float32 weights from a seeded generator (the same for every backend)."""
    rng = np.random.default_rng(seed)
    d, h = cfg.width, cfg.hidden

    def normal(*shape: int, std: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, np.float32)

    def zeros(*shape: int) -> np.ndarray:
        return np.zeros(shape, np.float32)

    return {
        "tok": normal(vocab, d, std=0.1),
        "pos": normal(cfg.context, d, std=0.1),
        "ln1_w": ones(d),
        "ln1_b": zeros(d),
        "qkv_w": normal(3 * d, d, std=1 / math.sqrt(d)),
        "qkv_b": zeros(3 * d),
        "proj_w": normal(d, d, std=1 / math.sqrt(d)),
        "proj_b": zeros(d),
        "ln2_w": ones(d),
        "ln2_b": zeros(d),
        "fc_w": normal(h, d, std=1 / math.sqrt(d)),
        "fc_b": zeros(h),
        "out_w": normal(d, h, std=1 / math.sqrt(h)),
        "out_b": zeros(d),
        "lnf_w": ones(d),
        "lnf_b": zeros(d),
        "head_w": normal(vocab, d, std=1 / math.sqrt(d)),
    }


def forward(F: Any, p: dict[str, Any], idx: Any, targets: Any, cfg: Config, vocab: int) -> Any:
    """The mean next-character cross-entropy of a (batch, context) block of indices."""
    b, t, d, nh = cfg.batch, cfg.context, cfg.width, cfg.heads
    x = F.add(F.embedding(idx, p["tok"]), p["pos"])
    h = F.layer_norm(x, [d], p["ln1_w"], p["ln1_b"])
    qkv = F.chunk(F.linear(h, p["qkv_w"], p["qkv_b"]), 3, -1)  # 3 x (b, t, d)
    q, k, v = (F.transpose(F.reshape(z, (b, t, nh, d // nh)), 1, 2) for z in qkv)
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (b, nh, t, dh)
    a = F.reshape(F.transpose(a, 1, 2), (b, t, d))
    x = F.add(x, F.linear(a, p["proj_w"], p["proj_b"]))
    h = F.layer_norm(x, [d], p["ln2_w"], p["ln2_b"])
    x = F.add(x, F.linear(F.gelu(F.linear(h, p["fc_w"], p["fc_b"])), p["out_w"], p["out_b"]))
    x = F.layer_norm(x, [d], p["lnf_w"], p["lnf_b"])
    logits = F.linear(x, p["head_w"])
    return F.cross_entropy(F.reshape(logits, (b * t, vocab)), F.reshape(targets, (b * t,)))


class Adam:
    """Adam (Kingma and Ba), by hand in float32 numpy."""

    def __init__(self, weights: dict[str, np.ndarray], lr: float = 3e-3) -> None:
        self.lr, self.b1, self.b2, self.eps, self.t = np.float32(lr), 0.9, 0.999, 1e-8, 0
        self.m = {k: np.zeros_like(w) for k, w in weights.items()}
        self.v = {k: np.zeros_like(w) for k, w in weights.items()}

    def step(self, weights: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        c1 = np.float32(1 - self.b1**self.t)
        c2 = np.float32(1 - self.b2**self.t)
        for k, g in grads.items():
            self.m[k] = np.float32(self.b1) * self.m[k] + np.float32(1 - self.b1) * g
            self.v[k] = np.float32(self.b2) * self.v[k] + np.float32(1 - self.b2) * g * g
            update = self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + np.float32(self.eps))
            weights[k] = (weights[k] - update).astype(np.float32)


# -- backends: the same few verbs over torch, the engine and the HTTP client --------------


class TorchBackend:
    def __init__(self) -> None:
        from _extras import require

        torch = require("torch")
        torch.set_num_threads(1)
        self.torch = torch
        self.F = _Namespace(
            lambda name: getattr(torch.nn.functional, name, None) or getattr(torch, name)
        )

    def leaf(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(a.copy()).requires_grad_()

    def const(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(a.copy())

    def backward(self, loss: Any) -> None:
        loss.backward()

    def value(self, t: Any) -> np.ndarray:
        return t.detach().numpy().copy()

    def grad(self, t: Any) -> np.ndarray:
        return t.grad.numpy().copy()

    def assign(self, t: Any, a: np.ndarray) -> None:
        with self.torch.no_grad():
            t.copy_(self.torch.from_numpy(a))
        t.grad = None


class EngineBackend:
    def __init__(self) -> None:
        import engine

        self.engine = engine
        self.F = _Namespace(lambda name: engine.OPS[name].fn)

    def leaf(self, a: np.ndarray) -> Any:
        return self.engine.tensor(a.copy(), requires_grad=True)

    def const(self, a: np.ndarray) -> Any:
        return self.engine.tensor(a.copy())

    def backward(self, loss: Any) -> None:
        loss.backward()

    def value(self, t: Any) -> np.ndarray:
        return np.array(t.data)

    def grad(self, t: Any) -> np.ndarray:
        return np.array(t.grad.data)

    def assign(self, t: Any, a: np.ndarray) -> None:
        with self.engine.no_grad():
            t.copy_(a)
        t.grad = None


class ClientBackend:
    """The HTTP service through the Python client: every op is a step on the server."""

    def __init__(self, url: str) -> None:
        from client import Session

        self.session = Session(url)
        self.F = _Namespace(lambda name: getattr(self.session, name))

    def leaf(self, a: np.ndarray) -> Any:
        return self.session.tensor(a, requires_grad=True)

    def const(self, a: np.ndarray) -> Any:
        return self.session.tensor(a, dtype=str(a.dtype))

    def backward(self, loss: Any) -> None:
        loss.backward()

    def value(self, t: Any) -> np.ndarray:
        return np.array(t.numpy())

    def grad(self, t: Any) -> np.ndarray:
        return np.array(t.grad.numpy())

    def assign(self, t: Any, a: np.ndarray) -> None:
        t.data = a
        t.grad = None


class _Namespace:
    """``F.layer_norm(...)`` looked up by name in a backend."""

    def __init__(self, lookup: Callable[[str], Any]) -> None:
        self._lookup = lookup

    def __getattr__(self, name: str) -> Any:
        return self._lookup(name)


# -- training ----------------------------------------------------------------------------------


def batches(data: np.ndarray, cfg: Config, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed + 1)
    while True:
        starts = rng.integers(0, len(data) - cfg.context - 1, size=cfg.batch)
        x = np.stack([data[s : s + cfg.context] for s in starts]).astype(np.int64)
        y = np.stack([data[s + 1 : s + cfg.context + 1] for s in starts]).astype(np.int64)
        yield x, y


def train(backend: Any, steps: int, seed: int = 0, lr: float = 3e-3) -> list[float]:
    """Train for ``steps`` iterations; the loss of each (before its update)."""
    text = zen_text()
    chars = sorted(set(text))
    data = np.array([chars.index(c) for c in text])
    cfg = Config()
    weights = init_weights(len(chars), cfg, seed)
    params = {k: backend.leaf(w) for k, w in weights.items()}
    adam = Adam(weights, lr)
    losses = []
    for _, (x, y) in zip(range(steps), batches(data, cfg, seed)):
        loss = forward(backend.F, params, backend.const(x), backend.const(y), cfg, len(chars))
        backend.backward(loss)
        losses.append(float(backend.value(loss)))
        adam.step(weights, {k: backend.grad(t) for k, t in params.items()})
        for k, t in params.items():
            backend.assign(t, weights[k])
    return losses


def make_backend(name: str, url: str | None = None) -> Any:
    if name == "torch":
        return TorchBackend()
    if name == "engine":
        return EngineBackend()
    if name == "client":
        if url is None:
            raise ValueError("the client backend needs a server URL")
        return ClientBackend(url)
    raise ValueError(f"unknown backend {name!r}: torch, engine or client")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["torch", "engine", "client"], default="engine")
    parser.add_argument("--url", help="gradserve URL for --backend client (default: start one)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        url = args.url
        if args.backend == "client" and url is None:
            from client.local import LocalServer

            url = stack.enter_context(LocalServer(cwd=ROOT))
        backend = make_backend(args.backend, url)
        for i, loss in enumerate(train(backend, args.steps, args.seed, args.lr)):
            print(f"step {i:4d}  loss {loss:.6f}")


if __name__ == "__main__":
    main()
