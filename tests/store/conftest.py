"""Fixtures for the durable store tests: a real Redis in a temp dir, real servers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# the in-process client of tests/service
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))

from store_helpers import Server, memory_run, script, start_redis, stop  # noqa: E402


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    proc, url = start_redis(tmp_path)
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    """Servers a test starts (appended to the list); all stopped at the end."""
    started: list[Server] = []
    yield started
    for s in started:
        s.stop()


@pytest.fixture(scope="session")
def reference() -> list[tuple[int, Any]]:
    """The scripted session's answers from an uninterrupted in-memory server."""
    return memory_run(script())
