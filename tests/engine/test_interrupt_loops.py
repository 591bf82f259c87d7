"""A Python loop inside one op (over a batch of matrices, a sequence's time steps) calls
the caller's check (``engine.interrupt``) per iteration, so a request's deadline stops
it there and not after minutes: counted with a check that records its calls."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from engine import OPS, interrupt, tensor

N = 300  # iterations of the op's loop: its check must be called about as often


def _ctc() -> Any:
    lp = OPS["log_softmax"].fn(tensor(np.zeros((N, 1, 3))), -1)
    return OPS["ctc_loss"].fn(lp, tensor([[1]]), [N], [1])


def _spd_batch() -> Any:
    return tensor(np.broadcast_to(np.eye(2), (N, 2, 2)).copy())


def _ldl_solve() -> Any:
    ld, piv = OPS["linalg_ldl_factor"].fn(_spd_batch())
    return lambda: OPS["linalg_ldl_solve"].fn(ld, piv, tensor(np.ones((N, 2, 1))))


def _singular_batch() -> Any:
    a = np.broadcast_to(np.eye(2), (N, 2, 2)).copy()
    a[-1] = 0.0  # the last matrix singular: every one before it is looked at
    return tensor(a)


CASES: dict[str, Callable[[], Any]] = {
    "ctc_loss: time steps": _ctc,
    "lu_factor: batch": lambda: OPS["lu_factor"].fn(_spd_batch()),
    "linalg_ldl_factor: batch": lambda: OPS["linalg_ldl_factor"].fn(_spd_batch()),
    "geqrf: batch": lambda: OPS["geqrf"].fn(_spd_batch()),
    "cholesky_ex: batch": lambda: OPS["cholesky_ex"].fn(_spd_batch()),
    "cummax: steps": lambda: OPS["cummax"].fn(tensor(np.arange(float(N))), 0),
    "cond p=1: batch": lambda: OPS["cond"].fn(_spd_batch(), 1),
    "inv of a singular batch": lambda: OPS["inv"].fn(_singular_batch()),
}


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
def test_a_loop_inside_one_op_calls_the_check_per_iteration(make: Callable[[], Any]) -> None:
    calls = [0]

    def check() -> None:
        calls[0] += 1

    # (the singular batch's error comes after its loop ran)
    with interrupt.checking(check), contextlib.suppress(Exception):
        make()
    assert calls[0] >= N, calls[0]


def test_ldl_solve_checks_per_matrix() -> None:
    solve = _ldl_solve()
    calls = [0]
    with interrupt.checking(lambda: calls.__setitem__(0, calls[0] + 1)):
        solve()
    assert calls[0] >= N


class Stop(Exception):
    pass


def test_a_check_that_raises_stops_the_loop() -> None:
    seen = [0]

    def check() -> None:
        seen[0] += 1
        if seen[0] == 10:
            raise Stop

    with pytest.raises(Stop), interrupt.checking(check):
        _ctc()
    assert seen[0] == 10
