"""``torch.signal.windows``: the window functions of signal processing (Hamming, Hann,
Kaiser ...), as creation ops of length ``M`` in float32 or float64. Each follows the
formula of torch/signal/windows/windows.py (``sym=False`` gives the periodic window,
one sample longer then cut); registered as ``window_<name>``, and ``engine.signal
.windows`` gives them torch's names.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.special as sc

from .. import dtypes
from ..registry import Sample, register, sample
from ..tensor import Tensor
from ._composite import ArgumentTypeError, ArgumentValueError


def _checks(name: str, M: int, dtype: Any) -> np.dtype:
    if M < 0:
        raise ArgumentValueError(f"{name} requires non-negative window length, got M={M}")
    dt = dtypes.float32 if dtype is None else dtypes.to_dtype(dtype)
    if dt not in (dtypes.float32, dtypes.float64):
        raise ArgumentValueError(f"{name} expects float32 or float64 dtypes, got: torch.{dt.name}")
    return dt


def _linspace(start: float, end: float, steps: int) -> np.ndarray:
    return np.linspace(start, end, steps, dtype=np.float64)


def _make(values: np.ndarray, dt: np.dtype, requires_grad: bool) -> Tensor:
    out = Tensor._make(np.asarray(values, dtype=dt))
    return out.requires_grad_(True) if requires_grad else out


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    m = args[0] if args else kwargs.get("M")
    return int(m) if isinstance(m, int) and not isinstance(m, bool) else None


def _samples(**kwargs: Any) -> Any:
    def build(rng: np.random.Generator) -> list[Sample]:
        return [
            sample(0, **kwargs, note="empty"),
            sample(1, **kwargs, note="one"),
            sample(7, **kwargs, note="odd"),
            sample(8, sym=False, dtype="float64", **kwargs, note="periodic float64"),
        ]

    return build


def _cosine_sum(M: int, a: Any, sym: bool) -> np.ndarray:
    if M == 0:
        return np.zeros(0)
    if M == 1:
        return np.ones(1)
    if not isinstance(a, Iterable):
        raise ArgumentTypeError("Coefficients must be a list/tuple")
    coeffs = list(a)
    if not coeffs:
        raise ArgumentValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _linspace(0, (M - 1) * constant, M)
    return sum((-1) ** i * w * np.cos(i * k) for i, w in enumerate(coeffs))


def _register(name: str, **sample_kwargs: Any) -> Any:
    return register(
        f"window_{name}",
        samples=_samples(**sample_kwargs),
        differentiable=False,
        method=False,
        function=True,
        torch=f"signal.windows.{name}",
        estimate=_estimate,
        numpy_names=False,
    )


@_register("general_cosine", a=[0.46, 0.23, 0.31])
def window_general_cosine(
    M: int,
    *,
    a: Any,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A sum of cosines with coefficients ``a`` (alternating signs)."""
    dt = _checks("general_cosine", M, dtype)
    return _make(_cosine_sum(M, a, sym), dt, requires_grad)


@_register("general_hamming", alpha=0.6)
def window_general_hamming(
    M: int,
    *,
    alpha: float = 0.54,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``alpha - (1 - alpha)·cos``: Hamming (0.54) and Hann (0.5)."""
    dt = _checks("general_cosine", M, dtype)
    return _make(_cosine_sum(M, [alpha, 1.0 - alpha], sym), dt, requires_grad)


def _define_cosine(name: str, coeffs: list[float], doc: str) -> None:
    def op(
        M: int,
        *,
        sym: bool = True,
        dtype: Any = None,
        layout: Any = None,
        device: Any = None,
        requires_grad: bool = False,
    ) -> Tensor:
        dt = _checks("general_cosine", M, dtype)
        return _make(_cosine_sum(M, coeffs, sym), dt, requires_grad)

    op.__name__ = op.__qualname__ = f"window_{name}"
    op.__doc__ = doc
    _register(name)(op)


_define_cosine("hamming", [0.54, 0.46], "The Hamming window.")
_define_cosine("hann", [0.5, 0.5], "The Hann window.")
_define_cosine("blackman", [0.42, 0.5, 0.08], "The Blackman window.")
_define_cosine(
    "nuttall", [0.3635819, 0.4891775, 0.1365995, 0.0106411], "Nuttall's four-term window."
)


@_register("bartlett")
def window_bartlett(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The triangular (Bartlett) window."""
    dt = _checks("bartlett", M, dtype)
    if M <= 1:
        return _make(np.ones(M), dt, requires_grad)
    constant = 2 / (M if not sym else M - 1)
    return _make(1 - np.abs(_linspace(-1, -1 + (M - 1) * constant, M)), dt, requires_grad)


@_register("cosine")
def window_cosine(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The cosine (sine) window."""
    dt = _checks("cosine", M, dtype)
    if M == 0:
        return _make(np.zeros(0), dt, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    return _make(np.sin(_linspace(0.5 * constant, (0.5 + M - 1) * constant, M)), dt, requires_grad)


@_register("exponential", tau=2.5)
def window_exponential(
    M: int,
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``exp(-|n - center| / tau)``."""
    dt = _checks("exponential", M, dtype)
    if tau <= 0:
        raise ArgumentValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ArgumentValueError("Center must be None for symmetric windows")
    if M == 0:
        return _make(np.zeros(0), dt, requires_grad)
    c = (M if not sym and M > 1 else M - 1) / 2.0 if center is None else center
    k = _linspace(-c / tau, (-c + (M - 1)) / tau, M)
    return _make(np.exp(-np.abs(k)), dt, requires_grad)


@_register("gaussian", std=1.5)
def window_gaussian(
    M: int,
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``exp(-n² / (2·std²))`` about the window's centre."""
    dt = _checks("gaussian", M, dtype)
    if std <= 0:
        raise ArgumentValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _make(np.zeros(0), dt, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _linspace(start * constant, (start + (M - 1)) * constant, M)
    return _make(np.exp(-(k**2)), dt, requires_grad)


@_register("kaiser", beta=8.0)
def window_kaiser(
    M: int,
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Kaiser window ``I0(beta·sqrt(1 - n²)) / I0(beta)``."""
    dt = _checks("kaiser", M, dtype)
    if beta < 0:
        raise ArgumentValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _make(np.ones(M), dt, requires_grad)
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = min(beta, -beta + (M - 1) * constant)
    k = _linspace(-beta, end, M)
    with np.errstate(invalid="ignore"):
        values = sc.i0(np.sqrt(beta * beta - k**2)) / sc.i0(beta)
    return _make(values, dt, requires_grad)
