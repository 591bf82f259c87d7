"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d, adaptive_max_pool2d.

Windows are strided views over the padded input (``conv.windows``), reduced in one
numpy call. Max pooling keeps each window's argmax as a flat index into the input
plane (PyTorch's ``indices``); its backward scatters the gradient there, and the
scatter's own backward gathers, so both directions are engine Functions. Average
pooling's backward is col2im of the gradient spread over each window; adaptive
average pooling is one pooling matrix per spatial dim (windows of varying size),
whose backward is the transposed matrices. The 1-d ops are the 2-d ones on an
unsqueezed input, as PyTorch computes them (their ``grad_fn`` is the squeeze).
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
from .conv import (
    ArgumentValueError,
    Blocks,
    Col2ImBackward0,
    DimIndexError,
    int_tuple,
    pad_image,
    refuse_dtype,
    sizes,
    windows,
)
from .reduction import mean
from .resample import adaptive_average
from .shape import expand, reshape, squeeze, unsqueeze

# -- gathering and scattering at flat indices within each (N, C) plane ----------------------------


def _planes(shape: tuple[int, ...], nd: int) -> tuple[int, int]:
    """Number of (batch, channel) planes and the elements of one plane."""
    return math.prod(shape[:-nd]), math.prod(shape[-nd:])


def scatter_planes(g: np.ndarray, idx: np.ndarray, shape: tuple[int, ...], nd: int) -> np.ndarray:
    """Zeros of ``shape`` with ``g`` added at ``idx`` (flat positions in each plane)."""
    planes, size = _planes(shape, nd)
    if planes * size == 0:
        return np.zeros(shape, dtype=g.dtype)
    flat = idx.reshape(planes, -1) + (np.arange(planes) * size)[:, None]
    out = np.bincount(flat.ravel(), weights=g.reshape(-1), minlength=planes * size)
    return out.astype(g.dtype, copy=False).reshape(shape)


def gather_planes(a: np.ndarray, idx: np.ndarray, nd: int) -> np.ndarray:
    """``a`` read at ``idx`` (flat positions in each plane), in ``idx``'s shape."""
    planes, size = _planes(a.shape, nd)
    if idx.size == 0:
        return np.zeros(idx.shape, dtype=a.dtype)
    return np.take_along_axis(a.reshape(planes, size), idx.reshape(planes, -1), 1).reshape(
        idx.shape
    )


class MaxPoolScatter(Function):
    """The gradient of a max pooling: each output's gradient added at its argmax."""

    name = "MaxPool2DWithIndicesBackwardBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, idx: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        ctx.idx = idx
        return scatter_planes(g._data, idx, shape, 2)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        return MaxPoolGather.apply(gg, idx=ctx.idx)


class MaxPoolGather(Function):
    """The adjoint of the scatter: the input read at the argmax positions."""

    name = "GatherBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, idx: np.ndarray) -> np.ndarray:
        ctx.idx, ctx.shape = idx, a.shape
        return gather_planes(a._data, idx, 2)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return MaxPoolScatter.apply(g, idx=ctx.idx, shape=ctx.shape)


def max_pool_planes(x: np.ndarray, geo: Blocks) -> tuple[np.ndarray, np.ndarray]:
    """Max pooling of ``(N, C, H, W)`` with PyTorch's CPU kernel's choices, one kernel
    offset at a time (a few whole-array ops, no per-window loop): a value replaces the
    running max when it is larger or NaN (so the last NaN wins); a window whose values
    never beat -inf reports its first in-bounds position."""
    (oh, ow), (sh, sw), (dh, dw) = geo.blocks, geo.stride, geo.dilation
    n, c, h, w = x.shape
    # planes last, (H, W, N·C): each offset's slab then has a long contiguous inner run
    # (numpy is slow on strided views with short rows); branch-free maximum and where
    full = geo.padded
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min  # never beats by ">"
    xp = np.full(full + (n * c,), low, dtype=x.dtype)
    xp[geo.lo[0] : geo.lo[0] + h, geo.lo[1] : geo.lo[1] + w] = x.reshape(n * c, h, w).transpose(
        1, 2, 0
    )
    best: np.ndarray = np.full((oh, ow, n * c), low, dtype=x.dtype)
    arg: np.ndarray = np.full(best.shape, -1, dtype=np.int8 if geo.nk < 128 else np.int64)
    nan = x.dtype.kind == "f" and bool(np.isnan(x).any())
    k = 0
    for i in range(geo.kernel[0]):
        for j in range(geo.kernel[1]):
            slab = xp[
                i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw
            ]
            better = slab > best
            if nan:
                better |= np.isnan(slab)
            arg = np.where(better, arg.dtype.type(k), arg)
            best = np.maximum(best, slab)  # NaN wins and stays, as the kernel's isnan test
            k += 1
    width = geo.image[1]
    top = np.arange(oh)[:, None] * sh - geo.lo[0]
    left = np.arange(ow)[None, :] * sw - geo.lo[1]
    # flat index = window origin + the winning offset's displacement (a table lookup)
    shift = np.array(
        [i * dh * width + j * dw for i in range(geo.kernel[0]) for j in range(geo.kernel[1])],
        dtype=np.int64,
    )
    idx: np.ndarray = (top * width + left)[:, :, None] + shift[arg]
    lost = arg < 0
    if lost.any():  # no value beat -inf: PyTorch reports the first in-bounds position
        first_row = top + dh * np.maximum(-(top // dh), 0) * (top < 0)
        first_col = left + dw * np.maximum(-(left // dw), 0) * (left < 0)
        idx = np.where(lost, (first_row * width + first_col)[:, :, None], idx)
    best = best.transpose(2, 0, 1).reshape(n, c, oh, ow)
    idx = idx.transpose(2, 0, 1).reshape(n, c, oh, ow)
    return np.ascontiguousarray(best), np.ascontiguousarray(idx)


class MaxPool2DWithIndicesBackward0(Function):
    name = "MaxPool2DWithIndicesBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, geo: Blocks) -> tuple[np.ndarray, np.ndarray]:
        xd = x._data
        out, idx = max_pool_planes(xd if xd.ndim == 4 else xd[None], geo)
        if xd.ndim != 4:
            out, idx = out[0], idx[0]
        ctx.idx, ctx.shape = idx, xd.shape
        ctx.save_for_backward(x)  # as torch: an in-place write to x then fails backward
        return out, idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, *_: Any) -> Tensor:
        (x,) = ctx.saved_tensors
        gx = MaxPoolScatter.apply(g, idx=ctx.idx, shape=ctx.shape)
        return tie(gx, g, x, name="MaxPool2DWithIndicesBackwardBackward0")

    vjp_row = "cnn"  # the numpy twin below earns its place on this bench row

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray, *_: Any) -> np.ndarray:
        ctx.saved_tensors  # noqa: B018 - the version check torch makes
        return scatter_planes(g, ctx.idx, ctx.shape, 2)


# -- shared argument handling -----------------------------------------------------------------


def _out_size(i: int, k: int, p: int, s: int, d: int, ceil: bool) -> int:
    """PyTorch's pooling_output_shape: a last window must start inside the input or its
    left padding."""
    span = i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    out = span // s + 1
    if ceil and (out - 1) * s >= i + p:
        out -= 1
    return out


def _pool_geometry(
    op: str,
    x: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
) -> Blocks:
    k = int_tuple(kernel_size, 2, "kernel_size", op)
    s = k if stride is None or stride == [] or stride == () else int_tuple(stride, 2, "stride", op)
    p = int_tuple(padding, 2, "padding", op)
    d = int_tuple(dilation, 2, "dilation", op)
    for name, values in (("kernel_size", k), ("stride", s), ("padding", p), ("dilation", d)):
        if len(values) != 2:
            raise ShapeMismatchError(
                f"{op}: {name} must either be a single int, or a tuple of two ints"
            )
    if any(v == 0 for v in s):
        raise ShapeMismatchError("stride should not be zero")
    if any(v <= 0 for v in k):
        raise ShapeMismatchError(
            f"kernel size should be greater than zero, but got kernelH: {k[0]} kernelW: {k[1]}"
        )
    if any(v <= 0 for v in s):
        raise ShapeMismatchError(
            f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}"
        )
    if any(v <= 0 for v in d):
        raise ShapeMismatchError(
            f"dilation should be greater than zero, but got dilationH: {d[0]} dilationW: {d[1]}"
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
    if not ((x.ndim == 3 and all(shape)) or (x.ndim == 4 and shape[1] and shape[2] and shape[3])):
        raise ShapeMismatchError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{sizes(shape)}"
            if op.startswith("max") and x.ndim in (3, 4)
            else "non-empty 3D or 4D (batch mode) tensor expected for input"
        )
    image = tuple(shape[-2:])
    out = tuple(
        _out_size(i, kk, pp, ss, dd, ceil_mode) for i, kk, pp, ss, dd in zip(image, k, p, s, d)
    )
    if any(o < 1 for o in out):
        raise ShapeMismatchError(
            f"Given input size: ({shape[-3]}x{image[0]}x{image[1]}). Calculated output size: "
            f"({shape[-3]}x{out[0]}x{out[1]}). Output size is too small"
        )
    hi = tuple(
        (o - 1) * ss + dd * (kk - 1) + 1 - i - pp
        for o, ss, dd, kk, i, pp in zip(out, s, d, k, image, p)
    )
    return Blocks(k, s, d, p, hi, image, out)


def _max_pool2d(x: Tensor, geo: Blocks) -> tuple[Tensor, Tensor]:
    out, idx = MaxPool2DWithIndicesBackward0.apply(x, geo=geo)
    return out, idx


# -- samples --------------------------------------------------------------------------------------


def _distinct(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Values spaced apart (no ties within a window: the max is unique)."""
    n = math.prod(shape)
    return (rng.permutation(n).astype(np.float64) * 0.25 - n / 8).reshape(shape)


def _max_pool2d_samples(rng: np.random.Generator) -> list[Any]:
    r = _distinct
    return [
        sample(r(rng, 2, 3, 6, 6), 2, note="kernel 2"),
        sample(r(rng, 3, 5, 7), (3, 2), note="unbatched"),
        sample(r(rng, 1, 2, 7, 6), 3, 2, 1, note="stride 2, padding 1"),
        sample(r(rng, 1, 2, 7, 7), 2, (2, 3), dilation=2, note="dilation 2"),
        sample(r(rng, 1, 2, 5, 6), 2, ceil_mode=True, note="ceil_mode"),
        sample(r(rng, 1, 2, 6, 5), 3, 2, 1, ceil_mode=True, note="ceil_mode, padding"),
        sample(r(rng, 1, 2, 4, 4), 2, return_indices=True, note="return_indices"),
        sample(r(rng, 0, 2, 4, 4), 2, note="empty batch"),
    ]


def _max_pool1d_samples(rng: np.random.Generator) -> list[Any]:
    r = _distinct
    return [
        sample(r(rng, 2, 3, 8), 2, note="kernel 2"),
        sample(r(rng, 3, 7), 3, note="unbatched"),
        sample(r(rng, 1, 2, 9), 3, 2, 1, note="stride 2, padding 1"),
        sample(r(rng, 1, 2, 9), 2, 1, dilation=3, note="dilation 3"),
        sample(r(rng, 1, 2, 7), 2, ceil_mode=True, note="ceil_mode"),
        sample(r(rng, 1, 2, 6), 2, return_indices=True, note="return_indices"),
    ]


# -- max pooling ----------------------------------------------------------------------------------


@register(
    samples=_max_pool2d_samples,
    method=False,
    torch="nn.functional.max_pool2d",
    results=Results("flag", arg="return_indices"),
)
def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """2-d max pooling of ``(N, C, H, W)`` or ``(C, H, W)``; with ``return_indices`` also
    each maximum's flat position in its input plane."""
    x = as_tensor(input)
    geo = _pool_geometry("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode)
    refuse_dtype("max_pool2d", x.dtype, "fiu")
    out, idx = _max_pool2d(x, geo)
    return (out, idx) if return_indices else out


def _one(value: Any, name: str, op: str) -> int:
    values = int_tuple(value, 1, name, op)
    if len(values) != 1:
        raise ShapeMismatchError(
            f"{op}() {name} must be either a single int, or a tuple of one int"
        )
    return values[0]


@register(
    samples=_max_pool1d_samples,
    method=False,
    torch="nn.functional.max_pool1d",
    results=Results("flag", arg="return_indices"),
)
def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """1-d max pooling of ``(N, C, L)`` or ``(C, L)`` (the 2-d pooling of a height-1 image)."""
    x = as_tensor(input)
    if (
        x.ndim not in (2, 3)
        or (x.ndim == 3 and not (x.shape[1] and x.shape[2]))
        or (x.ndim == 2 and not (x.shape[0] and x.shape[1]))
    ):
        raise ShapeMismatchError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
            f"for input, but got:{sizes(x.shape)}"
        )
    k = _one(kernel_size, "kernel_size", "max_pool1d")
    s = (
        k
        if stride is None or stride == [] or stride == ()
        else _one(stride, "stride", "max_pool1d")
    )
    p = _one(padding, "padding", "max_pool1d")
    d = _one(dilation, "dilation", "max_pool1d")
    _max_pool1d_checks(x.shape[-1], k, s, p, d, ceil_mode, return_indices)
    x2 = unsqueeze(x, -2)
    geo = _pool_geometry("max_pool1d", x2, (1, k), (1, s), (0, p), (1, d), ceil_mode)
    refuse_dtype("max_pool1d_impl", x.dtype)
    out, idx = _max_pool2d(x2, geo)
    out = squeeze(out, -2)
    return (out, squeeze(idx, -2)) if return_indices else out


def _max_pool1d_checks(i: int, k: int, s: int, p: int, d: int, ceil: bool, indices: bool) -> None:
    """PyTorch's max_pool1d argument checks, in its order (with ``return_indices`` the
    2-d kernel's messages for the padding)."""
    if k <= 0:
        raise ShapeMismatchError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise ShapeMismatchError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise ShapeMismatchError(
            f"pad must be non-negative, but got pad: {p}"
            if indices
            else f"max_pool1d() padding must be non-negative, but got {p}"
        )
    if p > ((k - 1) * d + 1) // 2 if indices else p > k // 2:
        raise ShapeMismatchError(
            f"pad should be at most half of effective kernel size, but got pad={p}, "
            f"kernel_size={k} and dilation={d}"
            if indices
            else f"max_pool1d() padding should be at most half of kernel size, but got "
            f"padding={p} and kernel_size={k}"
        )
    if d <= 0:
        raise ShapeMismatchError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _out_size(i, k, p, s, d, ceil)
    if out < 0:
        raise ShapeMismatchError(f"max_pool1d() Invalid computed output size: {out}")


# -- average pooling ------------------------------------------------------------------------------


def _divisors(
    geo: Blocks, count_include_pad: bool, divisor_override: int | None, dtype: np.dtype
) -> np.ndarray:
    """Each window's divisor, ``(oh, ow)``: PyTorch counts the window clipped to the
    padded input (count_include_pad) or to the input itself."""
    if divisor_override is not None:
        return np.full(geo.blocks, divisor_override, dtype=dtype)
    per_dim = []
    for o, s, p, k, i in zip(geo.blocks, geo.stride, geo.lo, geo.kernel, geo.image):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, i + p)
        if count_include_pad:
            per_dim.append(end - start)
        else:
            per_dim.append(np.minimum(end, i) - np.maximum(start, 0))
    return np.multiply.outer(per_dim[0], per_dim[1]).astype(dtype)


class AvgPool2DBackward0(Function):
    name = "AvgPool2DBackward0"
    jvp = LINEAR  # an average of windows

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, geo: Blocks, divisor: np.ndarray) -> np.ndarray:
        ctx.geo, ctx.divisor, ctx.shape = geo, divisor, x.shape
        ctx.save_for_backward(x)  # unread, but torch saves it: an in-place write then fails
        xd = x._data
        x4 = xd if xd.ndim == 4 else xd[None]
        view = windows(pad_image(x4, geo), geo)
        total = view.sum(axis=(2, 3), dtype=xd.dtype)
        if xd.dtype.kind == "f":
            out = total / divisor
        else:  # integer division truncating toward zero, as the C++ kernel divides
            q = np.abs(total) // np.abs(divisor)  # a negative divisor_override flips the sign
            out = (np.sign(total) * np.sign(divisor) * q).astype(xd.dtype)
        return out if xd.ndim == 4 else out[0]

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        geo, shape = ctx.geo, ctx.shape
        lead = shape[:-2]
        spread = g / Tensor._make(ctx.divisor.astype(g.dtype))
        spread = reshape(spread, (*lead, 1, geo.nl))
        spread = expand(spread, (*lead, geo.nk, geo.nl))
        cols = reshape(spread, (*lead[:-1], lead[-1] * geo.nk, geo.nl))
        gx = Col2ImBackward0.apply(cols, geo=geo)
        return tie(gx, g, x, name="AvgPool2DBackwardBackward0")


def _avg_pool(
    op: str,
    x: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
) -> Tensor:
    if divisor_override is not None and int(divisor_override) == 0:
        raise ShapeMismatchError("divisor must be not zero")
    geo = _pool_geometry(op, x, kernel_size, stride, padding, 1, ceil_mode)
    refuse_dtype("avg_pool2d", x.dtype, "fiu")
    divisor = _divisors(geo, count_include_pad, divisor_override, x.dtype)
    return AvgPool2DBackward0.apply(x, geo=geo, divisor=divisor)


def _avg_pool2d_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 6, 6), 2, note="kernel 2"),
        sample(r(rng, 3, 5, 7), (3, 2), note="unbatched"),
        sample(r(rng, 1, 2, 7, 6), 3, 2, 1, note="stride 2, padding 1"),
        sample(r(rng, 1, 2, 7, 6), 3, 2, 1, count_include_pad=False, note="padding not counted"),
        sample(r(rng, 1, 2, 5, 6), 2, ceil_mode=True, note="ceil_mode"),
        sample(r(rng, 1, 2, 6, 5), 3, 2, 1, True, note="ceil_mode, padding"),
        sample(r(rng, 1, 2, 6, 5), 3, 2, 1, True, False, note="ceil_mode, padding not counted"),
        sample(r(rng, 1, 2, 5, 5), 2, 1, divisor_override=3, note="divisor_override"),
        sample(r(rng, 0, 2, 4, 4), 2, note="empty batch"),
    ]


@register(samples=_avg_pool2d_samples, method=False, torch="nn.functional.avg_pool2d")
def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-d average pooling of ``(N, C, H, W)`` or ``(C, H, W)``."""
    x = as_tensor(input)
    if x.ndim < 3:
        raise DimIndexError(
            f"Dimension out of range (expected to be in range of [{-max(x.ndim, 1)}, "
            f"{max(x.ndim, 1) - 1}], but got -3)"
        )
    return _avg_pool(
        "avg_pool2d",
        x,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def _avg_pool1d_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 8), 2, note="kernel 2"),
        sample(r(rng, 3, 7), 3, note="unbatched"),
        sample(r(rng, 1, 2, 9), 3, 2, 1, note="stride 2, padding 1"),
        sample(r(rng, 1, 2, 9), 3, 2, 1, False, False, note="padding not counted"),
        sample(r(rng, 1, 2, 7), 2, ceil_mode=True, note="ceil_mode"),
    ]


def _dims_message(x: Tensor, op: str) -> str:
    return (
        f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
        f"'self' (while checking arguments for {op})"
    )


@register(samples=_avg_pool1d_samples, method=False, torch="nn.functional.avg_pool1d")
def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-d average pooling of ``(N, C, L)`` or ``(C, L)`` (2-d pooling of a height-1 image)."""
    x = as_tensor(input)
    if x.ndim not in (2, 3):
        raise ShapeMismatchError(_dims_message(x, "avg_pool1d"))
    k = _one(kernel_size, "kernel_size", "avg_pool1d")
    s = (
        k
        if stride is None or stride == [] or stride == ()
        else _one(stride, "stride", "avg_pool1d")
    )
    p = _one(padding, "padding", "avg_pool1d")
    x2 = unsqueeze(x, -2)
    out = _avg_pool("avg_pool1d", x2, (1, k), (1, s), (0, p), ceil_mode, count_include_pad, None)
    return squeeze(out, -2)


# -- adaptive pooling ----------------------------------------------------------------------------


def _adaptive_ranges(i: int, o: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows: [floor(j·i/o), ceil((j+1)·i/o))."""
    j = np.arange(o)
    return (j * i) // o, -((-(j + 1) * i) // o)


def _output_size(value: Any, x: Tensor, n: int, op: str) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        if x.ndim <= len(value):  # torch.nn.functional's _list_with_default
            raise ArgumentValueError(f"Input dimension should be at least {len(value) + 1}")
        if len(value) != n:
            raise ShapeMismatchError(
                f"{op}(): internal error: output_size.size() must be {n}"
                if "max" in op
                else f"{op}: output_size must be {n}"
            )
        out = tuple(x.shape[-n + k] if v is None else int(v) for k, v in enumerate(value))
    else:
        out = (int(value),) * n
    return out


def _adaptive_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The result's elements: the leading dims times the output size (it may exceed the
    input's), twice for the indices."""
    x = args[0] if args else kwargs.get("input")
    size: Any = args[1] if len(args) > 1 else kwargs.get("output_size")
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) < 2:
        return None
    try:
        dims = (
            [shape[-2 + k] if v is None else int(v) for k, v in enumerate(size)]
            if isinstance(size, (list, tuple))
            else [int(size)] * 2
        )
    except (TypeError, ValueError, IndexError):
        return None
    lead = math.prod(shape[:-2])
    if len(dims) != 2:  # the op reports the wrong size
        return 2 * lead * math.prod(max(d, 0) for d in dims)
    oh, ow = max(dims[0], 0), max(dims[1], 0)
    # the result (twice for the indices), the averaging matrices, A_h · x
    return 2 * lead * oh * ow + oh * shape[-2] + ow * shape[-1] + lead * oh * shape[-1]


def _adaptive_estimate_1d(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The result's elements: the leading dims times the output length."""
    x = args[0] if args else kwargs.get("input")
    size: Any = args[1] if len(args) > 1 else kwargs.get("output_size")
    shape = getattr(x, "shape", None)
    if isinstance(size, (list, tuple)) and len(size) == 1:
        size = size[0]
    if shape is None or len(shape) < 1 or not isinstance(size, int):
        return None
    return 2 * math.prod(shape[:-1]) * max(size, 0)


def _adaptive_input(x: Tensor, op: str) -> None:
    if x.ndim not in (3, 4):
        raise ShapeMismatchError(f"{op}(): Expected 3D or 4D tensor, but got {sizes(x.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise ShapeMismatchError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {sizes(x.shape)} with dimension {i} being empty"
            )


def _adaptive_avg_pool2d_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 6, 6), 3, note="divisible"),
        sample(r(rng, 2, 3, 7, 5), (3, 4), note="overlapping windows"),
        sample(r(rng, 3, 5, 7), (2, 3), note="unbatched"),
        sample(r(rng, 1, 2, 5, 4), (None, 2), note="None keeps a size"),
        sample(r(rng, 1, 2, 3, 3), (5, 4), note="larger than input"),
        sample(r(rng, 1, 2, 5, 4), 1, note="global (a mean)"),
        sample(r(rng, 0, 2, 4, 4), 2, note="empty batch"),
    ]


@register(
    samples=_adaptive_avg_pool2d_samples,
    method=False,
    torch="nn.functional.adaptive_avg_pool2d",
    estimate=lambda args, kwargs: _adaptive_estimate(args, kwargs),
)
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size`` (windows
    chosen by PyTorch's rule; ``None`` keeps that size)."""
    x = as_tensor(input)
    size = _output_size(output_size, x, 2, "adaptive_avg_pool2d")
    if any(s < 0 for s in size):
        raise ShapeMismatchError(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
            f"but received {{{size[0]}, {size[1]}}}"
        )
    if x.ndim not in (3, 4):
        raise ShapeMismatchError(
            f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {sizes(x.shape)}"
        )
    if size == (1, 1):
        return mean(x, (-1, -2), True)
    refuse_dtype("adaptive_avg_pool2d", x.dtype)
    _adaptive_input(x, "adaptive_avg_pool2d")
    return adaptive_average(x, size)


def _adaptive_avg_pool1d_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 6), 3, note="divisible"),
        sample(r(rng, 2, 3, 7), 4, note="overlapping windows"),
        sample(r(rng, 3, 5), 2, note="unbatched"),
        sample(r(rng, 1, 2, 5), 1, note="global"),
    ]


@register(
    samples=_adaptive_avg_pool1d_samples,
    method=False,
    torch="nn.functional.adaptive_avg_pool1d",
    estimate=lambda args, kwargs: _adaptive_estimate_1d(args, kwargs),
)
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of ``(N, C, L)`` or ``(C, L)`` to ``output_size`` elements."""
    x = as_tensor(input)
    if isinstance(output_size, (list, tuple)) and len(output_size) != 1:
        raise ShapeMismatchError(
            "adaptive_avg_pool1d() argument 'output_size' should contain one int "
            f"(got {len(output_size)})"
        )
    if x.ndim not in (2, 3):
        raise ShapeMismatchError(_dims_message(x, "adaptive_avg_pool1d"))
    size = output_size[0] if isinstance(output_size, (list, tuple)) else output_size
    if int(size) < 0:
        raise ShapeMismatchError(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
            f"but received {{1, {int(size)}}}"
        )
    x2 = unsqueeze(x, -2)
    if int(size) == 1:  # torch's 2-d pool to (1, 1) is a mean: it saves nothing
        return squeeze(mean(x2, (-1, -2), True), -2)
    _adaptive_input(x2, "adaptive_avg_pool2d")
    refuse_dtype("adaptive_avg_pool2d", x.dtype)
    return adaptive_average(x, (int(size),))


class AdaptiveMaxPool2DBackward0(Function):
    name = "AdaptiveMaxPool2DBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        xd = x._data
        (h, w), (oh, ow) = xd.shape[-2:], size
        gathered = []
        for i, o in ((h, oh), (w, ow)):
            start, end = _adaptive_ranges(i, o)
            width = int((end - start).max()) if o else 1
            pos = start[:, None] + np.arange(width)
            gathered.append((np.minimum(pos, i - 1), pos < end[:, None]))
        (ih, mh), (iw, mw) = gathered
        # (..., oh, kh, ow, kw): every window, padded to the widest with -inf
        vals = xd[..., ih[:, :, None, None], iw[None, None, :, :]]
        vals = np.where(mh[:, :, None, None] & mw[None, None, :, :], vals, -np.inf)
        vals = np.moveaxis(vals, -3, -2)  # (..., oh, ow, kh, kw)
        flat: np.ndarray = vals.reshape(vals.shape[:-2] + (ih.shape[1] * iw.shape[1],))
        if flat.size:
            arg = flat.argmax(axis=-1)  # the first maximum, as the kernel's ">" keeps
            nan = np.isnan(flat)
            if nan.any():  # the kernel takes every NaN it meets: the last one wins
                last = flat.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
                arg = np.where(nan.any(axis=-1), last, arg)
            out = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
        else:
            arg = np.zeros(flat.shape[:-1], dtype=np.int64)
            out = np.zeros(flat.shape[:-1], dtype=xd.dtype)
        kh, kw = np.divmod(arg, iw.shape[1])
        rows = ih[np.arange(oh)[:, None], kh]
        cols = iw[np.arange(ow)[None, :], kw]
        idx = (rows * w + cols).astype(np.int64)
        ctx.idx, ctx.shape = idx, xd.shape
        ctx.save_for_backward(x)  # unread, but torch saves it: an in-place write then fails
        return out.astype(xd.dtype, copy=False), idx

    @staticmethod
    def backward(ctx: Any, g: Tensor, *_: Any) -> Tensor:
        (x,) = ctx.saved_tensors
        gx = MaxPoolScatter.apply(g, idx=ctx.idx, shape=ctx.shape)
        return tie(gx, g, x, name="AdaptiveMaxPool2DBackwardBackward0")


def _adaptive_max_pool2d_samples(rng: np.random.Generator) -> list[Any]:
    r = _distinct
    return [
        sample(r(rng, 2, 3, 6, 6), 3, note="divisible"),
        sample(r(rng, 2, 3, 7, 5), (3, 4), note="overlapping windows"),
        sample(r(rng, 3, 5, 7), (2, 3), note="unbatched"),
        sample(r(rng, 1, 2, 5, 4), (None, 2), note="None keeps a size"),
        sample(r(rng, 1, 2, 3, 3), (5, 4), note="larger than input"),
        sample(r(rng, 1, 2, 5, 4), 2, True, note="return_indices"),
        sample(r(rng, 0, 2, 4, 4), 2, note="empty batch"),
    ]


@register(
    samples=_adaptive_max_pool2d_samples,
    method=False,
    torch="nn.functional.adaptive_max_pool2d",
    results=Results("flag", arg="return_indices"),
    estimate=lambda args, kwargs: _adaptive_estimate(args, kwargs),
)
def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size``; with
    ``return_indices`` also each maximum's flat position in its input plane."""
    x = as_tensor(input)
    size = _output_size(output_size, x, 2, "adaptive_max_pool2d")
    if x.ndim not in (3, 4):
        raise ShapeMismatchError(
            f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {sizes(x.shape)}"
        )
    if any(s < 0 for s in size):
        raise ShapeMismatchError(
            f"Trying to create tensor with negative dimension {min(size)}: "
            f"{sizes(x.shape[:-2] + size)}"
        )
    _adaptive_input(x, "adaptive_max_pool2d")
    refuse_dtype("adaptive_max_pool2d", x.dtype)
    out, idx = AdaptiveMaxPool2DBackward0.apply(x, size=size)
    return (out, idx) if return_indices else out
