"""``bench/scale.py --quick`` runs to the end and prints its ratios (a real uvicorn
process on a free 127.0.0.1 port, stopped by pid). Only completion and the table are
checked: no timing assertions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_bench_scale_quick_completes_and_prints_ratios() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scale.py"), "--quick", "--seconds", "0.3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if "x)" in line]
    assert [r[0] for r in rows] == ["1", "100", "1000"]
    assert "(1.00x)" in proc.stdout
