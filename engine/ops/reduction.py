"""Reductions: sum, mean, prod, max/min, amax/amin, aminmax, argmax/argmin, norm,
var/std (and std_mean/var_mean), nansum/nanmean, any/all/count_nonzero,
logsumexp, softmax and log_softmax.

The gradient of a reduction is its incoming gradient brought back over the
reduced dimensions (``expand_back``), times the local derivative. Selections
(max, amax, norm with p=inf) route it as PyTorch does: ``max()``/``amax``
split it evenly between ties, ``max(dim)`` gives it to the returned index.
Hot rules (sum, mean, softmax, log_softmax, logsumexp, max/amax) also have a
numpy ``vjp`` for backward passes that record no graph.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections import namedtuple
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .. import dtypes
from ..binding import Binding
from ..dual import FROM_BACKWARD, LINEAR, REDUCTION
from ..errors import (
    ArgumentTypeError,
    BadArgumentsError,
    DtypeMismatchError,
    IndexOutOfRangeError,
)
from ..function import Function
from ..primitives import DivBackward1, SumToSize, sum_to, sum_to_array  # noqa: F401 - re-exported
from ..registry import OPS, Const, Results, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import KernelDtypeError
from ._util import as_tensor, normalize_dim, normalize_dims
from .arithmetic import abs as abs_
from .arithmetic import pow as pow_
from .arithmetic import sign, where
from .elementwise import exp
from .shape import expand, reshape, to_dtype, unsqueeze

# -- helpers ---------------------------------------------------------------------------------


def numpy_names(fn: Callable[..., Any]) -> Callable[..., Any]:
    """PyTorch also takes numpy's keyword names: ``axis`` for ``dim`` and ``keepdims`` for
    ``keepdim``. The aliases join the op's signature, so the catalogue lists them."""
    sig = inspect.signature(fn)
    has_keepdim = "keepdim" in sig.parameters
    extra = [inspect.Parameter("axis", inspect.Parameter.KEYWORD_ONLY, default=None)]
    if has_keepdim:
        extra.append(inspect.Parameter("keepdims", inspect.Parameter.KEYWORD_ONLY, default=None))

    @functools.wraps(fn)
    def wrapper(*args: Any, axis: Any = None, keepdims: Any = None, **kwargs: Any) -> Any:
        if axis is not None:
            if "dim" in kwargs or len(args) > 1:
                raise ArgumentTypeError(f"{fn.__name__}() got multiple values for argument 'dim'")
            kwargs["dim"] = axis
        if keepdims is not None:
            if not has_keepdim:
                raise ArgumentTypeError(
                    f"{fn.__name__}() got an unexpected keyword argument 'keepdims'"
                )
            kwargs["keepdim"] = keepdims
        return fn(*args, **kwargs)

    params = list(sig.parameters.values())
    wrapper.__signature__ = sig.replace(parameters=params + extra)  # type: ignore[attr-defined]
    del wrapper.__wrapped__  # the signature above, not the unwrapped one
    return wrapper


def _kept_shape(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _restore(g: Tensor, in_shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """A reduction's output (or gradient) in keepdim form, ready to broadcast over the input:
    one unsqueeze per reduced dim, in order, as PyTorch's ``unsqueeze_multiple`` records."""
    if keepdim or not dims or len(in_shape) == 0:
        return g

    for d in sorted(dims):
        g = unsqueeze(g, d)
    return g


def _restore_np(
    g: np.ndarray, in_shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool
) -> np.ndarray:
    if keepdim or not dims or len(in_shape) == 0:
        return g
    return g.reshape(_kept_shape(in_shape, dims))


def expand_back(
    g: Tensor, in_shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool
) -> Tensor:
    """The gradient of a reduction over ``dims``: reshape to keepdim form, then expand."""

    return expand(_restore(g, in_shape, dims, keepdim), in_shape)


def _sum_dtype(dt: np.dtype) -> np.dtype:
    """Integers and bool sum to int64; floating and complex keep their dtype."""
    return dt if dt.kind in "fc" else dtypes.int64


def _dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """Reduced axes for a ``dim`` argument; None and an empty list mean every axis, as in
    PyTorch's sum/mean/amax (``x.sum(dim=[])`` sums everything)."""
    if isinstance(dim, (list, tuple)):
        seen = [normalize_dim(d, ndim) for d in dim]
        for i, d in enumerate(seen):
            if d in seen[:i]:
                raise BadArgumentsError(f"dim {d} appears multiple times in the list of dims")
    dims = normalize_dims(dim, ndim)
    return dims if dims or dim is None else tuple(range(ndim))


def _count(shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _const(values: np.ndarray, dtype: np.dtype) -> Tensor:
    """A constant tensor (masks, counts) in a gradient's dtype."""
    return Tensor._make(np.asarray(values, dtype=dtype))


def _type_name(dt: np.dtype) -> str:
    return dtypes.type_name(dt)


# -- sum ---------------------------------------------------------------------------------------


class SumBackward0(Function):
    name = "SumBackward0"
    jvp = LINEAR
    ctx_fields = ("in_shape",)

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dtype: np.dtype | None = None) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return np.asarray(a._data.sum(dtype=dtype or _sum_dtype(a._data.dtype)))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand_back(g, ctx.in_shape, (), True)


class SumBackward1(Function):
    name = "SumBackward1"
    jvp = LINEAR
    ctx_fields = ("in_shape", "dims", "keepdim")

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, dims: tuple[int, ...], keepdim: bool, dtype: np.dtype | None = None
    ) -> np.ndarray:
        ctx.in_shape, ctx.dims, ctx.keepdim = a._data.shape, dims, keepdim
        out_dtype = dtype or _sum_dtype(a._data.dtype)
        return np.asarray(a._data.sum(axis=dims, keepdims=keepdim, dtype=out_dtype))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim)


def _reduce_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3)),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 2, 3), dim=1),
        sample(S.rand(rng, 2, 3, 4), dim=(0, 2), keepdim=True),
        sample(S.rand(rng, 2, 3), dim=-1, keepdim=True),
        sample(S.rand(rng, 2, 3), dim=[], note="empty dim list reduces all"),
        sample(S.rand(rng, 0, 3), dim=0, note="empty, dim"),
        sample(S.rand(rng, 0, 3), note="empty"),
        sample(S.rand(rng, 2, 3), axis=1, note="numpy's axis"),
        sample(S.rand(rng, 2, 3), axis=0, keepdims=True, note="numpy's axis and keepdims"),
    ]


def _sum_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *_reduce_samples(rng),
        sample(S.rand(rng, 2, 3), dtype="float64", note="dtype float64"),
        sample(S.rand(rng, 2, 3), 1, dtype="float64", note="dim, dtype float64"),
        sample(Const(np.array([[1, 2], [3, 4]], np.int32)), note="int32 sums to int64"),
        sample(Const(np.array([True, True, False])), note="bool sums to int64"),
        sample(Const(np.array([1, 2], np.uint8)), dtype="float32", note="uint8 to float32"),
    ]


def _dtype_arg(dtype: Any) -> np.dtype | None:
    return None if dtype is None else dtypes.to_dtype(dtype)


@register(out_overlap="unchecked", samples=_sum_samples)
@numpy_names
def sum(  # noqa: A001
    input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """Sum of all elements, or over ``dim`` (an int or a list of ints), accumulated in
    ``dtype`` when given (integers and bool sum to int64 by default)."""
    a = as_tensor(input)
    dt = _dtype_arg(dtype)
    if dim is None and not keepdim:
        return SumBackward0.apply(a, dtype=dt)
    if dim is None:  # keepdim over every dim: PyTorch's dim-list overload
        dim = tuple(range(a.ndim))
    return SumBackward1.apply(a, dims=_dims(dim, a.ndim), keepdim=bool(keepdim), dtype=dt)


# -- mean --------------------------------------------------------------------------------------


def _mean_array(x: np.ndarray, dims: tuple[int, ...] | None, keepdim: bool) -> np.ndarray:
    """Sum over count without NumPy's "Mean of empty slice" warning (empty gives nan)."""
    n = x.size if dims is None else _count(x.shape, dims)
    total = x.sum(axis=dims, keepdims=keepdim)
    if n == 0:
        return np.full(np.shape(total), np.nan, x.dtype)
    return np.asarray(total / n, dtype=x.dtype)


class MeanBackward0(Function):
    name = "MeanBackward0"
    complex_ok = True  # g / n, spread back: the same for complex gradients
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_shape = a._data.shape
        return _mean_array(a._data, None, False)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return DivBackward1.apply(
            expand_back(g, ctx.in_shape, (), True), by=math.prod(ctx.in_shape)
        )


class MeanBackward1(Function):
    name = "MeanBackward1"
    complex_ok = True  # g / n, spread back: the same for complex gradients
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        ctx.in_shape, ctx.dims, ctx.keepdim = a._data.shape, dims, keepdim
        return _mean_array(a._data, dims, keepdim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        n = _count(ctx.in_shape, ctx.dims)
        return DivBackward1.apply(expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim), by=n)


def _cast_input(a: Tensor, dt: np.dtype) -> Tensor:
    """The input in a reduction's ``dtype=``: PyTorch casts first and records no extra
    node, so the cast is folded into the reduction's own gradient (the backward loop casts
    a gradient to its input's dtype)."""
    if a._data.dtype == dt:
        return a
    if a._data.dtype.kind not in "fc":
        return Tensor._make(a._data.astype(dt))
    return _Cast.apply(a, dtype=dt)  # a complex input: its real part, not complex_ok


class _Cast(Function):
    """A dtype conversion folded into the reduction that follows (no node of its own in
    PyTorch; here an identity rule the backward loop casts back)."""

    name = "ToCopyBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dtype: np.dtype) -> np.ndarray:
        if a._data.dtype.kind == "c" and dtype.kind != "c":
            return a._data.real.astype(dtype)  # torch's cast keeps the real part
        return a._data.astype(dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return g


def _require_floating(a: Tensor, message: str, complex_ok: bool = False) -> None:
    dt = a._data.dtype
    if dt.kind == "c" and not complex_ok:  # torch computes it; the engine refuses clearly
        op = message.split(":")[0].removesuffix("()")
        raise KernelDtypeError(f"{op} is not implemented for '{_type_name(dt)}' in this engine")
    if not dtypes.is_differentiable(dt):
        raise DtypeMismatchError(message.format(name=_type_name(dt)))


def _mean_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *_reduce_samples(rng),
        sample(S.rand(rng, 2, 3), 1, dtype="float64", note="dtype float64"),
        sample(Const(np.array([1, 2, 4])), dtype="float32", note="int64 with a float dtype"),
    ]


@register(out_overlap="unchecked", samples=_mean_samples)
@numpy_names
def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean of all elements, or over ``dim``, computed in ``dtype`` when given; floating
    results only, as in PyTorch."""
    a = as_tensor(input)
    if dtype is not None:
        dt = dtypes.to_dtype(dtype)
        if dt.kind != "f":
            raise DtypeMismatchError(
                "mean(): could not infer output dtype. Optional dtype must be either a "
                f"floating point or complex dtype. Got: {dtypes.type_name(dt)}"
            )
        a = _cast_input(a, dt)
    _require_floating(
        a,
        "mean(): could not infer output dtype. Input dtype must be either a floating point "
        "or complex dtype. Got: {name}",
        complex_ok=True,
    )
    if dim is None and not keepdim:
        return MeanBackward0.apply(a)
    if dim is None:  # keepdim over every dim: PyTorch's dim-list overload
        dim = tuple(range(a.ndim))
    return MeanBackward1.apply(a, dims=_dims(dim, a.ndim), keepdim=bool(keepdim))


# -- prod --------------------------------------------------------------------------------------


def _prod_grad(g: Tensor, a: Tensor, out: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """PyTorch's prod_backward: ``g * out / a`` without zeros; with zeros, the product of
    the other elements of each slice, computed so it stays differentiable."""
    if a.ndim == 0:
        return g
    shape = a._data.shape
    dims = tuple(range(len(shape))) if dim is None else (dim,)
    g = _restore(g, shape, dims, keepdim or dim is None)
    zero = a._data == 0
    if not zero.any():
        return g * (_restore(out, shape, dims, keepdim or dim is None) / a)
    if dim is None:
        flat = reshape(a, (-1,))
        return g * reshape(_others_product(flat, 0, zero.reshape(-1)), shape)
    return g * _others_product(a, dim, zero)


def _others_product(a: Tensor, dim: int, zero: np.ndarray) -> Tensor:
    """``prod(a[j] for j != i)`` along ``dim`` for every i, where some entries are zero.

    Nonzero entries use the product of the slice's nonzeros over themselves,
    times the product of the slice's zero entries (0, but it carries their
    derivative); a zero entry gets the nonzero product times the other zero
    entries (1 with one zero, the other entry with two, 0 with more). Values
    and first derivatives are exact, so double backward is right at zeros."""

    mask = Tensor._make(zero)
    count = zero.sum(axis=dim, keepdims=True)
    safe = where(mask, 1.0, a)
    nonzero_prod = ProdBackward1.apply(safe, dim=dim, keepdim=True)
    zero_prod = ProdBackward1.apply(where(mask, a, 1.0), dim=dim, keepdim=True)
    zero_sum = sum(where(mask, a, 0.0), dim, keepdim=True)
    other_zeros = where(
        Tensor._make(count == 1), 1.0, where(Tensor._make(count == 2), zero_sum - a, 0.0)
    )
    return where(mask, nonzero_prod * other_zeros, zero_prod * nonzero_prod / safe)


class ProdBackward0(Function):
    name = "ProdBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.save_result()
        return np.asarray(a._data.prod(dtype=_sum_dtype(a._data.dtype)))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _prod_grad(g, a, ctx.result, None, False)


class ProdBackward1(Function):
    name = "ProdBackward1"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, keepdim: bool) -> np.ndarray:
        ctx.dim, ctx.keepdim = dim, keepdim
        ctx.save_for_backward(a)
        ctx.save_result()
        x = a._data
        if x.ndim == 0:
            return np.asarray(x, dtype=_sum_dtype(x.dtype)).copy()
        return np.asarray(x.prod(axis=dim, keepdims=keepdim, dtype=_sum_dtype(x.dtype)))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _prod_grad(g, a, ctx.result, ctx.dim, ctx.keepdim)


def _prod_samples(rng: np.random.Generator) -> list[Any]:
    with_zero = S.rand(rng, 3, 4)
    with_zero[1, 2] = 0.0
    two_zeros = S.rand(rng, 2, 4)
    two_zeros[0, 1] = two_zeros[0, 3] = 0.0
    return [
        sample(S.rand(rng, 2, 3)),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 2, 3), 1),
        sample(S.rand(rng, 2, 3), -2, keepdim=True),
        sample(S.rand(rng), 0, note="0-d with dim"),
        sample(with_zero, note="one zero"),
        sample(with_zero, 1, note="one zero, dim"),
        sample(with_zero, 0, note="one zero, dim 0"),
        sample(two_zeros, note="two zeros"),
        sample(two_zeros, 1, note="two zeros in a slice"),
        sample(S.rand(rng, 0, 3), note="empty"),
        sample(S.rand(rng, 0, 3), 1, note="empty, dim"),
    ]


@register(out_overlap="unchecked", samples=_prod_samples)
@numpy_names
def prod(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product of all elements, or along one ``dim`` (in ``dtype`` when given; integers
    multiply to int64); zero-safe gradient as PyTorch's."""
    a = as_tensor(input)
    if dtype is not None and dtypes.to_dtype(dtype) == np.bool_:  # a logical all, in bool
        out = prod(Tensor._make(a._data.astype(np.bool_)), dim, keepdim)
        return Tensor._make(out._data.astype(np.bool_))
    if dtype is not None:
        a = _cast_input(a, dtypes.to_dtype(dtype))
    elif a._data.dtype.kind in "biu" and a._data.dtype != dtypes.int64:
        a = Tensor._make(a._data.astype(dtypes.int64))
    if dim is None:
        return ProdBackward0.apply(a)
    if isinstance(dim, (list, tuple)):
        raise BadArgumentsError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    return ProdBackward1.apply(a, dim=normalize_dim(dim, a.ndim), keepdim=bool(keepdim))


# -- max / min -----------------------------------------------------------------------------

# ``torch.return_types.max`` / ``min``: a tuple of (values, indices) with names.
MaxResult = namedtuple("MaxResult", ["values", "indices"])
MinResult = namedtuple("MinResult", ["values", "indices"])


def _tie_mask(x: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Where the input equals the selected value (NaN selects the NaNs, as PyTorch)."""
    if np.isnan(value).any():
        return np.isnan(x)
    return x == value


def _evenly(g: Tensor, a: Tensor, out: Tensor) -> Tensor:
    """PyTorch's evenly_distribute_backward: ties share the gradient equally."""

    mask = _tie_mask(a._data, out._data)
    return where(Tensor._make(mask), g / int(mask.sum()), 0.0)


class MaxBackward1(Function):
    """``max()`` of the whole tensor."""

    name = "MaxBackward1"
    jvp = REDUCTION  # max(): one result reads every element
    _np = staticmethod(np.ndarray.max)

    @classmethod
    def forward(cls, ctx: Any, a: Tensor) -> np.ndarray:  # type: ignore[override]
        ctx.save_for_backward(a)
        ctx.save_result()
        return np.asarray(cls._np(a._data))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _evenly(g, a, ctx.result)


class MinBackward1(MaxBackward1):
    name = "MinBackward1"
    _np = staticmethod(np.ndarray.min)


class MaxBackward0(Function):
    """``max(dim)``: values and indices; the gradient goes to the returned index."""

    name = "MaxBackward0"
    jvp = FROM_BACKWARD
    _arg: ClassVar[Any] = staticmethod(np.ndarray.argmax)
    _np = staticmethod(np.ndarray.max)

    @classmethod
    def forward(
        cls, ctx: Any, a: Tensor, *, dim: int, keepdim: bool
    ) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[override]
        x = a._data
        ctx.in_shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim
        idx: Any
        if x.ndim == 0:
            idx = np.zeros((), dtypes.int64)
            ctx.save_for_backward(idx)
            return x.copy(), idx
        # max and argmax agree, NaN included (both pick the first NaN)
        idx = cls._arg(x, axis=dim, keepdims=True)
        ctx.save_for_backward(idx)
        values = np.asarray(cls._np(x, axis=dim, keepdims=keepdim))
        if not keepdim:
            idx = idx.squeeze(dim)
        return values, idx.astype(dtypes.int64, copy=False)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor, _g_indices: Any = None) -> Tensor:  # type: ignore[override]
        if not ctx.in_shape:
            ctx.saved_tensors  # noqa: B018 - raises if the graph was freed
            return g

        # PyTorch's value_selecting_reduction_backward: zeros.scatter(dim, indices, grad)
        (idx,) = ctx.saved_tensors
        zeros = Tensor._make(np.zeros(ctx.in_shape, g.dtype))
        src = g if ctx.keepdim else unsqueeze(g, ctx.dim)
        # (through the registry: the scatter family imports this module)
        return OPS["scatter"].fn(zeros, ctx.dim, Tensor._make(idx), src)


class MinBackward0(MaxBackward0):
    name = "MinBackward0"
    _arg: ClassVar[Any] = staticmethod(np.ndarray.argmin)
    _np = staticmethod(np.ndarray.min)


def _nonempty_dim(op: str, a: Tensor, d: int) -> None:
    if a.ndim and a._data.shape[d] == 0:
        raise IndexOutOfRangeError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _select(
    op: str,
    whole: type[Function],
    along: type[Function],
    result: Any,
    input: Any,
    dim: Any,
    keepdim: bool,
) -> Any:
    a = as_tensor(input)
    if dim is None:
        if a._data.size == 0:
            raise BadArgumentsError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        return whole.apply(a)
    if isinstance(dim, (list, tuple)):
        raise BadArgumentsError(
            f"{op}() received an invalid combination of arguments - got (dim={type(dim).__name__}), "
            "but expected one of: (), (Tensor other), (int dim, bool keepdim = False)"
        )
    d = normalize_dim(dim, a.ndim)
    _nonempty_dim(op, a, d)
    values, indices = along.apply(a, dim=d, keepdim=bool(keepdim))
    return result(values, indices)


def _binary(name: str, input: Any, other: Tensor) -> Tensor:
    """``max(a, b)`` with a tensor ``b`` is the elementwise ``maximum``, as in PyTorch."""

    if name not in OPS:
        raise BadArgumentsError(f"{name} is not available")
    return OPS[name].fn(input, other)


def _max_samples(rng: np.random.Generator) -> list[Any]:
    ties = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]])
    return [
        sample(S.rand(rng, 2, 3), note="whole"),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 2, 3), 1, note="dim"),
        sample(S.rand(rng, 2, 3), -2, True, note="dim keepdim"),
        sample(S.rand(rng), 0, note="0-d dim"),
        sample(S.rand(rng, 0, 3), 1, note="empty, dim"),
        sample(ties, note="whole, ties split", gradcheck=False),
        sample(ties, 1, note="dim, ties to the index", gradcheck=False),
    ]


@register(
    complex_inputs="\"max_all\" not implemented for '{type}'",
    samples=_max_samples,
    results=Results("given", arg="dim"),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
@numpy_names
def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Largest element; with ``dim``, (values, indices) along it; with a tensor, ``maximum``."""
    if isinstance(dim, Tensor):
        return _binary("maximum", input, dim)
    return _select("max", MaxBackward1, MaxBackward0, MaxResult, input, dim, keepdim)


@register(
    complex_inputs="\"min_all\" not implemented for '{type}'",
    samples=_max_samples,
    results=Results("given", arg="dim"),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
@numpy_names
def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Smallest element; with ``dim``, (values, indices) along it; with a tensor, ``minimum``."""
    if isinstance(dim, Tensor):
        return _binary("minimum", input, dim)
    return _select("min", MinBackward1, MinBackward0, MinResult, input, dim, keepdim)


class AmaxBackward0(Function):
    name = "AmaxBackward0"
    jvp = REDUCTION  # each result reads its own slice
    _np = staticmethod(np.ndarray.max)

    @classmethod
    def forward(cls, ctx: Any, a: Tensor, *, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:  # type: ignore[override]
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(a)
        ctx.save_result()
        return np.asarray(cls._np(a._data, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        # PyTorch's scale_grad_by_count: (grad / mask.sum(dim, True)) * mask
        (a,) = ctx.saved_tensors
        shape, dims, keepdim = a._data.shape, ctx.dims, ctx.keepdim
        out = _restore_np(ctx.result._data, shape, dims, keepdim)
        mask = a._data == out
        count = mask.sum(axis=dims, keepdims=True)
        dt = g._data.dtype
        return (_restore(g, shape, dims, keepdim) / _const(count, dt)) * _const(mask, dt)


class AminBackward0(AmaxBackward0):
    name = "AminBackward0"
    _np = staticmethod(np.ndarray.min)


def _amax_samples(rng: np.random.Generator) -> list[Any]:
    ties = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]])
    return [
        sample(S.rand(rng, 2, 3), note="all"),
        sample(S.rand(rng, 2, 3), 1),
        sample(S.rand(rng, 2, 3, 4), (0, 2), True),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 0, 3), 1, note="empty"),
        sample(ties, 1, note="ties split evenly", gradcheck=False),
        sample(ties, note="ties split evenly, all", gradcheck=False),
    ]


def _extreme(op: str, fn: type[Function], input: Any, dim: Any, keepdim: bool) -> Tensor:
    a = as_tensor(input)
    dims = _dims(dim, a.ndim)
    if a._data.size == 0:
        # only a missing dim (every dim by default) is "to be specified"; named dims,
        # even all of them, are each checked for size, as in PyTorch
        if dim is None or (isinstance(dim, (list, tuple)) and not dim):
            raise BadArgumentsError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        for given in dim if isinstance(dim, (list, tuple)) else [dim]:
            # the message names the dim as given (PyTorch's amax/amin do not wrap it)
            if a.ndim and a._data.shape[normalize_dim(given, a.ndim)] == 0:
                raise IndexOutOfRangeError(
                    f"{op}(): Expected reduction dim {given} to have non-zero size."
                )
    return fn.apply(a, dims=dims, keepdim=bool(keepdim))


_AMAX_OUT = (
    "Expected the dtype for input and out to match, but got {input} for input's dtype and {out} "
    "for out's dtype."
)


@register(
    complex_inputs="\"max_values_cpu\" not implemented for '{type}'",
    out_overlap="unchecked",
    samples=_amax_samples,
    out_dtype=_AMAX_OUT,
)
@numpy_names
def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Largest element over ``dim`` (all by default); ties share the gradient evenly."""
    return _extreme("amax", AmaxBackward0, input, dim, keepdim)


@register(
    complex_inputs="\"min_values_cpu\" not implemented for '{type}'",
    out_overlap="unchecked",
    samples=_amax_samples,
    out_dtype=_AMAX_OUT,
)
@numpy_names
def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Smallest element over ``dim`` (all by default); ties share the gradient evenly."""
    return _extreme("amin", AminBackward0, input, dim, keepdim)


def _arg_extreme(op: str, np_fn: Any, input: Any, dim: Any, keepdim: bool) -> Tensor:
    a = as_tensor(input)
    x = a._data
    if x.dtype == dtypes.bool_:
        raise DtypeMismatchError(f"{op}(): does not support bool input")
    if dim is None:
        if x.size == 0:
            raise IndexOutOfRangeError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        idx = np.asarray(np_fn(x))
        if keepdim:
            idx = idx.reshape((1,) * x.ndim)
        return Tensor._make(idx.astype(dtypes.int64))
    if isinstance(dim, (list, tuple)):
        raise BadArgumentsError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    d = normalize_dim(dim, x.ndim)
    if x.ndim == 0:
        return Tensor._make(np.zeros((), dtypes.int64))
    _nonempty_dim(op, a, d)
    return Tensor._make(np.asarray(np_fn(x, axis=d, keepdims=bool(keepdim)), dtype=dtypes.int64))


def _argmax_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3)),
        sample(S.rand(rng, 2, 3), 1),
        sample(S.rand(rng, 2, 3), 0, True),
        sample(S.rand(rng, 2, 3), keepdim=True, note="flat keepdim"),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 0, 3), 1, note="empty"),
        sample(np.array([1.0, 3.0, 3.0]), note="ties: first index"),
    ]


@register(
    complex_inputs=(RuntimeError, "argmax(): does not support complex input"),
    samples=_argmax_samples,
    differentiable=False,
)
@numpy_names
def argmax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (of the flattened input without ``dim``); int64."""
    return _arg_extreme("argmax", np.argmax, input, dim, keepdim)


@register(
    complex_inputs=(RuntimeError, "argmin(): does not support complex input"),
    samples=_argmax_samples,
    differentiable=False,
)
@numpy_names
def argmin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest element (of the flattened input without ``dim``); int64."""
    return _arg_extreme("argmin", np.argmin, input, dim, keepdim)


# -- norm --------------------------------------------------------------------------------------


class LinalgVectorNormBackward0(Function):
    """``norm``/``linalg.vector_norm``: PyTorch 2 routes every vector norm here."""

    name = "LinalgVectorNormBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, p: float, dims: tuple[int, ...], keepdim: bool
    ) -> np.ndarray:
        ctx.p, ctx.dims, ctx.keepdim = p, dims, keepdim
        ctx.save_for_backward(a)
        ctx.save_result()
        return _vector_norm(a._data, p, dims, keepdim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None]:
        (a,) = ctx.saved_tensors
        if ctx.p == 0:  # PyTorch returns no gradient at all: the leaf's .grad stays None
            return (None,)
        return (_norm_grad(g, a, ctx.result, ctx.p, ctx.dims, ctx.keepdim),)


def _vector_norm(x: np.ndarray, p: float, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """The forward, by cases (NumPy's linalg.vector_norm costs 20 us on a tiny input)."""
    if p == 2:
        if len(dims) == x.ndim:
            flat = x.ravel()
            out = np.sqrt(np.dot(flat, flat))
            return np.asarray(out, dtype=x.dtype).reshape((1,) * x.ndim if keepdim else ())
        return np.sqrt(np.multiply(x, x).sum(axis=dims, keepdims=keepdim))
    ax = np.abs(x)
    if p == 1:
        out = ax.sum(axis=dims, keepdims=keepdim)
    elif p == math.inf:
        out = ax.max(axis=dims, keepdims=keepdim)
    elif p == -math.inf:
        out = ax.min(axis=dims, keepdims=keepdim)
    elif p == 0:
        out = (x != 0).sum(axis=dims, keepdims=keepdim, dtype=x.dtype)
    else:
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            out = np.power(np.power(ax, p).sum(axis=dims, keepdims=keepdim), 1.0 / p)
    return np.asarray(out, dtype=x.dtype)


def _norm_grad(
    g: Tensor, a: Tensor, out: Tensor, p: float, dims: tuple[int, ...], keepdim: bool
) -> Tensor:
    """PyTorch's norm_backward, p by p (a zero norm gives a zero gradient)."""

    shape = a._data.shape
    g = _restore(g, shape, dims, keepdim)
    out = _restore(out, shape, dims, keepdim)
    zero_norm = Tensor._make(out._data == 0)
    if p == 1:
        return sign(a) * g
    if p == 2:
        return g * where(zero_norm, 0.0, a / out)
    if math.isinf(p):
        x_abs = np.abs(a._data)
        mask = (x_abs == out._data) | np.isnan(x_abs)
        count = mask.sum(axis=dims, keepdims=True)
        dt = g._data.dtype
        return sign(a) * ((g / _const(count, dt)) * _const(mask, dt))
    if p < 1:
        scaled = sign(a) * where(Tensor._make(a._data == 0), 0.0, pow_(abs_(a), p - 1))
        return scaled * g * pow_(out, 1 - p)
    scale = where(zero_norm, 0.0, g / pow_(out, p - 1))
    if p < 2:
        return sign(a) * pow_(abs_(a), p - 1) * scale
    return a * pow_(abs_(a), p - 2) * scale


def _no_identity(order: float, a: Tensor, dim: Any) -> None:
    """Norms with no identity (max-like or negative p) refuse empty slices, as PyTorch."""
    where = "an empty tensor "
    given = () if dim is None else dim if isinstance(dim, (list, tuple)) else (dim,)
    if given:
        empty = next(d for d in given if a._data.shape[normalize_dim(d, a.ndim)] == 0)
        where = f"the dimension {empty}because this dimension is empty and "  # sic: PyTorch's
        raise BadArgumentsError(
            f"linalg.vector_norm cannot compute the {order:g} norm on {where}"
            "the operation does not have an identity"
        )
    raise BadArgumentsError(
        f"linalg.vector_norm cannot compute the {order:g} norm on {where}because "
        "the operation does not have an identity"
    )


def _norm_order(p: Any, dim: Any, ndim: int) -> float:
    if p is None:
        return 2.0
    if isinstance(p, str):
        if p == "fro":
            if isinstance(dim, (list, tuple)) and len(dim) > 2:
                raise BadArgumentsError(
                    "linalg.matrix_norm: dim must be a 2-tuple. Got "
                    + " ".join(str(d) for d in dim)
                )
            return 2.0
        raise BadArgumentsError(f"linalg.matrix_norm: Order {p} not supported.")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise BadArgumentsError(f"norm(): p must be a number or 'fro', got {p!r}")
    return float(p)


def _norm_samples(rng: np.random.Generator) -> list[Any]:
    inf = float("inf")
    return [
        sample(S.rand(rng, 2, 3), note="p=2"),
        sample(S.rand(rng, 2, 3), 1, note="p=1"),
        sample(S.rand(rng, 2, 3), 3, note="p=3"),
        sample(S.rand(rng, 2, 3), 1.5, note="p=1.5"),
        sample(S.positive(rng, 2, 3), 0.5, note="p=0.5"),
        sample(S.rand(rng, 2, 3), inf, note="p=inf"),
        sample(S.rand(rng, 2, 3), -inf, note="p=-inf"),
        sample(S.rand(rng, 2, 3), 0, note="p=0"),
        sample(S.rand(rng, 2, 3), "fro", note="fro"),
        sample(S.rand(rng, 3, 2), "nuc", note="nuc"),
        sample(S.rand(rng, 2, 3, 2), "nuc", (0, 2), True, note="nuc dims keepdim"),
        sample(S.rand(rng, 2, 3), dim=1, note="dim"),
        sample(S.rand(rng, 2, 3, 4), 2, (0, 2), True, note="dims keepdim"),
        sample(S.rand(rng, 2, 3), inf, 1, note="inf dim"),
        sample(S.rand(rng, 2, 3), keepdim=True, note="keepdim, all dims"),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 0, 3), note="empty"),
        sample(np.zeros((2, 3)), dim=1, note="zero vector: zero gradient", gradcheck=False),
    ]


def _norm_work(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """'nuc' is an SVD (``matrix_norm``'s work) of whichever two dims: bounded by any."""
    p = kwargs.get("p", args[1] if len(args) > 1 else "fro")
    x = args[0] if args else kwargs.get("input")
    if p != "nuc" or not isinstance(x, Tensor) or x.ndim < 2:
        return None
    return 30 * x._data.size * max(x.shape)


@register(
    out_overlap="unchecked", samples=_norm_samples, numpy_names=False, work=_norm_work
)  # torch.functional.norm: Python
def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
    """Vector p-norm over all elements or ``dim`` (p: a number, inf, -inf, 0, 'fro'; 'nuc' is
    the matrix nuclear norm)."""
    a = as_tensor(input)
    if p == "nuc":  # torch.functional.norm hands it to matrix_norm, over every dim by default
        dims = list(range(a.ndim)) if dim is None else dim
        return OPS["matrix_norm"].fn(a, "nuc", dims, keepdim)  # type: ignore[no-any-return]
    order = _norm_order(p, dim, a.ndim)
    _require_floating(
        a, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {name}"
    )
    dims = _dims(dim, a.ndim)
    if (order < 0 or math.isinf(order)) and _count(a._data.shape, dims) == 0:
        _no_identity(order, a, dim)
    return LinalgVectorNormBackward0.apply(a, p=order, dims=dims, keepdim=bool(keepdim))


# -- var / std ---------------------------------------------------------------------------------

_DOF_WARNING = (
    "{op}(): degrees of freedom is <= 0. Correction should be strictly less than the "
    "reduction factor (input numel divided by output numel)."
)


def _var_array(
    x: np.ndarray,
    dims: tuple[int, ...] | None,
    correction: float,
    keepdim: bool,
    op: str = "var",
) -> np.ndarray:
    n = x.size if dims is None else _count(x.shape, dims)
    # PyTorch's reduction factor is input numel / output numel: 0 for an empty input
    if (n if x.size else 0) - correction <= 0:
        warnings.warn(_DOF_WARNING.format(op=op), UserWarning, stacklevel=4)
    if n == 0 or n - correction <= 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return _var_array_unchecked(x, dims, n, correction, keepdim)
    return _var_array_unchecked(x, dims, n, correction, keepdim)


def _var_array_unchecked(
    x: np.ndarray, dims: tuple[int, ...] | None, n: int, correction: float, keepdim: bool
) -> np.ndarray:
    mean = np.divide(x.sum(axis=dims, keepdims=True), n, dtype=x.dtype)
    dev = np.asarray(x - mean)
    np.multiply(dev, dev, out=dev)
    total = dev.sum(axis=dims, keepdims=keepdim)
    dof = n - correction
    return np.asarray(np.divide(total, dof if dof > 0 else 0, dtype=x.dtype))


def _var_grad(
    g: Tensor, a: Tensor, dims: tuple[int, ...] | None, correction: float, keepdim: bool
) -> Tensor:
    """PyTorch's var_backward: ``2 / (n - correction) * g * (x - mean)``."""
    if a.ndim == 0 or dims is None:
        dof = a._data.size - correction
        if dof <= 0:
            with np.errstate(invalid="ignore"):
                at_mean = a._data == _mean_array(a._data, None, False)
            return g * _const(np.where(at_mean, np.nan, np.inf), a._data.dtype)
        return g * (2.0 / dof) * (a - mean(a))
    if not keepdim and a.ndim > 1:
        g = _restore(g, a._data.shape, dims, False)
    dof = _count(a._data.shape, dims) - correction
    coef = 2.0 / dof if dof != 0 else math.inf
    return g * coef * (a - mean(a, dims, keepdim=True))


class VarBackward0(Function):
    name = "VarBackward0"
    jvp = REDUCTION  # each result reads its own slice

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, dims: tuple[int, ...] | None, correction: float, keepdim: bool
    ) -> np.ndarray:
        ctx.dims, ctx.correction, ctx.keepdim = dims, correction, keepdim
        ctx.save_for_backward(a)
        return _var_array(a._data, dims, correction, keepdim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _var_grad(g, a, ctx.dims, ctx.correction, ctx.keepdim)


class StdBackward0(Function):
    name = "StdBackward0"
    jvp = REDUCTION  # each result reads its own slice

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, dims: tuple[int, ...] | None, correction: float, keepdim: bool
    ) -> np.ndarray:
        ctx.dims, ctx.correction, ctx.keepdim = dims, correction, keepdim
        ctx.save_for_backward(a)
        ctx.save_result()
        return np.sqrt(_var_array(a._data, dims, correction, keepdim, "std"))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        out = ctx.result
        grad_var = where(Tensor._make(out._data == 0), 0.0, g / (out * 2))
        return _var_grad(grad_var, a, ctx.dims, ctx.correction, ctx.keepdim)


def _var_args(
    op: str, input: Any, dim: Any, unbiased: Any, correction: Any
) -> tuple[Tensor, tuple[int, ...] | None, float]:
    a = as_tensor(input)
    if isinstance(dim, bool):  # ``x.var(False)``: the legacy (bool unbiased) overload
        if unbiased is not None:
            raise BadArgumentsError(f"{op}(): got an unexpected bool for dim")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise BadArgumentsError(
            f"{op}() received an invalid combination of arguments - got both 'unbiased' and "
            "'correction'; give one of them"
        )
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise BadArgumentsError(f"{op}(): correction must be a number, got {correction!r}")
    if a._data.dtype.kind == "c":  # torch computes a real variance; the engine refuses clearly
        raise KernelDtypeError(f"{op} is not implemented for complex tensors in this engine")
    if not dtypes.is_floating(a._data.dtype):
        raise DtypeMismatchError("std and var only support floating point and complex dtypes")
    dims = None if dim is None else _dims(dim, a.ndim)
    return a, dims, float(correction)


def _var_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), note="all"),
        sample(S.rand(rng, 2, 3), 1, note="dim"),
        sample(S.rand(rng, 2, 3, 4), (0, 2), keepdim=True, note="dims keepdim"),
        sample(S.rand(rng, 2, 3), 1, correction=0, note="correction 0"),
        sample(S.rand(rng, 2, 3), 0, correction=0.5, note="fractional correction"),
        sample(S.rand(rng, 2, 3), 1, False, True, note="unbiased False, keepdim"),
        sample(S.rand(rng, 4), 0, note="1-d dim"),
        sample(S.rand(rng, 1, 3), 0, note="one element per slice: nan", gradcheck=False),
        sample(S.rand(rng, 0, 3), 1, note="empty"),
    ]


@register(out_overlap="unchecked", samples=_var_samples)
@numpy_names
def var(
    input: Tensor,
    dim: Any = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    """Variance over all elements or ``dim``, dividing by ``n - correction`` (default 1)."""
    a, dims, corr = _var_args("var", input, dim, unbiased, correction)
    return VarBackward0.apply(a, dims=dims, correction=corr, keepdim=bool(keepdim))


@register(out_overlap="unchecked", samples=_var_samples)
@numpy_names
def std(
    input: Tensor,
    dim: Any = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    """Standard deviation: the square root of ``var`` (gradient 0 where it is 0)."""
    a, dims, corr = _var_args("std", input, dim, unbiased, correction)
    return StdBackward0.apply(a, dims=dims, correction=corr, keepdim=bool(keepdim))


# -- logsumexp, softmax, log_softmax -------------------------------------------------------


def _as_float(x: np.ndarray) -> np.ndarray:
    return x if dtypes.is_floating(x.dtype) else x.astype(dtypes.DEFAULT_FLOAT)


def _all_finite(m: np.ndarray) -> bool:
    """Whether no entry is inf or NaN (an overflowing sum only sends finite input to
    the careful path; this is twice as fast as ``np.isfinite(m).all()``)."""
    with np.errstate(invalid="ignore"):  # +inf and -inf in one tensor sum to NaN
        return math.isfinite(m.sum(dtype=np.float64))


def _shifted(x: np.ndarray, axis: tuple[int, ...] | None) -> tuple[np.ndarray, np.ndarray, bool]:
    """``x - m`` (a fresh array) with ``m`` its max along ``axis`` (keepdims), and whether
    ``m`` is finite. An infinite max is replaced by 0, as PyTorch does, so a slice with
    +inf does not become inf - inf; then the caller computes under ``np.errstate``
    (entering it costs more than the arithmetic on small inputs, so only then)."""
    if x.size == 0:
        shape = tuple(1 if (axis is None or i in axis) else s for i, s in enumerate(x.shape))
        return np.array(x), np.zeros(shape, x.dtype), True
    m = np.asarray(x.max(axis=axis, keepdims=True))
    # C order whatever the input's layout: softmax's result is contiguous in PyTorch
    if _all_finite(m):
        return np.asarray(np.subtract(x, m, order="C")), m, True
    m = np.array(m)
    m[np.isinf(m)] = 0
    with np.errstate(invalid="ignore"):
        return np.asarray(np.subtract(x, m, order="C")), m, False


class LogsumexpBackward0(Function):
    name = "LogsumexpBackward0"
    jvp = REDUCTION  # each result reads its own slice

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(a)
        ctx.save_result()
        e, m, finite = _shifted(_as_float(a._data), dims)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.exp(e, out=e)
            out = np.asarray(np.log(e.sum(axis=dims, keepdims=True)))
            out += m
        return (
            out if keepdim else out.reshape([s for i, s in enumerate(out.shape) if i not in dims])
        )

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        shape = a._data.shape
        out = _restore(ctx.result, shape, ctx.dims, ctx.keepdim)
        return _restore(g, shape, ctx.dims, ctx.keepdim) * exp(a - out)


@register(
    complex_inputs="logsumexp is not implemented for '{type}' in this engine",
    out_overlap="unchecked",
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3), 1),
        sample(S.rand(rng, 2, 3), 0, True),
        sample(S.rand(rng, 2, 3, 4), (0, 2)),
        sample(S.rand(rng, 2, 3) * 400.0, 1, note="large values stay finite"),
        sample(S.rand(rng), 0, note="0-d"),
        sample(S.rand(rng, 0, 3), 0, note="empty slice gives -inf"),
    ],
)
@numpy_names
def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, shifted by the max so it never overflows."""
    a = as_tensor(input)
    return LogsumexpBackward0.apply(a, dims=_dims(dim, a.ndim), keepdim=bool(keepdim))


def _nan_rows_with_posinf(out: np.ndarray, x: np.ndarray, dim: int | None) -> np.ndarray:
    """softmax and log_softmax subtract the max unchanged (unlike logsumexp): a slice
    holding +inf is inf - inf, NaN throughout, as in PyTorch."""
    posinf = np.isposinf(x.max(axis=dim, keepdims=True))
    if posinf.any():
        out[np.broadcast_to(posinf, out.shape)] = np.nan
    return out


class SoftmaxBackward0(Function):
    name = "SoftmaxBackward0"

    @staticmethod
    def jvp(ctx: Any, t: Tensor) -> Tensor:
        """``y * (t - sum(y * t))`` along the dim (PyTorch's softmax forward formula)."""
        y = ctx.result
        return y * (t - sum(y * t, ctx.dim, True))

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int | None) -> np.ndarray:
        ctx.dim = dim
        ctx.save_result()
        e, _, finite = _shifted(a._data, None if dim is None else (dim,))
        if finite:
            np.exp(e, out=e)
            e /= e.sum(axis=dim, keepdims=True)
            return e
        with np.errstate(invalid="ignore", over="ignore"):
            np.exp(e, out=e)
            e /= e.sum(axis=dim, keepdims=True)
        return _nan_rows_with_posinf(e, a._data, dim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return SoftmaxBackwardDataBackward0.apply(g, ctx.result, dim=ctx.dim)


class LogSoftmaxBackward0(Function):
    name = "LogSoftmaxBackward0"
    ctx_fields = ("dim",)

    @staticmethod
    def jvp(ctx: Any, t: Tensor) -> Tensor:
        """``t - sum(exp(out) * t)`` along the dim."""
        return t - sum(ctx.result.exp() * t, ctx.dim, True)

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int | None) -> np.ndarray:
        ctx.dim = dim
        ctx.save_result()
        shifted, _, finite = _shifted(a._data, None if dim is None else (dim,))
        if finite:  # the shifted values are <= 0 and each slice holds a 0: no overflow
            shifted -= np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
            return shifted
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            shifted -= np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
        return _nan_rows_with_posinf(shifted, a._data, dim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return LogSoftmaxBackwardDataBackward0.apply(g, ctx.result, dim=ctx.dim)

    vjp_row = "mlp"  # the numpy twin below earns its place on this bench row

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        e = np.exp(ctx.result._data)  # log-probabilities: never overflows
        e *= g.sum(axis=ctx.dim, keepdims=True)
        return g - e


def _dim_list(dim: int | None) -> Any:
    return dim if dim is not None else []


class SoftmaxBackwardDataBackward0(Function):
    """softmax's gradient ``(g - sum(g * out)) * out`` as one recorded op, PyTorch's
    ``_softmax_backward_data``: with create_graph it is the node PyTorch records, and
    its own rules are PyTorch's (the second derivative records the same ops)."""

    name = "SoftmaxBackwardDataBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, g: Tensor, out: Tensor, *, dim: int | None) -> np.ndarray:
        ctx.dim = dim
        ctx.save_for_backward(g, out)
        y = out._data
        with np.errstate(invalid="ignore", over="ignore"):
            gy = np.asarray(g._data * y)
            gy -= y * gy.sum(axis=dim, keepdims=True)
        return gy

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> tuple[Tensor | None, Tensor | None]:
        g, out = ctx.saved_tensors
        d = _dim_list(ctx.dim)
        need_g, need_out = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_g = SoftmaxBackwardDataBackward0.apply(gg, out, dim=ctx.dim) if need_g else None
        grad_out = None
        if need_out:  # PyTorch's softmax_double_backward
            grad_out = (
                g * gg - sum(out * g, d, keepdim=True) * gg - g * sum(out * gg, d, keepdim=True)
            )
        return grad_g, grad_out


class LogSoftmaxBackwardDataBackward0(Function):
    """log_softmax's gradient ``g - exp(out) * sum(g)`` as one recorded op, PyTorch's
    ``_log_softmax_backward_data`` (see SoftmaxBackwardDataBackward0)."""

    name = "LogSoftmaxBackwardDataBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, g: Tensor, out: Tensor, *, dim: int | None) -> np.ndarray:
        ctx.dim = dim
        ctx.save_for_backward(g, out)
        with np.errstate(invalid="ignore", over="ignore"):
            e = np.exp(out._data)  # log-probabilities: never overflows
            e *= g._data.sum(axis=dim, keepdims=True)
            return np.asarray(g._data - e)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> tuple[Tensor | None, Tensor | None]:
        g, out = ctx.saved_tensors
        d = _dim_list(ctx.dim)
        grad_g = grad_out = None
        if ctx.needs_input_grad[0]:
            grad_g = gg - sum(gg * exp(out), d, keepdim=True)
        if ctx.needs_input_grad[1]:
            grad_out = -sum(g, d, keepdim=True) * exp(out) * gg
        return grad_g, grad_out


def _softmax_input(op: str, input: Any, dim: Any, dtype: Any) -> tuple[Tensor, int | None]:
    a = as_tensor(input)
    if dtype is not None:
        a = to_dtype(a, dtype)
    if not dtypes.is_floating(a._data.dtype):
        d = normalize_dim(dim, a.ndim)
        kernel = f"{op}_lastdim_kernel_impl" if d >= a.ndim - 1 else f"{op}_kernel_impl"

        raise KernelDtypeError(f"\"{kernel}\" not implemented for '{_type_name(a._data.dtype)}'")
    d = normalize_dim(dim, a.ndim)
    return a, (d if a.ndim else None)


def _softmax_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 1),
        sample(S.rand(rng, 2, 3), 0),
        sample(S.rand(rng, 2, 3, 4), -2),
        sample(S.rand(rng, 2, 3) * 300.0, 1, note="large logits stay finite"),
        sample(S.rand(rng), 0, note="0-d"),
        sample(S.rand(rng, 4), -1, note="vector"),
        sample(S.rand(rng, 0, 3), 1, note="empty"),
    ]


@register(samples=_softmax_samples)
@numpy_names
def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, shifted by the max (never overflows)."""
    a, d = _softmax_input("softmax", input, dim, dtype)
    return SoftmaxBackward0.apply(a, dim=d)


@register(samples=_softmax_samples)
@numpy_names
def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim``: the stable log of softmax (cross-entropy's core)."""
    a, d = _softmax_input("log_softmax", input, dim, dtype)
    return LogSoftmaxBackward0.apply(a, dim=d)


# -- any, all, count_nonzero -------------------------------------------------------------------


def _logical_reduce(np_fn: Any, input: Any, dim: Any, keepdim: bool) -> Tensor:
    a = as_tensor(input)
    dims = None if dim is None else _dims(dim, a.ndim)
    if isinstance(dim, (list, tuple)) and not dim:
        dims = ()  # PyTorch's all/any over no dims reduce nothing (sum's () means every dim)
    with np.errstate(invalid="ignore"):
        out = np.asarray(np_fn(a._data, axis=dims, keepdims=bool(keepdim)))
    # PyTorch keeps uint8 for uint8 inputs (its legacy byte masks); every other dtype gives bool
    return Tensor._make(out.astype(np.uint8) if a._data.dtype == np.uint8 else out)


def _logical_samples(rng: np.random.Generator) -> list[Any]:
    mask = rng.random((2, 3)) > 0.5
    return [
        sample(Const(mask), note="bool"),
        sample(Const(mask), 1, note="dim"),
        sample(Const(mask), (0, 1), keepdim=True, note="dims keepdim"),
        sample(Const(np.array([[0.0, np.nan], [0.0, 0.0]])), 1, note="NaN counts as true"),
        sample(Const(np.array([1, 0, 3], np.uint8)), note="uint8 stays uint8"),
        sample(Const(np.array([1, 2, 3])), axis=0, note="int64, numpy's axis"),
        sample(Const(np.zeros((0, 2), bool)), 0, note="empty"),
    ]


@register(samples=_logical_samples, differentiable=False)
@numpy_names
def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether any element (over ``dim``) is nonzero (NaN counts as nonzero)."""
    return _logical_reduce(np.any, input, dim, keepdim)


@register(samples=_logical_samples, differentiable=False)
@numpy_names
def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element (over ``dim``) is nonzero (NaN counts as nonzero)."""
    return _logical_reduce(np.all, input, dim, keepdim)


@register(
    samples=lambda rng: [
        sample(Const(np.array([[0.0, 1.5, np.nan], [0.0, 0.0, -2.0]])), note="all"),
        sample(Const(np.array([[0.0, 1.5, np.nan], [0.0, 0.0, -2.0]])), 1, note="dim"),
        sample(Const(np.array([[0, 1], [2, 0]])), (0, 1), note="dims"),
        sample(Const(np.array([True, False, True])), note="bool"),
    ],
    differentiable=False,
)
@numpy_names
def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """How many elements (over ``dim``) are nonzero, as int64."""
    a = as_tensor(input)
    dims = None if dim is None else _dims(dim, a.ndim)
    return Tensor._make(np.asarray(np.count_nonzero(a._data, axis=dims), dtypes.int64))


# -- nansum, nanmean ---------------------------------------------------------------------------


class NansumBackward0(Function):
    """Sum with NaNs read as zero: the gradient is 0 where the input is NaN."""

    name = "NansumBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, dims: tuple[int, ...] | None, keepdim: bool, dtype: np.dtype
    ) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.dims, ctx.keepdim = dims, keepdim
        return np.asarray(np.nansum(a._data, axis=dims, keepdims=keepdim, dtype=dtype), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        # PyTorch multiplies by the mask: an infinite gradient at a NaN gives NaN, so a
        # nanmean over NaNs only has a NaN gradient there, as in PyTorch
        (a,) = ctx.saved_tensors
        dims = ctx.dims if ctx.dims is not None else tuple(range(a.ndim))
        full = expand_back(g, a._data.shape, dims, ctx.keepdim)
        return full * _const(~np.isnan(a._data), g._data.dtype)


def _nan_samples(rng: np.random.Generator) -> list[Any]:
    with_nan = S.rand(rng, 2, 3)
    with_nan[0, 1] = np.nan
    all_nan = S.rand(rng, 2, 3)
    all_nan[:, 2] = np.nan
    return [
        sample(S.rand(rng, 2, 3), note="no NaN"),
        sample(with_nan, note="a NaN"),
        sample(with_nan, 1, note="a NaN, dim"),
        sample(with_nan, (0, 1), keepdim=True, note="a NaN, dims keepdim"),
        sample(all_nan, 0, note="an all-NaN slice", gradcheck=False),
        sample(S.rand(rng), note="0-d"),
    ]


def _nansum_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *_nan_samples(rng),
        sample(Const(np.array([1, 2], np.int32)), note="int32 sums to int64"),
        sample(S.rand(rng, 2, 2), dtype="float64", note="dtype"),
    ]


@register(
    complex_inputs=(RuntimeError, "nansum on CPU does not support complex inputs"),
    out_overlap="unchecked",
    samples=_nansum_samples,
)
@numpy_names
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum treating NaN as zero (integers sum to int64)."""
    a = as_tensor(input)
    dims = None if dim is None else _dims(dim, a.ndim)
    dt = _dtype_arg(dtype) or _sum_dtype(a._data.dtype)
    if dims is None:
        keepdim = False
    return NansumBackward0.apply(a, dims=dims, keepdim=bool(keepdim), dtype=dt)


@register(out_overlap="unchecked", samples=_nan_samples)
@numpy_names
def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean of the non-NaN elements (NaN for a slice of NaNs only); PyTorch's composite
    ``nansum / count`` (DivBackward0)."""
    a = as_tensor(input)
    if dtype is not None:
        a = _cast_input(a, dtypes.to_dtype(dtype))
    if a._data.dtype.kind != "f":
        raise DtypeMismatchError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{dtypes.type_name(a._data.dtype)}"
        )
    count = count_nonzero(Tensor._make(np.logical_not(np.isnan(a._data))), dim)
    total = nansum(a, dim, keepdim)
    if keepdim and dim is not None:
        count = Tensor._make(np.reshape(count._data, total.shape))
    return total / count


# -- aminmax -----------------------------------------------------------------------------------

AminmaxResult = namedtuple("AminmaxResult", ["min", "max"])


class AminmaxBackward0(Function):
    """(min, max) together; each gradient split evenly between ties, as amin/amax."""

    name = "AminmaxBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...], keepdim: bool) -> Any:
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(a)
        ctx.save_result()
        x = a._data
        return (
            np.asarray(x.min(axis=dims, keepdims=keepdim)),
            np.asarray(x.max(axis=dims, keepdims=keepdim)),
        )

    @staticmethod
    def backward(ctx: Any, g_min: Tensor, g_max: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        shape, dims, keepdim = a._data.shape, ctx.dims, ctx.keepdim
        out = ctx.results
        dt = g_min._data.dtype
        total = None
        for g, value in ((g_min, out[0]), (g_max, out[1])):
            mask = a._data == _restore_np(value._data, shape, dims, keepdim)
            count = mask.sum(axis=dims, keepdims=True)
            part = (_restore(g, shape, dims, keepdim) / _const(count, dt)) * _const(mask, dt)
            total = part if total is None else total + part
        assert total is not None
        return total


@register(
    complex_inputs="\"aminmax_cpu\" not implemented for '{type}'",
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3), note="all"),
        sample(S.rand(rng, 2, 3), dim=1, note="dim"),
        sample(S.rand(rng, 2, 3), dim=0, keepdim=True, note="dim keepdim"),
        sample(S.rand(rng), note="0-d"),
        sample(np.array([[1.0, 3.0, 3.0], [1.0, 2.0, 0.5]]), note="ties", gradcheck=False),
        sample(Const(np.array([3, -1, 7])), note="int64"),
    ],
    results=2,
    out_dtype="exact",
)
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """The smallest and the largest element (over one ``dim``), as ``(min, max)``."""
    a = as_tensor(input)
    if dim is None:
        if a._data.size == 0:
            raise BadArgumentsError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation "
                "has no identity."
            )
        dims = tuple(range(a.ndim))
        keepdim_ = bool(keepdim)
    else:
        d = normalize_dim(dim, a.ndim)
        if a.ndim and a._data.shape[d] == 0:  # PyTorch's wording differs from the others'
            raise IndexOutOfRangeError(
                f"aminmax: Expected reduction dim {d} to have non-zero size."
            )
        dims = (d,) if a.ndim else ()
        keepdim_ = bool(keepdim)
    lo, hi = AminmaxBackward0.apply(a, dims=dims, keepdim=keepdim_)
    return AminmaxResult(lo, hi)


# -- std_mean, var_mean ------------------------------------------------------------------------

StdMeanResult = namedtuple("StdMeanResult", ["std", "mean"])


class VarMeanBackward0(Function):
    """(var, mean) together: one node for both, as PyTorch records it."""

    name = "VarMeanBackward0"
    jvp = FROM_BACKWARD
    take_sqrt = False

    @classmethod
    def forward(  # type: ignore[override]
        cls,
        ctx: Any,
        a: Tensor,
        *,
        dims: tuple[int, ...] | None,
        correction: float,
        keepdim: bool,
    ) -> Any:
        ctx.dims, ctx.correction, ctx.keepdim = dims, correction, keepdim
        ctx.materialize_grads = False  # an output no gradient reached adds nothing (torch)
        ctx.save_for_backward(a)
        ctx.save_result()
        op = "std_mean" if cls.take_sqrt else "var_mean"
        spread = _var_array(a._data, dims, correction, keepdim, op)
        if cls.take_sqrt:
            spread = np.sqrt(spread)
        return np.asarray(spread, a._data.dtype), _mean_array(a._data, dims, keepdim)

    @classmethod
    def backward(cls, ctx: Any, g_spread: Tensor | None, g_mean: Tensor | None) -> Tensor | None:  # type: ignore[override]
        (a,) = ctx.saved_tensors
        dims, keepdim = ctx.dims, ctx.keepdim
        grad = None
        if g_spread is not None:
            spread = ctx.results[0]
            if cls.take_sqrt:
                g_spread = where(Tensor._make(spread._data == 0), 0.0, g_spread / (spread * 2))
            grad = _var_grad(g_spread, a, dims, ctx.correction, keepdim)
        if g_mean is None:
            return grad
        all_dims = tuple(range(a.ndim)) if dims is None else dims
        n = _count(a._data.shape, all_dims)
        mean_grad = expand_back(g_mean, a._data.shape, all_dims, keepdim)
        mean_grad = mean_grad / n if n else mean_grad
        return mean_grad if grad is None else grad + mean_grad


class StdMeanBackward0(VarMeanBackward0):
    name = "StdMeanBackward0"
    take_sqrt = True


def _spread_mean_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), note="all"),
        sample(S.rand(rng, 2, 3), 1, note="dim"),
        sample(S.rand(rng, 2, 3, 4), (0, 2), keepdim=True, note="dims keepdim"),
        sample(S.rand(rng, 2, 3), dim=1, correction=0, note="correction 0"),
        sample(S.rand(rng, 2, 3), 0, False, note="unbiased False"),
    ]


@register(samples=_spread_mean_samples, method=False, results=2)
@numpy_names
def var_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Any:
    """``(var, mean)`` over all elements or ``dim`` in one pass."""
    a, dims, corr = _var_args("var_mean", input, dim, unbiased, correction)
    spread, m = VarMeanBackward0.apply(a, dims=dims, correction=corr, keepdim=bool(keepdim))
    return spread, m


@register(samples=_spread_mean_samples, method=False, results=2)
@numpy_names
def std_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Any:
    """``(std, mean)`` over all elements or ``dim`` in one pass."""
    a, dims, corr = _var_args("std_mean", input, dim, unbiased, correction)
    spread, m = StdMeanBackward0.apply(a, dims=dims, correction=corr, keepdim=bool(keepdim))
    return spread, m
