"""PyTorch's OpInfo sample families, run through ``engine`` as a torch-like namespace.

PyTorch's ``common_methods_invocations.py`` feeds every op 0-d tensors, empty tensors
(``(0,)``, ``(2, 0)``), broadcasting pairs, non-contiguous (transposed) inputs,
extreme values (inf, nan, -0.0), Python scalars of each kind, integer and bool
dtypes, and every way of naming dims (negative, tuples, keepdim). Each case here
is one call written once against a module ``t`` and run as ``t = engine`` and
``t = torch`` on the same data; the results must agree in values, dtype and shape,
the grads of float inputs after a backward with the same random grad, and where
PyTorch raises, the engine raises an instance of PyTorch's exception class with
PyTorch's message.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import engine
from tests.engine.torch_oracle import TOLERANCES, assert_values, require_torch

torch = require_torch()


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[..., Any]  # call(t, *tensors) with t the engine or torch module
    inputs: tuple[np.ndarray, ...]
    grad: bool = True  # float inputs require grad and the grads are compared
    transpose: tuple[bool, ...] = ()  # pass input k transposed (a non-contiguous view)


def _seed(text: str) -> int:
    return zlib.crc32(text.encode())


# -- input families ------------------------------------------------------------------------

EXTREMES = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 1e30, -1e-30])


def _rand(rng: np.random.Generator, *shape: int, lo: float = -2.0, hi: float = 2.0) -> Any:
    return rng.uniform(lo, hi, size=shape)


def _unary_inputs(rng: np.random.Generator, lo: float, hi: float) -> dict[str, tuple[Any, ...]]:
    return {
        "0-d": (_rand(rng, lo=lo, hi=hi),),
        "empty (0,)": (np.zeros((0,)),),
        "empty (2,0)": (np.zeros((2, 0)),),
        "matrix": (_rand(rng, 3, 4, lo=lo, hi=hi),),
        "transposed": (_rand(rng, 4, 3, lo=lo, hi=hi),),
        "int64": (rng.integers(max(int(lo), -3), max(int(hi), 1) + 1, size=(5,)),),
        "bool": (np.array([True, False, True]),),
    }


def _t(case: Case, k: int) -> bool:
    return bool(case.transpose) and case.transpose[k]


# ops drawn from their registered domain (``Domain`` on the registration: [-2, 2] unless
# it says otherwise, e.g. log's (0.5, 2))
UNARY = [
    "abs",
    "neg",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "sigmoid",
    "relu",
    "reciprocal",
    "square",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "erf",
    "erfc",
    "exp2",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "sinc",
    "logical_not",
    "bitwise_not",
    "nan_to_num",
    "positive",
    "lgamma",
    "digamma",
    "absolute",
    "negative",
    "sgn",
    "fix",
]


def _unary_cases() -> list[Case]:
    cases = []
    for name in UNARY:
        rng = np.random.default_rng(_seed(name))
        domain = engine.OPS[name].domain_of(0)
        lo, hi = domain.low, domain.high

        def call(t: Any, x: Any, _n: str = name) -> Any:
            return getattr(t, _n)(x)

        for fam, inputs in _unary_inputs(rng, lo, hi).items():
            cases.append(Case(f"{name}-{fam}", call, inputs, transpose=(fam == "transposed",)))
        cases.append(Case(f"{name}-extremes", call, (EXTREMES.copy(),), grad=False))
        cases.append(
            Case(f"{name}-method", lambda t, x, _n=name: getattr(x, _n)(), (_rand(rng, 2, 3),))
        )
    return cases


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder", "floor_divide",
          "atan2", "pow", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
          "logical_xor", "fmax", "fmin", "hypot", "copysign", "xlogy", "logaddexp"]  # fmt: skip
# ops whose float samples must stay away from zero (division, kinks at 0)
_NONZERO = {"div", "fmod", "remainder", "floor_divide", "atan2", "copysign", "pow", "xlogy"}


def _operand(rng: np.random.Generator, name: str, *shape: int) -> Any:
    if name in ("pow", "xlogy"):
        return rng.uniform(0.5, 2.0, size=shape)
    if name in _NONZERO:
        return rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return rng.uniform(-2.0, 2.0, size=shape)


def _binary_cases() -> list[Case]:
    cases = []
    for name in BINARY:
        rng = np.random.default_rng(_seed(name))
        o = lambda *shape, _n=name, _r=rng: _operand(_r, _n, *shape)  # noqa: E731

        def call(t: Any, a: Any, b: Any, _n: str = name) -> Any:
            return getattr(t, _n)(a, b)

        def scalar(value: Any, _n: str = name) -> Any:
            return lambda t, a: getattr(t, _n)(a, value)

        ints = np.array([-7, -3, 0, 3, 7, 5])
        int_divisors = np.array([2, -2, 3, -3, 2, -4])
        fam = {
            "same shape": (call, (o(2, 3), o(2, 3)), ()),
            "broadcast both": (call, (o(3, 1), o(1, 4)), ()),
            "0-d and matrix": (call, (o(), o(2, 3)), ()),
            "empty": (call, (o(0, 3), o(3)), ()),
            "empty (2,0) and 0-d": (call, (o(2, 0), o()), ()),
            "transposed": (call, (o(4, 3), o(4, 3)), (True, False)),
            "shape mismatch": (call, (o(2, 3), o(4)), ()),
            "int tensors": (call, (ints, int_divisors), ()),
            "bool tensors": (
                call,
                (np.array([True, False, True]), np.array([True, True, False])),
                (),
            ),
            "int and float": (call, (ints, o(6)), ()),
            "float scalar": (scalar(2.5), (o(2, 3),), ()),
            "int scalar": (scalar(2), (o(2, 3),), ()),
            "int tensor, float scalar": (scalar(2.5), (ints,), ()),
            "int tensor, int scalar": (scalar(-3), (ints,), ()),
            "bool tensor, bool scalar": (scalar(True), (np.array([True, False]),), ()),
            "int32 and int64 0-d": (call, (ints.astype(np.int32), np.array(2)), ()),
            "float32 and float64 0-d": (call, (o(3).astype(np.float32), o()), ()),
        }
        for label, (fn, inputs, tr) in fam.items():
            cases.append(Case(f"{name}-{label}", fn, inputs, transpose=tr))
    return cases


REDUCTIONS = {
    # op: whether it takes a tuple of dims
    "sum": True,
    "mean": True,
    "nansum": True,
    "nanmean": True,
    "amax": True,
    "amin": True,
    "logsumexp": True,
    "std": True,
    "var": True,
    "prod": False,
    "max": False,
    "min": False,
    "argmax": False,
    "argmin": False,
    "all": True,
    "any": True,
    "count_nonzero": True,
    "median": False,
}
# ops that need a dim (no full reduction)
_NEEDS_DIM = {"logsumexp"}
# ops without keepdim
_NO_KEEPDIM = {"count_nonzero"}


def _reduction_cases() -> list[Case]:
    cases = []
    for name, tuples in REDUCTIONS.items():
        rng = np.random.default_rng(_seed(name))
        x = _rand(rng, 3, 4)

        def red(*args: Any, _n: str = name, **kwargs: Any) -> Callable[..., Any]:
            return lambda t, a: getattr(t, _n)(a, *args, **kwargs)

        fam: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
            "dim 1": (red(1), (x,)),
            "dim -1": (red(-1), (x,)),
            "dim=0 keyword": (red(dim=0), (x,)),
            "0-d dim 0": (red(0), (_rand(rng),)),
            "0-d dim -1": (red(-1), (_rand(rng),)),
            "empty dim 1": (red(1), (np.zeros((0, 3)),)),
            "empty dim 0": (red(0), (np.zeros((0, 3)),)),
            "transposed dim 0": (red(0), (_rand(rng, 4, 3),)),
            "dim out of range": (red(2), (x,)),
            "int64 dim 0": (red(0), (np.array([[1, -2, 3], [4, 5, -6]]),)),
            "bool dim 0": (red(0), (np.array([[True, False], [True, True]]),)),
        }
        if name not in _NEEDS_DIM:
            fam["full"] = (red(), (x,))
            fam["0-d full"] = (red(), (_rand(rng),))
            fam["empty full"] = (red(), (np.zeros((0,)),))
            fam["empty (2,0) full"] = (red(), (np.zeros((2, 0)),))
            fam["int64 full"] = (red(), (np.array([[1, -2, 3], [4, 5, -6]]),))
        if name not in _NO_KEEPDIM:
            fam["dim 1 keepdim"] = (red(1, keepdim=True), (x,))
            fam["dim -2 keepdim keyword"] = (red(dim=-2, keepdim=True), (x,))
        if tuples:
            fam["dims (0, 1)"] = (red((0, 1)), (x,))
            fam["dims [-1, 0] keepdim"] = (red([-1, 0], keepdim=name not in _NO_KEEPDIM), (x,))
            fam["dims repeated"] = (red((1, -1)), (x,))
            fam["dims ()"] = (red(()), (x,))
        transposed = {"transposed dim 0"}
        for label, (fn, inputs) in fam.items():
            cases.append(Case(f"{name}-{label}", fn, inputs, transpose=(label in transposed,)))
    return cases


def _edge_cases() -> list[Case]:
    """Type promotion with Python scalars, integer division signs, empty and 0-d edges."""
    ints = np.array([-7, 7, -7, 7, 0])
    divs = np.array([2, 2, -2, -2, 3])
    return [
        Case("promote-int tensor * 2.5", lambda t, a: a * 2.5, (ints,)),
        Case("promote-int / int", lambda t, a, b: a / b, (ints, divs)),
        Case("promote-int // int", lambda t, a, b: a // b, (ints, divs)),
        Case("promote-int % int", lambda t, a, b: a % b, (ints, divs)),
        Case("promote-int % negative scalar", lambda t, a: a % -3, (ints,)),
        Case("promote-float % negative scalar", lambda t, a: a % -1.5, (_f(ints),)),
        Case("promote-int // 0", lambda t, a: a // 0, (ints,)),
        Case("promote-float // 0", lambda t, a: a // 0, (_f(ints),)),
        Case("promote-bool + bool", lambda t, a, b: a + b, (_b(1, 0, 1), _b(1, 1, 0))),
        Case("promote-bool * 2", lambda t, a: a * 2, (_b(1, 0, 1),)),
        Case("promote-bool - bool", lambda t, a, b: a - b, (_b(1, 0), _b(1, 1))),
        Case("promote-bool tensor + 1.5", lambda t, a: a + 1.5, (_b(1, 0),)),
        Case("promote-int ** 2", lambda t, a: a**2, (ints,)),
        Case("promote-int ** -1", lambda t, a: a**-1, (ints,)),
        Case("promote-int ** 0.5", lambda t, a: a**0.5, (np.array([1, 4, 9]),)),
        Case("promote-2 ** int", lambda t, a: 2**a, (np.array([0, 1, 5]),)),
        Case("promote-int32 + int64 scalar", lambda t, a: a + 2**40, (ints.astype(np.int32),)),
        Case("promote-uint8 - 2", lambda t, a: a - 2, (np.array([1, 200], np.uint8),)),
        Case("promote-int8 * 2", lambda t, a: a * 2, (np.array([100, -100], np.int8),)),
        Case("promote-int32 0-d + int64", lambda t, a, b: a + b, (np.array(3, np.int32), ints)),
        Case("promote-float32 + float64 0-d", lambda t, a, b: a + b, (_rand(_r(), 3).astype(np.float32), np.array(2.0))),
        Case("promote-int + float 0-d", lambda t, a, b: a + b, (ints, np.array(0.5))),
        Case("promote-true_divide ints", lambda t, a, b: t.true_divide(a, b), (ints, divs)),
        Case("promote-div floor ints", lambda t, a, b: t.div(a, b, rounding_mode="floor"), (ints, divs)),
        Case("promote-div trunc floats", lambda t, a, b: t.div(a, b, rounding_mode="trunc"), (_f(ints), _f(divs))),
        Case("promote-fmod signs", lambda t, a, b: t.fmod(a, b), (ints, divs)),
        Case("promote-remainder float signs", lambda t, a: t.remainder(a, -2.5), (_f(ints),)),
        Case("promote-add int alpha float", lambda t, a, b: t.add(a, b, alpha=0.5), (ints, divs)),
        Case("promote-add float alpha", lambda t, a, b: t.add(a, b, alpha=2.5), (_rand(_r(), 3), _rand(_r(), 3))),
        Case("promote-where int and float scalar", lambda t, c, a: t.where(c, a, 0.5), (_b(1, 0, 1), np.array([1, 2, 3]))),
        Case("promote-clamp int by float", lambda t, a: t.clamp(a, min=0.5), (ints,)),
        Case("promote-int tensor sum", lambda t, a: a.sum(), (ints.astype(np.int32),)),
        Case("promote-bool sum", lambda t, a: a.sum(), (_b(1, 1, 0),)),
        Case("promote-int mean", lambda t, a: a.mean(), (ints,)),
        Case("promote-int mean dtype", lambda t, a: a.mean(dtype=t.float64), (ints,)),
        Case("promote-sum dtype", lambda t, a: a.sum(dtype=t.float64), (_rand(_r(), 3).astype(np.float32),)),
        Case("promote-int cumsum", lambda t, a: a.cumsum(0), (ints.astype(np.int32),)),
        Case("promote-int prod", lambda t, a: a.prod(), (np.array([1, 2, 3], np.int16),)),
        Case("empty-sum", lambda t, a: a.sum(), (np.zeros(0),)),
        Case("empty-prod", lambda t, a: a.prod(), (np.zeros(0),)),
        Case("empty-mean", lambda t, a: a.mean(), (np.zeros(0),)),
        Case("empty-max", lambda t, a: a.max(), (np.zeros(0),)),
        Case("empty-min dim", lambda t, a: a.min(0), (np.zeros((0, 2)),)),
        Case("empty-argmax", lambda t, a: a.argmax(), (np.zeros(0),)),
        Case("empty-amax dim 1", lambda t, a: a.amax(1), (np.zeros((0, 2)),)),
        Case("empty-std", lambda t, a: a.std(), (np.zeros(0),), grad=False),
        Case("empty-var dim", lambda t, a: a.var(0), (np.zeros((0, 2)),), grad=False),
        Case("empty-logsumexp", lambda t, a: t.logsumexp(a, 0), (np.zeros(0),)),
        Case("empty-softmax", lambda t, a: t.softmax(a, 0), (np.zeros(0),)),
        Case("empty-cumsum", lambda t, a: t.cumsum(a, 0), (np.zeros(0),)),
        Case("empty-matmul", lambda t, a, b: a @ b, (np.zeros((2, 0)), np.zeros((0, 3)))),
        Case("empty-cat", lambda t, a, b: t.cat([a, b]), (np.zeros((0, 3)), _rand(_r(), 2, 3))),
        Case("0-d-sum dim 0", lambda t, a: a.sum(0), (np.array(2.0),)),
        Case("0-d-softmax", lambda t, a: t.softmax(a, 0), (np.array(2.0),)),
        Case("0-d-cumsum", lambda t, a: t.cumsum(a, 0), (np.array(2.0),)),
        Case("0-d-unsqueeze", lambda t, a: a.unsqueeze(0), (np.array(2.0),)),
        Case("0-d-squeeze", lambda t, a: a.squeeze(), (np.array(2.0),)),
        Case("0-d-flip", lambda t, a: a.flip(0), (np.array(2.0),)),
        Case("0-d-reshape", lambda t, a: a.reshape(1, 1), (np.array(2.0),)),
        Case("0-d-t", lambda t, a: a.t(), (np.array(2.0),)),
        Case("0-d-mul", lambda t, a, b: a * b, (np.array(2.0), np.array(3.0))),
        Case("0-d-sort", lambda t, a: t.sort(a), (np.array(2.0),)),
        Case("0-d-topk", lambda t, a: t.topk(a, 1), (np.array(2.0),)),
        Case("0-d-argmax dim", lambda t, a: a.argmax(0), (np.array(2.0),)),
        Case("0-d-max dim", lambda t, a: a.max(0), (np.array(2.0),)),
        Case("0-d-gather", lambda t, a: t.gather(a, 0, t.tensor(0)), (np.array(2.0),)),
        Case("0-d-index_select", lambda t, a: t.index_select(a, 0, t.tensor([0])), (np.array(2.0),)),
    ]  # fmt: skip


def _signature_cases() -> list[Case]:
    """Keyword names, positional forms, aliases and defaults as PyTorch spells them."""
    rng = np.random.default_rng(7)
    x, y = _rand(rng, 2, 3), _rand(rng, 2, 3)
    return [
        Case("sig-add input/other keywords", lambda t, a, b: t.add(input=a, other=b), (x, y)),
        Case("sig-add alpha", lambda t, a, b: t.add(a, b, alpha=2), (x, y)),
        Case("sig-sub alpha keyword", lambda t, a, b: t.sub(a, other=b, alpha=0.5), (x, y)),
        Case("sig-sum axis", lambda t, a: t.sum(a, axis=1), (x,)),
        Case("sig-sum keepdims", lambda t, a: a.sum(0, keepdims=True), (x,)),
        Case("sig-mean axis keepdims", lambda t, a: t.mean(a, axis=-1, keepdims=True), (x,)),
        Case("sig-mean dim None keepdim", lambda t, a: t.mean(a, dim=None, keepdim=True), (x,)),
        Case("sig-sum dim None keepdim", lambda t, a: t.sum(a, None, True), (x,)),
        Case("sig-amax dim None keepdim", lambda t, a: t.amax(a, dim=(), keepdim=True), (x,)),
        Case("sig-max axis", lambda t, a: t.max(a, axis=1), (x,)),
        Case("sig-max other", lambda t, a, b: t.max(a, b), (x, y)),
        Case("sig-max values/indices", lambda t, a: tuple(t.max(a, dim=1)), (x,)),
        Case("sig-softmax axis", lambda t, a: t.softmax(a, axis=0), (x,)),
        Case("sig-softmax dtype", lambda t, a: t.softmax(a, -1, dtype=t.float64), (x,)),
        Case("sig-cat axis", lambda t, a, b: t.cat([a, b], axis=1), (x, y)),
        Case("sig-cat dim keyword", lambda t, a, b: t.cat(tensors=(a, b), dim=-1), (x, y)),
        Case("sig-stack dim", lambda t, a, b: t.stack([a, b], dim=-1), (x, y)),
        Case("sig-transpose keywords", lambda t, a: t.transpose(a, dim0=0, dim1=1), (x,)),
        Case("sig-permute dims keyword", lambda t, a: a.permute(dims=(1, 0)), (x,)),
        Case("sig-permute tuple", lambda t, a: a.permute((1, 0)), (x,)),
        Case("sig-permute function", lambda t, a: t.permute(a, (1, 0)), (x,)),
        Case("sig-reshape tuple", lambda t, a: a.reshape((3, 2)), (x,)),
        Case("sig-reshape shape keyword", lambda t, a: a.reshape(shape=(3, 2)), (x,)),
        Case("sig-reshape function", lambda t, a: t.reshape(a, (-1,)), (x,)),
        Case("sig-view list", lambda t, a: a.view([6]), (x,)),
        Case("sig-view size keyword", lambda t, a: a.view(size=(3, 2)), (x,)),
        Case("sig-expand tuple", lambda t, a: a.expand((2, 2, 3)), (x,)),
        Case("sig-expand size keyword", lambda t, a: a.expand(size=(2, 2, 3)), (x,)),
        Case("sig-repeat tuple", lambda t, a: a.repeat((1, 2)), (x,)),
        Case("sig-squeeze dims tuple", lambda t, a: a.unsqueeze(0).squeeze((0, 1)), (x,)),
        Case("sig-flatten keywords", lambda t, a: t.flatten(a, start_dim=0, end_dim=-1), (x,)),
        Case("sig-clamp min/max tensors", lambda t, a, b: t.clamp(a, min=b), (x, y)),
        Case("sig-clamp positional", lambda t, a: t.clamp(a, -0.5, 0.5), (x,)),
        Case("sig-clip", lambda t, a: t.clip(a, max=0.5), (x,)),
        Case("sig-where keywords", lambda t, c, a, b: t.where(condition=c > 0, input=a, other=b), (x, x, y)),
        Case("sig-where one argument", lambda t, c: t.where(c > 0), (x,)),
        Case("sig-where method", lambda t, a, b: a.where(a > 0, b), (x, y)),
        Case("sig-std unbiased False", lambda t, a: t.std(a, 1, unbiased=False), (x,)),
        Case("sig-std correction", lambda t, a: t.std(a, dim=1, correction=0, keepdim=True), (x,)),
        Case("sig-var positional", lambda t, a: t.var(a, 1, True, True), (x,)),
        Case("sig-norm p dim", lambda t, a: t.norm(a, p=1, dim=1), (x,)),
        Case("sig-norm fro dims", lambda t, a: t.norm(a, dim=(0, 1)), (x,)),
        Case("sig-round decimals", lambda t, a: t.round(a, decimals=2), (x,)),
        Case("sig-topk keywords", lambda t, a: tuple(t.topk(a, k=2, dim=1, largest=False)), (x,)),
        Case("sig-sort descending stable", lambda t, a: tuple(t.sort(a, dim=0, descending=True, stable=True)), (x,)),
        Case("sig-argsort keyword", lambda t, a: t.argsort(a, dim=1, descending=True), (x,)),
        Case("sig-gather keywords", lambda t, a: t.gather(a, dim=1, index=t.tensor([[0], [2]])), (x,)),
        Case("sig-cumsum dim keyword", lambda t, a: t.cumsum(a, dim=-1), (x,)),
        Case("sig-cumsum dtype", lambda t, a: t.cumsum(a, 0, dtype=t.float64), (x,)),
        Case("sig-repeat_interleave repeats only", lambda t: t.repeat_interleave(t.tensor([2, 1])), ()),
        Case("sig-ones size keyword", lambda t: t.ones(size=(2, 3)), ()),
        Case("sig-zeros tuple", lambda t: t.zeros((2, 3), dtype=t.int64), ()),
        Case("sig-full fill int", lambda t: t.full((2,), 3), ()),
        Case("sig-arange float", lambda t: t.arange(0, 1, 0.25), ()),
        Case("sig-arange end keyword", lambda t: t.arange(end=4), ()),
        Case("sig-linspace steps", lambda t: t.linspace(0, 1, steps=5), ()),
        Case("sig-eye n m", lambda t: t.eye(2, 3), ()),
        Case("sig-tensor dtype names", lambda t: t.tensor([1, 2], dtype=t.float), ()),
        Case("sig-to dtype", lambda t, a: a.to(t.float64), (x,)),
        Case("sig-to dtype keyword", lambda t, a: a.to(dtype=t.int32), (x,)),
        Case("sig-type_as", lambda t, a: a.type_as(t.tensor([1])), (x,)),
        Case("sig-matmul out", lambda t, a, b: t.matmul(a, b.t(), out=t.zeros(0, dtype=a.dtype)), (x, y), grad=False),
        Case("sig-out requires grad", lambda t, a, b: t.add(a, b, out=t.zeros(2, 3)), (x, y)),
        Case("sig-dim out of range", lambda t, a: a.sum(5), (x,)),
        Case("sig-transpose dim out of range", lambda t, a: a.transpose(0, 2), (x,)),
        Case("sig-dims repeated", lambda t, a: a.sum((0, 0)), (x,)),
        Case("sig-cat empty list", lambda t: t.cat([]), ()),
        Case("sig-int softmax", lambda t: t.softmax(t.tensor([1, 2]), 0), ()),
        Case("sig-bool neg", lambda t: -t.tensor([True]), ()),
        Case("sig-int std", lambda t: t.tensor([1, 2]).std(), ()),
        Case("sig-float bitwise", lambda t, a, b: a & b, (x, y)),
        Case("sig-int negative power", lambda t: t.tensor([1, 2]) ** -1, ()),
        Case("sig-shape mismatch", lambda t, a: a + t.ones(4), (x,)),
        Case("sig-mm shapes", lambda t, a, b: t.mm(a, b), (x, y)),
        Case("sig-gather out of bounds", lambda t, a: t.gather(a, 1, t.tensor([[0], [3]])), (x,)),
        Case("sig-index out of bounds", lambda t, a: a[5], (x,)),
        Case("sig-negative step", lambda t, a: a[::-1], (x,)),
    ]  # fmt: skip


def _shape_cases() -> list[Case]:
    """Shape, indexing, ordering and product ops: their dims, views and empty inputs."""
    rng = np.random.default_rng(5)
    x, m, e = _rand(rng, 2, 3, 4), _rand(rng, 3, 4), np.zeros((0, 3))
    i = lambda t, *v: t.tensor(list(v))  # noqa: E731
    return [
        Case("shape-view of transposed", lambda t, a: a.view(-1), (m,), transpose=(True,)),
        Case("shape-reshape of transposed", lambda t, a: a.reshape(-1), (m,), transpose=(True,)),
        Case("shape-flatten 0-d", lambda t, a: a.flatten(), (np.array(1.5),)),
        Case("shape-flatten empty", lambda t, a: a.flatten(0, 1), (e,)),
        Case("shape-squeeze non-1 dim", lambda t, a: a.squeeze(1), (x,)),
        Case("shape-squeeze 0-d", lambda t, a: a.squeeze(0), (np.array(1.5),)),
        Case("shape-unsqueeze -1", lambda t, a: a.unsqueeze(-1), (m,)),
        Case("shape-transpose 0-d", lambda t, a: a.transpose(0, -1), (np.array(1.5),)),
        Case("shape-permute negative", lambda t, a: a.permute(-1, 0, 1), (x,)),
        Case("shape-permute repeated", lambda t, a: a.permute(0, 0, 1), (x,)),
        Case("shape-permute too few", lambda t, a: a.permute(0, 1), (x,)),
        Case("shape-expand -1", lambda t, a: a.unsqueeze(0).expand(2, -1, -1), (m,)),
        Case("shape-expand 0-d", lambda t, a: a.expand(3, 2), (np.array(1.5),)),
        Case("shape-expand bad", lambda t, a: a.expand(3, 5), (m,)),
        Case("shape-repeat more dims", lambda t, a: a.repeat(2, 1, 2), (m,)),
        Case("shape-repeat too few", lambda t, a: a.repeat(2), (m,)),
        Case("shape-flip dims", lambda t, a: a.flip(0, -1), (x,)),
        Case("shape-flip list", lambda t, a: t.flip(a, [0, 2]), (x,)),
        Case("shape-roll negative", lambda t, a: t.roll(a, -1, 1), (m,)),
        Case("shape-roll flat", lambda t, a: t.roll(a, 5), (m,)),
        Case("shape-roll dims", lambda t, a: t.roll(a, (1, -2), (0, 1)), (m,)),
        Case("shape-narrow negative start", lambda t, a: a.narrow(1, -2, 2), (m,)),
        Case("shape-narrow too long", lambda t, a: a.narrow(1, 3, 2), (m,)),
        Case("shape-split sections", lambda t, a: a.split([1, 3], 1), (m,)),
        Case("shape-split size", lambda t, a: t.split(a, 3, dim=1), (m,)),
        Case("shape-split empty", lambda t, a: t.split(a, 2), (e,)),
        Case("shape-chunk uneven", lambda t, a: a.chunk(3, 1), (m,)),
        Case("shape-chunk more than size", lambda t, a: t.chunk(a, 6, dim=0), (m,)),
        Case("shape-unbind", lambda t, a: a.unbind(-1), (m,)),
        Case("shape-unbind empty", lambda t, a: a.unbind(0), (e,)),
        Case("shape-stack 0-d", lambda t, a, b: t.stack([a, b]), (np.array(1.0), np.array(2.0))),
        Case("shape-stack empty", lambda t, a, b: t.stack([a, b], 1), (e, e)),
        Case("shape-cat dtypes", lambda t, a: t.cat([a, t.ones(1, 4, dtype=t.float64)]), (m,)),
        Case("shape-cat int and float", lambda t, a: t.cat([t.tensor([[1, 2, 3, 4]]), a]), (m,)),
        Case("shape-cat 0-d", lambda t, a: t.cat([a, a]), (np.array(1.0),)),
        Case("shape-cat mismatch", lambda t, a: t.cat([a, t.ones(2, 3)]), (m,)),
        Case("shape-movedim", lambda t, a: t.movedim(a, (0, -1), (-1, 0)), (x,)),
        Case("shape-tril 3-d", lambda t, a: t.tril(a, -1), (x,)),
        Case("shape-triu wide", lambda t, a: t.triu(a, 2), (m,)),
        Case("shape-diagonal offset", lambda t, a: t.diagonal(a, -1), (m,)),
        Case("shape-diagonal dims", lambda t, a: t.diagonal(a, 1, 2, 0), (x,)),
        Case("shape-diag vector offset", lambda t, a: t.diag(a[0], -1), (m,)),
        Case("shape-trace rectangular", lambda t, a: t.trace(a), (m,)),
        Case("index-gather negative dim", lambda t, a: t.gather(a, -1, t.tensor([[0, 3], [1, 1], [2, 0]])), (m,)),
        Case("index-index_select int32", lambda t, a: t.index_select(a, 1, i(t, 0, 3).int()), (m,)),
        Case("index-index_select 0-d index", lambda t, a: t.index_select(a, 0, t.tensor(1)), (m,)),
        Case("index-take", lambda t, a: t.take(a, t.tensor([[0, 11], [5, 5]])), (m,)),
        Case("index-take out of range", lambda t, a: t.take(a, t.tensor([12])), (m,)),
        Case("index-masked_fill tensor value", lambda t, a: a.masked_fill(a > 0, t.tensor(0.5)), (m,)),
        Case("index-masked_fill broadcast mask", lambda t, a: a.masked_fill(t.tensor([True, False, True, False]), -1.0), (m,)),
        Case("index-getitem bool", lambda t, a: a[a > 0], (m,)),
        Case("index-getitem list", lambda t, a: a[[0, 2, 2]], (m,)),
        Case("index-getitem tensors", lambda t, a: a[t.tensor([0, 2]), t.tensor([1, 3])], (m,)),
        Case("index-getitem None ellipsis", lambda t, a: a[None, ..., 1], (x,)),
        Case("index-getitem negative", lambda t, a: a[-1, -2:], (m,)),
        Case("index-getitem empty slice", lambda t, a: a[2:1], (m,)),
        Case("index-scatter_add", lambda t, a, s: t.scatter_add(a, 1, t.tensor([[0, 0], [1, 3], [2, 2]]), s), (m, _rand(rng, 3, 2))),
        Case("index-index_add alpha", lambda t, a, s: t.index_add(a, 0, t.tensor([0, 0]), s, alpha=2), (m, _rand(rng, 2, 4))),
        Case("order-sort stable duplicates", lambda t, a: tuple(t.sort(a, stable=True)), (np.array([2.0, 1.0, 2.0, 1.0, 0.0]),)),
        Case("order-sort nan", lambda t, a: tuple(t.sort(a, descending=True)), (np.array([2.0, np.nan, -1.0]),), grad=False),
        Case("order-topk 0", lambda t, a: tuple(t.topk(a, 0)), (m,)),
        Case("order-topk too large", lambda t, a: t.topk(a, 5), (m,)),
        Case("order-kthvalue keepdim", lambda t, a: tuple(t.kthvalue(a, 2, 0, True)), (m,)),
        Case("order-argsort stable", lambda t, a: t.argsort(a, stable=True), (np.array([1.0, 1.0, 0.0]),)),
        Case("order-nonzero empty", lambda t, a: t.nonzero(a), (e,)),
        Case("order-nonzero as_tuple", lambda t, a: t.nonzero(a > 0, as_tuple=True), (m,)),
        Case("order-cummax empty", lambda t, a: tuple(t.cummax(a, 0)), (e,)),
        Case("order-cumprod zeros", lambda t, a: t.cumprod(a, 0), (np.array([2.0, 0.0, 3.0, 0.0]),)),
        Case("prod-matmul 1-d 1-d", lambda t, a, b: t.matmul(a, b), (m[0], m[1])),
        Case("prod-matmul 1-d 3-d", lambda t, a, b: t.matmul(a, b), (m[:, 0], x.transpose(0, 2, 1).copy())),
        Case("prod-matmul 3-d 1-d", lambda t, a, b: a @ b, (x, m[0])),
        Case("prod-matmul broadcast batch", lambda t, a, b: a @ b, (x[:1], m)),
        Case("prod-matmul 0-d", lambda t, a, b: a @ b, (np.array(1.0), m)),
        Case("prod-mm wrong ndim", lambda t, a, b: t.mm(a, b), (m[0], m)),
        Case("prod-bmm empty batch", lambda t, a, b: t.bmm(a, b), (np.zeros((0, 2, 3)), np.zeros((0, 3, 4)))),
        Case("prod-outer", lambda t, a, b: t.outer(a, b), (m[0], m[1, :2])),
        Case("prod-kron", lambda t, a, b: t.kron(a, b), (m[:2, :2], m[:1])),
        Case("prod-tensordot int", lambda t, a, b: t.tensordot(a, b, 1), (m, m.T.copy())),
        Case("prod-tensordot lists", lambda t, a, b: t.tensordot(a, b, dims=([1, 2], [0, 1])), (x, m)),
        Case("prod-einsum trace", lambda t, a: t.einsum("ii", a[:, :3]), (m,)),
        Case("prod-einsum batch", lambda t, a, b: t.einsum("bij,jk->bik", a, b), (x, m[:, :2].T.copy())),
        Case("prod-einsum spaces ellipsis", lambda t, a: t.einsum("... i j -> ... j i", a), (x,)),
        Case("prod-cross dim None", lambda t, a, b: t.cross(a, b), (m[:3], m[:3, ::-1].copy())),
        Case("prod-dot mismatch dtype", lambda t, a: t.dot(a, t.tensor([1, 2, 3, 4])), (m[0],)),
        Case("act-softmax negative dim", lambda t, a: t.softmax(a, -2), (x,)),
        Case("act-log_softmax empty", lambda t, a: t.log_softmax(a, 1), (e,)),
        Case("act-layer_norm", lambda t, a, w: t.nn.functional.layer_norm(a, (4,), w), (x, _rand(rng, 4))),
        Case("act-linear no bias 1-d", lambda t, a, w: t.nn.functional.linear(a, w), (m[0], m)),
        Case("act-gelu 0-d", lambda t, a: t.nn.functional.gelu(a), (np.array(0.5),)),
        Case("new-diff", lambda t, a: t.diff(a, dim=0), (m,)),
        Case("new-hstack", lambda t, a, b: t.hstack([a, b]), (m, m)),
        Case("new-addcmul_", lambda t, a, b: a.clone().addcmul_(a, b, value=0.1), (m, m)),
        Case("new-addcdiv", lambda t, a, b: t.addcdiv(a, a, b, value=-0.5), (m, np.abs(m) + 1)),
        Case("new-rot90", lambda t, a: t.rot90(a, 1, [1, 2]), (x,)),
        Case("new-unflatten", lambda t, a: a.unflatten(-1, (2, 2)), (x,)),
        Case("new-select negative", lambda t, a: a.select(-1, -1), (x,)),
        Case("new-searchsorted", lambda t: t.searchsorted(t.tensor([1.0, 2.0, 3.0]), t.tensor([2.0, 0.5])), ()),
        Case("new-isin", lambda t: t.isin(t.tensor([1, 2, 3]), t.tensor([2])), ()),
        Case("new-new_zeros", lambda t, a: a.new_zeros(2, 3), (m,)),
        Case("new-new_ones list", lambda t, a: a.new_ones([2]), (m,)),
        Case("new-expand_as", lambda t, a: a[:1].expand_as(a), (m,)),
        Case("new-float_power", lambda t, a: t.float_power(a.abs(), 1.5), (m,)),
        Case("new-atleast_2d", lambda t, a: t.atleast_2d(a), (np.array(2.0),)),
        Case("new-absolute_", lambda t, a: a.clone().absolute_(), (m,)),
        Case("new-swapaxes", lambda t, a: a.swapaxes(0, 2), (x,)),
    ]  # fmt: skip


def _f(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


def _b(*bits: int) -> np.ndarray:
    return np.array(bits, dtype=bool)


def _r() -> np.random.Generator:
    return np.random.default_rng(11)


CASES = (
    _unary_cases()
    + _binary_cases()
    + _reduction_cases()
    + _edge_cases()
    + _signature_cases()
    + _shape_cases()
)

# Differences kept on purpose, each with its reason. Strict: a fixed one fails here.
XFAIL: dict[str, str] = {}
XFAIL.update(
    {
        "logsumexp-dims ()": "torch 2.13's logsumexp(dim=()) raises an internal out-shape "
        "error; the engine reduces every dim, as sum(dim=()) does in both",
        "std-dims ()": "torch 2.13's std(dim=()) forward reduces every dim but its backward "
        "divides by a per-element count (inf grads); the engine's grads are its forward's",
        "var-dims ()": "torch 2.13's var(dim=()) forward reduces every dim but its backward "
        "divides by a per-element count (inf grads); the engine's grads are its forward's",
        "sig-where one argument": "where(condition) is nonzero(condition, as_tuple=True), a "
        "call with another results count than where's registration: call nonzero",
    }
)


# -- running a case on both sides ----------------------------------------------------------


def _make(module: Any, arr: np.ndarray, dtype: Any, transpose: bool, grad: bool) -> Any:
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        a = a.astype(dtype)
    if transpose:
        a = np.ascontiguousarray(a.T)  # its transpose is the sample: a non-contiguous view
    if module is engine:
        t = engine.tensor(a)
    else:
        t = torch.from_numpy(a.copy())
    leaf = grad and a.dtype.kind == "f"
    if leaf:
        t.requires_grad_(True)
    return (t.t() if a.ndim == 2 else t.permute(*reversed(range(a.ndim)))) if transpose else t, (
        t if leaf else None
    )


def _run(module: Any, case: Case, dtype: Any) -> tuple[Any, list[Any], BaseException | None]:
    made = [_make(module, a, dtype, _t(case, k), case.grad) for k, a in enumerate(case.inputs)]
    args = [m[0] for m in made]
    leaves = [m[1] for m in made]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return case.call(module, *args), leaves, None
    except Exception as exc:  # compared with torch's below
        return None, leaves, exc


def _tensors(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [r for item in result for r in _tensors(item)]
    return [result]


def _numpy(x: Any) -> Any:
    if isinstance(x, engine.Tensor):
        return x.data
    if isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True)
    return x


def _dtype_name(x: Any) -> str:
    if isinstance(x, engine.Tensor):
        return str(x.dtype)
    return str(x.dtype).removeprefix("torch.")


def _tol(t: Any) -> float | None:
    """The oracle's tolerance, 1e-3 for float16/bfloat16 (torch computes them in float32)."""
    if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
        return None
    return None if np.dtype(_numpy(t).dtype) in TOLERANCES else 1e-3


def check(case: Case, dtype: str) -> None:
    dt = np.dtype(dtype)
    mine, my_leaves, my_exc = _run(engine, case, dt)
    theirs, their_leaves, their_exc = _run(torch, case, dt)
    if their_exc is not None:
        assert my_exc is not None, f"torch raised {their_exc!r}, the engine returned {mine!r}"
        assert isinstance(my_exc, type(their_exc)), (
            f"engine raised {type(my_exc).__name__}, torch {type(their_exc).__name__}: {their_exc}"
        )
        if type(their_exc) is not TypeError:  # TypeError: torch's parser lists overloads
            assert_values(my_exc, their_exc)
        return
    if my_exc is not None:
        raise AssertionError(f"the engine raised, torch did not: {my_exc!r}") from my_exc
    outs, touts = _tensors(mine), _tensors(theirs)
    assert len(outs) == len(touts), f"{len(outs)} results, torch {len(touts)}"
    for k, (o, to) in enumerate(zip(outs, touts)):
        assert_values(o, to, rtol=_tol(to), atol=_tol(to), path=f"result {k}", zero_signs=True)
    if not case.grad:
        return
    pairs = [
        (o, to)
        for o, to in zip(outs, touts)
        if isinstance(to, torch.Tensor) and to.requires_grad and to.dtype.is_floating_point
    ]
    for o, _ in pairs:
        assert isinstance(o, engine.Tensor) and o.requires_grad, "torch's result requires grad"
    if not pairs or not any(leaf is not None for leaf in their_leaves):
        return
    rng = np.random.default_rng(_seed(case.id + dtype))
    grads = [rng.uniform(-1, 1, to.shape).astype(_numpy(to).dtype) for _, to in pairs]
    try:
        torch.autograd.backward([to for _, to in pairs], [torch.from_numpy(g) for g in grads])
    except RuntimeError as exc:  # no derivative in PyTorch (floor_divide): none here either
        with pytest.raises(RuntimeError) as info:
            engine.backward([o for o, _ in pairs], [engine.tensor(g) for g in grads])
        assert str(info.value) == str(exc)
        return
    engine.backward([o for o, _ in pairs], [engine.tensor(g) for g in grads])
    for k, (leaf, tleaf) in enumerate(zip(my_leaves, their_leaves)):
        if tleaf is None:
            continue
        if tleaf.grad is None:
            assert leaf.grad is None, f"input {k}: grad {leaf.grad!r}, torch None"
            continue
        assert leaf.grad is not None, f"input {k}: grad None, torch {tleaf.grad}"
        assert_values(
            leaf.grad,
            tleaf.grad,
            rtol=_tol(tleaf.grad),
            atol=_tol(tleaf.grad),
            path=f"input {k} grad",
        )


def _params() -> list[Any]:
    out = []
    for c in CASES:
        marks = []
        if c.id in XFAIL:
            marks.append(pytest.mark.xfail(reason=XFAIL[c.id], strict=True))
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", _params())
def test_opinfo_sample(case: Case, dtype: str) -> None:
    check(case, dtype)
