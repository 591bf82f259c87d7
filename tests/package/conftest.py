"""The install tests run only when asked for (``-m package``, ``make test-package``):
they are deselected, not skipped, from ``make test``."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "package" in (config.getoption("markexpr") or ""):
        return
    chosen, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker("package") else chosen).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = chosen
