"""Shared test set-up: the repository on ``sys.path``, Hypothesis profiles and a
seeded numpy generator.

Hypothesis runs the bounded, derandomized ``ci`` profile unless
``HYPOTHESIS_PROFILE=dev`` asks for a longer, random search.
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `pytest` (not `python -m pytest`) does not add the cwd
    sys.path.insert(0, str(ROOT))

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=500, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def torch() -> Any:
    """The ``torch`` module (skips without it; fails instead under REQUIRE_TORCH=1)."""
    from tests.engine.torch_oracle import require_torch

    return require_torch()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy generator seeded from the test's id: reproducible, distinct per test."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
