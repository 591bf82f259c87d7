"""Creation ops against PyTorch: shapes, dtypes, flags, values and error messages;
rand/randn reproducibility from a seed or a Generator (values are our own RNG's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import (
    BadArgumentsError,
    DtypeMismatchError,
    DtypeNotDifferentiableError,
    EngineError,
)
from engine.random import Generator
from tests.engine.torch_oracle import assert_same, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1

pytestmark = pytest.mark.torch

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "bool": torch.bool,
}


def _torch_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: DTYPES.get(v, v) if k == "dtype" else v for k, v in kwargs.items()}


CALLS = [
    ("zeros", (2, 3), {}),
    ("zeros", ((2, 3),), {}),
    ("zeros", ([4],), {"dtype": "float64"}),
    ("zeros", ((),), {}),
    ("zeros", (0, 3), {"dtype": "int64"}),
    ("ones", (3,), {"dtype": "bool"}),
    ("ones", (2, 2), {"requires_grad": True}),
    ("full", ((2, 3), 1.5), {}),
    ("full", ((2,), 3), {}),
    ("full", ((2,), True), {}),
    ("full", ((2,), 1.5), {"dtype": "int64"}),
    ("full", ((), 2), {}),
    ("arange", (5,), {}),
    ("arange", (True,), {}),
    ("arange", (1, 2.5, 0.5), {}),
    ("arange", (0, 10, 3), {}),
    ("arange", (10, 0, -3), {}),
    ("arange", (0.0, 1.0, 0.1), {"dtype": "float64"}),
    ("arange", (-5.5, 3.2, 0.7), {}),
    ("arange", (0.5, 3), {"dtype": "int64"}),
    ("arange", (5.0,), {"requires_grad": True}),
    ("arange", (1e20, 1e20 + 1), {}),
    ("linspace", (0, 1, 5), {}),
    ("linspace", (0.1, 1.1, 7), {"dtype": "float64"}),
    ("linspace", (0, 1, 0), {}),
    ("linspace", (0, 1, 1), {}),
    ("linspace", (2, 2, 3), {}),
    ("linspace", (0.5, 10.7, 9), {"dtype": "int64"}),
    ("linspace", (1.9, -7.2, 5), {"dtype": "int64"}),
    ("eye", (3,), {}),
    ("eye", (2, 3), {}),
    ("eye", (0,), {}),
    ("eye", (3,), {"dtype": "bool"}),
    ("eye", (2,), {"requires_grad": True}),
]


@pytest.mark.parametrize(
    ("name", "args", "kwargs"), CALLS, ids=[f"{c[0]}{c[1]}{c[2]}" for c in CALLS]
)
def test_matches_torch(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    mine = getattr(E, name)(*args, **kwargs)
    assert_same(mine, getattr(torch, name)(*args, **_torch_kwargs(kwargs)), rtol=0, atol=0)


def test_linspace_float32_within_an_ulp() -> None:
    """PyTorch's vectorized kernel may differ by an ulp from the formula it documents."""
    assert_same(E.linspace(-3.3, 7.7, 101), torch.linspace(-3.3, 7.7, 101), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["zeros_like", "ones_like", "full_like"])
@pytest.mark.parametrize(
    ("data", "kwargs"),
    [
        (np.array([[1.5, -2.0]], np.float32), {}),
        (np.array([1, 2, 3]), {}),
        (np.array(2.5), {"dtype": "float64"}),
        (np.zeros((0, 2)), {"requires_grad": True}),
        (np.array([True]), {"dtype": "int64"}),
    ],
)
def test_like_ops_take_shape_and_dtype(kind: str, data: np.ndarray, kwargs: dict[str, Any]) -> None:
    extra = (2.7,) if kind == "full_like" else ()
    mine = getattr(E, kind)(E.tensor(data), *extra, **kwargs)
    theirs = getattr(torch, kind)(torch.tensor(data), *extra, **_torch_kwargs(kwargs))
    assert_same(mine, theirs, rtol=0, atol=0)


def test_like_ops_have_no_history() -> None:
    x = E.tensor([1.0, 2.0], requires_grad=True)
    y = E.zeros_like(x * 2)
    assert y.is_leaf and not y.requires_grad and y.tolist() == [0.0, 0.0]


def test_results_are_writable_leaves() -> None:
    for t in (E.zeros(2), E.full((2,), 1.0), E.eye(2), E.arange(3.0), E.rand(2, seed=0)):
        assert t._data.flags.writeable and t._data.flags.owndata
    w = E.zeros(3, requires_grad=True)
    with E.no_grad():
        w.add_(1.0)
    assert w.tolist() == [1.0, 1.0, 1.0] and w._version == 1


# -- errors -------------------------------------------------------------------------------


def _bool(T: Any) -> Any:
    return T.bool if T is torch else T.bool_


def _torch_error(call: Any) -> str:
    with pytest.raises((RuntimeError, TypeError, ValueError, NotImplementedError)) as err:
        call(torch)
    return str(err.value)


def _engine_error(call: Any, kind: type[EngineError]) -> EngineError:
    with pytest.raises(kind) as err:
        call(E)
    return err.value


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda T: T.zeros(-1), BadArgumentsError),
        (lambda T: T.zeros((2, -3)), BadArgumentsError),
        (lambda T: T.ones(2, -1), BadArgumentsError),
        (lambda T: T.full((2, -1), 1.0), BadArgumentsError),
        (lambda T: T.rand(-2, generator=None), BadArgumentsError),
        (lambda T: T.randn(-1), BadArgumentsError),
        (lambda T: T.zeros(2.5), BadArgumentsError),
        (lambda T: T.zeros(True), BadArgumentsError),
        (lambda T: T.zeros(2, 3.0), BadArgumentsError),
        (lambda T: T.zeros((2, 3.0)), BadArgumentsError),
        (lambda T: T.zeros(2, dtype=T.int64, requires_grad=True), DtypeNotDifferentiableError),
        (lambda T: T.arange(5, requires_grad=True), DtypeNotDifferentiableError),
        (lambda T: T.full((2,), 3, requires_grad=True), DtypeNotDifferentiableError),
        (
            lambda T: T.zeros_like(T.ones(2, dtype=T.int64), requires_grad=True),
            DtypeNotDifferentiableError,
        ),
        (lambda T: T.arange(0, 1, 0), BadArgumentsError),
        (lambda T: T.arange(0, 5, 0.3, dtype=T.int64), BadArgumentsError),
        (lambda T: T.arange(1, 0, 1), BadArgumentsError),
        (lambda T: T.arange(-1), BadArgumentsError),
        (lambda T: T.arange(float("inf")), BadArgumentsError),
        (lambda T: T.arange(2, dtype=_bool(T)), DtypeMismatchError),
        (lambda T: T.linspace(0, 1, -1), BadArgumentsError),
        (lambda T: T.linspace(0, 1, 3, dtype=_bool(T)), DtypeMismatchError),
        (lambda T: T.eye(-1), BadArgumentsError),
        (lambda T: T.eye(2, -1), BadArgumentsError),
        (lambda T: T.eye(2.5), BadArgumentsError),
        (lambda T: T.rand(2, dtype=T.int64), DtypeMismatchError),
        (lambda T: T.randn(2, dtype=T.int64), DtypeMismatchError),
        (lambda T: T.rand(2, dtype=_bool(T)), DtypeMismatchError),
        (lambda T: T.rand_like(T.ones(2, dtype=T.int64)), DtypeMismatchError),
        (lambda T: T.randn_like(T.ones(2, dtype=T.int64)), DtypeMismatchError),
    ],
)
def test_errors_keep_torch_wording(call: Any, kind: type[EngineError]) -> None:
    theirs = _torch_error(call)
    mine = _engine_error(call, kind)
    assert str(mine) == theirs
    assert mine.code == kind.code


# -- random -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_random_shapes_dtypes_flags_match_torch(name: str) -> None:
    for args, kwargs in [((2, 3), {}), (((4,),), {"dtype": "float64"}), (((),), {}), ((0, 2), {})]:
        mine = getattr(E, name)(*args, seed=0, **kwargs)
        theirs = getattr(torch, name)(*args, **_torch_kwargs(kwargs))
        assert mine.shape == tuple(theirs.shape)
        assert str(mine.dtype) == str(theirs.dtype).removeprefix("torch.")
    t = getattr(E, name)(2, seed=1, requires_grad=True)
    assert t.requires_grad and t.is_leaf


def test_seed_reproduces_and_generator_advances() -> None:
    assert E.rand(5, seed=7).tolist() == E.rand(5, seed=7).tolist()
    assert E.rand(5, seed=7).tolist() != E.rand(5, seed=8).tolist()
    gen = Generator(7)
    first, second = E.rand(5, generator=gen), E.rand(5, generator=gen)
    assert first.tolist() == E.rand(5, seed=7).tolist()
    assert first.tolist() != second.tolist()
    assert gen.manual_seed(7) is gen and gen.initial_seed() == 7
    assert E.rand(5, generator=gen).tolist() == first.tolist()
    other = Generator()
    assert isinstance(other.initial_seed(), int)
    like = E.randn_like(E.zeros(2, 3, dtype="float64"), seed=3)
    assert (
        like.dtype == np.float64
        and like.tolist() == E.randn(2, 3, seed=3, dtype="float64").tolist()
    )


def test_random_values_have_the_right_distribution() -> None:
    u = E.rand(20000, seed=0).data
    assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    n = E.randn(20000, seed=0, dtype="float64").data
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1.0) < 0.03


def test_seed_and_generator_are_checked() -> None:
    with pytest.raises(BadArgumentsError):
        E.rand(2, seed=1, generator=Generator(1))
    with pytest.raises(BadArgumentsError):
        E.rand(2, seed=-1)
    with pytest.raises(BadArgumentsError):
        E.rand(2, generator="not a generator")
    with pytest.raises(BadArgumentsError):
        Generator(1.5)  # type: ignore[arg-type]
