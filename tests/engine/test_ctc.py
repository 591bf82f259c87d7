"""ctc_loss: its gradient is PyTorch's (which adds ``exp(log_probs)``, a term the
log_softmax before it projects away), so finite differences check it through
``log_softmax``, and the values and gradients are compared with torch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine
from engine.gradcheck import gradcheck

F: Any = engine.nn.functional


def _case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    raw = rng.standard_normal((7, 3, 5))
    targets = np.array([[1, 2, 2, 4], [3, 1, 0, 0], [4, 0, 0, 0]])
    return raw, targets, [7, 6, 5], [4, 2, 1]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gradient_through_log_softmax_matches_finite_differences(reduction: str) -> None:
    raw, targets, il, tl = _case(np.random.default_rng(0))
    x = engine.tensor(raw, requires_grad=True)
    tg = engine.tensor(targets)

    def loss(x: Any) -> Any:
        lp = F.log_softmax(x, 2)
        return F.ctc_loss(lp, tg, il, tl, reduction=reduction)

    assert gradcheck(loss, (x,))


def test_matches_torch_with_an_impossible_alignment(torch: Any) -> None:
    raw, targets, il, tl = _case(np.random.default_rng(1))
    il = [7, 6, 0]  # sample 2 has no frames for its one label: an infinite loss
    for zero_infinity in (False, True):
        lp_t = torch.tensor(raw).log_softmax(2).detach().requires_grad_()
        lp_e = engine.tensor(lp_t.detach().numpy(), requires_grad=True)
        ref = torch.nn.functional.ctc_loss(
            lp_t, torch.tensor(targets), il, tl, reduction="sum", zero_infinity=zero_infinity
        )
        got = F.ctc_loss(
            lp_e, engine.tensor(targets), il, tl, reduction="sum", zero_infinity=zero_infinity
        )
        assert np.isclose(float(got), float(ref), rtol=1e-10)
        if zero_infinity:
            ref.backward()
            got.backward()
            grad: Any = lp_e.grad
            np.testing.assert_allclose(grad.numpy(), lp_t.grad.numpy(), rtol=1e-9, atol=1e-12)
