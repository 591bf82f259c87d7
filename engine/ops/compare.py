"""Comparisons and logical ops: bool results, never part of the graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import arr, as_tensor, broadcast_shape, operands


def _compare(np_fn: Any, input: Any, other: Any) -> Tensor:
    rt, (a, b) = operands(input, other)
    broadcast_shape(np.shape(arr(a, rt)), np.shape(arr(b, rt)))
    return Tensor._make(np.asarray(np_fn(arr(a, rt), arr(b, rt))))


def _compare_samples(rng: np.random.Generator) -> list[Any]:
    a = S.rand(rng, 2, 3)
    return [
        sample(Const(a), Const(a.copy())),
        sample(Const(S.rand(rng, 2, 3)), Const(S.rand(rng, 3))),
        sample(Const(S.rand(rng, 4)), 0.0),
    ]


@register(samples=_compare_samples, differentiable=False, operators=("__eq__",))
def eq(input: Any, other: Any) -> Tensor:
    """Elementwise ``input == other`` as bool."""
    return _compare(np.equal, input, other)


@register(samples=_compare_samples, differentiable=False, operators=("__ne__",))
def ne(input: Any, other: Any) -> Tensor:
    """Elementwise ``input != other`` as bool."""
    return _compare(np.not_equal, input, other)


@register(samples=_compare_samples, differentiable=False, operators=("__lt__",))
def lt(input: Any, other: Any) -> Tensor:
    """Elementwise ``input < other`` as bool."""
    return _compare(np.less, input, other)


@register(samples=_compare_samples, differentiable=False, operators=("__le__",))
def le(input: Any, other: Any) -> Tensor:
    """Elementwise ``input <= other`` as bool."""
    return _compare(np.less_equal, input, other)


@register(samples=_compare_samples, differentiable=False, operators=("__gt__",))
def gt(input: Any, other: Any) -> Tensor:
    """Elementwise ``input > other`` as bool."""
    return _compare(np.greater, input, other)


@register(samples=_compare_samples, differentiable=False, operators=("__ge__",))
def ge(input: Any, other: Any) -> Tensor:
    """Elementwise ``input >= other`` as bool."""
    return _compare(np.greater_equal, input, other)


def _logical_samples(rng: np.random.Generator) -> list[Any]:
    return [sample(Const(rng.random((2, 3)) > 0.5), Const(rng.random((3,)) > 0.5))]


@register(samples=_logical_samples, differentiable=False, operators=("__and__",))
def logical_and(input: Any, other: Any) -> Tensor:
    """Elementwise logical and, as bool."""
    return Tensor._make(np.logical_and(as_tensor(input).data, as_tensor(other).data))


@register(samples=_logical_samples, differentiable=False, operators=("__or__",))
def logical_or(input: Any, other: Any) -> Tensor:
    """Elementwise logical or, as bool."""
    return Tensor._make(np.logical_or(as_tensor(input).data, as_tensor(other).data))


@register(
    samples=lambda rng: [sample(Const(rng.random((2, 3)) > 0.5))],
    differentiable=False,
    operators=("__invert__",),
)
def logical_not(input: Any) -> Tensor:
    """Elementwise logical not, as bool."""
    return Tensor._make(np.logical_not(as_tensor(input).data))
