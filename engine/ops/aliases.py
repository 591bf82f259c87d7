"""PyTorch's other names for ops the catalogue has (``absolute`` is ``abs``,
``divide`` is ``div``, ``concat`` is ``cat`` ...), with PyTorch's parameter names.

Each alias is its own registered op (so the service lists it and the op database
sweeps it) whose body is the op it names: one rule, one grad_fn, as in PyTorch,
where the alias dispatches to the same kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..binding import Binding
from ..registry import OPS, Sample, register
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import UNSET, public_defaults
from .arithmetic import SgnBackward0


def _like(name: str) -> Any:
    """The samples of the op an alias names (built when the database asks)."""

    def build(rng: np.random.Generator) -> list[Sample]:
        spec = OPS[name].samples
        assert spec is not None
        return spec(rng)

    return build


def _binary_plain(name: str) -> Any:
    """The aliased op's samples without keyword arguments (an alias without them)."""

    def build(rng: np.random.Generator) -> list[Sample]:
        return [s for s in _like(name)(rng) if not s.kwargs]

    return build


def _unit(rng: np.random.Generator) -> list[Sample]:
    return S.unary(rng, lambda r, *shape: r.uniform(-0.9, 0.9, size=shape))


def _above_one(rng: np.random.Generator) -> list[Sample]:
    return S.unary(rng, lambda r, *shape: r.uniform(1.1, 3.0, size=shape))


@register(samples=_like("abs"), inplace=True, torch="absolute")
def absolute(input: Tensor) -> Tensor:
    """``abs`` by its other name."""
    return OPS["abs"].fn(input)


@register(samples=_unit, inplace=True)
def arccos(input: Tensor) -> Tensor:
    """``acos`` by its numpy name."""
    return OPS["acos"].fn(input)


@register(samples=_unit, inplace=True)
def arcsin(input: Tensor) -> Tensor:
    """``asin`` by its numpy name."""
    return OPS["asin"].fn(input)


@register(samples=_like("atan"), inplace=True)
def arctan(input: Tensor) -> Tensor:
    """``atan`` by its numpy name."""
    return OPS["atan"].fn(input)


@register(samples=_above_one, inplace=True)
def arccosh(input: Tensor) -> Tensor:
    """``acosh`` by its numpy name."""
    return OPS["acosh"].fn(input)


@register(samples=_like("asinh"), inplace=True)
def arcsinh(input: Tensor) -> Tensor:
    """``asinh`` by its numpy name."""
    return OPS["asinh"].fn(input)


@register(samples=_unit, inplace=True)
def arctanh(input: Tensor) -> Tensor:
    """``atanh`` by its numpy name."""
    return OPS["atanh"].fn(input)


# torch.greater(x, 2) takes a number as other, never as input
_COMPARISON = Binding(tensors=("input",), scalar_forms=True)


def _tensor_pairs(rng: np.random.Generator) -> list[Sample]:
    """atan2's samples with tensors on both sides (``torch.arctan2`` takes no number)."""
    return [s for s in _binary_plain("atan2")(rng) if not any(type(a) is float for a in s.args)]


@register(
    complex_inputs="\"atan2_cpu\" not implemented for '{type}'",
    samples=_tensor_pairs,
    inplace=True,
    binding=Binding(tensors=("input", "other")),
)
def arctan2(input: Any, other: Any) -> Tensor:
    """``atan2`` by its numpy name."""
    return OPS["atan2"].fn(input, other)


@register(samples=_like("div"), inplace=True)
@public_defaults(rounding_mode=None)
def divide(input: Any, other: Any, *, rounding_mode: str | None = UNSET) -> Tensor:
    """``div`` by its numpy name."""
    if rounding_mode is UNSET:
        return OPS["div"].fn(input, other)
    return OPS["div"].fn(input, other, rounding_mode=rounding_mode)


@register(samples=_binary_plain("div"), inplace=True)
def true_divide(input: Any, other: Any) -> Tensor:
    """``div`` without rounding."""
    return OPS["div"].fn(input, other)


@register(samples=_like("mul"), inplace=True)
def multiply(input: Any, other: Any) -> Tensor:
    """``mul`` by its numpy name."""
    return OPS["mul"].fn(input, other)


@register(samples=_like("sub"), inplace=True)
def subtract(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``sub`` by its numpy name."""
    return OPS["sub"].fn(input, other, alpha=alpha)


@register(samples=_like("neg"), inplace=True)
def negative(input: Tensor) -> Tensor:
    """``neg`` by its numpy name."""
    return OPS["neg"].fn(input)


@register(samples=_like("sign"), inplace=True)
def sgn(input: Tensor) -> Tensor:
    """``sign`` (for real tensors ``sgn`` is ``sign``; PyTorch records its own node),
    ``z / |z|`` for complex ones."""
    if isinstance(input, Tensor) and input._data.dtype.kind == "c":
        return SgnBackward0.apply(input)
    return composite("SgnBackward0", OPS["sign"].fn, input)


@register(
    complex_inputs="trunc is not supported for complex inputs", samples=_like("trunc"), inplace=True
)
def fix(input: Tensor) -> Tensor:
    """``trunc`` by its numpy name."""
    return OPS["trunc"].fn(input)


@register(
    complex_inputs="\"gt_cpu\" not implemented for '{type}'",
    samples=_like("gt"),
    differentiable=False,
    binding=_COMPARISON,
)
def greater(input: Any, other: Any) -> Tensor:
    """``gt`` by its numpy name."""
    return OPS["gt"].fn(input, other)


@register(
    complex_inputs="\"ge_cpu\" not implemented for '{type}'",
    samples=_like("ge"),
    differentiable=False,
    binding=_COMPARISON,
)
def greater_equal(input: Any, other: Any) -> Tensor:
    """``ge`` by its numpy name."""
    return OPS["ge"].fn(input, other)


@register(
    complex_inputs="\"lt_cpu\" not implemented for '{type}'",
    samples=_like("lt"),
    differentiable=False,
    binding=_COMPARISON,
)
def less(input: Any, other: Any) -> Tensor:
    """``lt`` by its numpy name."""
    return OPS["lt"].fn(input, other)


@register(
    complex_inputs="\"le_cpu\" not implemented for '{type}'",
    samples=_like("le"),
    differentiable=False,
    binding=_COMPARISON,
)
def less_equal(input: Any, other: Any) -> Tensor:
    """``le`` by its numpy name."""
    return OPS["le"].fn(input, other)


@register(samples=_like("ne"), differentiable=False, binding=_COMPARISON)
def not_equal(input: Any, other: Any) -> Tensor:
    """``ne`` by its numpy name."""
    return OPS["ne"].fn(input, other)


@register(samples=_like("cat"), method=False)
def concat(tensors: Any, dim: int = 0) -> Tensor:
    """``cat`` by its other name."""
    return OPS["cat"].fn(tensors, dim)


def _concatenate_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        Sample(s.args, {("axis" if k == "dim" else k): v for k, v in s.kwargs.items()}, s.note)
        for s in _like("cat")(rng)
    ]


@register(samples=_concatenate_samples, method=False)
def concatenate(tensors: Any, axis: int = 0) -> Tensor:
    """``cat`` by its numpy name (whose dim is ``axis``)."""
    return OPS["cat"].fn(tensors, axis)


@register(samples=_like("transpose"))
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``transpose`` by its numpy name."""
    return OPS["transpose"].fn(input, axis0, axis1)


@register(samples=_like("transpose"))
def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose`` by its other name."""
    return OPS["transpose"].fn(input, dim0, dim1)
