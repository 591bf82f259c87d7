"""Tensors as bytes: raw binary uploads and downloads, and a session's leaves and grads
as a safetensors file (export and import), readable by ``safetensors.torch.load_file``.

A safetensors file holds each leaf under its name and its grad under ``name.grad``; the
header's metadata says which leaves require grad (``requires_grad``: a JSON list of
names), so a PyTorch user can restore them with ``requires_grad_()``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import safetensors.numpy
from fastapi import Response
from pydantic import TypeAdapter, ValidationError

from engine import Tensor

from .. import codec
from ..errors import InvalidTensorError
from ..names import tensor_name_error
from ..session.quotas import check_bytes
from ..session.state import Session, grad_of
from ..settings import Settings

BINARY = "application/octet-stream"
DTYPE_HEADER = "Gradserve-Dtype"
SHAPE_HEADER = "Gradserve-Shape"
REQUIRES_GRAD_KEY = "requires_grad"
_BOOL = TypeAdapter(bool)


def is_binary(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == BINARY


def wants_binary(accept: str | None) -> bool:
    """Whether the Accept header asks for raw bytes before (or instead of) JSON."""
    for part in (accept or "").split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media == BINARY:
            return True
        if media in ("application/json", "application/*", "*/*"):
            return False
    return False


def binary_params(query: Mapping[str, str], headers: Mapping[str, str]) -> dict[str, str]:
    """A binary upload's ``dtype`` and ``shape``: the query parameters, or the
    ``Gradserve-Dtype`` and ``Gradserve-Shape`` headers a download carries (422 if both
    are given and differ)."""
    params = dict(query)
    for key, header in (("dtype", DTYPE_HEADER), ("shape", SHAPE_HEADER)):
        value = headers.get(header)
        if value is None:
            continue
        if key in params and params[key].replace(" ", "") != value.replace(" ", ""):
            raise InvalidTensorError(
                f"the {key} query parameter ({params[key][:40]!r}) and the {header} header "
                f"({value[:40]!r}) disagree",
                hint="give one of them",
            )
        params[key] = value
    return params


def binary_leaf(
    query: Mapping[str, str], raw: bytes, settings: Settings
) -> tuple[np.ndarray, bool]:
    """A binary upload's values, from the body and the ``dtype``, ``shape`` and
    ``requires_grad`` query parameters (the same rules as a ``b64`` value)."""
    shape = codec.shape_param(query.get("shape"))
    arr = codec.decode_raw(
        raw, query.get("dtype"), shape, max_elements=settings.max_tensor_elements
    )
    try:
        requires_grad = _BOOL.validate_python(query.get("requires_grad", False))
    except ValidationError:
        raise InvalidTensorError(
            f"requires_grad must be true or false, not {query.get('requires_grad', '')[:40]!r}"
        ) from None
    return arr, requires_grad


def binary_response(t: Tensor, status_code: int = 200) -> Response:
    """The tensor's values as raw little-endian bytes, dtype and shape in headers."""
    return Response(
        codec.raw_bytes(t._data),
        status_code=status_code,
        media_type=BINARY,
        headers={
            DTYPE_HEADER: codec.dtype_name(t.dtype),
            SHAPE_HEADER: ",".join(str(d) for d in t.shape),
        },
    )


# --- safetensors ------------------------------------------------------------------------------


def export_session(session: Session) -> bytes:
    """The session's leaves (by name) and their grads (``name.grad``) as safetensors."""
    arrays: dict[str, np.ndarray] = {}
    requires: list[str] = []
    for name, t in session.tensors.items():
        if not t.is_leaf:
            continue
        arrays[name] = np.asarray(t._data, order="C")
        if t.requires_grad:
            requires.append(name)
        g = grad_of(t)
        if g is not None:
            arrays[f"{name}.grad"] = np.asarray(g._data, order="C")
    # sorted: the same file for the same session, however its names were bound
    metadata = {"format": "gradserve", REQUIRES_GRAD_KEY: json.dumps(sorted(requires))}
    return _sorted_metadata(bytes(safetensors.numpy.save(arrays, metadata=metadata)))


def _sorted_metadata(raw: bytes) -> bytes:
    """The file with its ``__metadata__`` keys in sorted order: safetensors writes them
    from a hash map, in an order that changes from one process to the next."""
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    header["__metadata__"] = dict(sorted(header.get("__metadata__", {}).items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)  # the data stays 8-byte aligned, as safetensors pads
    return struct.pack("<Q", len(text)) + text + raw[8 + length :]


def _metadata(raw: bytes) -> Mapping[str, str]:
    """The header's ``__metadata__`` (the file was already read by safetensors)."""
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    meta = header.get("__metadata__") or {}
    return meta if isinstance(meta, dict) else {}


def read_safetensors(raw: bytes, settings: Settings) -> dict[str, tuple[np.ndarray, Any, bool]]:
    """The leaves of a safetensors file: name -> (values, grad values or None, requires_grad),
    every name, dtype, shape and size checked before anything is bound."""
    try:
        arrays = safetensors.numpy.load(raw)
        meta = _metadata(raw)
    except Exception as exc:  # safetensors raises its own errors, and struct/json theirs
        raise InvalidTensorError(f"the body is not a safetensors file: {exc}"[:300]) from None
    try:
        requires = json.loads(meta.get(REQUIRES_GRAD_KEY, "[]"))
    except (ValueError, RecursionError):  # RecursionError: lists nested 1,000 deep
        requires = None
    if not isinstance(requires, list) or not all(isinstance(n, str) for n in requires):
        raise InvalidTensorError(f"metadata {REQUIRES_GRAD_KEY!r} must be a JSON list of names")
    leaves: dict[str, np.ndarray] = {}
    grads: dict[str, np.ndarray] = {}
    for key, arr in arrays.items():
        name, dot, attr = key.partition(".")
        if (dot and attr != "grad") or tensor_name_error(name) is not None:
            raise InvalidTensorError(f"{key[:80]!r} is neither a tensor name nor 'name.grad'")
        if arr.dtype not in codec.DTYPES.values():
            raise InvalidTensorError(
                f"{key!r} has dtype {arr.dtype}; expected one of {', '.join(codec.DTYPES)}"
            )
        codec.check_elements(arr.size, settings.max_tensor_elements, repr(key))
        (grads if dot else leaves)[name] = arr
    for name, g in grads.items():
        leaf = leaves.get(name)
        if leaf is None:
            raise InvalidTensorError(f"'{name}.grad' is in the file but {name!r} is not")
        if g.shape != leaf.shape or g.dtype != leaf.dtype:
            raise InvalidTensorError(
                f"'{name}.grad' has shape {list(g.shape)} and dtype {g.dtype}; the leaf has "
                f"{list(leaf.shape)} and {leaf.dtype}"
            )
    unknown = [n for n in requires if n not in leaves]
    if unknown:
        raise InvalidTensorError(
            f"metadata {REQUIRES_GRAD_KEY!r} names {unknown[:5]} not in the file"
        )
    return {n: (arr, grads.get(n), n in requires) for n, arr in leaves.items()}


def import_session(session: Session, raw: bytes, settings: Settings) -> list[str]:
    """Create or rebind the file's leaves and grads, all or nothing; returns their names."""
    read = read_safetensors(raw, settings)
    made: dict[str, Tensor] = {}
    for name, (arr, grad, requires) in read.items():
        t = Tensor(arr.copy(), requires_grad=requires)  # dtype_not_differentiable refused here
        if grad is not None:
            t.grad = Tensor(grad.copy())
        made[name] = t
    kept = [t for n, t in session.tensors.items() if n not in made]
    total = check_bytes(session, settings, [*kept, *made.values()])
    session.tensors.update(made)
    session.bytes_bound = total
    return list(made)
