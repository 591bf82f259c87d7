"""Reductions: the gradient of a reduction is its incoming gradient expanded
back over the reduced dimensions."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..function import Function
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, normalize_dims


def _kept_shape(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def expand_back(g: Tensor, in_shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """The gradient of a reduction over ``dims``: reshape to keepdim form, then expand."""
    from .shape import expand, reshape

    if not keepdim and dims:
        g = reshape(g, _kept_shape(in_shape, dims))
    return expand(g, in_shape)


def _sum_dtype(dt: np.dtype) -> np.dtype:
    return dt if dtypes.is_floating(dt) else dtypes.int64


class SumBackward0(Function):
    name = "SumBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_shape = a.data.shape
        return np.asarray(a.data.sum(dtype=_sum_dtype(a.data.dtype)))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand_back(g, ctx.in_shape, (), True)


class SumBackward1(Function):
    name = "SumBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        ctx.in_shape, ctx.dims, ctx.keepdim = a.data.shape, dims, keepdim
        return np.asarray(a.data.sum(axis=dims, keepdims=keepdim, dtype=_sum_dtype(a.data.dtype)))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim)


def _reduce_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3)),
        sample(S.rand(rng)),
        sample(S.rand(rng, 2, 3), dim=1),
        sample(S.rand(rng, 2, 3, 4), dim=(0, 2), keepdim=True),
        sample(S.rand(rng, 2, 3), dim=-1, keepdim=True),
        sample(S.rand(rng, 0, 3), dim=0),
        sample(S.rand(rng, 0, 3)),
    ]


@register(samples=_reduce_samples)
def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Sum of all elements, or over ``dim`` (an int or a list of ints)."""
    a = as_tensor(input)
    if dim is None:
        return SumBackward0.apply(a)
    return SumBackward1.apply(a, dims=normalize_dims(dim, a.ndim), keepdim=bool(keepdim))


class SumToSize(Function):
    """Reduce a broadcast gradient to an input's shape (the backward loop's one place)."""

    name = "SumBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, shape: tuple[int, ...]) -> np.ndarray:
        ctx.in_shape = a.data.shape
        return sum_to_array(a.data, shape)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        from .shape import expand

        return expand(g, ctx.in_shape)


def sum_to_array(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum an array down to ``shape``: over leading dims, and dims that were 1."""
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1
    )
    out = x.sum(axis=axes, keepdims=True) if axes else x
    return out.reshape(shape)


def sum_to(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``input`` down to ``shape`` (the inverse of broadcasting)."""
    if input.data.shape == tuple(shape):
        return input
    return SumToSize.apply(input, shape=tuple(shape))


class MeanBackward0(Function):
    name = "MeanBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_shape = a.data.shape
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(a.data.mean() if a.data.size else np.nan, dtype=a.data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        n = int(np.prod(ctx.in_shape))
        return expand_back(g, ctx.in_shape, (), True) / n


class MeanBackward1(Function):
    name = "MeanBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
        ctx.in_shape, ctx.dims, ctx.keepdim = a.data.shape, dims, keepdim
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(a.data.mean(axis=dims, keepdims=keepdim), dtype=a.data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        n = int(np.prod([ctx.in_shape[d] for d in ctx.dims]))
        return expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim) / n


@register(samples=_reduce_samples)
def mean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Mean of all elements, or over ``dim``; floating inputs only, as in PyTorch."""
    a = as_tensor(input)
    if not dtypes.is_floating(a.dtype):
        from ..errors import DtypeMismatchError

        raise DtypeMismatchError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {dtypes.torch_name(a.dtype).capitalize()}"
        )
    if dim is None:
        return MeanBackward0.apply(a)
    return MeanBackward1.apply(a, dims=normalize_dims(dim, a.ndim), keepdim=bool(keepdim))
