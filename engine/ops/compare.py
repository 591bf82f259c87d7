"""Comparisons and logical ops: bool results, never part of the graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..binding import Binding
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import arr, as_tensor, broadcast_shape, operands
from .arithmetic import not_implemented_for


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


@register(
    samples=_compare_samples,
    differentiable=False,
    operators=("__eq__",),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def eq(input: Any, other: Any) -> Tensor:
    """Elementwise ``input == other`` as bool."""
    return _compare(np.equal, input, other)


@register(
    samples=_compare_samples,
    differentiable=False,
    operators=("__ne__",),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def ne(input: Any, other: Any) -> Tensor:
    """Elementwise ``input != other`` as bool."""
    return _compare(np.not_equal, input, other)


@register(
    complex_inputs="\"lt_cpu\" not implemented for '{type}'",
    samples=_compare_samples,
    differentiable=False,
    operators=("__lt__",),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def lt(input: Any, other: Any) -> Tensor:
    """Elementwise ``input < other`` as bool."""
    return _compare(np.less, input, other)


@register(
    complex_inputs="\"le_cpu\" not implemented for '{type}'",
    samples=_compare_samples,
    differentiable=False,
    operators=("__le__",),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def le(input: Any, other: Any) -> Tensor:
    """Elementwise ``input <= other`` as bool."""
    return _compare(np.less_equal, input, other)


@register(
    complex_inputs="\"gt_cpu\" not implemented for '{type}'",
    samples=_compare_samples,
    differentiable=False,
    operators=("__gt__",),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def gt(input: Any, other: Any) -> Tensor:
    """Elementwise ``input > other`` as bool."""
    return _compare(np.greater, input, other)


@register(
    complex_inputs="\"ge_cpu\" not implemented for '{type}'",
    samples=_compare_samples,
    differentiable=False,
    operators=("__ge__",),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def ge(input: Any, other: Any) -> Tensor:
    """Elementwise ``input >= other`` as bool."""
    return _compare(np.greater_equal, input, other)


def _logical_samples(rng: np.random.Generator) -> list[Any]:
    return [sample(Const(rng.random((2, 3)) > 0.5), Const(rng.random((3,)) > 0.5))]


@register(
    samples=_logical_samples,
    differentiable=False,
    operators=("__and__",),
    binding=Binding(tensors=("input", "other")),
)
def logical_and(input: Any, other: Any) -> Tensor:
    """Elementwise logical and, as bool."""
    a, b = as_tensor(input), as_tensor(other)
    broadcast_shape(a.shape, b.shape)  # PyTorch's message, not numpy's
    return Tensor._make(np.logical_and(a._data, b._data))


@register(
    samples=_logical_samples,
    differentiable=False,
    operators=("__or__",),
    binding=Binding(tensors=("input", "other")),
)
def logical_or(input: Any, other: Any) -> Tensor:
    """Elementwise logical or, as bool."""
    a, b = as_tensor(input), as_tensor(other)
    broadcast_shape(a.shape, b.shape)  # PyTorch's message, not numpy's
    return Tensor._make(np.logical_or(a._data, b._data))


@register(
    samples=lambda rng: [sample(Const(rng.random((2, 3)) > 0.5))],
    differentiable=False,
    operators=("__invert__",),
)
def logical_not(input: Any) -> Tensor:
    """Elementwise logical not, as bool."""
    return Tensor._make(np.logical_not(as_tensor(input)._data))


@register(
    samples=_logical_samples, differentiable=False, binding=Binding(tensors=("input", "other"))
)
def logical_xor(input: Any, other: Any) -> Tensor:
    """Elementwise logical exclusive or, as bool."""
    a, b = as_tensor(input), as_tensor(other)
    broadcast_shape(a.shape, b.shape)  # PyTorch's message, not numpy's
    return Tensor._make(np.logical_xor(a._data, b._data))


# -- bitwise: on integers bit by bit, on bool logical (the operators & | ^ ~) ---------------


def _bitwise(kernel: str, np_fn: Any, input: Any, other: Any) -> Tensor:
    rt, (a, b) = operands(as_tensor(input), other)
    if rt.kind == "f":
        raise not_implemented_for(kernel, rt)
    x, y = arr(a, rt), arr(b, rt)
    broadcast_shape(np.shape(x), np.shape(y))
    return Tensor._make(np.asarray(np_fn(x, np.asarray(y, rt)), rt))


def _bitwise_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(Const(rng.random((2, 3)) > 0.5), Const(rng.random((3,)) > 0.5), note="bool"),
        sample(Const(rng.integers(-9, 9, (2, 3))), Const(rng.integers(-9, 9, (3,))), note="int64"),
        sample(Const(rng.integers(0, 255, (4,)).astype(np.uint8)), 6, note="uint8 and number"),
        sample(
            Const(rng.integers(0, 9, (4,)).astype(np.int8)),
            Const(rng.integers(0, 255, (4,)).astype(np.uint8)),
            note="int8 with uint8",
        ),
        sample(Const(rng.random((3,)) > 0.5), True, note="bool and True"),
    ]


@register(
    samples=_bitwise_samples, differentiable=False, inplace=True, operators=("__and__", "__rand__")
)
def bitwise_and(input: Any, other: Any) -> Tensor:
    """Elementwise and: bitwise on integers, logical on bool (``a & b``)."""
    return _bitwise("bitwise_and_cpu", np.bitwise_and, input, other)


@register(
    samples=_bitwise_samples, differentiable=False, inplace=True, operators=("__or__", "__ror__")
)
def bitwise_or(input: Any, other: Any) -> Tensor:
    """Elementwise or: bitwise on integers, logical on bool (``a | b``)."""
    return _bitwise("bitwise_or_cpu", np.bitwise_or, input, other)


@register(
    samples=_bitwise_samples, differentiable=False, inplace=True, operators=("__xor__", "__rxor__")
)
def bitwise_xor(input: Any, other: Any) -> Tensor:
    """Elementwise exclusive or: bitwise on integers, logical on bool (``a ^ b``)."""
    return _bitwise("bitwise_xor_cpu", np.bitwise_xor, input, other)


@register(
    samples=lambda rng: [
        sample(Const(rng.random((2, 3)) > 0.5), note="bool"),
        sample(Const(rng.integers(-9, 9, (4,))), note="int64"),
        sample(Const(rng.integers(0, 255, (4,)).astype(np.uint8)), note="uint8"),
    ],
    differentiable=False,
    inplace=True,
    operators=("__invert__",),
)
def bitwise_not(input: Any) -> Tensor:
    """Elementwise not: bitwise on integers, logical on bool."""
    a = as_tensor(input)
    if a._data.dtype.kind == "f":
        raise not_implemented_for("bitwise_not_cpu", a._data.dtype)
    return Tensor._make(np.invert(a._data))
