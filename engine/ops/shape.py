"""Shape ops: views and copies that move gradients without arithmetic."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError, ShapeMismatchError
from ..function import Function
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, shape_arg


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """Resolve one ``-1`` and check the element count, with PyTorch's message."""
    if shape.count(-1) > 1:
        raise BadArgumentsError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise BadArgumentsError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise ShapeMismatchError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ShapeMismatchError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class ViewBackward0(Function):
    name = "ViewBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a.data.shape
        return a.data.reshape(shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return reshape(g, ctx.in_shape)


class UnsafeViewBackward0(ViewBackward0):
    """A reshape that had to copy (its input was not contiguous)."""

    name = "UnsafeViewBackward0"


@register(samples=lambda rng: [sample(S.rand(rng, 2, 3), (3, 2)), sample(S.rand(rng, 2, 3), (-1,)), sample(S.rand(rng), (1, 1)), sample(S.rand(rng, 0, 2), (2, 0))])
def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The same elements in a new shape (one dimension may be -1)."""
    a = as_tensor(input)
    target = _infer_shape(shape_arg(shape), a.data.size)
    fn = ViewBackward0 if a.data.flags.c_contiguous else UnsafeViewBackward0
    return fn.apply(a, shape=target)


@register(samples=lambda rng: [sample(S.rand(rng, 2, 3), (3, 2)), sample(S.rand(rng, 4), (2, -1))])
def view(input: Tensor, *shape: Any) -> Tensor:
    """``reshape`` that PyTorch allows only on contiguous tensors."""
    a = as_tensor(input)
    if not a.data.flags.c_contiguous:
        raise ShapeMismatchError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return ViewBackward0.apply(a, shape=_infer_shape(shape_arg(shape), a.data.size))


class ExpandBackward0(Function):
    name = "ExpandBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a.data.shape
        return np.broadcast_to(a.data, shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        from .reduction import sum_to

        return sum_to(g, ctx.in_shape)


def _expand_shape(in_shape: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[int, ...]:
    if len(sizes) < len(in_shape):
        raise ShapeMismatchError(
            f"expand(torch.FloatTensor{{[{', '.join(map(str, in_shape))}]}}, size=[{', '.join(map(str, sizes))}]): "
            "the number of sizes provided must be greater or equal to the number of dimensions in the tensor"
        )
    lead = len(sizes) - len(in_shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise ShapeMismatchError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing dimension {i}")
            out.append(s)
            continue
        d = in_shape[i - lead]
        if s == -1:
            out.append(d)
        elif d == 1 or d == s:
            out.append(s)
        else:
            raise ShapeMismatchError(
                f"The expanded size of the tensor ({s}) must match the existing size ({d}) at "
                f"non-singleton dimension {i}.  Target sizes: [{', '.join(map(str, sizes))}].  "
                f"Tensor sizes: [{', '.join(map(str, in_shape))}]"
            )
    return tuple(out)


@register(samples=lambda rng: [sample(S.rand(rng, 3, 1), (3, 4)), sample(S.rand(rng, 2), (3, 2)), sample(S.rand(rng), (2,)), sample(S.rand(rng, 1, 2), (-1, 2))])
def expand(input: Tensor, *sizes: Any) -> Tensor:
    """A broadcast view to a larger shape (-1 keeps a dimension)."""
    a = as_tensor(input)
    return ExpandBackward0.apply(a, shape=_expand_shape(a.data.shape, shape_arg(sizes)))


class ToCopyBackward0(Function):
    name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dtype: np.dtype) -> np.ndarray:
        ctx.in_dtype = a.data.dtype
        return a.data.astype(dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return to_dtype(g, ctx.in_dtype)


def to_dtype(input: Tensor, dtype: Any) -> Tensor:
    """Cast to another dtype (differentiable between float dtypes)."""
    a = as_tensor(input)
    dt = dtypes.to_dtype(dtype)
    if a.data.dtype == dt:
        return a
    if not dtypes.is_floating(dt):
        return Tensor._make(a.data.astype(dt))
    return ToCopyBackward0.apply(a, dtype=dt)


@register(name="to", samples=lambda rng: [sample(S.rand(rng, 3), "float32"), sample(S.rand(rng, 2, 2), "float64")])
def to(input: Tensor, dtype: str) -> Tensor:
    """Cast to ``dtype`` (float32, float64, int64, bool); the result is a copy only if it differs."""
    return to_dtype(input, dtype)
