"""Every registered op drawn into programs: a step calls one op of the catalogue on one
of its registered samples, some of whose tensor arguments are tensors the program
already holds (same shape and dtype), so the op's results meet the rest of autograd
(views, in-place writes, hooks, backward twice, create_graph). Issue 15: where the
fuzzer does not draw an op, nothing checks its compositions.

The sample is rebuilt at run time from its op's seeded builder (the program stores the
op name, the sample's index and which arguments come from the program)."""

from __future__ import annotations

import random
import zlib
from functools import cache
from typing import Any

import numpy as np

import engine
from engine.registry import OPS, Sample
from tests.engine.torch_oracle import DTYPE_NAMES, _convert, torch_function


@cache
def samples(name: str) -> tuple[Sample, ...]:
    spec = OPS[name]
    if spec.samples is None:
        return ()
    return tuple(spec.samples(np.random.default_rng(zlib.crc32(name.encode()))))


@cache
def drawable() -> tuple[str, ...]:
    """Ops with samples and a PyTorch spelling (the others cannot be compared)."""
    out = []
    for name in sorted(OPS):
        try:
            if samples(name):
                torch_function(OPS[name])
                out.append(name)
        except Exception:  # noqa: BLE001 - no torch spelling, or a broken builder
            continue
    return tuple(out)


def float_positions(sample: Sample) -> list[str]:
    """Top-level arguments that become leaves: ``"0"``, ``"1"``, ... or keyword names."""
    keys = [(str(i), a) for i, a in enumerate(sample.args)] + list(sample.kwargs.items())
    return [k for k, a in keys if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def arrays(sample: Sample) -> dict[str, np.ndarray]:
    keys = [(str(i), a) for i, a in enumerate(sample.args)] + list(sample.kwargs.items())
    return {k: a for k, a in keys if isinstance(a, np.ndarray)}


def build(
    sample: Sample,
    dtype: str,
    make: Any,
    other: Any,
    subs: dict[str, Any],
) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
    """The call's arguments, ``subs`` in place of the leaves they name; the fresh leaves
    made for the others, in order."""
    dt = np.dtype(dtype)
    leaves: list[Any] = []

    def leaf(arr: np.ndarray) -> Any:
        t = make(arr, True)
        leaves.append(t)
        return t

    def const(arr: np.ndarray) -> Any:
        return make(arr, False)

    def conv(key: str, value: Any) -> Any:
        if key in subs:
            return subs[key]
        return _convert(value, dt, leaf, const, other)

    args = tuple(conv(str(i), a) for i, a in enumerate(sample.args))
    kwargs = {k: conv(k, v) for k, v in sample.kwargs.items()}
    return args, kwargs, leaves


def call(be: Any, step: dict[str, Any], env: dict[str, Any]) -> tuple[list[Any], Any]:
    """Run a catalogue step on a backend: (fresh leaves, result)."""
    name = step["op"]
    sample = samples(name)[step["sample"]]
    subs = {k: env[v] for k, v in step["subs"].items()}
    if be.kind == "torch":
        torch = be.ns

        def make(arr: np.ndarray, grad: bool) -> Any:
            return torch.from_numpy(np.array(arr, copy=True)).requires_grad_(grad)

        def other(v: Any) -> Any:
            if isinstance(v, str) and v.removeprefix("torch.") in DTYPE_NAMES:
                return getattr(torch, v.removeprefix("torch."))
            return v

        args, kwargs, leaves = build(sample, step["dtype"], make, other, subs)
        fn = torch_function(OPS[name], args[0] if args else None)
    else:

        def make(arr: np.ndarray, grad: bool) -> Any:
            return engine.Tensor(np.array(arr, copy=True), requires_grad=grad)

        args, kwargs, leaves = build(sample, step["dtype"], make, lambda v: v, subs)
        fn = OPS[name].fn
    be.ns.manual_seed(step["seed"])
    return leaves, fn(*args, **kwargs)


def tensors_of(result: Any, is_tensor: Any) -> list[Any]:
    if isinstance(result, (list, tuple)):
        return [r for r in result if is_tensor(r)]
    return [result] if is_tensor(result) else []


def draw(rng: random.Random, pick: Any, op: str | None = None) -> dict[str, Any]:
    """One catalogue step: the op, a sample, and which of its leaves are program tensors
    (``pick(shape, dtype)`` names one or None); ``op`` forces the op."""
    name = op or rng.choice(drawable())
    pool = samples(name)
    k = rng.randrange(len(pool))
    sample = pool[k]
    dtype = rng.choice(["float32", "float64"])
    subs: dict[str, str] = {}
    for key in float_positions(sample):
        if rng.random() < 0.6:
            shape = tuple(arrays(sample)[key].shape)
            found = pick(shape, dtype)
            if found is not None:
                subs[key] = found
    step: dict[str, Any] = {
        "kind": "catalogue",
        "op": name,
        "sample": k,
        "dtype": dtype,
        "subs": subs,
        "seed": rng.randrange(1 << 16),
        "leaves": [],
        "out": [],
    }
    return step
