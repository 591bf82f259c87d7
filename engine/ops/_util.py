"""Helpers shared by op modules: turning arguments into tensors with PyTorch's
promotion, and normalizing ``dim`` arguments."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError, IndexOutOfRangeError, ShapeMismatchError
from ..function import broadcast_message
from ..tensor import Tensor


def as_tensor(value: Any, dtype: np.dtype | None = None) -> Tensor:
    """A Tensor for an argument: tensors pass through, numbers become 0-d constants."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        target = dtype or dtypes.scalar_dtype(value)
        if target.kind in "iu" and not isinstance(value, (bool, np.bool_)):
            # a number beyond a small integer dtype wraps around, as PyTorch's cast does
            with np.errstate(invalid="ignore", over="ignore"):
                return Tensor._make(np.asarray(np.asarray(value).astype(target)))
        return Tensor._make(np.asarray(value, dtype=target))
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.asarray(value)
        return Tensor._make(np.asarray(arr, dtype=dtype or dtypes.to_dtype(arr.dtype)))
    raise BadArgumentsError(f"expected a Tensor or a number, got {type(value).__name__}")


def operands(*values: Any) -> tuple[np.dtype, list[Any]]:
    """PyTorch's result dtype for the operands, and each operand ready for a Function.

    Tensors keep their own dtype (the backward loop casts each gradient back to
    its input's dtype). A Python number beside a floating tensor stays a number:
    NumPy 2 treats it as weak, exactly as PyTorch treats a wrapped number, and
    skipping the 0-d array saves a microsecond per op. Other numbers become 0-d
    tensors of the result dtype."""
    if len(values) == 2:
        a, b = values
        if type(a) is Tensor:
            ad = a._data.dtype
            if type(b) is Tensor:
                if b._data.dtype == ad:
                    return ad, [a, b]
            elif type(b) in _WEAK and ad.kind == "f":
                return ad, [a, b]
    rt = dtypes.result_type(*values)
    return rt, [v if isinstance(v, Tensor) else as_tensor(v, rt) for v in values]


_WEAK = (float, int)


def cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return a if a.dtype == dtype else a.astype(dtype)


def arr(value: Any, dtype: np.dtype) -> Any:
    """An operand's array in ``dtype`` (Python numbers pass through: NumPy keeps them weak)."""
    if type(value) is Tensor:
        data = value._data
        return data if data.dtype == dtype else data.astype(dtype)
    return value


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeMismatchError(broadcast_message(shapes)) from None


def normalize_dim(dim: Any, ndim: int) -> int:
    """A dim in ``[-ndim, ndim)`` as a non-negative index (0-d tensors accept 0 and -1)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise BadArgumentsError(f"dim must be an integer, got {dim!r}")
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise IndexOutOfRangeError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return int(dim) % max(ndim, 1)


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of distinct axes; None means every axis."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if not isinstance(dim, (list, tuple)) else tuple(dim)
    seen: list[int] = []
    for d in dims:
        n = normalize_dim(d, ndim)
        if n in seen:
            raise BadArgumentsError(f"dim {n} appears multiple times in the list of dims")
        seen.append(n)
    out = tuple(sorted(seen))
    return out if ndim else ()


def shape_arg(shape: Any) -> tuple[int, ...]:
    """A shape given as ints or one sequence: ``reshape(2, 3)`` or ``reshape((2, 3))``."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    try:
        out = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise BadArgumentsError(f"shape must be a sequence of integers, got {shape!r}") from None
    if any(isinstance(s, bool) for s in shape):
        raise BadArgumentsError(f"shape must be a sequence of integers, got {shape!r}")
    return out


class _Unset:
    """A default that tells "not passed" from "passed as its default value": PyTorch
    picks another overload, so another grad_fn name, when an argument is given at all
    (``round(x, decimals=0)`` is RoundBackward1)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def public_defaults(**defaults: Any) -> Any:
    """The signature the catalogue shows: ``defaults`` where the function's own
    parameters default to ``UNSET``."""

    def deco(fn: Any) -> Any:
        sig = inspect.signature(fn)
        fn.__signature__ = sig.replace(
            parameters=[
                p.replace(default=defaults[p.name]) if p.name in defaults else p
                for p in sig.parameters.values()
            ]
        )
        return fn

    return deco
