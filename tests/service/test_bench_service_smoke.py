"""``bench/service.py --quick`` runs to the end and prints its tables and ratios.

It starts two real uvicorn processes on free 127.0.0.1 ports (stopped by pid; they
also die with the script). Only completion is checked: timings on a shared machine
mean nothing, so there are no timing assertions (the benchmark never asserts).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_bench_service_quick_completes_and_prints_ratios() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "service.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for case in (
        "ping",
        "bare step",
        "/ops step",
        "/ops chain",
        "/batch 100",
        "/batch 1",
        "engine chain",
        "engine train",
        "/batch train",
        "/backward",
        "upload raw",
        "upload b64",
        "upload json",
        "download raw",
        "download b64",
        "download json",
    ):
        assert re.search(rf"^\| {re.escape(case)} +\| +\d", out, re.M), (case, out)
    for ratio in (
        "/ops step vs bare step",
        "/batch vs single requests",
        "/batch train vs engine",
        "batch step vs engine op",
        "upload b64 vs raw",
        "download b64 vs raw",
    ):
        assert re.search(rf"^\| {re.escape(ratio)} +\| +[\d.]+x \|", out, re.M), (ratio, out)
