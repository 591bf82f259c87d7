"""``max_pool2d_with_indices_backward``: ATen's max-pool backward kernel, which op_db
calls directly. It scatters ``grad_output`` to the argmax ``indices`` within each input
plane; its own gradient gathers back (``MaxPool2DWithIndicesBackwardBackward0``, as the
max pool's double backward), and ``input`` only lends its shape (a zero gradient)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..binding import Binding
from ..errors import ShapeMismatchError
from ..estimates import arg, numel
from ..registry import Const, register, sample
from ..tensor import Tensor
from ._tie import tie
from ._util import as_tensor
from .pooling import MaxPoolScatter, _distinct, max_pool2d


def _samples(rng: np.random.Generator) -> list[Any]:
    out = []
    for shape, k, s, note in (((2, 3, 6, 6), 2, None, "kernel 2"), ((3, 7, 5), 3, 2, "unbatched")):
        x = _distinct(rng, *shape)
        _, idx = max_pool2d(Tensor(x), k, s, return_indices=True)
        g = rng.uniform(-2, 2, idx.shape)
        kk, ss = [k, k], [] if s is None else [s, s]
        out.append(sample(g, x, kk, ss, [0], [1], False, Const(idx._data), note=note))
    return out


@register(
    complex_inputs="\"max_pool2d_backward\" not implemented for '{type}'",
    samples=_samples,
    method=False,
    estimate=lambda args, kwargs: 2 * numel(arg(args, kwargs, 1, "input")) + 64,
    binding=Binding(tensors=("grad_output", "input", "indices")),
    torch="ops.aten.max_pool2d_with_indices_backward.default",
)
def max_pool2d_with_indices_backward(
    grad_output: Tensor,
    input: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    indices: Tensor,
) -> Tensor:
    """The gradient of ``max_pool2d`` at ``input``: ``grad_output`` added at ``indices``
    (flat positions in each input plane); the geometry arguments are ATen's, unread."""
    g, x, idx = as_tensor(grad_output), as_tensor(input), as_tensor(indices)
    if g.shape != idx.shape or g.ndim != x.ndim or g.shape[:-2] != x.shape[:-2]:
        raise ShapeMismatchError(
            f"Expected a tensor of dimension {x.ndim} and tensor.size[{x.ndim - 3}] == "
            f"{x.shape[-3]} but got: dimension {g.ndim} and tensor.size[{x.ndim - 3}] = "
            f"{g.shape[x.ndim - 3] if g.ndim > x.ndim - 3 else 0}"
        )
    gx = MaxPoolScatter.apply(g, idx=idx._data.astype(np.int64), shape=x.shape)
    return tie(gx, g, x, name="MaxPool2DWithIndicesBackwardBackward0")
