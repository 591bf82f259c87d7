"""PyTorch's op database against the engine: one sweep, its figures printed, and a
failure when an entry that passed (``baseline.json``) no longer does or an
``error_inputs`` case that matched no longer matches.

``make test`` runs the first ``OPDB_LIMIT`` samples per entry and dtype (1 by default);
``make fuzz`` runs every sample (``OPDB_LIMIT=all``). ``python -m tests.opdb
[--limit N] --write-baseline`` records a run as the floor for runs of that limit. Entries the engine lacks are
listed by name in the printed summary, not skipped silently.
"""

from __future__ import annotations

import os

import pytest

from tests.engine.torch_oracle import require_torch

require_torch()

from tests.opdb.harness import real_entries, run_entry  # noqa: E402
from tests.opdb.report import figures, load_baseline, summary  # noqa: E402

pytestmark = pytest.mark.torch


def _limit() -> int | None:
    value = os.environ.get("OPDB_LIMIT", "1")
    return None if value == "all" else int(value)


def test_op_db_does_not_regress() -> None:
    limit = _limit()
    results = [run_entry(op, limit) for op in real_entries()]
    print("\n" + summary(results))
    f = figures(results)
    assert f["entries_fully_passing"] >= 1 and f["samples"] > 1000, f
    baseline = load_baseline(limit)
    if baseline is None:
        pytest.skip(f"no baseline for OPDB_LIMIT={limit}: python -m tests.opdb --write-baseline")
    by_name = {r.name: r for r in results}
    lost = [
        f"{name}: {by_name[name].failures[:2]}"
        for name in baseline["passing"]
        if name in by_name and not by_name[name].full_pass
    ]
    matched = {f"{r.name}#{k}" for r in results for k in r.errors_matched}
    lost += [
        f"{case}: error_inputs no longer match"
        for case in baseline["error_inputs"]
        if case not in matched
    ]
    assert not lost, "op_db entries that passed before fail now:\n" + "\n".join(lost)
