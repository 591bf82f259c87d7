"""PyTorch's Python binding: a number where torch's signature demands a Tensor is its
TypeError, with its message (the ``binding`` fact of each op's registration)."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from engine import OPS
from engine.binding import Binding, numbers_as_tensors

CALLS = [
    ("atan2", "t", 2.0),
    ("atan2", 2, "t"),
    ("maximum", "t", 2),
    ("fmax", 2.5, "t"),
    ("logical_and", "t", True),
    ("heaviside", "t", 1.0),
    ("isclose", "t", 1.0),
    ("hypot", "t", 2.0),
    ("eq", 2, "t"),
    ("clamp_max", 2, "t"),
    ("rsub", 2, "t"),
    ("pow", 2, 3),
    ("xlogy", 2, 3),
    ("remainder", 2, 3),
]


def _args(torch_or_engine: Any, a: Any, b: Any) -> tuple[Any, Any]:
    t = torch_or_engine.ones(3)
    return (t if a == "t" else a), (t if b == "t" else b)


@pytest.mark.parametrize(("name", "a", "b"), CALLS)
def test_a_number_where_torch_demands_a_tensor_is_its_type_error(
    name: str, a: Any, b: Any, torch: Any
) -> None:
    with pytest.raises(TypeError) as theirs:
        getattr(torch, name)(*_args(torch, a, b))
    with pytest.raises(TypeError) as mine:
        getattr(engine, name)(*_args(engine, a, b))
    # the first line (torch's goes on to list its overloads in its own words)
    assert str(mine.value).splitlines()[0] == str(theirs.value).splitlines()[0]


@pytest.mark.parametrize(("name", "a", "b"), [("eq", "t", 2), ("pow", 2, "t"), ("xlogy", "t", 3)])
def test_numbers_where_torch_takes_them(name: str, a: Any, b: Any, torch: Any) -> None:
    want = getattr(torch, name)(*_args(torch, a, b))
    got = getattr(engine, name)(*_args(engine, a, b))
    assert got.tolist() == want.tolist()
    assert str(want.dtype).removeprefix("torch.") == str(got.dtype).removeprefix("engine.")


def test_operators_keep_taking_numbers() -> None:
    x = engine.tensor([1.0, 2.0])
    assert (x == 2).tolist() == [False, True]
    assert (2**x).tolist() == [2.0, 4.0]
    assert x.atan2(engine.tensor(1.0)).shape == (2,)


def test_numbers_as_tensors_makes_torch_tensor_of_the_number() -> None:
    spec = OPS["atan2"]
    assert spec.binding == Binding(tensors=("input", "other"))
    args, kwargs = numbers_as_tensors(spec.signature, spec.binding, [engine.ones(2), 2.0], {})
    assert isinstance(args[1], engine.Tensor) and args[1].dtype == engine.float32
    args, _ = numbers_as_tensors(spec.signature, spec.binding, [engine.ones(2)], {"other": 3})
    assert args[0].dtype == engine.float32
    _, kwargs = numbers_as_tensors(spec.signature, spec.binding, [engine.ones(2)], {"other": 3})
    assert kwargs["other"].dtype == engine.int64
    pow_ = OPS["pow"]
    assert pow_.binding is not None
    args, _ = numbers_as_tensors(pow_.signature, pow_.binding, [2, 3], {})
    assert isinstance(args[0], engine.Tensor) and args[1] == 3
