"""Arithmetic: add, sub, mul, div, neg, pow, reciprocal, square, abs, where and
the zero-gradient roundings. Each op's forward, backward, PyTorch name and
samples sit together."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..function import Function
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import arr, as_tensor, cast, operands


def _data(v: Any) -> Any:
    """A saved operand's array (Python numbers were saved as they are)."""
    return v.data if type(v) is Tensor else v


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t.data.shape, t.data.dtype))


class AddBackward0(Function):
    name = "AddBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype, alpha: Any = 1) -> np.ndarray:
        ctx.alpha = alpha
        other = arr(b, dtype)
        return np.add(arr(a, dtype), other if alpha == 1 else other * alpha, dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        return g, (g if ctx.alpha == 1 else g * ctx.alpha)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return g, (g if ctx.alpha == 1 else g * ctx.alpha)


class SubBackward0(Function):
    name = "SubBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype, alpha: Any = 1) -> np.ndarray:
        ctx.alpha = alpha
        other = arr(b, dtype)
        return np.subtract(arr(a, dtype), other if alpha == 1 else other * alpha, dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        return g, (-g if ctx.alpha == 1 else g * -ctx.alpha)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return g, (-g if ctx.alpha == 1 else g * -ctx.alpha)


class RsubBackward1(Function):
    """``number - tensor``."""

    name = "RsubBackward1"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, other: Any, dtype: np.dtype) -> np.ndarray:
        return np.subtract(np.asarray(other, dtype), cast(a.data, dtype))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return -g


class MulBackward0(Function):
    name = "MulBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:
        # PyTorch saves `other` when self needs grad and `self` when other does
        ctx.save_for_backward(a, b)
        return np.multiply(arr(a, dtype), arr(b, dtype), dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (g * b if need_a else None), (g * a if need_b else None)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        a, b = ctx.saved_tensors
        edge_a, edge_b = ctx.next_edges
        if a is b and edge_a is not None:
            # x * x: both gradients go to x, so send their sum down one edge
            # (one product instead of two and an addition)
            out = g * a.data
            out *= 2
            return out, None
        return (
            g * _data(b) if edge_a is not None else None,
            g * _data(a) if edge_b is not None else None,
        )


class DivBackward0(Function):
    name = "DivBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:
        if dtype.kind != "f":
            dtype = dtypes.DEFAULT_FLOAT
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(arr(a, dtype), arr(b, dtype), dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (g / b if need_a else None), (-g * a / (b * b) if need_b else None)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        a, b = _data(a), _data(b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (g / b if need_a else None), (-g * a / (b * b) if need_b else None)


class NegBackward0(Function):
    name = "NegBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.negative(a.data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return -g

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        return -g


class PowBackward0(Function):
    """``tensor ** number``."""

    name = "PowBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, exponent: Any, dtype: np.dtype) -> np.ndarray:
        ctx.exponent = exponent
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if exponent == 2:
                x = cast(a.data, dtype)
                return np.multiply(x, x)
            return np.power(cast(a.data, dtype), np.asarray(exponent, dtype))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 0:
            return _zeros_like(g)
        if p == 2:
            return g * (a * 2.0)
        return g * (pow(a, p - 1) * p)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 0:
            return np.zeros_like(g)
        x = a.data
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p == 2:
                return g * (x * 2.0)
            return g * (np.power(x, p - 1) * p)


class PowBackward1(Function):
    """``tensor ** tensor``."""

    name = "PowBackward1"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, *, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(a, b)
        ctx.save_result()
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.power(cast(a.data, dtype), cast(b.data, dtype))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if need_a:
            ga = where(b == 0.0, 0.0, g * b * pow(a, b - 1.0))
        if need_b:
            from .elementwise import log

            out = ctx.result
            gb = where((a == 0.0) & (b >= 0.0), 0.0, g * out * log(a))
        return ga, gb


class PowBackward2(Function):
    """``number ** tensor``."""

    name = "PowBackward2"

    @staticmethod
    def forward(ctx: Any, b: Tensor, *, base: Any, dtype: np.dtype) -> np.ndarray:
        ctx.base = base
        ctx.save_for_backward(b)
        ctx.save_result()
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return np.power(np.asarray(base, dtype), cast(b.data, dtype))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (b,) = ctx.saved_tensors
        out = ctx.result
        if ctx.base == 0:
            return where(b >= 0.0, 0.0, g * out * float("-inf"))
        return g * out * float(np.log(ctx.base))


class ReciprocalBackward0(Function):
    name = "ReciprocalBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_result()
        x = a.data if dtypes.is_floating(a.dtype) else a.data.astype(dtypes.DEFAULT_FLOAT)
        with np.errstate(divide="ignore"):
            return np.reciprocal(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        out = ctx.result
        return -g * out * out


class AbsBackward0(Function):
    name = "AbsBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        return np.abs(a.data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g * sign(a)


def _zero_grad_function(fn_name: str, np_fn: Any) -> type[Function]:
    """Piecewise-constant ops: a node PyTorch names, and a zero gradient."""

    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np_fn(a.data)

    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _zeros_like(g)

    return type(
        fn_name,
        (Function,),
        {"name": fn_name, "forward": staticmethod(forward), "backward": staticmethod(backward)},
    )


SignBackward0 = _zero_grad_function("SignBackward0", np.sign)
FloorBackward0 = _zero_grad_function("FloorBackward0", np.floor)
CeilBackward0 = _zero_grad_function("CeilBackward0", np.ceil)
RoundBackward0 = _zero_grad_function("RoundBackward0", np.round)


class WhereBackward0(Function):
    name = "WhereBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, cond: Tensor, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(cond)
        return np.asarray(np.where(cond.data, arr(a, dtype), arr(b, dtype)), dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[None, Tensor | None, Tensor | None]:
        (cond,) = ctx.saved_tensors
        _, need_a, need_b = ctx.needs_input_grad
        zero = _zeros_like(g)
        return (
            None,
            where(cond, g, zero) if need_a else None,
            where(cond, zero, g) if need_b else None,
        )


# -- public functions -------------------------------------------------------


@register(samples=S.binary, inplace=True, operators=("__add__", "__radd__", "__iadd__"))
def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """Elementwise sum ``input + alpha * other``, broadcasting."""
    if type(input) is Tensor and type(other) is float and input.data.dtype.kind == "f":
        return AddBackward0.apply(input, other, dtype=input.data.dtype, alpha=alpha)
    rt, (a, b) = operands(input, other)
    return AddBackward0.apply(a, b, dtype=rt, alpha=alpha)


@register(samples=S.binary, inplace=True, operators=("__sub__", "__isub__"))
def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """Elementwise difference ``input - alpha * other``, broadcasting."""
    if type(input) is Tensor:
        if type(other) is float and input.data.dtype.kind == "f":
            return SubBackward0.apply(input, other, dtype=input.data.dtype, alpha=alpha)
        rt, (a, b) = operands(input, other)
    else:
        rt, (a, b) = operands(as_tensor(input), other)
    return SubBackward0.apply(a, b, dtype=rt, alpha=alpha)


class RsubBackward0(Function):
    """``torch.rsub(input, other)`` with two tensors: ``other - input``."""

    name = "RsubBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:
        return np.subtract(arr(b, dtype), arr(a, dtype), dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        return -g, g


@register(
    samples=lambda rng: [sample(S.rand(rng, 3), 2.0), sample(S.rand(rng, 2, 3), S.rand(rng, 3))],
    method=False,
    operators=("__rsub__",),
)
def rsub(input: Any, other: Any) -> Tensor:
    """``other - input`` (PyTorch's ``torch.rsub``; ``number - tensor`` records RsubBackward1)."""
    if isinstance(other, Tensor):
        rt, (a, b) = operands(as_tensor(input), other)
        return RsubBackward0.apply(a, b, dtype=rt)
    a = as_tensor(input)
    return RsubBackward1.apply(a, other=other, dtype=dtypes.result_type(a, other))


@register(samples=S.binary, inplace=True, operators=("__mul__", "__rmul__", "__imul__"))
def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product, broadcasting."""
    if type(input) is Tensor and type(other) is float and input.data.dtype.kind == "f":
        # tensor * number, the commonest call: skip the general promotion (hot path)
        return MulBackward0.apply(input, other, dtype=input.data.dtype)
    rt, (a, b) = operands(input, other)
    return MulBackward0.apply(a, b, dtype=rt)


@register(
    samples=lambda rng: S.binary(rng, S.rand, S.away_from_zero),
    inplace=True,
    operators=("__truediv__", "__itruediv__"),
)
def div(input: Any, other: Any) -> Tensor:
    """Elementwise true division, broadcasting (integers divide to float)."""
    rt, (a, b) = operands(as_tensor(input) if not isinstance(input, Tensor) else input, other)
    return DivBackward0.apply(a, b, dtype=rt)


def rdiv(input: Tensor, other: Any) -> Tensor:
    """``number / tensor`` as PyTorch computes it: ``tensor.reciprocal() * number``."""
    return mul(reciprocal(input), other)


@register(samples=S.unary, inplace=True, operators=("__neg__",))
def neg(input: Tensor) -> Tensor:
    """Elementwise negation."""
    return NegBackward0.apply(as_tensor(input))


def _pow_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 2),
        sample(S.rand(rng, 4), 3),
        sample(S.positive(rng, 4), 0.5),
        sample(S.away_from_zero(rng, 3), -2),
        sample(S.rand(rng, 3), 0),
        sample(S.rand(rng), 3, note="0-d"),
        sample(S.positive(rng, 2, 3), S.rand(rng, 3), note="tensor ** tensor"),
        sample(S.positive(rng, 2, 1), S.rand(rng, 1, 2), note="tensor ** tensor, broadcast"),
        sample(2.0, S.rand(rng, 3), note="number ** tensor"),
        sample(S.rand(rng, 0, 2), 2, note="empty"),
    ]


@register(samples=_pow_samples, inplace=True, operators=("__pow__",), reflected=("__rpow__",))
def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    """``input ** exponent`` for tensor/number on either side."""
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        if isinstance(exponent, (list, tuple, np.ndarray)):
            exponent = as_tensor(exponent)
        else:
            rt = dtypes.result_type(input, exponent)
            return PowBackward0.apply(input, exponent=exponent, dtype=rt)
    if not isinstance(input, Tensor):
        rt = dtypes.result_type(input, exponent)
        b = as_tensor(exponent)
        out = PowBackward2.apply(b, base=input, dtype=rt)
        return out
    rt, (a, b) = operands(as_tensor(input), as_tensor(exponent))
    return PowBackward1.apply(a, b, dtype=rt)


@register(samples=lambda rng: S.unary(rng, S.away_from_zero), inplace=True)
def reciprocal(input: Tensor) -> Tensor:
    """Elementwise ``1 / input``."""
    return ReciprocalBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def square(input: Tensor) -> Tensor:
    """Elementwise ``input ** 2`` (PyTorch records PowBackward0)."""
    return pow(as_tensor(input), 2)


@register(samples=lambda rng: S.unary(rng, S.away_from_zero), inplace=True, operators=("__abs__",))
def abs(input: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """Elementwise absolute value; the gradient at 0 is 0, as in PyTorch."""
    return AbsBackward0.apply(as_tensor(input))


@register(samples=S.unary)
def sign(input: Tensor) -> Tensor:
    """Elementwise sign (-1, 0, 1); zero gradient."""
    return SignBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def floor(input: Tensor) -> Tensor:
    """Elementwise floor; zero gradient."""
    return FloorBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def ceil(input: Tensor) -> Tensor:
    """Elementwise ceiling; zero gradient."""
    return CeilBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def round(input: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """Elementwise rounding half to even; zero gradient."""
    return RoundBackward0.apply(as_tensor(input))


def _where_samples(rng: np.random.Generator) -> list[Any]:
    from ..registry import Const

    return [
        sample(Const(rng.random((2, 3)) > 0.5), S.rand(rng, 2, 3), S.rand(rng, 2, 3)),
        sample(Const(rng.random((3,)) > 0.5), S.rand(rng, 2, 3), S.rand(rng, 1)),
        sample(Const(rng.random((2, 1)) > 0.5), S.rand(rng, 2, 3), 0.0, note="scalar other"),
    ]


@register(samples=_where_samples, method=False)
def where(condition: Any, input: Any, other: Any) -> Tensor:
    """Elementwise ``input if condition else other``, broadcasting all three."""
    cond = as_tensor(condition)
    if cond.dtype != dtypes.bool_:
        cond = Tensor._make(cond.data.astype(bool))
    rt, (a, b) = operands(input, other)
    return WhereBackward0.apply(cond, a, b, dtype=rt)
