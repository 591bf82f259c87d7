"""Per-dim interpolation taps for ``interpolate``'s bicubic, area and antialiased modes.

Each builder returns ``(index, weight)``: for every output position the input positions
PyTorch's CPU kernel reads and the weight it gives each (``o × K`` arrays; index -1 where a
row has fewer taps). Applying taps (``apply_taps``) reads only those positions, so an inf
or NaN in the input reaches only the outputs whose taps hold it, as in PyTorch, where a
dense matrix product would spread ``inf · 0 = NaN`` over the whole row. The dense matrix (``taps_matrix``) serves the
backward, which is a linear map of the (finite) gradient.
"""

from __future__ import annotations

import numpy as np

Taps = tuple[np.ndarray, np.ndarray]


def _cc1(x: np.ndarray, a: float) -> np.ndarray:
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cc2(x: np.ndarray, a: float) -> np.ndarray:
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _scale(i: int, o: int, scale: float | None, align_corners: bool) -> float:
    """PyTorch's area_pixel_compute_scale."""
    if align_corners:
        return (i - 1) / (o - 1) if o > 1 else 0.0
    if scale is not None and scale > 0:
        return 1.0 / scale
    return i / o


def bicubic_taps(i: int, o: int, scale: float | None, align_corners: bool) -> Taps:
    """Keys' cubic convolution (a = -0.75) over four neighbours, edges clamped."""
    s = _scale(i, o, scale, align_corners)
    dst = np.arange(o, dtype=np.float64)
    real = s * dst if align_corners else s * (dst + 0.5) - 0.5
    base = np.floor(real)
    t = real - base
    a = -0.75
    w = np.stack([_cc2(t + 1, a), _cc1(t, a), _cc1(1 - t, a), _cc2(2 - t, a)], axis=1)
    idx = np.clip(base.astype(np.int64)[:, None] - 1 + np.arange(4), 0, i - 1)
    return idx, w


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 1, 1 - np.abs(x), 0.0)


def _cubic_aa(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    a = -0.5
    return np.where(x < 1, _cc1(x, a), np.where(x < 2, _cc2(x, a), 0.0))


def antialias_taps(i: int, o: int, scale: float | None, align_corners: bool, cubic: bool) -> Taps:
    """PyTorch's antialiased resampling: the filter stretched by the downscale factor and
    each output's weights normalised to sum to one."""
    s = _scale(i, o, scale, align_corners)
    size = 4 if cubic else 2
    support = size * 0.5 * s if s >= 1.0 else size * 0.5
    inv = 1.0 / s if s >= 1.0 else 1.0
    center = s * (np.arange(o) + 0.5)
    lo = np.maximum((center - support + 0.5).astype(np.int64), 0)
    hi = np.minimum((center + support + 0.5).astype(np.int64), i)
    k = max(int((hi - lo).max(initial=1)), 1)
    idx = lo[:, None] + np.arange(k)
    inside = idx < hi[:, None]
    filt = _cubic_aa if cubic else _triangle
    w = np.where(inside, filt((idx - center[:, None] + 0.5) * inv), 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
    return np.where(inside, idx, -1), w


def area_taps(i: int, o: int) -> Taps:
    """Adaptive average pooling's windows [floor(j·i/o), ceil((j+1)·i/o)), equal weights."""
    j = np.arange(o)
    start, end = (j * i) // o, -((-(j + 1) * i) // o)
    k = max(int((end - start).max(initial=1)), 1)
    idx = start[:, None] + np.arange(k)
    inside = idx < end[:, None]
    w = np.where(inside, 1.0 / (end - start)[:, None], 0.0)
    return np.where(inside, idx, -1), w


def linear_taps(i0: np.ndarray, i1: np.ndarray, lam1: np.ndarray) -> Taps:
    """Linear interpolation's two taps (both read, as PyTorch's kernel does)."""
    return np.stack([i0, i1], 1), np.stack([1 - lam1, lam1], 1)


def taps_matrix(taps: Taps, i: int) -> np.ndarray:
    """The dense ``o × i`` matrix of the taps (repeated positions add up)."""
    idx, w = taps
    m = np.zeros((idx.shape[0], i))
    rows = np.repeat(np.arange(idx.shape[0]), idx.shape[1])
    keep = idx.ravel() >= 0
    np.add.at(m, (rows[keep], idx.ravel()[keep]), w.ravel()[keep])
    return m


def apply_taps(x: np.ndarray, taps: tuple[Taps, ...]) -> np.ndarray:
    """``x``'s trailing ``len(taps)`` axes resampled, each through its taps (an absent
    tap, index -1, reads nothing)."""
    n = len(taps)
    for k, (idx, w) in enumerate(taps):
        axis = x.ndim - n + k
        moved = np.moveaxis(x, axis, -1)
        out = np.zeros(moved.shape[:-1] + (idx.shape[0],), dtype=x.dtype)
        for t in range(idx.shape[1]):
            at, wt = idx[:, t], w[:, t].astype(x.dtype)
            term = moved[..., np.maximum(at, 0)] * wt
            out += np.where(at >= 0, term, 0) if (at < 0).any() else term
        x = np.moveaxis(out, -1, axis)
    return np.ascontiguousarray(x)
