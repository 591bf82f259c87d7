"""An example whose extra is missing says which ``pip install`` brings it (exit 1), not
a ModuleNotFoundError traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_extra_names_the_install() -> None:
    # torch hidden as if not installed: a None entry in sys.modules fails its import
    code = (
        "import sys; sys.modules['torch'] = None; sys.argv = ['x', '--torch']; "
        "sys.path.insert(0, 'examples/tutorials'); import runpy; "
        "runpy.run_path('examples/tutorials/01_understanding_backward.py', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done
    assert "pip install 'gradserve[examples]'" in done.stderr
    assert "Traceback" not in done.stderr
