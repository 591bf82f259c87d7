"""Expressions over session tensors, parsed with a whitelist (``ast``, never ``eval``).

Allowed: numbers, tensor names, ``name.grad``, ``name.data``, ``+ - * / // % ** @``,
unary minus, comparisons ``== != < <= > >=`` (one at a time: PyTorch refuses the truth
value a chained comparison needs), ``& | ^ ~`` (bitwise on integers, logical on bool),
calls of catalogue ops with keyword arguments (``sum(x, dim=1)``), the same as
methods where the op has a method form (``x.sum(dim=1)``, ``x.float()``, ``x.add_(1)``),
and indexing (``x[0]``, ``x[:, 1:3]``, ``x[None]``, ``x[..., 0]``, ``x[[0, 2]]``,
``x[idx]``, ``x[x > 0]``). Anything else is refused with the
position of the offending token. Length and nesting are checked before and
after ``ast.parse`` so hostile input (10,000 parentheses, 3,000 minus signs)
is a 422, never a crash; parsing and evaluation recurse at most ``MAX_DEPTH``.

Parsing yields a small tree (``Const``, ``Name``, ``GradOf``, ``DataOf``, ``Call``,
``Seq``, ``Slice``) that ``evaluate`` walks with an environment supplying tensors and
op calls, so this module knows nothing of sessions or the engine.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..errors import BadArgumentsError, ExprInvalidError, UnknownOpError, closest

MAX_DEPTH = 200  # AST levels; also bounds bracket nesting checked before parsing
MAX_BRACKETS = 64

# Python's operators and the engine ops they call, as torch.Tensor's dunders do: the
# first op of each entry the catalogue has is used (``&`` is bitwise_and where the engine
# has it; logical_and, the same on bool, where it has only that).
OPERATORS: dict[type[ast.AST], tuple[tuple[str, ...], str]] = {
    ast.Add: (("add",), "+"),
    ast.Sub: (("sub",), "-"),
    ast.Mult: (("mul",), "*"),
    ast.Div: (("div",), "/"),
    ast.FloorDiv: (("floor_divide",), "//"),
    ast.Mod: (("remainder",), "%"),
    ast.Pow: (("pow",), "**"),
    ast.MatMult: (("matmul",), "@"),
    ast.BitAnd: (("bitwise_and", "logical_and"), "&"),
    ast.BitOr: (("bitwise_or", "logical_or"), "|"),
    ast.BitXor: (("bitwise_xor", "logical_xor"), "^"),
    ast.Invert: (("bitwise_not", "logical_not"), "~"),
    ast.Eq: (("eq",), "=="),
    ast.NotEq: (("ne",), "!="),
    ast.Lt: (("lt",), "<"),
    ast.LtE: (("le",), "<="),
    ast.Gt: (("gt",), ">"),
    ast.GtE: (("ge",), ">="),
}
_LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})
# ``2 < x`` runs ``x.__gt__(2)``: the tensor first, the comparison mirrored
_MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_SYMMETRIC = frozenset({"add", "mul", "bitwise_and", "bitwise_or", "bitwise_xor", *_LOGICAL})
# Tensor cast methods (``x.float()``) and their dtypes: ``to(dtype)`` where the catalogue
# has no op of that name
CASTS = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
    "bool": "bool",
}
_OPERATOR_TEXT: dict[type[ast.AST], str] = {ast.LShift: "<<", ast.RShift: ">>"}
_TEXT_KIND = {text: kind for kind, (_, text) in OPERATORS.items()}
_REFUSED = {
    ast.Lambda: "lambda expressions",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.BoolOp: "'and'/'or'",
    ast.IfExp: "conditional expressions (use the op where)",
    ast.NamedExpr: "assignment expressions",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.JoinedStr: "f-strings",
    ast.Dict: "dict displays",
    ast.Set: "set displays",
    ast.Starred: "starred arguments",
}


# --- the tree -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pos:
    line: int
    col: int


@dataclass(frozen=True, slots=True)
class Const:
    value: Any


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class GradOf:
    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class DataOf:
    name: str
    pos: Pos


@dataclass(frozen=True, slots=True)
class Call:
    op: str
    args: tuple[Node, ...]
    kwargs: tuple[tuple[str, Node], ...]
    pos: Pos
    method: bool = False  # written x.op(...): the op must have a method form
    operator: bool = False  # written a + b: a number on the left reflects, as in Python
    text: str = ""  # the operator's text, for messages


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Node, ...]
    is_tuple: bool


@dataclass(frozen=True, slots=True)
class Slice:
    lower: Node | None
    upper: Node | None
    step: Node | None


Node = Const | Name | GradOf | DataOf | Call | Seq | Slice


# --- parsing --------------------------------------------------------------------------------


def parse(text: str, *, max_length: int, ops: Container[str] | None = None) -> Node:
    """The expression's tree; ``ops`` (the catalogue) makes unknown calls ``unknown_op``."""
    if not isinstance(text, str) or not text.strip():
        raise ExprInvalidError("the expression is empty")
    if len(text) > max_length:
        raise ExprInvalidError(
            f"the expression has {len(text)} characters; the limit is {max_length}",
            col=max_length + 1,
        )
    _check_brackets(text)
    try:
        # inside parentheses, newlines and leading spaces are fine, as in Python;
        # the brackets were checked to balance, so the expression cannot escape them
        tree = ast.parse("(" + text + ")", mode="eval")
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = (exc.offset or 1) - (1 if line == 1 else 0)
        raise ExprInvalidError(
            f"syntax error: {exc.msg}", line=line, col=min(max(col, 1), len(text) + 1)
        ) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprInvalidError(f"the expression is nested too deeply (limit {MAX_DEPTH})") from None
    lines = text.splitlines() or [""]
    _check_depth(tree.body, lines)
    return _Converter(lines, ops).convert(tree.body)


def _check_brackets(text: str) -> None:
    """Brackets balance and nest at most ``MAX_BRACKETS`` deep (quotes skipped)."""
    depth, line, col = 0, 1, 0
    quote = ""
    escaped = False
    for ch in text:
        col += 1
        if ch == "\n":
            line, col = line + 1, 0
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
            if depth > MAX_BRACKETS:
                raise ExprInvalidError(
                    f"brackets nested more than {MAX_BRACKETS} deep", line=line, col=col
                )
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise ExprInvalidError(f"unbalanced '{ch}'", line=line, col=col)
    if depth:
        raise ExprInvalidError("unbalanced brackets: a bracket is never closed", line=line, col=col)


def _check_depth(root: ast.AST, lines: list[str]) -> None:
    """Iteratively, so the check itself cannot overflow the stack."""
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            line, col = _pos(node, lines)
            raise ExprInvalidError(
                f"the expression is nested more than {MAX_DEPTH} levels; split it into steps",
                line=line,
                col=col,
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _pos(node: ast.AST, lines: list[str]) -> tuple[int, int]:
    """1-based line and character column of a node's first token."""
    line = getattr(node, "lineno", 1) or 1
    return _char_pos(lines, line, _unwrapped(line, getattr(node, "col_offset", 0) or 0))


def _unwrapped(line: int, offset: int) -> int:
    """An ``ast`` offset in the text as sent (``parse`` added one '(' before line 1)."""
    return max(offset - 1, 0) if line == 1 else offset


def _char_pos(lines: list[str], line: int, offset: int) -> tuple[int, int]:
    """``ast`` counts columns in UTF-8 bytes; users count characters, from 1."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return line, len(text.encode("utf-8")[:offset].decode("utf-8", "ignore")) + 1


def _attr_pos(node: ast.Attribute, lines: list[str]) -> tuple[int, int]:
    """Where the attribute's name starts (``x.__class__`` points at ``__class__``)."""
    line = node.end_lineno or node.lineno
    end = _unwrapped(line, node.end_col_offset or 0)
    return _char_pos(lines, line, end - len(node.attr.encode("utf-8")))


def _operator_pos(
    left: ast.AST, text: str, lines: list[str], *, skip_space: bool = False
) -> tuple[int, int]:
    """The operator token after ``left``: the first occurrence of its text, or with
    ``skip_space`` the first character that is not a space or a closing bracket."""
    line = getattr(left, "end_lineno", None) or getattr(left, "lineno", 1) or 1
    start = _unwrapped(line, getattr(left, "end_col_offset", 0) or 0)
    raw = lines[line - 1].encode("utf-8") if 0 < line <= len(lines) else b""
    if skip_space:
        found = start
        while found < len(raw) and raw[found : found + 1] in (b" ", b")", b"\t"):
            found += 1
    else:
        found = raw.find(text.encode(), start) if text else -1
    return _char_pos(lines, line, found if found >= 0 else start)


class _Converter:
    def __init__(self, lines: list[str], ops: Container[str] | None) -> None:
        self.lines = lines
        self.ops = ops

    def fail(self, node: ast.AST, message: str) -> ExprInvalidError:
        line, col = _pos(node, self.lines)
        return ExprInvalidError(message, line=line, col=col)

    def at(self, node: ast.AST) -> Pos:
        return Pos(*_pos(node, self.lines))

    def convert(self, node: ast.AST) -> Node:
        method: Callable[[Any], Node] | None = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        what = _REFUSED.get(type(node), f"'{type(node).__name__}' syntax")
        raise self.fail(node, f"{what} are not allowed in expressions")

    def visit_Constant(self, node: ast.Constant) -> Node:
        value = node.value
        if value is None or value is Ellipsis or isinstance(value, bool | int | float | str):
            return Const(value)
        raise self.fail(node, f"constant {value!r:.40} is not allowed (numbers only)")

    def visit_Name(self, node: ast.Name) -> Node:
        self.check_identifier(node, node.id)
        return Name(node.id, self.at(node))

    def visit_Attribute(self, node: ast.Attribute) -> Node:
        if node.attr in ("grad", "data") and isinstance(node.value, ast.Name):
            self.check_identifier(node.value, node.value.id)
            kind = GradOf if node.attr == "grad" else DataOf
            return kind(node.value.id, self.at(node))
        line, col = _attr_pos(node, self.lines)
        raise ExprInvalidError(
            f"attribute '.{node.attr[:40]}' is not allowed: only 'name.grad', 'name.data' and "
            "method calls of catalogue ops (x.sum(dim=1))",
            line=line,
            col=col,
        )

    def operator(self, kind: type[ast.AST], node: ast.AST, text_at: Pos | None = None) -> str:
        """The engine op a Python operator calls: the first of its entry the catalogue has."""
        entry = OPERATORS.get(kind)
        if entry is None:
            text = _OPERATOR_TEXT.get(kind, kind.__name__)
            pos = text_at or self.at(node)
            raise ExprInvalidError(
                f"operator '{text}' is not allowed (use + - * / // % ** @, comparisons, & | ^ ~)",
                line=pos.line,
                col=pos.col,
            )
        names, text = entry
        for name in names:
            if self.ops is None or name in self.ops:
                return name
        if len(names) == 1:  # the executor reports the missing op, with the position
            return names[0]
        pos = text_at or self.at(node)
        raise UnknownOpError(
            f"operator '{text}' needs the op {names[0]!r}, which the engine does not have "
            f"(line {pos.line}, column {pos.col})",
            position={"line": pos.line, "col": pos.col},
        )

    def visit_BinOp(self, node: ast.BinOp) -> Node:
        kind = type(node.op)
        text = OPERATORS[kind][1] if kind in OPERATORS else _OPERATOR_TEXT.get(kind, "")
        at = Pos(*_operator_pos(node.left, text or "?", self.lines))
        left, right = self.convert(node.left), self.convert(node.right)
        if isinstance(left, Const) and isinstance(right, Const) and kind in OPERATORS:
            folded = _fold(OPERATORS[kind][0][0], left.value, right.value)
            if folded is not None:  # two literals: Python's answer, no op needed
                return Const(folded)
        op = self.operator(kind, node, at)
        return Call(op, (left, right), (), self.at(node), operator=True, text=text)

    def visit_Compare(self, node: ast.Compare) -> Node:
        if len(node.ops) > 1:
            second = node.comparators[0]
            line, col = _operator_pos(second, "", self.lines, skip_space=True)
            raise ExprInvalidError(
                "chained comparisons are not allowed: PyTorch cannot take the truth value of "
                "a tensor comparison; write (a < b) & (b < c)",
                line=line,
                col=col,
            )
        kind = type(node.ops[0])
        text = OPERATORS[kind][1] if kind in OPERATORS else ""
        if not text:
            names = {ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
            line, col = _operator_pos(node.left, "", self.lines, skip_space=True)
            raise ExprInvalidError(
                f"operator '{names.get(kind, kind.__name__)}' is not allowed "
                "(comparisons are == != < <= > >=)",
                line=line,
                col=col,
            )
        at = Pos(*_operator_pos(node.left, text, self.lines))
        left, right = self.convert(node.left), self.convert(node.comparators[0])
        if isinstance(left, Const) and isinstance(right, Const):
            folded = _fold(OPERATORS[kind][0][0], left.value, right.value)
            if folded is not None:
                return Const(folded)
        op = self.operator(kind, node, at)
        return Call(op, (left, right), (), self.at(node), operator=True, text=text)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Node:
        if isinstance(node.op, ast.UAdd):
            return self.convert(node.operand)
        if isinstance(node.op, ast.Invert):
            op = self.operator(ast.Invert, node)
            return Call(op, (self.convert(node.operand),), (), self.at(node), text="~")
        if not isinstance(node.op, ast.USub):
            raise self.fail(node, "operator 'not' is not allowed (use ~ on bool tensors)")
        operand = self.convert(node.operand)
        if isinstance(operand, Const) and _is_number(operand.value):
            return Const(-operand.value)
        return Call("neg", (operand,), (), self.at(node))

    def visit_Call(self, node: ast.Call) -> Node:
        receiver: list[Node] = []
        if isinstance(node.func, ast.Name):
            op = node.func.id
            line, col = _pos(node.func, self.lines)
        elif isinstance(node.func, ast.Attribute):
            op = node.func.attr
            line, col = _attr_pos(node.func, self.lines)
            receiver.append(self.convert(node.func.value))
        else:
            raise self.fail(node, "only catalogue ops can be called: name(...) or x.name(...)")
        if op.startswith("__") and op.endswith("__"):
            raise ExprInvalidError(f"dunder name {op[:40]!r} is not allowed", line=line, col=col)
        if receiver and op in CASTS and (self.ops is None or op not in self.ops):
            if node.args or node.keywords:
                raise ExprInvalidError(f"x.{op}() takes no arguments", line=line, col=col)
            return Call("to", (receiver[0], Const(CASTS[op])), (), Pos(line, col), method=True)
        known = self.ops is None or op in self.ops
        if not known and receiver and op.endswith("_") and op[:-1] in self.ops:  # type: ignore[operator]
            known = True  # an in-place method (x.add_(1)); the executor checks the op has one
        if not known:
            raise UnknownOpError(
                f"unknown op {op!r} (line {line}, column {col})",
                hint_fields={"closest": closest(op, self.ops or ())},
                position={"line": line, "col": col},
            )
        args = tuple(receiver) + tuple(self.convert(arg) for arg in node.args)
        kwargs = []
        for kw in node.keywords:
            if kw.arg is None:
                raise self.fail(kw, "'**' arguments are not allowed")
            self.check_identifier(kw, kw.arg)
            kwargs.append((kw.arg, self.convert(kw.value)))
        return Call(op, args, tuple(kwargs), Pos(line, col), method=bool(receiver))

    def visit_Subscript(self, node: ast.Subscript) -> Node:
        index = self.convert(node.slice)
        return Call("getitem", (self.convert(node.value), index), (), self.at(node))

    def visit_Slice(self, node: ast.Slice) -> Node:
        def part(n: ast.expr | None) -> Node | None:
            return None if n is None else self.convert(n)

        return Slice(part(node.lower), part(node.upper), part(node.step))

    def visit_Tuple(self, node: ast.Tuple) -> Node:
        return Seq(tuple(self.convert(e) for e in node.elts), True)

    def visit_List(self, node: ast.List) -> Node:
        return Seq(tuple(self.convert(e) for e in node.elts), False)

    def check_identifier(self, node: ast.AST, name: str) -> None:
        if name.startswith("__") and name.endswith("__"):
            raise self.fail(node, f"dunder name {name[:40]!r} is not allowed")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fold(op: str, a: Any, b: Any) -> int | float | None:
    """Arithmetic on two number literals, as Python would do it before calling torch.

    Integers stay integers while small (``2 ** 10`` is 1024); anything that
    could explode (``9 ** 9 ** 9``) is done in float64, which saturates to inf.
    """
    exact = _EXACT.get(op)
    if exact is not None:
        return _fold_exact(op, exact, a, b)
    if not (_is_number(a) and _is_number(b)):
        return None
    if isinstance(a, int) and isinstance(b, int):
        value = None
        if op == "add":
            value = a + b
        elif op == "sub":
            value = a - b
        elif op == "mul":
            value = a * b
        elif op == "pow" and 0 <= b <= 64 and abs(a) <= 2**32:
            value = a**b
        if value is not None and abs(value) < 2**63:
            return value
    with np.errstate(all="ignore"):
        x, y = np.float64(a), np.float64(b)
        if op == "add":
            out = x + y
        elif op == "sub":
            out = x - y
        elif op == "mul":
            out = x * y
        elif op == "div":
            out = np.divide(x, y)
        elif op == "pow":
            out = np.power(x, y)
        else:
            return None
    return float(out)


_EXACT: dict[str, Callable[[Any, Any], Any]] = {
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
}


def _fold_exact(op: str, fn: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """Python's own answer for two literals (``7 // 2``, ``1 < 2``, ``6 & 3``); None where
    Python would raise (a zero divisor, ``&`` on floats), so the engine reports it."""
    numbers = isinstance(a, int | float) and isinstance(b, int | float)
    if not numbers or (op.startswith("bitwise") and not isinstance(a + b, int)):
        return None
    try:
        return fn(a, b)
    except (ZeroDivisionError, OverflowError):
        return None


# --- evaluation -------------------------------------------------------------------------------


class Env(Protocol):
    def tensor(self, name: str, pos: Pos) -> Any: ...
    def grad(self, name: str, pos: Pos) -> Any: ...
    def data(self, name: str, pos: Pos) -> Any: ...
    def call(
        self, op: str, args: list[Any], kwargs: dict[str, Any], pos: Pos, method: bool
    ) -> Any: ...


def _reflected(node: Call, number: Any, tensor: Any, env: Env) -> Any:
    """``number <op> tensor`` as Python runs it on torch tensors (the reflected operator),
    so the recorded grad_fn matches: ``2 - x`` is RsubBackward1, ``2 / x`` is
    ``x.reciprocal() * 2`` (MulBackward0), ``2 + x`` and ``2 * x`` put the tensor first."""
    if node.op in _SYMMETRIC:
        return env.call(node.op, [tensor, number], {}, node.pos, False)
    if node.op in _MIRRORED:
        return env.call(_MIRRORED[node.op], [tensor, number], {}, node.pos, False)
    if node.op == "sub":
        return env.call("rsub", [tensor, number], {}, node.pos, False)
    if node.op == "div":
        inverse = env.call("reciprocal", [tensor], {}, node.pos, False)
        return env.call("mul", [inverse, number], {}, node.pos, False)
    return env.call(node.op, [number, tensor], {}, node.pos, False)


def _check_logical(node: Call, args: list[Any]) -> None:
    """``& | ^ ~`` are bitwise on integers: where the engine has only the logical ops,
    integers are refused rather than answered with a bool."""
    for arg in args:
        dtype = getattr(arg, "dtype", None)
        if (dtype is not None and np.dtype(dtype).kind != "b") or (
            _is_number(arg) and type(arg) is not bool
        ):
            names = OPERATORS[_TEXT_KIND[node.text]][0]
            raise BadArgumentsError(
                f"operator '{node.text}' on numbers needs the op {names[0]!r}, which the engine "
                f"does not have; it works on bool tensors (line {node.pos.line}, column "
                f"{node.pos.col})",
                position={"line": node.pos.line, "col": node.pos.col},
            )


def evaluate(node: Node, env: Env) -> Any:
    """Walk the tree (depth bounded by ``MAX_DEPTH``) calling the environment."""
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Name):
        return env.tensor(node.name, node.pos)
    if isinstance(node, GradOf):
        return env.grad(node.name, node.pos)
    if isinstance(node, DataOf):
        return env.data(node.name, node.pos)
    if isinstance(node, Call):
        args = [evaluate(a, env) for a in node.args]
        kwargs = {k: evaluate(v, env) for k, v in node.kwargs}
        if node.text and node.op in _LOGICAL:
            _check_logical(node, args)
        if node.operator and _is_number(args[0]) and not _is_number(args[1]):
            return _reflected(node, args[0], args[1], env)
        return env.call(node.op, args, kwargs, node.pos, node.method)
    if isinstance(node, Seq):
        items = [evaluate(e, env) for e in node.items]
        return tuple(items) if node.is_tuple else items
    if isinstance(node, Slice):
        return slice(
            *(None if p is None else evaluate(p, env) for p in (node.lower, node.upper, node.step))
        )
    raise TypeError(f"not an expression node: {node!r}")
