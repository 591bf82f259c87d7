"""Tensor values on the wire: numpy arrays <-> ``{"data"}`` / ``{"b64", "shape"}``, and
raw bytes (``application/octet-stream``, dtype and shape beside them).

Small tensors travel as readable JSON; from ``B64_THRESHOLD`` elements on,
as base64 of the raw little-endian bytes (exact, ~5x cheaper to parse than a
list of floats). Non-finite floats are the strings ``"NaN"``, ``"Infinity"``
and ``"-Infinity"`` in JSON. A leaf's upload and a value's or grad's download
go as raw bytes instead from ``BINARY_MIN_ELEMENTS`` elements on (the README's
"Binary" contract; ``bench/client_transport.py`` measured where it pays).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pybase64  # SIMD base64: ~20x the standard library's speed on tensor payloads

from . import errors

# the engine's dtypes (PyTorch's float16 ... bool), little-endian as on the wire
DTYPES: dict[str, np.dtype[Any]] = {
    "float16": np.dtype("<f2"),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
    "uint8": np.dtype("u1"),
    "int8": np.dtype("i1"),
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "bool": np.dtype(np.bool_),
}
B64_THRESHOLD = 256
BINARY = "application/octet-stream"
DTYPE_HEADER = "Gradserve-Dtype"
SHAPE_HEADER = "Gradserve-Shape"
BINARY_MIN_ELEMENTS = 16384  # bench/client_transport.py: below, no faster than JSON


def dtype_name(dtype: np.dtype) -> str:
    """The wire dtype for a numpy dtype: the engine's keep their name (as
    ``torch.from_numpy`` does); other unsigned ints become int64, other floats float64."""
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iuf" and dtype.name in DTYPES:
        return dtype.name
    if dtype.kind in "iu":
        return "int64"
    if dtype.kind == "f":
        return "float64"
    raise TypeError(f"gradserve has no dtype for {dtype}; use one of {', '.join(DTYPES)}")


def use_binary(binary: bool | None, elements: int) -> bool:
    """Raw bytes for a transfer: as asked, or by size when ``binary`` is None."""
    return elements >= BINARY_MIN_ELEMENTS if binary is None else binary


def raw_upload(arr: np.ndarray, requires_grad: bool) -> dict[str, Any]:
    """The request arguments of a binary leaf upload (``PUT .../tensors/{name}``)."""
    name = dtype_name(arr.dtype)
    target = np.dtype(np.uint8) if name == "bool" else DTYPES[name]
    return {
        "content": np.ascontiguousarray(arr, dtype=target).tobytes(),
        "headers": {"Content-Type": BINARY},
        "params": {
            "dtype": name,
            "shape": ",".join(str(d) for d in np.shape(arr)),
            "requires_grad": "true" if requires_grad else "false",
        },
    }


def leaf_meta(name: str, arr: np.ndarray, requires_grad: bool) -> dict[str, Any]:
    """A new leaf's metadata, known without asking (what the server answers its PUT with)."""
    return {
        "name": name,
        "shape": list(arr.shape),
        "dtype": dtype_name(arr.dtype),
        "requires_grad": requires_grad,
        "is_leaf": True,
        "grad_fn": None,
        "retains_grad": False,
        "version": 0,
    }


def from_raw(content: bytes, dtype: str | None, shape: str | None) -> np.ndarray:
    """The array of a binary download (``Gradserve-Dtype``/``Gradserve-Shape`` headers)."""
    if dtype not in DTYPES or shape is None:
        raise errors.TransportError(
            f"a binary answer needs {DTYPE_HEADER} and {SHAPE_HEADER} headers naming a known "
            f"dtype and a shape, not {dtype!r} and {shape!r}"
        )
    dims = tuple(int(d) for d in shape.split(",")) if shape.strip() else ()
    if dtype == "bool":
        return (np.frombuffer(content, dtype=np.uint8) != 0).reshape(dims)
    wire = DTYPES[dtype]
    return np.frombuffer(content, dtype=wire).astype(wire.newbyteorder("=")).reshape(dims)


def as_array(value: Any, dtype: str | None = None) -> np.ndarray:
    """A numpy array for a Python value, with PyTorch's defaults (floats -> float32)."""
    if dtype is not None:
        return np.asarray(value, dtype=DTYPES[dtype].newbyteorder("="))
    arr = np.asarray(value)
    if isinstance(value, np.ndarray):
        return arr
    if arr.dtype.kind == "f":  # Python floats: torch.tensor([1.0]) is float32
        return arr.astype(np.float32)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    return arr


def _jsonable(x: Any) -> Any:
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return x


def encode(arr: np.ndarray, *, b64: bool | None = None) -> dict[str, Any]:
    """A ``TensorIn`` value; base64 when asked or when the tensor is large."""
    name = dtype_name(arr.dtype)
    arr = np.asarray(arr, dtype=DTYPES[name], order="C")  # (ascontiguousarray makes 0-d 1-d)
    if b64 is None:
        b64 = arr.size >= B64_THRESHOLD
    if b64:
        return {
            "b64": pybase64.b64encode(arr.reshape(-1).view(np.uint8).data).decode("ascii"),
            "dtype": name,
            "shape": list(arr.shape),
        }
    if arr.size == 0 and arr.ndim > 1:  # nested lists lose the dims after a zero
        return {"data": arr.tolist(), "dtype": name, "shape": list(arr.shape)}
    return {"data": _jsonable(arr.tolist()), "dtype": name}


def decode(value: dict[str, Any] | np.ndarray) -> np.ndarray:
    """The numpy array for a ``ValueOut`` (``data`` or ``b64`` + ``shape``); an array read
    as raw bytes is already one."""
    if isinstance(value, np.ndarray):
        return value
    dtype = DTYPES[value.get("dtype") or "float32"]
    if value.get("b64") is not None:
        raw = pybase64.b64decode(value["b64"], validate=True)
        shape = tuple(value.get("shape") or ())
        return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))
    data = value.get("data")
    arr = np.array(data, dtype=dtype)  # numpy reads "NaN", "Infinity", "-Infinity" itself
    if value.get("shape") is not None:
        arr = arr.reshape(value["shape"])
    return arr
