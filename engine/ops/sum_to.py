"""``Tensor.sum_to_size``: a tensor summed down to a size it broadcasts from (what a
broadcasting op's gradient does), as PyTorch's ``at::sum_to``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ShapeMismatchError
from ..registry import OPS, register, sample
from ..tensor import Tensor
from . import samples as S


def _size(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], list | tuple):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _sum_to_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 1, 3, note="keep a 1"),
        sample(S.rand(rng, 2, 3), 3, note="leading dim dropped"),
        sample(S.rand(rng, 2, 3), (1, 1), note="a tuple"),
        sample(S.rand(rng, 2, 3), 2, 3, note="the same size"),
        sample(S.rand(rng, 2, 1, 3), 2, 1, 1, note="3-d"),
        sample(S.rand(rng), (), note="0-d to ()"),
    ]


@register(
    samples=_sum_to_samples,
    function=False,
    torch=lambda torch, x, *size: x.sum_to_size(*size),
)
def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """Summed over the leading dims ``size`` lacks and where it holds 1: ``size`` must
    broadcast to the input's shape."""
    want = _size(size)
    shape = tuple(input.shape)
    lead = len(shape) - len(want)
    if lead < 0 or any(w not in (1, s) for w, s in zip(want, shape[lead:])):
        raise ShapeMismatchError(
            f"size {{{list(want)}}} is not expandable to size {{{list(shape)}}}."
        )
    if not want:  # at::sum_to sums everything to a 0-d (bool becomes int64)
        return OPS["sum"].fn(input)
    if want == shape:
        return input
    dims = tuple(range(lead)) + tuple(
        lead + k for k, (w, s) in enumerate(zip(want, shape[lead:])) if w == 1 and s != 1
    )
    out = OPS["sum"].fn(input, dims, keepdim=True) if dims else input
    return OPS["view"].fn(out, want) if lead else out
