"""The namespaces the statistics, masked, special and window ops live in, compared with
torch's, and the regressions of issue 15 they fixed (erfc of a 0-d tensor)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine
from tests.engine.torch_oracle import require_torch

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("value", [2.0, -3.0, 0.2])
def test_erfc_of_a_0d_tensor_matches_torch(value: float) -> None:
    """erfc refused 0-d inputs beyond |x| = 1 (a numpy scalar written in place)."""
    torch = require_torch()
    mine = engine.erfc(engine.tensor(value, dtype=engine.float64))
    theirs = torch.special.erfc(torch.tensor(value, dtype=torch.float64))
    assert mine.shape == ()
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("path", "args", "kwargs"),
    [
        ("masked.sum", ([[1.0, 2.0], [3.0, 4.0]], 1), {"mask": [[True, False], [True, True]]}),
        ("masked.mean", ([[1.0, 2.0], [3.0, 4.0]], 0), {"mask": [[True, False], [True, True]]}),
        ("special.i1e", ([0.5, -2.0],), {}),
        ("special.zeta", ([2.0, 3.0], [1.0, 2.0]), {}),
        ("signal.windows.kaiser", (6,), {"beta": 5.0, "dtype": "float64"}),
        ("quantile", ([[1.0, 5.0, 2.0], [0.0, 3.0, 9.0]], 0.25, 1), {}),
    ],
)
def test_namespaced_ops_match_torch(
    path: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    torch = require_torch()

    def resolve(root: Any) -> Any:
        for part in path.split("."):
            root = getattr(root, part)
        return root

    def convert(T: Any, v: Any) -> Any:
        if isinstance(v, list):
            return T.tensor(
                np.array(
                    v, dtype=np.bool_ if isinstance(np.ravel(v)[0], np.bool_ | bool) else np.float64
                )
            )
        return v

    t_kwargs = {
        k: (getattr(torch, v) if k == "dtype" else convert(torch, v)) for k, v in kwargs.items()
    }
    e_kwargs = {
        k: (getattr(engine, v) if k == "dtype" else convert(engine, v)) for k, v in kwargs.items()
    }
    mine = resolve(engine)(*(convert(engine, a) for a in args), **e_kwargs)
    theirs = resolve(torch)(*(convert(torch, a) for a in args), **t_kwargs)
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-9)
