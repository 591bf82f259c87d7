"""A program's items resolved once into what each iteration calls.

At ``PUT`` every item becomes an ``Instr``: its kind (so a run does not ask each item
what it is), and for the commonest forms what the executor would otherwise derive on
every call: a plain op step's function and whether it needs a size estimate; an
expression's tree compiled into nested closures whose calls are resolved (the op's
registration found, its call form and arity checked once by ``compiled.check_call``),
so an iteration runs the ops with only what depends on the values left to do: the
deadline, the size checks and the accounting (``Executor.call_known``). Anything less
common (indexing, random ops, ops that write their arguments, in-place methods) keeps
the general path, which reports errors in its own words. A ``/batch`` gets the kinds
only (``plan(items)``): its expressions are parsed per request."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine import OPS

from ..schemas import BackwardStepIn, GradStepIn, SeedStepIn, ZeroGradStepIn
from . import expr
from .steps import Executor, _Env, _plain_op, arity_error, draws

SEED, VERB, PLAIN, STEP = range(4)

# an expression compiled: called with the executor and the environment expressions see
Compiled = Callable[[Executor, _Env], Any]


@dataclass(frozen=True, slots=True)
class Instr:
    """One item as a run calls it: ``kind``, and for ``PLAIN`` the op's function and
    whether it needs an estimate, for ``STEP`` the compiled expression (or None)."""

    kind: int
    item: Any
    fn: Any = None
    may_grow: bool = False


def plan(items: Sequence[Any], trees: Mapping[int, expr.Node] | None = None) -> tuple[Instr, ...]:
    """The items as instructions; with ``trees`` (a stored program's), expressions compiled."""
    out: list[Instr] = []
    for item in items:
        if isinstance(item, SeedStepIn):
            out.append(Instr(SEED, item))
        elif isinstance(item, BackwardStepIn | GradStepIn | ZeroGradStepIn):
            out.append(Instr(VERB, item))
        elif item.plain is not None and trees is not None:
            checked = _plain_op(item.op, len(item.plain.args), len(item.plain.names))
            if checked is None:
                out.append(Instr(STEP, item))
            else:
                out.append(Instr(PLAIN, item, checked[0], checked[1]))
        elif item.plain is not None:
            out.append(Instr(PLAIN, item))  # resolved per call (run_plain)
        elif item.expr is not None and trees is not None:
            out.append(Instr(STEP, item, compile_tree(trees[id(item)])))
        else:
            out.append(Instr(STEP, item))
    return tuple(out)


def compile_tree(node: expr.Node) -> Compiled:
    """``expr.evaluate(node, env)`` as closures, the same calls in the same order."""
    if isinstance(node, expr.Const):
        value = node.value
        return lambda ex, env: value
    if isinstance(node, expr.Name):
        name, pos = node.name, node.pos

        def tensor(ex: Executor, env: _Env) -> Any:
            t = ex.bindings.get(name)
            return env.tensor(name, pos) if t is None else t

        return tensor
    if isinstance(node, expr.GradOf):
        name, pos = node.name, node.pos
        return lambda ex, env: env.grad(name, pos)
    if isinstance(node, expr.Call):
        call = _compile_call(node)
        if call is not None:
            return call
    return lambda ex, env: expr.evaluate(node, env)


def _known(op: str, positional: int, keywords: tuple[str, ...], method: bool) -> Any:
    """The op's registration when a call of this form needs no more than
    ``Executor.call_known`` (the checks ``Executor.call`` makes pass now), else None."""
    spec = OPS.get(op)
    if spec is None or op == "getitem" or spec.writes or draws(op):
        return None
    if (method and not spec.method) or (not method and not spec.function):
        return None
    return None if arity_error(op, positional, keywords) is not None else spec


def _compile_call(node: expr.Call) -> Compiled | None:
    keywords = tuple(k for k, _ in node.kwargs)
    spec = _known(node.op, len(node.args), keywords, node.method)
    if spec is None or (node.text and node.op in expr._LOGICAL):
        return None
    op = node.op
    fns = tuple(compile_tree(a) for a in node.args)
    kwfns = tuple((k, compile_tree(v)) for k, v in node.kwargs)
    if node.operator and len(fns) == 2:
        return _binary(node, spec, fns[0], fns[1])

    def call(ex: Executor, env: _Env) -> Any:
        args = [f(ex, env) for f in fns]
        kwargs = {k: f(ex, env) for k, f in kwfns} if kwfns else {}
        return ex.call_known(op, spec, args, kwargs)

    return call


def _binary(node: expr.Call, spec: Any, left: Compiled, right: Compiled) -> Compiled:
    """``a <op> b``: a number on the left reflects, as ``expr.evaluate`` does."""
    op = node.op
    mirrored = op if op in expr._SYMMETRIC else expr._MIRRORED.get(op)
    if mirrored is None and op == "sub":
        mirrored = "rsub"
    flipped = None if mirrored is None else _known(mirrored, 2, (), False)
    flip = mirrored if flipped is not None else None

    def binary(ex: Executor, env: _Env) -> Any:
        a, b = left(ex, env), right(ex, env)
        if expr._is_number(a) and not expr._is_number(b):
            if flip is None:
                return expr._reflected(node, a, b, env)
            return ex.call_known(flip, flipped, [b, a], {})
        return ex.call_known(op, spec, [a, b], {})

    return binary
