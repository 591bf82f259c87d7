"""Bind Python operators and Tensor methods to the registered ops.

Runs once at import. Every catalogue op marked ``method`` becomes a Tensor
method of the same name; ``name_`` in-place variants write the out-of-place
result back with the leaf check and a version bump, as PyTorch does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .errors import DtypeMismatchError, ShapeMismatchError
from .grad_mode import _enabled
from .ops._util import broadcast_message
from .ops.arithmetic import rdiv
from .registry import OPS
from .tensor import Tensor, _snapshot


def _op(name: str) -> Any:
    return OPS[name].fn


_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


def _inplace_shape_message(target: tuple[int, ...], other: tuple[int, ...]) -> str:
    try:
        shape = list(np.broadcast_shapes(target, other))
    except ValueError:
        return broadcast_message((target, other))
    return f"output with shape {list(target)} doesn't match the broadcast shape {shape}"


def _records(*values: Any) -> bool:
    return _enabled.get() and any(isinstance(v, Tensor) and v.requires_grad for v in values)


def _inplace(name: str) -> Any:
    fn = OPS[name].fn
    ufunc = _UFUNCS.get(name)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        self._check_inplace()
        if not _records(self, *args, *kwargs.values()):
            if ufunc is not None and len(args) == 1 and not kwargs and self.data.flags.writeable:
                # the SGD update ``w -= lr * w.grad`` under no_grad: no copy, no graph
                other = args[0].data if isinstance(args[0], Tensor) else args[0]
                try:
                    ufunc(self.data, other, out=self.data, casting="same_kind")
                except ValueError:
                    message = _inplace_shape_message(self.shape, np.shape(other))
                    raise ShapeMismatchError(message) from None
                except TypeError:
                    raise DtypeMismatchError(
                        f"result type can't be cast to the desired output type "
                        f"{dtypes.torch_name(self.dtype)}"
                    ) from None
                self._vc[0] += 1
                return self
            return self._inplace(fn(self, *args, **kwargs))
        # the op reads the old values while this tensor is overwritten: give it a copy
        source = _snapshot(self) if self.requires_grad else self
        return self._inplace(fn(source, *args, **kwargs))

    method.__name__ = name + "_"
    method.__doc__ = f"In-place {name}: writes the result into this tensor, bumping its version."
    return method


def _reflected(name: str) -> Any:
    fn = OPS[name].fn
    return lambda self, other: fn(other, self)


def _commuted(name: str) -> Any:
    """``number + tensor`` records like PyTorch: the tensor is input 0."""
    fn = OPS[name].fn
    return lambda self, other: fn(self, other)


_OPERATORS = {
    "__add__": "add",
    "__sub__": "sub",
    "__mul__": "mul",
    "__truediv__": "div",
    "__pow__": "pow",
    "__matmul__": "matmul",
    "__eq__": "eq",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
    "__and__": "logical_and",
    "__or__": "logical_or",
    "__neg__": "neg",
    "__abs__": "abs",
    "__invert__": "logical_not",
    "__getitem__": "getitem",
}
_COMMUTED = {"__radd__": "add", "__rmul__": "mul"}
_REFLECTED = {
    "__rpow__": "pow",
    "__rfloordiv__": "floor_divide",
    "__rmod__": "remainder",
    "__rmatmul__": "matmul",
}
_INPLACE = {
    "add_": "add",
    "sub_": "sub",
    "mul_": "mul",
    "div_": "div",
    "pow_": "pow",
    "clamp_": "clamp",
    "masked_fill_": "masked_fill",
    "neg_": "neg",
    "exp_": "exp",
    "log_": "log",
    "sqrt_": "sqrt",
    "sigmoid_": "sigmoid",
    "tanh_": "tanh",
    "relu_": "relu",
    "clamp_min_": "clamp_min",
    "clamp_max_": "clamp_max",
    "clip_": "clip",
    "abs_": "abs",
    "square_": "square",
    "reciprocal_": "reciprocal",
    "floor_": "floor",
    "ceil_": "ceil",
    "round_": "round",
}
_IOPERATORS = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_"}


def _backward(
    self: Tensor,
    gradient: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """``tensor.backward(gradient, retain_graph, create_graph, inputs)``."""
    from .autograd import backward

    backward(
        self,
        None if gradient is None else [gradient],
        retain_graph=retain_graph,
        create_graph=create_graph,
        inputs=inputs,
    )


def _T(self: Tensor) -> Tensor:
    """``x.T``: all dims reversed (PyTorch records PermuteBackward0)."""
    if self.ndim < 2:
        return self
    return OPS["permute"].fn(self, *reversed(range(self.ndim)))


def _mT(self: Tensor) -> Tensor:
    """``x.mT``: the last two dims swapped."""
    return OPS["transpose"].fn(self, -2, -1)


def bind() -> None:
    Tensor.backward = _backward  # type: ignore[attr-defined]
    Tensor.T = property(_T)  # type: ignore[attr-defined]
    Tensor.mT = property(_mT)  # type: ignore[attr-defined]
    for spec in OPS.values():
        if spec.method and not hasattr(Tensor, spec.name):
            setattr(Tensor, spec.name, spec.fn)
    for dunder, name in _OPERATORS.items():
        if name in OPS:
            setattr(Tensor, dunder, _op(name))
    for dunder, name in _REFLECTED.items():
        if name in OPS:
            setattr(Tensor, dunder, _reflected(name))
    for dunder, name in _COMMUTED.items():
        setattr(Tensor, dunder, _commuted(name))
    # ``number - tensor`` is rsub, ``number / tensor`` is reciprocal * number (PyTorch)
    Tensor.__rsub__ = lambda self, other: OPS["rsub"].fn(self, other)  # type: ignore[method-assign]
    Tensor.__rtruediv__ = lambda self, other: rdiv(self, other)  # type: ignore[method-assign]
    for method, name in _INPLACE.items():
        if name in OPS:
            setattr(Tensor, method, _inplace(name))
    for spec in OPS.values():
        if spec.inplace and not hasattr(Tensor, spec.name + "_"):
            setattr(Tensor, spec.name + "_", _inplace(spec.name))
        for dunder in spec.operators:
            setattr(Tensor, dunder, spec.fn)
    for dunder, method in _IOPERATORS.items():
        if hasattr(Tensor, method):
            setattr(Tensor, dunder, getattr(Tensor, method))
    Tensor.__hash__ = object.__hash__  # type: ignore[method-assign, assignment]
