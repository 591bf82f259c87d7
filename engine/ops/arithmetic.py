"""Arithmetic: add, sub, mul, div, neg, pow, reciprocal, square, abs, where and
the zero-gradient roundings. Each op's forward, backward, PyTorch name and
samples sit together."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..binding import Binding
from ..dual import FROM_BACKWARD, LINEAR, SELF_ADJOINT
from ..errors import BadArgumentsError, DtypeMismatchError, NotImplementedBackward
from ..function import Function
from ..primitives import MulBackward1, WhereBackward0, conj, conj_array, real_part
from ..registry import Const, Domain, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import UNSET, arr, as_tensor, broadcast_shape, cast, operands, public_defaults
from .elementwise import KernelDtypeError, log

# _same_dtype: two tensors cast to ``dtype`` (``arr``) make ``dtype`` by numpy's own rule,
# so the binary forwards leave out ``dtype=``, which costs a fifth of a small op's ufunc
# call; a Python number beside a tensor keeps it (numpy's weak scalar costs the same).


def _data(v: Any) -> Any:
    """A saved operand's array (Python numbers were saved as they are)."""
    return v._data if type(v) is Tensor else v


def _conj(v: Any) -> Any:
    """A saved operand conjugated (a real tensor or a Python number as it is)."""
    return conj(v) if type(v) is Tensor else v


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(np.zeros(t._data.shape, t._data.dtype))


def not_implemented_for(kernel: str, dtype: np.dtype) -> KernelDtypeError:
    return KernelDtypeError(f"\"{kernel}\" not implemented for '{dtypes.type_name(dtype)}'")


def _dtype_of(v: Any) -> np.dtype:
    return v._data.dtype if isinstance(v, Tensor) else dtypes.scalar_dtype(v)


BOOL_SUB_MESSAGE = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
    "to invert a mask, use the `~` or `logical_not()` operator instead."
)
BOOLS_SUB_MESSAGE = (
    "Subtraction, the `-` operator, with two bool tensors is not supported. "
    "Use the `^` or `logical_xor()` operator instead."
)
BOOL_NEG_MESSAGE = (
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)
NEGATIVE_POWER_MESSAGE = "Integers to negative integer powers are not allowed."


def _check_sub(a: Any, b: Any) -> None:
    """PyTorch refuses bool operands in subtraction (``-`` would be ambiguous)."""
    bools = (_dtype_of(a) == dtypes.bool_) + (_dtype_of(b) == dtypes.bool_)
    if bools == 2:
        raise DtypeMismatchError(BOOLS_SUB_MESSAGE)
    if bools:
        raise DtypeMismatchError(BOOL_SUB_MESSAGE)


def _int_power(base: np.ndarray, exponent: Any, dtype: np.dtype) -> np.ndarray:
    """Integer ``base ** exponent`` as PyTorch computes it for a tensor exponent: a
    negative exponent gives 0 except for bases 1 and -1 (numpy raises instead)."""
    base = np.asarray(base, dtype)
    e = np.asarray(exponent, dtype)
    if dtype == dtypes.bool_:
        return np.asarray(np.logical_or(base, np.logical_not(e)))
    negative = e < 0
    with np.errstate(over="ignore"):
        out = np.power(base, np.where(negative, 0, e))
    if negative.any():
        odd = (e % 2) == 1
        unit = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
        out = np.where(negative, unit.astype(dtype), out).astype(dtype)
    return np.asarray(out, dtype)


def _power(base: Any, exponent: Any, dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iub":
        return _int_power(base, exponent, dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.asarray(np.power(np.asarray(base, dtype), np.asarray(exponent, dtype)))


def not_implemented_function(aten: str) -> type[Function]:
    """The node PyTorch records for an op without a derivative formula: the result
    requires grad, and a backward through it fails with PyTorch's message."""

    def forward(ctx: Any, *args: Any, **params: Any) -> Any:
        return params.pop("compute")(*args, **params)

    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedBackward(f"derivative for aten::{aten} is not implemented")

    return type(
        "NotImplemented_" + aten,
        (Function,),
        {
            "name": "NotImplemented",  # type(grad_fn).__name__ and the repr in PyTorch
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "jvp": FROM_BACKWARD,  # whose backward raises PyTorch's not-implemented error
        },
    )


class AddBackward0(Function):
    name = "AddBackward0"
    complex_ok = True
    jvp = LINEAR
    broadcasts = True
    ctx_fields = ("alpha",)

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype, alpha: Any = 1) -> np.ndarray:
        ctx.alpha = alpha
        other = arr(b, dtype)
        if alpha == 1 and type(b) is Tensor and type(a) is Tensor:  # see _same_dtype
            return np.add(arr(a, dtype), other)
        return np.add(arr(a, dtype), other if alpha == 1 else other * alpha, dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        return g, (g if ctx.alpha == 1 else g * ctx.alpha)

    vjp_row = "per-op"  # the numpy twin below earns its place on this bench row

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if ctx.alpha == 1:
            return g, g
        return g, g * ctx.alpha


class SubBackward0(Function):
    name = "SubBackward0"
    complex_ok = True
    jvp = LINEAR
    broadcasts = True
    ctx_fields = ("alpha",)

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype, alpha: Any = 1) -> np.ndarray:
        ctx.alpha = alpha
        other = arr(b, dtype)
        if alpha == 1 and type(b) is Tensor and type(a) is Tensor:  # see _same_dtype
            return np.subtract(arr(a, dtype), other)
        return np.subtract(arr(a, dtype), other if alpha == 1 else other * alpha, dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        return g, (-g if ctx.alpha == 1 else g * -ctx.alpha)

    vjp_row = "per-op"  # the numpy twin below earns its place on this bench row

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if ctx.alpha == 1:
            return g, -g
        return g, g * -ctx.alpha


class RsubBackward1(Function):
    """``number - tensor``."""

    name = "RsubBackward1"
    jvp = LINEAR
    ctx_fields = ("alpha",)
    jvp_params = {"other": 0}  # other - alpha * a: affine in a

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, other: Any, dtype: np.dtype, alpha: Any = 1) -> np.ndarray:
        ctx.alpha = alpha
        x = cast(a._data, dtype)
        return np.subtract(np.asarray(other, dtype), x if alpha == 1 else x * alpha, dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return -g if ctx.alpha == 1 else g * -ctx.alpha


class MulBackward0(Function):
    name = "MulBackward0"
    complex_ok = True  # g times the other operand's conjugate
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:
        # PyTorch saves `other` when self needs grad and `self` when other does, so an
        # in-place edit of an operand nobody's gradient needs does not fail backward
        # (`other` first: PyTorch unpacks, and so version-checks, it before `self`)
        need = ctx.needs_input_grad
        ctx.save_for_backward(b if need[0] else None, a if need[1] else None)
        if type(b) is Tensor and type(a) is Tensor:  # see _same_dtype
            return np.multiply(arr(a, dtype), arr(b, dtype))
        return np.multiply(arr(a, dtype), arr(b, dtype), dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        b, a = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (g * _conj(b) if need_a else None), (g * _conj(a) if need_b else None)

    vjp_row = "per-op"  # the numpy twin below earns its place on this bench row

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        b, a = ctx.saved_tensors
        edge_a, edge_b = ctx.next_edges
        if a is b and edge_a is not None:
            # x * x: both gradients go to x, so send their sum down one edge
            # (one product instead of two and an addition)
            out = g * conj_array(a._data)
            out *= 2
            return out, None
        return (
            g * conj_array(_data(b)) if edge_a is not None else None,
            g * conj_array(_data(a)) if edge_b is not None else None,
        )


class DivBackward0(Function):
    name = "DivBackward0"
    complex_ok = True  # g over the conjugates (a holomorphic quotient)
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype) -> np.ndarray:
        if dtype.kind not in "fc":
            dtype = dtypes.DEFAULT_FLOAT
        # PyTorch saves `self` only when `other` needs grad (the divisor always), and
        # unpacks (version-checks) `other` first
        ctx.save_for_backward(b, a if ctx.needs_input_grad[1] else None)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(arr(a, dtype), arr(b, dtype), dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        b, a = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        # PyTorch's div_tensor_other_backward: (a / b) / b, not a / (b * b), so an
        # infinite or tiny divisor gives what PyTorch gives, and records the same ops
        b, a = _conj(b), _conj(a)  # the identity for real operands
        return (g / b if need_a else None), (-g * ((a / b) / b) if need_b else None)


class NegBackward0(Function):
    name = "NegBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.negative(a._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return -g


class PowBackward0(Function):
    """``tensor ** number``."""

    name = "PowBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, exponent: Any, dtype: np.dtype) -> np.ndarray:
        ctx.exponent = exponent
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if exponent == 2:
                x = cast(a._data, dtype)
                return np.multiply(x, x)
            return _power(cast(a._data, dtype), exponent, dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 0:
            return _zeros_like(g)
        # PyTorch's pow_backward: grad * (exponent * self.pow(exponent - 1)), recorded as
        # written (square's second derivative is a graph through pow(x, 1))
        return g * MulBackward1.apply(pow(a, p - 1), by=p)


class PowBackward1(Function):
    """``tensor ** tensor``."""

    name = "PowBackward1"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, *, dtype: np.dtype) -> np.ndarray:
        ctx.save_for_backward(a, b)
        ctx.save_result()
        return _power(cast(a._data, dtype), cast(b._data, dtype), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        # PyTorch's pow_backward_self and pow_backward_exponent, as written (the
        # exponent's: grad times the where, so a NaN or inf grad is not masked)
        if need_a:
            ga = where(b == 0.0, 0.0, g * (b * pow(a, b - 1.0)))
        if need_b:
            out = ctx.result
            gb = g * where((a == 0.0) & (b >= 0.0), 0.0, out * log(a))
        return ga, gb


class PowBackward2(Function):
    """``number ** tensor``."""

    name = "PowBackward2"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, b: Tensor, *, base: Any, dtype: np.dtype) -> np.ndarray:
        ctx.base = base
        ctx.save_for_backward(b)
        ctx.save_result()
        return _power(np.asarray(base, dtype), cast(b._data, dtype), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (b,) = ctx.saved_tensors
        out = ctx.result
        if ctx.base == 0:
            return where(b >= 0.0, 0.0, g * out * float("-inf"))
        return g * MulBackward1.apply(out, by=float(np.log(ctx.base)))  # grad * (result * log)


class ReciprocalBackward0(Function):
    name = "ReciprocalBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_result()
        x = a._data if a._data.dtype.kind in "fc" else a._data.astype(dtypes.DEFAULT_FLOAT)
        with np.errstate(divide="ignore"):
            return np.reciprocal(x)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        out = ctx.result
        return -g * out * out


class AbsBackward0(Function):
    name = "AbsBackward0"
    complex_ok = True  # g sgn(z): the direction of steepest growth of |z|

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        return np.abs(a._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g * SgnBackward0.apply(a)  # PyTorch's grad * self.sgn()

    @staticmethod
    def jvp(ctx: Any, t: Tensor) -> Tensor:
        """``re(conj(sgn z) t)`` (``t sgn(x)`` for a real input)."""
        (a,) = ctx.saved_tensors
        s = SgnBackward0.apply(a)
        return real_part(conj(s) * t) if a._data.dtype.kind == "c" else t * s


def _zero_grad_function(fn_name: str, np_fn: Any) -> type[Function]:
    """Piecewise-constant ops: a node PyTorch names, and a zero gradient."""

    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np_fn(a._data)

    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _zeros_like(g)

    return type(
        fn_name,
        (Function,),
        {
            "name": fn_name,
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
            "jvp": SELF_ADJOINT,  # a zero derivative, elementwise
        },
    )


def _sign(x: np.ndarray) -> np.ndarray:
    """PyTorch's sign: 0 at NaN (numpy gives NaN), and bool stays bool."""
    if x.dtype.kind == "b":
        return x.copy()
    out = np.asarray(np.sign(x))
    if out.dtype.kind == "f":
        out = np.where(np.isnan(out), np.zeros((), out.dtype), out)
    return out


SignBackward0 = _zero_grad_function("SignBackward0", _sign)


class SgnBackward0(Function):
    """``z / |z|`` (0 at 0): the sign of a real tensor, whose gradient is zero; for a
    complex one PyTorch's ``sgn_backward``, ``(g - re(g conj(s)) s) / |z|``."""

    name = "SgnBackward0"
    complex_ok = True

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.complex = a._data.dtype.kind == "c"
        if ctx.complex:  # a real sign's gradient reads nothing
            ctx.save_for_backward(a)
            ctx.save_result()
        return _sign(a._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        if not ctx.complex:
            return _zeros_like(g)
        (a,) = ctx.saved_tensors
        s, r = ctx.result, AbsBackward0.apply(a)
        out = (g - real_part(g * conj(s)) * s) / r
        return where(r == 0.0, 0.0, out)

    @staticmethod
    def jvp(ctx: Any, t: Tensor) -> Tensor:
        """``(t - s re(conj(s) t)) / |z|`` (zero for a real input)."""
        if not ctx.complex:
            return _zeros_like(t)
        (a,) = ctx.saved_tensors
        s, r = ctx.result, AbsBackward0.apply(a)
        return where(r == 0.0, 0.0, (t - s * real_part(conj(s) * t)) / r)


FloorBackward0 = _zero_grad_function("FloorBackward0", np.floor)
CeilBackward0 = _zero_grad_function("CeilBackward0", np.ceil)
RoundBackward0 = _zero_grad_function("RoundBackward0", np.round)
RoundDecimals0Backward1 = _zero_grad_function("RoundBackward1", np.round)


# -- public functions -------------------------------------------------------


@register(samples=S.binary, inplace=True, operators=("__add__", "__radd__", "__iadd__"))
def add(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """Elementwise sum ``input + alpha * other``, broadcasting."""
    if type(input) is Tensor:  # a floating tensor and a number or a tensor of its dtype
        dt = input._data.dtype
        if dt.kind == "f" and (
            type(other) is float or (type(other) is Tensor and other._data.dtype == dt)
        ):
            return AddBackward0.apply(input, other, dtype=dt, alpha=alpha)
    rt, (a, b) = operands(input, other)
    _check_alpha(rt, alpha)
    return AddBackward0.apply(a, b, dtype=rt, alpha=alpha)


def _check_alpha(rt: np.dtype, alpha: Any) -> None:
    """PyTorch refuses a float ``alpha`` for an integral result (numpy would not cast)."""
    if alpha != 1 and rt.kind in "biu" and isinstance(alpha, (float, np.floating)):
        raise BadArgumentsError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )


@register(samples=S.binary, inplace=True, operators=("__sub__", "__isub__"))
def sub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """Elementwise difference ``input - alpha * other``, broadcasting (bools refused)."""
    if type(input) is Tensor:
        dt = input._data.dtype  # a floating tensor and a number or a tensor of its dtype
        if dt.kind == "f" and (
            type(other) is float or (type(other) is Tensor and other._data.dtype == dt)
        ):
            return SubBackward0.apply(input, other, dtype=dt, alpha=alpha)
        _check_sub(input, other)
        rt, (a, b) = operands(input, other)
    else:
        _check_sub(input, other)
        # a number first is a wrapped number, ranked below 0-d tensors (PyTorch)
        rt = dtypes.result_type(input, other)
        rt, (a, b) = operands(as_tensor(input, rt), other)
    _check_alpha(rt, alpha)
    return SubBackward0.apply(a, b, dtype=rt, alpha=alpha)


class RsubBackward0(Function):
    """``torch.rsub(input, other)`` with two tensors: ``other - input``."""

    name = "RsubBackward0"
    jvp = LINEAR
    broadcasts = True
    ctx_fields = ("alpha",)

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype, alpha: Any = 1) -> np.ndarray:
        ctx.alpha = alpha
        x = arr(a, dtype)
        return np.subtract(arr(b, dtype), x if alpha == 1 else x * alpha, dtype=dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        return (-g if ctx.alpha == 1 else g * -ctx.alpha), g


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3), 2.0),
        sample(S.rand(rng, 2, 3), S.rand(rng, 3)),
        sample(S.rand(rng, 2, 3), S.rand(rng, 3), alpha=-3.125, note="alpha"),
        sample(S.rand(rng, 3), 2.0, alpha=2, note="alpha, number"),
    ],
    method=False,
    operators=("__rsub__",),
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def rsub(input: Any, other: Any, *, alpha: float = 1) -> Tensor:
    """``other - alpha * input`` (PyTorch's ``torch.rsub``; ``number - tensor`` records
    RsubBackward1)."""
    _check_sub(input, other)
    if isinstance(other, Tensor):
        rt, (a, b) = operands(as_tensor(input), other)
        _check_alpha(rt, alpha)
        return RsubBackward0.apply(a, b, dtype=rt, alpha=alpha)
    a = as_tensor(input)
    rt = dtypes.result_type(a, other)
    _check_alpha(rt, alpha)
    return RsubBackward1.apply(a, other=other, dtype=rt, alpha=alpha)


@register(samples=S.binary, inplace=True, operators=("__mul__", "__rmul__", "__imul__"))
def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product, broadcasting."""
    if type(input) is Tensor:
        # tensor * number or two tensors of one floating dtype, the commonest calls: skip
        # the general promotion (hot path)
        dt = input._data.dtype
        if dt.kind == "f" and (
            type(other) is float or (type(other) is Tensor and other._data.dtype == dt)
        ):
            return MulBackward0.apply(input, other, dtype=dt)
    rt, (a, b) = operands(input, other)
    return MulBackward0.apply(a, b, dtype=rt)


# -- rounding division and remainders ---------------------------------------------


def _int_divisor(b: np.ndarray, dtype: np.dtype) -> None:
    if dtype.kind in "iu" and not np.all(b):
        raise DtypeMismatchError("ZeroDivisionError")


def _div_floor(a: Any, b: Any, dtype: np.dtype) -> np.ndarray:
    """Python's floor division (numpy's matches PyTorch's div_floor, also at 0 and inf)."""
    x, y = np.asarray(a, dtype), np.asarray(b, dtype)
    _int_divisor(y, dtype)
    with np.errstate(all="ignore"):
        return np.asarray(np.floor_divide(x, y))


def _div_trunc(a: Any, b: Any, dtype: np.dtype) -> np.ndarray:
    x, y = np.asarray(a, dtype), np.asarray(b, dtype)
    _int_divisor(y, dtype)
    with np.errstate(all="ignore"):
        if dtype.kind == "f":
            return np.asarray(np.trunc(np.divide(x, y)))
        q = np.floor_divide(x, y)
        # C division rounds toward zero: one more where the signs differ and it is inexact
        return np.asarray(q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0))), dtype)


def _remainder(a: Any, b: Any, dtype: np.dtype) -> np.ndarray:
    x, y = np.asarray(a, dtype), np.asarray(b, dtype)
    _int_divisor(y, dtype)
    with np.errstate(all="ignore"):
        if dtype.kind != "f":
            return np.asarray(np.remainder(x, y))
        # PyTorch's kernel: fmod, moved into the divisor's sign (a zero keeps the dividend's)
        r = np.fmod(x, y)
        return np.asarray(np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r))


def _fmod(a: Any, b: Any, dtype: np.dtype) -> np.ndarray:
    x, y = np.asarray(a, dtype), np.asarray(b, dtype)
    _int_divisor(y, dtype)
    with np.errstate(all="ignore"):
        return np.asarray(np.fmod(x, y))


class DivBackward2(Function):
    """``div`` with a rounding mode: piecewise constant, so zero gradients."""

    name = "DivBackward2"
    jvp = SELF_ADJOINT
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Any, b: Any, *, dtype: np.dtype, mode: str) -> np.ndarray:
        kernel = _div_floor if mode == "floor" else _div_trunc
        return kernel(_data(a), _data(b), dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_a, need_b = ctx.needs_input_grad
        return (_zeros_like(g) if need_a else None), (_zeros_like(g) if need_b else None)


def _rounding_operands(kernel: str, input: Any, other: Any) -> tuple[np.dtype, list[Any]]:
    rt, (a, b) = operands(as_tensor(input), as_tensor(other) if isinstance(other, bool) else other)
    if rt == dtypes.bool_ or rt.kind == "c":
        raise not_implemented_for(kernel, rt)
    b = b if isinstance(b, Tensor) else as_tensor(b, rt)
    broadcast_shape(a.shape, b.shape)  # PyTorch's message, not numpy's
    return rt, [a, b]


def _div_samples(rng: np.random.Generator) -> list[Any]:
    ints = Const(np.array([-7, -3, 0, 3, 7]))
    return [
        *S.binary(rng, S.rand, S.away_from_zero),
        sample(
            S.rand(rng, 2, 3, low=-5, high=5),
            S.away_from_zero(rng, 3),
            rounding_mode="floor",
            note="floor",
        ),
        sample(S.rand(rng, 4, low=-5, high=5), 0.75, rounding_mode="trunc", note="trunc"),
        sample(ints, Const(np.array([2, -2, 3, -3, 2])), rounding_mode="trunc", note="int trunc"),
        sample(ints, Const(np.array([2, -2, 3, -3, 2])), rounding_mode="floor", note="int floor"),
        sample(ints, 2, note="int true division"),
    ]


class DivModeNoneBackward2(DivBackward0):
    """True division with ``rounding_mode=None`` given: PyTorch's ``div.Tensor_mode``."""

    name = "DivBackward2"


@register(
    samples=_div_samples,
    inplace=True,
    operators=("__truediv__", "__itruediv__"),
    domain=(Domain(), Domain(0.25, 3.0, signed=True)),
)
@public_defaults(rounding_mode=None)
def div(input: Any, other: Any, *, rounding_mode: str | None = UNSET) -> Tensor:
    """Elementwise division, broadcasting: true division (integers divide to float), or
    rounded toward zero (``"trunc"``) or down (``"floor"``) in the operands' dtype."""
    if rounding_mode is None or rounding_mode is UNSET:
        rt, (a, b) = operands(as_tensor(input) if not isinstance(input, Tensor) else input, other)
        fn = DivBackward0 if rounding_mode is UNSET else DivModeNoneBackward2
        return fn.apply(a, b, dtype=rt)
    if rounding_mode not in ("trunc", "floor"):
        raise BadArgumentsError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    rt, (a, b) = _rounding_operands(f"div_{rounding_mode}_cpu", input, other)
    return DivBackward2.apply(a, b, dtype=rt, mode=rounding_mode)


FloorDivideNotImplemented = not_implemented_function("floor_divide")
RemainderNotImplemented = not_implemented_function("remainder")


def _int_samples(rng: np.random.Generator) -> list[Any]:
    """Integer and float operands that need no grad, signs mixed (the database compares
    values and dtypes; the float gradients are checked by the op's own tests)."""
    return [
        sample(Const(np.array([-7, -3, 0, 3, 7])), Const(np.array([2, -2, 3, -3, 2])), note="int"),
        sample(Const(np.array([-7, 7], np.int32)), 3, note="int32 and number"),
        sample(
            Const(np.array([-7.5, -0.5, 3.25, 7.0])), Const(S.away_from_zero(rng, 4)), note="float"
        ),
        sample(Const(np.array([-7.5, 3.25])), -2.0, note="float and number"),
    ]


@register(
    complex_inputs="\"div_floor_cpu\" not implemented for '{type}'",
    samples=_int_samples,
    differentiable=False,
    inplace=True,
    operators=("__floordiv__", "__ifloordiv__"),
    reflected=("__rfloordiv__",),
)
def floor_divide(input: Any, other: Any) -> Tensor:
    """Elementwise division rounded down, broadcasting (PyTorch has no derivative for it:
    the result of float inputs records a node that refuses backward)."""
    rt, (a, b) = _rounding_operands("div_floor_cpu", input, other)
    return FloorDivideNotImplemented.apply(a, b, compute=_floor_divide_arrays, dtype=rt)


def _floor_divide_arrays(a: Tensor, b: Tensor, *, dtype: np.dtype) -> np.ndarray:
    return _div_floor(a._data, b._data, dtype)


class RemainderBackward0(Function):
    """``remainder(tensor, number)``: the gradient of ``input`` passes unchanged."""

    name = "RemainderBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, other: Any, dtype: np.dtype, kernel: Any) -> np.ndarray:
        return kernel(a._data, other, dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return g


class RemainderBackward1(Function):
    """``remainder(a, b)``: d/db is ``-floor(a / b)``."""

    name = "RemainderBackward1"
    jvp = SELF_ADJOINT
    broadcasts = True
    mode = "floor"

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, *, dtype: np.dtype, kernel: Any) -> np.ndarray:
        ctx.save_for_backward(a, b)
        return kernel(a._data, b._data, dtype)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:  # type: ignore[override]
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        gb = -g * div(a, b, rounding_mode=cls.mode) if need_b else None
        return (g if need_a else None), gb


class FmodBackward0(RemainderBackward0):
    name = "FmodBackward0"


class FmodBackward1(RemainderBackward1):
    """``fmod(a, b)``: d/db is ``-trunc(a / b)``."""

    name = "FmodBackward1"
    mode = "trunc"


def _modulo(
    kernel: Any, name: str, scalar_fn: Any, tensor_fn: Any, input: Any, other: Any
) -> Tensor:
    if not isinstance(input, Tensor):
        rt, (a, b) = _rounding_operands(name, input, other)
        return RemainderNotImplemented.apply(a, b, compute=_modulo_arrays, kernel=kernel, dtype=rt)
    if isinstance(other, Tensor):
        rt, (a, b) = _rounding_operands(name, input, other)
        return tensor_fn.apply(a, b, dtype=rt, kernel=kernel)
    rt = dtypes.result_type(input, other)
    if rt == dtypes.bool_:
        raise not_implemented_for(name, rt)
    return scalar_fn.apply(input, other=other, dtype=rt, kernel=kernel)


def _modulo_arrays(a: Tensor, b: Tensor, *, kernel: Any, dtype: np.dtype) -> np.ndarray:
    return kernel(a._data, b._data, dtype)


def _modulo_samples(rng: np.random.Generator) -> list[Any]:
    def a(rng: np.random.Generator, *shape: int) -> np.ndarray:
        # quotients kept away from integers, where the gradient of b jumps
        return rng.integers(-4, 5, size=shape) * 1.5 + rng.uniform(0.3, 1.2, size=shape)

    return [
        sample(a(rng, 2, 3), Const(np.full(3, 1.5)), note="tensor, constant divisor"),
        sample(a(rng, 2, 3), np.full(3, 1.5) + rng.uniform(-0.05, 0.05, 3), note="tensor"),
        sample(a(rng, 4), np.full(4, -1.5) + rng.uniform(-0.05, 0.05, 4), note="negative divisor"),
        sample(a(rng, 4), 1.5, note="number divisor"),
        sample(a(rng), -1.5, note="0-d"),
        *_int_samples(rng),
    ]


@register(
    complex_inputs="\"remainder_cpu\" not implemented for '{type}'",
    samples=_modulo_samples,
    inplace=True,
    operators=("__mod__", "__imod__"),
    reflected=("__rmod__",),
    binding=Binding(either=("input", "other")),
)
def remainder(input: Any, other: Any) -> Tensor:
    """Elementwise Python-style modulus: the result has the divisor's sign."""
    return _modulo(
        _remainder, "remainder_cpu", RemainderBackward0, RemainderBackward1, input, other
    )


@register(
    complex_inputs="\"fmod_cpu\" not implemented for '{type}'",
    samples=_modulo_samples,
    inplace=True,
    binding=Binding(tensors=("input",), scalar_forms=True),
)
def fmod(input: Any, other: Any) -> Tensor:
    """Elementwise C-style modulus: the result has the dividend's sign."""
    return _modulo(_fmod, "fmod_cpu", FmodBackward0, FmodBackward1, input, other)


def rdiv(input: Tensor, other: Any) -> Tensor:
    """``number / tensor`` as PyTorch computes it: ``tensor.reciprocal() * number``."""
    return mul(reciprocal(input), other)


@register(samples=S.unary, inplace=True, operators=("__neg__",))
def neg(input: Tensor) -> Tensor:
    """Elementwise negation (PyTorch refuses it on bool)."""
    a = as_tensor(input)
    if a._data.dtype == dtypes.bool_:
        raise DtypeMismatchError(BOOL_NEG_MESSAGE)
    return NegBackward0.apply(a)


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


@register(
    samples=_pow_samples,
    inplace=True,
    domain=(Domain(0.25, 3.0), Domain()),
    operators=("__pow__",),
    reflected=("__rpow__",),
    binding=Binding(either=("input", "exponent")),
)
def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    """``input ** exponent`` for tensor/number on either side."""
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        if isinstance(exponent, (list, tuple, np.ndarray)):
            exponent = as_tensor(exponent)
        else:
            rt = dtypes.result_type(input, exponent)
            if (
                rt.kind in "iu"
                and isinstance(exponent, (int, np.integer))
                and not isinstance(exponent, bool)
                and exponent < 0
            ):
                raise BadArgumentsError(NEGATIVE_POWER_MESSAGE)
            return PowBackward0.apply(input, exponent=exponent, dtype=rt)
    if not isinstance(input, Tensor):
        rt = dtypes.result_type(input, exponent)
        if rt == dtypes.bool_:
            raise not_implemented_for("pow", rt)
        b = as_tensor(exponent)
        out = PowBackward2.apply(b, base=input, dtype=rt)
        return out
    rt, (a, b) = operands(as_tensor(input), as_tensor(exponent))
    if rt == dtypes.bool_:
        raise not_implemented_for("pow", rt)
    return PowBackward1.apply(a, b, dtype=rt)


@register(
    samples=lambda rng: S.unary(rng, S.away_from_zero),
    inplace=True,
    domain=(Domain(0.5, 2.0, signed=True),),
)
def reciprocal(input: Tensor) -> Tensor:
    """Elementwise ``1 / input``."""
    return ReciprocalBackward0.apply(as_tensor(input))


@register(samples=S.unary, inplace=True)
def square(input: Tensor) -> Tensor:
    """Elementwise ``input ** 2`` (PyTorch records PowBackward0)."""
    return pow(as_tensor(input), 2)


@register(samples=lambda rng: S.unary(rng, S.away_from_zero), inplace=True, operators=("__abs__",))
def abs(input: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """Elementwise absolute value; the gradient at 0 (and NaN) is 0, as in PyTorch."""
    a = as_tensor(input)
    if a._data.dtype == dtypes.bool_:
        raise not_implemented_for("abs_cpu", a._data.dtype)
    return AbsBackward0.apply(a)


@register(
    complex_inputs="Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
    samples=S.unary,
)
def sign(input: Tensor) -> Tensor:
    """Elementwise sign (-1, 0, 1); zero gradient."""
    return SignBackward0.apply(as_tensor(input))


@register(complex_inputs="floor is not supported for complex inputs", samples=S.unary, inplace=True)
def floor(input: Tensor) -> Tensor:
    """Elementwise floor; zero gradient."""
    return FloorBackward0.apply(_no_bool(input, "floor_vml_cpu"))


@register(complex_inputs="ceil is not supported for complex inputs", samples=S.unary, inplace=True)
def ceil(input: Tensor) -> Tensor:
    """Elementwise ceiling; zero gradient."""
    return CeilBackward0.apply(_no_bool(input, "ceil_vml_cpu"))


@register(
    complex_inputs="\"round_vml_cpu\" not implemented for '{type}'", samples=S.unary, inplace=True
)
@public_defaults(decimals=0)
def round(input: Tensor, *, decimals: int = UNSET) -> Tensor:  # noqa: A001 - PyTorch's name
    """Elementwise rounding half to even (to ``decimals`` places); zero gradient."""
    a = _no_bool(input, "round_vml_cpu")
    if decimals is UNSET:
        return RoundBackward0.apply(a)
    if not decimals:  # given: torch's round.decimals overload, the same values
        if a._data.dtype.kind != "f":
            raise not_implemented_for("round_vml_cpu", a._data.dtype)
        return RoundDecimals0Backward1.apply(a)
    if a._data.dtype.kind != "f":
        raise not_implemented_for("round_cpu", a._data.dtype)
    return composite("RoundBackward1", _round_decimals, a, decimals=int(decimals))


def _round_decimals(a: Tensor, *, decimals: int) -> Tensor:
    """PyTorch's kernel: ``nearbyint(x * 10**d) / 10**d`` (``x / 10**-d`` for d < 0)."""
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return div(RoundBackward0.apply(mul(a, scale)), scale)
    return mul(RoundBackward0.apply(div(a, scale)), scale)


def _no_bool(input: Any, kernel: str) -> Tensor:
    """The tensor; PyTorch's rounding kernels have no bool version."""
    a = as_tensor(input)
    if a._data.dtype == dtypes.bool_:
        raise not_implemented_for(kernel, a._data.dtype)
    return a


def _where_samples(rng: np.random.Generator) -> list[Any]:
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
        cond = Tensor._make(cond._data.astype(bool))
    rt, (a, b) = operands(input, other)
    return WhereBackward0.apply(cond, a, b, dtype=rt)
