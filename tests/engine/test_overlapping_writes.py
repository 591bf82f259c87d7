"""In-place elementwise ops on a destination whose elements share memory (issue 15):
PyTorch refuses only stride-0 repeats (``expand``); ``unfold`` with step < size and
``as_strided`` with overlapping strides run its loop element after element, so an
element seen k times is updated k times. Values, gradients and errors against torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E
from engine.overlapping_writes import self_overlaps
from tests.engine.test_semantics import both, outcome, quiet_grad
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1
pytestmark = pytest.mark.torch


def _t(T: Any, values: Any, requires_grad: bool = False, dtype: str = "float64") -> Any:
    return T.tensor(np.array(values, dtype=dtype), requires_grad=requires_grad)


def _g(t: Any) -> Any:
    g = quiet_grad(t)
    return None if g is None else g.detach().clone()


WRITES = {
    "add_": lambda T, v, o: v.add_(1.5),
    "mul_other": lambda T, v, o: v.mul_(o),
    "sub_other": lambda T, v, o: v.sub_(o),
    "div_": lambda T, v, o: v.div_(o.abs() + 1),
    "exp_": lambda T, v, o: v.exp_(),
    "tanh_": lambda T, v, o: v.tanh_(),
    "clamp_": lambda T, v, o: v.clamp_(-0.5, 0.5),
    "pow_": lambda T, v, o: v.pow_(2),
    "iadd": lambda T, v, o: v.__iadd__(o),
}
VIEWS = {
    "unfold": lambda y: y.unfold(0, 3, 1),
    "unfold_2d": lambda y: y.reshape(2, 3).unfold(1, 2, 1),
    "as_strided": lambda y: y.as_strided((2, 3), (1, 1)),
    "as_strided_t": lambda y: y.as_strided((3, 2), (1, 2)),
}
OTHER_SHAPES = {
    "unfold": (4, 3),
    "unfold_2d": (2, 2, 2),
    "as_strided": (2, 3),
    "as_strided_t": (3, 2),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("write", sorted(WRITES))
def test_overlapping_view_written_in_place_matches_torch(view: str, write: str) -> None:
    """Values of the base and gradients of the leaf and of the other operand."""
    rng = np.random.default_rng(len(view) * 31 + len(write))
    base = rng.uniform(-1, 1, 6).round(3)
    other = rng.uniform(-1, 1, OTHER_SHAPES[view]).round(3)

    def scenario(T: Any) -> Any:
        x, o = _t(T, base, True), _t(T, other, True)
        y = x * 1
        v = VIEWS[view](y)
        WRITES[write](T, v, o)
        (y * _t(T, np.arange(1.0, 7.0))).sum().backward()
        return y.detach(), _g(x), _g(o)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_overlapping_view_written_under_no_grad_matches_torch() -> None:
    def scenario(T: Any) -> Any:
        y = _t(T, [1.0, 2.0, 3.0, 4.0, 5.0], dtype="float32")
        v = y.unfold(0, 3, 1)
        v.mul_(2)
        v -= 1
        return y

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_stride_zero_repeats_are_refused_as_in_torch() -> None:
    def scenario(T: Any) -> Any:
        y = _t(T, [1.0, 2.0, 3.0], True) * 1
        return [
            outcome(lambda: y.expand(2, 3).add_(1))[1],
            outcome(lambda: y.as_strided((2, 3), (0, 1)).exp_())[1],
        ]

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_self_overlaps_tells_dense_and_strided_layouts_apart() -> None:
    a = np.arange(12.0)
    assert not self_overlaps(a)
    assert not self_overlaps(a.reshape(3, 4).T)
    assert not self_overlaps(a[::2])
    assert not self_overlaps(a.reshape(3, 4)[:, 1:3])
    strided = np.lib.stride_tricks.as_strided
    assert self_overlaps(strided(a, (3, 3), (8, 8)))
    assert not self_overlaps(strided(a, (2, 3), (8, 16)))  # interleaved, distinct
    assert self_overlaps(strided(a, (2, 3), (16, 8)))
    assert E.tensor([1.0, 2.0, 3.0, 4.0]).unfold(0, 2, 2).is_contiguous()
