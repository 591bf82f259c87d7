"""A scatter whose src is larger than its index (issue 15): PyTorch's backward
gathers src's gradient at the index (the index's shape) and its engine refuses it
where src requires grad; prod/amax/amin fail earlier, comparing src with values
gathered at the index. Both sides raise the same message (and pass where torch does).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.test_semantics import both, outcome, quiet_grad
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1
pytestmark = pytest.mark.torch


def _reduce(r: str, inc: bool) -> Any:
    return lambda a, i, s: a.scatter_reduce(0, i, s, r, include_self=inc)


CALLS = {
    "scatter": lambda a, i, s: a.scatter(0, i, s),
    "scatter_add": lambda a, i, s: a.scatter_add(0, i, s),
    **{
        f"scatter_reduce {r} {inc}": _reduce(r, inc)
        for r in ("sum", "prod", "mean", "amax", "amin")
        for inc in (True, False)
    },
}


@pytest.mark.parametrize("which", ["self", "src", "both"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_backward_with_src_larger_than_index_matches_torch(call: str, which: str) -> None:
    def scenario(T: Any) -> Any:
        a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=which != "src")
        s = T.tensor([[1.0, 0.0, 3.0], [2.0, 2.0, 1.0]], requires_grad=which != "self")
        index = T.tensor([[0, 1]])

        def run() -> Any:
            CALLS[call](a * 1, index, s * 1).sum().backward()
            return quiet_grad(a), quiet_grad(s)

        return outcome(run)[1]

    ours, ref = both(scenario)
    assert_values(ours, ref)
