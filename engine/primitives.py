"""The primitives every backward rule leans on, below every op family.

``sum_to`` (the inverse of broadcasting, used once by the backward loop),
``expand``, ``reshape``, ``where`` and ``cast`` call each other in their own
backward rules (the gradient of an expand is a sum, of a sum an expand), so
they live together here, importing only the Tensor, Function and dtypes:
the backward loop, the functional API and any op family can import them at
the top of a module without a cycle. Their ``grad_fn`` names are PyTorch's
(``SumBackward1``, ``ExpandBackward0``, ``ViewBackward0``, ``WhereBackward0``,
``ToCopyBackward0``), so a graph recorded by ``create_graph`` reads as
PyTorch's does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .function import Function
from .tensor import Tensor

# -- arrays ------------------------------------------------------------------------------------


def sum_to_array(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum an array down to ``shape``: over leading dims, and dims that were 1."""
    lead = x.ndim - len(shape)
    kept = tuple(lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
    if not kept:
        # only leading dims were broadcast (a bias): the sum has the shape already
        return x.sum(axis=tuple(range(lead))) if lead else x
    out = x.sum(axis=tuple(range(lead)) + kept, keepdims=True)
    return out.reshape(shape)


# -- Functions ---------------------------------------------------------------------------------


class SumToSize(Function):
    """Reduce a broadcast gradient to an input's shape (PyTorch's ``sum_to_size``)."""

    name = "SumBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return sum_to_array(a._data, shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand(g, ctx.in_shape)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        return np.broadcast_to(g, ctx.in_shape)


class SumAll(Function):
    """Reduce a broadcast gradient to a 0-d input's shape (``sum()``, as PyTorch's
    ``sum_to`` does for a 0-d target)."""

    name = "SumBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return np.asarray(a._data.sum())

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand(g, ctx.in_shape)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        return np.broadcast_to(g, ctx.in_shape)


class DivBackward1(Function):
    """``tensor / number`` as PyTorch's C++ code divides (``div.Scalar``): what backward
    rules that divide by a count record (mean's, a mean-reduced loss's)."""

    name = "DivBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, by: float) -> np.ndarray:
        ctx.by = by
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(a._data / a._data.dtype.type(by))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return DivBackward1.apply(g, by=ctx.by)


class MulBackward1(Function):
    """``tensor * number`` as PyTorch's C++ code multiplies (``mul.Scalar``): what backward
    rules that scale by a constant record (pow's ``exponent * x.pow(exponent - 1)``)."""

    name = "MulBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, by: float) -> np.ndarray:
        ctx.by = by
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(a._data * a._data.dtype.type(by))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return MulBackward1.apply(g, by=ctx.by)


class ExpandBackward0(Function):
    name = "ExpandBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a._data.shape
        out = np.broadcast_to(a._data, shape)
        if all(s or n < 2 for s, n in zip(out.strides, out.shape)) and a._data.flags.writeable:
            # no element repeated: a writable alias, so an in-place write reaches the input
            out = np.lib.stride_tricks.as_strided(a._data, out.shape, out.strides)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return sum_to(g, ctx.in_shape)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        return g if g.shape == ctx.in_shape else sum_to_array(g, ctx.in_shape)


class ViewBackward0(Function):
    name = "ViewBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return a._data.reshape(shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return reshape(g, ctx.in_shape)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        return g.reshape(ctx.in_shape)


class ToCopyBackward0(Function):
    name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dtype: np.dtype) -> np.ndarray:
        ctx.in_dtype = a._data.dtype
        return a._data.astype(dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return cast(g, ctx.in_dtype)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        return g.astype(ctx.in_dtype)


class WhereBackward0(Function):
    """``where(cond, a, b)`` of two tensors of one dtype (the form backward rules use)."""

    name = "WhereBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, cond: Tensor, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.save_for_backward(cond)
        return np.where(cond._data, a._data, b._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[None, Tensor | None, Tensor | None]:
        (cond,) = ctx.saved_tensors
        _, need_a, need_b = ctx.needs_input_grad
        zero = Tensor._make(np.zeros((), g.dtype))
        return (
            None,
            where(cond, g, zero) if need_a else None,
            where(cond, zero, g) if need_b else None,
        )


# -- functions ---------------------------------------------------------------------------------


def sum_to(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``input`` down to ``shape`` (the inverse of broadcasting), recording what
    PyTorch's ``at::sum_to`` records: a 0-d target is a full ``sum()``; otherwise a
    keepdim sum, then a view that drops the leading dims if there were any."""
    shape = tuple(shape)
    if input._data.shape == shape:
        return input
    if not shape:
        return SumAll.apply(input)
    lead = input._data.ndim - len(shape)
    if not lead:
        return SumToSize.apply(input, shape=shape)
    return reshape(SumToSize.apply(input, shape=(1,) * lead + shape), shape)


def expand(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A broadcast view of ``input`` with ``shape`` (shapes already checked)."""
    if input._data.shape == tuple(shape):
        return input
    return ExpandBackward0.apply(input, shape=tuple(shape))


def reshape(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``input`` in ``shape`` (same size; no -1), recorded as a view."""
    return ViewBackward0.apply(input, shape=tuple(shape))


def cast(input: Tensor, dtype: Any) -> Tensor:
    """``input`` in ``dtype``: differentiable between float dtypes, a constant otherwise."""
    dt = dtypes.to_dtype(dtype)
    if input._data.dtype == dt:
        return input
    if not dtypes.is_floating(dt):
        return Tensor._make(input._data.astype(dt))
    return ToCopyBackward0.apply(input, dtype=dt)


def where(condition: Tensor, input: Tensor, other: Tensor) -> Tensor:
    """``input`` where ``condition`` holds, else ``other``: two tensors of one dtype,
    broadcasting (the public ``where`` adds PyTorch's type promotion)."""
    cond = condition
    if cond._data.dtype != np.bool_:
        cond = Tensor._make(cond._data.astype(bool))
    return WhereBackward0.apply(cond, input, other)
