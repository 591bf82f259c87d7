"""Every fact a registration declares holds on the op's samples.

- ``method``: ``x.name(...)`` exists and computes what ``name(x, ...)`` does;
- ``inplace``: ``x.name_(...)`` writes the out-of-place result into ``x``, under
  no_grad and, on a non-leaf, recording the same grad_fn;
- ``operators``/``reflected``: each dunder is bound and calls the op, self first
  (or second); an in-place dunder (``__iadd__``) is the in-place form;
- ``results``: the count (and tuple-ness) read from the arguments, by the engine
  and by the client's reading of ``GET /v1/ops``, is what the op returns;
- ``estimate``: never below the largest tensor the call makes; an op without one,
  called on one tensor and numbers, makes nothing larger than that tensor (the
  service's shortcut relies on it).
"""

from __future__ import annotations

import math
import warnings
import zlib
from typing import Any

import numpy as np
import orjson
import pytest

import engine
from client.tensor import count_results as client_count_results
from engine import OPS, Tensor, no_grad
from engine.registry import Const, OpSpec, Results, Sample, evaluate_results
from service.routes.catalogue import catalogue
from tests.engine.torch_oracle import engine_inputs


def _tensor_first(s: Sample) -> bool:
    return bool(s.args) and isinstance(s.args[0], np.ndarray | Const)


def _cases(select: Any, tensor_first: bool = False) -> list[Any]:
    """(op, sample) pairs of the selected ops; with ``tensor_first``, only the samples
    whose first argument is a tensor (a method's ``self``)."""
    out = []
    for name in sorted(OPS):
        spec = OPS[name]
        if not select(spec) or spec.samples is None:
            continue
        samples = spec.samples(np.random.default_rng(zlib.crc32(name.encode())))
        for i, s in enumerate(samples):
            if tensor_first and not _tensor_first(s):
                continue
            out.append(pytest.param(spec, s, id=f"{name}-{s.note or i}"))
    return out


def _call(spec: OpSpec, s: Sample) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    args, kwargs, _ = engine_inputs(s, np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return args, kwargs, spec.fn(*args, **kwargs)


def _results(out: Any) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [r for r in out if isinstance(r, Tensor)]
    return []


def _same(a: Any, b: Any) -> None:
    ra, rb = _results(a), _results(b)
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x.data, y.data)


def _fresh(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments with tensors detached and copied (a plain, writable ``self``)."""
    return tuple(Tensor(a._data.copy()) if isinstance(a, Tensor) else a for a in args)


def test_every_op_declares_its_forms_consistently() -> None:
    for spec in OPS.values():
        assert spec.function or spec.method, spec.name
        for dunder in spec.operators + spec.reflected:
            assert dunder.startswith("__") and dunder.endswith("__"), (spec.name, dunder)
            assert dunder in vars(Tensor), f"{spec.name}: {dunder} is not bound"
        if spec.method:
            assert hasattr(Tensor, spec.name), spec.name
        if spec.inplace:
            assert hasattr(Tensor, spec.name + "_"), spec.name


@pytest.mark.parametrize("spec,s", _cases(lambda spec: spec.method, tensor_first=True))
def test_method_form_is_the_op(spec: OpSpec, s: Sample) -> None:
    args, kwargs, out = _call(spec, s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(getattr(args[0], spec.name)(*args[1:], **kwargs), out)


@pytest.mark.parametrize("spec,s", _cases(lambda spec: spec.inplace, tensor_first=True))
def test_inplace_form_writes_the_result(spec: OpSpec, s: Sample) -> None:
    args, kwargs, out = _call(spec, s)
    assert isinstance(out, Tensor)
    if out.shape != args[0].shape or out.dtype != args[0].dtype:
        return  # PyTorch refuses these in place too (a result that does not fit x)
    plain = _fresh(args)
    with no_grad():
        written = getattr(plain[0], spec.name + "_")(*plain[1:], **kwargs)
    assert written is plain[0] and plain[0]._version == 1
    np.testing.assert_array_equal(plain[0].data, out.data)
    if spec.differentiable and args[0].requires_grad:
        x = args[0] * 1.0  # a non-leaf: the in-place op records on it
        y = getattr(x, spec.name + "_")(*args[1:], **kwargs)
        assert y is x and x.grad_fn is not None
        assert x.grad_fn.name == out.grad_fn.name
        np.testing.assert_array_equal(x.data, out.data)


@pytest.mark.parametrize("spec,s", _cases(lambda spec: bool(spec.operators or spec.reflected)))
def test_operators_call_the_op(spec: OpSpec, s: Sample) -> None:
    args, kwargs, out = _call(spec, s)
    if kwargs:
        return  # operators take no keywords
    for dunder in spec.operators:
        if dunder.startswith("__i") and "__" + dunder[3:] in spec.operators:
            assert getattr(Tensor, dunder) is getattr(Tensor, spec.name + "_")
        elif isinstance(args[0], Tensor):
            _same(getattr(args[0], dunder)(*args[1:]), out)
    for dunder in spec.reflected:
        if len(args) == 2 and isinstance(args[1], Tensor):
            _same(getattr(args[1], dunder)(args[0]), out)


def test_python_operators_reach_the_ops() -> None:
    x = engine.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert (2**x).grad_fn.name == "PowBackward2"
    assert (x @ x).grad_fn.name == "DotBackward0"
    assert (2 - x).grad_fn.name == "RsubBackward1"
    assert (2 / x).grad_fn.name == "MulBackward0"
    assert (2 + x).grad_fn.next_functions[1] == (None, 0)  # the tensor is input 0
    y = x * 1
    y += 1
    assert y.grad_fn.name == "AddBackward0" and y._version == 1


_CATALOGUE = {o["name"]: o for o in orjson.loads(catalogue())["ops"]}


@pytest.mark.parametrize("spec,s", _cases(lambda spec: True))
def test_results_rule_counts_what_the_op_returns(spec: OpSpec, s: Sample) -> None:
    args, kwargs, out = _call(spec, s)
    is_tuple = isinstance(out, tuple | list) and all(isinstance(r, Tensor) for r in out)
    actual = (len(out) if is_tuple else 1, is_tuple)
    assert spec.count_results(args, kwargs) == actual
    assert client_count_results(_CATALOGUE[spec.name], args, kwargs) == actual


def _size(t: Tensor) -> int:
    return math.prod(t.shape)


@pytest.mark.parametrize("spec,s", _cases(lambda spec: spec.estimate is not None))
def test_estimate_bounds_the_result(spec: OpSpec, s: Sample) -> None:
    args, kwargs, out = _call(spec, s)
    assert spec.estimate is not None
    estimate = spec.estimate(args, kwargs)
    largest = max((_size(r) for r in _results(out)), default=0)
    inputs = max((_size(a) for a in args if isinstance(a, Tensor)), default=0)
    if largest > inputs:  # an estimate must see a result larger than its inputs coming
        assert estimate is not None and estimate >= largest
    elif estimate is not None:
        assert estimate >= largest


def _one_tensor_and_numbers(spec: OpSpec) -> bool:
    return spec.estimate is None


@pytest.mark.parametrize("spec,s", _cases(_one_tensor_and_numbers))
def test_ops_without_estimate_do_not_outgrow_one_tensor(spec: OpSpec, s: Sample) -> None:
    args, kwargs, out = _call(spec, s)
    values = list(args) + list(kwargs.values())
    tensors = [a for a in values if isinstance(a, Tensor)]
    if len(tensors) != 1 or any(not isinstance(a, Tensor | int | float | bool) for a in values):
        return  # the service estimates these (the broadcast of their tensors) or looks closer
    largest = max((_size(r) for r in _results(out)), default=0)
    bound = math.prod(max(d, 1) for d in tensors[0].shape)  # reducing an empty dim makes 1
    assert largest <= bound, f"{spec.name} outgrows its input: register an estimate"


@pytest.mark.parametrize(
    "rule,args,kwargs,expected",
    [
        (Results("dim_size"), (np.zeros((3, 4)),), {"dim": 1}, (4, True)),
        (Results("dim_size"), (np.zeros((3, 4)),), {}, (3, True)),
        (Results("split", arg="size"), (np.zeros((5, 2)), 2), {}, (3, True)),
        (Results("split", arg="size"), (np.zeros((5, 2)), [1, 4]), {}, (2, True)),
        (Results("chunk", arg="size"), (np.zeros((0, 2)), 3), {}, (3, True)),
        (Results("chunk", arg="size"), (np.zeros((5, 2)), 4), {}, (3, True)),
        (Results("given", arg="dim"), (np.zeros(3),), {"dim": 0}, (2, True)),
        (Results("given", arg="dim"), (np.zeros(3), np.zeros(3)), {}, (1, False)),
    ],
)
def test_client_and_engine_read_a_rule_alike(
    rule: Results, args: tuple[Any, ...], kwargs: dict[str, Any], expected: tuple[int, bool]
) -> None:
    """Rules no registered op uses yet (``unbind``'s) read the same on both sides."""
    names = ["input", rule.arg or "dim", "dim"] if rule.kind != "dim_size" else ["input", "dim"]
    names = list(dict.fromkeys(names))
    spec = {"args": names, "kwargs": {"dim": 0}, "results": rule.rule()}
    bound = {"dim": 0, **dict(zip(names, args)), **kwargs}
    assert evaluate_results(rule.rule(), bound) == expected
    assert client_count_results(spec, args, kwargs) == expected
