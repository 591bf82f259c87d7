"""A real gradserve process on 127.0.0.1 for the client tests, and PyTorch as the oracle."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from client import LocalServer, Session

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """``python -m service serve`` on a free port; stopped by PID at the end."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env["GRADSERVE_LOG_LEVEL"] = "warning"
    srv = LocalServer(cwd=ROOT, env=env)
    url = srv.start()
    try:
        yield url
    finally:
        srv.stop()


@pytest.fixture
def session(server: str) -> Iterator[Session]:
    s = Session(server, name=f"t-{uuid.uuid4().hex[:12]}")
    try:
        yield s
    finally:
        try:
            s.delete()
        finally:
            s.close()


@pytest.fixture(scope="session")
def torch():  # noqa: ANN201 - the module
    """PyTorch, the reference; with REQUIRE_TORCH=1 a missing torch fails instead of skipping."""
    try:
        import torch
    except ImportError as exc:
        if os.environ.get("REQUIRE_TORCH") == "1":
            pytest.fail(f"REQUIRE_TORCH=1 but torch cannot be imported: {exc}")
        pytest.skip("torch is not installed (REQUIRE_TORCH=1 turns this into a failure)")
    torch.set_default_dtype(torch.float32)
    return torch
