"""Scatter and gather family: scatter, scatter_add, scatter_reduce, index_add,
index_copy, index_fill, masked_scatter, masked_select, take, take_along_dim
and nonzero.

Gradients follow PyTorch's derivatives.yaml, in engine ops so that
``create_graph`` works: what a scatter overwrites gets no gradient
(``g.scatter(dim, index, 0)``), what it reads gets ``g.gather(dim, index)``;
``scatter_reduce`` uses PyTorch's rules per reduction (amax/amin split ties
evenly; prod handles zeros exactly). ``scatter(..., reduce=)`` has no
derivative in PyTorch: it records ``NotImplemented`` and its backward raises.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes
from ..complex_guard import ComplexKernelError
from ..dual import FROM_BACKWARD, LINEAR
from ..errors import BadArgumentsError, DtypeMismatchError, IndexOutOfRangeError, ShapeMismatchError
from ..function import Function
from ..primitives import sum_to
from ..registry import Const, Results, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, broadcast_message, broadcast_shape, normalize_dim
from .arithmetic import where
from .indexing import gather, index_select, masked_fill
from .rearrange import Put, gather_flat
from .reduction import sum as sum_
from .shape import expand, reshape

_FULL = slice(None)
_SCALAR = {
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "bool": "Bool",
}


def _torch_type(dt: np.dtype) -> str:
    return _SCALAR.get(dtypes.torch_name(dt), str(dt))


# -- scatter's index checks and numpy kernels ------------------------------------------------


def _index(index: Any, op: str) -> np.ndarray:
    t = as_tensor(index)
    if t._data.dtype.kind not in "iu" or t._data.dtype.itemsize < 4:
        raise DtypeMismatchError(f"{op}(): Expected dtype int32/int64 for index")
    return t._data.astype(np.int64, copy=False)


def _check_scatter(
    x: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray | None, op: str
) -> None:
    """PyTorch's scatter_gather_dtype_check and shape checks, with its messages."""
    if index.size == 0:
        return
    if index.ndim != max(x.ndim, 1) and x.ndim:
        raise ShapeMismatchError(
            "Index tensor must have the same number of dimensions as self tensor"
        )
    if src is not None and src.ndim != index.ndim and src.ndim:
        raise ShapeMismatchError(
            "Index tensor must have the same number of dimensions as src tensor"
        )
    xs, ss = x.shape or (1,), (src.shape or (1,)) if src is not None else None
    for k, n in enumerate(index.shape):
        if (k != dim and n > xs[k]) or (ss is not None and n > ss[k]):
            tail = (
                f" and to be no larger size than src {list(src.shape)}" if src is not None else ""
            )
            raise ShapeMismatchError(
                f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} "
                f"apart from dimension {dim}{tail}"
            )
    bad = (index < 0) | (index >= xs[dim])
    if bad.any():
        raise IndexOutOfRangeError(
            f"index {int(index[bad].flat[0])} is out of bounds for dimension {dim} with size {xs[dim]}"
        )


def scatter_key(index: np.ndarray, dim: int) -> tuple[np.ndarray, ...]:
    """The NumPy key of the positions ``index`` names along ``dim`` (others: their own)."""
    nd = index.ndim
    return tuple(
        index
        if k == dim
        else np.broadcast_to(np.arange(n).reshape((-1,) + (1,) * (nd - k - 1)), index.shape)
        for k, n in enumerate(index.shape)
    )


def _window(src: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The leading ``shape`` block of ``src`` (a scatter reads only that much)."""
    return src[tuple(slice(0, n) for n in shape)] if src.ndim else src.reshape(shape)


def _scattered(x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
    """Where a scatter writes: a bool mask of ``x``'s shape."""
    mask = np.zeros(x.shape or (1,), bool)
    mask[scatter_key(index.reshape(index.shape or (1,)), dim)] = True
    return mask.reshape(x.shape)


def _as1(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


# -- scatter -------------------------------------------------------------------------------


class ScatterBackward0(Function):
    """``scatter(dim, index, src)``: src's values overwrite input at the index."""

    name = "ScatterBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, src: Tensor, *, dim: int, index: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(index)
        ctx.dim, ctx.src_shape = dim, src._data.shape
        out = _as1(a._data).copy()
        idx = _as1(index)
        out[scatter_key(idx, dim)] = _window(_as1(src._data), idx.shape)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (index,) = ctx.saved_tensors
        need_a, need_src = ctx.needs_input_grad
        ga = _scatter_value(g, ctx.dim, index, 0.0) if need_a else None
        gs = (
            _grad_src(g, ctx.dim, index, ctx.src_shape, ScatterBackward0.name) if need_src else None
        )
        return ga, gs


def _grad_src(
    g: Tensor, dim: int, index: np.ndarray, src_shape: tuple[int, ...], node: str
) -> Tensor:
    """``g.gather(dim, index)``: PyTorch's gradient of src, the index's shape, which its
    engine refuses where src is larger (it cannot be reduced to src's shape)."""
    return fit_src(gather(g, dim, Tensor._make(index)), src_shape, node)


def fit_src(gs: Tensor, src_shape: tuple[int, ...], node: str) -> Tensor:
    """PyTorch's ``validate_outputs`` on src's gradient (input 1 of the scatters): a
    shape src expands to is summed back to it; any other is refused."""
    shape = gs._data.shape
    if shape == src_shape:
        return gs
    try:
        expandable = np.broadcast_shapes(src_shape, shape) == shape
    except ValueError:
        expandable = False
    if expandable:
        return sum_to(gs, src_shape)
    raise ShapeMismatchError(
        f"Function {node} returned an invalid gradient at index 1 - got {list(shape)} but "
        f"expected shape compatible with {list(src_shape)}"
    )


class ScatterBackward1(Function):
    """``scatter(dim, index, value)`` with a number."""

    name = "ScatterBackward1"
    jvp = LINEAR
    jvp_params = {"value": 0}

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, index: np.ndarray, value: Any) -> np.ndarray:
        ctx.dim, ctx.index = dim, index
        out = _as1(a._data).copy()
        out[scatter_key(_as1(index), dim)] = value
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _scatter_value(g, ctx.dim, ctx.index, 0.0)


def _scatter_value(g: Tensor, dim: int, index: np.ndarray, value: float) -> Tensor:
    return ScatterBackward1.apply(g, dim=dim, index=index, value=value)


class ScatterReduceNotImplemented(Function):
    """``scatter(..., reduce=)``: PyTorch has no derivative and records this node."""

    name = "NotImplemented"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, src: Any, *, dim: int, index: np.ndarray, reduce: str
    ) -> np.ndarray:
        out = _as1(a._data).copy()
        idx = _as1(index)
        values = src._data if isinstance(src, Tensor) else np.asarray(src, out.dtype)
        values = (
            np.broadcast_to(values, idx.shape) if values.ndim == 0 else _window(values, idx.shape)
        )
        with np.errstate(all="ignore"):
            (np.add if reduce == "add" else np.multiply).at(out, scatter_key(idx, dim), values)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        raise BadArgumentsError("derivative for aten::scatter is not implemented")


def _scatter_samples(rng: np.random.Generator) -> list[Any]:
    idx = Const(np.array([[0, 1, 2, 0], [1, 2, 0, 1]]))
    return [
        sample(S.rand(rng, 3, 4), 0, idx, S.rand(rng, 2, 4), note="src"),
        sample(S.rand(rng, 3, 4), 1, Const(np.array([[3, 0], [1, 2], [0, 3]])), S.rand(rng, 3, 2)),
        sample(S.rand(rng, 3, 4), 0, idx, Const(S.rand(rng, 3, 5)), note="src larger than index"),
        sample(S.rand(rng, 3, 4), 0, idx, 1.5, note="value"),
        sample(S.rand(rng, 3, 4), -1, Const(np.zeros((3, 0), np.int64)), 2.0, note="empty index"),
        sample(
            Const(S.rand(rng, 3, 4)),
            0,
            idx,
            Const(S.rand(rng, 2, 4)),
            reduce="add",
            note="reduce add",
        ),
        sample(
            Const(S.rand(rng, 3, 4)), 0, idx, 2.0, reduce="multiply", note="value, reduce multiply"
        ),
    ]


@register(samples=_scatter_samples, inplace=True)
def scatter(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Any = None,
    *,
    value: Any = None,
    reduce: str | None = None,
) -> Tensor:
    """``input`` with ``src`` (a tensor or a number) written at ``index`` along ``dim``."""
    a = as_tensor(input)
    if src is None:
        src = value
    d = normalize_dim(dim, a.ndim)
    idx = _index(index, "scatter")
    is_tensor = isinstance(src, Tensor)
    if is_tensor and src._data.dtype != a._data.dtype:
        raise DtypeMismatchError("scatter(): Expected self.dtype to be equal to src.dtype")
    if not is_tensor and not isinstance(src, (int, float, bool, np.number)):
        raise BadArgumentsError("scatter(): src must be a Tensor or a number")
    _check_scatter(a._data, d, idx, src._data if is_tensor else None, "scatter")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise BadArgumentsError("reduce argument must be either add or multiply.")
        if is_tensor:
            warnings.warn(
                "The reduce argument of torch.scatter with Tensor src is deprecated and will be "
                "removed in a future PyTorch release. Use torch.scatter_reduce instead for more "
                "reduction options.",
                UserWarning,
                stacklevel=2,
            )
        return ScatterReduceNotImplemented.apply(a, src, dim=d, index=idx, reduce=reduce)
    if is_tensor:
        return ScatterBackward0.apply(a, src, dim=d, index=idx)
    return ScatterBackward1.apply(a, dim=d, index=idx, value=src)


class ScatterAdd(Function):
    """``scatter_add``: src is added at the index (repeats accumulate)."""

    name = "ScatterAddBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, src: Tensor, *, dim: int, index: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(index)
        ctx.dim, ctx.src_shape = dim, src._data.shape
        out = _as1(a._data).copy()
        idx = _as1(index)
        with np.errstate(all="ignore"):
            np.add.at(out, scatter_key(idx, dim), _window(_as1(src._data), idx.shape))
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (index,) = ctx.saved_tensors
        need_a, need_src = ctx.needs_input_grad
        gs = _grad_src(g, ctx.dim, index, ctx.src_shape, ScatterAdd.name) if need_src else None
        return (g if need_a else None), gs


def _scatter_add_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(
            S.rand(rng, 3, 4), 0, Const(np.array([[0, 1, 2, 0], [0, 1, 0, 1]])), S.rand(rng, 2, 4)
        ),
        sample(
            S.rand(rng, 3, 4),
            1,
            Const(np.array([[3, 3], [1, 2], [0, 0]])),
            S.rand(rng, 3, 2),
            note="repeats",
        ),
        sample(
            S.rand(rng, 3, 4),
            0,
            Const(np.array([[0, 1]])),
            Const(S.rand(rng, 2, 3)),
            note="src larger",
        ),
    ]


def _scatter_check(
    a: Tensor, dim: int, index: Any, src: Any, op: str
) -> tuple[int, np.ndarray, Tensor]:
    d = normalize_dim(dim, a.ndim)
    idx = _index(index, op)
    s = as_tensor(src)
    if s._data.dtype != a._data.dtype:
        raise DtypeMismatchError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    _check_scatter(a._data, d, idx, s._data, op)
    return d, idx, s


@register(samples=_scatter_add_samples, inplace=True)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src`` added at ``index`` along ``dim`` (repeated positions accumulate)."""
    a = as_tensor(input)
    d, idx, s = _scatter_check(a, dim, index, src, "scatter_add")
    return ScatterAdd.apply(a, s, dim=d, index=idx)


# -- scatter_reduce ------------------------------------------------------------------------

_REDUCE = {
    "sum": np.add,
    "prod": np.multiply,
    "mean": np.add,
    "amax": np.maximum,
    "amin": np.minimum,
}
_IDENTITY = {"sum": 0.0, "prod": 1.0, "mean": 0.0, "amax": -np.inf, "amin": np.inf}


def _identity(reduce: str, dtype: np.dtype) -> Any:
    """The value a reduction starts from where ``include_self=False`` (torch's: the
    dtype's lowest for amax, its highest for amin, 1 for prod, 0 for sum and mean)."""
    if dtype.kind == "f":
        return _IDENTITY[reduce]
    if dtype.kind == "b":
        return reduce in ("prod", "amin")
    if reduce == "amax":
        return np.iinfo(dtype).min
    if reduce == "amin":
        return np.iinfo(dtype).max
    return 1 if reduce == "prod" else 0


def _reduce_np(
    x: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray, reduce: str, include_self: bool
) -> np.ndarray:
    out = _as1(x).copy()
    idx = _as1(index)
    key = scatter_key(idx, dim)
    values = _window(_as1(src), idx.shape)
    if not include_self:
        out[key] = _identity(reduce, out.dtype)
    with np.errstate(all="ignore"):
        _REDUCE[reduce].at(out, key, values)
    if reduce == "mean":
        count = np.full(out.shape, 1 if include_self else 0, np.int64)
        np.add.at(count, key, 1)
        count = np.maximum(count, 1)
        with np.errstate(all="ignore"):
            out = out / count if out.dtype.kind in "fc" else out // count
    return out.astype(x.dtype, copy=False).reshape(x.shape)


def _take(x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
    """numpy's ``gather``: ``x`` at ``index`` along ``dim``, where ``index`` may be smaller
    than ``x`` in the other dims (numpy's ``take_along_axis`` would broadcast instead)."""
    a, idx = _as1(x), _as1(index)
    window = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(idx.shape))
    return np.take_along_axis(a[window], idx, dim).reshape(index.shape)


class ScatterReduceBackward0(Function):
    name = "ScatterReduceBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(
        ctx: Any,
        a: Tensor,
        src: Tensor,
        *,
        dim: int,
        index: np.ndarray,
        reduce: str,
        include_self: bool,
    ) -> np.ndarray:
        ctx.save_for_backward(a, src, index)
        ctx.save_result()
        ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
        ctx.src_shape = src._data.shape
        return _reduce_np(a._data, dim, index, src._data, reduce, include_self)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        a, src, index = ctx.saved_tensors
        dim, reduce, include_self = ctx.dim, ctx.reduce, ctx.include_self
        if src._data.shape != index.shape and reduce in ("prod", "amax", "amin"):
            # PyTorch's formula compares src with values gathered at the index: their
            # shapes must broadcast (a src larger than the index fails there)
            try:
                np.broadcast_shapes(src._data.shape, index.shape)
            except ValueError:
                raise ShapeMismatchError(
                    broadcast_message((src._data.shape, index.shape))
                ) from None
        if src._data.shape != index.shape:  # only the window ``index`` covers takes part
            src = src[tuple(slice(0, n) for n in index.shape)]
        idx_t = Tensor._make(index)
        result = ctx.result
        const = Tensor._make
        if reduce == "sum":
            ga, gs = g, gather(g, dim, idx_t)
        elif reduce == "mean":
            n = np.full(a._data.shape, 1.0 if include_self else 0.0, g.dtype)
            n = _reduce_np(n, dim, index, np.ones(src._data.shape, g.dtype), "sum", True)
            n[n == 0] = 1
            ga = g / const(n)
            gs = gather(g, dim, idx_t) / const(_take(n, index, dim))
        elif reduce == "prod":
            masked_self = where(const(a._data == 0), 1.0, a)
            masked_self_result = scatter_reduce(
                masked_self, dim, idx_t, src, "prod", include_self=include_self
            )
            ga = g * masked_self_result / masked_self
            src_zero = src._data == 0
            zeros_at = _reduce_np(
                np.zeros(a._data.shape), dim, index, src_zero.astype(float), "sum", True
            )
            num_zeros = _take(zeros_at, index, dim)
            single = src_zero & (num_zeros == 1)
            masked_src = where(const(single), 1.0, src)
            masked_src_result = scatter_reduce(
                a, dim, idx_t, masked_src, "prod", include_self=include_self
            )
            gs = where(
                const(single),
                gather(g * masked_src_result, dim, idx_t),
                gather(g * result, dim, idx_t) / where(const(src_zero), 1.0, src),
            )
        else:  # amax, amin: ties share the gradient evenly
            value = _take(result._data, index, dim)
            self_is = a._data == result._data
            src_is = src._data == value
            n = _reduce_np(self_is.astype(g.dtype), dim, index, src_is.astype(g.dtype), "sum", True)
            distributed = g / const(n)
            ga = where(const(self_is), distributed, 0.0)
            gs = where(const(src_is), gather(distributed, dim, idx_t), 0.0)
        if not include_self:
            ga = _scatter_value(ga, dim, index, 0.0)
        if ctx.needs_input_grad[1]:
            gs = fit_src(gs, ctx.src_shape, ScatterReduceBackward0.name)
        return ga, gs


def _scatter_reduce_samples(rng: np.random.Generator) -> list[Any]:
    idx = Const(np.array([[0, 1, 2, 0], [0, 2, 2, 1], [1, 1, 0, 0]]))
    out: list[Any] = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            out.append(
                sample(
                    S.away_from_zero(rng, 3, 4),
                    0,
                    idx,
                    S.away_from_zero(rng, 3, 4),
                    reduce,
                    include_self=include_self,
                    note=f"{reduce} include_self={include_self}",
                )
            )
    zeros = S.away_from_zero(rng, 3, 4)
    zeros[0, 0] = zeros[1, 1] = zeros[2, 1] = 0.0
    base = S.away_from_zero(rng, 3, 4)
    base[0, 3] = 0.0
    out.append(sample(base, 0, idx, zeros, "prod", note="prod with zeros"))
    ties = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 1.0, 2.0], [1.0, 0.0, 3.0, 2.0]])
    out.append(sample(ties, 0, idx, ties.copy(), "amax", note="amax ties split", gradcheck=False))
    out.append(
        sample(
            ties,
            1,
            Const(np.array([[0, 0], [2, 2], [1, 1]])),
            ties[:, :2].copy(),
            "amin",
            include_self=False,
            note="amin ties",
            gradcheck=False,
        )
    )
    return out


@register(samples=_scatter_reduce_samples, inplace=True)
def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """``src`` reduced into ``input`` at ``index`` along ``dim`` (sum, prod, mean, amax, amin)."""
    a = as_tensor(input)
    if reduce not in _REDUCE:
        raise BadArgumentsError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    if reduce in ("amax", "amin") and a._data.dtype.kind == "c":  # numpy would order them
        raise ComplexKernelError(
            f'"scatter_gather_tensor_cpu_reduce_{reduce}" not implemented for '
            f"'{dtypes.type_name(a._data.dtype)}'"
        )
    d, idx, s = _scatter_check(a, dim, index, src, "scatter_reduce")
    return ScatterReduceBackward0.apply(
        a, s, dim=d, index=idx, reduce=reduce, include_self=bool(include_self)
    )


# -- index_add, index_copy, index_fill -----------------------------------------------------


def _vector_index(index: Any, op: str, x: np.ndarray, dim: int) -> np.ndarray:
    """A vector index with each op's own dtype rule and bounds (only index_fill wraps
    negative indices, as in PyTorch)."""
    t = as_tensor(index)
    dt = t._data.dtype
    if op == "index_fill" and dt != dtypes.int64:
        raise DtypeMismatchError("index_fill_(): Expected dtype int64 for index.")
    if op == "index_copy" and dt != dtypes.int64:
        raise DtypeMismatchError(
            f"index_copy_(): Expected a long tensor for index, but got {_torch_type(dt)}"
        )
    if dt.kind not in "iu":
        raise DtypeMismatchError(f"{op}_(): Expected dtype int32/int64 for index")
    if t._data.ndim > 1:
        raise BadArgumentsError(f"{op}_(): Index is supposed to be a vector")
    idx = t._data.reshape(-1).astype(np.int64)
    size = x.shape[dim] if x.ndim else 1
    low = -size if op == "index_fill" else 0
    bad = (idx < low) | (idx >= size)
    if bad.any():
        prefix = "index_copy_(): " if op == "index_copy" else ""
        raise IndexOutOfRangeError(
            f"{prefix}index {int(idx[bad][0])} is out of bounds for dimension {dim} with size {size}"
        )
    return idx % max(size, 1)


def _along(dim: int, index: np.ndarray) -> tuple[Any, ...]:
    return (_FULL,) * dim + (index,)


def _check_source(x: np.ndarray, dim: int, index: np.ndarray, source: np.ndarray, op: str) -> None:
    """The source must be ``x``'s shape with ``dim`` holding one slice per index."""
    xs = x.shape or (1,)
    want = xs[:dim] + (index.size,) + xs[dim + 1 :]
    if source.shape == want or (x.ndim == 0 and source.size == index.size):
        return
    if source.ndim > dim and source.shape[dim] != index.size:
        raise ShapeMismatchError(
            f"{op}_(): Number of indices ({index.size}) should be equal to source.size(dim): "
            f"({source.shape[dim]}), for dim: {dim}"
        )
    raise ShapeMismatchError(
        "source tensor shape must match self tensor shape, excluding the specified dimension. "
        f"Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}"
    )


class IndexAdd(Function):
    name = "IndexAddBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, source: Tensor, *, dim: int, index: np.ndarray, alpha: Any
    ) -> np.ndarray:
        ctx.save_for_backward(index)
        ctx.dim, ctx.alpha, ctx.src_shape = dim, alpha, source._data.shape
        out = _as1(a._data).copy()
        values = source._data.reshape(out.shape[:dim] + (index.size,) + out.shape[dim + 1 :])
        with np.errstate(all="ignore"):
            np.add.at(out, _along(dim, index), values * alpha if alpha != 1 else values)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (index,) = ctx.saved_tensors
        need_a, need_s = ctx.needs_input_grad
        gs = None
        if need_s:
            gs = reshape(index_select(_at_least_1d(g), ctx.dim, Tensor._make(index)), ctx.src_shape)
            if ctx.alpha != 1:
                gs = gs * ctx.alpha
        return (g if need_a else None), gs


def _at_least_1d(g: Tensor) -> Tensor:
    return reshape(g, 1) if g.ndim == 0 else g


def _index_add_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), 0, Const(np.array([0, 2, 0])), S.rand(rng, 3, 4), note="repeats"),
        sample(
            S.rand(rng, 3, 4),
            1,
            Const(np.array([3, 1])),
            S.rand(rng, 3, 2),
            alpha=2.5,
            note="alpha",
        ),
        sample(S.rand(rng, 3, 4), -1, Const(np.array([0])), S.rand(rng, 3, 1), note="negative dim"),
    ]


@register(samples=_index_add_samples, inplace=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """``input`` with ``alpha * source`` slices added at ``index`` along ``dim``."""
    a, s = as_tensor(input), as_tensor(source)
    d = normalize_dim(dim, a.ndim)
    idx = _vector_index(index, "index_add", a._data, d)
    _check_source(a._data, d, idx, s._data, "index_add")
    if s._data.dtype != a._data.dtype:
        raise DtypeMismatchError("index_add_(): self and source must have the same scalar type")
    return IndexAdd.apply(a, s, dim=d, index=idx, alpha=alpha)


class IndexCopyBackward0(Function):
    name = "IndexCopyBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, source: Tensor, *, dim: int, index: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(index)
        ctx.dim, ctx.src_shape = dim, source._data.shape
        out = _as1(a._data).copy()
        out[_along(dim, index)] = source._data.reshape(
            out.shape[:dim] + (index.size,) + out.shape[dim + 1 :]
        )
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (index,) = ctx.saved_tensors
        need_a, need_s = ctx.needs_input_grad
        ga = index_fill(g, ctx.dim, Tensor._make(index), 0.0) if need_a else None
        gs = (
            reshape(index_select(_at_least_1d(g), ctx.dim, Tensor._make(index)), ctx.src_shape)
            if need_s
            else None
        )
        return ga, gs


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4), 0, Const(np.array([2, 0])), S.rand(rng, 2, 4)),
        sample(S.rand(rng, 3, 4), 1, Const(np.array([3])), S.rand(rng, 3, 1), note="dim 1"),
    ],
    inplace=True,
)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``input`` with the slices of ``source`` copied to positions ``index`` along ``dim``."""
    a, s = as_tensor(input), as_tensor(source)
    d = normalize_dim(dim, a.ndim)
    idx = _vector_index(index, "index_copy", a._data, d)
    _check_source(a._data, d, idx, s._data, "index_copy")
    if s._data.dtype != a._data.dtype:
        raise DtypeMismatchError("index_copy_(): self and source expected to have the same dtype")
    return IndexCopyBackward0.apply(a, s, dim=d, index=idx)


class IndexFillBackward0(Function):
    name = "IndexFillBackward0"
    jvp = LINEAR
    jvp_params = {"value": 0}

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, index: np.ndarray, value: Any) -> np.ndarray:
        ctx.dim, ctx.index = dim, index
        out = _as1(a._data).copy()
        out[_along(dim, index)] = value
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return IndexFillBackward0.apply(g, dim=ctx.dim, index=ctx.index, value=0.0)


class IndexFillBackward1(Function):
    """``index_fill`` with a 0-d tensor value, which gets the filled positions' gradient."""

    name = "IndexFillBackward1"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, value: Tensor, *, dim: int, index: np.ndarray) -> np.ndarray:
        ctx.dim, ctx.index = dim, index
        out = _as1(a._data).copy()
        out[_along(dim, index)] = value._data
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_a, need_v = ctx.needs_input_grad
        ga = (
            IndexFillBackward0.apply(g, dim=ctx.dim, index=ctx.index, value=0.0) if need_a else None
        )
        unique = Tensor._make(np.unique(ctx.index))
        gv = sum_(index_select(_at_least_1d(g), ctx.dim, unique)) if need_v else None
        return ga, gv


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4), 0, Const(np.array([2, 0])), 1.5),
        sample(S.rand(rng, 3, 4), -1, Const(np.array([3, -1])), -1.0, note="negative, repeats"),
        sample(
            S.rand(rng, 3, 4), 1, Const(np.array([0, 2, 2])), S.rand(rng), note="0-d tensor value"
        ),
    ],
    inplace=True,
)
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``input`` with the slices at ``index`` along ``dim`` set to ``value``."""
    a = as_tensor(input)
    d = normalize_dim(dim, a.ndim)
    idx = _vector_index(index, "index_fill", a._data, d)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise BadArgumentsError(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
        return IndexFillBackward1.apply(a, value, dim=d, index=idx)
    return IndexFillBackward0.apply(a, dim=d, index=idx, value=value)


# -- masked_scatter, masked_select, take, take_along_dim, nonzero --------------------------

MaskedSelectBackward0 = gather_flat("MaskedSelectBackward0", saves=True)
TakeBackward0 = gather_flat("TakeBackward0", saves=True)


def _bool_mask(mask: Any, op: str) -> Tensor:
    m = as_tensor(mask)
    if m._data.dtype != dtypes.bool_:
        if op == "masked_select":
            raise DtypeMismatchError("masked_select: expected BoolTensor for mask")
        raise DtypeMismatchError(
            f"{op}_ only supports boolean masks, but got mask with dtype {_torch_type(m._data.dtype)}"
        )
    return m


def _broadcast(a: Tensor, m: Tensor) -> tuple[Tensor, np.ndarray]:
    shape = broadcast_shape(a._data.shape, m._data.shape)
    if a._data.shape != shape:
        a = expand(a, shape)
    return a, np.broadcast_to(m._data, shape)


class MaskedScatterBackward0(Function):
    name = "MaskedScatterBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, source: Tensor, *, mask: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(mask)
        ctx.src_shape = source._data.shape
        out = a._data.copy()  # row-major: its flat view writes through (0-d too)
        out.reshape(-1)[mask.reshape(-1)] = source._data.reshape(-1)[: int(mask.sum())]
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        (mask,) = ctx.saved_tensors
        need_a, need_s = ctx.needs_input_grad
        m = Tensor._make(mask)
        ga = masked_fill(g, m, 0.0) if need_a else None
        gs = None
        if need_s:
            picked = MaskedSelectBackward0.apply(g, index=np.flatnonzero(mask))
            n = int(np.prod(ctx.src_shape))
            gs = reshape(
                Put.apply(picked, index=np.arange(picked._data.size), shape=(n,)), ctx.src_shape
            )
        return ga, gs


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4), Const(rng.random((3, 4)) > 0.5), S.rand(rng, 3, 4)),
        sample(
            S.rand(rng, 3, 4),
            Const(np.array([True, False, True, True])),
            S.rand(rng, 13),
            note="mask broadcasts, source longer",
        ),
        sample(
            S.rand(rng, 2, 3),
            Const(np.zeros((2, 3), bool)),
            S.rand(rng, 2),
            note="nothing selected",
        ),
    ],
    inplace=True,
)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` with the elements of ``source`` written, in order, where ``mask`` is true."""
    a, s = as_tensor(input), as_tensor(source)
    m = _bool_mask(mask, "masked_scatter")
    a, mk = _broadcast(a, m)
    if s._data.size < int(mk.sum()):
        raise ShapeMismatchError("Number of elements of source < number of ones in mask")
    if s._data.dtype != a._data.dtype:
        raise DtypeMismatchError("masked_scatter_: expected self and source to have same dtypes")
    return MaskedScatterBackward0.apply(a, s, mask=np.array(mk, order="C"))  # 0-d stays 0-d


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4), Const(rng.random((3, 4)) > 0.5)),
        sample(
            S.rand(rng, 3, 1), Const(np.array([True, False, True, True])), note="both broadcast"
        ),
        sample(S.rand(rng), Const(np.array(True)), note="0-d"),
        sample(S.rand(rng, 2, 3), Const(np.zeros((2, 3), bool)), note="nothing selected"),
    ],
    out_overlap="none",
    out_dtype="masked_select(): self and result must have the same scalar type",
)
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where ``mask`` is true, as a vector (shapes broadcast)."""
    a = as_tensor(input)
    m = _bool_mask(mask, "masked_select")
    a, mk = _broadcast(a, m)
    return MaskedSelectBackward0.apply(a, index=np.flatnonzero(mk))


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4), Const(np.array([0, 5, 11, 5]))),
        sample(S.rand(rng, 3, 4), Const(np.array([[-1, 0], [2, -12]])), note="negative, 2-d index"),
        sample(S.rand(rng), Const(np.array(0)), note="0-d"),
    ],
    out_overlap="none",
    out_dtype=(
        "take(): self and out expected to have the same dtype, but got self.dtype = {input} "
        "and out.dtype = {out}"
    ),
)
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened ``input`` at ``index`` (in the index's shape)."""
    a, i = as_tensor(input), as_tensor(index)
    if i._data.dtype != dtypes.int64:
        raise DtypeMismatchError(
            f"take(): Expected a long tensor for index, but got {_torch_type(i._data.dtype)}"
        )
    n = a._data.size
    bad = (i._data < -n) | (i._data >= n)
    if bad.any():
        raise IndexOutOfRangeError(
            f"out of range: tried to access index {int(i._data[bad].flat[0])} on a tensor of {n} elements."
        )
    return TakeBackward0.apply(a, index=i._data % max(n, 1))


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4), Const(np.array([[0, 2, 1, 0], [2, 2, 0, 1]])), 0),
        sample(S.rand(rng, 3, 4), Const(np.array([[3], [0], [1]])), dim=1, note="dim 1"),
        sample(S.rand(rng, 3, 1), Const(np.array([[0, 0, 0]])), 0, note="broadcasts"),
        sample(S.rand(rng, 3, 4), Const(np.array([11, 0, 4])), note="flattened"),
    ]
)
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` after broadcasting ``input`` and ``indices`` except along ``dim``."""

    a, i = as_tensor(input), as_tensor(indices)
    if i._data.dtype != np.int64:
        raise DtypeMismatchError(
            "torch.take_along_dim(): dtype of indices should be Long but got "
            + _torch_type(i._data.dtype)
        )
    if dim is None:
        return gather(reshape(a, -1), 0, reshape(i, -1))
    d = normalize_dim(dim, a.ndim)
    if a.ndim and a._data.shape[d]:  # torch wraps any index along dim (a remainder)
        i = Tensor._make(i._data % a._data.shape[d])
    if a.ndim != i.ndim:
        raise ShapeMismatchError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, "
            f"but got {a.ndim} dimensions for input, and {i.ndim} dimensions for indices"
        )
    sizes = list(a._data.shape)
    sizes[d] = i._data.shape[d]
    shape = broadcast_shape(tuple(sizes), i._data.shape)
    if i._data.shape != shape:
        i = Tensor._make(np.ascontiguousarray(np.broadcast_to(i._data, shape)))
    sizes = list(shape)
    sizes[d] = a._data.shape[d]
    if a._data.shape != tuple(sizes):
        a = expand(a, tuple(sizes))
    return gather(a, d, i)


@register(
    samples=lambda rng: [
        sample(Const(np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]))),
        sample(Const(np.array([[0.0, 1.0], [2.0, 0.0]])), as_tuple=True, note="as_tuple"),
        sample(Const(np.array([True, False, True])), note="bool"),
        sample(Const(np.array(2.0)), note="0-d"),
    ],
    differentiable=False,
    results=Results("flag_ndim", arg="as_tuple"),
)
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of the non-zero elements: an (n, ndim) int64 tensor, or one vector per dim."""
    a = as_tensor(input)
    if as_tuple:
        x = a._data.reshape(1) if a.ndim == 0 else a._data
        return tuple(Tensor._make(p.astype(np.int64)) for p in np.nonzero(x))
    return Tensor._make(np.argwhere(a._data).astype(np.int64))
