"""``torch.fft``'s transforms, written as PyTorch writes them (aten's SpectralOps.cpp):
each public function resizes its input (``n=``/``s=``: trim or zero-pad), then calls
one of three primitives, each one node with torch's backward rule (derivatives.yaml):

- ``_fft_c2c``: complex to complex; its gradient is the transform the other way with
  the same scaling (the adjoint of an unnormalized DFT is the unnormalized inverse).
- ``_fft_r2c``: real to complex, ``onesided`` keeping the last dim's first
  ``n // 2 + 1`` bins; its gradient zero-pads ``g`` to full length, transforms back
  and keeps the real part.
- ``_fft_c2r``: a onesided Hermitian spectrum to real; its gradient is ``rfft`` of ``g``
  with the bins whose mirror image was dropped counted twice.

``norm`` ("backward", "forward", "ortho") becomes a scaling of 1, 1/sqrt(n) or 1/n
of the transform in the direction it names."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes, estimates, interrupt
from ..dual import LINEAR
from ..errors import BadArgumentsError, IndexOutOfRangeError
from ..function import Function
from ..primitives import cast
from ..registry import OPS, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor
from .complex_ops import ViewAsRealBackward0, conjugate, real_part

NONE, BY_ROOT_N, BY_N = 0, 1, 2  # torch's fft_norm_mode


def _norm_mode(norm: str | None, forward: bool) -> int:
    """torch's ``norm_from_string``: which scaling a transform in this direction gets."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise BadArgumentsError(f"Invalid normalization mode: {norm}")


def _scale(mode: int, sizes: Sequence[int]) -> float:
    n = math.prod(sizes)
    if mode == NONE or n == 0:
        return 1.0
    return 1.0 / math.sqrt(n) if mode == BY_ROOT_N else 1.0 / n


def _c2c(x: np.ndarray, dims: tuple[int, ...], mode: int, forward: bool) -> np.ndarray:
    """The unnormalized DFT (``forward``: exp(-i...)) over ``dims``, then scaled."""
    if x.size == 0 or not dims:
        out = x.astype(x.dtype, copy=True)
    elif forward:
        out = np.fft.fftn(x, axes=dims, norm="backward")
    else:
        out = np.fft.ifftn(x, axes=dims, norm="forward")
    s = _scale(mode, [x.shape[d] for d in dims])
    if s != 1.0:
        out = out * s
    return out.astype(x.dtype, copy=False)


class FftC2CBackward0(Function):
    name = "FftC2CBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...], mode: int, fwd: bool) -> np.ndarray:
        ctx.dims, ctx.mode, ctx.fwd = dims, mode, fwd
        return _c2c(a._data, dims, mode, fwd)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return FftC2CBackward0.apply(g, dims=ctx.dims, mode=ctx.mode, fwd=not ctx.fwd)


class FftR2CBackward0(Function):
    name = "FftR2CBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, dims: tuple[int, ...], mode: int, onesided: bool
    ) -> np.ndarray:
        ctx.dims, ctx.mode, ctx.onesided = dims, mode, onesided
        ctx.last = a._data.shape[dims[-1]]
        x = a._data.astype(dtypes.to_complex(a._data.dtype))
        out = _c2c(x, dims, mode, True)
        if onesided:
            keep = [slice(None)] * out.ndim
            keep[dims[-1]] = slice(0, ctx.last // 2 + 1)
            out = np.ascontiguousarray(out[tuple(keep)])
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        if ctx.onesided:
            g = ResizeBackward.apply(g, dims=(ctx.dims[-1],), sizes=(ctx.last,))
        full = FftC2CBackward0.apply(g, dims=ctx.dims, mode=ctx.mode, fwd=False)
        return real_part(full)


class FftC2RBackward0(Function):
    name = "FftC2RBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...], mode: int, last: int) -> np.ndarray:
        ctx.dims, ctx.mode = dims, mode
        x = a._data
        real = dtypes.to_real(x.dtype)
        if x.size == 0:
            shape = list(x.shape)
            shape[dims[-1]] = last
            return np.zeros(shape, real)
        if len(dims) > 1:
            x = np.fft.ifftn(x, axes=dims[:-1], norm="forward")
        out = np.fft.irfft(x, n=last, axis=dims[-1], norm="forward")
        sizes = [x.shape[d] for d in dims[:-1]] + [last]
        s = _scale(mode, sizes)
        if s != 1.0:
            out = out * s
        return out.astype(real, copy=False)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        gi = FftR2CBackward0.apply(g, dims=ctx.dims, mode=ctx.mode, onesided=True)
        d = ctx.dims[-1]
        double = g.shape[d] - gi.shape[d]
        if double > 0:
            w = np.ones(gi.shape[d], dtypes.to_real(gi.dtype))
            w[1 : 1 + double] = 2
            shape = [1] * gi.ndim
            shape[d] = w.size
            gi = WeighBackward.apply(gi, weight=w.reshape(shape))
        return gi


class WeighBackward(Function):
    """``a`` times a constant real array (the doubled bins of ``_fft_c2r``'s gradient)."""

    name = "MulBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, weight: np.ndarray) -> np.ndarray:
        ctx.weight = weight
        return (a._data * weight).astype(a._data.dtype, copy=False)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return WeighBackward.apply(g, weight=ctx.weight)


def _resize(x: np.ndarray, dims: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    keep = [slice(None)] * x.ndim
    shape = list(x.shape)
    for d, n in zip(dims, sizes):
        keep[d] = slice(0, min(n, x.shape[d]))
        shape[d] = n
    part = x[tuple(keep)]
    if tuple(shape) == part.shape:
        return np.ascontiguousarray(part)
    out = np.zeros(shape, x.dtype)
    out[tuple(slice(0, k) for k in part.shape)] = part
    return out


class ResizeBackward(Function):
    """torch's ``resize_fft_input``: each of ``dims`` trimmed or zero-padded at the end to
    its size in ``sizes``; its gradient is the resize back (trim what was padded, pad
    what was trimmed)."""

    name = "ConstantPadNdBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, a: Tensor, *, dims: tuple[int, ...], sizes: tuple[int, ...]
    ) -> np.ndarray:
        ctx.dims, ctx.orig = dims, tuple(a._data.shape[d] for d in dims)
        return _resize(a._data, dims, sizes)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ResizeBackward.apply(g, dims=ctx.dims, sizes=ctx.orig)


# -- argument handling, as SpectralOps.cpp -----------------------------------------------


def _wrap(dim: Any, ndim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer):
        raise BadArgumentsError(f"dim must be an int, got {type(dim).__name__}")
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if ndim == 0 or not lo <= dim <= hi:
        if ndim == 0:
            raise IndexOutOfRangeError(f"Dimension specified as {dim} but tensor has no dimensions")
        raise IndexOutOfRangeError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return int(dim) % ndim


def _check_n(n: int) -> None:
    if n < 1:
        raise BadArgumentsError(f"Invalid number of data points ({n}) specified")


def _promote(a: Tensor, require_complex: bool) -> Tensor:
    """torch's ``promote_tensor_fft``: integers to the default float, then complex."""
    dt = a._data.dtype
    if dt.kind in "biu":
        a = cast(a, dtypes.DEFAULT_FLOAT)
        dt = a._data.dtype
    if dt == dtypes.float16:
        raise BadArgumentsError("Unsupported dtype Half")
    if require_complex and dt.kind != "c":
        a = cast(a, dtypes.to_complex(dt))
    return a


def _resized(a: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    if all(a.shape[d] == n for d, n in zip(dims, sizes)):
        return a
    return ResizeBackward.apply(a, dims=tuple(dims), sizes=tuple(sizes))


def _one_dim(a: Tensor, n: Any, dim: Any) -> tuple[int, int | None]:
    d = _wrap(dim, a.ndim)
    if n is not None:
        n = int(n)
        _check_n(n)
    return d, n


def _fft_c2c(name: str, input: Any, n: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    a = as_tensor(input)
    d, n = _one_dim(a, n, dim)
    if a._data.dtype.kind != "c":
        return _fft_r2c(name, a, n, d, norm, forward, onesided=False)
    size = a.shape[d] if n is None else n
    _check_n(size)
    x = _resized(a, [d], [size])
    return FftC2CBackward0.apply(x, dims=(d,), mode=_norm_mode(norm, forward), fwd=forward)


def _fft_r2c(
    name: str, input: Any, n: Any, dim: Any, norm: Any, forward: bool, onesided: bool
) -> Tensor:
    a = as_tensor(input)
    if a._data.dtype.kind == "c":
        raise BadArgumentsError(
            f"{name} expects a real input tensor, but got {dtypes.type_name(a._data.dtype)}"
        )
    a = _promote(a, False)
    d, n = _one_dim(a, n, dim)
    size = a.shape[d] if n is None else n
    _check_n(size)
    x = _resized(a, [d], [size])
    out = FftR2CBackward0.apply(x, dims=(d,), mode=_norm_mode(norm, forward), onesided=onesided)
    return out if forward else conjugate(out)


def _fft_c2r(name: str, input: Any, n: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    a = _promote(as_tensor(input), True)
    d, n = _one_dim(a, n, dim)
    last = 2 * (a.shape[d] - 1) if n is None else n
    _check_n(last)
    if n is not None:
        a = _resized(a, [d], [last // 2 + 1])
    if forward:
        a = conjugate(a)
    return FftC2RBackward0.apply(a, dims=(d,), mode=_norm_mode(norm, forward), last=last)


def _shape_and_dims(a: Tensor, s: Any, dim: Any) -> tuple[list[int], list[int]]:
    """torch's ``canonicalize_fft_shape_and_dim_args``: the signal sizes and dims."""
    nd = a.ndim
    dims: list[int] | None = None
    if dim is not None:
        dl = [dim] if isinstance(dim, int) else list(dim)
        dims = [_wrap(x, nd) for x in dl]
        if len(set(dims)) != len(dims):
            raise BadArgumentsError("FFT dims must be unique")
    if s is not None:
        sl = [s] if isinstance(s, int) else [int(x) for x in s]
        if dims is not None and len(dims) != len(sl):
            raise BadArgumentsError("When given, dim and shape arguments must have the same length")
        if len(sl) > nd:
            raise BadArgumentsError(
                f"Got shape with {len(sl)} values but input tensor only has {nd} dimensions."
            )
        if dims is None:
            dims = list(range(nd - len(sl), nd))
        shape = [a.shape[dims[i]] if n == -1 else n for i, n in enumerate(sl)]
    elif dims is None:
        dims = list(range(nd))
        shape = list(a.shape)
    else:
        shape = [a.shape[d] for d in dims]
    for n in shape:
        _check_n(n)
    return shape, dims


def _fftn_c2c(input: Any, s: Any, dim: Any, norm: Any, forward: bool) -> Tensor:
    a = _promote(as_tensor(input), True)
    shape, dims = _shape_and_dims(a, s, dim)
    x = _resized(a, dims, shape)
    return FftC2CBackward0.apply(x, dims=tuple(dims), mode=_norm_mode(norm, forward), fwd=forward)


def _rfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    a = as_tensor(input)
    if a._data.dtype.kind == "c":
        raise BadArgumentsError(
            f"{name} expects a real-valued input tensor, but got {dtypes.type_name(a._data.dtype)}"
        )
    a = _promote(a, False)
    shape, dims = _shape_and_dims(a, s, dim)
    if not dims:
        raise BadArgumentsError(f"{name} must transform at least one axis")
    x = _resized(a, dims, shape)
    return FftR2CBackward0.apply(x, dims=tuple(dims), mode=_norm_mode(norm, True), onesided=True)


def _c2r_shape(name: str, a: Tensor, s: Any, dim: Any) -> tuple[list[int], list[int], int]:
    """torch's ``canonicalize_fft_c2r_shape_and_dim_args``: the last dim's output size."""
    shape, dims = _shape_and_dims(a, s, dim)
    if not dims:
        raise BadArgumentsError(f"{name} must transform at least one axis")
    given = None if s is None else ([s] if isinstance(s, int) else list(s))
    if given is None or given[-1] == -1:
        last = 2 * (a.shape[dims[-1]] - 1)
    else:
        last = shape[-1]
    _check_n(last)
    shape[-1] = last // 2 + 1
    return shape, dims, last


def _irfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    a = _promote(as_tensor(input), True)
    shape, dims, last = _c2r_shape(name, a, s, dim)
    x = _resized(a, dims, shape)
    return FftC2RBackward0.apply(x, dims=tuple(dims), mode=_norm_mode(norm, False), last=last)


def _hfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    a = _promote(as_tensor(input), True)
    shape, dims, last = _c2r_shape(name, a, s, dim)
    x = _resized(a, dims, shape)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = FftC2CBackward0.apply(x, dims=tuple(dims[:-1]), mode=mode, fwd=True)
    x = conjugate(x)
    return FftC2RBackward0.apply(x, dims=(dims[-1],), mode=mode, last=last)


def _ihfftn(name: str, input: Any, s: Any, dim: Any, norm: Any) -> Tensor:
    a = as_tensor(input)
    if a._data.dtype.kind == "c":
        raise BadArgumentsError(
            f"{name} expects a real-valued input tensor, but got {dtypes.type_name(a._data.dtype)}"
        )
    a = _promote(a, False)
    shape, dims = _shape_and_dims(a, s, dim)
    if not dims:
        raise BadArgumentsError(f"{name} must transform at least one axis")
    x = _resized(a, dims, shape)
    mode = _norm_mode(norm, False)
    out = conjugate(FftR2CBackward0.apply(x, dims=(dims[-1],), mode=mode, onesided=True))
    if len(dims) == 1:
        return out
    return FftC2CBackward0.apply(out, dims=tuple(dims[:-1]), mode=mode, fwd=False)


# -- estimates and samples -----------------------------------------------------------------


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The input with every size given (``n``, ``s``) at least as large, complex (x2) and
    a few intermediates: a generous bound from the largest of the numbers."""
    a = estimates.arg(args, kwargs, 0, "input")
    if not hasattr(a, "shape"):
        return None
    size = estimates.arg(args, kwargs, 1, "n")
    if size is None:
        size = kwargs.get("s")
    given = (
        [size] if isinstance(size, int) else list(size) if isinstance(size, list | tuple) else []
    )
    base = max(math.prod(a.shape), 1)
    grow = (
        math.prod(max(int(n), 1) for n in given if isinstance(n, int | np.integer)) if given else 1
    )
    return 8 * base * max(grow, 1)


def _samples_1d(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 6)),
        sample(S.rand(rng, 3, 5), n=8, dim=0, note="padded"),
        sample(S.rand(rng, 3, 7), n=4, norm="ortho", note="trimmed"),
        sample(S.rand(rng, 4, 5), dim=0, norm="forward"),
    ]


def _samples_nd(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 4, 5)),
        sample(S.rand(rng, 3, 4, 5), s=(3, 6), norm="ortho", note="sizes"),
        sample(S.rand(rng, 3, 4, 5), dim=(0, 2), norm="forward", note="dims"),
    ]


def _samples_2d(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 4, 5)),
        sample(S.rand(rng, 2, 4, 5), s=(3, 6), norm="ortho", note="sizes"),
        sample(S.rand(rng, 3, 4, 5), dim=(0, 2), norm="forward", note="dims"),
    ]


def _reg(samples: Any, name: str) -> Any:
    return register(
        name,
        samples=samples,
        method=False,
        torch=f"fft.{name.removeprefix('fft_')}",
        estimate=_estimate,
    )


@_reg(_samples_1d, "fft_fft")
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``fft.fft``: the discrete Fourier transform along ``dim`` (a real input made complex)."""
    return _fft_c2c("fft", input, n, dim, norm, True)


@_reg(_samples_1d, "fft_ifft")
def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``fft.ifft``: the inverse discrete Fourier transform along ``dim``."""
    return _fft_c2c("ifft", input, n, dim, norm, False)


@_reg(_samples_1d, "fft_rfft")
def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``fft.rfft``: the transform of a real signal, its ``n // 2 + 1`` nonnegative bins."""
    return _fft_r2c("rfft", input, n, dim, norm, True, onesided=True)


@_reg(_samples_1d, "fft_irfft")
def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``fft.irfft``: the real signal of a onesided spectrum (``n`` defaults to 2(m-1))."""
    return _fft_c2r("irfft", input, n, dim, norm, False)


@_reg(_samples_1d, "fft_hfft")
def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``fft.hfft``: the real transform of a Hermitian signal given by its first half."""
    return _fft_c2r("hfft", input, n, dim, norm, True)


@_reg(_samples_1d, "fft_ihfft")
def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """``fft.ihfft``: the inverse of ``hfft``: a real signal's onesided inverse transform."""
    return _fft_r2c("ihfft", input, n, dim, norm, False, onesided=True)


@_reg(_samples_nd, "fft_fftn")
def fftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """``fft.fftn``: the transform over ``dim`` (all dims by default)."""
    return _fftn_c2c(input, s, dim, norm, True)


@_reg(_samples_nd, "fft_ifftn")
def ifftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """``fft.ifftn``: the inverse transform over ``dim`` (all dims by default)."""
    return _fftn_c2c(input, s, dim, norm, False)


@_reg(_samples_nd, "fft_rfftn")
def rfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """``fft.rfftn``: the transform of a real signal, onesided in the last of ``dim``."""
    return _rfftn("rfftn", input, s, dim, norm)


@_reg(_samples_nd, "fft_irfftn")
def irfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """``fft.irfftn``: the real signal of a spectrum onesided in the last of ``dim``."""
    return _irfftn("irfftn", input, s, dim, norm)


@_reg(_samples_nd, "fft_hfftn")
def hfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """``fft.hfftn``: the real transform of a Hermitian signal (onesided last dim)."""
    return _hfftn("hfftn", input, s, dim, norm)


@_reg(_samples_nd, "fft_ihfftn")
def ihfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """``fft.ihfftn``: the inverse of ``hfftn`` for a real signal."""
    return _ihfftn("ihfftn", input, s, dim, norm)


@_reg(_samples_2d, "fft_fft2")
def fft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """``fft.fft2``: ``fftn`` over the last two dims."""
    return _fftn_c2c(input, s, dim, norm, True)


@_reg(_samples_2d, "fft_ifft2")
def ifft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """``fft.ifft2``: ``ifftn`` over the last two dims."""
    return _fftn_c2c(input, s, dim, norm, False)


@_reg(_samples_2d, "fft_rfft2")
def rfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """``fft.rfft2``: ``rfftn`` over the last two dims."""
    return _rfftn("rfft2", input, s, dim, norm)


@_reg(_samples_2d, "fft_irfft2")
def irfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """``fft.irfft2``: ``irfftn`` over the last two dims."""
    return _irfftn("irfft2", input, s, dim, norm)


@_reg(_samples_2d, "fft_hfft2")
def hfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """``fft.hfft2``: ``hfftn`` over the last two dims."""
    return _hfftn("hfft2", input, s, dim, norm)


@_reg(_samples_2d, "fft_ihfft2")
def ihfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """``fft.ihfft2``: ``ihfftn`` over the last two dims."""
    return _ihfftn("ihfft2", input, s, dim, norm)


# -- stft ---------------------------------------------------------------------------------


class UnfoldBackward0(Function):
    """Frames of ``size`` samples every ``step`` along the last dim (``Tensor.unfold``'s
    values, copied); its gradient adds each frame back where it came from."""

    name = "UnfoldBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, size: int, step: int) -> np.ndarray:
        ctx.size, ctx.step, ctx.length = size, step, a._data.shape[-1]
        view = np.lib.stride_tricks.sliding_window_view(a._data, size, axis=-1)
        return np.ascontiguousarray(view[..., ::step, :])

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return FramesSumBackward.apply(g, step=ctx.step, length=ctx.length)


class FramesSumBackward(Function):
    """The adjoint of ``UnfoldBackward0``: frames (..., k, size) added into a signal."""

    name = "UnfoldBackwardBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, step: int, length: int) -> np.ndarray:
        ctx.step, ctx.size = step, g._data.shape[-1]
        frames = g._data
        out = np.zeros(frames.shape[:-2] + (length,), frames.dtype)
        for k in interrupt.checked(range(frames.shape[-2])):
            out[..., k * step : k * step + ctx.size] += frames[..., k, :]
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return UnfoldBackward0.apply(g, size=ctx.size, step=ctx.step)


class TransposeBackward1(Function):
    """The last two dims swapped (stft's in-place ``transpose_``), a copy."""

    name = "TransposeBackward1"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.ascontiguousarray(np.swapaxes(a._data, -1, -2))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return TransposeBackward1.apply(g)


class SqueezeBackward4(Function):
    """The leading size-1 dim dropped (stft of a 1-D signal)."""

    name = "SqueezeBackward4"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return a._data[0].copy()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return UnsqueezeFirst.apply(g)


class UnsqueezeFirst(Function):
    name = "UnsqueezeBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return a._data[None].copy()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return SqueezeBackward4.apply(g)


NO_WINDOW_WARNING = (
    "A window was not provided. A rectangular window will be applied,which is known to "
    "cause spectral leakage. Other windows such as torch.hann_window or torch.hamming_window "
    "are recommended to reduce spectral leakage.To suppress this warning and use a "
    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)
REAL_RESULT_WARNING = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
    "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
    "Note: you can still call torch.view_as_real on the complex output to recover the old "
    "return format."
)

_warned: list[bool] = []


def _stft_samples(rng: np.random.Generator) -> list[Any]:
    # each with a window: torch warns about a missing one once per process
    return [
        sample(S.rand(rng, 20), 8, window=S.positive(rng, 8), return_complex=True),
        sample(
            S.rand(rng, 2, 16),
            6,
            3,
            window=S.positive(rng, 6),
            center=False,
            return_complex=True,
            note="batch",
        ),
        sample(
            S.rand(rng, 18),
            8,
            win_length=6,
            window=S.positive(rng, 6),
            normalized=True,
            return_complex=False,
            note="win_length",
        ),
    ]


def _stft_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Frames x n_fft, complex, with the padded signal and the windowed frames."""
    a = estimates.arg(args, kwargs, 0, "input")
    n_fft = estimates.arg(args, kwargs, 1, "n_fft")
    if not hasattr(a, "shape") or not isinstance(n_fft, int) or not a.shape:
        return None
    hop = estimates.arg(args, kwargs, 2, "hop_length")
    hop = max(n_fft // 4, 1) if not isinstance(hop, int) else max(hop, 1)
    length = a.shape[-1] + 2 * (n_fft // 2)
    frames = max(length - n_fft, 0) // hop + 1
    batch = math.prod(a.shape[:-1])
    return 4 * batch * (frames * max(n_fft, 1) + length)


@register(samples=_stft_samples, estimate=_stft_estimate)
def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
) -> Tensor:
    """Short-time Fourier transform of a real signal: windowed frames of ``n_fft``
    samples every ``hop_length``, each ``rfft``-ed (torch.stft's frequency x frame)."""
    a = as_tensor(input)
    if a._data.dtype.kind == "c":
        raise BadArgumentsError("stft of a complex input is not supported by this engine")
    if return_complex is None:
        raise BadArgumentsError(
            "stft requires the return_complex parameter be given for real inputs, and will "
            "further require that return_complex=True in a future PyTorch release."
        )
    if a.ndim not in (1, 2):
        raise BadArgumentsError(f"stft: expected a 1D or 2D tensor, but got {a.ndim}D")
    a = _promote(a, False)
    one_d = a.ndim == 1
    if window is None and not _warned:  # once per process, as torch's TORCH_WARN_ONCE
        _warned.append(True)
        warnings.warn(NO_WINDOW_WARNING, UserWarning, stacklevel=2)
    if center:
        pad = n_fft // 2
        shape = a.shape
        a = OPS["pad"].fn(a.reshape((1,) * (3 - a.ndim) + shape), [pad, pad], pad_mode)
        a = a.reshape(a.shape[3 - len(shape) :])
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    length = a.shape[-1]
    if not 0 < n_fft <= length:
        raise BadArgumentsError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise BadArgumentsError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise BadArgumentsError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    frames = UnfoldBackward0.apply(a, size=n_fft, step=hop)  # (..., frames, n_fft)
    if window is not None:
        w = as_tensor(window)
        if w.ndim != 1 or w.shape[0] != win:
            raise BadArgumentsError(
                "stft: expected a 1D window tensor of size equal to win_length="
                f"{win}, but got window with size {list(w.shape)}"
            )
        if win < n_fft:
            left = (n_fft - win) // 2
            w = OPS["constant_pad_nd"].fn(w, [left, n_fft - win - left])
        frames = frames * w
    elif win < n_fft:
        left = (n_fft - win) // 2
        mask = np.zeros(n_fft, frames._data.dtype)
        mask[left : left + win] = 1
        frames = frames * Tensor._make(mask)
    side = True if onesided is None else bool(onesided)
    mode = BY_ROOT_N if normalized else NONE
    if frames.ndim == 2:
        frames = frames.reshape((1, *frames.shape))
    out = FftR2CBackward0.apply(frames, dims=(2,), mode=mode, onesided=side)
    out = TransposeBackward1.apply(out)  # (batch, bins, frames)
    if one_d:
        out = SqueezeBackward4.apply(out)
    if return_complex:
        return out
    warnings.warn(REAL_RESULT_WARNING, UserWarning, stacklevel=2)
    return ViewAsRealBackward0.apply(out)
