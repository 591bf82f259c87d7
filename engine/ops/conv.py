"""Convolutions (conv1d/2d/3d, conv_transpose1d/2d) and the sliding-block pair
unfold (im2col) / fold (col2im) they are made of.

A convolution is one im2col copy (a strided numpy view made contiguous) and one
batched GEMM, recorded as PyTorch's single ``ConvolutionBackward0`` node. Its
backward rule is written with the two sliding-block Functions, ``Im2ColBackward0``
and ``Col2ImBackward0`` (each the other's adjoint, so each one's backward is the
other), and engine ``matmul``: grad input is col2im of ``Wᵀ·g`` (a transposed
convolution), grad weight is ``g·colsᵀ`` (a correlation), so ``create_graph``
differentiates it again. A numpy ``vjp`` twin does the same without recording,
for the training loop's plain backward.

Geometry is N-d throughout: every spatial dimension has a kernel size, stride,
dilation and a low and a high padding (they differ for ``padding="same"`` with an
even effective kernel, and for ``ceil_mode`` pooling windows).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dtypes, interrupt
from ..dual import LINEAR, MULTILINEAR
from ..errors import BadArgumentsError, DtypeMismatchError, IndexOutOfRangeError, ShapeMismatchError
from ..function import Function
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._tie import tie
from ._util import as_tensor
from .linalg import matmul, transpose
from .reduction import sum as sum_
from .shape import reshape, squeeze, unsqueeze

# -- PyTorch's exception classes -------------------------------------------------------------


class ArgumentValueError(BadArgumentsError, ValueError):
    """A bad argument value where PyTorch raises ValueError (interpolate, ...)."""


class ArgumentTypeError(BadArgumentsError, TypeError):
    """A wrong argument type where PyTorch raises TypeError."""


class UnsupportedError(BadArgumentsError, NotImplementedError):
    """A mode or rank PyTorch does not implement (NotImplementedError)."""


class DimIndexError(IndexOutOfRangeError, IndexError):
    """A dimension out of range, PyTorch's IndexError."""


def refuse_dtype(kernel: str, dt: np.dtype, allowed: str = "f") -> None:
    """PyTorch's error for a dtype its CPU kernel is not compiled for (``allowed``: the
    numpy kinds it takes, floating only by default)."""
    if dt.kind not in allowed:
        raise UnsupportedError(f"\"{kernel}\" not implemented for '{type_name(dt)}'")


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}


def type_name(dt: np.dtype) -> str:
    return _TYPE_NAMES.get(dtypes.torch_name(dt), str(dt))


def sizes(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def int_tuple(value: Any, n: int, name: str, op: str) -> tuple[int, ...]:
    """An int or a sequence of ints as ``n`` ints (one value is repeated, as PyTorch does)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, list, tuple)):
        raise ArgumentTypeError(
            f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}"
        )
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    items = tuple(value)
    bad = [v for v in items if isinstance(v, bool) or not isinstance(v, (int, np.integer))]
    if bad:
        raise ArgumentTypeError(
            f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
            f"{type(bad[0]).__name__} at pos {items.index(bad[0])}"
        )
    if len(items) == 1:
        return (int(items[0]),) * n
    return tuple(int(v) for v in items)


# -- sliding blocks: geometry, im2col, col2im --------------------------------------------------


@dataclass(frozen=True)
class Blocks:
    """Sliding blocks over the spatial dims of an image: kernel, stride, dilation,
    padding before (``lo``) and after (``hi``, may be negative: an unused tail), the
    image's spatial size and the number of blocks along each dim."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    image: tuple[int, ...]
    blocks: tuple[int, ...]

    @staticmethod
    def make(
        image: tuple[int, ...],
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        dilation: tuple[int, ...],
        lo: tuple[int, ...],
        hi: tuple[int, ...],
    ) -> Blocks:
        """The blocks that fit in the padded image (floor division, as convolutions count)."""
        blocks = tuple(
            (i + a + b - d * (k - 1) - 1) // s + 1
            for i, k, s, d, a, b in zip(image, kernel, stride, dilation, lo, hi)
        )
        return Blocks(kernel, stride, dilation, lo, hi, image, blocks)

    @property
    def nk(self) -> int:
        return math.prod(self.kernel)

    @property
    def nl(self) -> int:
        return math.prod(self.blocks)

    @cached_property
    def padded(self) -> tuple[int, ...]:
        """The padded image's size: enough for every block (and never cut below the image)."""
        return tuple(
            max(a + i, a + i + b, (n - 1) * s + d * (k - 1) + 1)
            for i, a, b, n, s, d, k in zip(
                self.image, self.lo, self.hi, self.blocks, self.stride, self.dilation, self.kernel
            )
        )


def pad_image(x: np.ndarray, geo: Blocks, value: float = 0.0) -> np.ndarray:
    """``x`` placed in the padded image (a copy only when there is padding)."""
    full = geo.padded
    if full == geo.image and not any(geo.lo):
        return x
    out = np.full(x.shape[:2] + full, value, dtype=x.dtype)
    inner = tuple(slice(a, a + i) for a, i in zip(geo.lo, geo.image))
    out[(slice(None), slice(None), *inner)] = x
    return out


def windows(xp: np.ndarray, geo: Blocks) -> np.ndarray:
    """A read-only strided view ``(N, C, *kernel, *blocks)`` of a padded image."""
    st = xp.strides[2:]
    return as_strided(
        xp,
        shape=xp.shape[:2] + geo.kernel + geo.blocks,
        strides=xp.strides[:2]
        + tuple(s * d for s, d in zip(st, geo.dilation))
        + tuple(s * k for s, k in zip(st, geo.stride)),
        writeable=False,
    )


def im2col(x: np.ndarray, geo: Blocks) -> np.ndarray:
    """``(N, C, *image)`` to ``(N, C·prod(kernel), prod(blocks))`` (torch's unfold layout);
    without the batch dim, ``(C, *image)`` to ``(C·prod(kernel), prod(blocks))``."""
    if x.ndim == len(geo.kernel) + 1:
        return im2col(x[None], geo)[0]
    n, c = x.shape[:2]
    return windows(pad_image(x, geo), geo).reshape(n, c * geo.nk, geo.nl)


def col2im(cols: np.ndarray, geo: Blocks) -> np.ndarray:
    """The adjoint of ``im2col``: blocks summed back into the image; a loop over kernel
    offsets only (each offset adds one strided slab)."""
    if cols.ndim == 2:
        return col2im(cols[None], geo)[0]
    n = cols.shape[0]
    c = cols.shape[1] // geo.nk if geo.nk else 0
    blocks = cols.reshape((n, c) + geo.kernel + geo.blocks)
    out = np.zeros((n, c) + geo.padded, dtype=cols.dtype)
    for offset in interrupt.checked(np.ndindex(*geo.kernel)):
        where = tuple(
            slice(o * d, o * d + s * (b - 1) + 1, s) if b > 0 else slice(0, 0)
            for o, d, s, b in zip(offset, geo.dilation, geo.stride, geo.blocks)
        )
        out[(slice(None), slice(None), *where)] += blocks[(slice(None), slice(None), *offset)]
    inner = tuple(slice(a, a + i) for a, i in zip(geo.lo, geo.image))
    return out[(slice(None), slice(None), *inner)]


# The batch-last layout ``(C, *spatial, N)``: convolutions of small images copy whole
# batches at a time (the innermost contiguous run is N, or a row of N-vectors), and the
# GEMM sees one wide matrix per group instead of N small ones.


def batch_last(x: np.ndarray) -> np.ndarray:
    """``(N, C, *S)`` as a contiguous ``(C, *S, N)``."""
    return np.ascontiguousarray(x.transpose(*range(1, x.ndim), 0))


def batch_first(x: np.ndarray) -> np.ndarray:
    """``(C, *S, N)`` as a contiguous ``(N, C, *S)``."""
    return np.ascontiguousarray(x.transpose(x.ndim - 1, *range(x.ndim - 1)))


def to_last(x: np.ndarray, geo: Blocks) -> np.ndarray:
    """``(N, C, *image)`` placed in the padded image, batch last: ``(C, *padded, N)``."""
    full = geo.padded
    if full == geo.image and not any(geo.lo):
        return batch_last(x)
    out = np.zeros((x.shape[1],) + full + (x.shape[0],), dtype=x.dtype)
    inner = tuple(slice(a, a + i) for a, i in zip(geo.lo, geo.image))
    out[(slice(None), *inner, slice(None))] = x.transpose(*range(1, x.ndim), 0)
    return out


def im2col_last(xl: np.ndarray, geo: Blocks) -> np.ndarray:
    """Blocks of a padded batch-last image: ``(C, *kernel, *blocks, N)``, one copy."""
    st = xl.strides[1:-1]
    view = as_strided(
        xl,
        shape=xl.shape[:1] + geo.kernel + geo.blocks + xl.shape[-1:],
        strides=xl.strides[:1]
        + tuple(s * d for s, d in zip(st, geo.dilation))
        + tuple(s * k for s, k in zip(st, geo.stride))
        + xl.strides[-1:],
        writeable=False,
    )
    return np.ascontiguousarray(view)


def col2im_last(cols: np.ndarray, geo: Blocks) -> np.ndarray:
    """The adjoint of ``im2col_last`` (cropped to the image): ``(C, *image, N)``."""
    c, n = cols.shape[0], cols.shape[-1]
    out = np.zeros((c,) + geo.padded + (n,), dtype=cols.dtype)
    for offset in interrupt.checked(np.ndindex(*geo.kernel)):
        where = tuple(
            slice(o * d, o * d + s * (b - 1) + 1, s) if b > 0 else slice(0, 0)
            for o, d, s, b in zip(offset, geo.dilation, geo.stride, geo.blocks)
        )
        out[(slice(None), *where, slice(None))] += cols[(slice(None), *offset)]
    inner = tuple(slice(a, a + i) for a, i in zip(geo.lo, geo.image))
    return out[(slice(None), *inner, slice(None))]


class Im2ColBackward0(Function):
    """unfold: image to sliding blocks; the backward is col2im."""

    name = "Im2ColBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, x: Tensor, *, geo: Blocks) -> np.ndarray:
        ctx.geo = geo
        return im2col(x._data, geo)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return Col2ImBackward0.apply(g, geo=ctx.geo)


class Col2ImBackward0(Function):
    """fold: sliding blocks summed into an image; the backward is im2col."""

    name = "Col2ImBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, cols: Tensor, *, geo: Blocks) -> np.ndarray:
        ctx.geo = geo
        return col2im(cols._data, geo)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return Im2ColBackward0.apply(g, geo=ctx.geo)


# -- the convolution node ----------------------------------------------------------------------


class ConvolutionBackward0(Function):
    """Convolution and transposed convolution, with or without bias (PyTorch's
    ``convolution``). ``geo`` describes the blocks over the input (direct) or over
    the output (transposed: the output is col2im of ``Wᵀ·x``)."""

    name = "ConvolutionBackward0"
    jvp = MULTILINEAR  # conv(x, w) + b
    jvp_bias = 2

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, w: Tensor, *bias: Tensor, geo: Blocks, groups: int, transposed: bool
    ) -> np.ndarray:
        ctx.save_for_backward(x, w)
        ctx.geo, ctx.groups, ctx.transposed = geo, groups, transposed
        xd, wd = x._data, w._data
        n, g, nl = xd.shape[0], groups, geo.nl
        per_out = wd[0].size
        if not transposed:
            cols = im2col_last(to_last(xd, geo), geo).reshape(g, xd.shape[1] // g * geo.nk, nl * n)
            out = np.matmul(wd.reshape(g, wd.shape[0] // g, per_out), cols)
            channels = wd.shape[0]
        else:
            xl = batch_last(xd).reshape(g, xd.shape[1] // g, nl * n)
            wr = wd.reshape(g, wd.shape[0] // g, per_out)
            cols = np.matmul(wr.transpose(0, 2, 1), xl)
            channels = wd.shape[1] * g
            cols = cols.reshape((channels,) + geo.kernel + geo.blocks + (n,))
            out = col2im_last(cols, geo)
        out = out.reshape(channels, -1) if out.size else out.reshape(channels, 0)
        if bias:
            out += bias[0]._data[:, None]
        spatial = geo.image if transposed else geo.blocks
        return batch_first(out.reshape((channels,) + spatial + (n,)))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        geo, groups = ctx.geo, ctx.groups
        n = x.shape[0]
        per_out = math.prod(w.shape[1:])
        wr = reshape(w, (groups, w.shape[0] // groups, per_out))
        gx = gw = None
        if not ctx.transposed:
            gr = reshape(g, (n, groups, g.shape[1] // groups, geo.nl))
            if need[0]:
                cols = matmul(transpose(wr, 1, 2), gr)
                gx = Col2ImBackward0.apply(reshape(cols, (n, groups * per_out, geo.nl)), geo=geo)
            if need[1]:
                cols = reshape(Im2ColBackward0.apply(x, geo=geo), (n, groups, per_out, geo.nl))
                gw = reshape(sum_(matmul(gr, transpose(cols, 2, 3)), 0), w.shape)
        else:
            gcols = reshape(Im2ColBackward0.apply(g, geo=geo), (n, groups, per_out, geo.nl))
            if need[0]:
                gx = reshape(matmul(wr, gcols), x.shape)
            if need[1]:
                xr = reshape(x, (n, groups, x.shape[1] // groups, geo.nl))
                gw = reshape(sum_(matmul(xr, transpose(gcols, 2, 3)), 0), w.shape)
        # torch: both are outputs of one convolution_backward(grad, input, weight) node
        name = "ConvolutionBackwardBackward0"
        gx = None if gx is None else tie(gx, g, x, w, name=name, zero=False)
        gw = None if gw is None else tie(gw, g, x, w, name=name, zero=False)
        if len(need) == 2:
            return gx, gw
        gb = sum_(g, (0, *range(2, g.ndim))) if need[2] else None
        gb = None if gb is None else tie(gb, g, x, w, name=name, zero=False)
        return gx, gw, gb

    vjp_row = "cnn"  # the numpy twin below earns its place on this bench row

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        """The same rule in the batch-last layout: one GEMM per group for each gradient,
        and im2col/col2im copies whose innermost run is the whole batch."""
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        geo, groups = ctx.geo, ctx.groups
        xd, wd = x._data, w._data
        n, nl = xd.shape[0], geo.nl
        per_out = wd[0].size
        wr = wd.reshape(groups, wd.shape[0] // groups, per_out)
        gx = gw = None
        if not ctx.transposed:
            gl = batch_last(g).reshape(groups, g.shape[1] // groups, nl * n)
            if need[0]:
                cols = np.matmul(wr.transpose(0, 2, 1), gl)
                cols = cols.reshape((xd.shape[1],) + geo.kernel + geo.blocks + (n,))
                gx = batch_first(col2im_last(cols, geo))
            if need[1]:
                xcols = im2col_last(to_last(xd, geo), geo).reshape(groups, per_out, nl * n)
                gw = np.matmul(gl, xcols.transpose(0, 2, 1)).reshape(wd.shape)
        else:
            gcols = im2col_last(to_last(g, geo), geo).reshape(groups, per_out, nl * n)
            if need[0]:
                gx = np.matmul(wr, gcols).reshape((xd.shape[1],) + geo.blocks + (n,))
                gx = batch_first(gx)
            if need[1]:
                xl = batch_last(xd).reshape(groups, xd.shape[1] // groups, nl * n)
                gw = np.matmul(xl, gcols.transpose(0, 2, 1)).reshape(wd.shape)
        if len(need) == 2:
            return gx, gw
        gb = g.sum(axis=(0, *range(2, g.ndim))) if need[2] else None
        return gx, gw, gb


# -- argument checks (PyTorch's order and messages) ----------------------------------------------

_SAME_WARNING = (
    "Using padding='same' with even kernel lengths and odd dilation may require a "
    "zero-padded copy of the input be created"
)


def _conv_args(
    op: str,
    dims: int,
    input: Any,
    weight: Any,
    bias: Any,
) -> tuple[Tensor, Tensor, Tensor | None, bool]:
    x, w = as_tensor(input), as_tensor(weight)
    b = None if bias is None else as_tensor(bias)
    if x.ndim not in (dims + 1, dims + 2):
        raise ShapeMismatchError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {op}, "
            f"but got input of size: {sizes(x.shape)}"
        )
    if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype):
        other = w if x.dtype != w.dtype else b
        assert other is not None
        raise DtypeMismatchError(
            f"Input type (torch.{type_name(x.dtype)}Tensor) and weight type "
            f"(torch.{type_name(other.dtype)}Tensor) should be the same or input should be a "
            "MKLDNN tensor and weight is a dense tensor"
        )
    return x, w, b, x.ndim == dims + 1


def _check_params(
    k: int,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    output_padding: tuple[int, ...],
    groups: int,
) -> None:
    for name, values in (
        ("stride", stride),
        ("padding", padding),
        ("dilation", dilation),
        ("output_padding", output_padding),
    ):
        if len(values) != k:
            raise ShapeMismatchError(
                f"expected {name} to be a single integer value or a list of {k} values to "
                f"match the convolution dimensions, but got {name}={list(values)}"
            )
    if any(d < 0 for d in dilation):  # aten's first check; zero is refused below
        raise ShapeMismatchError("dilation should be greater than zero")
    if groups <= 0:
        raise ShapeMismatchError("non-positive groups is not supported")
    if any(p < 0 for p in padding):
        raise ShapeMismatchError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise ShapeMismatchError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise ShapeMismatchError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise ShapeMismatchError("non-positive dilation is not supported")


def _check_shapes(
    x: Tensor, w: Tensor, b: Tensor | None, groups: int, transposed: bool, k: int
) -> None:
    ws, xs = w.shape, x.shape
    if w.ndim != x.ndim:
        raise ShapeMismatchError(
            f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight "
            f"{sizes(ws)}, but got {x.ndim}-dimensional input of size {sizes(xs)} instead"
        )
    if ws[0] < groups:
        raise ShapeMismatchError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
            f"but got weight of size {sizes(ws)} instead"
        )
    if ws[0] % groups:
        raise ShapeMismatchError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{sizes(ws)}] instead"
        )
    if not transposed:
        if xs[1] != ws[1] * groups:
            raise ShapeMismatchError(
                f"Given groups={groups}, weight of size {sizes(ws)}, expected input{sizes(xs)} "
                f"to have {ws[1] * groups} channels, but got {xs[1]} channels instead"
            )
        out_channels = ws[0]
        prefix = ""
    else:
        if xs[1] != ws[0]:
            raise ShapeMismatchError(
                f"Given transposed=1, weight of size {sizes(ws)}, expected input{sizes(xs)} "
                f"to have {ws[0]} channels, but got {xs[1]} channels instead"
            )
        out_channels = ws[1] * groups
        prefix = "transposed=1, "
    if b is not None and (b.ndim != 1 or b.shape[0] != out_channels):
        raise ShapeMismatchError(
            f"Given {prefix}weight of size {sizes(ws)}, expected bias to be 1-dimensional with "
            f"{out_channels} elements, but got bias of size {sizes(b.shape)} instead"
        )


def _same_padding(
    kernel: tuple[int, ...], dilation: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    total = tuple(d * (k - 1) for k, d in zip(kernel, dilation))
    if any(t % 2 for t in total):
        warnings.warn(_SAME_WARNING, UserWarning, stacklevel=4)
    lo = tuple(t // 2 for t in total)
    return lo, tuple(t - a for t, a in zip(total, lo))


def _convolution(
    op: str,
    dims: int,
    input: Any,
    weight: Any,
    bias: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: Any,
    transposed: bool = False,
    output_padding: Any = 0,
) -> Tensor:
    x, w, b, unbatched = _conv_args(op, dims, input, weight, bias)
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
        raise ArgumentTypeError(
            f"{op}(): argument 'groups' must be int, not {type(groups).__name__}"
        )
    k = max(w.ndim - 2, 0)
    st = int_tuple(stride, dims, "stride", op)
    dil = int_tuple(dilation, dims, "dilation", op)
    outpad = int_tuple(output_padding, dims, "output_padding", op) if transposed else (0,) * k
    if isinstance(padding, str):
        if transposed:
            raise ArgumentTypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
        if padding not in ("same", "valid"):
            raise BadArgumentsError(f"Invalid padding string: '{padding}'")
        pad: tuple[int, ...] = (0,) * k
    else:
        pad = int_tuple(padding, dims, "padding", op)
    if unbatched:
        x = unsqueeze(x, 0)
    if w.ndim < 3:
        raise ShapeMismatchError("weight should have at least three dimensions")
    if w.ndim != x.ndim and isinstance(padding, str):  # torch's padding="same" path checks first
        _check_shapes(x, w, b, int(groups), transposed, k)
    _check_params(k, st, pad, dil, outpad, int(groups))
    _check_shapes(x, w, b, int(groups), transposed, k)
    kernel = tuple(w.shape[2:])
    image = tuple(x.shape[2:])
    lo = hi = pad
    if padding == "same":
        if any(s != 1 for s in st):
            raise ShapeMismatchError("padding='same' is not supported for strided convolutions")
        lo, hi = _same_padding(kernel, dil)
    if transposed:
        if any(p >= max(s, d) for p, s, d in zip(outpad, st, dil)):
            names = ("depth", "height", "width")[-k:] if k <= 3 else ()
            parts = (
                [f"output_padding_{n}: {p}" for n, p in zip(names, outpad)]
                + [f"stride_{n}: {s}" for n, s in zip(names, st)]
                + [f"dilation_{n}: {d}" for n, d in zip(names, dil)]
            )
            raise ShapeMismatchError(
                "output padding must be smaller than either stride or dilation, but got "
                + " ".join(parts)
            )
        out_size = tuple(
            (i - 1) * s - 2 * p + d * (kk - 1) + op_ + 1
            for i, s, p, d, kk, op_ in zip(image, st, pad, dil, kernel, outpad)
        )
        if any(o <= 0 for o in out_size):
            lead = (1,) if k == 1 else ()  # PyTorch runs a 1-d transposed conv as 2-d
            raise ShapeMismatchError(
                f"Given input size per channel: ({' x '.join(map(str, lead + image))}). "
                f"Calculated output size per channel: ({' x '.join(map(str, lead + out_size))}). "
                "Output size is too small"
            )
        geo = Blocks(
            kernel, st, dil, pad, tuple(p - o for p, o in zip(pad, outpad)), out_size, image
        )
    else:
        padded = tuple(i + a + c for i, a, c in zip(image, lo, hi))
        effective = tuple(d * (kk - 1) + 1 for kk, d in zip(kernel, dil))
        if any(p < e for p, e in zip(padded, effective)):
            raise ShapeMismatchError(
                f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                f"Kernel size: ({' x '.join(map(str, effective))}). Kernel size can't be greater "
                "than actual input size"
            )
        geo = Blocks.make(image, kernel, st, dil, lo, hi)
    kernel_name = "slow_conv3d_cpu" if k == 3 else "slow_conv2d_cpu"
    refuse_dtype("slow_conv_transpose2d_out_cpu" if transposed else kernel_name, x.dtype, "fiu")
    inputs = (x, w) if b is None else (x, w, b)
    out = ConvolutionBackward0.apply(*inputs, geo=geo, groups=int(groups), transposed=transposed)
    return squeeze(out, 0) if unbatched else out


# -- estimates: the result's elements before it is allocated --------------------------------------


def _shape(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else None


def _conv_transpose_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Output elements of a transposed convolution from input and weight shapes (an upper
    bound: padding only shrinks it), plus the im2col buffer of the same size."""
    names = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")
    bound = dict(zip(names, args)) | kwargs
    xs, ws = _shape(bound.get("input")), _shape(bound.get("weight"))
    if xs is None or ws is None or len(ws) < 3:
        return None
    k = len(ws) - 2
    try:
        st = int_tuple(bound.get("stride", 1), k, "stride", "conv_transpose")
        dil = int_tuple(bound.get("dilation", 1), k, "dilation", "conv_transpose")
        groups = int(bound.get("groups", 1))
    except (BadArgumentsError, TypeError, ValueError):
        return None
    image = xs[-k:]
    batch = xs[0] if len(xs) == k + 2 else 1
    out = math.prod(
        max((i - 1) * s + d * (kk - 1) + s + d, 0) for i, s, d, kk in zip(image, st, dil, ws[2:])
    )
    kernel = math.prod(ws[2:])
    channels = ws[1] * max(groups, 1)
    return batch * channels * (out + kernel * math.prod(image))


def _conv_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """A convolution's padded input, its im2col buffer (input channels x kernel x output
    positions) and its output, from the shapes and the padding (huge padding grows all
    three from a tiny input)."""
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    bound = dict(zip(names, args)) | kwargs
    xs, ws = _shape(bound.get("input")), _shape(bound.get("weight"))
    if xs is None or ws is None or len(ws) < 3:
        return None
    k = len(ws) - 2
    padding = bound.get("padding", 0)
    try:
        st = int_tuple(bound.get("stride", 1), k, "stride", "conv")
        dil = int_tuple(bound.get("dilation", 1), k, "dilation", "conv")
        pad = (
            tuple(d * (kk - 1) for d, kk in zip(dil, ws[2:]))
            if padding == "same"
            else (0,) * k
            if padding == "valid"
            else tuple(2 * p for p in int_tuple(padding, k, "padding", "conv"))
        )
    except (BadArgumentsError, TypeError, ValueError):
        return None
    batch = xs[0] if len(xs) == k + 2 else 1
    padded = [max(i + p, 0) for i, p in zip(xs[-k:], pad)]
    out = math.prod(
        max((i - d * (kk - 1) - 1) // max(s, 1) + 1, 0)
        for i, s, d, kk in zip(padded, st, dil, ws[2:])
    )
    channels = xs[-k - 1] if len(xs) > k else 1
    return batch * (channels * math.prod(padded) + channels * math.prod(ws[2:]) * out + ws[0] * out)


# -- samples -------------------------------------------------------------------------------------


def _conv_samples(dims: int):  # type: ignore[no-untyped-def]
    def build(rng: np.random.Generator) -> list[Any]:
        r = S.rand
        sp = {1: (7,), 2: (5, 6), 3: (4, 3, 5)}[dims]
        k = {1: (3,), 2: (3, 2), 3: (2, 2, 3)}[dims]
        out = [
            sample(r(rng, 2, 3, *sp), r(rng, 4, 3, *k), r(rng, 4), note="bias"),
            sample(r(rng, 2, 3, *sp), r(rng, 4, 3, *k), note="no bias"),
            sample(r(rng, 3, *sp), r(rng, 2, 3, *k), r(rng, 2), note="unbatched"),
            sample(r(rng, 2, 2, *sp), r(rng, 3, 2, *k), None, 2, 1, note="stride 2, padding 1"),
            sample(r(rng, 1, 4, *sp), r(rng, 4, 2, *k), r(rng, 4), groups=2, note="groups 2"),
            sample(r(rng, 1, 2, *sp), r(rng, 2, 2, *k), padding="same", note="same"),
            sample(r(rng, 1, 2, *sp), r(rng, 2, 2, *k), padding="valid", note="valid"),
            sample(r(rng, 0, 2, *sp), r(rng, 3, 2, *k), note="empty batch"),
        ]
        if dims <= 2:
            big = tuple(s + 3 for s in sp)
            out += [
                sample(
                    r(rng, 1, 2, *big), r(rng, 2, 2, *k), dilation=2, padding=1, note="dilation 2"
                ),
                sample(
                    r(rng, 1, 2, *big),
                    r(rng, 3, 2, *k),
                    padding="same",
                    dilation=(2,) * dims,
                    note="same, dilation 2",
                ),
                sample(
                    r(rng, 2, 6, *sp),
                    r(rng, 6, 1, *k),
                    stride=(2, 1)[:dims],
                    groups=6,
                    note="depthwise, mixed stride",
                ),
            ]
        if dims == 2:
            out.append(
                sample(
                    r(rng, 1, 1, 6, 7), r(rng, 2, 1, 4, 3), padding="same", note="same, even kernel"
                )
            )
        return out

    return build


def _conv_transpose_samples(dims: int):  # type: ignore[no-untyped-def]
    def build(rng: np.random.Generator) -> list[Any]:
        r = S.rand
        sp = {1: (5,), 2: (4, 3), 3: (3, 4, 3)}[dims]
        k = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}[dims]
        return [
            sample(r(rng, 2, 3, *sp), r(rng, 3, 4, *k), r(rng, 4), note="bias"),
            sample(r(rng, 2, 3, *sp), r(rng, 3, 2, *k), note="no bias"),
            sample(r(rng, 3, *sp), r(rng, 3, 2, *k), r(rng, 2), note="unbatched"),
            sample(
                r(rng, 1, 2, *sp),
                r(rng, 2, 3, *k),
                None,
                2,
                1,
                1,
                note="stride 2, padding 1, output_padding 1",
            ),
            sample(r(rng, 1, 4, *sp), r(rng, 4, 1, *k), r(rng, 2), groups=2, note="groups 2"),
            sample(
                r(rng, 1, 2, *sp),
                r(rng, 2, 2, *k),
                dilation=2,
                stride=2,
                output_padding=1,
                note="dilation 2, output_padding 1",
            ),
            sample(r(rng, 1, 2, *sp), r(rng, 2, 2, *k), stride=3, padding=1, note="stride 3"),
            sample(r(rng, 0, 2, *sp), r(rng, 2, 2, *k), note="empty batch"),
        ]

    return build


# -- the ops -------------------------------------------------------------------------------------


@register(
    samples=_conv_samples(1),
    method=False,
    torch="nn.functional.conv1d",
    estimate=_conv_estimate,
)
def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-d convolution (cross-correlation) of ``(N, C, L)`` or ``(C, L)`` with ``(O, C/groups, K)``."""
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@register(
    samples=_conv_samples(2),
    method=False,
    torch="nn.functional.conv2d",
    estimate=_conv_estimate,
)
def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-d convolution of ``(N, C, H, W)`` or ``(C, H, W)`` with ``(O, C/groups, kH, kW)``."""
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@register(
    samples=_conv_samples(3),
    method=False,
    torch="nn.functional.conv3d",
    estimate=_conv_estimate,
)
def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """3-d convolution of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with ``(O, C/groups, kD, kH, kW)``."""
    return _convolution("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


@register(
    samples=_conv_transpose_samples(1),
    method=False,
    torch="nn.functional.conv_transpose1d",
    estimate=_conv_transpose_estimate,
)
def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """1-d transposed convolution (the gradient of conv1d) with weight ``(C, O/groups, K)``."""
    return _convolution(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        groups,
        True,
        output_padding,
    )


@register(
    samples=_conv_transpose_samples(2),
    method=False,
    torch="nn.functional.conv_transpose2d",
    estimate=_conv_transpose_estimate,
)
def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """2-d transposed convolution (the gradient of conv2d) with weight ``(C, O/groups, kH, kW)``."""
    return _convolution(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        groups,
        True,
        output_padding,
    )


# -- unfold / fold -------------------------------------------------------------------------------


def _block_params(
    op: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any
) -> tuple[tuple[int, ...], ...]:
    k = int_tuple(kernel_size, 2, "kernel_size", op)
    d = int_tuple(dilation, 2, "dilation", op)
    p = int_tuple(padding, 2, "padding", op)
    s = int_tuple(stride, 2, "stride", op)
    for name, values, positive in (
        ("kernel", k, True),
        ("dilation", d, True),
        ("padding", p, False),
        ("stride", s, True),
    ):
        if len(values) != 2:
            raise ShapeMismatchError(
                f"It is expected {name}_size equals to 2, but got size {len(values)}"
                if name == "kernel"
                else f"It is expected {name} equals to 2, but got size {len(values)}"
            )
        if positive and any(v <= 0 for v in values):
            raise ShapeMismatchError(
                f"{name} should be greater than zero, but got {name}_height: {values[0]} "
                f"{name}_width: {values[1]}"
                if name != "kernel"
                else f"kernel size should be greater than zero, but got kernel_height: "
                f"{values[0]} kernel_width: {values[1]}"
            )
        if not positive and any(v < 0 for v in values):
            raise ShapeMismatchError(
                f"padding should be non-negative, but got pad_height: {values[0]} "
                f"pad_width: {values[1]}"
            )
    return k, d, p, s


def _unfold_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 4, 5), 2, note="kernel 2"),
        sample(r(rng, 3, 4, 5), (2, 3), note="unbatched"),
        sample(r(rng, 1, 2, 5, 6), (2, 2), dilation=(1, 2), padding=1, stride=(2, 1), note="all"),
        sample(r(rng, 1, 1, 3, 3), 3, padding=1, stride=2, note="stride 2"),
        sample(r(rng, 0, 2, 3, 3), 2, note="empty batch"),
    ]


def _unfold_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """prod(kernel) times the input (every element is in at most that many blocks, per
    stride 1), plus the padding: an upper bound."""
    names = ("input", "kernel_size", "dilation", "padding", "stride")
    bound = dict(zip(names, args)) | kwargs
    xs = _shape(bound.get("input"))
    if xs is None or len(xs) < 2:
        return None
    try:
        k = int_tuple(bound.get("kernel_size", 1), 2, "kernel_size", "unfold")
        p = int_tuple(bound.get("padding", 0), 2, "padding", "unfold")
    except (BadArgumentsError, TypeError, ValueError):
        return None
    lead = math.prod(xs[:-2])
    return (
        lead
        * math.prod(max(kk, 1) for kk in k)
        * math.prod(max(i + 2 * pp, 1) for i, pp in zip(xs[-2:], p))
    )


@register(
    samples=_unfold_samples, method=False, estimate=_unfold_estimate, torch="nn.functional.unfold"
)
def unfold(
    input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """Sliding blocks of ``(N, C, H, W)`` as columns ``(N, C·kH·kW, L)`` (im2col)."""
    x = as_tensor(input)
    k, d, p, s = _block_params("unfold", kernel_size, dilation, padding, stride)
    if x.ndim < 3:
        raise DimIndexError(
            f"Dimension out of range (expected to be in range of [{-max(x.ndim, 1)}, "
            f"{max(x.ndim, 1) - 1}], but got 2)"
        )
    if x.ndim != 4 and not (x.ndim == 3 and x.shape[0] * x.shape[1] * x.shape[2] > 0):
        shape = sizes(x.shape)
        raise ShapeMismatchError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got: {shape}"
        )
    geo = Blocks.make(tuple(x.shape[-2:]), k, s, d, p, p)
    if any(b < 1 for b in geo.blocks):
        raise ShapeMismatchError(
            f"Given input with spatial size ({x.shape[-2]}, {x.shape[-1]}), kernel_size=({k[0]}, "
            f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of "
            f"the array of sliding blocks as ({geo.blocks[0]}, {geo.blocks[1]}), but its "
            "components must be at least one."
        )
    refuse_dtype("im2col_out_cpu", x.dtype, "fb")
    return Im2ColBackward0.apply(x, geo=geo)


def _fold_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 12, 12), (4, 5), 2, note="kernel 2"),
        sample(r(rng, 6, 9), (4, 3), (2, 1), note="unbatched"),
        sample(r(rng, 1, 8, 18), (5, 6), 2, dilation=(1, 2), padding=1, stride=(2, 1), note="all"),
        sample(r(rng, 1, 9, 4), 3, 3, padding=1, stride=2, note="stride 2"),
        sample(r(rng, 0, 4, 4), 3, 2, note="empty batch"),
    ]


def _fold_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    names = ("input", "output_size")
    bound = dict(zip(names, args)) | kwargs
    xs = _shape(bound.get("input"))
    try:
        out = int_tuple(bound.get("output_size"), 2, "output_size", "fold")
    except (BadArgumentsError, TypeError, ValueError):
        return None
    if xs is None or len(xs) < 2:
        return None
    return math.prod(xs) + (xs[0] if len(xs) == 3 else 1) * xs[-2] * math.prod(
        max(o, 0) for o in out
    )


@register(samples=_fold_samples, method=False, estimate=_fold_estimate, torch="nn.functional.fold")
def fold(
    input: Tensor,
    output_size: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,
    stride: Any = 1,
) -> Tensor:
    """Columns ``(N, C·kH·kW, L)`` summed back into ``(N, C, *output_size)`` (col2im)."""
    x = as_tensor(input)
    out_size = int_tuple(output_size, 2, "output_size", "fold")
    k, d, p, s = _block_params("fold", kernel_size, dilation, padding, stride)
    if len(out_size) != 2:
        raise ShapeMismatchError(
            f"It is expected output_size equals to 2, but got size {len(out_size)}"
        )
    if (
        x.ndim not in (2, 3)
        or (x.ndim == 3 and x.shape[1] * x.shape[2] == 0)
        or (x.ndim == 2 and x.shape[0] * x.shape[1] == 0)
    ):
        raise ShapeMismatchError(
            "Expected 2D or 3D (batch mode) input tensor with possibly 0 batch size and non-zero "
            f"dimensions for input, but got: {sizes(x.shape)}"
        )
    nk = k[0] * k[1]
    if x.shape[-2] % nk:
        raise ShapeMismatchError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
            f"but got input.size(1)={x.shape[-2]} and kernel_size=({k[0]}, {k[1]})."
        )
    geo = Blocks.make(out_size, k, s, d, p, p)
    if any(b < 1 for b in geo.blocks):
        raise ShapeMismatchError(
            f"Given output_size=({out_size[0]}, {out_size[1]}), kernel_size=({k[0]}, {k[1]}), "
            f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array "
            f"of sliding blocks as ({geo.blocks[0]}, {geo.blocks[1]}), but its components must "
            "be at least one."
        )
    if x.shape[-1] != geo.nl:
        raise ShapeMismatchError(
            f"Given output_size=({out_size[0]}, {out_size[1]}), kernel_size=({k[0]}, {k[1]}), "
            f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), "
            "expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {geo.blocks[0]} * {geo.blocks[1]} = {geo.nl}, but got input.size(2)="
            f"{x.shape[-1]}."
        )
    refuse_dtype("col2im_out_cpu", x.dtype, "fb")
    return Col2ImBackward0.apply(x, geo=geo)
