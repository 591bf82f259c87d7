"""One torch-compare oracle (tinygrad's ``helper_test_op``): every test that compares
the engine, the client or the service with PyTorch goes through
``tests/engine/torch_oracle.py``, so tolerances per dtype, NaN/inf rules, dtype,
shape, graph and error checks live in one place.

An AST scan keeps it so: a helper (a function that is not a test or a fixture) in a
test module that compares values itself (``np.testing.assert_*``, ``np.allclose``,
``np.isclose``, ``np.array_equal``, ``torch.testing.assert_close``) and touches torch
(names ``torch``, or sits in a module that compares with torch and takes two
results) is a second oracle. Call ``assert_same``/``assert_values``/``compare``/
``check``/``assert_same_error``/``values_differ`` instead. The few helpers that
compare something else (two engine forms, text) are listed with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine import OPS

TESTS = Path(__file__).resolve().parents[1]
ORACLE = TESTS / "engine" / "torch_oracle.py"
COMPARISONS = {
    "assert_allclose",
    "assert_array_equal",
    "assert_equal",
    "assert_array_almost_equal",
    "assert_almost_equal",
    "allclose",
    "isclose",
    "array_equal",
    "assert_close",
}
# helpers that compare, but not the engine with torch (path:function -> why)
NOT_TORCH_COMPARES = {
    "engine/test_registry_facts.py:_same": "a method form against the function form, both engine",
    "client/test_client_binary.py:same": "raw-byte gradients against the JSON ones, both ours",
    "docs/test_examples.py:_same_text_and_numbers": "printed text of two runs, numbers in it",
    "engine/test_kernel_tolerance.py:*": "tests the oracle's own ulp comparison",
    "opdb/harness.py:_ties_settled": "reads tie indices before the oracle compares",
}


def _is_fixture(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
    return False


def _compares_values(fn: ast.FunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            owner = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            if node.func.attr in COMPARISONS and owner in ("np", "numpy", "testing"):
                return True
    return False


def _touches_torch(fn: ast.FunctionDef, module_compares_with_torch: bool) -> bool:
    names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    if "torch" in names:
        return True
    return module_compares_with_torch and len(fn.args.args) >= 2


def second_oracles(root: Path = TESTS) -> list[str]:
    """``path:function`` of every helper that compares with torch on its own."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == ORACLE:
            continue
        source = path.read_text()
        module_compares_with_torch = "torch" in source
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("test_"):
                continue
            if _is_fixture(node) or not _compares_values(node):
                continue
            key = f"{rel}:{node.name}"
            if key in NOT_TORCH_COMPARES or f"{rel}:*" in NOT_TORCH_COMPARES:
                continue
            if _touches_torch(node, module_compares_with_torch):
                found.append(key)
    return found


def test_no_test_module_keeps_its_own_torch_compare_helper() -> None:
    found = second_oracles()
    assert not found, (
        f"{found}: compare through tests/engine/torch_oracle.py (assert_same, "
        "assert_values, compare, check, assert_same_error, values_differ) instead"
    )


def test_the_scan_catches_a_second_oracle(tmp_path: Path) -> None:
    """Test the tester: a helper like the 13 this replaced is found."""
    (tmp_path / "test_x.py").write_text(
        "import numpy as np\nimport torch\n\n"
        "def _close(mine, theirs):\n"
        "    np.testing.assert_allclose(mine.data, theirs.detach().numpy())\n\n"
        "def test_ok():\n    _close(1, 2)\n"
    )
    assert second_oracles(tmp_path) == ["test_x.py:_close"]


def test_the_listed_exceptions_still_exist() -> None:
    for key in NOT_TORCH_COMPARES:
        rel, name = key.split(":")
        source = (TESTS / rel).read_text()
        assert name == "*" or f"def {name}(" in source, f"{key}: gone, drop it from the list"


@pytest.mark.parametrize("name", ["assert_same", "assert_values", "compare", "check"])
def test_the_oracle_offers(name: str) -> None:
    assert f"def {name}(" in ORACLE.read_text()


# -- sample domains: declared once, on the registration -----------------------------------


def _number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float)


def _interval(node: ast.expr) -> bool:
    return isinstance(node, ast.Tuple) and len(node.elts) == 2 and all(map(_number, node.elts))


def domain_tables(root: Path = TESTS) -> list[str]:
    """``path:line`` of every dict in a test module mapping registered op names to
    (low, high) intervals: a domain table, which belongs on the registration."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Dict):
                continue
            ops = [
                k
                for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and k.value in OPS and _interval(v)
            ]
            floats = any(
                isinstance(c, ast.Constant) and isinstance(c.value, float)
                for v in node.values
                for c in ast.walk(v)
            )  # integer pairs are positions (harness's TIES_ARBITRARY), not intervals
            if len(ops) >= 2 and floats:
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_no_test_module_keeps_its_own_domain_table() -> None:
    found = domain_tables()
    assert not found, (
        f"{found}: declare where an op's inputs are defined with register(domain=...) "
        "and read OPS[name].domain_of(k)"
    )


def test_the_domain_scan_catches_a_table(tmp_path: Path) -> None:
    (tmp_path / "test_y.py").write_text('UNARY = {"log": (0.1, 3), "sqrt": (0.1, -3.0)}\n')
    assert domain_tables(tmp_path) == ["test_y.py:1"]


def test_registered_domains_are_intervals() -> None:
    """A declared domain is a non-empty interval (a signed one lies above zero); the
    samples may probe beyond it on purpose (pow of a negative base, integer power)."""
    declared = {name: spec.domain for name, spec in OPS.items() if spec.domain}
    assert {"log", "sqrt", "div", "pow", "asin"} <= set(declared)
    for name, domains in declared.items():
        for d in domains:
            assert d.low < d.high and (d.low > 0 or not d.signed), (name, d)
            assert OPS[name].domain_of(len(domains)).low == -2.0  # the default beyond
