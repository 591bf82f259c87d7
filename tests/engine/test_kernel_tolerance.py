"""The one tolerance for comparing with PyTorch across CPUs (``assert_kernel_close``)
catches what it must: more than its ulps, a NaN or an infinity on one side only; and
lets through what kernels legitimately differ by."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.torch_oracle import assert_kernel_close


def _ulps_away(x: float, n: int, dtype: type = np.float64) -> np.ndarray:
    a = np.array([x], dtype)
    for _ in range(n):
        a = np.nextafter(a, np.array([np.inf], dtype))
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_within_the_ulps_passes_and_beyond_fails(dtype: type) -> None:
    base = np.array([0.7], dtype)
    assert_kernel_close(_ulps_away(0.7, 4, dtype), base, ulps=4)
    with pytest.raises(AssertionError, match="differ by more than 4 ulp"):
        assert_kernel_close(_ulps_away(0.7, 5, dtype), base, ulps=4)


@pytest.mark.parametrize(
    "mine,theirs",
    [([np.nan, 1.0], [0.0, 1.0]), ([np.inf], [-np.inf]), ([np.inf], [1e308]), ([1.0], [1.5])],
)
def test_non_finite_and_far_values_must_match(mine: list[float], theirs: list[float]) -> None:
    with pytest.raises(AssertionError):
        assert_kernel_close(np.array(mine), np.array(theirs))


def test_kernel_dependent_positions_accept_nan_or_a_sign_but_not_a_value() -> None:
    free = np.array([True, True, False])
    assert_kernel_close(
        np.array([np.inf, np.inf, 2.0]), np.array([np.nan, -np.inf, 2.0]), kernel_dependent=free
    )
    with pytest.raises(AssertionError):
        assert_kernel_close(
            np.array([3.0, 0.0, 2.0]), np.array([1.0, 0.0, 2.0]), kernel_dependent=free
        )
    with pytest.raises(AssertionError):  # the other positions are still checked
        assert_kernel_close(
            np.array([0.0, 0.0, 2.0]), np.array([0.0, 0.0, 2.5]), kernel_dependent=free
        )


def test_dtypes_and_integers_are_exact() -> None:
    with pytest.raises(AssertionError):
        assert_kernel_close(np.array([1.0], np.float32), np.array([1.0]))
    with pytest.raises(AssertionError):
        assert_kernel_close(np.array([1, 2]), np.array([1, 3]))
