"""The Zen transformer example, run three ways: its losses on the engine and through
the HTTP service (the Python client against a real server on 127.0.0.1) equal
PyTorch's at every iteration, up to float32 rounding."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.torch_oracle import assert_values
from tests.integration.conftest import ROOT, start_server, stop_server


def _load(path: Path) -> Any:
    """The example as a module (``examples/`` is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


zen = _load(ROOT / "examples" / "zen_transformer.py")

STEPS = 4


@pytest.fixture(scope="module")
def torch_losses(torch: Any) -> list[float]:
    return zen.train(zen.make_backend("torch"), STEPS)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    proc, url = start_server()
    try:
        yield url
    finally:
        stop_server(proc)


def test_zen_text_is_the_zen_of_python() -> None:
    text = zen.zen_text()
    assert text.startswith("The Zen of Python, by Tim Peters")
    assert "Beautiful is better than ugly." in text


def test_engine_losses_equal_torch(torch_losses: list[float]) -> None:
    losses = zen.train(zen.make_backend("engine"), STEPS)
    assert len(losses) == STEPS and losses[-1] < losses[0]  # it learns
    assert_values(losses, torch_losses, rtol=2e-5, atol=2e-5)


@pytest.mark.integration
def test_client_losses_equal_torch(torch_losses: list[float], server_url: str) -> None:
    losses = zen.train(zen.make_backend("client", server_url), STEPS)
    assert len(losses) == STEPS and losses[-1] < losses[0]  # it learns
    assert_values(losses, torch_losses, rtol=2e-5, atol=2e-5)


def test_command_line_prints_each_step(capsys: pytest.CaptureFixture[str]) -> None:
    zen.main(["--backend", "engine", "--steps", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [["step", "0"], ["step", "1"]]


def test_client_backend_needs_a_url() -> None:
    with pytest.raises(ValueError, match="needs a server URL"):
        zen.make_backend("client")
