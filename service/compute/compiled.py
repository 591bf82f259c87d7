"""Stored programs: batch items checked and compiled once, then run by name.

``compile_program`` does at ``PUT`` what every run would otherwise repeat: each
expression parsed (the tree kept), each op resolved and its call form and arity
checked, each fetch key checked; and it derives the program's facts as a function
(``reads``, ``binds``, ``pure``). The compiled ``Program`` is the only cache: runs
hand its items and trees to the executor, nothing is remembered by request body.

``run_iteration`` is one all-or-nothing iteration (``programs.run_program``);
``evaluate`` runs a pure program as a function of substituted inputs, against a copy
of the bindings, so the derivative routes change nothing in the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from engine import OPS, Tensor, no_grad
from engine.errors import EngineError

from ..errors import (
    BadArgumentsError,
    LimitExceededError,
    ProgramNotFoundError,
    ServiceError,
    UnknownOpError,
)
from ..names import check_tensor_name
from ..schemas import BackwardStepIn, ExprStepIn, GradStepIn, OpStepIn, SeedStepIn, ZeroGradStepIn
from ..schemas.programs import ProgramIn
from ..session.quotas import refuse_bytes
from ..session.state import Session, grad_of
from ..settings import Settings
from . import expr, plan, programs, verbs
from .steps import Executor, arity_error, draws, parse_expr

UNLIMITED_EXPR = 1 << 30  # replay: the record passed the length limit when it was stored


@dataclass(slots=True)
class Pace:
    """How long one iteration of a program last took (a measurement, not a result): a
    run whose iterations all fit in one short chunk then stays on the event loop instead
    of paying a worker thread's hop (``changes.RUN``'s weight)."""

    seconds: float | None = None


@dataclass(frozen=True, eq=False)
class Program:
    """A program as compiled: its items, their parsed trees, and its facts."""

    name: str
    items: tuple[Any, ...]  # BatchItem models
    trees: Mapping[int, expr.Node]  # id(expression step) -> its parsed tree
    fetch: tuple[str, ...]
    reads: tuple[str, ...]
    binds: tuple[str, ...]
    pure: bool
    stored: dict[str, Any]  # the body as journaled and shown (JSON-native)
    nbytes: int  # what it counts toward the session's memory
    instrs: tuple[plan.Instr, ...] = ()  # the items as a run calls them
    pace: Pace = field(default_factory=Pace)

    def summary(self) -> dict[str, Any]:
        """A ``ProgramOut``."""
        return {"name": self.name, "steps": len(self.items), "reads": list(self.reads),
                "binds": list(self.binds), "pure": self.pure, "fetch": list(self.fetch)}  # fmt: skip


def compile_program(
    name: str, body: ProgramIn, settings: Settings | None, stored: dict[str, Any]
) -> Program:
    """Check every item now (the failing item's index in ``step``) and derive the facts.

    ``settings`` None: replaying a journal (the length limits passed when it was stored)."""
    max_length = UNLIMITED_EXPR if settings is None else settings.max_expr_length
    trees: dict[int, expr.Node] = {}
    reads: dict[str, None] = {}
    binds: dict[str, None] = {}
    pure = True
    for i, item in enumerate(body.steps):
        try:
            item_reads, item_binds, item_pure = _check(item, trees, max_length)
        except ServiceError as exc:
            exc.extra.setdefault("step", i)
            raise
        except EngineError as exc:
            exc.context.setdefault("step", i)
            raise
        reads.update((n, None) for n in item_reads if n not in binds)
        binds.update((n, None) for n in item_binds)
        pure = pure and item_pure
    for key in body.fetch:
        verbs.check_fetch(key)
    nbytes = len(orjson.dumps(stored)) + 64 * len(body.steps)
    return Program(name, tuple(body.steps), trees, tuple(body.fetch), tuple(reads),
                   tuple(binds), pure, stored, nbytes,
                   plan.plan(body.steps, trees))  # fmt: skip


def compile_stored(name: str, stored: dict[str, Any]) -> Program:
    """A program as journaled or checkpointed, compiled again (its limits passed before)."""
    return compile_program(name, ProgramIn.model_validate(stored), None, stored)


def _check(
    item: Any, trees: dict[int, expr.Node], max_length: int
) -> tuple[list[str], list[str], bool]:
    """One item: checked, its tree kept; returns (names read, names bound, pure)."""
    if isinstance(item, SeedStepIn):
        return [], [], False
    if isinstance(item, BackwardStepIn):
        back = item.backward
        read = verbs.names_of(back.tensors) + list(back.inputs or ())
        read += [g for g in back.grad_tensors or () if isinstance(g, str)]
        return read, [], False
    if isinstance(item, GradStepIn):
        body = item.grad
        read = verbs.names_of(body.outputs) + verbs.names_of(body.inputs)
        read += [g for g in body.grad_outputs or () if isinstance(g, str)]
        return read, list(body.out or ()), False
    if isinstance(item, ZeroGradStepIn):
        return list(item.zero_grad.tensors or ()), [], False
    outs = [item.out] if isinstance(item.out, str) else list(item.out or ())
    names: list[str]
    if isinstance(item, ExprStepIn):
        tree = parse_expr(item.expr, max_length)
        trees[id(item)] = tree
        names = []
        pure = _walk(tree, names)
    else:
        assert isinstance(item, OpStepIn)
        names = sorted(item.reads)
        pure = check_call(item.op, len(item.args), tuple(item.kwargs), method=False)
    if item.assign:
        return [*names, *outs], outs, False
    return names, outs, pure


def _walk(tree: expr.Node, names: list[str]) -> bool:
    """Collect the names an expression reads and check its calls; returns whether pure."""
    pure = True
    stack: list[expr.Node | None] = [tree]
    while stack:
        node = stack.pop()
        if node is None or isinstance(node, expr.Const):
            continue
        if isinstance(node, expr.Name | expr.GradOf | expr.DataOf):
            if node.name not in names:
                names.append(node.name)
        elif isinstance(node, expr.Call):
            if not node.operator and node.op != "getitem":
                try:
                    ok = check_call(node.op, len(node.args), tuple(k for k, _ in node.kwargs),
                                    method=node.method)  # fmt: skip
                except ServiceError as exc:
                    exc.extra.setdefault("position", {"line": node.pos.line, "col": node.pos.col})
                    raise
                pure = pure and ok
            stack.extend(reversed(node.args))
            stack.extend(v for _, v in node.kwargs)
        elif isinstance(node, expr.Seq):
            stack.extend(node.items)
        elif isinstance(node, expr.Slice):
            stack.extend((node.lower, node.upper, node.step))
    return pure


def check_call(op: str, positional: int, keywords: tuple[str, ...], *, method: bool) -> bool:
    """The checks the executor makes before a call, made once: the op is known, has the
    form it is called in, and takes these arguments. Returns whether the call is pure
    (neither in place, nor writing its arguments, nor drawing random numbers)."""
    spec = OPS.get(op)
    if spec is None and method and op.endswith("_") and op[:-1] in OPS:
        base = OPS[op[:-1]]
        if not (base.inplace or callable(getattr(Tensor, op, None))):
            raise BadArgumentsError(f"op {op[:-1]!r} has no in-place form {op}()")
        error = arity_error(op[:-1], positional, keywords)
        if error is not None:
            raise BadArgumentsError(
                f"{op}(): {error}", hint=f"signature: {base.name}{base.signature}"
            )
        return False
    if spec is None:
        raise UnknownOpError(f"unknown op {op!r}", hint="GET /v1/ops lists the catalogue")
    if method and not spec.method:
        raise BadArgumentsError(f"op {op!r} has no method form; call it as {op}(...)")
    if not method and not spec.function:
        raise BadArgumentsError(f"op {op!r} is a method only; call it as x.{op}(...)")
    error = arity_error(op, positional, keywords)
    if error is not None:
        raise BadArgumentsError(f"{op}(): {error}", hint=f"signature: {op}{spec.signature}")
    return not (spec.writes or draws(op))


def store(
    session: Session, name: str, body: ProgramIn, settings: Settings, replay: bool
) -> tuple[Program, bool]:
    """Compile and store ``body`` as ``name`` (replacing one of that name); returns it
    and whether the name is new. The limits are checked first (not on replay), so a
    refusal changes nothing."""
    stored = body.model_dump(mode="json", exclude_unset=True, by_alias=True)
    program = compile_program(name, body, None if replay else settings, stored)
    old = session.programs.get(name)
    if not replay:
        if old is None and len(session.programs) >= settings.max_programs:
            raise LimitExceededError(
                f"session {session.name!r} holds {len(session.programs)} programs; the limit "
                f"is {settings.max_programs}",
                status=429,
                hint="delete a program you no longer need",
            )
        extra = program.nbytes - (0 if old is None else old.nbytes)
        if extra > 0:
            held = session.bytes_bound if session.bytes_bound is not None else session.nbytes()
            refuse_bytes(session, settings, held + extra)
    session.programs[name] = program
    return program, old is None


def lookup(session: Session, name: str) -> Program:
    """The session's program ``name`` (``invalid_name`` / ``program_not_found``)."""
    found = session.programs.get(check_tensor_name(name))
    if found is None:
        have = ", ".join(sorted(session.programs)[:10]) or "none"
        raise ProgramNotFoundError(
            f"session {session.name!r} has no program {name!r}",
            hint=f"programs stored: {have}; PUT .../programs/{name} stores one",
        )
    return found


def run_iteration(
    session: Session, program: Program, settings: Settings, *, replay: bool = False
) -> None:
    """One iteration, all or nothing (a failing item's index in ``step``)."""
    programs.run_program(
        session,
        program.items,
        settings,
        (),
        replay=replay,
        trees=program.trees,
        instrs=program.instrs,
    )


def fetch_values(
    session: Session, keys: Iterable[str], *, copy: bool = False
) -> dict[str, Tensor | None]:
    """The values ``keys`` name now (``copy``: kept apart from later in-place writes)."""
    out: dict[str, Tensor | None] = {}
    for key in keys:
        name, want_grad = verbs.check_fetch(key)
        t = session.lookup(name)
        v = grad_of(t) if want_grad else t
        out[key] = None if v is None else (Tensor(v._data.copy()) if copy else v)
    return out


def evaluate(
    session: Session,
    program: Program,
    settings: Settings,
    inputs: Mapping[str, Tensor],
    outputs: Sequence[str],
    produced: list[int] | None = None,
) -> tuple[Tensor, ...]:
    """A pure program as a function: its items run against the session's bindings with
    ``inputs`` put in place of the tensors of those names; returns ``outputs``. Nothing
    is written to the session. ``produced``: gets the elements its ops made."""
    bindings = dict(session.tensors)
    bindings.update(inputs)
    ex = Executor(session, settings, bindings, trees=program.trees)
    for i, item in enumerate(program.items):
        try:
            if item.no_grad:
                with no_grad():
                    ex.bind(item, ex.compute(item))
            else:
                ex.bind(item, ex.compute(item))
        except ServiceError as exc:
            exc.extra.setdefault("step", i)
            raise
        except EngineError as exc:
            exc.context.setdefault("step", i)
            raise
    if produced is not None:
        produced.append(ex.produced)
    return tuple(session.lookup(name, bindings) for name in outputs)
