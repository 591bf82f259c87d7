"""Fixtures for the browser tests: a live server (or GRADSERVE_BROWSER_URL) and Chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from browser_support import ROOT, chromium_driver, find_browser

from client import LocalServer


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    find_browser()  # skip or fail before starting anything
    with chromium_driver() as driver:
        yield driver


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """``python -m service serve`` on a free port, or the server at GRADSERVE_BROWSER_URL."""
    if os.environ.get("GRADSERVE_BROWSER_URL"):
        yield os.environ["GRADSERVE_BROWSER_URL"].rstrip("/")
        return
    find_browser()
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "GRADSERVE_LOG_LEVEL": "warning",
    }
    srv = LocalServer(cwd=ROOT, env=env)
    url = srv.start()
    try:
        yield url
    finally:
        srv.stop()
