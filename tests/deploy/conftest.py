"""Deployment tests: lint of docker/ (quick, always) and the nginx scale-out test.

The scale-out test needs nginx (Debian package nginx or nginx-light) and starts
real processes, so it is opt-in: it runs only with ``-m scaleout`` or with
``GRADSERVE_SCALEOUT=1``; otherwise it is skipped with a pointer to that.
When asked for, a missing nginx is a failure, not a skip.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "scaleout: two replicas behind nginx on 127.0.0.1 (needs nginx); "
        "run with -m scaleout or GRADSERVE_SCALEOUT=1",
    )


def scaleout_requested(config: pytest.Config) -> bool:
    return "scaleout" in (config.getoption("markexpr") or "") or os.environ.get(
        "GRADSERVE_SCALEOUT", ""
    ) not in ("", "0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if scaleout_requested(config):
        return
    skip = pytest.mark.skip(
        reason="scale-out test is opt-in: pytest -m scaleout tests/deploy (needs nginx)"
    )
    for item in items:
        if "scaleout" in item.keywords:
            item.add_marker(skip)
