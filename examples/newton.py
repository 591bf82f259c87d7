"""A Newton step on a small nonlinear least-squares problem with ``hessian``: fit
``y = a * exp(b * t) + c`` to noisy data. Newton's step solves ``H d = -g`` with the
exact Hessian (``func.hessian``) and gradient (``func.grad``) of the summed squared
residuals. Runs on the engine, or on PyTorch with ``--torch`` (the same numbers):

    python examples/newton.py
    python examples/newton.py --torch
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples ``t``, noisy targets ``y`` and a starting guess for ``(a, b, c)``."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, 20)
    y = 2.0 * np.exp(-1.5 * t) + 0.5 + 0.01 * rng.normal(size=t.shape)
    return t, y, np.array([1.8, -1.2, 0.4])


def newton(
    use_torch: bool = False, steps: int = 6, seed: int = 0
) -> list[tuple[float, np.ndarray]]:
    """(loss, parameters) after each Newton step, starting from the guess."""
    if use_torch:
        import torch as lib
    else:
        import engine as lib
    t_np, y_np, theta_np = problem(seed)
    t, y = lib.tensor(t_np), lib.tensor(y_np)

    def loss(theta: Any) -> Any:
        a, b, c = theta[0], theta[1], theta[2]
        return ((a * (b * t).exp() + c - y) ** 2).sum()

    theta = lib.tensor(theta_np)
    history = [(float(loss(theta).item()), theta_np.copy())]
    for _ in range(steps):
        g = lib.func.grad(loss)(theta)
        h = lib.func.hessian(loss)(theta)
        step = np.linalg.solve(h.detach().numpy(), -g.detach().numpy())
        theta = lib.tensor(theta.detach().numpy() + step)
        history.append((float(loss(theta).item()), theta.detach().numpy().copy()))
    return history


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", action="store_true", help="run on PyTorch instead")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args(argv)
    print("torch" if args.torch else "engine")
    for i, (value, theta) in enumerate(newton(args.torch, args.steps)):
        print(f"step {i}: loss {value:.10f}  a, b, c = {' '.join(f'{v:+.6f}' for v in theta)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
