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


ERROR_CASES = [
    ("avg_pool1d negative pad", lambda F, x: F.avg_pool1d(x, 2, 50, -1), (0, 1, 49)),
    ("max_pool1d negative pad", lambda F, x: F.max_pool1d(x, 2, 50, -1), (0, 1, 49)),
    ("max_pool3d pad too big", lambda F, x: F.max_pool3d(x, 2, 50, 4), (0, 1, 49, 50)),
    ("adaptive_avg_pool1d negative", lambda F, x: F.adaptive_avg_pool1d(x, (-1,)), (1, 1, 1)),
    ("adaptive_max_pool3d 3-d input", lambda F, x: F.adaptive_max_pool3d(x, (2, 2, 2)), (2, 2, 2)),
]


@pytest.mark.parametrize("name,fn,shape", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_pool_errors_match_torch(name: str, fn: Any, shape: Any, torch: Any) -> None:
    x = np.zeros(shape)
    with pytest.raises(Exception) as want:
        fn(torch.nn.functional, torch.tensor(x))
    with pytest.raises(Exception) as got:
        fn(EF, engine.tensor(x))
    assert isinstance(got.value, type(want.value))
    assert str(got.value) == str(want.value)


def test_max_pool3d_nan_and_padding_ties(torch: Any) -> None:
    """A NaN wins its windows; a window of -inf reports a position inside the input."""
    x = np.full((1, 1, 3, 3, 3), -np.inf)
    x[0, 0, 2, 2, 2] = np.nan
    kw = {"kernel_size": 2, "stride": 1, "padding": 1, "return_indices": True}
    tv, ti = torch.nn.functional.max_pool3d(torch.tensor(x), **kw)
    ev, ei = EF.max_pool3d(engine.tensor(x), **kw)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
