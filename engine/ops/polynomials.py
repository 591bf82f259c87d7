"""``torch.special``'s orthogonal polynomials of degree ``n`` at ``x``: Chebyshev (T, U,
V, W and the shifted ones), Hermite (physicists' H, probabilists' He), Laguerre and
Legendre. PyTorch's kernels, elementwise: ``n`` truncated to an integer, the same
special cases (``|x| = 1``, ``n < 0``), the trigonometric form for Chebyshev of high
degree inside (-1, 1) and the three-term recurrence otherwise. PyTorch defines no
derivative for them, so neither does the engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes, interrupt
from ..errors import ArgumentTypeError
from ..registry import register, sample
from ..tensor import Tensor
from ._util import as_tensor

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _recurrence(
    x: np.ndarray, n: np.ndarray, first: np.ndarray, step: Callable[..., Any]
) -> np.ndarray:
    """p_n by ``p_{k+1} = step(k, p_k, p_{k-1})`` from p_0 = 1 and p_1 = ``first``: n
    steps, as PyTorch's kernels take, so a huge degree is stopped by the caller's check
    (a request's deadline) every 1024 steps."""
    p, q = np.ones_like(x), first
    out = np.where(n == 0, p, q)
    top = int(n.max()) if n.size else 0
    check = interrupt.current()
    for k in range(1, top):
        if check is not None and k % 1024 == 0:
            check()
        p, q = q, step(k, q, p)
        out = np.where(n == k + 1, q, out)
    return out


def _chebyshev(kind: str) -> Kernel:
    def kernel(x: np.ndarray, n: np.ndarray) -> np.ndarray:
        one = x.dtype.type(1)
        two_x = x + x
        first = {"t": x, "u": two_x, "v": two_x - one, "w": two_x + one}[kind]
        out = _recurrence(x, n, first, lambda k, q, p: two_x * q - p)
        nf = n.astype(x.dtype)
        theta = np.arccos(np.clip(x, -1, 1))
        inside = (np.abs(x) < 1) & (n > (6 if kind == "t" else 8))
        if kind == "t":
            trig = np.cos(nf * theta)
            edge = np.where((x > 0) | (n % 2 == 0), one, -one)
        elif kind == "u":
            s = np.sin(theta)
            trig = np.where(
                s != 0,
                np.sin((nf + 1) * theta) / np.where(s != 0, s, 1),
                (nf + 1) * np.cos((nf + 1) * theta) / x,
            )
            edge = np.where((x > 0) | (n % 2 == 0), nf + 1, -(nf + 1))
        elif kind == "v":
            c = np.cos(theta / 2)
            odd = np.where(n % 2 == 0, nf + nf + 1, -(nf + nf + 1))
            trig = np.where(np.sin(theta / 2) != 1, np.cos((nf + 0.5) * theta) / c, odd)
            edge = np.where(x > 0, one, odd)
        else:
            s = np.sin(theta / 2)
            sign = np.where(n % 2 == 0, one, -one)
            trig = np.where(
                np.cos(theta / 2) != 1,
                np.sin((nf + 0.5) * theta) / np.where(s != 0, s, 1),
                np.where(x > 0, nf + nf + 1, sign),
            )
            edge = np.where(x > 0, nf + nf + 1, sign)
        out = np.where(inside, trig, out)
        out = np.where(np.abs(x) == 1, edge, out)
        return np.where(n < 0, 0, out)

    return kernel


def _shifted(kind: str) -> Kernel:
    base = _chebyshev(kind)
    return lambda x, n: base(x + x - x.dtype.type(1), n)


def _hermite_h(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = _recurrence(x, n, x + x, lambda k, q, p: (x + x) * q - (k + k) * p)
    return np.where(n < 0, 0, out)


def _hermite_he(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = _recurrence(x, n, x, lambda k, q, p: x * q - k * p)
    return np.where(n < 0, 0, out)


def _laguerre(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    out = _recurrence(x, n, one - x, lambda k, q, p: ((k + k + 1 - x) * q - k * p) / (k + 1))
    out = np.where(np.abs(x) == 0, one, out)
    return np.where(n < 0, 0, out)


def _legendre(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    out = _recurrence(x, n, x, lambda k, q, p: ((k + k + 1) * x * q - k * p) / (k + 1))
    edge = np.where((x > 0) | (n % 2 == 0), one, -one)
    out = np.where(np.abs(x) == 1, edge, out)
    return np.where(n < 0, 0, out)


def _evaluate(name: str, kernel: Kernel, input: Any, n: Any) -> Tensor:
    if not isinstance(input, Tensor) and not isinstance(n, Tensor):
        got = f"{type(input).__name__}, {type(n).__name__}"
        raise ArgumentTypeError(
            f"special_{name}() received an invalid combination of arguments - got ({got}), but "
            "expected one of:\n * (Tensor x, Tensor n, *, Tensor out = None)\n * (Number x, "
            "Tensor n, *, Tensor out = None)\n * (Tensor x, Number n, *, Tensor out = None)\n"
        )
    x, k = as_tensor(input), as_tensor(n)
    dtype = dtypes.result_type(x, k)
    if not dtypes.is_floating(dtype):
        dtype = dtypes.float32
    xs, ns = np.broadcast_arrays(x._data.astype(dtype), k._data)
    ns = (
        ns.astype(np.int64)
        if ns.dtype.kind != "f"
        else np.trunc(np.nan_to_num(ns)).astype(np.int64)
    )
    with np.errstate(all="ignore"):
        return Tensor._make(np.asarray(kernel(np.asarray(xs), np.asarray(ns)), dtype=dtype))


def _work(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The recurrence's steps (the largest degree) times the elements it runs over, so
    a degree such as 2**62 is refused before it starts rather than run to a deadline."""
    x = args[0] if args else kwargs.get("input")
    n = args[1] if len(args) > 1 else kwargs.get("n")
    if isinstance(n, Tensor):
        values = n._data
        if values.size == 0 or values.dtype.kind not in "iuf":
            return None
        top = float(np.nanmax(np.where(np.isinf(values), 0, values)))
    elif isinstance(n, (int, float)) and not isinstance(n, bool) and np.isfinite(n):
        top = float(n)
    else:
        return None
    size = max(x._data.size if isinstance(x, Tensor) else 1, 1)
    if isinstance(n, Tensor):
        size = max(size, n._data.size)
    return int(4 * max(top, 0.0) * size)


def _samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(rng.uniform(-1.5, 1.5, 8), np.array(3), gradcheck=False),
        sample(np.array([-1.0, 1.0, 0.0, 0.5]), 9, gradcheck=False, note="edges and high degree"),
    ]


def _declare(name: str, kernel: Kernel, doc: str) -> None:
    def fn(input: Tensor, n: Any) -> Tensor:
        return _evaluate(name, kernel, input, n)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    register(
        name,
        samples=_samples,
        work=_work,
        differentiable=False,
        method=False,
        torch="special." + name,
        complex_inputs=f"\"{name}_cpu\" not implemented for '{{type}}'",
    )(fn)


for _kind in "tuvw":
    _declare(
        f"chebyshev_polynomial_{_kind}",
        _chebyshev(_kind),
        f"Chebyshev polynomial {_kind.upper()}_n(x).",
    )
    _declare(
        f"shifted_chebyshev_polynomial_{_kind}",
        _shifted(_kind),
        f"Shifted Chebyshev polynomial {_kind.upper()}*_n(x) = {_kind.upper()}_n(2x - 1).",
    )
_declare("hermite_polynomial_h", _hermite_h, "Physicists' Hermite polynomial H_n(x).")
_declare("hermite_polynomial_he", _hermite_he, "Probabilists' Hermite polynomial He_n(x).")
_declare("laguerre_polynomial_l", _laguerre, "Laguerre polynomial L_n(x).")
_declare("legendre_polynomial_p", _legendre, "Legendre polynomial P_n(x).")
POLYNOMIALS = [
    *(f"{s}chebyshev_polynomial_{k}" for s in ("", "shifted_") for k in "tuvw"),
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
