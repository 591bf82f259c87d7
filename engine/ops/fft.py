"""The real-valued part of ``torch.fft``: ``fftshift`` and ``ifftshift`` (a ``roll`` by
half of each dim, as PyTorch writes them: ``RollBackward0``). The transforms
themselves (``fft``, ``rfft``, ...) produce or take complex tensors, a dtype the
engine does not have; they are left out on purpose."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..registry import OPS, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, normalize_dim


def _dims(a: Tensor, dim: Any) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(a.ndim))
    if isinstance(dim, int):
        return (normalize_dim(dim, a.ndim),)
    return tuple(normalize_dim(d, a.ndim) for d in dim)


def _shift(input: Any, dim: Any, sign: int) -> Tensor:
    a = as_tensor(input)
    dims = _dims(a, dim)
    if not dims:  # a 0-d input or no dims: nothing moves
        return a.clone()
    shifts = [sign * (a.shape[d] // 2) for d in dims]
    return OPS["roll"].fn(a, shifts, list(dims))


def _shift_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 5)),
        sample(S.rand(rng, 4, 5)),
        sample(S.rand(rng, 3, 4, 5), dim=(0, 2), note="dims"),
        sample(S.rand(rng, 3, 4), dim=-1, note="one dim"),
    ]


@register(samples=_shift_samples, method=False, torch="fft.fftshift")
def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """``fft.fftshift``: the zero frequency moved to the middle (roll by ``n // 2``)."""
    return _shift(input, dim, 1)


@register(samples=_shift_samples, method=False, torch="fft.ifftshift")
def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """``fft.ifftshift``: the inverse of ``fftshift`` (roll by ``-(n // 2)``)."""
    return _shift(input, dim, -1)
