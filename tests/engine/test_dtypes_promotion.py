"""PyTorch's type promotion, pair by pair: every dtype against every dtype (and
Python numbers), as dimensioned tensors, 0-d tensors and numbers, through the
binary ops and ``where``. The result dtype and values must be PyTorch's, and
where PyTorch refuses a combination the engine raises the same exception class
with the same message.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import engine as E
from engine import dtypes
from tests.engine.torch_oracle import compare, require_torch

torch = require_torch()
pytestmark = pytest.mark.torch

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
NUMBERS: list[Any] = [True, 2, 2.5]
# kinds of operand: a dimensioned tensor, a 0-d tensor
KINDS = ["tensor", "0-d"]


def _values(dtype: str, kind: str) -> np.ndarray:
    if dtype == "bool":
        data = np.array([True, False, True])
    else:
        data = np.array([1, 2, 3]).astype(dtype)
    return data[:1].reshape(()) if kind == "0-d" else data


def _pair(x: Any) -> tuple[Any, Any]:
    """An operand for the engine and for torch."""
    if isinstance(x, np.ndarray):
        return E.Tensor(x.copy()), torch.from_numpy(x.copy())
    return x, x


OPS: dict[str, tuple[Any, Any]] = {
    "add": (E.add, torch.add),
    "sub": (E.sub, torch.sub),
    "mul": (E.mul, torch.mul),
    "div": (E.div, torch.div),
    "div floor": (
        lambda a, b: E.div(a, b, rounding_mode="floor"),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
    ),
    "div trunc": (
        lambda a, b: E.div(a, b, rounding_mode="trunc"),
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    ),
    "floor_divide": (E.floor_divide, torch.floor_divide),
    "remainder": (E.remainder, torch.remainder),
    "pow": (E.pow, torch.pow),
    "eq": (E.eq, torch.eq),
    "lt": (E.lt, torch.lt),
    "maximum": (E.maximum, torch.maximum),
    "bitwise_and": (E.bitwise_and, torch.bitwise_and),
    "where": (
        lambda a, b: E.where(E.tensor([True, False, True]), a, b),
        lambda a, b: torch.where(torch.tensor([True, False, True]), a, b),
    ),
}
# ops whose PyTorch spelling takes tensors only
TENSORS_ONLY = {"maximum"}


def _check(name: str, left: Any, right: Any) -> None:
    """Result dtype, shape and values, or PyTorch's refusal in its words (the oracle)."""
    mine_fn, torch_fn = OPS[name]
    compare(mine_fn, torch_fn, left, right, requires_grad=False, rtol=1e-3)


OPERANDS = [(d, k) for d in DTYPES for k in KINDS]


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize(
    "left,right",
    list(itertools.product(OPERANDS, OPERANDS)),
    ids=[f"{a[0]}:{a[1]}-{b[0]}:{b[1]}" for a, b in itertools.product(OPERANDS, OPERANDS)],
)
def test_tensor_pairs_match_torch(name: str, left: tuple[str, str], right: tuple[str, str]) -> None:
    _check(name, _values(*left), _values(*right))


# PyTorch's functions take a number first only for these
NUMBER_FIRST = {"add", "mul", "sub", "pow", "where"}
NUMBER_CASES = [
    (name, number, operand, side)
    for name in OPS
    if name not in TENSORS_ONLY
    for number in NUMBERS
    for operand in OPERANDS
    for side in ("tensor op number", "number op tensor")
    if side == "tensor op number" or name in NUMBER_FIRST
]


@pytest.mark.parametrize(
    "name,number,operand,side",
    NUMBER_CASES,
    ids=[f"{n}-{s}-{o[0]}:{o[1]}-{type(x).__name__}" for n, x, o, s in NUMBER_CASES],
)
def test_number_operands_match_torch(
    name: str, number: Any, operand: tuple[str, str], side: str
) -> None:
    tensor = _values(*operand)
    if side == "tensor op number":
        _check(name, tensor, number)
    else:
        _check(name, number, tensor)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^"])
@pytest.mark.parametrize("left", ["int64", "uint8", "bool", "float16", "int32"])
@pytest.mark.parametrize("right", ["int8", "bool", "float32", 3, 1.5, True])
def test_python_operators_match_torch(op: str, left: str, right: Any) -> None:
    """The operators promote like the functions (and reflected operators too)."""
    x = _values(left, "tensor")
    y = _values(right, "tensor") if isinstance(right, str) else right
    (a, ta), (b, tb) = _pair(x), _pair(y)
    for first, second, tfirst, tsecond in ((a, b, ta, tb), (b, a, tb, ta)):
        code = f"p {op} q"
        try:
            expected = eval(code, {"p": tfirst, "q": tsecond})  # noqa: S307 - fixed operators
        except Exception as exc:
            with pytest.raises(Exception) as info:
                eval(code, {"p": first, "q": second})  # noqa: S307
            assert isinstance(info.value, type(exc)), (type(info.value), exc)
            continue
        got = eval(code, {"p": first, "q": second})  # noqa: S307
        assert got.dtype == np.dtype(str(expected.dtype).removeprefix("torch.")), code
        np.testing.assert_allclose(
            got._data.astype(np.float64), expected.numpy().astype(np.float64), rtol=1e-3
        )


def test_promote_lattice_matches_torch() -> None:
    for a, b in itertools.product(DTYPES, DTYPES):
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        got = dtypes.promote(dtypes.to_dtype(a), dtypes.to_dtype(b))
        assert got == np.dtype(str(want).removeprefix("torch.")), (a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_only_floating_tensors_require_grad(dtype: str) -> None:
    data = _values(dtype, "tensor")
    if dtype.startswith("float"):
        assert E.Tensor(data, requires_grad=True).requires_grad
        return
    with pytest.raises(RuntimeError) as info:
        torch.from_numpy(data.copy()).requires_grad_()
    with pytest.raises(RuntimeError) as mine:
        E.Tensor(data).requires_grad_()
    assert str(mine.value) == str(info.value)


CASTS = ["half", "float", "double", "int", "long", "short", "char", "byte", "bool"]


@pytest.mark.parametrize("cast", CASTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_casts_match_torch(cast: str, dtype: str) -> None:
    data = _values(dtype, "tensor")
    got = getattr(E.Tensor(data.copy()), cast)()
    want = getattr(torch.from_numpy(data.copy()), cast)()
    assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch."))
    np.testing.assert_array_equal(got.data, want.numpy())


@pytest.mark.parametrize("cast", ["half", "float", "double"])
def test_float_casts_record_tocopy(cast: str) -> None:
    x = E.tensor([0.5, -1.25], dtype="float64", requires_grad=True)
    tx = torch.tensor([0.5, -1.25], dtype=torch.float64, requires_grad=True)
    y, ty = getattr(x, cast)(), getattr(tx, cast)()
    assert (y.grad_fn and y.grad_fn.name) == (ty.grad_fn and ty.grad_fn.name())
    assert (y is x) == (ty is tx)
    (y * 3).sum().backward()
    (ty * 3).sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad.data, tx.grad.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_to_dtype_names(dtype: str) -> None:
    x = E.tensor([1.0, 2.0]).to(f"torch.{dtype}")
    assert x.dtype == np.dtype(dtype)


def test_wrapped_integers_wrap_around_like_torch() -> None:
    """A Python int beyond a small integer dtype wraps, as PyTorch's cast does."""
    x = np.array([1, 200], dtype=np.uint8)
    got = E.Tensor(x) + 300
    want = torch.from_numpy(x) + 300
    np.testing.assert_array_equal(got.data, want.numpy())
    assert got.dtype == np.uint8


@pytest.mark.parametrize("alias", ["half", "float", "double", "short", "int", "long"])
def test_torch_dtype_aliases(alias: str) -> None:
    want = getattr(torch, alias)
    got = E.tensor([1.0, 2.0]).to(f"torch.{alias}")
    assert got.dtype == np.dtype(str(want).removeprefix("torch."))


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_d_tensors_rank_below_dimensioned_ones(dtype: str) -> None:
    """A 0-d float64 tensor does not widen a float32 tensor; it does make an integer
    tensor floating (a higher category), as in PyTorch."""
    x = _values(dtype, "tensor")
    for scalar in (np.array(2.5), np.array(2.5, np.float16), np.array(7, np.int16)):
        got = E.Tensor(x.copy()) * E.Tensor(scalar)
        want = torch.from_numpy(x.copy()) * torch.from_numpy(scalar)
        assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch.")), (dtype, scalar.dtype)
