"""Writes into memory that a source shares, or that repeats an element, refused as
PyTorch refuses them (ATen's MemoryOverlap rules), compared with torch case by case:
each case builds the same aliasing on both sides and both must succeed or both raise
the same message."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine
from engine.memory_overlap import FULL, NO, PARTIAL, TOO_HARD, overlap_status


def _outcome(call: Callable[[], Any]) -> str:
    try:
        call()
    except Exception as exc:  # both libraries raise their own classes: compare the message
        return str(exc).split(". Please")[0]
    return "ok"


# each case: lib -> a call to run; ``lib`` is torch or engine, aliasing made by each
CASES: dict[str, Callable[[Any], Callable[[], Any]]] = {
    "masked_select out expanded": lambda t: (
        lambda: t.masked_select(t.ones(6), t.tensor([True, False] * 3), out=t.zeros(1).expand(3))
    ),
    "masked_select out is input": lambda t: (
        lambda y: lambda: t.masked_select(y, t.tensor([True, False] * 3), out=y)
    )(t.ones(6)),
    "gather out is input": lambda t: (lambda s: lambda: t.gather(s, 0, t.tensor([2, 1, 0]), out=s))(
        t.ones(6)
    ),
    "gather out grows into index": lambda t: (
        lambda i: lambda: t.gather(i.clone(), 0, i[1:], out=i[:1])
    )(t.tensor([0, 1, 2])),
    "take out shares the index": lambda t: (lambda i: lambda: t.take(i.clone(), i[1:], out=i[:-1]))(
        t.tensor([2, 1, 0])
    ),
    "index_select out expanded": lambda t: (
        lambda: t.index_select(t.ones(3, 6), 1, t.tensor([0, 1]), out=t.zeros(1, 6).expand(2, 6))
    ),
    "cat out is an empty input": lambda t: (
        lambda x: lambda: t.cat((x, t.ones(4, 6)), dim=0, out=x)
    )(t.zeros(0)),
    "cat out is a slice of an input": lambda t: (
        lambda z: lambda: t.cat((t.ones(4, 6), z), out=z[:2, :])
    )(t.zeros(4, 6)),
    "kthvalue values out is input": lambda t: (
        lambda x: lambda: t.kthvalue(x, 5, out=(x, t.empty((), dtype=t.long)))
    )(t.arange(10.0)),
    "add out is input (allowed)": lambda t: (lambda a: lambda: t.add(a, 1, out=a))(t.ones(6)),
    "add out overlaps input partly": lambda t: (lambda a: lambda: t.add(a[1:4], 1, out=a[0:3]))(
        t.ones(6)
    ),
    "exp out expanded": lambda t: lambda: t.exp(t.ones(3), out=t.zeros(1).expand(3)),
    "bernoulli out expanded": lambda t: (
        lambda: t.bernoulli(t.full((6,), 0.5), out=t.zeros(1).expand(6))
    ),
    "add_ into expanded": lambda t: lambda: t.zeros(1).expand(3).add_(1),
    "copy_ into expanded non-leaf": lambda t: (
        lambda x: lambda: (x * 2).expand(3).copy_(t.ones(3))
    )(t.ones(1, requires_grad=True)),
    "mul_ with partly overlapping source": lambda t: (lambda a: lambda: a[:3].mul_(a[1:4]))(
        t.ones(6)
    ),
    "index_select disjoint out (allowed)": lambda t: (
        lambda z: lambda: t.index_select(z[:1], 1, t.tensor([0]), out=z[1:2, :1])
    )(t.zeros(2, 3)),
}

# an out= that shares memory with an input part-way: PyTorch's reductions and matrix
# products check nothing (their result is whole before it is written), its elementwise,
# scan and sort kernels refuse; each call gets a fresh 4x4 ``m`` and ``L`` (int64)
PARTIAL_OUT: dict[str, Callable[[Any, Any, Any], Any]] = {
    "sum": lambda t, m, L: t.sum(m, 1, out=m[0]),
    "nansum": lambda t, m, L: t.nansum(m, 1, out=m[0]),
    "prod": lambda t, m, L: t.prod(m, 1, out=m[0]),
    "mean": lambda t, m, L: t.mean(m, 1, out=m[0]),
    "logsumexp": lambda t, m, L: t.logsumexp(m, 1, out=m[0]),
    "std": lambda t, m, L: t.std(m, 1, out=m[0]),
    "var": lambda t, m, L: t.var(m, 1, out=m[0]),
    "norm": lambda t, m, L: t.norm(m, dim=1, out=m[0]),
    "vector_norm": lambda t, m, L: t.linalg.vector_norm(m, dim=1, out=m[0]),
    "amax": lambda t, m, L: t.amax(m, 1, out=m[0]),
    "amin": lambda t, m, L: t.amin(m, 1, out=m[0]),
    "max with dim": lambda t, m, L: t.max(m, 1, out=(m[0], t.empty(4, dtype=L))),
    "median": lambda t, m, L: t.median(m, 1, out=(m[0], t.empty(4, dtype=L))),
    "mm": lambda t, m, L: t.mm(m[:2], m, out=m[1:3]),
    "matmul": lambda t, m, L: t.matmul(m[:2], m, out=m[1:3]),
    "mv": lambda t, m, L: t.mv(m, m[0], out=m[1]),
    "dot": lambda t, m, L: t.dot(m[0], m[1], out=m[0, 0]),
    "linalg.cross": lambda t, m, L: t.linalg.cross(m[:, :3], m[:, 1:], out=m[:, :3]),
    "tril": lambda t, m, L: t.tril(m, out=m.T),
    "tensordot": lambda t, m, L: t.tensordot(m, m, 1, out=m.T),
    "matrix_power": lambda t, m, L: t.linalg.matrix_power(m, 2, out=m.T),
    "cummax": lambda t, m, L: t.cummax(m[0], 0, out=(m.view(-1)[1:5], t.empty(4, dtype=L))),
    "cumsum": lambda t, m, L: t.cumsum(m[0], 0, out=m.view(-1)[1:5]),
    "sort": lambda t, m, L: t.sort(m[0], out=(m.view(-1)[1:5], t.empty(4, dtype=L))),
    "addmm": lambda t, m, L: t.addmm(m, m, m, out=m.T),
    "hypot": lambda t, m, L: t.hypot(m[0], m[1], out=m.view(-1)[1:5]),
    "linalg.solve": lambda t, m, L: t.linalg.solve(m + t.eye(4) * 9, m, out=m.T),
}


@pytest.mark.parametrize("case", list(PARTIAL_OUT))
def test_partial_out_overlap_as_torch(case: str, torch: Any) -> None:
    def outcome(lib: Any, long: Any) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's "output was resized" deprecation
            m = lib.arange(1.0, 17.0).reshape(4, 4)
            return _outcome(lambda: PARTIAL_OUT[case](lib, m, long))

    assert outcome(engine, engine.int64) == outcome(torch, torch.long)


@pytest.mark.parametrize("case", list(CASES))
def test_overlap_as_torch(case: str, torch: Any) -> None:
    want = _outcome(CASES[case](torch))
    got = _outcome(CASES[case](engine))
    assert got == want


def test_status_of_views() -> None:
    base = engine.zeros(4, 6)
    assert overlap_status(base, base) == FULL
    assert overlap_status(base, base[:2]) == PARTIAL
    assert overlap_status(base[:2], base[2:]) == NO
    assert overlap_status(base, base.t()) == PARTIAL  # same bytes, other strides
    assert overlap_status(base, engine.zeros(4, 6)) == NO
    assert overlap_status(base[:, :2], base[:, 1:3]) == TOO_HARD  # neither is dense
    assert overlap_status(engine.zeros(0), engine.zeros(0)) == NO


def test_failed_out_write_changes_nothing() -> None:
    y = engine.tensor(np.arange(6.0))
    with pytest.raises(Exception, match="unsupported operation"):
        engine.masked_select(y, engine.tensor([True, False] * 3), out=y)
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and y._version == 0
