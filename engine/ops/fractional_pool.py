"""``fractional_max_pool2d/3d``: max pooling over pseudo-random window starts (Graham's
fractional max pooling). The starts come from ``_random_samples`` (drawn with ``rand``
as PyTorch does when not given, so a seeded run picks the same windows) by ATen's
``generate_intervals``, in the input's dtype. The backward scatters the gradient to each
window's argmax with the differentiable scatter/gather pair of the 3-d max pools, so a
``create_graph`` gradient has PyTorch's ``FractionalMaxPool*DBackwardBackward0``."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..errors import ShapeMismatchError
from ..registry import Const, Results, register, sample
from ..tensor import Tensor
from ._util import as_tensor
from .conv import ArgumentTypeError, ArgumentValueError, DimIndexError, refuse_dtype, sizes
from .pooling import gather_planes
from .pooling3d import _max_fn, _MaxPool
from .random_ops import rand


def _intervals(u: np.ndarray, size: int, out: int, pool: int, dt: np.dtype) -> np.ndarray:
    """ATen's ``generate_intervals`` for each sample ``u`` (planes,) -> (planes, out)."""
    u = u.astype(dt)
    seq = np.zeros((u.shape[0], out), dtype=np.int64)
    if out > 1:
        alpha = dt.type(size - pool) / dt.type(out - 1)
        i = np.arange(out - 1, dtype=dt)
        lead = ((i[None] + u[:, None]) * alpha).astype(np.int64)
        seq[:, :-1] = lead - (u * alpha).astype(np.int64)[:, None]
    if out > 0:
        seq[:, -1] = size - pool
    return seq


def _indices(
    x: np.ndarray, samples: np.ndarray, k: tuple[int, ...], out: tuple[int, ...]
) -> np.ndarray:
    """Flat arg-max indices (planes, *out) of each window: a value replaces the running
    max when larger or NaN (the last NaN wins), as ATen's kernel."""
    nd = len(k)
    sizes_ = x.shape[1:]
    planes = x.shape[0]
    # ATen reads samples (W, H) for 2-d and (T, H, W) for 3-d
    order = [1, 0] if nd == 2 else list(range(nd))
    starts = [_intervals(samples[:, order[d]], sizes_[d], out[d], k[d], x.dtype) for d in range(nd)]
    strides = [math.prod(sizes_[d + 1 :]) for d in range(nd)]
    flat = x.reshape(planes, math.prod(sizes_))
    best = np.full((planes, *out), -np.inf, dtype=x.dtype)
    idx = np.zeros((planes, *out), dtype=np.int64)
    if best.size == 0:
        return idx
    first = True
    for offs in itertools.product(*(range(v) for v in k)):
        lin = np.zeros((planes, *out), dtype=np.int64)
        for d in range(nd):
            shape = [planes] + [1] * nd
            shape[d + 1] = out[d]
            lin = lin + (starts[d] + offs[d]).reshape(shape) * strides[d]
        vals = np.take_along_axis(flat, lin.reshape(planes, -1), 1).reshape(lin.shape)
        take = (vals > best) | np.isnan(vals)
        if first:  # ATen starts at the window origin with -inf
            take = np.ones(take.shape, dtype=bool)
        best = np.where(take, vals, best)
        idx = np.where(take, lin, idx)
        first = False
    return idx


class _Fractional(_MaxPool):
    """The maxima read at precomputed window argmaxes; backward as the other max pools."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, x: Tensor, *, idx: np.ndarray, nd: int
    ) -> tuple[np.ndarray, np.ndarray]:
        ctx.idx, ctx.shape, ctx.nd = idx, x.shape, nd
        ctx.save_for_backward(x)  # as torch: an in-place write to x then fails backward
        return gather_planes(x._data, idx, nd), idx


def _fractional_fn(name: str) -> type[_MaxPool]:
    base = _max_fn(name)
    fn: Any = type(name, (_Fractional,), {"name": name, "scatter": base.scatter})
    return fn  # type: ignore[no-any-return]


_FUNCTIONS = {
    2: _fractional_fn("FractionalMaxPool2DBackward0"),
    3: _fractional_fn("FractionalMaxPool3DBackward0"),
}


def _ints(value: Any, n: int, what: str, name: str) -> tuple[Any, ...]:
    if isinstance(value, (list, tuple)):
        value = tuple(value)
        if len(value) == 1:
            value = value * n
        if len(value) != n:
            raise ShapeMismatchError(f"{name}: {what} must either be a single Int or tuple of Ints")
        return value
    return (value,) * n


_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional(
    input: Any,
    kernel_size: Any,
    output_size: Any,
    output_ratio: Any,
    return_indices: bool,
    samples: Any,
    nd: int,
) -> Any:
    name = f"fractional_max_pool{nd}d"
    kernel = name if nd == 2 else f"{name}_out"
    x = as_tensor(input)
    if output_size is None and output_ratio is None:
        raise ArgumentValueError(
            f"{name} requires specifying either an output_size or an output_ratio"
        )
    if nd == 3 and x.ndim < 4 and samples is None:  # Python reads input.size(-4) first
        raise DimIndexError(
            f"Dimension out of range (expected to be in range of [{-max(x.ndim, 1)}, "
            f"{max(x.ndim, 1) - 1}], but got -4)"
        )
    if output_size is None and nd == 2:  # Python takes len() of a 2-d ratio
        if not isinstance(output_ratio, (list, tuple)):
            raise ArgumentTypeError(f"object of type '{type(output_ratio).__name__}' has no len()")
        if len(output_ratio) > 2:
            raise ArgumentValueError(
                f"{name} requires output_ratio to either be a single Int or tuple of Ints."
            )
    if output_size is None:
        ratio = _ints(output_ratio, nd, "output_ratio", name)
        out = tuple(int(x.shape[-nd + d] * float(ratio[d])) for d in range(nd))
    else:
        out = tuple(int(v) for v in _ints(output_size, nd, "output_size", name))
    k = tuple(int(v) for v in _ints(kernel_size, nd, "kernel_size", name))
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeMismatchError(
            f"{kernel}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {sizes(x.shape)}"
        )
    for d in range(1, x.ndim):
        if x.shape[d] == 0 and not (x.ndim == nd + 1 and d == 0):
            raise ShapeMismatchError(
                f"{kernel}(): Expected input to have non-zero size for non-batch dimensions, "
                f"but got{sizes(x.shape)} with dimension {d} being empty."
            )
    for d in range(nd):
        size = x.shape[-nd + d]
        # ATen: the 2-d kernel allows out + k - 1 == size, the 3-d one does not
        if out[d] + k[d] - 1 > size or (nd == 3 and out[d] + k[d] - 1 == size):
            raise ShapeMismatchError(
                f"{kernel}(): pool {_AXES[nd][d]} {k[d]} too large relative to input "
                f"{_AXES[nd][d]} {size}"
            )
    refuse_dtype(kernel, x.dtype)
    batched = x.ndim == nd + 2
    n = x.shape[0] if batched else 1
    c = x.shape[-nd - 1]
    u_t = rand(n, c, nd, dtype=x.dtype) if samples is None else as_tensor(samples)
    u = u_t._data
    if u.dtype != x.dtype:
        raise ShapeMismatchError("Expect _random_samples to have the same dtype as input")
    if u.ndim != 3 or u.shape[0] < n:
        raise ShapeMismatchError("Expect _random_samples.size(0) no less then input batch size.")
    if u.shape[1] != c:
        raise ShapeMismatchError("Expect _random_samples.size(1) equals to input channel size.")
    if u.shape[2] != nd:
        raise ShapeMismatchError(
            f"Expect _random_samples.size(2) equals to {nd}; got {u.shape[2]}."
        )
    planes = x._data.reshape(n * c, *x.shape[-nd:])
    idx = _indices(planes, u[:n].reshape(n * c, nd), k, out)
    idx = idx.reshape(*x.shape[:-nd], *out)
    res, ind = _FUNCTIONS[nd].apply(x, idx=idx, nd=nd)
    return (res, ind) if return_indices else res


def _samples(nd: int) -> Any:
    def make(rng: np.random.Generator) -> list[Any]:
        def distinct(*shape: int) -> np.ndarray:
            return rng.permutation(math.prod(shape)).reshape(shape) / 7.0

        x = distinct(*((2, 2) + (7,) * nd))
        u = Const(rng.random((2, 2, nd)))
        u1 = Const(u.value[:1])
        return [
            sample(x, 2, output_size=3, _random_samples=u, note="output_size"),
            sample(x[0], 3, output_ratio=(0.5,) * nd, _random_samples=u1, note="unbatched, ratio"),
            sample(
                x,
                (2,) * nd,
                output_size=(3,) * nd,
                return_indices=True,
                _random_samples=u,
                note="return_indices",
            ),
            sample(distinct(*((0, 2) + (6,) * nd)), 2, output_size=2, note="empty batch"),
        ]

    return make


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The work: every window offset reads at most the input's elements (the result,
    out + k - 1 <= size per dim, is smaller than the input)."""
    x = args[0] if args else kwargs.get("input")
    shape = getattr(x, "shape", None)
    k = args[1] if len(args) > 1 else kwargs.get("kernel_size")
    if shape is None:
        return None
    try:
        ks: list[Any] = list(k) if isinstance(k, (list, tuple)) else [k]
        vol = math.prod(max(int(v), 1) for v in ks)
    except (TypeError, ValueError):
        return None
    return 4 * math.prod(shape) * vol


@register(
    samples=_samples(2),
    method=False,
    torch="nn.functional.fractional_max_pool2d",
    estimate=_estimate,
    results=Results("flag", arg="return_indices"),
)
def fractional_max_pool2d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """2-d max pooling over pseudo-random windows (fractional max pooling)."""
    return _fractional(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2
    )


@register(
    samples=_samples(3),
    method=False,
    torch="nn.functional.fractional_max_pool3d",
    estimate=_estimate,
    results=Results("flag", arg="return_indices"),
)
def fractional_max_pool3d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """3-d max pooling over pseudo-random windows (fractional max pooling)."""
    return _fractional(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3
    )
