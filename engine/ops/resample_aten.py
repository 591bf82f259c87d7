"""``torch._upsample_bilinear2d_aa``: the aten op behind ``interpolate(mode="bilinear",
antialias=True)``, with its own signature (``output_size`` or ``scale_factors``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from .resample import interpolate


def _samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 1, 2, 8, 7), (3, 4), False, note="down"),
        sample(r(rng, 1, 2, 4, 3), (6, 5), True, note="up, align_corners"),
        sample(r(rng, 1, 2, 6, 5), None, False, (0.5, 0.6), note="scale_factors"),
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
    input: Tensor, output_size: Any, align_corners: bool, scale_factors: Any = None
) -> Tensor:
    """Antialiased bilinear resampling of ``(N, C, H, W)`` (the aten op)."""
    size = None if output_size is None else tuple(int(v) for v in output_size)
    scale = None if size is not None or scale_factors is None else tuple(scale_factors)
    return interpolate(
        input,
        size=size,
        scale_factor=scale,
        mode="bilinear",
        align_corners=bool(align_corners),
        antialias=True,
    )
