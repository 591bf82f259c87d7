"""The tensor wire codec: JSON or base64 values <-> numpy arrays, in one module.

``{"data": nested list | number, "dtype"?}`` carries readable values, with the
strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` for non-finite floats;
``{"b64", "dtype", "shape"}`` carries the raw little-endian bytes. A missing
dtype means float32, even for integer literals (a JavaScript client cannot
tell ``1`` from ``1.0``). Sizes are checked against the element limit before
anything is allocated. Responses are serialized with orjson, which writes
contiguous numpy arrays directly (and float32 with its shortest repr).
"""

from __future__ import annotations

import binascii
import math
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import orjson
import pybase64  # SIMD base64: ~40x the standard library's speed on tensor payloads

from engine import dtypes as engine_dtypes

from .errors import InvalidTensorError, LimitExceededError

# Every real engine dtype, by the same names (one list: engine.dtypes.DTYPES); complex
# ones stay inside the engine (JSON has no complex numbers; steps refuse complex results).
DTYPES: dict[str, np.dtype] = {
    name: dt for name, dt in engine_dtypes.DTYPES.items() if dt.kind != "c"
}
DEFAULT_DTYPE = "float32"
SPECIALS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
MAX_NDIM = 32  # numpy's own limit is 64; no autograd tutorial comes near either

Encoding = Literal["json", "base64"]


def dtype_of(name: str | None) -> np.dtype:
    """The numpy dtype for a wire dtype name (float32 when absent)."""
    if name is None:
        return DTYPES[DEFAULT_DTYPE]
    try:
        return DTYPES[name]
    except (KeyError, TypeError):
        raise InvalidTensorError(
            f"unknown dtype {name!r}; expected one of {', '.join(DTYPES)}"
        ) from None


@lru_cache(maxsize=64)
def dtype_name(dtype: np.dtype) -> str:
    """The wire name (numpy's ``dtype.name`` is computed in Python on every access)."""
    return "bool" if dtype.kind == "b" else dtype.name


def check_shape(shape: Any) -> tuple[int, ...]:
    """A shape is a list of non-negative integers (integral floats are accepted)."""
    if not isinstance(shape, list | tuple):
        raise InvalidTensorError(f"shape must be a list of integers, got {shape!r}")
    if len(shape) > MAX_NDIM:
        raise InvalidTensorError(f"shape has {len(shape)} dimensions; at most {MAX_NDIM}")
    dims = []
    for dim in shape:
        if isinstance(dim, float) and dim.is_integer():
            dim = int(dim)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
            raise InvalidTensorError(
                f"shape must be a list of non-negative integers, got {list(shape)!r}"
            )
        dims.append(dim)
    return tuple(dims)


def check_elements(count: int, limit: int, what: str = "tensor") -> None:
    """Refuse (413) a tensor over the element limit; call before allocating it."""
    if count > limit:
        raise LimitExceededError(
            f"{what} would have {count} elements; the limit is {limit}",
            status=413,
            hint="split the tensor, or raise GRADSERVE_MAX_TENSOR_ELEMENTS",
        )


# --- decoding ---------------------------------------------------------------------------------


def decode(value: Any, *, max_elements: int) -> np.ndarray:
    """A wire value (a ``TensorIn``, a dict, a bare number or nested list) as an ndarray."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(exclude_unset=True)
    if not isinstance(value, dict):
        return decode_data(value, None, max_elements=max_elements)
    has_data, has_b64 = "data" in value, value.get("b64") is not None
    if has_data == has_b64:
        raise InvalidTensorError("a tensor value needs exactly one of 'data' or 'b64'")
    if has_b64:
        return decode_b64(
            value["b64"], value.get("dtype"), value.get("shape"), max_elements=max_elements
        )
    arr = decode_data(value["data"], value.get("dtype"), max_elements=max_elements)
    if value.get("shape") is not None and (dims := check_shape(value["shape"])) != arr.shape:
        # Nested lists cannot say the dims after a zero ([[], []] for shape [2, 0, 3]).
        if arr.size or math.prod(dims) or dims[: arr.ndim] != arr.shape:
            raise InvalidTensorError(
                f"data has shape {list(arr.shape)} but shape says {list(value['shape'])}"
            )
        arr = arr.reshape(dims)
    return arr


def decode_data(data: Any, dtype: str | None, *, max_elements: int) -> np.ndarray:
    """A number or rectangular nested list; fast path for plain numbers."""
    target = dtype_of(dtype)
    if isinstance(data, dict) or data is None:
        raise InvalidTensorError("'data' must be a number or a nested list of numbers")
    try:
        arr = np.array(data)
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise InvalidTensorError(_ragged_message(exc)) from None
    if arr.ndim > MAX_NDIM:
        raise InvalidTensorError(f"data has {arr.ndim} dimensions; at most {MAX_NDIM}")
    check_elements(arr.size, max_elements)
    if arr.dtype.kind not in "biuf":
        arr = _decode_slow(data, target)
    return _cast(arr, target)


def _ragged_message(exc: Exception) -> str:
    text = str(exc)
    if "inhomogeneous" in text:
        return "'data' is ragged: every row must have the same length (" + text + ")"
    return f"'data' is not a rectangular list of numbers: {text}"


def _clean(value: Any) -> Any:
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str):
        try:
            return SPECIALS[value]
        except KeyError:
            raise InvalidTensorError(
                f"'data' holds the string {value[:40]!r}; only numbers and "
                '"NaN", "Infinity", "-Infinity" are allowed'
            ) from None
    if isinstance(value, bool | int | float):
        return value
    raise InvalidTensorError(f"'data' holds {type(value).__name__} {value!r:.40}; expected numbers")


def _decode_slow(data: Any, target: np.dtype) -> np.ndarray:
    """Data holding strings or odd objects: map the non-finite names, refuse the rest."""
    cleaned = _clean(data)
    try:
        return np.array(cleaned, dtype=np.float64 if target.kind == "f" else None)
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidTensorError(_ragged_message(exc)) from None


def _cast(arr: np.ndarray, target: np.dtype) -> np.ndarray:
    """``arr`` as ``target``; integers must fit (PyTorch: "value cannot be converted to
    type int8 without overflow"), floats truncate toward zero into integers, and a float
    too large for float16/float32 becomes infinity (as in PyTorch)."""
    if arr.dtype == target:
        return arr
    if target.kind in "iu" and arr.dtype.kind in "fuiO":
        name = dtype_name(target)
        info = np.iinfo(target)
        if arr.dtype.kind in "fO":
            try:
                checked = arr.astype(np.float64)
            except (OverflowError, ValueError, TypeError):
                raise InvalidTensorError(f"values do not fit {name}") from None
            if not np.isfinite(checked).all():
                raise InvalidTensorError(f"NaN or infinity cannot be stored as {name}")
            if arr.dtype.kind == "O":
                arr = checked
            low, high = float(info.min) - 1.0, float(info.max) + 1.0  # truncation's bounds
            if checked.size and (checked.min() <= low or checked.max() >= high):
                raise InvalidTensorError(f"values do not fit {name}")
        elif arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
            raise InvalidTensorError(f"values do not fit {name}")
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # float overflow -> inf
            return arr.astype(target)
    except (OverflowError, ValueError, TypeError) as exc:
        raise InvalidTensorError(
            f"values cannot be stored as {dtype_name(target)}: {exc}"
        ) from None


def decode_b64(b64: Any, dtype: str | None, shape: Any, *, max_elements: int) -> np.ndarray:
    """Raw little-endian bytes; the shape is checked against the limit before decoding."""
    target = dtype_of(dtype)
    if not isinstance(b64, str):
        raise InvalidTensorError("'b64' must be a base64 string")
    itemsize = target.itemsize
    if shape is None:
        size = (len(b64) // 4) * 3  # an upper bound: a flat vector of what it holds
        check_elements(size // itemsize, max_elements)
        dims = None
    else:
        dims = check_shape(shape)
        check_elements(math.prod(dims), max_elements)
        size = math.prod(dims) * itemsize
        if len(b64) != 4 * math.ceil(size / 3):
            raise InvalidTensorError(
                f"'b64' has {len(b64)} characters; shape {list(dims)} of {dtype_name(target)} "
                f"needs {size} bytes, i.e. {4 * math.ceil(size / 3)} base64 characters"
            )
    try:
        raw = pybase64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidTensorError(f"'b64' is not valid base64: {exc}") from None
    if dims is None:
        if len(raw) % itemsize:
            raise InvalidTensorError(
                f"'b64' holds {len(raw)} bytes, not a multiple of {itemsize} ({dtype_name(target)})"
            )
        dims = (len(raw) // itemsize,)
    elif len(raw) != size:
        raise InvalidTensorError(
            f"'b64' holds {len(raw)} bytes; shape {list(dims)} of {dtype_name(target)} needs {size}"
        )
    if target.kind == "b":
        return (np.frombuffer(raw, dtype=np.uint8) != 0).reshape(dims)
    return np.frombuffer(raw, dtype=target.newbyteorder("<")).astype(target).reshape(dims)


# --- encoding ---------------------------------------------------------------------------------


def shape_param(text: str | None) -> tuple[int, ...] | None:
    """A shape as a query parameter: comma-separated (``2,3``; empty for a 0-d tensor)."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    if not all(p.isdigit() for p in parts):
        raise InvalidTensorError(
            f"shape must be comma-separated non-negative integers, got {text[:80]!r}"
        )
    return check_shape([int(p) for p in parts])


def decode_raw(
    raw: bytes, dtype: str | None, shape: tuple[int, ...] | None, *, max_elements: int
) -> np.ndarray:
    """Raw little-endian bytes (the body of a binary upload) as an ndarray of ``shape``
    (flat when None); the length must fit the shape and dtype."""
    target = dtype_of(dtype)
    itemsize = target.itemsize
    if shape is None:
        if len(raw) % itemsize:
            raise InvalidTensorError(
                f"the body holds {len(raw)} bytes, not a multiple of {itemsize} "
                f"({dtype_name(target)})"
            )
        shape = (len(raw) // itemsize,)
    check_elements(math.prod(shape), max_elements)
    size = math.prod(shape) * itemsize
    if len(raw) != size:
        raise InvalidTensorError(
            f"the body holds {len(raw)} bytes; shape {list(shape)} of {dtype_name(target)} "
            f"needs {size}"
        )
    if target.kind == "b":
        return (np.frombuffer(raw, dtype=np.uint8) != 0).reshape(shape)
    return np.frombuffer(raw, dtype=target.newbyteorder("<")).astype(target).reshape(shape)


def raw_bytes(arr: np.ndarray) -> bytes:
    """An array's values as raw little-endian bytes (bool as one byte each)."""
    if arr.dtype.kind == "b":
        return np.ascontiguousarray(arr, dtype=np.uint8).tobytes()
    return np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()


def encode(arr: np.ndarray, encoding: Encoding = "json") -> dict[str, Any]:
    """An ndarray as a wire value; ``orjson`` with ``OPT_SERIALIZE_NUMPY`` renders it.

    ``b64`` is an ``orjson.Fragment``, the JSON string already written: the base64
    alphabet needs no escaping, and orjson would spend 4 ms scanning 5 MB to find out."""
    name = dtype_name(arr.dtype)
    if encoding == "base64":
        little = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        b64 = pybase64.b64encode(little.reshape(-1).view(np.uint8).data)
        return {
            "b64": orjson.Fragment(b'"' + b64 + b'"'),
            "dtype": name,
            "shape": list(arr.shape),
        }
    if arr.size == 0 and arr.ndim > 1:  # nested lists lose the dims after a zero
        return {"data": json_data(arr), "dtype": name, "shape": list(arr.shape)}
    return {"data": json_data(arr), "dtype": name}


def json_data(arr: np.ndarray) -> Any:
    """Nested lists (as a contiguous array orjson writes natively), non-finite as strings."""
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        return _with_specials(arr)
    if arr.ndim == 0:
        return arr[()]
    return np.ascontiguousarray(arr)


def _special(v: float) -> str:
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")


def _with_specials(arr: np.ndarray) -> Any:
    out = np.empty(arr.shape, dtype=object)
    flat = out.reshape(-1)
    short = arr.dtype.itemsize == 4  # str() of a float32 is its shortest repr; reads back exactly
    for i, v in enumerate(arr.reshape(-1)):
        f = float(v)
        if not math.isfinite(f):
            flat[i] = _special(f)
        else:
            flat[i] = float(str(v)) if short else f
    return out.tolist()
