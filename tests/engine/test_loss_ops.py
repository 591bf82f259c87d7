"""Losses against ``torch.nn.functional``: the recorded graph (fused nodes where
PyTorch fuses, composites where it composes), values and gradients at the edges
(clamped logs, extreme logits, ignored targets), double backward, and PyTorch's
error messages. Every sample is also run by the op database."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import (
    BadArgumentsError,
    DtypeMismatchError,
    GraphFreedError,
    IndexOutOfRangeError,
    ShapeMismatchError,
)
from tests.engine.torch_oracle import assert_same, require_torch

torch = require_torch()
F = torch.nn.functional

RNG = np.random.default_rng(5)
LOGITS = RNG.uniform(-3, 3, (6, 4))
LABELS = np.array([0, 3, 1, 2, 3, 0])
PROBS = RNG.uniform(0.05, 0.95, (6, 4))
SOFT = RNG.uniform(0, 1, (6, 4))


@contextmanager
def raises(error: type, fragment: str) -> Iterator[None]:
    """``pytest.raises`` with a substring check on the message."""
    with pytest.raises(error) as info:
        yield
    assert fragment in str(info.value), str(info.value)


def leaf(lib: Any, data: np.ndarray, grad: bool = True, dtype: str = "float64") -> Any:
    grad = grad and data.dtype.kind == "f"
    if lib is E:
        return E.tensor(data, dtype=dtype if data.dtype.kind == "f" else None, requires_grad=grad)
    t = torch.from_numpy(data.copy())
    if data.dtype.kind == "f":
        t = t.to(getattr(torch, dtype))
    return t.requires_grad_(grad)


def fn(lib: Any, name: str) -> Any:
    return getattr(E, name) if lib is E else getattr(F, name)


CASES = {
    "mse": lambda lib, d: fn(lib, "mse_loss")(leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, dtype=d)),
    "mse none": lambda lib, d: fn(lib, "mse_loss")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, False, d), reduction="none"
    ),
    "l1": lambda lib, d: fn(lib, "l1_loss")(leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, dtype=d)),
    "l1 sum": lambda lib, d: fn(lib, "l1_loss")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, False, d), reduction="sum"
    ),
    "smooth_l1": lambda lib, d: fn(lib, "smooth_l1_loss")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, dtype=d)
    ),
    "smooth_l1 beta": lambda lib, d: fn(lib, "smooth_l1_loss")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, False, d), beta=0.7, reduction="none"
    ),
    "smooth_l1 beta 0": lambda lib, d: fn(lib, "smooth_l1_loss")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, False, d), beta=0.0
    ),
    "cross_entropy": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, LABELS, False)
    ),
    "cross_entropy sum": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, LABELS, False), reduction="sum"
    ),
    "cross_entropy none": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, LABELS, False), reduction="none"
    ),
    "cross_entropy 1-D": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS[0], dtype=d), leaf(lib, np.array(2), False)
    ),
    "cross_entropy weight ignore": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS, dtype=d),
        leaf(lib, np.array([0, -100, 1, 2, 3, -100]), False),
        weight=leaf(lib, np.array([0.5, 1.0, 2.0, 0.1]), False, d),
    ),
    "cross_entropy ignore_index": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, LABELS, False), ignore_index=3
    ),
    "cross_entropy all ignored": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, np.full(6, -100), False)
    ),
    "cross_entropy all ignored sum": lambda lib, d: fn(lib, "cross_entropy")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, np.full(6, -100), False), reduction="sum"
    ),
    "nll": lambda lib, d: fn(lib, "nll_loss")(
        leaf(lib, np.log(PROBS), dtype=d), leaf(lib, LABELS, False)
    ),
    "nll none ignore": lambda lib, d: fn(lib, "nll_loss")(
        leaf(lib, np.log(PROBS), dtype=d),
        leaf(lib, np.array([0, -100, 1, 2, 3, 0]), False),
        reduction="none",
    ),
    "nll -inf at an ignored row": lambda lib, d: fn(lib, "nll_loss")(
        leaf(lib, np.where(np.eye(6, 4, dtype=bool), -np.inf, np.log(PROBS)), dtype=d),
        leaf(lib, np.array([-100, 1, 2, 0, 3, 0]), False),
        reduction="none",
    ),
    "bce": lambda lib, d: fn(lib, "binary_cross_entropy")(
        leaf(lib, PROBS, dtype=d), leaf(lib, SOFT, dtype=d)
    ),
    "bce weight none": lambda lib, d: fn(lib, "binary_cross_entropy")(
        leaf(lib, PROBS, dtype=d),
        leaf(lib, SOFT, False, d),
        weight=leaf(lib, SOFT[0], False, d),
        reduction="none",
    ),
    "bce clamps at 0 and 1": lambda lib, d: fn(lib, "binary_cross_entropy")(
        leaf(lib, np.array([0.0, 1.0, 0.5, 1.0]), dtype=d),
        leaf(lib, np.array([1.0, 0.0, 0.5, 1.0]), dtype=d),
        reduction="sum",
    ),
    "bce_with_logits": lambda lib, d: fn(lib, "binary_cross_entropy_with_logits")(
        leaf(lib, LOGITS, dtype=d), leaf(lib, SOFT, dtype=d)
    ),
    "bce_with_logits extreme": lambda lib, d: fn(lib, "binary_cross_entropy_with_logits")(
        leaf(lib, np.array([-800.0, -40.0, 0.0, 40.0, 800.0]), dtype=d),
        leaf(lib, np.array([1.0, 0.0, 0.5, 1.0, 0.0]), dtype=d),
        reduction="none",
    ),
    "bce_with_logits pos_weight": lambda lib, d: fn(lib, "binary_cross_entropy_with_logits")(
        leaf(lib, LOGITS, dtype=d),
        leaf(lib, SOFT, dtype=d),
        pos_weight=leaf(lib, np.array([1.0, 2.0, 0.5, 3.0]), False, d),
        weight=leaf(lib, SOFT[:, :1], False, d),
        reduction="sum",
    ),
}


def _leaves(t: Any) -> list[Any]:
    """The graph's leaves that require grad, in a stable order."""
    out, seen, stack = [], set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            variable = getattr(nxt, "variable", None)
            if variable is not None:
                out.append(variable)
            else:
                stack.append(nxt)
    return out


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(name: str, dtype: str) -> None:
    y, ty = CASES[name](E, dtype), CASES[name](torch, dtype)
    assert_same(y, ty)
    xs, txs = _leaves(y), _leaves(ty)
    assert len(xs) == len(txs)
    g = RNG.uniform(-1, 1, tuple(ty.shape)).astype(dtype)
    y.backward(E.tensor(g))
    ty.backward(torch.from_numpy(g))
    for x, tx in zip(sorted(xs, key=lambda t: t.shape), sorted(txs, key=lambda t: tuple(t.shape))):
        assert_same(x.grad, tx.grad, graph=False, rtol=1e-4 if dtype == "float32" else None)


@pytest.mark.parametrize(
    "name",
    [
        "mse",
        "smooth_l1",
        "cross_entropy",
        "cross_entropy weight ignore",
        "nll",
        "bce",
        "bce_with_logits",
        "bce_with_logits pos_weight",
    ],
)
def test_double_backward_matches_torch(name: str) -> None:
    y, ty = CASES[name](E, "float64"), CASES[name](torch, "float64")
    xs = sorted(_leaves(y), key=lambda t: t.shape)
    txs = sorted(_leaves(ty), key=lambda t: tuple(t.shape))
    gs = E.grad(y.sum(), xs, create_graph=True)
    tgs = torch.autograd.grad(ty.sum(), txs, create_graph=True)
    total, ttotal = sum((g * g).sum() for g in gs), sum((g * g).sum() for g in tgs)
    ggs = E.grad(total, xs, allow_unused=True)
    tggs = torch.autograd.grad(ttotal, txs, allow_unused=True)
    for gg, tgg in zip(ggs, tggs):
        if tgg is None:
            assert gg is None or not gg.data.any()
        else:
            assert_same(gg, tgg, graph=False)


def test_graph_structure() -> None:
    x = E.tensor(LOGITS, requires_grad=True)
    loss = E.cross_entropy(x, E.tensor(LABELS))
    assert loss.grad_fn.name == "NllLossBackward0"
    assert [f.name for f, _ in loss.grad_fn.next_functions] == ["LogSoftmaxBackward0"]
    assert E.l1_loss(x, E.tensor(SOFT)).grad_fn.name == "MeanBackward0"
    assert E.l1_loss(x, E.tensor(SOFT), reduction="none").grad_fn.name == "AbsBackward0"


def test_cross_entropy_gradient_is_softmax_minus_onehot() -> None:
    x = E.tensor(LOGITS, requires_grad=True)
    E.cross_entropy(x, E.tensor(LABELS)).backward()
    p = np.exp(LOGITS - LOGITS.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(6), LABELS] -= 1
    np.testing.assert_allclose(x.grad.data, p / 6, rtol=1e-12, atol=1e-15)


def test_second_backward_raises() -> None:
    for name in ("mse", "smooth_l1", "nll", "bce", "bce_with_logits", "cross_entropy"):
        y = CASES[name](E, "float64")
        y.backward()
        with pytest.raises(GraphFreedError):
            y.backward()


def test_mismatched_sizes_warn_and_broadcast() -> None:
    x, tx = leaf(E, LOGITS), leaf(torch, LOGITS)
    t, tt = leaf(E, SOFT[0]), leaf(torch, SOFT[0])
    for name in ("mse_loss", "l1_loss", "smooth_l1_loss"):
        with pytest.warns(UserWarning, match="Using a target size"):
            y = fn(E, name)(x, t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ty = fn(torch, name)(tx, tt)
        assert_same(y, ty)
        y.backward()
        ty.backward()
    assert_same(x.grad, tx.grad, graph=False)
    assert_same(t.grad, tt.grad, graph=False)


def test_result_dtypes() -> None:
    f32 = E.tensor(LOGITS, dtype="float32", requires_grad=True)
    f64 = E.tensor(SOFT, dtype="float64")
    assert E.mse_loss(f32, f64).dtype == np.float64
    assert E.mse_loss(f32, E.tensor(np.ones((6, 4), np.int64))).dtype == np.float32
    # with logits, PyTorch works in place on (1 - target): the target's float dtype wins
    assert E.binary_cross_entropy_with_logits(f32, f64).dtype == np.float64
    logits64, soft32 = E.tensor(LOGITS, dtype="float64"), E.tensor(SOFT, dtype="float32")
    assert E.binary_cross_entropy_with_logits(logits64, soft32).dtype == np.float32


ERRORS = [
    (
        lambda lib: fn(lib, "mse_loss")(leaf(lib, LOGITS), leaf(lib, SOFT), reduction="avg"),
        BadArgumentsError,
    ),
    (
        lambda lib: fn(lib, "cross_entropy")(leaf(lib, LOGITS), leaf(lib, LABELS), reduction="bad"),
        BadArgumentsError,
    ),
    (lambda lib: fn(lib, "mse_loss")(leaf(lib, LOGITS), leaf(lib, SOFT[:5])), ShapeMismatchError),
    (
        lambda lib: fn(lib, "mse_loss")(
            leaf(lib, np.ones(3, np.int64), False), leaf(lib, np.ones(3, np.int64), False)
        ),
        DtypeMismatchError,
    ),
    (
        lambda lib: fn(lib, "smooth_l1_loss")(leaf(lib, LOGITS), leaf(lib, SOFT), beta=-1.0),
        BadArgumentsError,
    ),
    (
        lambda lib: fn(lib, "cross_entropy")(
            leaf(lib, LOGITS), leaf(lib, np.array([0, 4, 1, 2, 3, 0]))
        ),
        IndexOutOfRangeError,
    ),
    (
        lambda lib: fn(lib, "cross_entropy")(
            leaf(lib, LOGITS), leaf(lib, np.array([0, -5, 1, 2, 3, 0]))
        ),
        IndexOutOfRangeError,
    ),
    (
        lambda lib: fn(lib, "cross_entropy")(leaf(lib, LOGITS), leaf(lib, LABELS[:5])),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "cross_entropy")(
            leaf(lib, LOGITS), leaf(lib, LABELS), weight=leaf(lib, np.ones(2), False)
        ),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "cross_entropy")(leaf(lib, np.array(1.0)), leaf(lib, np.array(0))),
        DtypeMismatchError,
    ),
    (
        lambda lib: fn(lib, "nll_loss")(leaf(lib, LOGITS), leaf(lib, LABELS.astype(float), False)),
        DtypeMismatchError,
    ),
    (
        lambda lib: fn(lib, "nll_loss")(leaf(lib, LOGITS), leaf(lib, LABELS > 0, False)),
        DtypeMismatchError,
    ),
    (
        lambda lib: fn(lib, "nll_loss")(leaf(lib, np.array(1.0)), leaf(lib, np.array(0))),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "nll_loss")(leaf(lib, LOGITS), leaf(lib, np.array(1))),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "nll_loss")(leaf(lib, LOGITS), leaf(lib, np.zeros((6, 1), np.int64))),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "nll_loss")(
            leaf(lib, LOGITS, dtype="float32"),
            leaf(lib, LABELS),
            weight=leaf(lib, np.ones(4), False),
        ),
        DtypeMismatchError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy")(leaf(lib, PROBS), leaf(lib, SOFT[0])),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy")(leaf(lib, PROBS * 3), leaf(lib, SOFT)),
        BadArgumentsError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy")(leaf(lib, PROBS), leaf(lib, SOFT * 3)),
        BadArgumentsError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy")(
            leaf(lib, PROBS, dtype="float32"), leaf(lib, SOFT)
        ),
        DtypeMismatchError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy")(
            leaf(lib, PROBS), leaf(lib, SOFT), weight=leaf(lib, np.ones(2), False)
        ),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy_with_logits")(
            leaf(lib, LOGITS), leaf(lib, SOFT[0])
        ),
        ShapeMismatchError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy_with_logits")(
            leaf(lib, LOGITS), leaf(lib, np.ones((6, 4), np.int64))
        ),
        DtypeMismatchError,
    ),
    (
        lambda lib: fn(lib, "binary_cross_entropy_with_logits")(
            leaf(lib, LOGITS), leaf(lib, SOFT), pos_weight=leaf(lib, np.ones(3), False)
        ),
        ShapeMismatchError,
    ),
]


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize(("make", "error"), ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_match_torch(make: Any, error: type) -> None:
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - PyTorch's types vary
        make(torch)
    with pytest.raises(error) as mine:
        make(E)
    assert str(mine.value) == str(theirs.value).split("\n")[0]
