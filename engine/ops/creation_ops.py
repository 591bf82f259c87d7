"""Creation ops: zeros, ones, full, arange, linspace, eye and the ``*_like`` family
(the random ones live in ``random_ops``).

Each returns a new leaf. ``dtype`` defaults to float32 as in PyTorch (``arange`` of
integers and ``full`` with an integer or bool fill infer int64/bool);
``requires_grad=True`` on an integer or bool dtype raises PyTorch's error.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..compat import write_out
from ..complex_guard import ComplexKernelError
from ..errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BadArgumentsError,
    DtypeMismatchError,
    DtypeNotDifferentiableError,
)
from ..registry import Const, register, sample
from ..tensor import Tensor
from ._util import as_tensor

REQUIRES_GRAD_MESSAGE = "Only Tensors of floating point and complex dtype can require gradients"
_KERNEL_TYPE = {"int64": "Long", "bool": "Bool", "float32": "Float", "float64": "Double"}


# -- argument handling --------------------------------------------------------------------


def _size(op: str, size: tuple[Any, ...], negative: str | None = None) -> tuple[int, ...]:
    """A shape given as ints or one sequence (``zeros(2, 3)`` or ``zeros((2, 3))``),
    checked with PyTorch's messages."""
    nested = len(size) == 1 and isinstance(size[0], (list, tuple))
    items = tuple(size[0]) if nested else size
    out = []
    for pos, s in enumerate(items, start=1):
        value = None
        if not isinstance(s, (bool, np.bool_, float, np.floating)):
            try:
                value = operator.index(s)
            except TypeError:
                value = None
        if value is None:
            kind = type(s).__name__
            if nested or len(items) > 1:
                raise BadArgumentsError(
                    f"{op}(): argument 'size' failed to unpack the object at pos {pos} with "
                    f'error "type must be tuple of ints,but got {kind}"'
                )
            raise BadArgumentsError(
                f"{op}(): argument 'size' (position 1) must be tuple of ints, not {kind}"
            )
        out.append(value)
    shape = tuple(out)
    for d in shape:
        if d < 0:
            raise BadArgumentsError(
                negative or f"Trying to create tensor with negative dimension {d}: {list(shape)}"
            )
    return shape


def _dtype(dtype: Any, default: np.dtype = dtypes.DEFAULT_FLOAT) -> np.dtype:
    return default if dtype is None else dtypes.to_dtype(dtype)


def _leaf(data: np.ndarray, requires_grad: bool) -> Tensor:
    if requires_grad and data.dtype.kind != "f":
        raise DtypeNotDifferentiableError(REQUIRES_GRAD_MESSAGE)
    return Tensor._make(data, bool(requires_grad))


def _number(value: Any, what: str) -> Any:
    """A Python number from a number or a one-element tensor."""
    if isinstance(value, Tensor):
        return value.item()
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return value.item() if isinstance(value, (np.number, np.bool_)) else value
    raise BadArgumentsError(f"{what} must be a number, got {type(value).__name__}")


def check_steps(op: str, start: Any, end: Any, steps: Any) -> None:
    """PyTorch's binding takes ``steps`` as an int only: anything else matches none of
    its overloads (a TypeError naming the combination it got)."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        got = ", ".join(
            "Tensor" if isinstance(v, Tensor) else type(v).__name__ for v in (start, end, steps)
        )
        raise ArgumentTypeError(
            f"{op}() received an invalid combination of arguments - got ({got}), but expected "
            f"one of:\n * (Number start, Number end, int steps)"
        )


def zero_dim_bound(value: Any, op: str, what: str) -> Any:
    """A bound given as a tensor must be 0-d (PyTorch's message)."""
    if isinstance(value, Tensor) and value.ndim != 0:
        raise BadArgumentsError(
            f"{op} only supports 0-dimensional start and end tensors, but got {what} with "
            f"{value.ndim} dimension(s)."
        )
    return value


def _not_implemented(kernel: str, dtype: np.dtype) -> DtypeMismatchError:
    kind = _KERNEL_TYPE.get(dtypes.torch_name(dtype), str(dtype))
    return DtypeMismatchError(f"\"{kernel}\" not implemented for '{kind}'")


def _like(input: Any) -> Tensor:
    return input if isinstance(input, Tensor) else as_tensor(input)


# -- sample builders ----------------------------------------------------------------------


def _sized_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(2, 3, note="ints"),
        sample((2, 3), note="one tuple"),
        sample([4], dtype="float64", note="list, float64"),
        sample((), note="0-d"),
        sample(0, 3, note="empty"),
        sample(3, dtype="int64", note="int64"),
        sample(2, dtype="bool", note="bool"),
        sample(2, 2, requires_grad=True, note="requires_grad"),
    ]


def _like_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(Const(rng.uniform(-1, 1, (2, 3))), note="float"),
        sample(Const(np.array([1, 2, 3])), note="int64 keeps its dtype"),
        sample(Const(rng.uniform(-1, 1, ())), note="0-d"),
        sample(Const(np.zeros((0, 2))), note="empty"),
        sample(Const(np.array([1, 2])), dtype="float64", note="dtype override"),
        sample(Const(rng.uniform(-1, 1, (2,))), requires_grad=True, note="requires_grad"),
    ]


# -- constant fills -----------------------------------------------------------------------


@register(samples=_sized_samples, differentiable=False, method=False, estimate=estimates.sized)
def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros of the given shape."""
    shape = _size("zeros", size, "zeros: Dimension size must be non-negative.")
    return _leaf(np.zeros(shape, _dtype(dtype)), requires_grad)


@register(samples=_sized_samples, differentiable=False, method=False, estimate=estimates.sized)
def ones(*size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones of the given shape."""
    return _leaf(np.ones(_size("ones", size), _dtype(dtype)), requires_grad)


def _fill_dtype(fill_value: Any) -> np.dtype:
    """full's dtype from its fill: bool, int64 for integers, else the default float."""
    return dtypes.scalar_dtype(_number(fill_value, "fill_value"))


@register(
    samples=lambda rng: [
        sample((2, 3), 1.5, note="float fill"),
        sample((2,), 3, note="int fill gives int64"),
        sample((2,), True, note="bool fill gives bool"),
        sample((), 2.0, note="0-d"),
        sample((0, 2), 1.0, note="empty"),
        sample((2,), 3, dtype="float64", note="dtype override"),
        sample((2, 2), -0.5, requires_grad=True, note="requires_grad"),
    ],
    differentiable=False,
    method=False,
    estimate=estimates.full,
)
def full(size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of the given shape filled with ``fill_value``."""
    shape = _size("full", tuple(size) if isinstance(size, (list, tuple)) else (size,))
    dt = _dtype(dtype, _fill_dtype(fill_value))
    return _leaf(np.full(shape, _number(fill_value, "fill_value"), dt), requires_grad)


@register(samples=_like_samples, differentiable=False, method=False)
def zeros_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros with the shape (and, by default, the dtype) of ``input``; no history."""
    a = _like(input)
    return _leaf(np.zeros(a.shape, _dtype(dtype, a.dtype)), requires_grad)


@register(samples=_like_samples, differentiable=False, method=False)
def ones_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones with the shape (and, by default, the dtype) of ``input``; no history."""
    a = _like(input)
    return _leaf(np.ones(a.shape, _dtype(dtype, a.dtype)), requires_grad)


@register(
    samples=lambda rng: [
        sample(Const(rng.uniform(-1, 1, (2, 3))), 2.5, note="float"),
        sample(Const(np.array([1, 2])), 2.7, note="int64 input truncates the fill"),
        sample(Const(rng.uniform(-1, 1, ())), 3, note="0-d"),
        sample(Const(np.zeros((0, 2))), 1.0, note="empty"),
        sample(Const(np.array([1, 2])), 2, dtype="float64", note="dtype override"),
        sample(Const(rng.uniform(-1, 1, (2,))), 1.0, requires_grad=True, note="requires_grad"),
    ],
    differentiable=False,
    method=False,
)
def full_like(
    input: Tensor, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """``fill_value`` in the shape (and, by default, the dtype) of ``input``."""
    a = _like(input)
    dt = _dtype(dtype, a.dtype)
    return _leaf(np.full(a.shape, _number(fill_value, "fill_value"), dt), requires_grad)


# -- ranges -------------------------------------------------------------------------------


def _cpp(value: Any) -> str:
    """A number as PyTorch's C++ error messages print it (``0``, ``1.5``, ``inf``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


@register(
    samples=lambda rng: [
        sample(5, note="end only: int64"),
        sample(1, 2.5, 0.5, note="float step: float32"),
        sample(0, 10, 3, note="int step"),
        sample(0, -3, -1, note="negative step"),
        sample(0.0, 1.0, 0.1, dtype="float64", note="float64"),
        sample(0.5, 3, dtype="int64", note="int64 truncates the start"),
        sample(0, note="empty"),
        sample(4.0, requires_grad=True, note="requires_grad"),
    ],
    differentiable=False,
    method=False,
    estimate=estimates.arange,
)
def arange(
    start: Any = 0,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: Any = None,
    requires_grad: bool = False,
    out: Any = None,
) -> Tensor:
    """Values from ``start`` (default 0) up to but excluding ``end``, ``step`` apart
    (in ``out``'s dtype when ``out`` is given, as PyTorch does)."""
    if end is None:
        start, end = 0, start
    xs, xe, xst = (_number(v, name) for v, name in ((start, "start"), (end, "end"), (step, "step")))
    integral = all(isinstance(v, (bool, int)) for v in (xs, xe, xst))
    if dtype is None and isinstance(out, Tensor):
        dtype = out.dtype
    dt = _dtype(dtype, dtypes.int64 if integral else dtypes.DEFAULT_FLOAT)
    if dt == dtypes.bool_:
        raise _not_implemented("arange_cpu", dt)
    if dt.kind == "c":  # torch refuses a complex arange (numpy would make one)
        raise ComplexKernelError(f"\"arange_cpu\" not implemented for '{dtypes.type_name(dt)}'")
    if dt == dtypes.int64:  # PyTorch converts the bounds to the dtype first
        xs, xe, xst = (
            math.trunc(float(v)) if isinstance(v, float) else int(v) for v in (xs, xe, xst)
        )
    else:
        xs, xe, xst = float(xs), float(xe), float(xst)
    if xst == 0:
        if step != 0:  # a fractional step truncated for an integer dtype: Python's check
            raise ArgumentValueError("step must be nonzero")
        raise BadArgumentsError("step must be nonzero")
    if not (math.isfinite(xs) and math.isfinite(xe)):
        raise BadArgumentsError(f"unsupported range: {_cpp(xs)} -> {_cpp(xe)}")
    if not ((xst > 0 and xe >= xs) or (xst < 0 and xe <= xs)):
        raise BadArgumentsError("upper bound and lower bound inconsistent with step sign")
    if dt == dtypes.int64:
        # PyTorch's exact integer size; both operands share a sign here, so floor
        # division truncates as C++ does
        n = (xe - xs + xst - (1 if xst > 0 else -1)) // xst
        data = np.arange(n, dtype=np.int64) * xst + xs
    else:
        n = math.ceil((xe - xs) / xst)
        data = (np.arange(n, dtype=np.float64) * xst + xs).astype(dt)
    if out is None:
        return _leaf(data, requires_grad)
    write_out(out, Tensor._make(data))
    return out  # type: ignore[no-any-return]


@register(
    samples=lambda rng: [
        sample(0, 1, 5, note="float32 by default"),
        sample(0.1, 1.1, 7, dtype="float64", note="float64"),
        sample(-2.0, 2.0, 1, note="one step"),
        sample(0, 1, 0, note="empty"),
        sample(2, 2, 3, note="constant"),
        sample(0, 10, 5, dtype="int64", note="int64 truncates"),
        sample(0.0, 1.0, 4, requires_grad=True, note="requires_grad"),
    ],
    differentiable=False,
    method=False,
    estimate=estimates.linspace,
)
def linspace(
    start: Any, end: Any, steps: int, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    check_steps("linspace", start, end, steps)
    start, end = zero_dim_bound(start, "linspace", "start"), zero_dim_bound(end, "linspace", "end")
    steps = int(steps)
    if steps < 0:
        raise BadArgumentsError("number of steps must be non-negative")
    s, e = _number(start, "start"), _number(end, "end")
    dt = _dtype(dtype)
    if dt == dtypes.bool_:
        raise _not_implemented("linspace_cpu", dt)
    if dt == dtypes.int64:
        # PyTorch converts the bounds to integers, steps in double, then truncates
        first, last = float(math.trunc(s)), float(math.trunc(e))
        step = (last - first) / (steps - 1) if steps > 1 else 0.0
        work = np.float64
    else:
        work = dt.type
        first, last = work(s), work(e)
        step = (work(e) - work(s)) / work(steps - 1) if steps > 1 else work(0)
    # PyTorch's symmetric formula: the first half from start, the second half from end
    idx = np.arange(steps)
    half = steps // 2
    head = first + step * idx[:half].astype(work)
    tail = last - step * (steps - 1 - idx[half:]).astype(work)
    if steps == 1:
        head, tail = np.array([first], dtype=work), tail[:0]
    data = np.concatenate([head, tail]).astype(dt)
    return _leaf(data, requires_grad)


@register(
    samples=lambda rng: [
        sample(3, note="square"),
        sample(2, 3, note="rectangular"),
        sample(0, note="empty"),
        sample(3, dtype="bool", note="bool"),
        sample(2, dtype="float64", requires_grad=True, note="requires_grad"),
    ],
    differentiable=False,
    method=False,
    estimate=estimates.eye,
)
def eye(n: int, m: int | None = None, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal (``n`` rows, ``m`` columns, default ``n``)."""
    for pos, name, value in ((1, "n", n), (2, "m", m)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise BadArgumentsError(
                f"eye(): argument '{name}' (position {pos}) must be int, not {type(value).__name__}"
            )
        if value < 0:
            raise BadArgumentsError(f"{name} must be greater or equal to 0, got {value}")
    return _leaf(np.eye(int(n), None if m is None else int(m), dtype=_dtype(dtype)), requires_grad)
