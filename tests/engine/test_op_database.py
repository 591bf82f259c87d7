"""The op database: every registered op is checked through its samples.

- every op declares samples (and its sample builder runs);
- gradcheck in float64 for every sample of every differentiable op, except
  samples marked ``gradcheck=False`` (ties, kinks: checked against PyTorch only);
- gradgradcheck for the same, except the commented allowlist below;
- PyTorch parity in float32 and float64 for every sample: forward values,
  dtype, grad_fn name, requires_grad/is_leaf, and every input's grad after a
  backward with a random grad_output per differentiable output;
- the checker itself rejects a wrong VJP (a Function defined here, unregistered);
- Hypothesis: broadcastable shape pairs for the binary elementwise ops.

Test ids name the op and the sample: ``test_gradcheck[mul-broadcast b]``.
Samples are built once, at collection, from a generator seeded by the op name.
"""

from __future__ import annotations

import inspect
import re
import warnings
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine
from engine import OPS, Function, GradcheckError, Tensor, gradcheck, gradgradcheck
from engine.binding import accepts
from engine.registry import Domain, OpSpec, Sample
from tests.engine.torch_oracle import (
    assert_same,
    call_engine,
    call_torch,
    compare,
    differentiable_outputs,
    engine_inputs,
    torch_function,
)

# Ops whose double backward PyTorch itself does not support, so gradgradcheck
# cannot hold them to it. Each entry needs a reason; nothing else is skipped.
GRADGRAD_ALLOWLIST: dict[str, str] = {
    "hardsigmoid": "torch records NotImplemented (aten::hardsigmoid_backward has no "
    "derivative); the engine raises as torch does (test_torch_meaning)",
}


@dataclass(frozen=True)
class Case:
    spec: OpSpec
    sample: Sample
    id: str

    @property
    def name(self) -> str:
        return self.spec.name


def _seed(text: str) -> int:
    return zlib.crc32(text.encode())


def _collect() -> tuple[list[Case], dict[str, str]]:
    """Every (op, sample) pair, and the ops whose samples are missing or fail to build."""
    cases: list[Case] = []
    problems: dict[str, str] = {}
    for name in sorted(OPS):
        spec = OPS[name]
        if spec.samples is None:
            problems[name] = "no samples"
            continue
        try:
            samples = list(spec.samples(np.random.default_rng(_seed(name))))
        except Exception as exc:  # a broken builder must name its op, not break collection
            problems[name] = f"sample builder raised {type(exc).__name__}: {exc}"
            continue
        if not samples:
            problems[name] = "the sample builder returned no samples"
        seen: set[str] = set()
        for i, s in enumerate(samples):
            label = s.note or f"sample{i}"
            if label in seen:
                label = f"{label} #{i}"
            seen.add(label)
            cases.append(Case(spec, s, f"{name}-{label}"))
    return cases, problems


CASES, SAMPLE_PROBLEMS = _collect()


def _has_leaf(sample: Sample) -> bool:
    return bool(engine_inputs(sample, np.float64)[2])


GRADCHECK_CASES = [
    c for c in CASES if c.spec.differentiable and c.sample.gradcheck and _has_leaf(c.sample)
]
GRADGRAD_CASES = [c for c in GRADCHECK_CASES if c.name not in GRADGRAD_ALLOWLIST]


def _ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


def _flat(case: Case) -> tuple[Any, list[Tensor]]:
    """The op as a function of its float64 leaves alone (what gradcheck perturbs)."""
    args, kwargs, leaves = engine_inputs(case.sample, np.float64)
    position = {id(t): k for k, t in enumerate(leaves)}

    def swap(value: Any, xs: tuple[Tensor, ...]) -> Any:
        if isinstance(value, Tensor) and id(value) in position:
            return xs[position[id(value)]]
        if isinstance(value, (list, tuple)):
            return type(value)(swap(v, xs) for v in value)
        return value

    def fn(*xs: Tensor) -> Any:
        result = case.spec.fn(*swap(args, xs), **{k: swap(v, xs) for k, v in kwargs.items()})
        return tuple(result) if isinstance(result, list) else result

    return fn, leaves


# -- (a) every op has samples --------------------------------------------------------------


def test_every_op_has_samples() -> None:
    assert OPS, "the registry is empty"
    assert not SAMPLE_PROBLEMS, "ops without usable samples: " + "; ".join(
        f"{name}: {why}" for name, why in sorted(SAMPLE_PROBLEMS.items())
    )


# ops whose gradient is torch's and not the finite-difference derivative of the op alone,
# each gradchecked in the composition its gradient assumes (named in the test file)
GRADCHECKED_ELSEWHERE = {
    # torch's gradient assumes log_probs from log_softmax: tests/engine/test_ctc.py
    "ctc_loss",
    # eigenvectors have a free phase: gradchecked through |V|, as op_db's samples do,
    # in tests/engine/test_linalg_eig.py
    "linalg_eig",
}


def test_every_differentiable_op_is_gradchecked() -> None:
    """A differentiable op whose samples all skip gradcheck is not checked at all."""
    checked = {c.name for c in GRADCHECK_CASES} | GRADCHECKED_ELSEWHERE
    unchecked = sorted(
        n
        for n, s in OPS.items()
        if s.differentiable and n not in checked and n not in SAMPLE_PROBLEMS
    )
    assert not unchecked, f"differentiable ops with no gradcheck-able sample: {unchecked}"


# -- (b) gradcheck and gradgradcheck -------------------------------------------------------


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=_ids(GRADCHECK_CASES))
def test_gradcheck(case: Case) -> None:
    fn, leaves = _flat(case)
    assert gradcheck(fn, leaves)


@pytest.mark.parametrize("case", GRADGRAD_CASES, ids=_ids(GRADGRAD_CASES))
def test_gradgradcheck(case: Case) -> None:
    fn, leaves = _flat(case)
    assert gradgradcheck(fn, leaves)


# -- (c) PyTorch parity --------------------------------------------------------------------


def _user_warnings(records: list[warnings.WarningMessage]) -> list[str]:
    return [
        re.sub(r" \(Triggered internally at .*\)$", "", str(w.message))
        for w in records
        if issubclass(w.category, UserWarning)
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_matches_torch(case: Case, dtype: str, torch: Any) -> None:
    with warnings.catch_warnings(record=True) as mine_warned:
        warnings.simplefilter("always")
        mine = call_engine(case.spec, case.sample, dtype)
    with warnings.catch_warnings(record=True) as torch_warned:
        warnings.simplefilter("always")
        theirs = call_torch(case.spec, case.sample, dtype)
    assert_same(mine.result, theirs.result)
    # where PyTorch warns (var with correction >= n, ...), the engine warns the same
    # text; not the converse, since PyTorch emits some warnings once per process
    if _user_warnings(torch_warned):
        assert _user_warnings(mine_warned) == _user_warnings(torch_warned)
    outs, touts = differentiable_outputs(mine.result), differentiable_outputs(theirs.result)
    if not outs:
        return
    rng = np.random.default_rng(_seed(f"{case.id}-{dtype}"))
    grads = [rng.uniform(-1.0, 1.0, o.shape).astype(o.dtype) for o in outs]
    engine.backward(outs, [Tensor(g) for g in grads])
    torch.autograd.backward(touts, [torch.from_numpy(g) for g in grads])
    for k, (x, tx) in enumerate(zip(mine.leaves, theirs.leaves)):
        if tx.grad is None:
            assert x.grad is None, f"input {k}: grad {x.grad!r}, torch None"
        else:
            assert x.grad is not None, f"input {k}: grad None, torch {tx.grad}"
            assert_same(x.grad, tx.grad, graph=False, path=f"input {k} grad")


# -- (d) the checker rejects a wrong VJP ---------------------------------------------------


class WrongSinBackward(Function):
    """sin with the derivative of -cos forgotten: d/dx sin x written as x (not registered)."""

    name = "SinBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        return np.sin(a.data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g * a


class NumpySquareBackward(Function):
    """x**2 with a correct VJP computed in raw numpy: right once, not differentiable."""

    name = "PowBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        return a.data * a.data

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return Tensor(2.0 * a.data * g.data)


@pytest.mark.parametrize("n", [5, 200], ids=["full jacobian", "random directions"])
def test_gradcheck_rejects_wrong_vjp(n: int) -> None:
    x = Tensor(np.linspace(0.3, 1.7, n), requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongSinBackward.apply, (x,))
    assert str(info.value).startswith("Jacobian mismatch for output 0 with respect to input 0,\n")
    assert info.value.code == "gradcheck_failed"
    assert gradcheck(WrongSinBackward.apply, (x,), raise_exception=False) is False


def _wrong_sin_case() -> Case:
    """A database entry for the wrong sin, built here and never registered."""

    def wrong_sin(input: Tensor) -> Tensor:
        return WrongSinBackward.apply(input)

    spec = OpSpec(
        name="wrong_sin",
        fn=wrong_sin,
        signature=inspect.signature(wrong_sin),
        doc="sin with a wrong VJP",
        differentiable=True,
        method=False,
        samples=None,
        torch="sin",
    )
    return Case(spec, Sample((np.linspace(-1.0, 1.5, 6).reshape(2, 3),)), "wrong_sin-matrix")


def test_database_tests_reject_wrong_vjp(torch: Any) -> None:
    """The generic tests above, fed an op with a wrong VJP, fail (testing the tester)."""
    case = _wrong_sin_case()
    assert case.name not in OPS
    with pytest.raises(GradcheckError):
        test_gradcheck(case)
    with pytest.raises(AssertionError, match="input 0 grad"):
        test_matches_torch(case, "float64", torch)


def test_gradgradcheck_rejects_non_differentiable_vjp() -> None:
    x = Tensor(np.linspace(0.3, 1.7, 4), requires_grad=True)
    assert gradcheck(NumpySquareBackward.apply, (x,))
    with pytest.raises(GradcheckError) as info:
        gradgradcheck(NumpySquareBackward.apply, (x,))
    assert "Numerical gradient for function expected to be zero" in str(info.value)


def test_missing_torch_fails_under_require_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI sets REQUIRE_TORCH=1: a missing oracle must fail the run, not skip it."""
    from tests.engine import torch_oracle

    monkeypatch.setattr(torch_oracle, "_torch", None)
    monkeypatch.setenv("REQUIRE_TORCH", "1")
    with pytest.raises(pytest.fail.Exception, match="REQUIRE_TORCH=1"):
        torch_oracle.require_torch()
    monkeypatch.delenv("REQUIRE_TORCH")
    with pytest.raises(pytest.skip.Exception):
        torch_oracle.require_torch()


# -- (e) Hypothesis: broadcasting binary elementwise ops -----------------------------------


def _floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _elements(domain: Domain) -> st.SearchStrategy[float]:
    """Hypothesis floats in an input's registered domain."""
    if domain.signed:
        return _floats(domain.low, domain.high) | _floats(-domain.high, -domain.low)
    return _floats(domain.low, domain.high)


_ANY = _elements(Domain())
# binary elementwise ops drawn from their registered domains (div: a divisor away
# from zero; pow: a positive base)
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2"]
BINARY_OPS = [name for name in BINARY if name in OPS]
DTYPES = ["float32", "float64"]


@pytest.mark.skipif(not BINARY_OPS, reason="no binary elementwise op registered yet")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY_OPS)
@given(data=st.data())
def test_binary_broadcasting_matches_torch(name: str, dtype: str, data: Any, torch: Any) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    left, right = (_elements(OPS[name].domain_of(k)) for k in (0, 1))
    a = data.draw(hnp.arrays(np.float64, shapes.input_shapes[0], elements=left), label="input")
    binding = OPS[name].binding  # a number only where PyTorch's binding takes one
    takes_number = binding is None or accepts(OPS[name].signature, binding, (a, 0.0), {})
    if takes_number and data.draw(st.booleans(), label="other is a number"):
        b: Any = data.draw(right, label="other")
    else:
        b = data.draw(hnp.arrays(np.float64, shapes.input_shapes[1], elements=right), label="other")
    spec = OPS[name]
    compare(spec.fn, torch_function(spec), a, b, dtype=dtype)


@pytest.mark.skipif("where" not in OPS, reason="where is not registered yet")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_where_broadcasting_matches_torch(dtype: str, data: Any, torch: Any) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4))
    cond = data.draw(hnp.arrays(np.bool_, shapes.input_shapes[0]), label="condition")
    a = data.draw(hnp.arrays(np.float64, shapes.input_shapes[1], elements=_ANY), label="input")
    b = data.draw(hnp.arrays(np.float64, shapes.input_shapes[2], elements=_ANY), label="other")
    compare(engine.where, torch.where, cond, a, b, dtype=dtype)
