"""``repr`` like PyTorch's for the engine's tensors: the rules live once in
``gradcore.printing`` (the client prints its handles with them too); this module reads
an engine tensor's values, dtype and node for them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gradcore.printing import DEFAULT_OPTIONS, PrintOptions
from gradcore.printing import tensor_repr as values_repr

from . import dtypes
from .errors import EngineError

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["DEFAULT_OPTIONS", "PrintOptions", "tensor_repr"]


def tensor_repr(t: Tensor, opts: PrintOptions = DEFAULT_OPTIONS) -> str:
    """PyTorch's ``repr(tensor)`` for this tensor."""
    data = t._data
    try:
        fn = t.grad_fn
    except EngineError:  # a stale view that may not regenerate (PyTorch prints the same)
        grad_fn: str | None = "Invalid"
    else:
        grad_fn = None if fn is None else fn.name
    return values_repr(
        data,
        dtypes.torch_name(data.dtype),
        grad_fn=grad_fn,
        requires_grad=grad_fn is None and t.requires_grad,
        opts=opts,
    )
