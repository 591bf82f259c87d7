"""A small CNN on scikit-learn's digits (8x8 images, 10 classes), trained with plain
SGD, written once and run on PyTorch, on the engine, or on a gradserve server
through the Python client:

    python examples/digits_cnn.py --backend torch
    python examples/digits_cnn.py --backend engine
    python examples/digits_cnn.py --backend client --url http://127.0.0.1:8000
    python examples/digits_cnn.py --backend client     # starts a local server

conv2d(1→8, 3x3, padding 1) → relu → max_pool2d(2) → conv2d(8→16, 3x3, padding 1)
→ relu → max_pool2d(2) → flatten → linear(64→10) → cross_entropy. The initial
weights come from numpy with a fixed seed and the batches from the same seed, so
every backend sees the same numbers and prints the same losses (to float32
rounding) as PyTorch at every step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # run as a script from a checkout: engine/ and client/ import
    sys.path.insert(0, ROOT)

BACKENDS = ("torch", "engine", "client")


def load_data() -> tuple[np.ndarray, np.ndarray]:
    """Digits as float32 images ``(1797, 1, 8, 8)`` scaled to [0, 1], and int64 labels."""
    from _extras import require

    digits = require("sklearn.datasets").load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    return images, digits.target.astype(np.int64)


def init_params(seed: int) -> dict[str, np.ndarray]:
    """PyTorch's default init for conv and linear layers (uniform in ±1/sqrt(fan_in)),
    drawn with numpy so every backend starts from the same values."""
    rng = np.random.default_rng(seed)

    def uniform(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        bound = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    return {
        "w1": uniform((8, 1, 3, 3), 9),
        "b1": uniform((8,), 9),
        "w2": uniform((16, 8, 3, 3), 72),
        "b2": uniform((16,), 72),
        "w3": uniform((10, 64), 64),
        "b3": uniform((10,), 64),
    }


def batches(n: int, batch: int, steps: int, seed: int) -> Iterator[np.ndarray]:
    """Indices of each step's mini-batch: shuffled epochs, the same for every backend."""
    rng = np.random.default_rng(seed + 1)
    done = 0
    while True:
        order = rng.permutation(n)
        for start in range(0, n - batch + 1, batch):
            if done == steps:
                return
            yield order[start : start + batch]
            done += 1


def forward(F: Any, p: dict[str, Any], x: Any, y: Any) -> tuple[Any, Any]:
    """The network and its loss, in torch.nn.functional's vocabulary (F is
    torch.nn.functional, the engine module, or a client Session)."""
    h = F.max_pool2d(F.relu(F.conv2d(x, p["w1"], p["b1"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p["w2"], p["b2"], padding=1)), 2)
    logits = F.linear(h.flatten(1), p["w3"], p["b3"])
    return logits, F.cross_entropy(logits, y)


@dataclass
class Backend:
    """What the training loop needs from a library besides its functional ops."""

    F: Any  # conv2d, relu, max_pool2d, linear, cross_entropy
    tensor: Callable[..., Any]  # tensor(array, requires_grad=False)
    no_grad: Callable[[], Any]
    close: Callable[[], None]


def torch_backend() -> Backend:
    from _extras import require

    torch = require("torch")

    return Backend(
        F=torch.nn.functional,
        tensor=lambda a, requires_grad=False: torch.tensor(a, requires_grad=requires_grad),
        no_grad=torch.no_grad,
        close=lambda: None,
    )


def engine_backend() -> Backend:
    import engine

    return Backend(
        F=engine,
        tensor=lambda a, requires_grad=False: engine.tensor(a, requires_grad=requires_grad),
        no_grad=engine.no_grad,
        close=lambda: None,
    )


def client_backend(url: str | None) -> Backend:
    """A session on the server at ``url`` (or on a local server started here); steps are
    batched, so an iteration costs a few round trips."""
    from client import Session
    from client.local import LocalServer

    stack = contextlib.ExitStack()
    if url is None:
        path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
        url = stack.enter_context(LocalServer(cwd=ROOT, env={"PYTHONPATH": path}))
    s = Session(url, batch=True)
    stack.callback(s.close)
    stack.callback(s.delete)

    def tensor(a: np.ndarray, requires_grad: bool = False) -> Any:
        return s.tensor(a, requires_grad=requires_grad, dtype=str(a.dtype))

    return Backend(F=s, tensor=tensor, no_grad=s.no_grad, close=stack.close)


def make_backend(name: str, url: str | None = None) -> Backend:
    if name == "torch":
        return torch_backend()
    if name == "engine":
        return engine_backend()
    if name == "client":
        return client_backend(url)
    raise ValueError(f"backend is one of {', '.join(BACKENDS)}, not {name!r}")


def train(
    backend: str,
    *,
    steps: int = 100,
    batch: int = 64,
    lr: float = 0.5,
    seed: int = 0,
    url: str | None = None,
    log: Callable[[int, float], None] | None = None,
) -> tuple[list[float], float]:
    """Train from the seeded weights; the loss of every step and the final accuracy on
    the whole data set."""
    images, labels = load_data()
    be = make_backend(backend, url)
    try:
        params = {k: be.tensor(v, requires_grad=True) for k, v in init_params(seed).items()}
        losses = []
        for step, idx in enumerate(batches(len(labels), batch, steps, seed)):
            x, y = be.tensor(images[idx]), be.tensor(labels[idx])
            _, loss = forward(be.F, params, x, y)
            loss.backward()
            with be.no_grad():
                for p in params.values():
                    p -= lr * p.grad
            for p in params.values():
                p.grad.zero_()
            losses.append(float(loss.item()))
            if log is not None:
                log(step, losses[-1])
        with be.no_grad():
            logits, _ = forward(be.F, params, be.tensor(images), be.tensor(labels))
            predicted = np.asarray(logits.numpy()).argmax(axis=1)
        return losses, float((predicted == labels).mean())
    finally:
        be.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="engine")
    parser.add_argument("--url", help="gradserve server for --backend client (default: start one)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=25, help="print the loss every N steps")
    args = parser.parse_args(argv)

    def log(step: int, loss: float) -> None:
        if step % args.every == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss:.6f}", flush=True)

    _, accuracy = train(
        args.backend,
        steps=args.steps,
        batch=args.batch,
        lr=args.lr,
        seed=args.seed,
        url=args.url,
        log=log,
    )
    print(f"{args.backend}: training accuracy after {args.steps} steps: {accuracy:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
