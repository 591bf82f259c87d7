"""Batch programs: steps and autograd verbs (backward, grad, zero_grad) in order, all or
nothing, then the fetched values: a training iteration in one round trip.

Items run against a ``Transaction``'s bindings; a verb first records what it may change
(grads, and for backward the graph nodes it may free), so a failing item rolls back
every earlier one, grads and freed graphs included. A failing item's problem carries
its index (``step``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine import Tensor
from engine.errors import EngineError
from engine.function import clock

from ..errors import ServiceError
from ..schemas import BackwardStepIn, GradStepIn, ZeroGradStepIn
from ..session.quotas import bytes_after_steps, refuse_bytes
from ..session.state import Session, Transaction, bindings_bytes, grad_of
from ..settings import Settings
from . import expr, plan, verbs
from .steps import Executor

Item = Any  # a StepIn or one of the verb items (schemas.BatchItem)


@dataclass
class ProgramResult:
    bound: list[str] = field(default_factory=list)  # names bound, first-bound first
    values: dict[str, Tensor | None] | None = None  # the fetched values, with ``fetch``


def run_steps(session: Session, steps: Sequence[Item], settings: Settings) -> list[str]:
    """Steps in order, all or nothing; returns the names bound, first-bound first."""
    return run_program(session, steps, settings).bound


def run_program(
    session: Session,
    items: Sequence[Item],
    settings: Settings,
    fetch: Sequence[str] = (),
    *,
    replay: bool = False,
    trees: Mapping[int, expr.Node] | None = None,
    instrs: Sequence[plan.Instr] | None = None,
) -> ProgramResult:
    """Items in order, all or nothing; the fetched values are read after the last one.

    ``replay``: a journal's record, acknowledged before, so the size limits and byte
    quotas it passed then are not checked again (the session's bytes are recounted).
    ``instrs``: the items as a stored program's ``plan`` resolved them."""
    if instrs is None:
        instrs = plan.plan(items)
    wanted = [verbs.check_fetch(key) for key in fetch]
    txn = Transaction(session)
    since = next(clock)  # graph nodes made from here on are this request's
    ex = Executor(session, settings, txn.bindings, txn, checked=not replay, trees=trees)
    bound: dict[str, None] = {}
    verb_ran = False
    freeing = False  # a backward that frees its graph ran: later backward calls are lighter
    try:
        for i, instr in enumerate(instrs):
            item, kind = instr.item, instr.kind
            try:
                if kind == plan.PLAIN:
                    if instr.fn is None:
                        ran = ex.run_plain(item, item.plain)
                    else:
                        ran = ex.run_resolved(item, item.plain, instr.fn, instr.may_grow)
                    names = ex.run_step(item, txn) if ran is None else ran
                elif kind == plan.STEP:
                    names = ex.run_step(item, txn, instr.fn)
                elif kind == plan.VERB:
                    # before the first verb, the steps' bound holds (grads come after it)
                    held = None if verb_ran else ex.upper_bound()
                    verb_ran = True
                    names, freed = _run_verb(session, settings, txn, item, held)
                    freeing = freeing or freed
                else:
                    ex.seed(item.args[0])
                    names = []
                for name in names:
                    bound[name] = None
            except ServiceError as exc:
                if len(instrs) > 1:
                    exc.extra.setdefault("step", i)
                raise
            except EngineError as exc:
                if len(instrs) > 1:
                    exc.context.setdefault("step", i)
                raise
        values: dict[str, Tensor | None] | None = None
        if fetch:
            values = {}
            for key, (name, want_grad) in zip(fetch, wanted):
                t = session.lookup(name, txn.bindings)
                values[key] = grad_of(t) if want_grad else t
        bytes_bound: int | None
        if replay:
            bytes_bound = None
        elif verb_ran:
            bytes_bound = bindings_bytes(txn.bindings.values())
            refuse_bytes(session, settings, bytes_bound)
        else:
            bytes_bound = bytes_after_steps(session, settings, txn, bound, since)
    except BaseException:
        txn.rollback()
        raise
    txn.commit()
    session.bytes_bound = bytes_bound
    session.work = ex.produced if freeing else session.work + ex.produced
    return ProgramResult(list(bound), values)


def _run_verb(
    session: Session,
    settings: Settings,
    txn: Transaction,
    item: BackwardStepIn | GradStepIn | ZeroGradStepIn,
    held: int | None = None,
) -> tuple[list[str], bool]:
    """One verb against the transaction's bindings: the names it bound, and whether it
    freed a graph (``held``: an upper bound of the bindings' bytes, or None)."""
    if isinstance(item, ZeroGradStepIn):
        txn.before_grads(new=0)
        verbs.zero_grad(session, item.zero_grad, txn.bindings)
        return [], False
    if isinstance(item, GradStepIn):
        txn.before_grads()
        body = item.grad
        outputs = verbs.names_of(body.outputs)
        txn.before_backward(session.lookup(n, txn.bindings) for n in outputs)
        result = verbs.run_grad(session, body, settings, txn.bindings)
        bound = [n for n, g in zip(body.out or (), result) if g is not None]
        return bound, not _retains(body.retain_graph, body.create_graph)
    back = item.backward
    txn.before_grads(new=2 if back.inputs else 1)
    txn.before_backward(session.lookup(n, txn.bindings) for n in verbs.names_of(back.tensors))
    verbs.run_backward(session, back, settings, txn.bindings, held, report=False)
    return [], not _retains(back.retain_graph, back.create_graph)


def _retains(retain_graph: bool | None, create_graph: bool) -> bool:
    return retain_graph if retain_graph is not None else create_graph
