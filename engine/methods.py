"""Bind Python operators and Tensor methods to the registered ops.

Runs once at import, reading the ops' registrations only: every op marked
``method`` becomes a Tensor method of the same name, every ``inplace`` op a
``name_`` method that writes the out-of-place result back with the leaf check
and a version bump (as PyTorch does), and every declared dunder is bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .autograd import backward
from .dispatch import OPEN, ask
from .errors import DtypeMismatchError, ShapeMismatchError
from .grad_mode import _enabled, no_grad
from .ops._util import broadcast_message
from .ops.arithmetic import rdiv
from .overlapping_writes import self_overlaps, sequential
from .registry import OPS
from .shape_inplace import SHAPE_INPLACE_METHODS
from .tensor import Tensor, _snapshot
from .views import TENSOR_METHODS, check_partial_overlap, dual_write, inplace

# not a list of forms (the registrations say which ops have ``name_``): the numpy ufuncs
# that let the SGD update ``w -= lr * w.grad`` under no_grad write with no copy
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
        if OPEN[0]:  # some vmap is open: its in-place rule may decide (dispatch.py)
            return ask(name + "_", run, (self, *args), kwargs)
        return run(self, *args, **kwargs)

    def run(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        self._check_inplace()
        check_partial_overlap(self, args + tuple(kwargs.values()))
        overlapping = self_overlaps(self._data)
        if not _records(self, *args, *kwargs.values()):
            if dual_write(self, *args, *kwargs.values()):
                return inplace(self, fn(self, *args, **kwargs))
            if (
                ufunc is not None
                and len(args) == 1
                and not kwargs
                and self._data.flags.writeable
                and not overlapping
            ):
                # the SGD update ``w -= lr * w.grad`` under no_grad: no copy, no graph
                other = args[0]._data if isinstance(args[0], Tensor) else args[0]
                try:
                    ufunc(self._data, other, out=self._data, casting="same_kind")
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
            result = fn(self, *args, **kwargs)
        else:
            # the op reads the old values while this tensor is overwritten: give it a copy
            # (also when only another operand requires grad: ``x.mul_(w)``'s gradient for
            # w reads x's old values, which PyTorch saves as ``original_self``)
            result = fn(_snapshot(self), *args, **kwargs)
        if overlapping:
            _replay_loop(result, self, fn, args, kwargs)
        return inplace(self, result)

    method.__name__ = name + "_"
    method.__doc__ = f"In-place {name}: writes the result into this tensor, bumping its version."
    return method


def _replay_loop(
    result: Tensor, target: Tensor, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """``result`` takes the values PyTorch's loop leaves in ``target``'s self-overlapping
    memory (each element updated once per visit: ``overlapping_writes``); its history,
    recorded from one application, stays as PyTorch records it."""
    if result._data.shape != target._data.shape:
        return  # the write is refused by ``inplace``

    def step(current: np.ndarray, where: np.ndarray) -> np.ndarray:
        with no_grad():
            return fn(Tensor._make(current), *args, **kwargs)._data

    values = sequential(target._data, step)
    if result._data.flags.writeable:
        np.copyto(result._data, values, casting="unsafe")
    else:
        result._data = values.astype(result._data.dtype)


def _reflected(fn: Any) -> Any:
    """``2 ** x`` is ``pow(2, x)``: the tensor is the second argument."""
    return lambda self, other: fn(other, self)


def _backward(
    self: Tensor,
    gradient: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """``tensor.backward(gradient, retain_graph, create_graph, inputs)``."""
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


def _rtruediv(self: Tensor, other: Any) -> Tensor:
    """``number / x`` is ``x.reciprocal() * number`` in PyTorch (records MulBackward0),
    a composite of two ops rather than a form of one, so it is bound here."""
    return rdiv(self, other)


def bind() -> None:
    """Give Tensor every form its ops' registrations declare."""
    Tensor.backward = _backward  # type: ignore[attr-defined]
    Tensor.T = property(_T)  # type: ignore[attr-defined]
    Tensor.mT = property(_mT)  # type: ignore[attr-defined]
    Tensor.__rtruediv__ = _rtruediv  # type: ignore[method-assign]
    Tensor.__rdiv__ = _rtruediv  # type: ignore[attr-defined]  # PyTorch's old name
    for name, method in (TENSOR_METHODS | SHAPE_INPLACE_METHODS).items():
        setattr(Tensor, name, method)
    for spec in OPS.values():
        if spec.method and not hasattr(Tensor, spec.name):
            setattr(Tensor, spec.name, spec.fn)
        if spec.inplace and not hasattr(Tensor, spec.name + "_"):
            setattr(Tensor, spec.name + "_", _inplace(spec.name))
    for spec in OPS.values():
        for dunder in spec.operators:
            inplace = dunder.startswith("__i") and "__" + dunder[3:] in spec.operators
            if inplace:  # __iadd__ beside __add__: ``x += y`` is the in-place form
                setattr(Tensor, dunder, getattr(Tensor, spec.name + "_"))
            else:
                setattr(Tensor, dunder, spec.operator_fn or spec.fn)
        for dunder in spec.reflected:
            setattr(Tensor, dunder, _reflected(spec.operator_fn or spec.fn))
    Tensor.unfold = OPS["tensor_unfold"].fn  # type: ignore[attr-defined]  # not F.unfold
    Tensor.__hash__ = object.__hash__  # type: ignore[method-assign, assignment]
