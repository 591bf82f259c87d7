"""A real gradserve process on 127.0.0.1 for the docs and examples tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from client import LocalServer

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """``python -m service serve`` on a free port; stopped by PID at the end."""
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "GRADSERVE_LOG_LEVEL": "warning",
        "GRADSERVE_CORS_ORIGINS": "https://notebook.example",  # README's CORS block says so
    }
    srv = LocalServer(cwd=ROOT, env=env)
    url = srv.start()
    try:
        yield url
    finally:
        srv.stop()
