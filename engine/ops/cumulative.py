"""Cumulative ops along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp.

Backward rules are written in engine ops so ``create_graph`` works. cumprod
follows PyTorch's exact gradient when the input holds zeros (dividing by the
input would give NaN). cummax/cummin send each gradient to the index that
was selected, as PyTorch's ``scatter_add`` of the indices does.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .. import dtypes, interrupt
from ..dual import FROM_BACKWARD, LINEAR
from ..errors import BadArgumentsError
from ..function import Function
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, normalize_dim
from .arithmetic import abs as abs_
from .arithmetic import where
from .elementwise import exp, log
from .rearrange import flat_index, flip, gather_flat, movedim
from .reduction import sum as sum_
from .shape import unsqueeze

CummaxResult = namedtuple("CummaxResult", ["values", "indices"])
CumminResult = namedtuple("CumminResult", ["values", "indices"])


def _axis(x: np.ndarray, dim: int) -> tuple[np.ndarray, int]:
    """The array as at least 1-d (a 0-d tensor is cumulated as one element)."""
    return (x.reshape(1), 0) if x.ndim == 0 else (x, dim)


def reverse_cumsum(g: Tensor, dim: int) -> Tensor:
    """``sum_{j >= i} g_j`` along ``dim``: the adjoint of cumsum."""
    if g.ndim == 0:
        return cumsum(g, 0)
    return flip(cumsum(flip(g, (dim,)), dim), (dim,))


class CumsumBackward0(Function):
    name = "CumsumBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, dtype: np.dtype) -> np.ndarray:
        ctx.dim = dim
        x, d = _axis(a._data, dim)
        with np.errstate(all="ignore"):  # inf - inf is NaN, as in PyTorch, without a warning
            # contiguous, as PyTorch's result (numpy keeps a transposed layout)
            return np.asarray(np.cumsum(x, axis=d, dtype=dtype).reshape(a._data.shape), order="C")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        if g._data.size <= 1 or g._data.shape[ctx.dim] == 1:
            return g  # PyTorch's cumsum_backward: the trivial case is grad itself
        return reverse_cumsum(g, ctx.dim)


def _cum_dtype(a: Tensor, dtype: Any) -> np.dtype:
    if dtype is not None:
        return dtypes.to_dtype(dtype)
    # integers and bool accumulate in int64; floating and complex keep their dtype
    return a._data.dtype if a._data.dtype.kind in "fc" else dtypes.int64


def _cum_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 1),
        sample(S.rand(rng, 2, 3), 0, note="dim 0"),
        sample(S.rand(rng, 2, 3, 2), -1, note="negative dim"),
        sample(S.rand(rng), 0, note="0-d"),
        sample(S.rand(rng, 0, 3), 1, note="empty"),
    ]


@register(samples=_cum_samples, inplace=True)
def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sums along ``dim``."""
    a = as_tensor(input)
    d = normalize_dim(dim, a.ndim)
    return CumsumBackward0.apply(a, dim=d, dtype=_cum_dtype(a, dtype))


class CumprodBackward0(Function):
    name = "CumprodBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int, dtype: np.dtype) -> np.ndarray:
        ctx.dim = dim
        ctx.save_for_backward(a)
        ctx.save_result()
        x, d = _axis(a._data, dim)
        with np.errstate(all="ignore"):
            # contiguous, as PyTorch's result (numpy keeps a transposed layout)
            return np.asarray(np.cumprod(x, axis=d, dtype=dtype).reshape(a._data.shape), order="C")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _cumprod_grad(g, a, ctx.result, ctx.dim)


def _cumprod_grad(g: Tensor, x: Tensor, out: Tensor, dim: int) -> Tensor:
    """PyTorch's cumprod_backward in engine ops. Without zeros, ``reverse_cumsum(g * out) / x``.
    With zeros, dividing is impossible: each ``grad_m = sum_{j >= m} g_j prod_{i <= j, i != m} x_i``
    is computed directly (one cumprod per position, O(n^2)), which stays exact and
    differentiable, so double backward through zeros is right too."""

    if x._data.size == 0 or x.ndim == 0 or x._data.shape[dim] == 1:
        return g  # PyTorch's cumprod_backward returns grad itself then
    if not (x._data == 0).any():
        return reverse_cumsum(g * out, dim) / x
    xs, gs = movedim(x, dim, -1), movedim(g, dim, -1)
    n = xs._data.shape[-1]
    skip = Tensor._make(np.eye(n, dtype=bool))  # row m: x with x_m replaced by 1
    products = cumprod(where(skip, 1.0, unsqueeze(xs, -2)), -1)
    later = Tensor._make(np.triu(np.ones((n, n), bool)))  # j >= m
    terms = where(later, unsqueeze(gs, -2) * products, 0.0)
    return movedim(sum_(terms, -1), -1, dim)


def _cumprod_samples(rng: np.random.Generator) -> list[Any]:
    zeros = S.rand(rng, 3, 4)
    zeros[0, 1] = 0.0
    zeros[1, 0] = 0.0
    zeros[1, 2] = 0.0
    zeros[2, 3] = 0.0
    return [
        *_cum_samples(rng),
        sample(zeros, 1, note="zeros: one, two, last"),
        sample(zeros, 0, note="zeros along dim 0"),
        sample(np.array(0.0), 0, note="0-d zero"),
    ]


@register(samples=_cumprod_samples, inplace=True)
def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running products along ``dim``."""
    a = as_tensor(input)
    d = normalize_dim(dim, a.ndim)
    return CumprodBackward0.apply(a, dim=d, dtype=_cum_dtype(a, dtype))


class LogcumsumexpBackward0(Function):
    name = "LogcumsumexpBackward0"
    jvp = FROM_BACKWARD

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int) -> np.ndarray:
        ctx.dim = dim
        ctx.save_for_backward(a)
        ctx.save_result()
        x, d = _axis(a._data, dim)
        # PyTorch's CPU kernel accumulates in its acc_type (double for float32, float for
        # half); in float32 the rounding decides the backward's cancellation
        acc = np.float32 if x.dtype == np.float16 else np.float64
        with np.errstate(all="ignore"):
            out = np.logaddexp.accumulate(x.astype(acc, copy=False), axis=d).astype(x.dtype)
            # contiguous, as PyTorch's result (numpy keeps a transposed layout)
            return np.asarray(out.reshape(a._data.shape), order="C")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return _logcumsumexp_grad(g, a, ctx.result, ctx.dim)


def _logcumsumexp_grad(g: Tensor, x: Tensor, out: Tensor, dim: int) -> Tensor:
    """PyTorch's logcumsumexp_backward: ``grad_i = sum_{j >= i} g_j exp(x_i - out_j)``,
    summed in log space for the positive and the negative parts of ``g`` apart, so
    nothing overflows (the lowest finite number stands for log 0)."""

    lowest = float(np.finfo(g.dtype).min)
    with np.errstate(all="ignore"):
        log_abs = log(abs_(g))
        positive = where(_const_mask(g._data > 0), log_abs, lowest)
        negative = where(_const_mask(g._data < 0), log_abs, lowest)
        return exp(_reverse_logcumsumexp(positive - out, dim) + x) - exp(
            _reverse_logcumsumexp(negative - out, dim) + x
        )


def _const_mask(mask: np.ndarray) -> Tensor:
    return Tensor._make(mask)


def _reverse_logcumsumexp(t: Tensor, dim: int) -> Tensor:
    if t.ndim == 0:
        return logcumsumexp(t, 0)
    return flip(logcumsumexp(flip(t, (dim,)), dim), (dim,))


def _logcumsumexp_samples(rng: np.random.Generator) -> list[Any]:
    return [
        *_cum_samples(rng),
        sample(S.rand(rng, 2, 4) * 30, 1, note="large values"),
    ]


@register(
    complex_inputs="logcumsumexp is not implemented for '{type}' in this engine",
    samples=_logcumsumexp_samples,
)
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input)))`` along ``dim``, computed without overflow."""
    a = as_tensor(input)
    if not dtypes.is_floating(a._data.dtype):
        raise BadArgumentsError("\"logcumsumexp_out_cpu\" not implemented for 'Long'")
    return LogcumsumexpBackward0.apply(a, dim=normalize_dim(dim, a.ndim))


CummaxBackward0 = gather_flat("CummaxBackward0", saves=True)
CumminBackward0 = gather_flat("CumminBackward0", saves=True)


def _running(x: np.ndarray, dim: int, better: Any) -> np.ndarray:
    """The index of the running max/min along ``dim`` (ties and NaN take the later one)."""
    xs = np.moveaxis(x, dim, 0)
    idx = np.zeros(xs.shape, np.int64)
    if xs.shape[0] == 0:
        return np.moveaxis(idx, 0, dim)
    best = xs[0].copy()
    cur = np.zeros(xs.shape[1:], np.int64)
    for k in interrupt.checked(range(xs.shape[0])):
        v = xs[k]
        take = better(v, best) | np.isnan(v)
        best = np.where(take, v, best)
        cur = np.where(take, k, cur)
        idx[k] = cur
    return np.moveaxis(idx, 0, dim)


def _cumextreme(fn: Any, better: Any, result: Any, input: Tensor, dim: int) -> Any:
    a = as_tensor(input)
    d = normalize_dim(dim, a.ndim)
    x, axis = _axis(a._data, d)
    with np.errstate(invalid="ignore"):
        idx = _running(x, axis, better).reshape(a._data.shape)
    base = flat_index(x.shape)
    flat = np.take_along_axis(base, idx.reshape(x.shape), axis=axis).reshape(a._data.shape)
    values, indices = fn.apply(a, index=flat, extra=idx)
    return result(values, indices)


def _cumextreme_samples(rng: np.random.Generator) -> list[Any]:
    ties = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0, 0.0, 1.0]])
    return [
        *_cum_samples(rng),
        sample(ties, 1, note="ties take the later index", gradcheck=False),
        sample(np.array([1.0, np.nan, 0.0, np.nan, 2.0]), 0, note="NaN", gradcheck=False),
    ]


@register(
    complex_inputs="\"cummax_cpu\" not implemented for '{type}'",
    out_overlap="unchecked",
    samples=_cumextreme_samples,
    results=2,
)
def cummax(input: Tensor, dim: int) -> Any:
    """(values, indices) of the running maximum along ``dim``."""
    return _cumextreme(CummaxBackward0, np.greater_equal, CummaxResult, input, dim)


@register(
    complex_inputs="\"cummin_cpu\" not implemented for '{type}'",
    samples=_cumextreme_samples,
    results=2,
)
def cummin(input: Tensor, dim: int) -> Any:
    """(values, indices) of the running minimum along ``dim``."""
    return _cumextreme(CumminBackward0, np.less_equal, CumminResult, input, dim)
