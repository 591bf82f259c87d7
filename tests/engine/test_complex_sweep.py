"""Every registered op with complex inputs, against PyTorch: no silent difference.

Each op's samples (the op database's, ``engine/registry.py``) are made complex: every
floating array becomes ``x + i y`` (``y`` drawn per op) in complex64 or complex128.
Then torch 2.13 and the engine run the call, and one of these holds:

- both raise, the engine's error an instance of torch's class;
- both answer, with the same values, dtypes and shapes (``assert_values``);
- torch answers and the engine refuses *clearly*: an engine error that names complex
  (``"... not implemented for 'ComplexFloat' ..."``), never a numpy error, never a
  value computed from the real parts alone.

Then with inputs that require grad: where the engine records a graph, the gradients
of every input (a random cotangent of each output's dtype) are torch's, or the
backward refuses clearly (``NotImplementedBackward``: an op whose backward is not
marked ``complex_ok`` cannot reach a complex input).

Bounded for ``make test``: the first samples of each op (``COMPLEX_SWEEP=all`` for
every sample), complex128 for all of them, complex64 for the first.
"""

from __future__ import annotations

import os
import warnings
import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

import engine
from engine import OPS, Tensor
from engine.errors import EngineError
from engine.registry import Const, OpSpec, Sample
from tests.engine.torch_oracle import (
    assert_values,
    call_engine,
    call_torch,
    differentiable_outputs,
    require_torch,
)

LIMIT = None if os.environ.get("COMPLEX_SWEEP") == "all" else 2

# differences left, each with its reason (a case of these ops is expected to fail)
KNOWN: dict[str, str] = {
    # torch's masked reductions with a mask call torch.iinfo on a complex dtype (a
    # TypeError); the engine refuses the complex input itself (NotImplementedError)
    **dict.fromkeys(
        [
            "masked_amax",
            "masked_amin",
            "masked_argmax",
            "masked_argmin",
            "masked_log_softmax",
            "masked_logaddexp",
            "masked_softmax",
            "masked_softmin",
        ],
        "torch's TypeError from torch.iinfo(complex) against the engine's complex refusal",
    ),
    "multi_head_attention_forward": "a complex attn_mask: torch asserts (AssertionError)",
}


def _seed(text: str) -> int:
    return zlib.crc32(text.encode())


def complexify(value: Any, rng: np.random.Generator) -> Any:
    """The sample's floating arrays (leaves and constants) as complex128 ``x + i y``."""
    if isinstance(value, Const):
        return Const(complexify(np.asarray(value.value), rng))
    if isinstance(value, np.floating):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind != "f":
            return value
        return np.asarray(value + 1j * rng.uniform(-1.0, 1.0, value.shape))
    if isinstance(value, (list, tuple)):
        return type(value)(complexify(v, rng) for v in value)
    return value


def has_floats(value: Any) -> bool:
    if isinstance(value, Const):
        value = np.asarray(value.value)
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "f"
    if isinstance(value, (list, tuple)):
        return any(has_floats(v) for v in value)
    return False


@dataclass(frozen=True)
class Case:
    spec: OpSpec
    sample: Sample
    dtype: str
    id: str


def _collect() -> list[Case]:
    cases = []
    for name in sorted(OPS):
        spec = OPS[name]
        if spec.samples is None:
            continue
        samples = list(spec.samples(np.random.default_rng(_seed(name))))
        kept = [s for s in samples if has_floats(list(s.args) + list(s.kwargs.values()))]
        for i, s in enumerate(kept[:LIMIT]):
            rng = np.random.default_rng(_seed(f"{name}-complex-{i}"))
            made = replace(
                s,
                args=tuple(complexify(a, rng) for a in s.args),
                kwargs={k: complexify(v, rng) for k, v in s.kwargs.items()},
            )
            label = s.note or f"sample{i}"
            for dtype in ("complex128", "complex64") if i == 0 else ("complex128",):
                cases.append(Case(spec, made, dtype, f"{name}-{label}-{dtype}"))
    return cases


CASES = _collect()


def clear_refusal(exc: BaseException) -> bool:
    """An engine error that says complex is what it cannot do."""
    return isinstance(exc, EngineError) and "omplex" in str(exc)


def _run(call: Any, spec: OpSpec, sample: Sample, dtype: str, seed: int) -> Any:
    """The call's result, or the exception it raised."""
    torch = require_torch()
    engine.manual_seed(seed)
    torch.manual_seed(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(spec, sample, dtype)
    except Exception as exc:  # noqa: BLE001 - compared below
        return exc


def check_forward(case: Case) -> str:
    """Values without a graph: torch's, torch's error class, or a clear refusal.
    Returns which of the three held."""
    torch = require_torch()
    seed = _seed(case.id)
    with torch.no_grad(), engine.no_grad():
        theirs = _run(call_torch, case.spec, case.sample, case.dtype, seed)
        mine = _run(call_engine, case.spec, case.sample, case.dtype, seed)
    if isinstance(theirs, Exception):
        assert isinstance(mine, Exception), (
            f"torch raised {type(theirs).__name__}: {theirs}; the engine answered"
        )
        assert isinstance(mine, type(theirs)), (
            f"torch raised {type(theirs).__name__}: {theirs}; "
            f"the engine {type(mine).__name__}: {mine}"
        )
        return "both raise"
    if isinstance(mine, Exception):
        assert clear_refusal(mine), (
            f"torch answered; the engine raised {type(mine).__name__}: {mine}"
        )
        return "refused"
    assert_values(mine.result, theirs.result)
    return "same"


def check_backward(case: Case) -> str:
    """With inputs that require grad: torch's gradients, or a clear refusal."""
    torch = require_torch()
    seed = _seed(case.id)
    theirs = _run(call_torch, case.spec, case.sample, case.dtype, seed)
    mine = _run(call_engine, case.spec, case.sample, case.dtype, seed)
    if isinstance(mine, Exception):
        assert clear_refusal(mine) or isinstance(theirs, Exception), (
            f"the engine raised {type(mine).__name__}: {mine}; torch {theirs!r}"
        )
        return "refused"
    if isinstance(theirs, Exception):
        raise AssertionError(f"torch raised {theirs!r}; the engine answered with a graph")
    outs, touts = differentiable_outputs(mine.result), differentiable_outputs(theirs.result)
    assert len(outs) == len(touts), f"{len(outs)} results require grad, torch {len(touts)}"
    if not outs:
        return "no graph"
    rng = np.random.default_rng(seed)
    grads = []
    for o in outs:
        g = rng.uniform(-1.0, 1.0, o.shape)
        if o.dtype.kind == "c":
            g = g + 1j * rng.uniform(-1.0, 1.0, o.shape)
        grads.append(np.asarray(g, dtype=o.dtype))
    try:
        torch.autograd.backward(touts, [torch.from_numpy(g) for g in grads])
    except Exception as exc:  # noqa: BLE001 - the engine must refuse too
        try:
            engine.backward(outs, [Tensor(g) for g in grads])
        except Exception as refusal:  # noqa: BLE001
            assert isinstance(refusal, type(exc)) or clear_refusal(refusal), (
                f"torch's backward raised {exc!r}; the engine {refusal!r}"
            )
            return "both raise"
        raise AssertionError(f"torch's backward raised {exc!r}; the engine's ran") from None
    try:
        engine.backward(outs, [Tensor(g) for g in grads])
    except Exception as exc:  # noqa: BLE001
        assert clear_refusal(exc), f"torch's backward ran; the engine raised {exc!r}"
        return "refused"
    for k, (x, tx) in enumerate(zip(mine.leaves, theirs.leaves)):
        if tx.grad is None:
            assert x.grad is None or not np.any(x.grad.numpy()), f"input {k}: torch None"
        else:
            assert x.grad is not None, f"input {k}: grad None, torch {tx.grad}"
            assert_values(x.grad, tx.grad, path=f"input {k} grad")
    return "same"


def _ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_complex_forward(case: Case, torch: Any) -> None:
    _known(case)
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_complex_backward(case: Case, torch: Any) -> None:
    _known(case)
    check_backward(case)


def _known(case: Case) -> None:
    if case.spec.name in KNOWN:
        pytest.xfail(KNOWN[case.spec.name])


# -- beyond the samples: Python complex numbers, casts, factories ---------------------------

_Z = np.array([1 + 2j, -0.5j, 0j, 3 + 0j])
_X = np.array([1.5, -2.0, 0.0, 3.0])
CALLS = {
    "x * 1j": lambda m, x, z: x * 1j,
    "1j - x": lambda m, x, z: 1j - x,
    "x / 1j": lambda m, x, z: x / 1j,
    "z ** 2": lambda m, x, z: z**2,
    "z * x": lambda m, x, z: z * x,
    "add alpha 1j": lambda m, x, z: m.add(z, x, alpha=1j),
    "z.bool()": lambda m, x, z: z.bool(),
    "z.long()": lambda m, x, z: z.long(),
    "is_complex": lambda m, x, z: (m.is_complex(z), m.is_complex(x), z.is_complex()),
    "complex(z[0])": lambda m, x, z: complex(z[0]),
    "fill_ 2+1j": lambda m, x, z: z.clone().fill_(2 + 1j),
    "x.fill_(1j)": lambda m, x, z: x.clone().fill_(1j),
    "z == 1j": lambda m, x, z: z == 1j,
    "x < 1j": lambda m, x, z: x < 1j,
    "clamp(x, max=1j)": lambda m, x, z: m.clamp(x, max=1j),
    "div floor": lambda m, x, z: m.div(z, 2, rounding_mode="floor"),
    "arange complex": lambda m, x, z: m.arange(3, dtype=m.complex64),
    "randint complex": lambda m, x, z: m.randint(0, 5, (3,), dtype=m.complex64),
    "unique": lambda m, x, z: m.unique(z),
    "mean": lambda m, x, z: m.mean(z),
    "conj": lambda m, x, z: m.conj(z),
    "real": lambda m, x, z: m.real(z),
    "angle": lambda m, x, z: m.angle(z),
    "vdot": lambda m, x, z: m.vdot(z, z * 2),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_complex_calls_beyond_the_samples(name: str, torch: Any) -> None:
    """Where torch answers, the engine's values, dtypes and shapes are torch's (or it
    refuses clearly); where torch raises, the engine raises the same class."""
    results = []
    for m in (engine, torch):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.append(CALLS[name](m, m.tensor(_X), m.tensor(_Z)))
        except Exception as exc:  # noqa: BLE001 - compared below
            results.append(exc)
    mine, theirs = results
    if isinstance(theirs, Exception):
        assert isinstance(mine, type(theirs)), f"torch raised {theirs!r}; the engine {mine!r}"
    elif isinstance(mine, Exception):
        assert clear_refusal(mine), f"torch answered; the engine raised {mine!r}"
    else:
        assert_values(mine, theirs)
