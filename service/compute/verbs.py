"""Session verbs: bind a leaf, backward, grad, zero_grad, flags; and what a fetch names.

``run_backward``, ``run_grad`` and ``zero_grad`` take the bindings they act on: the
session's own, or inside a batch program the transaction's (names bound by earlier
items), so a failing program changes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine
from engine import Tensor, no_grad
from engine.errors import EngineError, GraphFreedError, NoGradFnError, VersionMismatchError

from .. import codec
from ..errors import BadArgumentsError, InvalidNameError
from ..names import check_tensor_name
from ..schemas import BackwardIn, GradIn, LeafIn, PatchTensorIn, TensorIn, ZeroGradIn
from ..session.quotas import bytes_ahead, check_bytes, over_budget, refuse_bytes
from ..session.state import Session, accumulates, bindings_bytes, grad_of
from ..settings import Settings
from .steps import Executor

Bindings = dict[str, Tensor]


def put_tensor(
    session: Session, name: str, leaf: LeafIn, settings: Settings
) -> tuple[Tensor, bool]:
    """Create or rebind a leaf; returns it and whether the name is new."""
    arr = codec.decode(leaf, max_elements=settings.max_tensor_elements)
    return bind_leaf(session, name, arr, leaf.requires_grad, settings)


def bind_leaf(
    session: Session, name: str, arr: np.ndarray, requires_grad: bool, settings: Settings
) -> tuple[Tensor, bool]:
    """Bind ``arr`` as a leaf (memory limits checked); returns it and whether the name is new."""
    t = Tensor(arr, requires_grad=requires_grad)
    others = [v for k, v in session.tensors.items() if k != name]
    total = check_bytes(session, settings, [*others, t])
    created = name not in session.tensors
    session.tensors[name] = t
    session.bytes_bound = total
    return t, created


def names_of(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _grad_values(ex: Executor, entries: list[Any] | None, roots: list[Tensor]) -> list[Any] | None:
    """``grad_tensors``: names, wire values (cast to the output's dtype unless given), null."""
    if entries is None:
        return None
    if len(entries) != len(roots):  # (PyTorch would ignore extra gradients: an API refuses)
        raise BadArgumentsError(f"got {len(roots)} tensors and {len(entries)} gradients")
    out: list[Any] = []
    for i, entry in enumerate(entries):
        if entry is None:
            out.append(None)
        elif isinstance(entry, str):
            out.append(ex.lookup(entry))
        else:
            arr = ex.decode(entry)
            explicit = isinstance(entry, TensorIn) and entry.dtype is not None
            if not explicit and i < len(roots):
                arr = arr.astype(roots[i].dtype, copy=False)
            out.append(Tensor(arr))
    return out


def _hint(exc: EngineError, bindings: Bindings) -> None:
    """Name the session tensors behind a freed graph or a stale saved tensor."""
    node = exc.node
    if node is None:
        return
    made = [n for n, t in bindings.items() if t.grad_fn is node]
    where = f"{node.name}" + (f" (which made {', '.join(map(repr, made))})" if made else "")
    if isinstance(exc, GraphFreedError):
        by = getattr(node, "freed_by", None)
        if by:
            names = ", ".join(repr(n) for n in by)
            exc.context["hint"] = (
                f"{where} was freed by the backward on {names}; pass retain_graph=true to that "
                f"backward on {names} to backward through it again"
            )
        else:
            exc.context["hint"] = f"{where} was freed; pass retain_graph=true to the first backward"
    elif isinstance(exc, VersionMismatchError):
        stale = exc.tensor  # the saved tensor that changed, when the engine says which
        counter = getattr(stale, "_vc", None)
        bound = [n for n, t in bindings.items() if counter is not None and t._vc is counter]
        what = f"tensor {', '.join(map(repr, bound))}" if bound else "a tensor it saved"
        exc.context["hint"] = (
            f"{what} was modified in place (an assign step) after {where} saved it; "
            "run the steps that use it again after the update"
        )


def run_backward(
    session: Session,
    body: BackwardIn,
    settings: Settings,
    bindings: Bindings | None = None,
    held: int | None = None,
    report: bool = True,
) -> dict[str, Tensor]:
    """``torch.autograd.backward``; returns name -> new grad for every changed tensor
    (``report`` False: nothing, for a caller that does not say which).

    ``held``: an upper bound of the bindings' bytes the caller kept (a program's steps):
    far from every budget it stands for the exact count, which walks every tensor and
    graph node; near one, the exact count decides, as without it."""
    bindings = session.tensors if bindings is None else bindings
    ex = Executor(session, settings, bindings)
    names = names_of(body.tensors)
    roots = [ex.lookup(n) for n in names]
    grads = _grad_values(ex, body.grad_tensors, roots)
    inputs = None if body.inputs is None else [ex.lookup(n) for n in body.inputs]
    ahead = bytes_ahead(bindings)
    if held is None or over_budget(session, settings, held + ahead) is not None:
        refuse_bytes(session, settings, bindings_bytes(bindings.values()) + ahead)
    try:
        changed = engine.backward(
            roots,
            grads,
            retain_graph=body.retain_graph,
            create_graph=body.create_graph,
            inputs=inputs,
            tag=tuple(names),
        )
    except (GraphFreedError, VersionMismatchError) as exc:
        _hint(exc, bindings)
        raise
    session.bytes_bound = None  # new grads
    if not (body.retain_graph if body.retain_graph is not None else body.create_graph):
        session.work = 0
    if not report:
        return {}
    wanted = {id(t) for t in changed}
    by_id: dict[int, list[str]] = {}
    for name, t in bindings.items():
        if id(t) in wanted:
            by_id.setdefault(id(t), []).append(name)
    return {
        name: g for t in changed for name in by_id.get(id(t), ()) if (g := grad_of(t)) is not None
    }


def run_grad(
    session: Session, body: GradIn, settings: Settings, bindings: Bindings | None = None
) -> list[Tensor | None]:
    """``torch.autograd.grad``; with ``out``, binds each gradient to a name."""
    bindings = session.tensors if bindings is None else bindings
    ex = Executor(session, settings, bindings)
    outputs = [ex.lookup(n) for n in names_of(body.outputs)]
    inputs = [ex.lookup(n) for n in names_of(body.inputs)]
    if body.out is not None and len(body.out) != len(inputs):
        raise BadArgumentsError(
            f"'out' names {len(body.out)} tensors but there are {len(inputs)} inputs"
        )
    grads = _grad_values(ex, body.grad_outputs, outputs)
    if body.out is not None:
        kept = [t for k, t in bindings.items() if k not in body.out]
        ahead = sum(t._data.nbytes for t in inputs)
        refuse_bytes(session, settings, bindings_bytes(kept) + ahead)
    try:
        result = engine.grad(
            outputs,
            inputs,
            grads,
            retain_graph=body.retain_graph,
            create_graph=body.create_graph,
            allow_unused=body.allow_unused,
            tag=tuple(names_of(body.outputs)),
        )
    except (GraphFreedError, VersionMismatchError) as exc:
        _hint(exc, bindings)
        raise
    if body.out is not None:
        for name, g in zip(body.out, result):
            if g is not None:
                bindings[name] = g
        session.bytes_bound = None
    return list(result)


def zero_grad(session: Session, body: ZeroGradIn, bindings: Bindings | None = None) -> list[str]:
    """Zero (in place) or drop the grads of the named tensors, or of every leaf."""
    bindings = session.tensors if bindings is None else bindings
    if body.tensors is None:
        targets = {n: t for n, t in bindings.items() if accumulates(t) and t.is_leaf}
    else:
        targets = {n: session.lookup(n, bindings) for n in body.tensors}
    done = []
    for name, t in targets.items():
        g = grad_of(t)
        if g is None:
            continue
        if body.set_to_none:
            t.grad = None
        else:
            if g.grad_fn is not None:
                g = g.detach()
                t.grad = g
            g.requires_grad_(False)
            with no_grad():
                g.zero_()
        done.append(name)
    return done


def patch_tensor(session: Session, name: str, body: PatchTensorIn) -> Tensor:
    """``requires_grad_()`` then ``retain_grad()``; checked first, so a refusal changes nothing."""
    t = session.lookup(name)
    will_require = t.requires_grad if body.requires_grad is None else body.requires_grad
    if body.retain_grad and not will_require:
        raise NoGradFnError("can't retain_grad on Tensor that has requires_grad=False")
    if body.requires_grad is not None:
        t.requires_grad_(body.requires_grad)
    if body.retain_grad:
        t.retain_grad()
    return t


def check_fetch(key: str) -> tuple[str, bool]:
    """A fetch entry: ``name`` or ``name.grad``."""
    name, dot, attr = key.partition(".")
    if dot and attr != "grad":
        raise InvalidNameError(f"cannot fetch {key[:80]!r}: use 'name' or 'name.grad'")
    return check_tensor_name(name), bool(dot)
