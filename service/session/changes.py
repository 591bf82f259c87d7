"""The table of changes a session can undergo: one ``Verb`` per kind of change, saying
how it applies, how heavy it is, how it is journaled and how a record is read back.

``mutate`` applies a verb for a request; the journal's replay applies the same verb to
the record it wrote, so a session rebuilt from its journal went through the very code
that answered the requests."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import orjson
from pydantic import TypeAdapter

from engine import Tensor
from engine.errors import EngineError

from .. import codec
from ..compute import compiled, programs, transfers, verbs
from ..errors import ServiceError
from ..schemas import BackwardIn, BatchItem, GradIn, LeafIn, PatchTensorIn, ZeroGradIn
from ..schemas.programs import ProgramIn
from ..settings import Settings
from . import offload
from .offload import graph_weight, steps_weight
from .records import dump, dump_step, pack
from .state import Session

P = TypeVar("P")
R = TypeVar("R")

Head = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Verb(Generic[P, R]):
    """One kind of change. ``apply(session, settings, payload, replay)`` runs under the
    session's lock, maybe in a worker thread, and changes nothing when it fails;
    ``replay`` is true for a journal record (acknowledged once: its limits are not
    checked again). ``record`` writes what ``read`` gives back."""

    kind: str
    apply: Callable[[Session, Settings, P, bool], R]
    record: Callable[[P, R], Head | tuple[Head, bytes]]
    read: Callable[[Head, memoryview], P]
    weight: Callable[[Session, P], int] = field(default=lambda s, p: 0)
    # whether an applied change is journaled (a run that stopped before its first
    # iteration changed nothing)
    changed: Callable[[R], bool] = field(default=lambda r: True)


# --- leaves ----------------------------------------------------------------------------------


@dataclass(slots=True)
class PutLeaf:
    """A leaf to bind: a JSON value, a binary upload (body and query), or, from the
    journal, the array itself; ``size`` (bytes of the body) weighs the decoding."""

    name: str
    leaf: LeafIn | None = None
    raw: bytes | None = None
    query: Mapping[str, str] | None = None
    arr: np.ndarray | None = None
    requires_grad: bool = False
    size: int = 0


def _put(s: Session, settings: Settings, p: PutLeaf, replay: bool) -> tuple[Tensor, bool]:
    if p.leaf is not None:
        return verbs.put_tensor(s, p.name, p.leaf, settings)
    if p.raw is not None:
        arr, requires_grad = transfers.binary_leaf(p.query or {}, p.raw, settings)
    else:
        assert p.arr is not None
        arr, requires_grad = p.arr, p.requires_grad
    return verbs.bind_leaf(s, p.name, arr, requires_grad, settings)


def _put_record(p: PutLeaf, result: tuple[Tensor, bool]) -> tuple[Head, bytes]:
    t = result[0]
    arr = np.asarray(t._data, order="C")  # (ascontiguousarray makes 0-d 1-d)
    head = {"name": p.name, "dtype": codec.dtype_name(arr.dtype), "shape": list(arr.shape),
            "requires_grad": t.requires_grad}  # fmt: skip
    return head, arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def _put_read(head: Head, raw: memoryview) -> PutLeaf:
    dtype = codec.dtype_of(head["dtype"])
    arr = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)
    arr = arr.reshape([int(d) for d in head["shape"]])
    return PutLeaf(head["name"], arr=arr, requires_grad=head["requires_grad"] is True)


PUT: Verb[PutLeaf, tuple[Tensor, bool]] = Verb(
    "put", _put, _put_record, _put_read, lambda s, p: p.size // 4
)


# --- programs: steps and autograd items --------------------------------------------------------


@dataclass(slots=True)
class Program:
    items: Sequence[Any]  # StepIn and the verb items of schemas.BatchItem
    fetch: Sequence[str] = ()


_ITEMS = TypeAdapter(list[BatchItem])
_SEEN: dict[bytes, list[Any]] = {}  # a training loop's records repeat the same steps


def _program_read(head: Head, raw: memoryview) -> Program:
    key = orjson.dumps(head["steps"])
    items = _SEEN.get(key)
    if items is None:
        if len(_SEEN) >= 1024:
            _SEEN.clear()
        items = _SEEN[key] = _ITEMS.validate_python(head["steps"])
    return Program(items)


STEPS: Verb[Program, programs.ProgramResult] = Verb(
    "steps",
    # random ops draw from the session's generator, which the replay repeats draw for draw
    lambda s, st, p, replay: programs.run_program(s, p.items, st, p.fetch, replay=replay),
    lambda p, _: {"steps": [dump_step(i) for i in p.items]},
    _program_read,
    lambda s, p: steps_weight(s, p.items),
)

# --- autograd --------------------------------------------------------------------------------

BACKWARD: Verb[BackwardIn, dict[str, Tensor]] = Verb(
    "backward",
    lambda s, st, body, _: verbs.run_backward(s, body, st),
    lambda body, _: {"body": dump(body)},
    lambda head, _: BackwardIn.model_validate(head["body"]),
    lambda s, body: graph_weight(s, verbs.names_of(body.tensors)),
)
GRAD: Verb[GradIn, list[Tensor | None]] = Verb(
    "grad",
    lambda s, st, body, _: verbs.run_grad(s, body, st),
    lambda body, _: {"body": dump(body)},
    lambda head, _: GradIn.model_validate(head["body"]),
    lambda s, body: graph_weight(s, verbs.names_of(body.outputs)),
)
ZERO_GRAD: Verb[ZeroGradIn, list[str]] = Verb(
    "zero_grad",
    lambda s, st, body, _: verbs.zero_grad(s, body),
    lambda body, _: {"body": dump(body)},
    lambda head, _: ZeroGradIn.model_validate(head["body"]),
)

# --- flags, deletions, imports ---------------------------------------------------------------


@dataclass(slots=True)
class Patch:
    name: str
    body: PatchTensorIn


PATCH: Verb[Patch, Tensor] = Verb(
    "patch",
    lambda s, st, p, _: verbs.patch_tensor(s, p.name, p.body),
    lambda p, _: {"name": p.name, "body": dump(p.body)},
    lambda head, _: Patch(head["name"], PatchTensorIn.model_validate(head["body"])),
)


def _del_tensor(s: Session, settings: Settings, name: str, replay: bool) -> None:
    s.lookup(name)
    del s.tensors[name]


def _del_grad(s: Session, settings: Settings, name: str, replay: bool) -> None:
    t = s.lookup(name)
    if t.is_leaf or t.retains_grad:
        t.grad = None


DEL_TENSOR: Verb[str, None] = Verb(
    "del_tensor", _del_tensor, lambda name, _: {"name": name}, lambda head, _: head["name"]
)
DEL_GRAD: Verb[str, None] = Verb(
    "del_grad", _del_grad, lambda name, _: {"name": name}, lambda head, _: head["name"]
)
# the safetensors file as it came, replayed through the import
IMPORT: Verb[bytes, list[str]] = Verb(
    "import",
    lambda s, st, raw, _: transfers.import_session(s, raw, st),
    lambda raw, _: ({}, raw),
    lambda _, raw: bytes(raw),
    lambda s, raw: len(raw) // 4,
)

# --- stored programs ---------------------------------------------------------------------------


@dataclass(slots=True)
class StoreProgram:
    name: str
    body: ProgramIn


@dataclass(slots=True)
class Iterations:
    """Up to ``n`` iterations of the stored program ``name`` (a run journals one record
    per chunk of iterations that completed: a whole number of them)."""

    name: str
    n: int
    heavy: bool = False  # an earlier chunk outgrew the event loop: straight to a thread


@dataclass(slots=True)
class Ran:
    """What a chunk of a run did: ``done`` iterations kept, and the failure that stopped
    it (raised by the caller once the kept ones are journaled)."""

    done: int
    failure: ServiceError | EngineError | None = None
    on_loop: bool = True  # False: it ran in a worker thread


# a chunk of a run on the event loop stops before an iteration that would end past
# this (below offload.INLINE_SECONDS, so light iterations run together are not rolled
# back and moved to a thread), so that progress is reported and other sessions get the
# loop; in a worker thread, a chunk is one hop for this long
CHUNK_SECONDS = 0.04
THREAD_SECONDS = 0.25
HEAVY = 1 << 62  # a weight past any offload threshold


def _run(s: Session, settings: Settings, p: Iterations, replay: bool) -> Ran:
    """Iterations, each all or nothing, until ``n`` or ``CHUNK_SECONDS`` (a replay runs
    all ``n``); a failing iteration ends the chunk with the ones before it kept."""
    program = compiled.lookup(s, p.name)
    if replay:
        for _ in range(p.n):
            compiled.run_iteration(s, program, settings, replay=True)
        return Ran(p.n)
    clock = time.perf_counter
    start = clock()
    on_loop = offload.inline()
    until = start + (CHUNK_SECONDS if on_loop else THREAD_SECONDS)
    for k in range(p.n):
        try:
            compiled.run_iteration(s, program, settings)
        except (ServiceError, EngineError) as exc:
            return Ran(k, exc, on_loop)
        except offload.Heavy:
            if k == 0:
                raise  # rolled back: offload runs the chunk again in a worker thread
            return Ran(k, None, False)  # rolled back: the next chunks run off the loop
        now = clock()
        program.pace.seconds = each = (now - start) / (k + 1)
        if now + each > until:  # the next one would end past it
            return Ran(k + 1, None, on_loop)
    return Ran(p.n, None, on_loop)


def _run_weight(s: Session, p: Iterations) -> int:
    """One iteration's weight, as ``steps_weight`` estimates it; but none when the
    program's last iterations were measured and the ``n`` to run fit well in one chunk
    on the event loop: a thread's hop would cost more than they (and should they take
    longer now, ``offload.Heavy`` moves them to a thread all the same)."""
    if p.heavy:
        return HEAVY
    program = compiled.lookup(s, p.name)
    each = program.pace.seconds
    if each is not None and each * p.n <= CHUNK_SECONDS / 2:
        return 0
    return steps_weight(s, program.items)


PROGRAM: Verb[StoreProgram, tuple[compiled.Program, bool]] = Verb(
    "program",
    lambda s, st, p, replay: compiled.store(s, p.name, p.body, st, replay),
    lambda p, result: {"name": p.name, "body": result[0].stored},
    lambda head, _: StoreProgram(head["name"], ProgramIn.model_validate(head["body"])),
)
PROGRAM_DEL: Verb[str, None] = Verb(
    "program_del",
    lambda s, st, name, _: s.programs.pop(compiled.lookup(s, name).name) and None,
    lambda name, _: {"name": name},
    lambda head, _: head["name"],
)
RUN: Verb[Iterations, Ran] = Verb(
    "run",
    _run,
    lambda p, ran: {"name": p.name, "n": ran.done},
    lambda head, _: Iterations(head["name"], int(head["n"])),
    _run_weight,
    lambda ran: ran.done > 0,
)

#: kind -> verb: what a journal record of that kind is applied with.
VERBS: dict[str, Verb[Any, Any]] = {
    v.kind: v
    for v in (
        PUT,
        STEPS,
        BACKWARD,
        GRAD,
        ZERO_GRAD,
        PATCH,
        DEL_TENSOR,
        DEL_GRAD,
        IMPORT,
        PROGRAM,
        PROGRAM_DEL,
        RUN,
    )  # fmt: skip
}


def encode(verb: Verb[P, R], payload: P, result: R, seq: int) -> bytes:
    """The journal record ``seq`` of an applied change (``seq`` is checked on replay)."""
    written = verb.record(payload, result)
    head, raw = written if isinstance(written, tuple) else (written, b"")
    return pack({"k": verb.kind, "q": seq, **head}, raw)
