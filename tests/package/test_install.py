"""The package as users install it, in fresh virtualenvs (``make test-package``):

- the base install is the engine and the client, without the FastAPI stack, and its
  ``gradserve`` script answers ``--version`` and explains what ``serve`` needs;
- ``gradserve[server]`` adds the service, which then imports and reports the same version.

Marked ``package`` (deselected from ``make test``): it builds a wheel and installs
from the package index, which takes a minute or two.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

pytestmark = pytest.mark.package


def _venv(path: Path) -> Path:
    venv.create(path, with_pip=True, clear=True)
    return path / "bin"


def _run(*cmd: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd="/")
    if check and done.returncode != 0:
        raise AssertionError(f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def _wheel(tmp: Path) -> Path:
    out = tmp / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT)
    (wheel,) = out.glob("gradserve-*.whl")
    return wheel


def test_base_install_is_the_engine_and_the_client(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    bin_ = _venv(tmp_path / "base")
    _run(bin_ / "pip", "install", "-q", wheel)
    code = (
        "import engine, client; "
        "x = engine.tensor([1.0, 2.0], requires_grad=True); (x ** 2).sum().backward(); "
        "assert x.grad.tolist() == [2.0, 4.0]; "
        "print(engine.__version__, client.__version__)"
    )
    assert _run(bin_ / "python", "-c", code).stdout.split() == [VERSION, VERSION]
    assert _run(bin_ / "gradserve", "--version").stdout.strip() == f"gradserve {VERSION}"
    missing = _run(bin_ / "python", "-c", "import fastapi", check=False)
    assert missing.returncode != 0  # the server stack is not pulled in
    serve = _run(bin_ / "gradserve", "serve", check=False)
    assert serve.returncode == 2 and "gradserve[server]" in serve.stderr
    code = (
        "from importlib.metadata import metadata; m = metadata('gradserve'); "
        "print(m.get('License-Expression') or m.get('License'))"
    )
    assert _run(bin_ / "python", "-c", code).stdout.strip() == "MIT"


def test_server_extra_adds_the_service(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    bin_ = _venv(tmp_path / "server")
    _run(bin_ / "pip", "install", "-q", f"{wheel}[server]")
    code = "import service.app as a; print(a.create_app().version)"
    assert _run(bin_ / "python", "-c", code).stdout.strip() == VERSION
    assert _run(bin_ / "gradserve", "--version").stdout.strip() == f"gradserve {VERSION}"
    # the playground's assets ship inside the wheel
    code = (
        "from importlib import resources; "
        "print((resources.files('service') / 'playground' / 'index.html').is_file())"
    )
    assert _run(bin_ / "python", "-c", code).stdout.strip() == "True"
