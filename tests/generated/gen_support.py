"""Helpers and fixtures for the generated-client tests: tools, the spec, a live server
(with an API key, so the generated clients send one)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from client import LocalServer

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "generated-clients-key"


def need(tool: str, what: str) -> str:
    """The path of ``tool``; a skip with the reason when it is absent, a failure under CI."""
    found = shutil.which(
        tool, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    )
    if found:
        return found
    message = f"{tool} is not installed: {what}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so this fails instead of skipping)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def spec() -> Path:
    path = ROOT / "openapi" / "openapi.json"
    if not path.is_file():
        pytest.fail("openapi/openapi.json is missing: run `make openapi`")
    return path


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "GRADSERVE_API_KEYS": API_KEY,
        "GRADSERVE_LOG_LEVEL": "warning",
    }
    srv = LocalServer(cwd=ROOT, env=env)
    url = srv.start()
    try:
        yield url
    finally:
        srv.stop()
