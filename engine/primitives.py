"""The primitives every backward rule leans on, below every op family.

``sum_to`` (the inverse of broadcasting, used once by the backward loop),
``expand``, ``reshape``, ``where``, ``cast``, ``clone``, and select and slice
along one dim call each other in their own backward rules (the gradient of an
expand is a sum, of a sum an expand, of a slice a slice placed in zeros), so
they live together here, importing only the Tensor, Function and dtypes: the backward
loop, the functional API and any op family can import them at the top of a
module without a cycle. One Function per ``grad_fn``: the op families use
these classes (the public ``reshape``, ``view``, ``to``, ``where``, indexing and
``narrow`` record them). Their names are PyTorch's (``SumBackward1``,
``ExpandBackward0``, ``ViewBackward0``, ``WhereBackward0``, ``ToCopyBackward0``,
``SelectBackward0``, ``SliceBackward0``, ...), so a graph recorded by
``create_graph`` reads as PyTorch's does.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import dtypes
from .dual import LINEAR
from .function import Function
from .tensor import Tensor

# -- arrays ------------------------------------------------------------------------------------


def _arr(value: Any, dtype: np.dtype) -> Any:
    """An operand's array in ``dtype`` (Python numbers pass through: NumPy keeps them weak)."""
    if type(value) is Tensor:
        data = value._data
        return data if data.dtype == dtype else data.astype(dtype)
    return value


def viewable(data: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Whether ``shape`` can be a view of ``data`` (PyTorch's and NumPy's stride rules agree)."""
    if data.flags.c_contiguous:
        return True
    try:
        data.reshape(shape, copy=False)
    except ValueError:
        return False
    return True


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
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return sum_to_array(a._data, shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand(g, ctx.in_shape)


class SumAll(Function):
    """Reduce a broadcast gradient to a 0-d input's shape (``sum()``, as PyTorch's
    ``sum_to`` does for a 0-d target)."""

    name = "SumBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return np.asarray(a._data.sum())

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand(g, ctx.in_shape)


class DivBackward1(Function):
    """``tensor / number`` as PyTorch's C++ code divides (``div.Scalar``): what backward
    rules that divide by a count record (mean's, a mean-reduced loss's)."""

    name = "DivBackward1"
    complex_ok = True
    jvp = LINEAR

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
    complex_ok = True
    jvp = LINEAR

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
    complex_ok = True
    jvp = LINEAR
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


class ViewBackward0(Function):
    name = "ViewBackward0"
    complex_ok = True  # a reshape back: the same for complex gradients
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return a._data.reshape(shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return reshape(g, ctx.in_shape)  # PyTorch's rule: grad.reshape(self.sizes())


class ReshapeAliasBackward0(ViewBackward0):
    """A reshape of a non-contiguous input that can still be a view."""

    name = "ReshapeAliasBackward0"


class UnsafeViewBackward0(ViewBackward0):
    """A reshape that had to copy (no view of the input has the new shape)."""

    name = "UnsafeViewBackward0"
    is_view = False


class CloneBackward0(Function):
    name = "CloneBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, contiguous: bool = False) -> np.ndarray:
        # clone keeps the input's layout (PyTorch's preserve_format); contiguous() does not
        return np.ascontiguousarray(a._data) if contiguous else a._data.copy(order="K")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return g


class ConjBackward0(Function):
    """The complex conjugate (a copy: the engine has no lazy conjugate bit)."""

    name = "ConjBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.conj(a._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ConjBackward0.apply(g)


def conj(t: Tensor) -> Tensor:
    """``t`` conjugated when complex, else ``t`` itself: what a backward rule applies to
    a saved operand to be right for complex tensors too (``g * conj(b)`` for a product)."""
    return ConjBackward0.apply(t) if t._data.dtype.kind == "c" else t


def conj_array(x: Any) -> Any:
    """The numpy twin of ``conj`` (a real array or number passes as it is)."""
    return np.conj(x) if type(x) is np.ndarray and x.dtype.kind == "c" else x


class RealBackward0(Function):
    """The real part of a complex tensor; its gradient is ``g`` made complex."""

    name = "RealBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_dtype = a._data.dtype
        return a._data.real.copy()  # ascontiguousarray would make a 0-d result 1-d

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return cast(g, ctx.in_dtype)


def real_part(a: Tensor) -> Tensor:
    """The real part of a complex tensor; a real tensor itself."""
    return RealBackward0.apply(a) if a._data.dtype.kind == "c" else a


class ToCopyBackward0(Function):
    name = "ToCopyBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dtype: np.dtype) -> np.ndarray:
        ctx.in_dtype = a._data.dtype
        if a._data.dtype.kind == "c" and dtype.kind != "c":  # the real part, as torch
            _discards_imaginary()
            return a._data.real.astype(dtype)
        return a._data.astype(dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        if ctx.in_dtype.kind != "c":  # a real input's gradient: the real part, no warning
            g = real_part(g)
        return cast(g, ctx.in_dtype)


class WhereBackward0(Function):
    """``where(cond, a, b)``: ``a`` and ``b`` are tensors of one dtype (the form backward
    rules use), or with ``dtype`` given, tensors or numbers brought to it (the public
    ``where``, which has promoted them)."""

    name = "WhereBackward0"
    complex_ok = True
    jvp = LINEAR
    broadcasts = True

    @staticmethod
    def forward(
        ctx: Any, cond: Tensor, a: Any, b: Any, *, dtype: np.dtype | None = None
    ) -> np.ndarray:
        ctx.save_for_backward(cond)
        if dtype is None:
            return np.where(cond._data, a._data, b._data)
        return np.asarray(np.where(cond._data, _arr(a, dtype), _arr(b, dtype)), dtype=dtype)

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


# -- one dim: select and slice (views) and their adjoints ------------------------------------


_FULL = slice(None)


def prefix(dim: int, item: Any) -> tuple[Any, ...]:
    """The NumPy key of ``item`` along ``dim`` (all of every dim before it)."""
    return (_FULL,) * dim + (item, Ellipsis)


def place(g: np.ndarray, shape: tuple[int, ...], key: tuple[Any, ...]) -> np.ndarray:
    """Zeros of ``shape`` with ``g`` written at the basic index ``key``."""
    out = np.zeros(shape, g.dtype)
    out[key] = g
    return out


class SelectBackward0(Function):
    """``x[i]`` along ``dim`` (``index`` already non-negative)."""

    name = "SelectBackward0"
    complex_ok = True
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, index: int) -> np.ndarray:
        ctx.dim, ctx.index, ctx.in_shape = dim, index, a._data.shape
        if dim == 0:
            return a._data[index, ...]
        return a._data[prefix(dim, index)]

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return SelectBackwardBackward0.apply(g, shape=ctx.in_shape, dim=ctx.dim, index=ctx.index)


class SelectBackwardBackward0(Function):
    """The adjoint of select: ``g`` placed at ``index`` in zeros."""

    name = "SelectBackwardBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, shape: tuple[int, ...], dim: int, index: int) -> np.ndarray:
        ctx.dim, ctx.index = dim, index
        return place(g._data, shape, prefix(dim, index))

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        return SelectBackward0.apply(gg, dim=ctx.dim, index=ctx.index)


def slice_key(dim: int, start: int, stop: int, step: int = 1) -> tuple[Any, ...]:
    """The NumPy key of ``x[start:stop:step]`` along ``dim`` (bounds already normalized)."""
    return prefix(dim, slice(start, stop, step))


class SliceBackward0(Function):
    """A slice along one dim, given as its NumPy key (see ``slice_key``)."""

    name = "SliceBackward0"
    complex_ok = True
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, key: tuple[Any, ...]) -> np.ndarray:
        ctx.key, ctx.in_shape = key, a._data.shape
        return a._data[key]

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return SliceBackwardBackward0.apply(g, shape=ctx.in_shape, key=ctx.key)


class SliceBackwardBackward0(Function):
    """The adjoint of slice: ``g`` placed in its window of zeros."""

    name = "SliceBackwardBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, shape: tuple[int, ...], key: tuple[Any, ...]) -> np.ndarray:
        ctx.key = key
        return place(g._data, shape, key)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        return SliceBackward0.apply(gg, key=ctx.key)


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
    """``input`` in ``shape`` (same size; no -1): a view when the layout allows, else a
    copy, recorded under PyTorch's name for each case."""
    shape = tuple(shape)
    data = input._data
    if data.flags.c_contiguous:
        return ViewBackward0.apply(input, shape=shape)
    fn = ReshapeAliasBackward0 if viewable(data, shape) else UnsafeViewBackward0
    return fn.apply(input, shape=shape)


def clone(input: Tensor) -> Tensor:
    """A copy of ``input`` with its own memory, keeping the history."""
    return CloneBackward0.apply(input)


def _discards_imaginary() -> None:
    """torch's warning where a cast of complex values to a real dtype keeps the real part."""
    warnings.warn(
        "Casting complex values to real discards the imaginary part", UserWarning, stacklevel=4
    )


def cast(input: Tensor, dtype: Any) -> Tensor:
    """``input`` in ``dtype``: differentiable between float dtypes, a constant otherwise."""
    dt = dtypes.to_dtype(dtype)
    if input._data.dtype == dt:
        return input
    if not dtypes.is_differentiable(dt):
        if input._data.dtype.kind == "c" and dt == dtypes.bool_:  # nonzero, as torch
            return Tensor._make(input._data != 0)
        if input._data.dtype.kind == "c":
            _discards_imaginary()
        data = input._data.real if input._data.dtype.kind == "c" else input._data
        return Tensor._make(data.astype(dt))
    return ToCopyBackward0.apply(input, dtype=dt)


def where(condition: Tensor, input: Any, other: Any) -> Tensor:
    """``input`` where ``condition`` holds, else ``other``, broadcasting: two tensors of
    one dtype, or a tensor and a Python number, which takes the tensor's dtype (the
    public ``where`` adds PyTorch's type promotion for everything else)."""
    cond = condition
    if cond._data.dtype != np.bool_:
        cond = Tensor._make(cond._data.astype(bool))
    if type(input) is Tensor and type(other) is Tensor:
        return WhereBackward0.apply(cond, input, other)
    dtype = (input if type(input) is Tensor else other)._data.dtype
    return WhereBackward0.apply(cond, input, other, dtype=dtype)
