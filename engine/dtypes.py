"""Supported dtypes and PyTorch's type promotion.

NumPy 2 promotes a float32 array with a float64 0-d array to float64, and an
int64 array with a float16 array to float64; PyTorch keeps float32 and float16:
0-d tensors and Python scalars rank below dimensioned tensors of the same
category (bool < integer < floating < complex), and an integer never widens a float.
``result_type`` implements PyTorch's three tiers (dimensioned tensors, 0-d
tensors, wrapped Python numbers) and ``promote`` its lattice within one tier.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DtypeMismatchError, InvalidTensorError

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
uint8 = np.dtype(np.uint8)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

DTYPES: dict[str, np.dtype] = {
    "float16": float16,
    "float32": float32,
    "float64": float64,
    "uint8": uint8,
    "int8": int8,
    "int16": int16,
    "int32": int32,
    "int64": int64,
    "bool": bool_,
    "complex64": complex64,
    "complex128": complex128,
}
# PyTorch's other spellings of the same dtypes (``torch.half``, ``torch.long`` ...)
_ALIASES: dict[str, np.dtype] = {
    "half": float16,
    "float": float32,
    "double": float64,
    "short": int16,
    "int": int32,
    "long": int64,
    "cfloat": complex64,
    "cdouble": complex128,
}
DEFAULT_FLOAT = float32
FLOATING = (float16, float32, float64)
COMPLEX = (complex64, complex128)
# the complex type holding a float type's values (torch's toComplexType; no complex32)
COMPLEX_OF: dict[np.dtype, np.dtype] = {float16: complex64, float32: complex64, float64: complex128}
REAL_OF: dict[np.dtype, np.dtype] = {complex64: float32, complex128: float64}

_TORCH_NAMES = {dt: name for name, dt in DTYPES.items()}
# The names in PyTorch's messages: "not implemented for 'Long'", "torch.LongTensor"
TYPE_NAMES = {
    float16: "Half",
    float32: "Float",
    float64: "Double",
    uint8: "Byte",
    int8: "Char",
    int16: "Short",
    int32: "Int",
    int64: "Long",
    bool_: "Bool",
    complex64: "ComplexFloat",
    complex128: "ComplexDouble",
}
_CATEGORY = {bool_: 0, uint8: 1, int8: 1, int16: 1, int32: 1, int64: 1}
_CATEGORY.update({f: 2 for f in FLOATING})
_CATEGORY.update({c: 3 for c in COMPLEX})
# PyTorch's "limited support" unsigned types (hash_tensor's uint64): integers in
# promotion, where PyTorch refuses to mix them with another integer type
_LIMITED = frozenset(np.dtype(t) for t in (np.uint16, np.uint32, np.uint64))
_CATEGORY.update({u: 1 for u in _LIMITED})


def to_dtype(dtype: Any) -> np.dtype:
    """Normalize a dtype name (``"float16"``, ``"torch.half"``) or numpy dtype to a
    supported dtype; numpy's others map to the nearest PyTorch has."""
    if dtype is None:
        return DEFAULT_FLOAT
    if isinstance(dtype, str):
        key = dtype.removeprefix("torch.")
        if key in DTYPES:
            return DTYPES[key]
        if key in _ALIASES:
            return _ALIASES[key]
        raise InvalidTensorError(
            f"unsupported dtype {dtype!r}; expected one of {', '.join(DTYPES)}"
        )
    if dtype is float:
        return float64
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    dt = np.dtype(dtype)
    if dt in _CATEGORY:
        return DTYPES[_TORCH_NAMES[dt]]
    if dt.kind == "f":
        return float64 if dt.itemsize > 4 else float32
    if dt.kind in "iu":
        return int64
    if dt.kind == "c":
        return complex128 if dt.itemsize > 8 else complex64
    raise InvalidTensorError(f"unsupported dtype {dt}; expected one of {', '.join(DTYPES)}")


def torch_name(dtype: np.dtype) -> str:
    return _TORCH_NAMES.get(dtype, str(dtype))


def type_name(dtype: np.dtype) -> str:
    """PyTorch's scalar type name in messages (``Long``, ``Half``, ``Bool``)."""
    return TYPE_NAMES.get(dtype, str(dtype))


# C++ type names PyTorch prints for a dtype in some messages ("but got double instead")
CPP_NAMES = {
    float16: "c10::Half",
    float32: "float",
    float64: "double",
    uint8: "unsigned char",
    int8: "signed char",
    int16: "short int",
    int32: "int",
    int64: "long int",
    bool_: "bool",
}


def cpp_name(dtype: np.dtype) -> str:
    return CPP_NAMES.get(dtype, str(dtype))


def is_floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def is_differentiable(dtype: np.dtype) -> bool:
    """Floating or complex: the dtypes a tensor that requires grad may have."""
    return dtype.kind in "fc"


def to_real(dtype: np.dtype) -> np.dtype:
    """The real dtype of a complex one's parts (``float32`` for ``complex64``)."""
    return REAL_OF.get(dtype, dtype)


def to_complex(dtype: np.dtype) -> np.dtype:
    """The complex dtype a real one becomes (integers take the default, complex64)."""
    if dtype.kind == "c":
        return dtype
    return COMPLEX_OF.get(dtype, complex64)


def category(dtype: np.dtype) -> int:
    """0 for bool, 1 for integers, 2 for floating, 3 for complex."""
    return _CATEGORY[dtype]


def promote(a: np.dtype | None, b: np.dtype | None) -> np.dtype | None:
    """PyTorch's ``promoteTypes``: within a category the wider type (uint8 with int8 is
    int16); across categories the higher category's type, unchanged (int64 with
    float16 is float16, where numpy says float64)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if {ca, cb} == {2, 3}:  # complex64 with float64 is complex128, as torch
        real = np.promote_types(to_real(a), to_real(b))
        return COMPLEX_OF[real]
    if ca != cb:
        return a if ca > cb else b
    if a in _LIMITED or b in _LIMITED:
        raise DtypeMismatchError(
            f"Promotion for uint16, uint32, uint64 types is not supported, attempted to "
            f"promote {cpp_name(a)} and {cpp_name(b)}"
        )
    return np.promote_types(a, b)


def scalar_dtype(value: Any) -> np.dtype:
    """The dtype a wrapped Python number takes: bool, int64 or the default float."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (complex, np.complexfloating)):
        return COMPLEX_OF[DEFAULT_FLOAT]
    return DEFAULT_FLOAT


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """A higher tier's type wins unless the lower tier is of a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _CATEGORY[higher] == 2 and _CATEGORY[lower] == 3:  # float32 with a complex number
        return COMPLEX_OF[higher]
    if _CATEGORY[higher] >= 2:
        return higher
    if higher is bool_ or _CATEGORY[lower] > _CATEGORY[higher]:
        return promote(higher, lower)
    return higher


def result_type(*operands: Any) -> np.dtype:
    """PyTorch's result type for Tensors (by ndim) and Python scalars."""
    dim = zero = wrapped = None
    for op in operands:
        data = getattr(op, "_data", None)
        if isinstance(data, np.ndarray):
            if data.ndim:
                dim = promote(dim, data.dtype)
            else:
                zero = promote(zero, data.dtype)
        else:
            wrapped = promote(wrapped, scalar_dtype(op))
    out = _combine(dim, _combine(zero, wrapped))
    return out if out is not None else DEFAULT_FLOAT
