"""``max_unpool1d/2d/3d``: the partial inverse of max pooling. Each pooled value is
written at its flat index into a zero output plane; PyTorch's node
(``MaxUnpool2DBackward0``/``MaxUnpool3DBackward0``) gathers the gradient back from
those indices. Written as a composite over ``scatter`` so the double backward is
the engine's own (a gather of a scatter)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import BadArgumentsError, ShapeMismatchError
from ..registry import OPS, register, sample
from ..tensor import Tensor
from ._composite import ArgumentValueError, composite
from ._util import as_tensor


def _op(name: str) -> Any:
    return OPS[name].fn


def _tuple(value: Any, n: int) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        vals = tuple(int(v) for v in value)
        return vals * n if len(vals) == 1 else vals
    return (int(value),) * n


def _output_size(
    x: Tensor, k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...], output_size: Any
) -> tuple[int, ...]:
    """PyTorch's ``_unpool_output_size``: the default from the pooling geometry, or a
    given size that must lie strictly within one stride of it."""
    n = len(k)
    default = [(x.shape[-n + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(n)]
    if output_size is None:
        return tuple(default)
    size = list(output_size)
    if len(size) == n + 2:
        size = size[2:]
    if len(size) != n:
        raise ArgumentValueError(
            f"output_size should be a sequence containing {n} or {n + 2} elements, but it has "
            f"a length of '{len(size)}'"
        )
    for d in range(n):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < int(size[d]) < hi:
            raise ArgumentValueError(
                f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})'
            )
    return tuple(int(v) for v in size)


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in shape) + "]"


def _unpool_body(x: Tensor, *, idx: np.ndarray, size: int, out_shape: tuple[int, ...]) -> Tensor:
    planes = idx.shape[0]
    flat = _op("reshape")(x, (planes, idx.shape[1]))
    zeros = Tensor._make(np.zeros((planes, size), dtype=x.dtype))
    out = _op("scatter")(zeros, 1, Tensor._make(idx), flat)
    return _op("reshape")(out, out_shape)


def _unpool(x: Tensor, indices: Any, spatial: tuple[int, ...], nd: int) -> Tensor:
    """The checks of ATen's ``max_unpooling{nd}d_forward`` and the composite."""
    ind = as_tensor(indices)
    if ind.dtype != np.int64:
        raise BadArgumentsError(
            f"elements in indices should be type int64 but got: "
            f"{ {np.dtype(np.int32): 'Int', np.dtype(np.int16): 'Short'}.get(ind.dtype, str(ind.dtype)) }"
        )
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeMismatchError(
            f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
            f"tensor with {x.ndim} dimensions."
        )
    if x.shape != ind.shape:
        raise ShapeMismatchError(
            "Expected shape of indices to be same as that of the input tensor "
            f"({_dims(x.shape)}) but got indices tensor with shape: {_dims(ind.shape)}"
        )
    for i in range(x.ndim - nd, x.ndim):
        if x.shape[i] <= 0:
            raise ShapeMismatchError(
                f"max_unpooling{nd}d_forward_out_cpu(): Expected input to have non-zero size "
                f"for non-batch dimensions, but got {_dims(x.shape)} with dimension {i} being "
                "empty."
            )
    lead = x.shape[: x.ndim - nd]
    planes = math.prod(lead)
    size = math.prod(spatial)
    idx = ind._data.reshape(planes, -1)
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        raise ShapeMismatchError(
            f"Found an invalid max index: {int(idx[bad][0])} (output volumes are of size "
            + "x".join(str(v) for v in spatial)
            + ")"
        )
    name = "MaxUnpool3DBackward0" if nd == 3 else "MaxUnpool2DBackward0"
    return composite(
        name,
        _unpool_body,
        x,
        idx=np.ascontiguousarray(idx),
        size=size,
        out_shape=(*lead, *spatial),
    )


def _estimate(nd: int) -> Any:
    def estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
        names = ("input", "indices", "kernel_size", "stride", "padding", "output_size")
        bound = dict(zip(names, args)) | kwargs
        x = bound.get("input")
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) < nd:
            return None
        try:
            k = _tuple(bound.get("kernel_size"), nd)
            stride = bound.get("stride")
            s = k if stride is None else _tuple(stride, nd)
            p = _tuple(bound.get("padding", 0), nd)
            out = bound.get("output_size")
            if out is not None:
                spatial = [int(v) for v in list(out)[-nd:]]
            else:
                spatial = [(shape[-nd + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(nd)]
            return math.prod(shape[:-nd]) * math.prod(max(v, 0) for v in spatial)
        except (TypeError, ValueError):
            return None

    return estimate


def _samples(nd: int) -> Any:
    def make(rng: np.random.Generator) -> list[Any]:
        # pooled values and the flat indices a 2-stride pool of kernel 2 picks
        shape_in = (1, 2) + (2,) * nd
        out_sp = (4,) * nd
        size = math.prod(out_sp)
        idx = np.stack([rng.permutation(size)[: 2**nd] for _ in range(2)]).reshape(shape_in)
        x = rng.standard_normal(shape_in)
        return [
            sample(x, idx, 2, note="kernel 2"),
            sample(x[0], idx[0], 2, 2, 0, out_sp, note="unbatched, output_size"),
        ]

    return make


def _geometry(
    x: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any, output_size: Any
) -> tuple[int, ...]:
    k = _tuple(kernel_size, nd)
    s = k if stride is None else _tuple(stride, nd)
    p = _tuple(padding, nd)
    return _output_size(x, k, s, p, output_size)


@register(
    complex_inputs="\"max_unpool2d\" not implemented for '{type}'",
    samples=_samples(1),
    method=False,
    torch="nn.functional.max_unpool1d",
    estimate=_estimate(1),
)
def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """Each value written at its index into a zero signal (inverse of ``max_pool1d``)."""
    x = as_tensor(input)
    spatial = _geometry(x, 1, kernel_size, stride, padding, output_size)
    ind = as_tensor(indices)
    x2 = _op("unsqueeze")(x, -1)
    ind2 = Tensor._make(ind._data[..., None]) if ind.ndim else ind
    return _op("squeeze")(_unpool(x2, ind2, (*spatial, 1), 2), -1)


@register(
    complex_inputs="\"max_unpool2d\" not implemented for '{type}'",
    samples=_samples(2),
    method=False,
    torch="nn.functional.max_unpool2d",
    estimate=_estimate(2),
)
def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """Each value written at its flat index into a zero plane (inverse of ``max_pool2d``)."""
    x = as_tensor(input)
    spatial = _geometry(x, 2, kernel_size, stride, padding, output_size)
    return _unpool(x, indices, spatial, 2)


@register(
    complex_inputs="\"max_unpool3d\" not implemented for '{type}'",
    samples=_samples(3),
    method=False,
    torch="nn.functional.max_unpool3d",
    estimate=_estimate(3),
)
def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """Each value written at its flat index into a zero volume (inverse of ``max_pool3d``)."""
    x = as_tensor(input)
    spatial = _geometry(x, 3, kernel_size, stride, padding, output_size)
    return _unpool(x, indices, spatial, 3)
