"""``tensor``: make a leaf from Python data with PyTorch's dtype inference."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .compat import cpu_device
from .errors import InvalidTensorError
from .tensor import Tensor


def _infer(data: Any, dtype: np.dtype | None = None) -> np.ndarray:
    if isinstance(data, Tensor):
        return data._data.copy()
    if isinstance(data, np.ndarray):
        return data.astype(dtypes.to_dtype(data.dtype), copy=True)
    try:
        arr = np.array(data)
    except ValueError as exc:
        raise InvalidTensorError(f"could not build a tensor: {exc}") from None
    if arr.dtype == object:
        raise InvalidTensorError("ragged nested sequence: every row must have the same length")
    if arr.dtype.kind == "f":  # Python floats straight to the asked dtype (0.3 as float64)
        return arr.astype(dtypes.DEFAULT_FLOAT if dtype is None else dtype)
    if arr.dtype.kind in "iu":
        return arr.astype(dtypes.int64)
    if arr.dtype.kind == "b":
        return arr
    if arr.dtype.kind == "c":  # Python complex numbers: the default complex dtype
        return arr.astype(dtypes.to_complex(dtypes.DEFAULT_FLOAT) if dtype is None else dtype)
    raise InvalidTensorError(f"unsupported element type {arr.dtype}")


def tensor(
    data: Any, dtype: Any = None, requires_grad: bool = False, *, device: Any = None
) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (``torch.tensor``; ``device`` the CPU)."""
    cpu_device(device)
    target = None if dtype is None else dtypes.to_dtype(dtype)
    arr = _infer(data, target)
    if target is not None:
        arr = arr.astype(target)
    return Tensor(arr, requires_grad=requires_grad)
