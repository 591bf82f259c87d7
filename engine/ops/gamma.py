"""The gamma family: ``lgamma``, ``digamma`` and ``polygamma`` (numpy has none).

Each derivative is the next member (``lgamma' = digamma``, ``digamma' =
polygamma(1)``, ``polygamma(n)' = polygamma(n + 1)``), written in engine ops so
double backward works. The kernels compute in float64: ``lgamma`` by libm per
element, ``digamma`` by recurrence to x >= 6 and its asymptotic series (reflection
below 0), ``polygamma(n)`` as ``(-1)**(n+1) n! zeta(n + 1, x)`` with the Hurwitz zeta
by Euler-Maclaurin summation. Poles follow PyTorch: ``lgamma`` is +inf at 0 and the
negative integers, ``digamma(±0)`` is ∓inf and NaN at the negative integers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dual import SELF_ADJOINT
from ..errors import BadArgumentsError
from ..function import Function
from ..registry import Const, Domain, register, sample
from ..tensor import Tensor
from ._util import as_tensor
from .special import _define, _unary_function


def _lgamma_one(v: float) -> float:
    if math.isnan(v):
        return math.nan
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    return math.lgamma(v)


_lgamma_libm = np.frompyfunc(_lgamma_one, 1, 1)
# Bernoulli numbers B2, B4, ... B14 over (2k)!, for the Euler-Maclaurin tail
_B2K = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6]


def _lgamma(x: np.ndarray) -> np.ndarray:
    x64 = np.asarray(x, dtype=np.float64)
    return np.asarray(_lgamma_libm(x64), dtype=np.float64) if x64.size else x64.copy()


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    acc = np.zeros_like(x)
    x = x.copy()
    small = x < 6.0
    while small.any():
        acc = acc - np.where(small, 1.0 / np.where(small, x, 1.0), 0.0)
        x = np.where(small, x + 1.0, x)
        small = x < 6.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (
        1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (1 / 132))))
    )
    return acc + np.log(x) - 0.5 / x - series


def _digamma(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        neg = x < 0
        pole = neg & (x == np.floor(x))
        safe = np.where(neg, 1.0 - x, np.where(x == 0, 1.0, x))
        safe = np.where(np.isfinite(safe), safe, 1.0)
        pos = _digamma_positive(safe)
        reflected = pos - np.pi / np.tan(np.pi * x)
        out = np.where(neg, reflected, pos)
        out = np.where(x == 0, np.where(np.signbit(x), np.inf, -np.inf), out)  # -0: +inf
        out = np.where(pole | np.isnan(x) | (x == -np.inf), np.nan, out)
        return np.where(x == np.inf, np.inf, out)


def _hurwitz_zeta(s: int, x: np.ndarray, n: int = 12) -> np.ndarray:
    """zeta(s, x) = sum_k (x + k)**-s for integer s >= 2 (Euler-Maclaurin after ``n`` terms)."""
    with np.errstate(all="ignore"):
        total = np.zeros_like(x)
        for k in range(n):
            total = total + (x + k) ** (-s)
        a = x + n
        total = total + a ** (1 - s) / (s - 1) + 0.5 * a ** (-s)
        rising = float(s)  # s (s+1) ... (s + 2j - 2)
        power = a ** (-s - 1)
        fact = 2.0
        for j, b in enumerate(_B2K, start=1):
            total = total + b / fact * rising * power
            rising *= (s + 2 * j - 1) * (s + 2 * j)
            power = power / (a * a)
            fact *= (2 * j + 1) * (2 * j + 2)
        return total


def _polygamma(n: int, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _trigamma(x)
    with np.errstate(all="ignore"):
        value = (-1.0) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(n + 1, x)
        pole = (x <= 0) & (x == np.floor(x))
        return np.where(pole, np.inf if n % 2 else -np.inf, value)


def _trigamma(x: np.ndarray) -> np.ndarray:
    """aten's ``calc_trigamma`` (Math.h), whose series PyTorch truncates at ~1e-10
    relative: reflection below 1/2, six recurrence steps, then the asymptotic series."""
    with np.errstate(all="ignore"):
        low = x < 0.5
        sin_pi_x = np.sin(np.pi * x)
        result = np.where(low, -(np.pi * np.pi) / (sin_pi_x * sin_pi_x), 0.0)
        x = np.where(low, 1 - x, x)
        for _ in range(6):
            result = result + 1 / (x * x)
            x = x + 1
        ixx = 1 / (x * x)
        result = result + (1 + 1 / (2 * x) + ixx * (1 / 6 - ixx * (1 / 30 - ixx * (1 / 42)))) / x
        return np.where(low, -result, result)


def _as(kernel: Any) -> Any:
    return lambda x: kernel(x).astype(np.asarray(x).dtype)


def _lgamma_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * digamma(x)


LgammaBackward0 = _unary_function("LgammaBackward0", _as(_lgamma), _lgamma_grad)
DigammaBackward0 = _unary_function(
    "DigammaBackward0", _as(_digamma), lambda g, x: g * polygamma(1, x)
)


_positive_samples = Domain(0.3, 4.0)  # away from the poles at 0, -1, ...


lgamma: Any = _define(
    "lgamma",
    LgammaBackward0,
    "Elementwise log of the absolute gamma function (+inf at its poles).",
    _positive_samples,
)
digamma: Any = _define(
    "digamma",
    DigammaBackward0,
    "Elementwise derivative of lgamma (-inf at 0, NaN at the negative integers).",
    _positive_samples,
)


class PolygammaBackward0(Function):
    name = "PolygammaBackward0"
    jvp = SELF_ADJOINT

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, n: int) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.n = n
        x = a._data if a._data.dtype.kind == "f" else a._data.astype(np.float32)
        return _polygamma(n, x).astype(x.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g * polygamma(ctx.n + 1, a)


def _polygamma_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(1, _positive_samples(rng, 2, 3), note="trigamma"),
        sample(2, _positive_samples(rng, 4), note="n=2"),
        sample(3, _positive_samples(rng), note="0-d, n=3"),
        sample(0, _positive_samples(rng, 3), note="n=0 is digamma"),
        sample(1, Const(np.array([1, 2, 3])), note="int64"),
        sample(1, _positive_samples(rng, 0, 2), note="empty"),
    ]


@register(
    complex_inputs="\"trigamma\" not implemented for '{type}'",
    samples=_polygamma_samples,
    method=False,
    torch=lambda torch, n, x: torch.polygamma(n, x),
)
def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of digamma, elementwise."""
    if n < 0:
        raise BadArgumentsError("polygamma(n, x) does not support negative n.")
    return PolygammaBackward0.apply(as_tensor(input), n=int(n))


__all__ = ["digamma", "lgamma", "polygamma"]
