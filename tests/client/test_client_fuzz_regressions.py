"""What the differential fuzzer (tests/fuzz) found over HTTP, minimised: each scenario
runs through the client against the server of this tree and in PyTorch, and the
outcomes (values, ``.grad``, errors by message) are compared."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from client import Session
from tests.engine.torch_oracle import assert_values

pytestmark = pytest.mark.torch


def _run(T: Any, scenario: Callable[[Any, Callable[..., Any]], Any]) -> Any:
    """``scenario(T, make)`` with ``make(values, requires_grad)`` building a float64 tensor."""
    if isinstance(T, Session):
        return scenario(
            T, lambda v, rg=False: T.tensor(np.array(v), dtype="float64", requires_grad=rg)
        )
    return scenario(
        T, lambda v, rg=False: T.tensor(np.array(v, dtype=np.float64), requires_grad=rg)
    )


def _values(x: Any) -> Any:
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return [_values(v) for v in x]
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x.numpy(), dtype=np.float64)


def _error(fn: Callable[[], Any]) -> str | None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the message is the observation
        return str(exc).splitlines()[0].split(" (hint:")[0]
    return None


@pytest.mark.parametrize("op", ["softmax", "exp", "sigmoid"])
@pytest.mark.parametrize("write", ["relu_", "mul_"])
def test_inplace_on_a_non_leaf_bumps_its_version(
    session: Session, torch: Any, op: str, write: str
) -> None:
    """Seed 1010: an in-place op on a non-leaf writes it on the server (it was rebound to
    an out-of-place result), so a node that saved it refuses to backward, as PyTorch."""

    def scenario(T: Any, make: Callable[..., Any]) -> Any:
        x = make([0.5, -1.0, 2.0], True)
        y = x.softmax(0) if op == "softmax" else getattr(x, op)()
        z = y * 1
        getattr(y, write)(*((2.0,) if write == "mul_" else ()))
        return _values(y), _error(lambda: z.backward(make([1.0, 1.0, 1.0])))

    ours, ref = _run(session, scenario), _run(torch, scenario)
    assert_values(ours, ref, rtol=1e-6, atol=1e-7)


def test_inplace_through_a_view_reaches_the_base(session: Session, torch: Any) -> None:
    """A write through a view of a non-leaf changes the base and its gradient (CopySlices)."""

    def scenario(T: Any, make: Callable[..., Any]) -> Any:
        x = make([1.0, -2.0, 3.0], True)
        y = x * 2
        v = y[1:]
        v.mul_(3.0)
        v.relu_()
        y.backward(make([1.0, 1.0, 1.0]))
        return _values([y, v, x.grad])

    ours, ref = _run(session, scenario), _run(torch, scenario)
    assert_values(ours, ref, rtol=1e-6, atol=1e-7)


def test_grad_updates_a_retained_grad_the_client_read_before(session: Session, torch: Any) -> None:
    """Seed 1025: autograd.grad gives a non-leaf that retains grad a new ``.grad``; the
    client had cached the one it read after an earlier backward."""

    def scenario(T: Any, make: Callable[..., Any]) -> Any:
        x = make([1.792], True)
        h = x * x
        h.retain_grad()
        y = h * x
        y.backward(make([1.0]), retain_graph=True)
        first = _values(h.grad)
        grad = T.autograd.grad if T is torch else T.grad
        grad(h, [x], make([1.426]), retain_graph=True)
        return first, _values(h.grad), _values(x.grad)

    ours, ref = _run(session, scenario), _run(torch, scenario)
    assert_values(ours, ref, rtol=1e-6, atol=1e-7)
