"""Per-sample gradients of the digits CNN (examples/digits_cnn.py) over one batch, as
DP-SGD needs them: ``vmap(grad(loss), in_dims=(None, 0, 0))`` gives every sample's
gradient of every parameter in one batched pass, and their norms are what DP-SGD
clips. Runs on the engine, or on PyTorch with ``--torch`` (the same numbers):

    python examples/per_sample_grads.py
    python examples/per_sample_grads.py --torch
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def digits_cnn() -> Any:
    """examples/digits_cnn.py as a module (its model, weights and data)."""
    spec = importlib.util.spec_from_file_location("digits_cnn", os.path.join(HERE, "digits_cnn.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def library(use_torch: bool) -> tuple[Any, Any, Any]:
    """(tensor constructor, functional namespace, func namespace) of one library."""
    if use_torch:
        import torch

        return torch.tensor, torch.nn.functional, torch.func
    import engine

    return engine.tensor, engine.nn.functional, engine.func


def per_sample_grads(
    use_torch: bool = False, batch: int = 64, seed: int = 0
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each sample's gradient of each parameter (``(batch, *shape)``) and each sample's
    gradient norm over all parameters."""
    cnn = digits_cnn()
    tensor, F, func = library(use_torch)
    images, labels = cnn.load_data()
    idx = next(cnn.batches(len(labels), batch, 1, seed))
    params = {k: tensor(v) for k, v in cnn.init_params(seed).items()}
    x, y = tensor(images[idx]), tensor(labels[idx])

    def loss(p: Any, xi: Any, yi: Any) -> Any:
        return cnn.forward(F, p, xi.unsqueeze(0), yi.unsqueeze(0))[1]

    grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    out = {k: np.asarray(g.detach().numpy()) for k, g in grads.items()}
    squares = sum((g.reshape(batch, -1).astype(np.float64) ** 2).sum(1) for g in out.values())
    return out, np.sqrt(squares)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", action="store_true", help="run on PyTorch instead")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--clip", type=float, default=1.0, help="DP-SGD's clipping norm")
    args = parser.parse_args(argv)
    grads, norms = per_sample_grads(args.torch, args.batch)
    print(f"{'torch' if args.torch else 'engine'}: per-sample gradients of {len(grads)} tensors")
    for k, g in grads.items():
        print(f"  {k}: {tuple(g.shape)}")
    print(f"norms: min {norms.min():.6f}  mean {norms.mean():.6f}  max {norms.max():.6f}")
    print(f"first 8: {' '.join(f'{n:.5f}' for n in norms[:8])}")
    print(f"clipped at {args.clip}: {(norms > args.clip).sum()} of {len(norms)} samples")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
