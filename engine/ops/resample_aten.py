"""``torch._upsample_bilinear2d_aa``: the aten op behind ``interpolate(mode="bilinear",
antialias=True)``, with its own signature (``output_size`` or ``scale_factors``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor
from .interp_weights import antialias_taps, taps_matrix
from .resample import _MAPS, interpolate


def _samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 1, 2, 8, 7), (3, 4), False, note="down"),
        sample(r(rng, 1, 2, 4, 3), (6, 5), True, note="up, align_corners"),
        sample(r(rng, 1, 2, 6, 5), None, False, (0.5, 0.6), note="scale_factors"),
        sample(r(rng, 1, 2, 6, 5), (3, 3), False, scales_h=1.7, scales_w=0.9, note="scales_h/w"),
    ]


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    bound = dict(zip(("input", "output_size", "align_corners", "scale_factors"), args)) | kwargs
    shape = getattr(bound.get("input"), "shape", None)
    if shape is None or len(shape) != 4:
        return None
    try:
        size, scales = bound.get("output_size"), bound.get("scale_factors")
        if size is not None:
            out = [int(v) for v in size]
        elif scales is not None:
            out = [math.floor(float(i) * float(s)) for i, s in zip(shape[2:], scales)]
        else:
            return None
        return shape[0] * shape[1] * math.prod(max(o, 0) for o in out)
    except (TypeError, ValueError, OverflowError):
        return None


@register(
    samples=_samples, method=False, estimate=_estimate, torch="ops.aten._upsample_bilinear2d_aa"
)
def _upsample_bilinear2d_aa(
    input: Tensor,
    output_size: Any,
    align_corners: bool,
    scale_factors: Any = None,
    *,
    scales_h: float | None = None,
    scales_w: float | None = None,
) -> Tensor:
    """Antialiased bilinear resampling of ``(N, C, H, W)`` (the aten op; its first overload
    takes ``output_size`` with the ``scales_h``/``scales_w`` that place the source pixels)."""
    size = None if output_size is None else tuple(int(v) for v in output_size)
    x = as_tensor(input)
    scales = (scales_h, scales_w)
    if (
        size is not None
        and scales != (None, None)
        and x.ndim == 4
        and len(size) == 2
        and x.dtype.kind == "f"
        and min(*size, *x.shape[2:]) > 0
    ):
        dims = list(zip(x.shape[2:], size, scales))
        taps = tuple(antialias_taps(i, o, s, bool(align_corners), False) for i, o, s in dims)
        maps = tuple(taps_matrix(t, i).astype(x.dtype) for t, (i, _, _) in zip(taps, dims))
        return _MAPS["UpsampleBilinear2DAaBackward0"].apply(x, maps=maps, taps=taps)
    scale = None if size is not None or scale_factors is None else tuple(scale_factors)
    return interpolate(
        input,
        size=size,
        scale_factor=scale,
        mode="bilinear",
        align_corners=bool(align_corners),
        antialias=True,
    )
