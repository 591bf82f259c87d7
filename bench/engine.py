"""Engine benchmarks against the anchors named in issue 2, measured in one run.

    .venv/bin/python bench/engine.py            # full run (about a minute)
    .venv/bin/python bench/engine.py --quick    # smoke run (seconds; numbers are rough)
    .venv/bin/python bench/engine.py --profile  # plus cProfile hotspots of the per-op case

Cases (each forward + backward):
  per-op   a chain of 1,000 small elementwise ops on a 3-element float32 tensor,
           vs PyTorch eager CPU and HIPS autograd (time per op);
  mlp      one SGD training step, batch 64, 784-256-256-10, float32, relu,
           cross-entropy, update under no_grad, vs PyTorch, the same step written
           by hand in numpy, and HIPS autograd;
  sum-sq   ``(x*x).sum()`` on 1e6 float32 elements vs PyTorch, numpy, HIPS;
  cnn      the digits CNN's conv layers (conv2d, relu, max_pool2d twice), batch 64,
           vs PyTorch;
  block    a transformer block (bench/block.py), forward + backward, vs PyTorch.

Every library runs with one thread (torch.set_num_threads(1); BLAS limited via
threadpoolctl, or the *_NUM_THREADS variables when it is missing) so the
comparison is fair. Times are the best of several repeats. This script prints
ratios and never asserts: targets are shown as met/missed for orientation.
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# One thread everywhere, set before numpy/torch load their BLAS.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# This file is named engine.py: keep its folder off sys.path so that
# ``import engine`` finds the package at the repository root, not this script.
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import numpy as np  # noqa: E402

import engine as E  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover - the bench still runs the other columns
    torch = None
try:
    import autograd as hips
    import autograd.numpy as anp
except ImportError:  # pragma: no cover
    hips = anp = None
try:
    import threadpoolctl
except ImportError:  # pragma: no cover
    threadpoolctl = None


# The rows, by the keys the docstring gives them: a Function's numpy twin of its backward
# (``vjp``) names the row that earns it (``vjp_row``; tests/engine/test_twins.py).
ROWS = ("per-op", "mlp", "sum-sq", "cnn", "block")


# -- timing -------------------------------------------------------------------------


@dataclass
class Settings:
    chain: int = 1000
    mlp_batch: int = 64
    big: int = 1_000_000
    repeat: int = 7
    budget: float = 0.25  # seconds per repeat


QUICK = Settings(chain=200, big=100_000, repeat=2, budget=0.02)


def best_times(fns: dict[str, Callable[[], Any]], settings: Settings) -> dict[str, float]:
    """Seconds per call for each implementation: the best of ``repeat`` rounds, each
    round timing every implementation in turn (interleaved, so a load spike on a
    shared machine hits all of them alike and the ratios stay meaningful)."""
    timers, numbers = {}, {}
    for name, fn in fns.items():
        fn()  # warm up (imports, caches, first allocations)
        timers[name] = timer = timeit.Timer(fn)
        one = min(timer.repeat(repeat=2, number=1))
        numbers[name] = max(1, int(settings.budget / max(one, 1e-9)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(settings.repeat):
        for name, timer in timers.items():
            per_call = timer.timeit(numbers[name]) / numbers[name]
            best[name] = min(best[name], per_call)
    return best


def missing_ops(*names: str) -> list[str]:
    return [n for n in names if n not in E.OPS]


# -- case 1: per-op overhead --------------------------------------------------------


def chain_values() -> tuple[np.ndarray, np.ndarray]:
    return np.array([0.5, -1.0, 2.0], dtype=np.float32), np.array([0.99, 1.0, 1.01], np.float32)


def engine_chain(n: int) -> Callable[[], Any]:
    x0, w0 = chain_values()
    x = E.tensor(x0, requires_grad=True)
    w = E.tensor(w0)

    def step() -> Any:
        y = x
        for _ in range(n // 4):
            y = y * 0.999
            y = y + 0.01
            y = y * w
            y = y - w
        y.sum().backward()
        x.grad = None
        return y

    return step


def torch_chain(n: int) -> Callable[[], Any]:
    x0, w0 = chain_values()
    x = torch.tensor(x0, requires_grad=True)
    w = torch.tensor(w0)

    def step() -> Any:
        y = x
        for _ in range(n // 4):
            y = y * 0.999
            y = y + 0.01
            y = y * w
            y = y - w
        y.sum().backward()
        x.grad = None
        return y

    return step


def hips_chain(n: int) -> Callable[[], Any]:
    x0, w0 = chain_values()

    def f(x: Any) -> Any:
        y = x
        for _ in range(n // 4):
            y = y * 0.999
            y = y + 0.01
            y = y * w0
            y = y - w0
        return anp.sum(y)

    g = hips.grad(f)
    return lambda: g(x0)


# -- case 2: MLP training step ------------------------------------------------------

SIZES = (784, 256, 256, 10)
LR = 0.01


def mlp_data(batch: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], batch)
    params: list[np.ndarray] = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return x, y, params


MLP_OPS = ("matmul", "relu", "cross_entropy")


def engine_mlp(batch: int) -> Callable[[], Any]:
    x0, y0, p0 = mlp_data(batch)
    x, y = E.tensor(x0), E.tensor(y0)
    params = [E.tensor(p, requires_grad=True) for p in p0]
    W1, b1, W2, b2, W3, b3 = params

    def step() -> Any:
        h = E.relu(x @ W1 + b1)
        h = E.relu(h @ W2 + b2)
        loss = E.cross_entropy(h @ W3 + b3, y)
        loss.backward()
        with E.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return loss

    return step


def torch_mlp(batch: int) -> Callable[[], Any]:
    x0, y0, p0 = mlp_data(batch)
    x, y = torch.tensor(x0), torch.tensor(y0)
    params = [torch.tensor(p, requires_grad=True) for p in p0]
    W1, b1, W2, b2, W3, b3 = params
    F = torch.nn.functional

    def step() -> Any:
        h = F.relu(x @ W1 + b1)
        h = F.relu(h @ W2 + b2)
        loss = F.cross_entropy(h @ W3 + b3, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return loss

    return step


def numpy_mlp(batch: int) -> Callable[[], Any]:
    """The same step with the backward pass written by hand."""
    x, y, params = mlp_data(batch)
    rows = np.arange(batch)

    def step() -> Any:
        W1, b1, W2, b2, W3, b3 = params
        z1 = x @ W1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ W2 + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ W3 + b3
        m = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - m)
        s = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(s[:, 0]) + m[:, 0] - logits[rows, y])
        d = e / s
        d[rows, y] -= 1
        d /= batch
        dW3, db3 = h2.T @ d, d.sum(axis=0)
        d = d @ W3.T
        d *= z2 > 0
        dW2, db2 = h1.T @ d, d.sum(axis=0)
        d = d @ W2.T
        d *= z1 > 0
        dW1, db1 = x.T @ d, d.sum(axis=0)
        for p, g in zip(params, (dW1, db1, dW2, db2, dW3, db3)):
            p -= LR * g
        return loss

    return step


def hips_mlp(batch: int) -> Callable[[], Any]:
    x, y, params = mlp_data(batch)
    rows = np.arange(batch)

    def loss_fn(ps: list[Any]) -> Any:
        W1, b1, W2, b2, W3, b3 = ps
        h = anp.maximum(anp.dot(x, W1) + b1, 0)
        h = anp.maximum(anp.dot(h, W2) + b2, 0)
        logits = anp.dot(h, W3) + b3
        m = anp.max(logits, axis=1, keepdims=True)  # autograd.scipy needs scipy
        lse = m[:, 0] + anp.log(anp.sum(anp.exp(logits - m), axis=1))
        return anp.mean(lse - logits[rows, y])

    g = hips.grad(loss_fn)

    def step() -> Any:
        grads = g(params)
        for p, gp in zip(params, grads):
            p -= LR * gp

    return step


# -- case 3: (x*x).sum() on 1e6 elements ----------------------------------------------


def big_values(n: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(n).astype(np.float32)


def engine_sumsq(n: int) -> Callable[[], Any]:
    x = E.tensor(big_values(n), requires_grad=True)

    def step() -> Any:
        (x * x).sum().backward()
        x.grad = None

    return step


def torch_sumsq(n: int) -> Callable[[], Any]:
    x = torch.tensor(big_values(n), requires_grad=True)

    def step() -> Any:
        (x * x).sum().backward()
        x.grad = None

    return step


def numpy_sumsq(n: int) -> Callable[[], Any]:
    x = big_values(n)

    def step() -> Any:
        s = np.multiply(x, x).sum()
        g = np.multiply(x, np.float32(2.0))  # d/dx sum(x*x), one pass
        return s, g

    return step


def hips_sumsq(n: int) -> Callable[[], Any]:
    x = big_values(n)
    g = hips.grad(lambda v: anp.sum(v * v))
    return lambda: g(x)


# -- case 4: the digits CNN's conv layers (examples/digits_cnn.py) ---------------------

CNN_OPS = ("conv2d", "relu", "max_pool2d")


def cnn_convs(F: Any, tensor: Callable[..., Any], batch: int) -> Callable[[], Any]:
    """conv2d(1->8, 3x3, pad 1) -> relu -> max_pool2d(2), then 8->16 the same way, on
    8x8 images; forward, ``.sum()`` and backward into the four parameters."""
    rng = np.random.default_rng(0)
    x = tensor(rng.standard_normal((batch, 1, 8, 8)).astype(np.float32))
    shapes = ((8, 1, 3, 3), (8,), (16, 8, 3, 3), (16,))
    w1, b1, w2, b2 = params = [
        tensor(rng.uniform(-0.3, 0.3, s).astype(np.float32), requires_grad=True) for s in shapes
    ]

    def step() -> Any:
        h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2, padding=1)), 2)
        h.sum().backward()
        for p in params:
            p.grad = None
        return h

    return step


def digits_cnn_grads(lib: Any, batch: int, per_sample: bool) -> Callable[[], Any]:
    """The digits CNN (examples/digits_cnn.py: convs, relu, pools, linear, cross
    entropy) on one batch: per-sample gradients with ``vmap(grad(loss))``, or one
    ordinary backward of the batch's mean loss."""
    F = lib.nn.functional
    rng = np.random.default_rng(0)
    shapes = {"w1": (8, 1, 3, 3), "b1": (8,), "w2": (16, 8, 3, 3), "b2": (16,)}
    shapes.update({"w3": (10, 64), "b3": (10,)})
    p = {k: lib.tensor(rng.uniform(-0.3, 0.3, s).astype(np.float32)) for k, s in shapes.items()}
    x = lib.tensor(rng.standard_normal((batch, 1, 8, 8)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, batch))

    def loss(p: Any, x: Any, y: Any) -> Any:
        h = F.max_pool2d(F.relu(F.conv2d(x, p["w1"], p["b1"], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, p["w2"], p["b2"], padding=1)), 2)
        return F.cross_entropy(F.linear(h.flatten(1), p["w3"], p["b3"]), y)

    if per_sample:
        per = lib.func.vmap(
            lib.func.grad(lambda p, xi, yi: loss(p, xi[None], yi[None])), (None, 0, 0)
        )
        return lambda: per(p, x, y)
    leaves = {k: v.clone().requires_grad_() for k, v in p.items()}

    def step() -> Any:
        loss(leaves, x, y).backward()
        for v in leaves.values():
            v.grad = None

    return step


def per_sample_ratios(s: Settings) -> str:
    """Per-sample gradients over a batch vs one ordinary backward of the same batch,
    each library against itself, timed interleaved in the same run."""
    libs = {"engine": E, "torch": torch} if torch is not None else {"engine": E}
    fns = {}
    for name, lib in libs.items():
        fns[f"{name} per-sample"] = digits_cnn_grads(lib, s.mlp_batch, True)
        fns[f"{name} backward"] = digits_cnn_grads(lib, s.mlp_batch, False)
    t = best_times(fns, s)
    lines = [f"per-sample gradients, digits CNN, batch {s.mlp_batch} (vmap(grad) / one backward):"]
    for name in libs:
        ratio = t[f"{name} per-sample"] / t[f"{name} backward"]
        target = "  target <= 3 " + ("met" if ratio <= 3 else "MISSED") if name == "engine" else ""
        lines.append(
            f"  {name:<7} per-sample {t[f'{name} per-sample'] * 1e3:8.2f} ms  backward "
            f"{t[f'{name} backward'] * 1e3:8.2f} ms  ratio {ratio:6.2f}{target}"
        )
    return "\n".join(lines)


# -- the table ----------------------------------------------------------------------

IMPLS = ("engine", "torch", "numpy", "HIPS")


@dataclass
class Case:
    name: str
    unit: str  # "us/op" or "ms"
    scale: float  # seconds -> unit
    targets: dict[str, float]  # impl -> the largest acceptable engine/impl ratio
    times: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _available(**makers: Any) -> dict[str, Callable[[], Any]]:
    """The step functions of the implementations present (a falsy maker: absent)."""
    return {name: make() for name, make in makers.items() if make}


def measure(settings: Settings) -> list[Case]:
    s = settings
    cases = []

    per_op = Case(
        f"per-op ({s.chain}-op chain, 3 elems)",
        "us/op",
        1e6 / s.chain,
        {"torch": 1.0, "HIPS": 1.0},
    )
    per_op.times.update(
        best_times(
            _available(
                engine=lambda: engine_chain(s.chain),
                torch=torch and (lambda: torch_chain(s.chain)),
                HIPS=hips and (lambda: hips_chain(s.chain)),
            ),
            s,
        )
    )
    cases.append(per_op)

    mlp = Case(
        f"MLP step (batch {s.mlp_batch}, 784-256-256-10)",
        "ms",
        1e3,
        {"numpy": 1.3, "HIPS": 1.0},
    )
    gaps = missing_ops(*MLP_OPS)
    if gaps:
        mlp.notes.append(f"engine: missing ops {', '.join(gaps)}")
    mlp.times.update(
        best_times(
            _available(
                engine=not gaps and (lambda: engine_mlp(s.mlp_batch)),
                torch=torch and (lambda: torch_mlp(s.mlp_batch)),
                numpy=lambda: numpy_mlp(s.mlp_batch),
                HIPS=hips and (lambda: hips_mlp(s.mlp_batch)),
            ),
            s,
        )
    )
    cases.append(mlp)

    big = Case(f"(x*x).sum(), {s.big:.0e} float32", "ms", 1e3, {"torch": 1.5, "HIPS": 1.0})
    big.times.update(
        best_times(
            _available(
                engine=lambda: engine_sumsq(s.big),
                torch=torch and (lambda: torch_sumsq(s.big)),
                numpy=lambda: numpy_sumsq(s.big),
                HIPS=hips and (lambda: hips_sumsq(s.big)),
            ),
            s,
        )
    )
    cases.append(big)

    cnn = Case(f"digits CNN convs (batch {s.mlp_batch}, fwd+bwd)", "ms", 1e3, {"torch": 2.5})
    gaps = missing_ops(*CNN_OPS)
    if gaps:
        cnn.notes.append(f"engine: missing ops {', '.join(gaps)}")
    cnn.times.update(
        best_times(
            _available(
                engine=not gaps and (lambda: cnn_convs(E, E.tensor, s.mlp_batch)),
                torch=torch and (lambda: cnn_convs(torch.nn.functional, torch.tensor, s.mlp_batch)),
            ),
            s,
        )
    )
    cases.append(cnn)
    cases.append(_block_case(s))
    return cases


def _block_case(s: Settings) -> Case:
    """Transformer block forward + backward (bench/block.py) vs PyTorch, one thread."""
    from bench import block as tb  # beside this script (a namespace package)

    case = Case("transformer block (8x64x64, 4 heads)", "ms", 1e3, {})
    gaps = missing_ops(*tb.BLOCK_OPS)
    if gaps:
        case.notes.append(f"engine: missing ops {', '.join(gaps)}")
    makers = {
        "engine": not gaps and (lambda: tb.engine_block(E)),
        "torch": torch and (lambda: tb.torch_block(torch)),
    }
    case.times.update(best_times(_available(**makers), s))
    return case


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(cases: list[Case]) -> str:
    head = f"{'case':<40} {'unit':<6}" + "".join(f"{i:>9}" for i in IMPLS)
    head += "".join(f"{'engine/' + i:>14}" for i in IMPLS[1:]) + "  targets"
    lines = [head, "-" * len(head)]
    for case in cases:
        ours = case.times.get("engine")
        row = f"{case.name:<40} {case.unit:<6}"
        row += "".join(
            f"{_fmt(None if case.times.get(i) is None else case.times[i] * case.scale):>9}"
            for i in IMPLS
        )
        verdicts = []
        for impl in IMPLS[1:]:
            ref = case.times.get(impl)
            ratio = None if ours is None or ref is None else ours / ref
            row += f"{_fmt(ratio, 3):>14}"
            if impl in case.targets:
                limit = case.targets[impl]
                mark = "?" if ratio is None else ("met" if ratio <= limit else "MISSED")
                verdicts.append(f"/{impl}<={limit:g} {mark}")
        lines.append(row + "  " + ", ".join(verdicts))
        lines.extend(f"    note: {n}" for n in case.notes)
    return "\n".join(lines)


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def environment() -> str:
    parts = [
        f"python {sys.version.split()[0]}",
        f"numpy {np.__version__}",
        f"torch {torch.__version__ if torch else 'absent'}"
        + (f" ({torch.get_num_threads()} thread)" if torch else ""),
        f"autograd {_version('autograd') if hips else 'absent'}",
        f"cpus {os.cpu_count()}",
    ]
    if threadpoolctl is not None:
        pools = threadpoolctl.threadpool_info()
        blas = [f"{p['internal_api']} {p.get('version')} x{p['num_threads']}" for p in pools]
        parts.append("BLAS threads: " + ("; ".join(blas) or "none found"))
    else:
        parts.append(
            "BLAS threads: threadpoolctl absent; OPENBLAS_NUM_THREADS="
            + os.environ.get("OPENBLAS_NUM_THREADS", "?")
        )
    return " | ".join(parts)


def profile(settings: Settings, top: int = 15) -> str:
    import cProfile
    import io
    import pstats

    step = engine_chain(settings.chain)
    step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(20 if settings is not QUICK else 2):
        step()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument("--profile", action="store_true", help="cProfile the per-op case")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else Settings()
    if torch is not None:
        torch.set_num_threads(1)
    limiter = threadpoolctl.threadpool_limits(limits=1) if threadpoolctl is not None else None
    try:
        print(environment())
        print(render(measure(settings)))
        print(per_sample_ratios(settings))
        if args.profile:
            print("\ncProfile of the engine per-op case (sorted by own time):")
            print(profile(settings))
    finally:
        if limiter is not None:
            limiter.unregister()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
