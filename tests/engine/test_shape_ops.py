"""Shape ops against PyTorch: the grad_fn each call records (views, copies, the
squeeze variants, split vs split_with_sizes), the error messages, dtype promotion
in cat/stack, and the double-backward graph. Values and first-order gradients of
every sample are covered by the op database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import BadArgumentsError, IndexOutOfRangeError, ShapeMismatchError
from tests.engine.torch_oracle import assert_same, require_torch

torch = require_torch()

RNG = np.random.default_rng(11)
X = RNG.uniform(-2, 2, (2, 3, 4))


@contextmanager
def raises(error: type, fragment: str) -> Iterator[None]:
    """``pytest.raises`` with a substring check on the message."""
    with pytest.raises(error) as info:
        yield
    assert fragment in str(info.value), str(info.value)


def pair(data: np.ndarray = X, grad: bool = True) -> tuple[Any, Any]:
    return E.tensor(data, requires_grad=grad), torch.tensor(data, requires_grad=grad)


CALLS = {
    "flatten": lambda x, lib: x.flatten(),
    "flatten(1)": lambda x, lib: x.flatten(1),
    "flatten(0, 0) is the input": lambda x, lib: x.flatten(0, 0),
    "flatten non-contiguous": lambda x, lib: x.permute(2, 0, 1).flatten(),
    "reshape same shape": lambda x, lib: x.reshape(2, 3, 4),
    "reshape non-contiguous copies": lambda x, lib: x.permute(1, 0, 2).reshape(-1),
    "reshape non-contiguous as a view": lambda x, lib: x[:, :2].reshape(2, 2, 2, 2),
    "reshape non-contiguous, same shape": lambda x, lib: x.permute(1, 0, 2).reshape(3, 2, 4),
    "view of a non-contiguous": lambda x, lib: x[:, :2].view(2, 2, 2, 2),
    "view of a slice": lambda x, lib: x[:, :, :2].reshape(2, 3, 2, 1),
    "squeeze()": lambda x, lib: x[:1].squeeze(),
    "squeeze(dim)": lambda x, lib: x.squeeze(1),
    "squeeze(dims)": lambda x, lib: x[:1, :1].squeeze((0, 1)),
    "unsqueeze": lambda x, lib: x.unsqueeze(-1),
    "permute": lambda x, lib: x.permute(2, 0, 1),
    "permute tuple": lambda x, lib: x.permute((-1, 0, 1)),
    "expand": lambda x, lib: x.expand(5, 2, 3, 4),
    "broadcast_to": lambda x, lib: lib.broadcast_to(x[:, :1], (2, 3, 4)),
    "cat": lambda x, lib: lib.cat([x, x * 2], dim=1),
    "stack": lambda x, lib: lib.stack([x, x * 2], dim=-1),
    "split": lambda x, lib: x.split(2, dim=2),
    "split sizes": lambda x, lib: x.split([1, 2], dim=1),
    "split one piece": lambda x, lib: x.split(10),
    "chunk": lambda x, lib: x.chunk(3, dim=2),
    "clone": lambda x, lib: x.clone(),
    "clone keeps layout": lambda x, lib: x.permute(2, 1, 0).clone().reshape(-1),
    "contiguous of contiguous": lambda x, lib: x.contiguous(),
    "contiguous of a transpose": lambda x, lib: x.permute(2, 1, 0).contiguous(),
    "detach": lambda x, lib: x.detach(),
}


def _results(r: Any) -> list[Any]:
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("name", list(CALLS))
def test_matches_torch(name: str) -> None:
    x, tx = pair()
    y, ty = CALLS[name](x, E), CALLS[name](tx, torch)
    assert_same(y, ty)
    outs = [o for o in _results(y) if o.requires_grad]
    touts = [o for o in _results(ty) if o.requires_grad]
    if not outs:
        return
    grads = [RNG.uniform(-1, 1, o.shape) for o in outs]
    E.backward(outs, [E.tensor(g) for g in grads])
    torch.autograd.backward(touts, [torch.from_numpy(g) for g in grads])
    assert_same(x.grad, tx.grad, graph=False)


def test_identity_results_are_the_input() -> None:
    x = E.tensor(X, requires_grad=True)
    assert x.flatten(1, 1) is x
    assert E.tensor([1.0, 2.0]).flatten() is not None
    assert x.contiguous() is x


def test_views_share_memory() -> None:
    x = E.tensor(X, requires_grad=True)
    for y in (
        x.reshape(6, 4),
        x.permute(2, 0, 1),
        x.squeeze(),
        x.unsqueeze(0),
        x.expand(2, 2, 3, 4),
    ):
        assert np.shares_memory(y.data, x.data)
    assert not np.shares_memory(x.clone().data, x.data)


@pytest.mark.parametrize(
    "make",
    [
        lambda x, lib: lib.cat([x, x], 1),
        lambda x, lib: lib.stack([x, x], 0),
        lambda x, lib: x.split(1)[0],
        lambda x, lib: x.permute(2, 1, 0),
        lambda x, lib: x.squeeze(),
        lambda x, lib: x.unsqueeze(1),
        lambda x, lib: x.expand(3, 2, 3, 4),
        lambda x, lib: x.flatten(),
    ],
    ids=["cat", "stack", "split", "permute", "squeeze", "unsqueeze", "expand", "flatten"],
)
def test_double_backward_matches_torch(make: Any) -> None:
    x, tx = pair()
    y, ty = make(x, E), make(tx, torch)
    (g,) = E.grad((y * y * y).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((ty * ty * ty).sum(), tx, create_graph=True)
    assert_same(g, tg, graph=False)
    (gg,) = E.grad((g * g).sum(), x)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    assert_same(gg, tgg, graph=False)


def test_backward_graph_names() -> None:
    """Under create_graph, cat's gradient slices, stack's selects, split's concatenates."""
    x, tx = pair()

    def names(g: Any) -> list[str]:
        return [
            (f.name if isinstance(f, E.Node) else type(f).__name__)
            for f, _ in g.grad_fn.next_functions
            if f is not None
        ]

    for make in (lambda v, lib: lib.cat([v, v]), lambda v, lib: lib.stack([v, v])):
        (g,) = E.grad((make(x, E) ** 2).sum(), x, create_graph=True)
        (tg,) = torch.autograd.grad((make(tx, torch) ** 2).sum(), tx, create_graph=True)
        assert names(g) == names(tg)
    (g,) = E.grad((x.split(1)[0] ** 2).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx.split(1)[0] ** 2).sum(), tx, create_graph=True)
    assert g.grad_fn.name == type(tg.grad_fn).__name__ == "CatBackward0"


def test_shape_graphs_can_run_twice() -> None:
    """Views, cat, stack, split and clone save no tensors: PyTorch lets them run again."""

    def build(x: Any) -> Any:
        return (
            E.cat([x, x]).sum()
            + E.stack([x]).sum()
            + x.split(1)[1].sum()
            + x.clone().sum()
            + x.permute(1, 0, 2).reshape(-1).sum()
            + x.expand(2, 2, 3, 4).sum()
        )

    once = E.tensor(X, requires_grad=True)
    build(once).backward()
    x = E.tensor(X, requires_grad=True)
    s = build(x)
    s.backward()
    s.backward()
    np.testing.assert_allclose(x.grad.data, 2 * once.grad.data)


def test_cat_stack_dtypes() -> None:
    f32 = E.tensor(np.ones((2, 2)), dtype="float32", requires_grad=True)
    f64 = E.tensor(np.ones((2, 2)), dtype="float64")
    ints = E.tensor(np.ones((2, 2), np.int64))
    bools = E.tensor(np.ones((2, 2), bool))
    assert E.cat([f32, f64]).dtype == np.float64
    assert E.cat([f32, ints]).dtype == np.float32
    assert E.cat([ints, bools]).dtype == np.int64
    assert E.stack([bools, bools]).dtype == np.bool_
    assert E.cat([E.tensor(np.zeros(0), dtype="float64"), f32], 1).dtype == np.float64
    y = E.cat([f32, f64])
    y.sum().backward()
    assert f32.grad.dtype == np.float32 and f64.grad is None


def zeros(lib: Any, *shape: int) -> Any:
    return lib.tensor(np.zeros(shape))


ERRORS = [
    (lambda lib, x: lib.cat([x, zeros(lib, 2, 3, 5)]), ShapeMismatchError),
    (lambda lib, x: lib.cat([x, zeros(lib, 2, 3)]), ShapeMismatchError),
    (lambda lib, x: lib.cat([lib.tensor(1.0), lib.tensor(2.0)]), BadArgumentsError),
    (lambda lib, x: lib.cat([x], dim=3), IndexOutOfRangeError),
    (lambda lib, x: lib.stack([x, zeros(lib, 2, 3, 5)]), ShapeMismatchError),
    (lambda lib, x: lib.stack([x, x], dim=4), IndexOutOfRangeError),
    (lambda lib, x: lib.stack([]), BadArgumentsError),
    (lambda lib, x: x.split(0), BadArgumentsError),
    (lambda lib, x: x.split([1, 2]), ShapeMismatchError),
    (lambda lib, x: x.split([-1, 3]), BadArgumentsError),
    (lambda lib, x: x.split(-1), BadArgumentsError),
    (lambda lib, x: lib.tensor(1.0).split(1), BadArgumentsError),
    (lambda lib, x: x.chunk(0), BadArgumentsError),
    (lambda lib, x: lib.tensor(1.0).chunk(1), BadArgumentsError),
    (lambda lib, x: x.squeeze(3), IndexOutOfRangeError),
    (lambda lib, x: x.squeeze((0, 0)), BadArgumentsError),
    (lambda lib, x: x.unsqueeze(4), IndexOutOfRangeError),
    (lambda lib, x: x.permute(0, 1), BadArgumentsError),
    (lambda lib, x: x.permute(0, 0, 1), BadArgumentsError),
    (lambda lib, x: x.permute(0, 1, 3), IndexOutOfRangeError),
    (lambda lib, x: x.flatten(2, 1), BadArgumentsError),
    (lambda lib, x: x.expand(2, 3), ShapeMismatchError),
    (lambda lib, x: x.expand(3, 3, 4), ShapeMismatchError),
    (lambda lib, x: lib.broadcast_to(x, (3, 3, 4)), ShapeMismatchError),
    (lambda lib, x: x.permute(1, 0, 2).view(-1), ShapeMismatchError),
    (lambda lib, x: x.reshape(5, -1), ShapeMismatchError),
]


@pytest.mark.parametrize(("make", "error"), ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_match_torch(make: Any, error: type) -> None:
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - PyTorch's types vary
        make(torch, torch.tensor(X))
    with pytest.raises(error) as mine:
        make(E, E.tensor(X))
    expected = str(theirs.value).split("\n")[0]
    if expected.startswith("stack expects a non-empty"):
        expected = "stack expects a non-empty TensorList"
    assert str(mine.value) == expected


def test_chunk_and_split_edge_sizes() -> None:
    for n, chunks in [(5, 3), (6, 4), (0, 2), (1, 3)]:
        data = RNG.uniform(size=(n, 2))
        x, tx = pair(data)
        assert_same(x.chunk(chunks), tx.chunk(chunks))
    x, tx = pair(np.zeros((0, 3)))
    assert_same(x.split(0), tx.split(0))
    assert_same(x.split(2), tx.split(2))


VIEW_OPS = {
    "permute": lambda t: t.permute(1, 0),
    "squeeze": lambda t: t.unsqueeze(0).squeeze(0),
    "select": lambda t: t[0],
    "alias": lambda t: t[...],
    "slice with step": lambda t: t[:, ::2],
    "expand": lambda t: t.expand(2, 2, 3),
    "reshape alias": lambda t: t[:, :2].reshape(2, 2, 1),
}


@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_views_write_through_like_torch(name: str) -> None:
    """A view shares its base's memory and version counter; writing it in place is
    refused on a leaf that requires grad, and allowed (and seen by the base) under no_grad."""
    from engine.errors import LeafInplaceError

    data = np.arange(6.0).reshape(2, 3)
    x, tx = E.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    make = VIEW_OPS[name]
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        make(tx).mul_(2)
    with pytest.raises(LeafInplaceError):
        make(x).mul_(2)
    if name == "expand":
        return  # PyTorch refuses to write an expanded view at all
    with E.no_grad():
        make(x).mul_(2)
    with torch.no_grad():
        make(tx).mul_(2)
    np.testing.assert_array_equal(x.data, tx.detach().numpy())
    assert x._version == tx._version


# -- view(dtype) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "shape", "dst"),
    [
        ("float32", (2, 3), "int32"),
        ("float32", (2, 4), "float16"),
        ("float16", (2, 4), "float32"),
        ("float64", (3, 2), "int64"),
        ("int64", (2, 2), "float64"),
        ("float32", (2, 4), "uint8"),
        ("uint8", (2, 8), "float32"),
    ],
)
def test_view_as_dtype_reads_the_same_bytes(src: str, shape: tuple[int, ...], dst: str) -> None:
    torch = require_torch()
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 0.75 + 1
    data = data.astype(src)
    mine = E.tensor(data).view(dst)
    theirs = torch.from_numpy(data.copy()).view(getattr(torch, dst))
    assert str(mine.dtype) == dst and tuple(mine.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(np.asarray(mine), theirs.numpy())


def test_view_as_dtype_has_no_history_and_shares_memory() -> None:
    torch = require_torch()
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = x.view("int32")
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = tx.view(torch.int32)
    assert y.requires_grad is ty.requires_grad is False and y.grad_fn is None
    z = E.tensor([1.0, 2.0])
    w = z.view("int32")
    w.zero_()
    assert z.tolist() == [0.0, 0.0] and z._version == w._version == 1


@pytest.mark.parametrize(
    ("make", "dst"),
    [
        (lambda T: T.ones(2, 3).half(), "float32"),
        (lambda T: T.ones(2, 4).t(), "float16"),
        (lambda T: T.tensor(1.0), "float16"),
    ],
)
def test_view_as_dtype_refuses_what_torch_refuses(make: Any, dst: str) -> None:
    torch = require_torch()
    with pytest.raises(RuntimeError) as theirs:
        make(torch).view(getattr(torch, dst))
    with pytest.raises(E.EngineError) as mine:
        make(E).view(dst)
    assert str(mine.value) == str(theirs.value)
