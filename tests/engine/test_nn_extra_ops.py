"""Regressions for the nn.functional ops and modes of issue 15 (interpolate's bicubic,
area and antialias modes, pooling in 3-d, unpooling, the margin losses ...), each
compared with PyTorch, including what an inf in the input reaches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine
import engine.nn.functional as EF

INF_CASES = [
    ("bilinear x2", lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear")),
    ("bicubic", lambda F, x: F.interpolate(x, size=(7, 4), mode="bicubic")),
    ("antialias", lambda F, x: F.interpolate(x, size=(3, 2), mode="bilinear", antialias=True)),
    ("area", lambda F, x: F.interpolate(x, size=(3, 4), mode="area")),
    ("adaptive_avg_pool2d", lambda F, x: F.adaptive_avg_pool2d(x, (2, 3))),
]


@pytest.mark.parametrize("name,fn", INF_CASES, ids=[c[0] for c in INF_CASES])
def test_an_inf_stays_in_its_window(name: str, fn: Any, torch: Any) -> None:
    """A dense matrix product spreads inf · 0 = NaN over a whole row; PyTorch's kernels
    read only each output's taps."""
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 5))
    x[0, 0, 1, 2] = np.inf
    want = fn(torch.nn.functional, torch.tensor(x)).numpy()
    got = fn(EF, engine.tensor(x)).numpy()
    assert np.isfinite(want).any()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["area", "bicubic"])
def test_interpolate_create_graph_matches_torch(mode: str, torch: Any) -> None:
    """Area's backward reads the input in PyTorch (its gradient requires grad under
    create_graph); bicubic's reads only the gradient."""
    x = np.random.default_rng(1).standard_normal((1, 1, 4, 5))
    kw = {"size": (3, 7), "mode": mode}
    t = torch.tensor(x, requires_grad=True)
    (tg,) = torch.autograd.grad(
        torch.nn.functional.interpolate(t, **kw).sum(), t, create_graph=True
    )
    e = engine.tensor(x, requires_grad=True)
    (eg,) = engine.grad(EF.interpolate(e, **kw).sum(), e, create_graph=True)
    assert eg.requires_grad == tg.requires_grad
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
