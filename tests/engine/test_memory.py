"""Saved tensors are released after a backward without ``retain_graph``.

NumPy reports its data allocations to ``tracemalloc``, so the traced total is
a direct measure of the arrays a graph keeps alive. Each test builds a graph
that saves ~48 MB (six float64 intermediates of 1e6 elements), drops every
Python reference except the output, and compares the traced memory with the
baseline taken before the forward pass.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import engine as E

N = 1_000_000
MB = 1 << 20
ARRAY = N * 8  # one float64 intermediate
SLACK = 2 * MB  # Python objects, allocator rounding


@pytest.fixture
def traced() -> Iterator[None]:
    gc.collect()
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def current() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def build(x: Any) -> Any:
    """A scalar loss whose graph saves six 8 MB arrays; intermediates go out of scope."""
    y1 = x * 2.0  # saves x (alive anyway)
    y2 = E.exp(y1 * 0.1)  # saves its result          (1)  + y1*0.1 saves nothing new
    y3 = y2 * y1  # saves y2 and y1                    (2)
    y4 = E.log(y3 * y3 + 1.0)  # y3*y3 saves y3 (3); log saves its input (4)
    y5 = y4**2  # saves y4                             (5)
    y6 = y5 * y5  # saves y5                           (6)
    return y6.sum()


def leaf() -> Any:
    rng = np.random.default_rng(0)
    return E.tensor(rng.uniform(0.5, 1.5, N), dtype=E.float64, requires_grad=True)


def test_numpy_allocations_are_traced(traced: None) -> None:
    """The premise: tracemalloc sees numpy's buffers (within SLACK: objects of earlier
    tests freed meanwhile, by the collector or another thread, lower the count a little;
    a CI run once saw 12.9 kB of them)."""
    gc.collect()
    before = current()
    a = np.ones(N)
    assert current() - before >= ARRAY - SLACK
    del a
    assert current() - before < SLACK


def test_backward_without_retain_graph_releases_saved_arrays(traced: None) -> None:
    x = leaf()
    baseline = current()
    loss = build(x)
    held = current() - baseline
    assert held > 5 * ARRAY, f"the graph should hold ~48 MB, holds {held / MB:.1f} MB"
    loss.backward()
    after = current() - baseline
    # only x.grad (one array) remains
    assert after < ARRAY + SLACK, f"{after / MB:.1f} MB still held after backward"
    assert x.grad is not None
    del loss
    assert current() - baseline < ARRAY + SLACK


def test_backward_with_retain_graph_keeps_saved_arrays(traced: None) -> None:
    x = leaf()
    baseline = current()
    loss = build(x)
    held = current() - baseline
    loss.backward(retain_graph=True)
    after = current() - baseline
    assert after > held + ARRAY - SLACK, "retained graph plus x.grad"
    loss.backward()  # the second backward frees it
    assert current() - baseline < ARRAY + SLACK
    del loss
    assert current() - baseline < ARRAY + SLACK


def test_grad_without_retain_graph_releases_saved_arrays(traced: None) -> None:
    x = leaf()
    baseline = current()
    loss = build(x)
    (g,) = E.grad(loss, x)
    after = current() - baseline
    assert after < ARRAY + SLACK, f"{after / MB:.1f} MB still held after grad()"
    del g
    assert current() - baseline < SLACK


def test_dropping_an_unused_graph_frees_it(traced: None) -> None:
    x = leaf()
    baseline = current()
    loss = build(x)
    assert current() - baseline > 5 * ARRAY
    del loss
    assert current() - baseline < SLACK


def test_repeated_training_steps_do_not_grow_memory(traced: None) -> None:
    x = leaf()
    build(x).backward()
    baseline = current()
    for _ in range(3):
        build(x).backward()
        with E.no_grad():
            x -= 1e-6 * x.grad
        x.grad.zero_()
    assert current() - baseline < SLACK
