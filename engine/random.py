"""PyTorch's CPU random generator, draw for draw.

``torch.manual_seed(s)`` seeds a 32-bit Mersenne Twister (mt19937, seeded with
``s mod 2**32`` by the reference ``init_genrand``); every distribution is a fixed
transform of its raw 32- or 64-bit outputs (a 64-bit draw is two 32-bit draws,
the first one high). Reproducing the transforms exactly, including the float32
normal path that PyTorch runs with AVX2 (``normal_fill_16_AVX2`` with
avx_mathfun's ``log256_ps``/``sincos256_ps`` polynomials, fused multiply-adds
where the compiler contracts them), makes ``manual_seed(0); randn(3, 4)`` print
the same numbers here as in PyTorch 2.13 on an x86-64 CPU with AVX2.

The twister itself is numpy's (``np.random.MT19937``), driven through its public
state; the transforms are vectorized numpy. No global state: the default
generator lives in a ``ContextVar`` (like grad mode), and ``using(generator)``
makes another one the default for a block (each service session has its own).
"""

from __future__ import annotations

import contextvars
import math
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .errors import BadArgumentsError

DEFAULT_SEED = 67280421310721  # torch.Generator().initial_seed()
_U64 = np.uint64
_F32 = np.float32
_MASK24 = _U64((1 << 24) - 1)
_MASK53 = _U64((1 << 53) - 1)
_MASK11 = _U64((1 << 11) - 1)
# randint draws 64 bits once the range reaches 2**28 (measured against PyTorch 2.13)
_RANDINT_64_FROM = 1 << 28


def _init_genrand(seed: int) -> np.ndarray:
    """mt19937's reference seeding of its 624 words from a 32-bit seed."""
    key = np.empty(624, np.uint32)
    x = seed & 0xFFFFFFFF
    key[0] = x
    for i in range(1, 624):
        x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
        key[i] = x
    return key


class Generator:
    """PyTorch's ``torch.Generator`` on the CPU: the same seed draws the same values.

    Besides the twister, it keeps PyTorch's cached second normal sample (a scalar
    normal draw makes two, Box-Muller style, and the next small draw uses the spare)."""

    def __init__(self, seed: int | None = None) -> None:
        self._bits = np.random.MT19937(0)
        self.manual_seed(DEFAULT_SEED if seed is None else seed)

    # -- seeding and state ------------------------------------------------------------------
    def manual_seed(self, seed: Any) -> Generator:
        """Restart the stream from ``seed`` (an integer; negative ones wrap as in PyTorch)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise BadArgumentsError(f"manual_seed expected an int, got {type(seed).__name__}")
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise BadArgumentsError(
                f"Overflow when unpacking long long: seed must be in [-2**63, 2**64), got {seed}"
            )
        self._seed = seed % 2**64
        self._bits.state = {
            "bit_generator": "MT19937",
            "state": {"key": _init_genrand(self._seed), "pos": 624},
        }
        self._next_normal: float | None = None
        return self

    def seed(self) -> int:
        """Seed from OS entropy, as ``torch.seed()``; returns the seed."""
        value = secrets.randbits(63)
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict[str, Any]:
        """Everything that decides the next draws (JSON-friendly: journals store it)."""
        st = self._bits.state["state"]
        return {
            "seed": self._seed,
            "key": [int(k) for k in st["key"]],
            "pos": int(st["pos"]),
            "next_normal": self._next_normal,
        }

    def set_state(self, state: dict[str, Any]) -> Generator:
        key = np.asarray(state["key"], dtype=np.uint32)
        pos = int(state["pos"])
        if key.shape != (624,) or not 0 <= pos <= 624:
            raise BadArgumentsError("not a generator state: 624 key words and a position")
        self._seed = int(state["seed"])
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        nxt = state.get("next_normal")
        self._next_normal = None if nxt is None else float(nxt)
        return self

    def __repr__(self) -> str:
        return f"Generator(initial_seed={self._seed})"

    # -- raw draws --------------------------------------------------------------------------
    def _u32(self, n: int) -> np.ndarray:
        return self._bits.random_raw(n).astype(_U64)

    def _u64(self, n: int) -> np.ndarray:
        r = self._u32(2 * n)
        return (r[0::2] << _U64(32)) | r[1::2]

    def _unit(self, n: int, dtype: np.dtype) -> np.ndarray:
        """``uniform_real_distribution<T>(0, 1)``: float64 from 53 bits of a 64-bit draw,
        float32 from 24 bits and float16 from 11 bits of a 32-bit draw (in float64)."""
        if dtype == np.float64:
            return (self._u64(n) & _MASK53) * 2.0**-53
        if dtype == np.float16:
            return (self._u32(n) & _MASK11) * 2.0**-11
        return (self._u32(n) & _MASK24) * 2.0**-24

    # -- distributions ----------------------------------------------------------------------
    def doubles(self, n: int) -> np.ndarray:
        """``n`` draws of ``uniform_real_distribution<double>(0, 1)``, in order: what
        PyTorch's serial CPU samplers (exponential, cauchy, geometric) transform."""
        return self._unit(n, np.dtype(np.float64))

    def normal_doubles(self, n: int) -> np.ndarray:
        """``n`` draws of ``normal_distribution<double>``, one at a time with the spare
        kept (PyTorch's serial samplers: log_normal)."""
        return np.array([self._normal_double() for _ in range(n)], dtype=np.float64)

    def uniform(
        self, shape: tuple[int, ...], dtype: np.dtype, low: float = 0.0, high: float = 1.0
    ) -> np.ndarray:
        """``torch.rand`` / ``uniform_(low, high)``: one draw per element, in order."""
        dtype = np.dtype(dtype)
        lo, hi = float(dtype.type(low)), float(dtype.type(high))
        x = self._unit(math.prod(shape), dtype)
        if lo != 0.0 or hi != 1.0:
            x = x * (hi - lo) + lo
        return x.reshape(shape).astype(dtype)

    def normal(
        self, shape: tuple[int, ...], dtype: np.dtype, mean: float = 0.0, std: float = 1.0
    ) -> np.ndarray:
        """``torch.randn`` / ``normal_(mean, std)``: PyTorch's ``normal_kernel``. Sixteen
        elements and more are filled in blocks of 16 from uniforms (the last block redrawn
        when the size is not a multiple of 16); fewer are drawn one by one as doubles."""
        dtype = np.dtype(dtype)
        n = math.prod(shape)
        if n >= 16:
            if dtype == np.float32:
                out = self._normal_fill_avx2(n, _F32(mean), _F32(std))
            else:
                out = self._normal_fill(n, dtype, mean, std)
        else:
            out = np.array([self._normal_double() for _ in range(n)], dtype=np.float64)
            out = out * std + mean
        return out.reshape(shape).astype(dtype)

    def _normal_double(self) -> float:
        """``at::normal_distribution<double>`` on one draw: Box-Muller with the spare kept."""
        if self._next_normal is not None:
            value, self._next_normal = self._next_normal, None
            return value
        u1, u2 = self._unit(2, np.dtype(np.float64))
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self._next_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def _normal_fill(self, n: int, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
        data = self._unit(n, dtype).astype(dtype).astype(np.float64)
        blocks = n // 16
        head = data[: blocks * 16].reshape(blocks, 16)
        _box_muller_16(head, mean, std)
        data[: blocks * 16] = head.reshape(-1)
        if n % 16:
            tail = self._unit(16, dtype).astype(dtype).astype(np.float64).reshape(1, 16)
            _box_muller_16(tail, mean, std)
            data[n - 16 :] = tail.reshape(-1)
        return data

    def _normal_fill_avx2(self, n: int, mean: np.float32, std: np.float32) -> np.ndarray:
        data = self._unit(n, np.dtype(np.float32)).astype(_F32)
        blocks = n // 16
        data[: blocks * 16] = _box_muller_16_avx2(data[: blocks * 16], mean, std)
        if n % 16:
            tail = self._unit(16, np.dtype(np.float32)).astype(_F32)
            data[n - 16 :] = _box_muller_16_avx2(tail, mean, std)
        return data

    def integers(self, low: int, high: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """``torch.randint(low, high)``: ``draw % (high - low) + low``, 32-bit draws for
        ranges below 2**28 and 64-bit ones from there on, as PyTorch 2.13 does."""
        span = high - low
        n = math.prod(shape)
        raw = self._u64(n) if span >= _RANDINT_64_FROM else self._u32(n)
        values = (raw % _U64(span)).astype(np.int64) + low
        return values.reshape(shape).astype(dtype)

    def permutation(self, n: int, dtype: np.dtype) -> np.ndarray:
        """``torch.randperm(n)``: PyTorch's Fisher-Yates from the front, one 32-bit draw
        per position (64-bit draws past 2**24 elements)."""
        out = np.arange(n, dtype=np.int64)
        if n > 1:
            raw = self._u64(n - 1) if n >= 1 << 24 else self._u32(n - 1)
            picks = (raw % np.arange(n, 1, -1, dtype=_U64)).astype(np.int64)
            for i, z in enumerate(picks.tolist()):
                j = i + z
                out[i], out[j] = out[j], out[i]
        return out.astype(dtype)

    def bernoulli(self, p: float, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """``bernoulli_(p)`` with a number ``p``: ``uniform_double < p`` per element."""
        u = self._unit(math.prod(shape), np.dtype(np.float64))
        return (u.reshape(shape) < p).astype(dtype)

    def bernoulli_tensor(self, p: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """``torch.bernoulli(p)`` with a probability per element: uniforms of ``p``'s
        own precision (``bernoulli_distribution<float>`` for float32)."""
        u = self._unit(p.size, p.dtype).reshape(p.shape)
        return (u < p).astype(dtype)


def _box_muller_16(data: np.ndarray, mean: float, std: float) -> None:
    """``normal_fill_16`` in double on rows of 16: u1 = 1 - first 8, u2 = last 8."""
    u1 = 1.0 - data[:, :8]
    u2 = data[:, 8:].copy()
    radius = np.sqrt(-2.0 * np.log(u1))
    theta = 2.0 * math.pi * u2
    data[:, :8] = radius * np.cos(theta) * std + mean
    data[:, 8:] = radius * np.sin(theta) * std + mean


# -- PyTorch's AVX2 float32 normal kernel ------------------------------------------------------


def _fma(a: Any, b: Any, c: Any) -> np.ndarray:
    """float32 fused multiply-add: the product of two floats is exact in float64."""
    return (
        np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
    ).astype(_F32)


_LOG_P = tuple(
    _F32(v)
    for v in (
        7.0376836292e-2,
        -1.1514610310e-1,
        1.1676998740e-1,
        -1.2420140846e-1,
        1.4249322787e-1,
        -1.6668057665e-1,
        2.0000714765e-1,
        -2.4999993993e-1,
        3.3333331174e-1,
    )
)


def _log256_ps(x: np.ndarray) -> np.ndarray:
    """avx_mathfun's ``log256_ps`` (cephes logf) for x in (0, 1], float32 step by step."""
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    x = ((bits & ~0x7F800000) | 0x3F000000).view(_F32)
    mask = x < _F32(0.707106781186547524)
    tmp = np.where(mask, x, _F32(0))
    x = x - _F32(1)
    e = e - mask.astype(_F32)
    x = x + tmp
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = _fma(y, x, p)
    y = y * x
    y = _fma(y, z, e * _F32(-2.12194440e-4))
    y = y - z * _F32(0.5)
    x = x + y
    return _fma(e, _F32(0.693359375), x)


def _sincos256_ps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """avx_mathfun's ``sincos256_ps`` (cephes sinf/cosf) for x >= 0, float32."""
    y = x * _F32(1.27323954473516)  # 4 / pi
    j = y.astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(_F32)
    swap_sin = (j & 4) != 0
    poly = (j & 2) == 0
    x = _fma(y, _F32(-0.78515625), x)
    x = _fma(y, _F32(-2.4187564849853515625e-4), x)
    x = _fma(y, _F32(-3.77489497744594108e-8), x)
    negate_cos = ((j - 2) & 4) == 0
    z = x * x
    yc = np.full_like(x, _F32(2.443315711809948e-005))
    yc = _fma(yc, z, _F32(-1.388731625493765e-003))
    yc = _fma(yc, z, _F32(4.166664568298827e-002))
    yc = yc * z
    yc = _fma(yc, z, -(z * _F32(0.5)))
    yc = yc + _F32(1)
    ys = np.full_like(x, _F32(-1.9515295891e-4))
    ys = _fma(ys, z, _F32(8.3321608736e-3))
    ys = _fma(ys, z, _F32(-1.6666654611e-1))
    ys = ys * z
    ys = _fma(ys, x, x)
    sin = np.where(poly, ys, yc)
    cos = np.where(poly, yc, ys)
    return np.where(swap_sin, -sin, sin), np.where(negate_cos, -cos, cos)


def _box_muller_16_avx2(data: np.ndarray, mean: np.float32, std: np.float32) -> np.ndarray:
    blocks = data.reshape(-1, 16)
    u1 = (_F32(1) - blocks[:, :8]).reshape(-1)
    u2 = blocks[:, 8:].reshape(-1)
    radius = np.sqrt(_F32(-2) * _log256_ps(u1))
    sin, cos = _sincos256_ps(_F32(2 * math.pi) * u2)
    out = np.empty_like(blocks)
    out[:, :8] = _fma(radius * cos, std, mean).reshape(-1, 8)
    out[:, 8:] = _fma(radius * sin, std, mean).reshape(-1, 8)
    return out.reshape(-1)


# -- the default generator -------------------------------------------------------------------

_current: contextvars.ContextVar[Generator | None] = contextvars.ContextVar(
    "gradserve_generator", default=None
)


def default_generator() -> Generator:
    """The generator that ops use when none is passed (one per context, made on first use)."""
    gen = _current.get()
    if gen is None:
        gen = Generator()
        _current.set(gen)
    return gen


def manual_seed(seed: Any) -> Generator:
    """``torch.manual_seed``: reseed the default generator and return it."""
    return default_generator().manual_seed(seed)


@contextmanager
def using(generator: Generator) -> Iterator[Generator]:
    """Make ``generator`` the default for the block (a session's own stream)."""
    token = _current.set(generator)
    try:
        yield generator
    finally:
        _current.reset(token)
