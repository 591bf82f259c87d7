"""3-d pooling (max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d) and
adaptive_max_pool1d.

Every window is gathered by per-dim positions (``o × K`` with a mask for padding or
windows of varying size), so one code path serves fixed and adaptive windows. Max
pooling keeps each window's argmax as a flat index into the input volume; its backward
scatters there (and that scatter's backward gathers). Average pooling is a sparse
linear map whose transpose spreads each output's gradient over its window.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dual import FROM_BACKWARD, LINEAR
from ..errors import ShapeMismatchError
from ..function import Function
from ..registry import Results, register, sample
from ..tensor import Tensor
from . import samples as S
from ._tie import tie
from ._util import as_tensor
from .conv import ArgumentValueError, int_tuple, refuse_dtype, sizes
from .pooling import _out_size, adaptive_max_pool2d, gather_planes, scatter_planes
from .resample import adaptive_average
from .shape import squeeze, unsqueeze

Dim = tuple[np.ndarray, np.ndarray]  # positions (o × K) and which of them are inside


def _fixed_dim(i: int, o: int, k: int, s: int, p: int, d: int) -> Dim:
    pos = (np.arange(o) * s - p)[:, None] + np.arange(k) * d
    return np.clip(pos, 0, i - 1), (pos >= 0) & (pos < i)


def _adaptive_dim(i: int, o: int) -> Dim:
    j = np.arange(o)
    start, end = (j * i) // o, -((-(j + 1) * i) // o)
    width = int((end - start).max()) if o else 1
    pos = start[:, None] + np.arange(width)
    return np.minimum(pos, i - 1), pos < end[:, None]


def _windows(xd: np.ndarray, dims: list[Dim]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each window's values ``(..., *out, K)``, its mask ``(*out, K)`` and the flat
    positions ``(*out, K)`` in the input volume."""
    n = len(dims)
    spatial = xd.shape[-n:]
    index: list[Any] = []
    masks, flat = [], np.zeros((), dtype=np.int64)
    mask = np.ones((), dtype=bool)
    for k, (pos, inside) in enumerate(dims):
        shape = [1] * (2 * n)
        shape[k], shape[n + k] = pos.shape
        index.append(pos.reshape(shape))
        masks.append(inside.reshape(shape))
        flat = flat * spatial[k] + pos.reshape(shape)
        mask = mask & inside.reshape(shape)
    vals = xd[(Ellipsis, *index)]
    out = vals.shape[-2 * n : -n]
    kk = math.prod(vals.shape[-n:])
    vals = vals.reshape(vals.shape[: -2 * n] + out + (kk,))
    full = out + (kk,)
    return vals, np.broadcast_to(mask, mask.shape).reshape(full), flat.reshape(full)


def _max_windows(xd: np.ndarray, dims: list[Dim]) -> tuple[np.ndarray, np.ndarray]:
    vals, mask, flat = _windows(xd, dims)
    if vals.size == 0:
        shape = vals.shape[:-1]
        return np.zeros(shape, dtype=xd.dtype), np.zeros(shape, dtype=np.int64)
    low = -np.inf if xd.dtype.kind == "f" else np.iinfo(xd.dtype).min
    vals = np.where(mask, vals, low)
    arg = vals.argmax(axis=-1)  # the first maximum, as the kernel's ">" keeps
    best = np.take_along_axis(vals, arg[..., None], -1)
    arg = np.where(  # a tie with padding: the first position inside the input
        np.take_along_axis(np.broadcast_to(mask, vals.shape), arg[..., None], -1)[..., 0],
        arg,
        ((vals == best) & mask).argmax(axis=-1),
    )
    nan = np.isnan(vals) if xd.dtype.kind == "f" else np.zeros(vals.shape, dtype=bool)
    if nan.any():  # the kernel takes every NaN it meets: the last one wins
        last = vals.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
        arg = np.where(nan.any(axis=-1), last, arg)
    out = np.take_along_axis(vals, arg[..., None], -1)[..., 0]
    idx = np.take_along_axis(np.broadcast_to(flat, vals.shape), arg[..., None], -1)[..., 0]
    return out.astype(xd.dtype, copy=False), idx.astype(np.int64)


class _Scatter(Function):
    """A max pooling's gradient: each output's gradient added at its argmax."""

    jvp = LINEAR
    gather: type[Function]

    @staticmethod
    def forward(
        ctx: Any, g: Tensor, *, idx: np.ndarray, shape: tuple[int, ...], nd: int
    ) -> np.ndarray:
        ctx.idx, ctx.nd = idx, nd
        return scatter_planes(g._data, idx, shape, nd)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        out: Tensor = ctx.fn.gather.apply(gg, idx=ctx.idx, nd=ctx.nd)
        return out


class _Gather(Function):
    name = "GatherBackward0"
    jvp = LINEAR
    scatter: type[Function]

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, idx: np.ndarray, nd: int) -> np.ndarray:
        ctx.idx, ctx.shape, ctx.nd = idx, a.shape, nd
        return gather_planes(a._data, idx, nd)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        out: Tensor = ctx.fn.scatter.apply(g, idx=ctx.idx, shape=ctx.shape, nd=ctx.nd)
        return out


def _pair(name: str) -> type[_Scatter]:
    sc: Any = type(name, (_Scatter,), {"name": name})
    ga: Any = type("GatherBackward0", (_Gather,), {})
    sc.gather, ga.scatter = ga, sc
    return sc  # type: ignore[no-any-return]


class _MaxPool(Function):
    """Max pooling over gathered windows, the argmax kept for the backward."""

    jvp = FROM_BACKWARD
    scatter: type[_Scatter]

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, dims: list[Dim]) -> tuple[np.ndarray, np.ndarray]:
        out, idx = _max_windows(x._data, dims)
        ctx.idx, ctx.shape, ctx.nd = idx, x.shape, len(dims)
        ctx.save_for_backward(x)  # as torch: an in-place write to x then fails backward
        return out, idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, *_: Any) -> Tensor:
        (x,) = ctx.saved_tensors
        cls = ctx.fn.scatter
        gx = cls.apply(g, idx=ctx.idx, shape=ctx.shape, nd=ctx.nd)
        return tie(gx, g, x, name=cls.name)


def _max_fn(name: str) -> type[_MaxPool]:
    scatter = _pair(name.replace("Backward0", "BackwardBackward0"))
    fn: Any = type(name, (_MaxPool,), {"name": name, "scatter": scatter})
    return fn  # type: ignore[no-any-return]


MaxPool3D = _max_fn("MaxPool3DWithIndicesBackward0")
AdaptiveMaxPool3D = _max_fn("AdaptiveMaxPool3DBackward0")


# -- average pooling: a sparse linear map and its transpose ----------------------------------------


def _spread(g: np.ndarray, flat: np.ndarray, w: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The transpose of ``_average``: ``g[o] · w[o, k]`` added at ``flat[o, k]``."""
    nd = flat.ndim - 1
    planes, size = math.prod(shape[:-nd]), math.prod(shape[-nd:])
    if planes * size == 0:
        return np.zeros(shape, dtype=g.dtype)
    contrib = g.reshape(planes, -1, 1) * w.reshape(1, -1, w.shape[-1]).astype(g.dtype)
    where = flat.reshape(1, -1) + (np.arange(planes) * size)[:, None]
    out = np.bincount(where.ravel(), weights=contrib.ravel(), minlength=planes * size)
    return out.astype(g.dtype, copy=False).reshape(shape)


def _average(xd: np.ndarray, dims: list[Dim], w: np.ndarray) -> np.ndarray:
    vals, mask, _ = _windows(xd, dims)
    terms = np.where(mask & (w != 0), vals * w.astype(xd.dtype), 0)
    return terms.sum(axis=-1, dtype=xd.dtype)


class AvgPool3DBackward0(Function):
    name = "AvgPool3DBackward0"
    jvp = LINEAR  # an average of windows

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, dims: list[Dim], w: np.ndarray) -> np.ndarray:
        ctx.dims, ctx.w, ctx.shape = dims, w, x.shape
        ctx.save_for_backward(x)  # torch's avg_pool3d_backward reads self
        return _average(x._data, dims, w)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        gx = AvgPool3DBackwardBackward0.apply(g, dims=ctx.dims, w=ctx.w, shape=ctx.shape)
        return tie(gx, g, x, name="AvgPool3DBackwardBackward0")


class AvgPool3DBackwardBackward0(Function):
    name = "AvgPool3DBackwardBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, g: Tensor, *, dims: list[Dim], w: np.ndarray, shape: tuple[int, ...]
    ) -> np.ndarray:
        ctx.dims, ctx.w = dims, w
        _, _, flat = _windows(np.zeros((1,) * (len(shape) - len(dims)) + shape[-len(dims) :]), dims)
        return _spread(g._data, flat, w, shape)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        out: Tensor = AvgPool3DBackward0.apply(gg, dims=ctx.dims, w=ctx.w)
        return out


# -- arguments -----------------------------------------------------------------------------------


def _triple(
    value: Any, name: str, op: str, default: tuple[int, ...] | None = None
) -> tuple[int, ...]:
    if default is not None and (value is None or value == [] or value == ()):
        return default
    v = int_tuple(value, 3, name, op)
    if len(v) == 1:
        v = v * 3
    if len(v) != 3:
        raise ShapeMismatchError(
            f"{op}: {name} must either be a single int, or a tuple of three ints"
        )
    return v


def _geometry(
    op: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil: bool
) -> tuple[list[Dim], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    k = _triple(kernel_size, "kernel_size", op)
    s = _triple(stride, "stride", op, default=k)
    p = _triple(padding, "padding", op)
    d = _triple(dilation, "dilation", op)
    if any(v <= 0 for v in k):
        raise ShapeMismatchError(
            f"kernel size should be greater than zero, but got kT: {k[0]} kH: {k[1]} kW: {k[2]}"
        )
    if any(v <= 0 for v in s):
        raise ShapeMismatchError(
            f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} dW: {s[2]}"
        )
    if any(v <= 0 for v in d):
        raise ShapeMismatchError(
            "dilation should be greater than zero, but got "
            f"dilationT: {d[0]} dilationH: {d[1]} dilationW: {d[2]}"
        )
    if any(v < 0 for v in p):
        raise ShapeMismatchError(f"pad must be non-negative, but got pad: {min(p)}")
    for kk, pp, dd in zip(k, p, d):
        if pp > ((kk - 1) * dd + 1) // 2:
            raise ShapeMismatchError(
                f"pad should be at most half of effective kernel size, but got pad={pp}, "
                f"kernel_size={kk} and dilation={dd}"
            )
    shape = x.shape
    if x.ndim not in (4, 5):
        raise ShapeMismatchError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for i in range(x.ndim - 4, x.ndim):
        if shape[i] == 0:
            raise ShapeMismatchError(
                f"{op}_out_cpu_template(): Expected input's non-batch dimensions to have "
                f"positive length, but input has a shape of {sizes(shape)} and non-batch "
                f"dimension {i} has length zero!"
            )
    image = shape[-3:]
    out = tuple(_out_size(i, kk, pp, ss, dd, ceil) for i, kk, pp, ss, dd in zip(image, k, p, s, d))
    if any(o < 1 for o in out):
        raise ShapeMismatchError(
            f"Given input size: ({shape[-4]}x{image[0]}x{image[1]}x{image[2]}). Calculated "
            f"output size: ({shape[-4]}x{out[0]}x{out[1]}x{out[2]}). Output size is too small"
        )
    dims = [
        _fixed_dim(i, o, kk, ss, pp, dd) for i, o, kk, ss, pp, dd in zip(image, out, k, s, p, d)
    ]
    return dims, k, s, p, out


def _distinct(rng: np.random.Generator, *shape: int) -> np.ndarray:
    n = math.prod(shape)
    return (rng.permutation(n).astype(np.float64) * 0.25 - n / 8).reshape(shape)


def _pool3d_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("input")
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    return 2 * math.prod(shape) + 1


def _max_pool3d_samples(rng: np.random.Generator) -> list[Any]:
    r = _distinct
    return [
        sample(r(rng, 1, 2, 4, 4, 4), 2, note="kernel 2"),
        sample(r(rng, 2, 3, 5, 4), (2, 2, 3), (1, 2, 1), (1, 1, 1), note="unbatched, padded"),
        sample(r(rng, 1, 1, 5, 5, 5), 2, 2, 0, 2, True, note="dilation, ceil_mode"),
        sample(r(rng, 1, 2, 4, 4, 4), 2, return_indices=True, note="return_indices"),
    ]


@register(
    samples=_max_pool3d_samples,
    method=False,
    torch="nn.functional.max_pool3d",
    results=Results("flag", arg="return_indices"),
    estimate=_pool3d_estimate,
)
def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """3-d max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)``; with ``return_indices``
    also each maximum's flat position in its input volume."""
    x = as_tensor(input)
    dims, *_ = _geometry(
        "max_pool3d_with_indices", x, kernel_size, stride, padding, dilation, ceil_mode
    )
    refuse_dtype("max_pool3d", x.dtype, "fiu")
    out, idx = MaxPool3D.apply(x, dims=dims)
    return (out, idx) if return_indices else out


def _avg_pool3d_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 1, 2, 4, 4, 4), 2, note="kernel 2"),
        sample(r(rng, 2, 3, 5, 4), (2, 2, 3), (1, 2, 1), (1, 1, 1), note="unbatched, padded"),
        sample(r(rng, 1, 1, 5, 5, 5), 3, 2, 1, True, False, note="ceil, pad not counted"),
        sample(r(rng, 1, 1, 4, 4, 4), 2, divisor_override=3, note="divisor_override"),
    ]


@register(
    samples=_avg_pool3d_samples,
    method=False,
    torch="nn.functional.avg_pool3d",
    estimate=_pool3d_estimate,
)
def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """3-d average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    x = as_tensor(input)
    if divisor_override is not None and int(divisor_override) == 0:
        raise ShapeMismatchError("divisor must be not zero")
    dims, k, s, p, out = _geometry("avg_pool3d", x, kernel_size, stride, padding, 1, ceil_mode)
    refuse_dtype("avg_pool3d", x.dtype, "fiu")
    image = x.shape[-3:]
    counts = []
    for o, ss, pp, kk, i in zip(out, s, p, k, image):
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, i + pp)
        counts.append(
            end - start if count_include_pad else np.minimum(end, i) - np.maximum(start, 0)
        )
    div = (
        np.full(out, float(divisor_override))
        if divisor_override is not None
        else np.multiply.outer(np.multiply.outer(counts[0], counts[1]), counts[2]).astype(float)
    )
    _, mask, _ = _windows(np.zeros((1, 1) + image), dims)
    w = np.where(mask, 1.0, 0.0) / div[..., None]
    if x.dtype.kind != "f":  # integer sums divided truncating toward zero, as the kernel
        vals, inside, _ = _windows(x._data, dims)
        total = np.where(inside, vals, 0).sum(axis=-1)
        d = div.astype(total.dtype)
        q = np.sign(total) * np.sign(d) * (np.abs(total) // np.abs(d))
        return Tensor._make(q.astype(x.dtype))
    return AvgPool3DBackward0.apply(x, dims=dims, w=w)


# -- adaptive ------------------------------------------------------------------------------------


def _adaptive_size(value: Any, x: Tensor, op: str) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        if x.ndim < 4 and len(value) == 3:
            raise ArgumentValueError("Input dimension should be at least 4")
        if len(value) != 3:
            raise ShapeMismatchError(
                f"{op}(): internal error: output_size.size() must be 3"
                if "max" in op
                else f"{op}: output_size must be 3"
            )
        size = tuple(x.shape[-3 + k] if v is None else int(v) for k, v in enumerate(value))
    else:
        size = (int(value),) * 3
    if x.ndim not in (4, 5):
        raise ShapeMismatchError(f"{op}(): Expected 4D or 5D tensor, but got {sizes(x.shape)}")
    if any(v < 0 for v in size):
        raise ShapeMismatchError(
            f"Trying to create tensor with negative dimension {min(size)}: "
            f"{sizes(x.shape[:-3] + size)}"
            if "max" in op
            else f"{op}: elements of output_size must be greater than or equal to 0 but "
            f"received {{{size[0]}, {size[1]}, {size[2]}}}"
        )
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise ShapeMismatchError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {sizes(x.shape)} with dimension {i} being empty"
            )
    return size


def _adaptive3d_samples(rng: np.random.Generator) -> list[Any]:
    r = _distinct
    return [
        sample(r(rng, 1, 2, 4, 4, 4), 2, note="divisible"),
        sample(r(rng, 2, 5, 4, 7), (3, 2, 4), note="unbatched, overlapping"),
        sample(r(rng, 1, 1, 3, 4, 5), (None, 2, 6), note="None keeps a size, larger"),
    ]


def _adaptive3d_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("input")
    size: Any = args[1] if len(args) > 1 else kwargs.get("output_size")
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) < 3:
        return None
    try:
        dims = (
            [shape[-3 + k] if v is None else int(v) for k, v in enumerate(size)]
            if isinstance(size, (list, tuple))
            else [int(size)] * 3
        )
        lead = math.prod(shape[:-3])
        # the result twice (indices) and the gathered windows
        return lead * math.prod(max(d, 0) for d in dims) * (2 + math.prod(shape[-3:]))
    except (TypeError, ValueError, IndexError):
        return None


@register(
    samples=_adaptive3d_samples,
    method=False,
    torch="nn.functional.adaptive_avg_pool3d",
    estimate=_adaptive3d_estimate,
)
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size``."""
    x = as_tensor(input)
    size = _adaptive_size(output_size, x, "adaptive_avg_pool3d")
    refuse_dtype("adaptive_avg_pool3d_cpu", x.dtype)
    return adaptive_average(x, size)


@register(
    samples=_adaptive3d_samples,
    method=False,
    torch="nn.functional.adaptive_max_pool3d",
    results=Results("flag", arg="return_indices"),
    estimate=_adaptive3d_estimate,
)
def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size``; with
    ``return_indices`` also each maximum's flat position in its input volume."""
    x = as_tensor(input)
    size = _adaptive_size(output_size, x, "adaptive_max_pool3d")
    refuse_dtype("adaptive_max_pool3d_cpu", x.dtype)
    dims = [_adaptive_dim(i, o) for i, o in zip(x.shape[-3:], size)]
    out, idx = AdaptiveMaxPool3D.apply(x, dims=dims)
    return (out, idx) if return_indices else out


def _adaptive1d_samples(rng: np.random.Generator) -> list[Any]:
    r = _distinct
    return [
        sample(r(rng, 2, 3, 7), 3, note="overlapping"),
        sample(r(rng, 3, 6), 2, note="unbatched"),
        sample(r(rng, 1, 2, 5), 3, True, note="return_indices"),
    ]


def _adaptive1d_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("input")
    size: Any = args[1] if len(args) > 1 else kwargs.get("output_size")
    shape = getattr(x, "shape", None)
    if isinstance(size, (list, tuple)) and len(size) == 1:
        size = size[0]
    if shape is None or len(shape) < 1 or not isinstance(size, int):
        return None
    return 2 * math.prod(shape[:-1]) * max(size, 0) * (shape[-1] + 1)


@register(
    samples=_adaptive1d_samples,
    method=False,
    torch="nn.functional.adaptive_max_pool1d",
    results=Results("flag", arg="return_indices"),
    estimate=_adaptive1d_estimate,
)
def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of ``(N, C, L)`` or ``(C, L)`` to ``output_size`` (2-d pooling of a
    height-1 image, as PyTorch computes it)."""
    x = as_tensor(input)
    if x.ndim not in (2, 3):
        raise ShapeMismatchError(
            f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: {sizes(x.shape)}"
        )
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != 1:
            raise ShapeMismatchError(
                "adaptive_max_pool1d() argument 'output_size' should contain one int "
                f"(got {len(output_size)})"
            )
        output_size = output_size[0]
    out, idx = adaptive_max_pool2d(unsqueeze(x, -2), (1, output_size), True)
    out, idx = squeeze(out, -2), squeeze(idx, -2)
    return (out, idx) if return_indices else out
