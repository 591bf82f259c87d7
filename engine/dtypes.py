"""Supported dtypes and PyTorch's type promotion.

NumPy 2 promotes a float32 array with a float64 0-d array to float64; PyTorch
keeps float32 because 0-d tensors and Python scalars rank below dimensioned
tensors of the same category. ``result_type`` implements PyTorch's three tiers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InvalidTensorError

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

DTYPES: dict[str, np.dtype] = {
    "float32": float32,
    "float64": float64,
    "int64": int64,
    "bool": bool_,
}
DEFAULT_FLOAT = float32
FLOATING = (float32, float64)

_TORCH_NAMES = {float32: "float32", float64: "float64", int64: "int64", bool_: "bool"}
_CATEGORY = {bool_: 0, int64: 1, float32: 2, float64: 2}
_PROMOTE_ORDER = [bool_, int64, float32, float64]


def to_dtype(dtype: Any) -> np.dtype:
    """Normalize a dtype name or numpy dtype to one of the supported dtypes."""
    if dtype is None:
        return DEFAULT_FLOAT
    if isinstance(dtype, str):
        key = dtype.removeprefix("torch.")
        if key in DTYPES:
            return DTYPES[key]
        raise InvalidTensorError(
            f"unsupported dtype {dtype!r}; expected one of {', '.join(DTYPES)}"
        )
    dt = np.dtype(dtype)
    if dt in _CATEGORY:
        return dt
    if dt.kind == "f":
        return float64 if dt.itemsize > 4 else float32
    if dt.kind in "iu":
        return int64
    raise InvalidTensorError(f"unsupported dtype {dt}; expected one of {', '.join(DTYPES)}")


def torch_name(dtype: np.dtype) -> str:
    return _TORCH_NAMES.get(dtype, str(dtype))


def is_floating(dtype: np.dtype) -> bool:
    return dtype is float32 or dtype is float64 or dtype in FLOATING


def promote(a: np.dtype | None, b: np.dtype | None) -> np.dtype | None:
    """Promotion within one tier (bool < int64 < float32 < float64)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    return _PROMOTE_ORDER[max(_PROMOTE_ORDER.index(a), _PROMOTE_ORDER.index(b))]


def scalar_dtype(value: Any) -> np.dtype:
    """The dtype a wrapped Python number takes: bool, int64 or the default float."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    return DEFAULT_FLOAT


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _CATEGORY[higher] == 2:
        return higher
    if higher is bool_ or _CATEGORY[lower] > _CATEGORY[higher]:
        return promote(higher, lower)
    return higher


def result_type(*operands: Any) -> np.dtype:
    """PyTorch's result type for Tensors (by ndim) and Python scalars."""
    dim = zero = wrapped = None
    for op in operands:
        data = getattr(op, "data", None)
        if isinstance(data, np.ndarray):
            if data.ndim:
                dim = promote(dim, data.dtype)
            else:
                zero = promote(zero, data.dtype)
        else:
            wrapped = promote(wrapped, scalar_dtype(op))
    out = _combine(dim, _combine(zero, wrapped))
    return out if out is not None else DEFAULT_FLOAT
