"""Elementwise math: one input, one output, a local derivative."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..function import Function
from ..registry import register
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor


def _float(a: Tensor) -> np.ndarray:
    """Integer inputs to unary float functions compute in the default float dtype."""
    return a.data if dtypes.is_floating(a.data.dtype) else a.data.astype(dtypes.DEFAULT_FLOAT)


class ExpBackward0(Function):
    name = "ExpBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_result()
        with np.errstate(over="ignore"):
            return np.exp(_float(a))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return g * ctx.result


@register(samples=S.unary)
def exp(input: Tensor) -> Tensor:
    """Elementwise e**x."""
    return ExpBackward0.apply(as_tensor(input))


class LogBackward0(Function):
    name = "LogBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(_float(a))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g / a


@register(samples=lambda rng: S.unary(rng, S.positive))
def log(input: Tensor) -> Tensor:
    """Elementwise natural logarithm (d/dx at 0 is infinite, as in PyTorch)."""
    return LogBackward0.apply(as_tensor(input))
