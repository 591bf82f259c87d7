"""The engine's import layering (DESIGN.md "Engine structure"), checked on its source:
no function-local imports (they hide cycles), a bottom module of primitives that
imports no op family, and a Tensor that imports nothing that records ops."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"
MODULES = sorted(ENGINE.rglob("*.py"))


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Module-level imports, leaving out ``if TYPE_CHECKING:`` blocks."""
    out: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.Try):
            out.extend(n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    return out


def _targets(path: Path) -> set[str]:
    """The engine modules ``path`` imports at run time, as dotted names under ``engine``."""
    tree = ast.parse(path.read_text())
    package = path.relative_to(ENGINE.parent).with_suffix("").parts[:-1]
    out: set[str] = set()
    for node in _runtime_imports(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            module = ".".join((*base, node.module)) if node.module else ".".join(base)
            if node.module is None:
                out.update(f"{module}.{alias.name}" for alias in node.names)
            else:
                out.add(module)
    return out


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_no_function_local_imports(path: Path) -> None:
    tree = ast.parse(path.read_text())
    local = [
        f"line {node.lineno}"
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    assert not local, f"{path.name}: imports inside functions ({', '.join(local)})"


def test_primitives_import_no_op_family() -> None:
    targets = _targets(ENGINE / "primitives.py")
    assert {"engine.function", "engine.tensor"} <= targets  # the reader sees its imports
    assert not {t for t in targets if t.startswith("engine.ops")}
    # and an op family's imports are read as such
    assert "engine.ops.shape" in _targets(ENGINE / "ops" / "indexing.py")


def test_tensor_imports_nothing_that_records_ops() -> None:
    """``function`` (recording) and ``views`` (in-place writes) import the Tensor, never
    the reverse; no module injects the Tensor class into another."""
    targets = _targets(ENGINE / "tensor.py")
    assert not targets & {"engine.function", "engine.views", "engine.primitives"}
    for path in MODULES:
        assert "_tensor_cls" not in path.read_text(), path.name
