"""The README's reference tables say what the code does: every problem code with its
status, every ``GRADSERVE_*`` setting with its default, every ``make`` target; and the
Python client has an exception class for every code (README: "one subclass per code")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from client import errors as client_errors
from service.errors import PROBLEMS
from service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    """The text of the README section ``## title``, up to the next ``## ``."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else None]


def rows(text: str) -> list[list[str]]:
    """The body rows of the markdown tables in ``text``, as lists of cells."""
    out = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            out.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return out[1:] if out else out


def test_error_table_is_the_problem_table() -> None:
    documented: dict[str, set[int]] = {}
    for cells in rows(section("Errors")):
        for code in re.findall(r"`(\w+)`", cells[0]):
            documented[code] = {int(s) for s in re.findall(r"\b\d{3}\b", cells[1])}
    assert sorted(set(PROBLEMS) - set(documented)) == [], "codes missing from README ## Errors"
    assert sorted(set(documented) - set(PROBLEMS)) == [], "README documents unknown codes"
    for code, (status, _) in PROBLEMS.items():
        assert status in documented[code], (code, status, documented[code])


def _default(text: str) -> str:
    return text.strip("`").split(" (")[0]


def test_settings_table_is_the_settings_class() -> None:
    seen = set()
    for cells in rows(section("Settings")):
        names = re.findall(r"`GRADSERVE_(\w+)`", cells[0])
        defaults = [d.strip() for d in cells[1].split(" / ")]
        assert len(defaults) == len(names), cells
        for name, shown in zip(names, defaults):
            field = name.lower()
            assert field in Settings.model_fields, f"GRADSERVE_{name} is not a setting"
            seen.add(field)
            value = Settings.model_fields[field].get_default(call_default_factory=True)
            if isinstance(value, list):
                assert value == [] and _default(shown) == "empty", (name, shown)
            elif isinstance(value, bool):
                assert _default(shown) == str(value).lower(), (name, shown)
            elif isinstance(value, int | float):
                assert float(_default(shown)) == value, (name, shown, value)
            else:
                assert _default(shown) == value, (name, shown, value)
    assert sorted(set(Settings.model_fields) - seen) == [], "settings missing from the table"


def test_make_targets_in_the_readme_exist() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = set(re.findall(r"`make ([\w-]+)", README))
    assert named and sorted(named - targets) == []
    ci = (ROOT / ".ci" / "run").read_text()
    for target in re.findall(r"^make ([\w-]+)", ci, re.M):
        assert f"`make {target}`" in section("Make targets"), f".ci/run's make {target}"


@pytest.mark.parametrize("code", sorted(PROBLEMS))
def test_the_client_raises_a_class_per_code(code: str) -> None:
    status = PROBLEMS[code][0]
    exc = client_errors.from_problem(status, {"code": code, "status": status, "detail": "d"})
    assert type(exc).code == code, f"no client class for {code}"
    if status == 404:
        assert isinstance(exc, LookupError)
    if code in ("not_scalar", "graph_freed", "leaf_inplace", "inplace_view", "not_differentiable"):
        assert isinstance(exc, RuntimeError)  # as PyTorch raises: `except RuntimeError` works
