"""``grid_sample`` and the aten ops under it (``grid_sampler``, ``grid_sampler_2d``,
``grid_sampler_3d``): the input sampled at normalised grid coordinates, bilinear
(trilinear), nearest or bicubic, with zeros/border/reflection padding.

Written as a composite named as PyTorch's node (``GridSampler2DBackward0``,
``GridSampler3DBackward0``): the integer corners are found in numpy, the weights are
engine ops of the grid, so the gradient reaches both input and grid. Clipping and
reflection of the coordinates are piecewise linear; each is applied as
``coord·slope + offset`` with the slope (0 or ±1) PyTorch's ``*_set_grad`` helpers give."""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np

from ..errors import BadArgumentsError, ShapeMismatchError
from ..registry import OPS, register, sample
from ..tensor import Tensor
from ._composite import ArgumentValueError, composite
from ._util import as_tensor

MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}
_A = -0.75  # the cubic convolution coefficient PyTorch uses


def _op(name: str) -> Any:
    return OPS[name].fn


def _reflect(v: np.ndarray, lo2: int, hi2: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's ``reflect_coordinates_set_grad`` over ``[lo2/2, hi2/2]``: the value and
    its slope (±1)."""
    if lo2 == hi2:
        return np.zeros_like(v), np.zeros_like(v)
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    d = v - lo
    sign = np.where(d < 0, -1.0, 1.0)
    d = np.abs(d)
    extra = np.fmod(d, span)
    flips = np.floor(d / span)
    even = np.fmod(flips, 2) == 0
    out = np.where(even, extra + lo, span - extra + lo)
    slope = np.where(even, sign, -sign)
    return out, slope


def _clip(v: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's ``clip_coordinates_set_grad``: slope 0 at and beyond the edges."""
    hi = size - 1
    out = np.minimum(hi, np.maximum(v, 0))
    slope = np.where((v <= 0) | (v >= hi), 0.0, 1.0)
    return out, slope


def _pad_coords(v: np.ndarray, size: int, padding: int, align: bool) -> tuple[Any, Any]:
    """Source coordinate after padding, with its slope (None: unchanged)."""
    if padding == 1:
        return _clip(v, size)
    if padding == 2:
        if align:
            r, s1 = _reflect(v, 0, 2 * (size - 1))
        else:
            r, s1 = _reflect(v, -1, 2 * size - 1)
        c, s2 = _clip(r, size)
        return c, s1 * s2
    return v, None


def _affine(t: Tensor, value: np.ndarray, slope: Any) -> Tensor:
    """A tensor equal to ``value`` whose derivative in ``t`` is ``slope``."""
    if slope is None:
        return t
    dt = t.dtype
    s = Tensor._make(slope.astype(dt))
    return t * s + Tensor._make((value - t._data * slope).astype(dt))


def _cubic(t: Tensor) -> list[Tensor]:
    """The four cubic-convolution weights at offset ``t`` in [0, 1)."""

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _zero_link(flat: Tensor, v: Tensor) -> Tensor:
    """Exact zeros (n, 1, q) that depend on the grid and the input: nearest sampling's
    grid gradient is zero, yet PyTorch's comes from a backward node over input and grid,
    so under ``create_graph`` it requires grad; this term gives ours the same links."""
    dt = v.dtype
    fin = Tensor._make(np.isfinite(v._data))
    safe = _op("where")(fin, v, 0.0)
    first = _op("reshape")(flat, (-1,))[:1] if flat._data.size else Tensor._make(np.ones(1, dt))
    first = _op("where")(Tensor._make(np.isfinite(first._data)), first, 0.0)
    never = Tensor._make(np.zeros(v.shape, dtype=bool))
    return _op("unsqueeze")(_op("where")(never, safe * safe * first, 0.0), 1)


def _body(x: Tensor, grid: Tensor, *, mode: int, padding: int, align: bool) -> Tensor:
    n, c = x.shape[0], x.shape[1]
    sizes = x.shape[2:]
    nd = len(sizes)
    out_sp = grid.shape[1:-1]
    q = math.prod(out_sp)
    flat = _op("reshape")(x, (n, c, math.prod(sizes)))
    g = _op("reshape")(grid, (n, q, nd))
    coords = []  # per spatial dim (D, H, W order), unnormalised: tensor (n, q)
    for d in range(nd):
        size = sizes[d]
        v = _op("select")(g, 2, nd - 1 - d)
        v = (v + 1) * ((size - 1) / 2) if align else ((v + 1) * size - 1) / 2
        coords.append((v, size))
    dt = x.dtype

    def take(index: list[np.ndarray]) -> Tensor:
        """Input values at integer corners (n, c, q), zero out of bounds."""
        inside = np.ones((n, q), dtype=bool)
        lin = np.zeros((n, q), dtype=np.int64)
        for (_, size), i in zip(coords, index):
            inside &= (i >= 0) & (i < size)
            lin = lin * size + np.clip(i, 0, size - 1)
        gathered = _op("gather")(
            flat, 2, Tensor._make(np.ascontiguousarray(np.broadcast_to(lin[:, None], (n, c, q))))
        )
        if inside.all():
            return gathered
        return gathered * Tensor._make(inside[:, None].astype(dt))

    if mode == 2:
        base, ts = [], []
        for v, _size in coords:
            f = np.floor(v._data)
            base.append(f.astype(np.int64))
            ts.append(_cubic(v - Tensor._make(f.astype(dt))))
        total: Tensor | None = None
        for taps in itertools.product(range(4), repeat=nd):
            index = []
            for (_, size), b, k in zip(coords, base, taps):
                tap = (b - 1 + k).astype(dt)
                tap, _s = _pad_coords(tap, size, padding, align)
                index.append(np.trunc(tap).astype(np.int64) if padding else tap.astype(np.int64))
            wt = ts[0][taps[0]]
            for d in range(1, nd):
                wt = wt * ts[d][taps[d]]
            term = take(index) * _op("unsqueeze")(wt, 1)
            total = term if total is None else total + term
        assert total is not None
        return _op("reshape")(total, (n, c, *out_sp))

    padded = []
    for v, size in coords:
        value, slope = _pad_coords(v._data, size, padding, align)
        padded.append(_affine(v, value, slope))
    if mode == 1:
        index = [np.rint(v._data).astype(np.int64) for v in padded]
        return _op("reshape")(take(index) + _zero_link(flat, coords[0][0]), (n, c, *out_sp))
    lows = [np.floor(v._data) for v in padded]
    fracs = [v - Tensor._make(lo.astype(dt)) for v, lo in zip(padded, lows)]
    result: Tensor | None = None
    for corner in itertools.product((0, 1), repeat=nd):
        index = [lo.astype(np.int64) + k for lo, k in zip(lows, corner)]
        w: Tensor | None = None
        for fr, k in zip(fracs, corner):
            wk = fr if k else 1 - fr
            w = wk if w is None else w * wk
        assert w is not None
        term = take(index) * _op("unsqueeze")(w, 1)
        result = term if result is None else result + term
    assert result is not None
    return _op("reshape")(result, (n, c, *out_sp))


def _sizes(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in shape) + "]"


def _grid_sampler(
    input: Any, grid: Any, mode: int, padding: int, align: bool, nd: int | None
) -> Tensor:
    x, g = as_tensor(input), as_tensor(grid)
    if x.dtype != g.dtype:
        raise BadArgumentsError(
            "grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{x.dtype} and grid has {g.dtype}"
        )
    if x.ndim not in (4, 5) or (nd is not None and x.ndim != nd + 2):
        want = "4D or 5D" if nd is None else f"{nd + 2}D"
        raise ShapeMismatchError(
            f"grid_sampler(): expected {want} input and grid with same number of dimensions, "
            f"but got input with sizes {_sizes(x.shape)} and grid with sizes {_sizes(g.shape)}"
        )
    if g.ndim != x.ndim:
        raise ShapeMismatchError(
            "grid_sampler(): expected grid to have same number of dimensions as input, but got "
            f"input with sizes {_sizes(x.shape)} and grid with sizes {_sizes(g.shape)}"
        )
    if x.shape[0] != g.shape[0]:
        raise ShapeMismatchError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {_sizes(x.shape)} and grid with sizes {_sizes(g.shape)}"
        )
    dims = x.ndim - 2
    if g.shape[-1] != dims:
        raise ShapeMismatchError(
            f"grid_sampler(): expected grid to have size {dims} in last dimension, but got grid "
            f"with sizes {_sizes(g.shape)}"
        )
    for i in range(2, x.ndim):
        if x.shape[i] <= 0:
            raise ShapeMismatchError(
                f"grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                f"has sizes {_sizes(x.shape)} with dimension {i} being empty"
            )
    if mode == 2 and dims != 2:
        raise BadArgumentsError("grid_sampler(): bicubic interpolation only supports 4D input")
    if mode not in (0, 1, 2) or padding not in (0, 1, 2):
        raise BadArgumentsError("grid_sampler(): unknown interpolation or padding mode")
    name = "GridSampler2DBackward0" if dims == 2 else "GridSampler3DBackward0"
    return composite(name, _body, x, g, mode=mode, padding=padding, align=bool(align))


def _samples(nd: int, modes: tuple[int, ...]) -> Any:
    def make(rng: np.random.Generator) -> list[Any]:
        shape = (2, 2) + (3,) * nd
        out = []
        for mode in modes:
            for pad in (0, 1, 2):
                x = rng.standard_normal(shape)
                g = rng.uniform(-1.3, 1.3, (2,) + (2,) * nd + (nd,))
                out.append(sample(x, g, mode, pad, bool(pad % 2), note=f"mode {mode}, pad {pad}"))
        return out

    return make


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("input")
    g = args[1] if len(args) > 1 else kwargs.get("grid")
    xs, gs = getattr(x, "shape", None), getattr(g, "shape", None)
    if xs is None or gs is None or len(xs) < 2 or len(gs) < 2:
        return None
    return math.prod(xs) + 24 * math.prod(gs[:-1]) * (xs[1] + 2)


@register(
    complex_inputs="\"grid_sampler_2d_cpu_kernel_impl\" not implemented for '{type}'",
    samples=_samples(2, (0, 1, 2)),
    method=False,
    torch="grid_sampler_2d",
    estimate=_estimate,
)
def grid_sampler_2d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """A 4-d input sampled at a grid (``mode`` 0 bilinear, 1 nearest, 2 bicubic;
    ``padding`` 0 zeros, 1 border, 2 reflection)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 2)


@register(
    complex_inputs="\"grid_sampler3d_cpu\" not implemented for '{type}'",
    samples=_samples(3, (0, 1)),
    method=False,
    torch="grid_sampler_3d",
    estimate=_estimate,
)
def grid_sampler_3d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """A 5-d input sampled at a grid (``mode`` 0 trilinear, 1 nearest)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 3)


@register(
    complex_inputs="\"grid_sampler_2d_cpu_kernel_impl\" not implemented for '{type}'",
    samples=_samples(2, (0,)),
    method=False,
    torch="grid_sampler",
    estimate=_estimate,
)
def grid_sampler(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``grid_sampler_2d`` or ``grid_sampler_3d`` by the input's rank."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, None)


def _gs_samples(rng: np.random.Generator) -> list[Any]:
    x = rng.standard_normal((1, 2, 3, 4))
    g = rng.uniform(-1.2, 1.2, (1, 2, 3, 2))
    return [
        sample(x, g, align_corners=False, note="bilinear zeros"),
        sample(x, g, mode="bicubic", padding_mode="reflection", align_corners=True),
        sample(x, g, mode="nearest", padding_mode="border", align_corners=False),
    ]


@register(
    complex_inputs="\"grid_sampler_2d_cpu_kernel_impl\" not implemented for '{type}'",
    samples=_gs_samples,
    method=False,
    torch="nn.functional.grid_sample",
    estimate=_estimate,
    numpy_names=False,
)
def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """The input sampled at the grid's normalised ``(x, y[, z])`` coordinates in [-1, 1]."""
    if mode not in MODES:
        raise ArgumentValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in PADDINGS:
        raise ArgumentValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
            "See the documentation of grid_sample for details.",
            UserWarning,
            stacklevel=2,
        )
        align_corners = False
    return _grid_sampler(input, grid, MODES[mode], PADDINGS[padding_mode], align_corners, None)
