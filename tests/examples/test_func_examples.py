"""examples/per_sample_grads.py and examples/newton.py: the engine gives PyTorch's
numbers (torch.func on the same model, data and starting point)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_per_sample_grads_match_torch(torch: Any) -> None:
    pytest.importorskip("sklearn", reason="the `test` extra installs scikit-learn")
    example = _load("per_sample_grads")
    mine, my_norms = example.per_sample_grads(use_torch=False, batch=16)
    theirs, their_norms = example.per_sample_grads(use_torch=True, batch=16)
    assert set(mine) == set(theirs)
    for k in mine:
        assert mine[k].shape == theirs[k].shape and mine[k].shape[0] == 16
        np.testing.assert_allclose(mine[k], theirs[k], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(my_norms, their_norms, rtol=1e-5)
    assert len(set(np.round(my_norms, 6))) > 1  # per sample, not one batch norm repeated


def test_newton_matches_torch_and_converges(torch: Any) -> None:
    example = _load("newton")
    mine = example.newton(use_torch=False, steps=4)
    theirs = example.newton(use_torch=True, steps=4)
    for (lm, tm), (lt, tt) in zip(mine, theirs):
        np.testing.assert_allclose(lm, lt, rtol=1e-9)
        np.testing.assert_allclose(tm, tt, rtol=1e-9)
    assert mine[-1][0] < 1e-2 * mine[0][0]
    np.testing.assert_allclose(mine[-1][1], [2.0, -1.5, 0.5], atol=0.1)
