"""Padding (constant, reflect, replicate, circular) and resampling (interpolate:
nearest, nearest-exact, linear, bilinear, trilinear).

Constant padding is a copy into a larger (or, for negative pads, a cropped)
array; its backward is the opposite padding of the gradient. Every other mode
here is separable: along each spatial dim the output is either a gather of input
positions (reflect, replicate, circular, nearest) or a fixed linear combination of
them (linear interpolation). Each dim is one matrix ``A`` (out × in): the forward
gathers (exact, inf-safe) or multiplies, the backward multiplies the gradient by
``Aᵀ``, and that node's backward by ``A`` again, so create_graph works.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dual import LINEAR
from ..errors import BadArgumentsError, ShapeMismatchError
from ..function import Function
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._tie import tie
from ._util import as_tensor
from .conv import ArgumentValueError, UnsupportedError, refuse_dtype, sizes
from .interp_weights import (
    Taps,
    antialias_taps,
    apply_taps,
    area_taps,
    bicubic_taps,
    linear_taps,
    taps_matrix,
)
from .shape import squeeze, unsqueeze

# -- separable maps ------------------------------------------------------------------------------


def _apply_maps(x: np.ndarray, maps: tuple[np.ndarray, ...]) -> np.ndarray:
    """Multiply the trailing ``len(maps)`` axes of ``x`` by their matrices."""
    n = len(maps)
    for k, a in enumerate(maps):
        axis = x.ndim - n + k
        if axis == x.ndim - 1:
            x = np.matmul(x, a.T)
        else:
            x = np.moveaxis(np.tensordot(a, x, axes=([1], [axis])), 0, axis)
    return np.ascontiguousarray(x)


def _take(x: np.ndarray, index: tuple[np.ndarray, ...]) -> np.ndarray:
    """Gather the trailing axes of ``x`` at per-axis positions (one fancy index)."""
    n = len(index)
    key: tuple[Any, ...] = (Ellipsis, *np.ix_(*index))
    return x[key] if n else x


class _Map(Function):
    """``x`` mapped by one matrix per trailing axis. With ``index`` (a gather), the
    forward reads positions instead of multiplying."""

    transposed: type[Function]
    jvp = LINEAR  # pads and interpolations are linear maps of the input
    reads_input = False  # PyTorch's backward op reads ``self``: its gradient ties to x

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, *, maps: tuple[np.ndarray, ...], index: Any = None, taps: Any = None
    ) -> np.ndarray:
        ctx.maps = maps
        if getattr(getattr(ctx, "fn", None), "reads_input", False):
            ctx.save_for_backward(x)
        if index is not None:
            return _take(x._data, index)
        if taps is not None:  # the positions the kernel reads: an inf stays in its window
            return apply_taps(x._data, taps)
        return _apply_maps(x._data, tuple(a.astype(x.dtype, copy=False) for a in maps))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        out: Tensor = ctx.fn.transposed.apply(g, maps=tuple(a.T for a in ctx.maps))
        if ctx.fn.reads_input:
            (x,) = ctx.saved_tensors
            return tie(out, g, x, name=ctx.fn.transposed.name)
        return out


def _map_pair(name: str) -> type[_Map]:
    """The forward map named as PyTorch names the op, and its transpose (the node a
    create_graph backward records), each the other's backward."""
    reads = name.startswith(("Reflection", "Replication", "AdaptiveAvgPool"))
    fwd: Any = type(name, (_Map,), {"name": name, "reads_input": reads})
    back_name = name.replace("Backward0", "BackwardBackward0")
    bwd: Any = type(back_name, (_Map,), {"name": back_name})
    fwd.transposed, bwd.transposed = bwd, fwd
    return fwd  # type: ignore[no-any-return]


def _gather_matrix(index: np.ndarray, size: int) -> np.ndarray:
    """One-hot rows: output j reads input ``index[j]``."""
    out = np.zeros((len(index), size))
    out[np.arange(len(index)), index] = 1.0
    return out


_MAPS: dict[str, type[_Map]] = {}


def _map(name: str) -> type[_Map]:
    if name not in _MAPS:
        _MAPS[name] = _map_pair(name)
    return _MAPS[name]


for _n in (1, 2, 3):
    _map(f"ReflectionPad{_n}DBackward0")
    _map(f"ReplicationPad{_n}DBackward0")
    _map(f"UpsampleNearest{_n}DBackward0")
    _map(f"UpsampleNearestExact{_n}DBackward0")
_map("CopySlices")
_map("UpsampleLinear1DBackward0")
_map("UpsampleBilinear2DBackward0")
_map("UpsampleTrilinear3DBackward0")
_map("UpsampleBicubic2DBackward0")
_map("UpsampleBilinear2DAaBackward0")
_map("UpsampleBicubic2DAaBackward0")
for _n in (2, 3):
    _map(f"AdaptiveAvgPool{_n}DBackward0")


def _gather(name: str, x: Tensor, index: tuple[np.ndarray, ...]) -> Tensor:
    sizes_in = x.shape[len(x.shape) - len(index) :]
    maps = tuple(_gather_matrix(i, n) for i, n in zip(index, sizes_in))
    return _MAPS[name].apply(x, maps=maps, index=index)


def adaptive_average(x: Tensor, out: tuple[int, ...]) -> Tensor:
    """Adaptive average pooling of the trailing ``len(out)`` dims (PyTorch's windows),
    one separable map; 1-d runs as 2-d on an unsqueezed input, as PyTorch does."""
    if len(out) == 1:
        return squeeze(adaptive_average(unsqueeze(x, -2), (1, out[0])), -2)
    spatial = x.shape[x.ndim - len(out) :]
    taps = tuple(area_taps(i, o) for i, o in zip(spatial, out))
    maps = tuple(taps_matrix(t, i).astype(x.dtype) for t, i in zip(taps, spatial))
    return _MAPS[f"AdaptiveAvgPool{len(out)}DBackward0"].apply(x, maps=maps, taps=taps)


# -- pad ----------------------------------------------------------------------------------------


def _constant_pad(xd: np.ndarray, pads: tuple[tuple[int, int], ...], value: Any) -> np.ndarray:
    """``xd`` with (before, after) added to its trailing dims; negative amounts crop."""
    n = len(pads)
    lead = xd.shape[: xd.ndim - n]
    shape = lead + tuple(s + a + b for s, (a, b) in zip(xd.shape[xd.ndim - n :], pads))
    out = np.full(shape, value, dtype=xd.dtype)
    src = tuple(slice(max(-a, 0), s - max(-b, 0)) for s, (a, b) in zip(xd.shape[-n:], pads))
    dst = tuple(slice(max(a, 0), o - max(b, 0)) for o, (a, b) in zip(shape[-n:], pads))
    if n and all(sl.stop > sl.start for sl in src):
        key_out: tuple[Any, ...] = (Ellipsis, *dst)
        key_in: tuple[Any, ...] = (Ellipsis, *src)
        out[key_out] = xd[key_in]
    elif not n:
        out[...] = xd
    return out


class ConstantPadNdBackward0(Function):
    """Constant padding; the backward pads the gradient by the opposite amounts."""

    name = "ConstantPadNdBackward0"
    jvp = LINEAR
    jvp_params = {"value": 0}

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, *, pads: tuple[tuple[int, int], ...], value: Any
    ) -> np.ndarray:
        ctx.pads = pads
        return _constant_pad(x._data, pads, value)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ConstantPadNdBackward0.apply(g, pads=tuple((-a, -b) for a, b in ctx.pads), value=0)


_NON_CONSTANT_MESSAGE = (
    "Padding size {pad} is not supported for {dim}D input tensor.\n"
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def _pad_pairs(pad: Any, ndim: int) -> tuple[tuple[int, int], ...]:
    """torch's pad tuple (last dim first) as (before, after) per trailing dim, in order."""
    if not isinstance(pad, (list, tuple)) or any(
        isinstance(p, bool) or not isinstance(p, (int, np.integer)) for p in pad
    ):
        raise BadArgumentsError(f"pad(): argument 'pad' must be tuple of ints, not {pad!r}")
    if len(pad) % 2:
        raise ShapeMismatchError("Padding length must be divisible by 2")
    if len(pad) // 2 > ndim:
        raise ShapeMismatchError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {ndim}"
        )
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]
    return tuple(reversed(pairs))


def _core(size: int, lo: int, hi: int) -> tuple[int, int]:
    """Where the kept part of a dim starts and its length: negative pads crop first, and
    reflect and circular padding read that cropped core, as PyTorch's kernels do."""
    start = max(-lo, 0)
    return start, size - start - max(-hi, 0)


def _reflect_index(size: int, lo: int, hi: int) -> np.ndarray:
    j = np.arange(-lo, size + hi)
    j = np.abs(j)
    return np.where(j >= size, 2 * (size - 1) - j, j)


def _pad_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), (1, 2), note="constant 1-d"),
        sample(r(rng, 2, 3, 4), (1, 0, 2, 1), value=1.5, note="constant 2 dims, value"),
        sample(r(rng, 2, 5), (-1, 2), note="constant negative"),
        sample(r(rng, 2, 3, 4), (1, -2, -1, 1, 1, 0), note="constant 3 dims, negative"),
        sample(r(rng, 3), (), note="constant empty pad"),
        sample(r(rng, 1, 2, 5), (2, 3), mode="reflect", note="reflect 1-d"),
        sample(r(rng, 2, 4, 5), (1, 2, 3, 0), mode="reflect", note="reflect 2-d unbatched"),
        sample(r(rng, 1, 2, 4, 5), (1, 2, 3, 1), mode="reflect", note="reflect 2-d"),
        sample(r(rng, 1, 1, 3, 3, 4), (1, 1, 2, 0, 1, 2), mode="reflect", note="reflect 3-d"),
        sample(r(rng, 1, 2, 5), (-1, 2), mode="reflect", note="reflect negative"),
        sample(r(rng, 1, 2, 4), (2, 3), mode="replicate", note="replicate 1-d"),
        sample(r(rng, 1, 2, 4, 3), (1, 2, 3, 0), mode="replicate", note="replicate 2-d"),
        sample(r(rng, 2, 2, 3, 3), (1, 1, 2, 0, 1, 2), mode="replicate", note="replicate 3-d"),
        sample(r(rng, 1, 2, 5), (2, 3), mode="circular", note="circular 1-d"),
        sample(r(rng, 2, 4, 5), (1, 2, 4, 1), mode="circular", note="circular 2-d"),
        sample(r(rng, 1, 2, 5), (-1, 2), mode="circular", note="circular negative"),
        sample(r(rng, 0, 2, 3), (1, 1), note="constant empty"),
    ]


def _pad_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("input")
    pad = args[1] if len(args) > 1 else kwargs.get("pad")
    shape = getattr(x, "shape", None)
    if shape is None or not isinstance(pad, (list, tuple)):
        return None
    try:
        total = list(shape)
        for i in range(len(pad) // 2):
            total[-1 - i] += max(int(pad[2 * i]), 0) + max(int(pad[2 * i + 1]), 0)
    except (TypeError, ValueError, IndexError):
        return None
    return math.prod(total)


@register(samples=_pad_samples, method=False, torch="nn.functional.pad", estimate=_pad_estimate)
def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims (``pad`` lists the last dim's before/after first); mode
    constant (negative pads crop), reflect, replicate or circular."""
    x = as_tensor(input)
    pairs = _pad_pairs(pad, x.ndim)
    if mode == "constant":
        for s, (a, b) in zip(x.shape[x.ndim - len(pairs) :], pairs):
            if s + a + b < 0:
                raise ShapeMismatchError("narrow(): length must be non-negative.")
        return ConstantPadNdBackward0.apply(x, pads=pairs, value=0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise UnsupportedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ShapeMismatchError(f'Padding mode "{mode}" doesn\'t take in value argument')
    n = len(pairs)
    if n not in (1, 2, 3) or x.ndim not in (n + 1, n + 2):
        raise UnsupportedError(_NON_CONSTANT_MESSAGE.format(pad=2 * n, dim=x.ndim))
    spatial = x.shape[x.ndim - n :]
    index = []
    if mode == "reflect":
        for k, (s, (a, b)) in enumerate(zip(spatial, pairs)):
            if a >= s or b >= s:
                dim = x.ndim - n + k
                raise ShapeMismatchError(
                    f"Argument #{2 + 2 * (n - k)}: Padding size should be less than the "
                    f"corresponding input dimension, but got: padding ({a}, {b}) at dimension "
                    f"{dim} of input {sizes(x.shape)}"
                )
            start, core = _core(s, a, b)
            if max(a, 0) >= core or max(b, 0) >= core:
                # PyTorch checks against the uncropped size and then reads past the
                # cropped core (uninitialized values): refused here instead
                raise ShapeMismatchError(
                    f"Padding size should be less than the cropped input dimension, but got: "
                    f"padding ({a}, {b}) at dimension {x.ndim - n + k} of input {sizes(x.shape)}"
                )
            index.append(start + _reflect_index(core, max(a, 0), max(b, 0)))
        refuse_dtype(f"reflection_pad{n}d", x.dtype, "fiu")
        name = f"ReflectionPad{n}DBackward0"
    elif mode == "replicate":
        if (
            any(s == 0 for s in x.shape[-n - 1 :])
            if x.ndim == n + 2
            else any(s == 0 for s in x.shape)
        ):
            raise ShapeMismatchError(
                f"Expected {n + 1}D or {n + 2}D (batch mode) tensor with possibly 0 batch size "
                f"and other non-zero dimensions for input, but got: {sizes(x.shape)}"
            )
        for s, (a, b) in zip(spatial, pairs):
            index.append(np.clip(np.arange(-a, s + b), 0, s - 1))
        refuse_dtype(f"replication_pad{n}d", x.dtype, "fiu")
        name = f"ReplicationPad{n}DBackward0"
    else:
        for s, (a, b) in zip(spatial, pairs):
            if a > s or b > s:
                raise ShapeMismatchError("Padding value causes wrapping around more than once.")
            start, core = _core(s, a, b)
            if max(a, 0) > core or max(b, 0) > core:  # PyTorch reads uninitialized memory
                raise ShapeMismatchError(
                    "Padding value causes wrapping around more than once (of the cropped input)."
                )
            index.append(start + np.arange(-max(a, 0), core + max(b, 0)) % max(core, 1))
        name = "CopySlices"
    return _gather(name, x, tuple(index))


# -- interpolate --------------------------------------------------------------------------------

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def _scale_value(scale: float | None, i: int, o: int, dtype: Any) -> Any:
    """PyTorch's compute_scales_value: 1/scale when a scale was given, else in/out."""
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(i) / dtype(o)


def _nearest_index(i: int, o: int, scale: float | None, exact: bool) -> np.ndarray:
    dst = np.arange(o, dtype=np.float32)
    if not exact:
        if o == i:
            return np.arange(o)
        if o == 2 * i:
            return np.arange(o) >> 1
    s = _scale_value(scale, i, o, np.float32)
    src = np.floor((dst + np.float32(0.5)) * s if exact else dst * s).astype(np.int64)
    return np.minimum(src, i - 1)


def _linear_taps(i: int, o: int, scale: float | None, align_corners: bool, dtype: np.dtype) -> Taps:
    t = dtype.type
    dst = np.arange(o).astype(dtype)
    if align_corners:
        s = t(i - 1) / t(o - 1) if o > 1 else t(0)
        src = s * dst
    else:
        s = _scale_value(scale, i, o, t)
        src = np.maximum(s * (dst + t(0.5)) - t(0.5), t(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), i - 1)
    lam1 = np.clip(src - i0.astype(dtype), 0, 1).astype(dtype)
    i1 = i0 + (i0 < i - 1)
    return linear_taps(i0, i1, lam1)


def _interp_sizes(
    x: Tensor, n: int, size: Any, scale_factor: Any, recompute: Any
) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    spatial = x.shape[2:]
    if size is not None and scale_factor is not None:
        raise ArgumentValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != n:
                raise ArgumentValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(spatial)} and output size of "
                    f"{tuple(size)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format."
                )
            out = tuple(int(v) for v in size)
        else:
            out = (int(size),) * n
        return out, (None,) * n
    if scale_factor is None:
        raise ArgumentValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != n:
            raise ArgumentValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {list(spatial)} and scale_factor of shape "
                f"{tuple(scale_factor)}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                "format and scale_factor in (s1, s2, ...,sK) format."
            )
        scales = tuple(float(v) for v in scale_factor)
    else:
        scales = (float(scale_factor),) * n
    out = tuple(math.floor(float(i) * s) for i, s in zip(spatial, scales))
    return out, ((None,) * n if recompute else scales)


def _interpolate_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 4), scale_factor=2, note="nearest 1-d x2"),
        sample(r(rng, 1, 2, 5), size=7, note="nearest 1-d size"),
        sample(r(rng, 1, 2, 4, 5), size=(3, 8), note="nearest 2-d size"),
        sample(r(rng, 1, 2, 3, 4), scale_factor=(1.5, 2.5), note="nearest 2-d scale"),
        sample(r(rng, 1, 1, 2, 3, 2), scale_factor=2, note="nearest 3-d"),
        sample(r(rng, 1, 2, 5), size=8, mode="nearest-exact", note="nearest-exact"),
        sample(r(rng, 2, 3, 4), scale_factor=2, mode="linear", note="linear x2"),
        sample(r(rng, 1, 2, 5), size=3, mode="linear", note="linear down"),
        sample(
            r(rng, 1, 2, 5), size=8, mode="linear", align_corners=True, note="linear align_corners"
        ),
        sample(r(rng, 1, 2, 3, 4), size=(5, 7), mode="bilinear", note="bilinear size"),
        sample(
            r(rng, 1, 2, 3, 4),
            scale_factor=1.7,
            mode="bilinear",
            align_corners=True,
            note="bilinear align_corners",
        ),
        sample(r(rng, 1, 2, 3, 4), scale_factor=(2.5, 1.5), mode="bilinear", note="bilinear scale"),
        sample(
            r(rng, 1, 2, 3, 4),
            scale_factor=1.7,
            mode="bilinear",
            recompute_scale_factor=True,
            note="bilinear recompute",
        ),
        sample(r(rng, 1, 1, 2, 3, 2), size=(3, 4, 4), mode="trilinear", note="trilinear"),
        sample(r(rng, 0, 2, 3), scale_factor=2, mode="linear", note="empty batch"),
        sample(r(rng, 1, 2, 4, 5), size=(6, 3), mode="bicubic", note="bicubic"),
        sample(
            r(rng, 1, 2, 3, 4),
            scale_factor=1.5,
            mode="bicubic",
            align_corners=True,
            note="bicubic align_corners",
        ),
        sample(r(rng, 1, 2, 7), size=3, mode="area", note="area 1-d"),
        sample(r(rng, 1, 2, 7, 5), size=(3, 4), mode="area", note="area 2-d"),
        sample(r(rng, 1, 1, 4, 5, 3), size=(2, 3, 2), mode="area", note="area 3-d"),
        sample(r(rng, 1, 2, 8, 7), size=(3, 4), mode="bilinear", antialias=True, note="antialias"),
        sample(
            r(rng, 1, 2, 8, 7), size=(3, 9), mode="bicubic", antialias=True, note="antialias cubic"
        ),
    ]


def _interpolate_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    names = ("input", "size", "scale_factor")
    bound = dict(zip(names, args)) | kwargs
    shape = getattr(bound.get("input"), "shape", None)
    if shape is None or len(shape) < 3:
        return None
    n = len(shape) - 2
    size, scale = bound.get("size"), bound.get("scale_factor")
    try:
        if size is not None:
            out = list(size) if isinstance(size, (list, tuple)) else [size] * n
        elif scale is not None:
            sc = list(scale) if isinstance(scale, (list, tuple)) else [scale] * n
            out = [math.floor(float(i) * float(s)) for i, s in zip(shape[2:], sc)]
        else:
            return None
        return shape[0] * shape[1] * math.prod(max(int(o), 0) for o in out)
    except (TypeError, ValueError, OverflowError):
        return None


@register(
    samples=_interpolate_samples,
    method=False,
    torch="nn.functional.interpolate",
    estimate=_interpolate_estimate,
    sizes_one_by_one=False,  # ``size`` is an int or a sequence, each with its own meaning
)
def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resample the spatial dims of ``(N, C, ...)`` to ``size`` or by ``scale_factor``:
    nearest, nearest-exact, area, linear (3-d), bilinear and bicubic (4-d, optionally
    antialiased), trilinear (5-d)."""
    x = as_tensor(input)
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ArgumentValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ArgumentValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )
    n = x.ndim - 2
    if x.ndim not in (3, 4, 5) or mode not in _MODES:
        raise UnsupportedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
            "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})"
        )
    needs = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}
    if mode in needs and x.ndim != needs[mode]:
        raise UnsupportedError(f"Got {x.ndim}D input, but {mode} mode needs {needs[mode]}D input")
    out, scales = _interp_sizes(x, n, size, scale_factor, recompute_scale_factor)
    spatial = x.shape[2:]
    if any(o <= 0 for o in out) or any(i <= 0 for i in spatial):
        names = ("D", "H", "W")[3 - n :]
        raise ShapeMismatchError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{a}: {i}" for a, i in zip(names, spatial))
            + (") and output (" if n == 1 else ") output (")
            + ", ".join(f"{a}: {o}" for a, o in zip(names, out))
            + ")"
        )
    if n == 2:
        kernel = "upsample_" + mode.replace("-", "_") + "2d_channels_last"
    else:
        kernel = "compute_indices_weights_" + ("nearest" if "nearest" in mode else "linear")
    refuse_dtype(kernel, x.dtype)
    if mode in ("nearest", "nearest-exact"):
        exact = mode == "nearest-exact"
        index = tuple(_nearest_index(i, o, s, exact) for i, o, s in zip(spatial, out, scales))
        kind = "NearestExact" if exact else "Nearest"
        return _gather(f"Upsample{kind}{n}DBackward0", x, index)
    corners = bool(align_corners)
    dims = list(zip(spatial, out, scales))
    if mode == "area":
        return adaptive_average(x, out)
    if antialias:
        cubic = mode == "bicubic"
        taps = tuple(antialias_taps(i, o, s, corners, cubic) for i, o, s in dims)
        name = "UpsampleBicubic2DAaBackward0" if cubic else "UpsampleBilinear2DAaBackward0"
    elif mode == "bicubic":
        taps = tuple(bicubic_taps(i, o, s, corners) for i, o, s in dims)
        name = "UpsampleBicubic2DBackward0"
    else:
        taps = tuple(_linear_taps(i, o, s, corners, x.dtype) for i, o, s in dims)
        name = {1: "UpsampleLinear1DBackward0", 2: "UpsampleBilinear2DBackward0"}.get(
            n, "UpsampleTrilinear3DBackward0"
        )
    maps = tuple(taps_matrix(t, i).astype(x.dtype) for t, (i, _, _) in zip(taps, dims))
    return _MAPS[name].apply(x, maps=maps, taps=taps)
