"""Sample-input builders shared by the op database (float64; tests cast to float32)."""

from __future__ import annotations

import numpy as np

from ..registry import Sample, sample


def rand(rng: np.random.Generator, *shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return rng.uniform(low, high, size=shape).astype(np.float64)


def positive(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(0.5, 2.0, size=shape).astype(np.float64)


def away_from_zero(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Values in ±[0.5, 2]: safe for kinks at zero (abs, relu) and for division."""
    return rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def unary(rng: np.random.Generator, make=rand) -> list[Sample]:  # type: ignore[no-untyped-def]
    """A 0-d, a vector, a matrix and an empty tensor."""
    return [
        sample(make(rng), note="0-d"),
        sample(make(rng, 4), note="vector"),
        sample(make(rng, 2, 3), note="matrix"),
        sample(make(rng, 0, 3), note="empty"),
    ]


def binary(rng: np.random.Generator, make_a=rand, make_b=rand) -> list[Sample]:  # type: ignore[no-untyped-def]
    """Same shapes, broadcast shapes both ways, 0-d, a Python scalar on either side, empty."""
    return [
        sample(make_a(rng, 2, 3), make_b(rng, 2, 3), note="same shape"),
        sample(make_a(rng, 2, 3), make_b(rng, 3), note="broadcast b"),
        sample(make_a(rng, 3, 1), make_b(rng, 1, 4), note="broadcast both"),
        sample(make_a(rng), make_b(rng, 2), note="0-d a"),
        sample(make_a(rng, 2, 2), float(make_b(rng)), note="scalar b"),
        sample(float(make_a(rng)), make_b(rng, 3), note="scalar a"),
        sample(make_a(rng, 0, 2), make_b(rng, 2), note="empty"),
    ]
