"""``bench/engine.py --quick`` runs to the end and prints its ratio table.

Only completion is checked: timings on a shared CI machine mean nothing, so
there are no timing assertions here (the benchmark itself never asserts).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_quick_completes_and_prints_ratios() -> None:
    # a subprocess: the script is named engine.py and must not shadow the package here
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "engine.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "engine/torch" in out and "engine/numpy" in out and "engine/HIPS" in out
    for case in ("per-op", "MLP step", "(x*x).sum()"):
        assert case in out, out
    assert "BLAS threads" in out
