"""examples/digits_cnn.py: the same short training run on PyTorch, on the engine and
through the Python client against a live server gives PyTorch's loss at every step."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.engine.torch_oracle import assert_values

ROOT = Path(__file__).resolve().parents[2]
STEPS = 6
pytest.importorskip("sklearn", reason="the `test` extra installs scikit-learn")


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("digits_cnn", ROOT / "examples" / "digits_cnn.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return _example()


@pytest.fixture(scope="module")
def torch_run(example: ModuleType, torch: Any) -> tuple[list[float], float]:
    return example.train("torch", steps=STEPS, batch=32)  # type: ignore[no-any-return]


def test_torch_run_learns(torch_run: tuple[list[float], float]) -> None:
    losses, accuracy = torch_run
    assert all(np.isfinite(losses)) and losses[0] > 2.0  # about ln(10) at the start
    assert 0.0 <= accuracy <= 1.0


def test_engine_losses_match_torch(
    example: ModuleType, torch_run: tuple[list[float], float]
) -> None:
    losses, accuracy = example.train("engine", steps=STEPS, batch=32)
    assert len(losses) == STEPS
    # float32 arithmetic in a different order: equal to a few units in the 6th digit
    assert_values(losses, torch_run[0], rtol=2e-5, atol=1e-6)
    assert accuracy == pytest.approx(torch_run[1], abs=2 / 1797)


@pytest.mark.integration
def test_client_losses_match_torch(
    example: ModuleType, torch_run: tuple[list[float], float]
) -> None:
    """A server process on a free 127.0.0.1 port (the client's LocalServer, stopped by PID)."""
    from client import LocalServer

    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env["GRADSERVE_LOG_LEVEL"] = "warning"
    with LocalServer(cwd=ROOT, env=env) as url:
        losses, accuracy = example.train("client", steps=STEPS, batch=32, url=url)
    assert len(losses) == STEPS
    # float32 arithmetic in a different order: equal to a few units in the 6th digit
    assert_values(losses, torch_run[0], rtol=2e-5, atol=1e-6)
    assert accuracy == pytest.approx(torch_run[1], abs=2 / 1797)


def test_script_runs_from_the_command_line(torch: Any) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "digits_cnn.py"),
            "--backend",
            "engine",
            "--steps",
            "3",
            "--every",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("loss") == 3
    assert "training accuracy after 3 steps" in proc.stdout
