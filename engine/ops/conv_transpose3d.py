"""``conv_transpose3d``: the 3-d transposed convolution, on conv.py's N-d kernel."""

from __future__ import annotations

from typing import Any

from ..registry import register
from ..tensor import Tensor
from .conv import _conv_transpose_estimate, _conv_transpose_samples, _convolution


@register(
    samples=_conv_transpose_samples(3),
    method=False,
    torch="nn.functional.conv_transpose3d",
    estimate=_conv_transpose_estimate,
)
def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """3-d transposed convolution (the gradient of conv3d) with weight
    ``(C, O/groups, kD, kH, kW)``."""
    return _convolution(
        "conv_transpose3d",
        3,
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
