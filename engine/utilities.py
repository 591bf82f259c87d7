"""``torch``'s non-op helpers a ported model calls (``is_tensor``, ``numel``,
``from_numpy``, ``result_type`` ...) and its dtype names (``torch.float`` is float32,
``torch.long`` int64), so ``import engine as torch`` reads the same."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import dtypes
from .creation import tensor
from .errors import ArgumentTypeError, BadArgumentsError
from .registry import OPS
from .tensor import Tensor

# PyTorch's dtype objects and their other spellings
float16 = half = dtypes.float16
float32 = float = dtypes.float32  # noqa: A001 - torch.float is a dtype
float64 = double = dtypes.float64
uint8 = dtypes.uint8
int8 = dtypes.int8
int16 = short = dtypes.int16
int32 = int = dtypes.int32  # noqa: A001 - torch.int is a dtype
int64 = long = dtypes.int64
bool = dtypes.bool_  # noqa: A001 - torch.bool is a dtype


def is_tensor(obj: Any) -> builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> builtins.bool:
    return input._data.dtype.kind == "f"


def is_complex(input: Tensor) -> builtins.bool:
    return False  # the engine has no complex dtypes


def numel(input: Tensor) -> builtins.int:
    if not isinstance(input, Tensor):
        raise ArgumentTypeError(
            f"numel(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return builtins.int(input._data.size)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor over ``ndarray``'s memory (writes show on both sides, as in PyTorch)."""
    if not isinstance(ndarray, np.ndarray):
        raise ArgumentTypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = dtypes.to_dtype(ndarray.dtype)
    return Tensor._make(ndarray if ndarray.dtype == dt else ndarray.astype(dt))


def as_tensor(data: Any, dtype: Any = None) -> Tensor:
    """``data`` itself when it is a tensor of that dtype, else a new tensor."""
    if isinstance(data, Tensor) and (dtype is None or dtypes.to_dtype(dtype) == data.dtype):
        return data
    if isinstance(data, Tensor):
        return data.to(dtypes.torch_name(dtypes.to_dtype(dtype)))
    return tensor(data, dtype=dtype)


asarray = as_tensor


def get_default_dtype() -> np.dtype:
    return dtypes.DEFAULT_FLOAT


def result_type(tensor: Any, other: Any) -> np.dtype:
    return dtypes.result_type(tensor, other)


def promote_types(type1: Any, type2: Any) -> np.dtype:
    out = dtypes.promote(dtypes.to_dtype(type1), dtypes.to_dtype(type2))
    assert out is not None
    return out


def can_cast(from_: Any, to: Any) -> builtins.bool:
    """PyTorch's ``canCast``: never down a category (float to int, int to bool)."""
    a, b = dtypes.to_dtype(from_), dtypes.to_dtype(to)
    return dtypes.category(a) <= dtypes.category(b)


def is_nonzero(input: Tensor) -> builtins.bool:
    """Whether a one-element tensor is not zero (PyTorch's refusals otherwise)."""
    if input._data.size == 0:
        raise BadArgumentsError("Boolean value of Tensor with no values is ambiguous")
    if input._data.size > 1:
        raise BadArgumentsError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input._data.reshape(()) != 0)


def _where_method(self: Tensor, condition: Any, other: Any) -> Tensor:
    """``x.where(condition, y)``: ``torch.where(condition, x, y)``."""
    result: Tensor = OPS["where"].fn(condition, self, other)
    return result


Tensor.where = _where_method  # type: ignore[attr-defined]


__all__ = [
    "as_tensor",
    "asarray",
    "bool",
    "can_cast",
    "double",
    "float",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "get_default_dtype",
    "half",
    "int",
    "int16",
    "int32",
    "int64",
    "int8",
    "is_complex",
    "is_floating_point",
    "is_nonzero",
    "is_tensor",
    "long",
    "numel",
    "promote_types",
    "result_type",
    "short",
    "uint8",
]
