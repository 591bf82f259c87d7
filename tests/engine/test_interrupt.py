"""A caller's check (``engine.interrupt``) runs before each node of a backward pass and each op;
when it raises, the pass stops there and no grad has changed."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import interrupt


class Stop(Exception):
    pass


def test_the_check_runs_per_node_and_a_stop_changes_nothing() -> None:
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(5):
        y = y * 2.0
    loss = y.sum()
    calls: list[int] = []
    with interrupt.checking(lambda: calls.append(1)):
        loss.backward(retain_graph=True)
    # six nodes (five muls and the sum), and one op inside the sum's backward (its expand)
    assert len(calls) == 7
    assert np.array_equal(x.grad.numpy(), [32.0, 32.0])

    def stop_at_third() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise Stop

    calls.clear()
    with interrupt.checking(stop_at_third), pytest.raises(Stop):
        loss.backward()
    assert np.array_equal(x.grad.numpy(), [32.0, 32.0])  # not accumulated
    loss.backward()  # the graph was not freed by the stopped pass
    assert np.array_equal(x.grad.numpy(), [64.0, 64.0])


def test_no_check_outside_the_block() -> None:
    assert interrupt.current() is None
    with interrupt.checking(lambda: None):
        assert interrupt.current() is not None
    assert interrupt.current() is None
