from __future__ import annotations

import pytest

from service.compute import expr
from service.errors import ExprInvalidError, UnknownOpError

OPS = {"sum", "mean", "log", "exp", "max", "matmul", "getitem"}


def parse(text: str, max_length: int = 4096) -> expr.Node:
    return expr.parse(text, max_length=max_length, ops=OPS)


@pytest.mark.parametrize(
    "text",
    [
        "3*a + 2*b*b + log(c)",
        "w - 0.1 * w.grad",
        "x ** 2",
        "a @ b",
        "-x",
        "+x",
        "sum(x, dim=1)",
        "x.sum(dim=1).mean()",
        "x.max(dim=1)",
        "x[0]",
        "x[:, 1:3]",
        "x[None, ..., ::2]",
        "x[[0, 2]]",
        "x[idx]",
        "x.grad.sum()",
        "sum(x, dim=(0, 1), keepdim=True)",
        "(x\n+ y)",
        "  x +\n  y",
        "sum(x, reduction=')')",
    ],
)
def test_accepted(text: str) -> None:
    parse(text)


def test_constants_fold_like_python() -> None:
    assert parse("-1") == expr.Const(-1)
    assert parse("2 ** 10") == expr.Const(1024)
    assert parse("0.1 * 2") == expr.Const(0.2)
    assert parse("1 / 0") == expr.Const(float("inf"))
    assert parse("9 ** 9 ** 9") == expr.Const(float("inf"))  # float64, never a huge int


def test_tree_and_names() -> None:
    node = parse("x.sum(dim=1) + y.grad")
    assert isinstance(node, expr.Call) and node.op == "add"
    method = node.args[0]
    assert isinstance(method, expr.Call) and method.method and method.kwargs[0][0] == "dim"


@pytest.mark.parametrize(
    ("text", "col"),
    [
        ("x.__class__", 3),
        ("x.grad.data", 8),
        ("x.data.grad", 8),
        ("a < b < c", 7),
        ("(a) < b <= c", 9),
        ("x in y", 3),
        ("x is not y", 3),
        ("x << 2", 3),
        ("x.float(1)", 3),
        ("lambda: x", 1),
        ("[i for i in x]", 1),
        ("(i for i in x)", 1),
        ("__import__('os')", 1),
        ("x + __builtins__", 5),
        ("x.__add__(y)", 3),
        ("x if y else z", 1),
        ("x and y", 1),
        ("not x", 1),
        ("{'a': x}", 1),
        ("f'{x}'", 1),
        ("sum(*x)", 5),
        ("sum(**x)", 5),
        ("x[0](1)", 1),
        ("1j", 1),
        ("b'x'", 1),
        ("(x := 1)", 2),
        ("", 1),
        ("x +", 1),
        ("x) + (y", 2),
        ("(x", 1),
        ("x\x00", 1),
    ],
)
def test_refused_with_position(text: str, col: int) -> None:
    with pytest.raises(ExprInvalidError) as info:
        parse(text)
    assert info.value.status == 422
    position = info.value.extra["position"]
    assert position["line"] == 1
    if text not in ("x +", "x\x00", "(x"):
        assert position["col"] == col, (text, position)


def test_unknown_op_is_its_own_code() -> None:
    with pytest.raises(UnknownOpError) as info:
        parse("y + foo(x)")
    assert info.value.extra["position"] == {"line": 1, "col": 5}


def test_over_the_length_limit() -> None:
    with pytest.raises(ExprInvalidError, match="limit is 10"):
        parse("x" + " + x" * 10, max_length=10)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 10_000 + "x" + ")" * 10_000,
        "[" * 5_000 + "]" * 5_000,
        "-" * 3_000 + "x",
        "x" + " + x" * 1_000,
        "x" + "[0]" * 500,
        "f(" * 3_000 + ")" * 3_000,
    ],
)
def test_deep_nesting_is_refused_not_a_crash(text: str) -> None:
    with pytest.raises(ExprInvalidError):
        parse(text, max_length=100_000)


def test_multiline_position() -> None:
    with pytest.raises(ExprInvalidError) as info:
        parse("x +\n  y.date")
    assert info.value.extra["position"] == {"line": 2, "col": 5}


def test_evaluate_calls_the_environment() -> None:
    calls: list[tuple[str, list[object], dict[str, object]]] = []

    class Env:
        def tensor(self, name: str, pos: expr.Pos) -> str:
            return name

        def grad(self, name: str, pos: expr.Pos) -> str:
            return name + ".grad"

        def call(self, op: str, args: list, kwargs: dict, pos: expr.Pos, method: bool) -> str:
            calls.append((op, args, kwargs))
            return f"{op}()"

    result = expr.evaluate(parse("sum(x[:, 1:3], dim=1) * w.grad"), Env())
    assert result == "mul()"
    assert calls[0] == ("getitem", ["x", (slice(None), slice(1, 3))], {})
    assert calls[1] == ("sum", ["getitem()"], {"dim": 1})
    assert calls[2] == ("mul", ["sum()", "w.grad"], {})
