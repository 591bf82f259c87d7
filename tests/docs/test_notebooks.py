"""The notebooks in examples/notebooks run top to bottom against a live server (nbclient,
``GRADSERVE_URL``) without torch in the kernel, print what the seed tutorial prints (the
same program run in PyTorch prints the same text and numbers), draw a graph (an SVG
output) and show the second backward's problem rendered. The checks live here."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "examples" / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)")


def test_one_notebook_per_tutorial_and_current() -> None:
    """Five notebooks, as ``build.py`` writes them from examples/tutorials today."""
    scripts = sorted((ROOT / "examples" / "tutorials").glob("[0-9][0-9]_*.py"))
    assert [p.stem for p in PATHS] == [p.stem for p in scripts] and len(PATHS) == 5
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import build  # examples/notebooks/build.py
    finally:
        sys.path.remove(str(NOTEBOOKS))
    for path, script in zip(PATHS, scripts):
        written = nbformat.read(path, as_version=4)
        fresh = build.notebook(script)
        assert [(c.id, c.source) for c in written.cells] == [
            (c.id, c.source) for c in fresh.cells
        ], f"{path.name} is stale: run python examples/notebooks/build.py"
        assert all(not c.get("outputs") for c in written.cells if c.cell_type == "code")
        assert "import torch" not in "".join(c.source for c in written.cells)


def _execute(path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    nb = nbformat.read(path, as_version=4)
    # the kernel's modules, read after the last cell (a check of the test, not of the notebook)
    nb.cells.append(nbformat.v4.new_code_cell('import sys; print("torch" in sys.modules)'))
    monkeypatch.setenv("GRADSERVE_URL", server)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    return nb


def _stdout(cells: list[Any]) -> str:
    return "".join(
        o.get("text", "")
        for c in cells
        for o in c.get("outputs", [])
        if o.output_type == "stream" and o.name == "stdout"
    )


def _torch_stdout(path: Path) -> str:
    script = ROOT / "examples" / "tutorials" / f"{path.stem}.py"
    done = subprocess.run(
        [sys.executable, str(script), "--torch"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.torch
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_notebook_runs_and_prints_the_seeds_results(
    path: Path, server: str, torch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = _execute(path, server, monkeypatch)
    steps = [c for c in nb.cells if "tutorial" in c.metadata.get("tags", [])]
    ours, ref = _stdout(steps), _torch_stdout(path)
    assert "tensor(" in ours
    assert NUMBER.sub("#", ours) == NUMBER.sub("#", ref), (ours, ref)
    for a, b in zip(NUMBER.findall(ours), NUMBER.findall(ref), strict=True):
        x, y = float(a), float(b)
        assert (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-6)
    displays = [o for c in steps for o in c.outputs if o.output_type == "execute_result"]
    svgs = [o.data["image/svg+xml"] for o in displays if "image/svg+xml" in o.data]
    assert svgs and all("<svg" in svg for svg in svgs)
    # retain_graph: the second backward accumulates; the third is a rendered problem
    retain, second = nb.cells[-4], nb.cells[-3]
    assert _stdout([retain]).strip() == "tensor([4., 8.])"
    (shown,) = [o for o in second.outputs if o.output_type == "display_data"]
    page = shown.data["text/html"]
    assert "graph_freed" in page and "HTTP 409" in page and "retain_graph=true" in page
    assert _stdout(nb.cells[-1:]).strip() == "False"  # no torch in the kernel
