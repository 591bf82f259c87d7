"""Indexing against PyTorch: ``x[...]`` records PyTorch's chain of nodes, values and
gradients agree (repeated indices accumulate), errors keep PyTorch's wording; and
gather / index_select / masked_fill details the op database does not reach."""

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

RNG = np.random.default_rng(7)
X = RNG.uniform(-2, 2, (3, 4, 5))
MASK1 = np.array([True, False, True])
MASK2 = X[:, :, 0] > 0


@contextmanager
def raises(error: type, fragment: str) -> Iterator[None]:
    """``pytest.raises`` with a plain substring check (engine errors expose context
    entries as attributes, which trips pytest's ``match=`` on ``__notes__``)."""
    with pytest.raises(error) as info:
        yield
    assert fragment in str(info.value), str(info.value)


def chain(t: Any) -> list[str]:
    """grad_fn names from the result back to the leaf (first input at each step)."""
    out, fn = [], t.grad_fn
    while fn is not None and type(fn).__name__ != "AccumulateGrad":
        out.append(fn.name if isinstance(fn, E.Node) else type(fn).__name__)
        fn = fn.next_functions[0][0]
    return out


def both(index: Any) -> tuple[Any, Any]:
    """The index for each library: numpy arrays become tensors on each side."""

    def conv(v: Any, lib: Any) -> Any:
        if isinstance(v, np.ndarray):
            return E.tensor(v) if lib is E else torch.from_numpy(v.copy())
        if isinstance(v, tuple):
            return tuple(conv(i, lib) for i in v)
        return v

    return conv(index, E), conv(index, torch)


INDICES = {
    "int": 0,
    "negative int": -1,
    "slice": slice(1, 3),
    "full slice alone": slice(None),
    "step": slice(None, None, 2),
    "negative bounds": slice(-3, -1),
    "past the end": slice(2, 100),
    "empty slice": slice(2, 1),
    "None": None,
    "Ellipsis": Ellipsis,
    "True": True,
    "False": False,
    "two ints": (0, 1),
    "three ints": (0, 1, 2),
    "int, slice": (0, slice(1, 3)),
    "full slice, int": (slice(None), 0),
    "Ellipsis, int": (Ellipsis, 0),
    "None, int": (None, 0),
    "int, None": (0, None),
    "two slices": (slice(1, 2), slice(0, 2)),
    "full slices are skipped": (slice(0, 3), slice(1, 2)),
    "negative full-looking slice is not": (slice(-3, None), slice(1, 2)),
    "all full slices": (slice(None), slice(None)),
    "empty tuple": (),
    "Ellipsis, None": (Ellipsis, None),
    "two Ellipses": (Ellipsis, Ellipsis),
    "list": [0, 2, 0],
    "tensor": np.array([0, 2, 0]),
    "2-d tensor": np.array([[0, 1], [2, 2]]),
    "negative indices": [-1, -3],
    "empty list": [],
    "bool list": [True, False, True],
    "mask": MASK1,
    "2-d mask": MASK2,
    "mask, int": (MASK2, 0),
    "int, mask": (0, MASK2[0]),
    "None, mask, None": (None, MASK2, None),
    "two lists": ([0, 1], [1, 2]),
    "full slice, list": (slice(None), [0, 0, 1]),
    "int, list": (0, [1, 2]),
    "separated lists": ([0, 1], slice(None), [1, 2]),
    "slice, list": (slice(1, 3), [1, 2]),
    "None, list": (None, [0, 1]),
    "list, None": ([0, 1], None),
    "list, None, list": ([0, 1], None, [0, 1]),
    "list, int, list": ([0, 1], 0, [0, 1]),
    "int, slice, list": (0, slice(None), [0, 1]),
    "0-d int tensor": np.array(1),
    "0-d bool tensor": np.array(True),
    "True, int": (True, 0),
    "list of lists is a tuple": [[0, 1], [1, 2]],
    "list with a slice is a tuple": [0, slice(None)],
}


@pytest.mark.parametrize("name", list(INDICES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_getitem_matches_torch(name: str, dtype: str) -> None:
    mine_idx, their_idx = both(INDICES[name])
    x = E.tensor(X, dtype=dtype, requires_grad=True)
    tx = torch.tensor(X, dtype=getattr(torch, dtype), requires_grad=True)
    y = x[mine_idx]
    with warnings.catch_warnings():  # PyTorch warns about a list read as a tuple
        warnings.simplefilter("ignore")
        ty = tx[their_idx]
    assert_same(y, ty)
    assert chain(y) == chain(ty)
    g = RNG.uniform(-1, 1, tuple(ty.shape)).astype(dtype)
    y.backward(E.tensor(g))
    ty.backward(torch.from_numpy(g))
    assert_same(x.grad, tx.grad, graph=False)


def test_zero_dim_indexing() -> None:
    z = E.tensor(1.5, requires_grad=True)
    tz = torch.tensor(1.5, requires_grad=True)
    for index in (None, Ellipsis, (), (None,), (Ellipsis, None), True, False):
        assert_same(z[index], tz[index])
        assert chain(z[index]) == chain(tz[index])


ERRORS = [
    (5, IndexOutOfRangeError, "index 5 is out of bounds for dimension 0 with size 3"),
    (-4, IndexOutOfRangeError, "index -4 is out of bounds for dimension 0 with size 3"),
    (
        (slice(None), 4),
        IndexOutOfRangeError,
        "index 4 is out of bounds for dimension 1 with size 4",
    ),
    (
        (None, slice(None), 4),
        IndexOutOfRangeError,
        "index 4 is out of bounds for dimension 2 with size 4",
    ),
    (
        (Ellipsis, None, 7),
        IndexOutOfRangeError,
        "index 7 is out of bounds for dimension 2 with size 5",
    ),
    ([3], IndexOutOfRangeError, "index 3 is out of bounds for dimension 0 with size 3"),
    (
        (slice(None), [4]),
        IndexOutOfRangeError,
        "index 4 is out of bounds for dimension 0 with size 4",
    ),
    (
        ([0], slice(None), [7]),
        IndexOutOfRangeError,
        "index 7 is out of bounds for dimension 1 with size 5",
    ),
    (
        (slice(None), [0], [9]),
        IndexOutOfRangeError,
        "index 9 is out of bounds for dimension 1 with size 5",
    ),
    (np.array([-4]), IndexOutOfRangeError, "index -4 is out of bounds for dimension 0 with size 3"),
    (np.array(5), IndexOutOfRangeError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((0, 0, 0, 0), IndexOutOfRangeError, "too many indices for tensor of dimension 3"),
    ((Ellipsis, 0, 0, 0, 0), IndexOutOfRangeError, "too many indices for tensor of dimension 3"),
    (
        ([0, 1], [0, 1, 2]),
        ShapeMismatchError,
        "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]",
    ),
    (
        np.array([True, False]),
        ShapeMismatchError,
        "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4, 5] at index 0",
    ),
    (
        np.ones((3, 3), bool),
        ShapeMismatchError,
        "The shape of the mask [3, 3] at index 1 does not match the shape of the indexed tensor [3, 4, 5] at index 1",
    ),
    (
        (slice(None), np.ones((4, 4), bool)),
        ShapeMismatchError,
        "The shape of the mask [4, 4] at index 1 does not match the shape of the indexed tensor [3, 4, 5] at index 2",
    ),
    (
        1.0,
        BadArgumentsError,
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got float)",
    ),
    (
        np.array([1.0]),
        BadArgumentsError,
        "tensors used as indices must be long, int, byte or bool tensors",
    ),
    (slice(None, None, -1), BadArgumentsError, "step must be greater than zero"),
    (slice(None, None, 0), BadArgumentsError, "slice step cannot be zero"),
]


@pytest.mark.parametrize(("index", "error", "message"), ERRORS, ids=[m[:40] for _, _, m in ERRORS])
def test_getitem_errors(index: Any, error: type, message: str) -> None:
    mine_idx, their_idx = both(index)
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - the oracle's own type varies
        torch.tensor(X)[their_idx]
    assert str(theirs.value).split("\n")[0] == message
    with pytest.raises(error) as mine:
        E.tensor(X)[mine_idx]
    assert str(mine.value) == message


def test_zero_dim_errors() -> None:
    z = E.tensor(1.0)
    with raises(IndexOutOfRangeError, "invalid index of a 0-dim tensor"):
        z[0]
    with raises(IndexOutOfRangeError, "slice() cannot be applied to a 0-dim tensor"):
        z[:]
    for index in ((0,), [0], E.tensor(0), (None, 0)):
        with raises(IndexOutOfRangeError, "too many indices for tensor of dimension 0"):
            z[index]


def test_basic_indices_are_views_and_rerunnable() -> None:
    x = E.tensor(X, requires_grad=True)
    y = x[1, 1:3]
    assert np.shares_memory(y.data, x.data)
    s = y.sum()
    s.backward()
    s.backward()  # select/slice save no tensors: PyTorch runs it again
    assert x.grad._data[1, 1:3].sum() == pytest.approx(2 * 2 * 5)


@pytest.mark.parametrize(
    "make",
    [
        lambda x, lib: x[[0, 0, 1]],
        lambda x, lib: x[x > 0],
        lambda x, lib: x.gather(1, (E if lib is E else torch).tensor([[0], [1], [2]])),
        lambda x, lib: x.index_select(0, (E if lib is E else torch).tensor([0, 0])),
        lambda x, lib: x.masked_fill(x > 0, 1.0),
    ],
    ids=["index", "mask", "gather", "index_select", "masked_fill"],
)
def test_second_backward_raises_like_torch(make: Any) -> None:
    x = E.tensor(X[:, :, 0], requires_grad=True)
    tx = torch.tensor(X[:, :, 0], requires_grad=True)
    s, ts = make(x, E).sum(), make(tx, torch).sum()
    s.backward()
    ts.backward()
    with pytest.raises(RuntimeError):
        ts.backward()
    with pytest.raises(GraphFreedError):
        s.backward()


@pytest.mark.parametrize(
    "make",
    [
        lambda x, lib: x[[0, 0, 1]],
        lambda x, lib: x[0],
        lambda x, lib: x[1:3],
        lambda x, lib: x[:, ::2],
        lambda x, lib: x.gather(1, (E if lib is E else torch).tensor([[0, 0], [3, 1], [2, 2]])),
        lambda x, lib: x.index_select(1, (E if lib is E else torch).tensor([0, 0, 3])),
        lambda x, lib: x.masked_fill(x > 0, 1.0),
    ],
    ids=["index", "select", "slice", "step", "gather", "index_select", "masked_fill"],
)
def test_create_graph_records_torch_adjoints(make: Any) -> None:
    """The gradient of a gradient: names of the backward graph's nodes and the values."""
    base = X[:, :, 0].copy()
    x = E.tensor(base, requires_grad=True)
    tx = torch.tensor(base, requires_grad=True)
    y, ty = make(x, E), make(tx, torch)
    (g,) = E.grad((y * y).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((ty * ty).sum(), tx, create_graph=True)
    assert g.grad_fn.name == type(tg.grad_fn).__name__
    inner = [f.name if f is not None else None for f, _ in g.grad_fn.next_functions]
    tinner = [type(f).__name__ if f is not None else None for f, _ in tg.grad_fn.next_functions]
    assert [n for n in inner if n] == [n for n in tinner if n != "NoneType" and n]
    assert_same(g, tg, graph=False)
    (gg,) = E.grad((g * g).sum(), x)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    assert_same(gg, tgg, graph=False)


# -- gather, index_select, masked_fill ---------------------------------------------------


GATHER_ERRORS = [
    (
        1,
        np.zeros((3, 2), np.int64),
        ShapeMismatchError,
        "Index tensor must have the same number of dimensions as input tensor",
    ),
    (
        1,
        np.zeros((4, 2, 5), np.int64),
        ShapeMismatchError,
        "Size does not match at dimension 0 expected index [4, 2, 5] to be no larger than self [3, 4, 5] apart from dimension 1",
    ),
    (
        1,
        np.full((3, 2, 5), 4),
        IndexOutOfRangeError,
        "index 4 is out of bounds for dimension 1 with size 4",
    ),
    (
        1,
        np.full((3, 2, 5), -1),
        IndexOutOfRangeError,
        "index -1 is out of bounds for dimension 1 with size 4",
    ),
    (1, np.zeros((3, 2, 5)), DtypeMismatchError, "gather(): Expected dtype int32/int64 for index"),
    (
        3,
        np.zeros((3, 2, 5), np.int64),
        IndexOutOfRangeError,
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
    ),
]


@pytest.mark.parametrize(
    ("dim", "index", "error", "message"), GATHER_ERRORS, ids=[m[:30] for *_, m in GATHER_ERRORS]
)
def test_gather_errors(dim: int, index: np.ndarray, error: type, message: str) -> None:
    with pytest.raises(Exception) as theirs:  # noqa: PT011
        torch.tensor(X).gather(dim, torch.from_numpy(index))
    assert str(theirs.value).split("\n")[0] == message
    with pytest.raises(error) as mine:
        E.tensor(X).gather(dim, E.tensor(index))
    assert str(mine.value) == message


def test_gather_zero_dim_combinations() -> None:
    for shape, index in [((), np.array([0, 0])), ((3,), np.array(1)), ((), np.array(0))]:
        data = RNG.uniform(size=shape)
        x, tx = E.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        y, ty = x.gather(0, E.tensor(index)), tx.gather(0, torch.from_numpy(index))
        assert_same(y, ty)
        y.sum().backward()
        ty.sum().backward()
        assert_same(x.grad, tx.grad, graph=False)


def test_index_select_errors() -> None:
    x = E.tensor(X)
    with raises(BadArgumentsError, "Index is supposed to be a vector"):
        x.index_select(1, E.tensor([[0]]))
    with raises(IndexOutOfRangeError, "INDICES element is out of DATA bounds, id=4 axis_dim=4"):
        x.index_select(1, E.tensor([4]))
    with raises(IndexOutOfRangeError, "id=-1 axis_dim=4"):
        x.index_select(1, E.tensor([-1]))
    with raises(DtypeMismatchError, "Expected dtype int32 or int64 for index"):
        x.index_select(1, E.tensor([1.0]))
    with raises(BadArgumentsError, "Index to scalar can have only 1 value, got 2"):
        E.tensor(1.0).index_select(0, E.tensor([0, 0]))


def test_masked_fill_details() -> None:
    x = E.tensor(X)
    with raises(
        DtypeMismatchError, "only supports boolean masks, but got mask with dtype long int"
    ):
        x.masked_fill(E.tensor(np.ones((3, 4, 5), np.int64)), 1.0)
    with raises(BadArgumentsError, "only supports a 0-dimensional value tensor"):
        x.masked_fill(x > 0, E.tensor([2.0]))
    with raises(ShapeMismatchError, "The size of tensor a (2) must match the size of tensor b (5)"):
        x.masked_fill(E.tensor([True, False]), 1.0)
    # an integer tensor keeps its dtype; the value is cast
    ints = E.tensor([1, 1, 1]).masked_fill(E.tensor([True, False, True]), 2.5)
    assert ints.dtype == np.int64 and ints.tolist() == [2, 1, 2]
    # a 0-d tensor value of another float dtype: result keeps the input's dtype, value gets a grad
    a = E.tensor(X[0], dtype="float32", requires_grad=True)
    v = E.tensor(3.0, dtype="float64", requires_grad=True)
    ta = torch.tensor(X[0], dtype=torch.float32, requires_grad=True)
    tv = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    y, ty = a.masked_fill(a > 0, v), ta.masked_fill(ta > 0, tv)
    assert_same(y, ty)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_same(a.grad, ta.grad, graph=False)
    assert_same(v.grad, tv.grad, graph=False)
