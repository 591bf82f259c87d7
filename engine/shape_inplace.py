"""In-place shape ops (``t_``, ``transpose_``, ``swapdims_``, ``squeeze_``,
``unsqueeze_``, ``as_strided_``): the tensor itself takes the out-of-place view's shape
and history, as PyTorch's in-place view ops do. The write checks of other in-place ops
apply (a leaf that requires grad refuses in grad mode), the version is bumped, and the
node carries PyTorch's in-place name (``TBackward1``, ``SqueezeBackward3`` ...)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from .function import Function, Node, set_history
from .registry import OPS
from .tensor import Tensor

# the in-place form's node is the out-of-place one's overload number plus this
_OVERLOAD_SHIFT = {"squeeze": 3}


@cache
def _inplace_fn(cls: type[Function]) -> type[Function]:
    """The Function class named as PyTorch names the in-place form's node."""
    name = cls.name.rstrip("0123456789")
    shift = _OVERLOAD_SHIFT.get(name[: -len("Backward")].lower(), 1)
    number = int(cls.name[len(name) :] or 0) + shift
    return type(f"{name}{number}", (cls,), {"name": f"{name}{number}"})


def _rename(node: Node) -> None:
    inplace_cls = _inplace_fn(node.fn)  # type: ignore[arg-type]  # classes hash
    node.fn = inplace_cls
    node.__class__ = inplace_cls._node_type


def become(t: Tensor, view: Tensor) -> Tensor:
    """``t`` takes ``view``'s data, shape and history (``view`` was made from ``t``)."""
    t._data = view._data
    t._vc[0] += 1
    if t._view is not None:  # a view stays one, of the same base
        info = view._view
        assert info is not None
        info.attr_version = t._vc[0]  # its node is current, not a stale view's
        t._view = info
    fn = view._grad_fn
    if fn is not None:
        _rename(fn)
        set_history(t, fn, view._output_nr)
    return t


def _method(op: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        self._check_inplace()
        return become(self, OPS[op].fn(self, *args, **kwargs))

    method.__name__ = op + "_"
    method.__doc__ = f"``{op}`` in place: this tensor becomes the view."
    return method


SHAPE_INPLACE_METHODS = {
    op + "_": _method(op)
    for op in ("t", "transpose", "swapdims", "swapaxes", "squeeze", "unsqueeze", "as_strided")
}
