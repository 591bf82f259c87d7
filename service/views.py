"""Engine objects as response payloads (plain dicts that ``JSONBody`` renders)."""

from __future__ import annotations

from typing import Any

from engine import Tensor
from engine.errors import InplaceViewError

from . import codec
from .deps import Output
from .session.state import Session, grad_of, iso


def value(t: Tensor | None, out: Output) -> dict[str, Any] | None:
    """A ``ValueOut``: the encoded data, or only dtype and shape with ``?values=false``."""
    if t is None:
        return None
    if not out.values:
        return {"dtype": codec.dtype_name(t.dtype), "shape": list(t.shape)}
    return codec.encode(t._data, out.encoding)


def tensor(name: str, t: Tensor, out: Output) -> dict[str, Any]:
    """A ``TensorOut``."""
    g = grad_of(t)
    fn, requires_grad = _history(t)
    data = t._data
    body: dict[str, Any] = {
        "name": name,
        "shape": list(data.shape),
        "dtype": codec.dtype_name(data.dtype),
        "requires_grad": requires_grad,
        "is_leaf": fn is None,
        "grad_fn": None if fn is None else fn.name,
        "retains_grad": t.retains_grad,
        "version": t._version,
        "has_grad": g is not None,
    }
    if out.values:
        body["data"] = value(t, out)
        body["grad"] = value(g, out)
    return body


def _history(t: Tensor) -> tuple[Any, bool]:
    """``t.grad_fn`` and ``t.requires_grad``. A view whose history an in-place write made
    unusable raises on both in PyTorch; here it shows the node it had, so reading a
    session never fails for one tensor, and using the view still answers ``inplace_view``."""
    try:
        return t.grad_fn, t.requires_grad
    except InplaceViewError:
        return t._grad_fn, True


def session_summary(s: Session) -> dict[str, Any]:
    """A ``SessionSummaryOut``."""
    return {
        "name": s.name,
        "created": iso(s.created),
        "last_used": iso(s.last_used),
        "expires": iso(s.expires),
        "bytes": s.nbytes() + s.program_bytes(),
        "tensor_count": len(s.tensors),
    }


def session(s: Session) -> dict[str, Any]:
    """A ``SessionOut``: the summary plus every tensor's metadata."""
    meta = Output("json", values=False)
    return {
        **session_summary(s),
        "tensors": [tensor(name, t, meta) for name, t in s.tensors.items()],
        "programs": [p.summary() for p in s.programs.values()],
    }
