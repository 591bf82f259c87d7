"""Checkpoints: a session's state as JSON headers and raw bytes, and back.

A checkpoint (leaves, grads, versions, names, the generator's state and the stored
programs) bounds a journal's replay. It is exact when no bound tensor holds a graph
(``checkpointable``); otherwise the graphs are dropped and each non-leaf keeps its value
and a ``GraphLost`` grad_fn that answers 409 ``graph_lost``. Nothing is ever unpickled."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import Tensor
from engine.function import Function, Node

from .. import codec
from ..compute import compiled
from ..errors import GraphLostError
from .records import pack, unpack
from .state import Session, _buffer, grad_of

FORMAT = 1  # version of records and checkpoints


def checkpointable(s: Session) -> bool:
    """True when the bound tensors are plain leaves that share no memory, so their values,
    grads, flags and versions are the whole state (no graph, view or hook to keep)."""
    seen: set[int] = set()
    tensors: dict[int, Tensor] = {id(t): t for t in s.tensors.values()}
    for t in tensors.values():
        g = t._grad
        if t.grad_fn is not None or t._hooks or t._base is not None:
            return False
        parts = [t] if g is None else [t, g]
        if g is not None and (g.grad_fn is not None or g._hooks or id(g) in tensors):
            return False
        for p in parts:
            buf = id(_buffer(p._data))
            if buf in seen or not p._data.flags.writeable:
                return False
            seen.add(buf)
    return True


def _array_head(arr: np.ndarray) -> dict[str, Any]:
    return {"dtype": codec.dtype_name(arr.dtype), "shape": list(arr.shape), "nbytes": arr.nbytes}


def snapshot(s: Session) -> bytes:
    """The checkpoint of a ``checkpointable`` session, or, for any other session, the
    state with its graphs dropped: each non-leaf keeps its value, flags, retained grad and
    grad_fn name, and the bound leaves its graph reached (see ``GraphLost``)."""
    entries: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    chunks: list[bytes] = []
    for name, t in s.tensors.items():
        if id(t) in index:
            entries[index[id(t)]]["names"].append(name)
            continue
        index[id(t)] = len(entries)
        entry = {"names": [name], "data": _array_head(t._data),
                 "requires_grad": t.requires_grad, "version": t._version, "grad": None}  # fmt: skip
        chunks.append(np.ascontiguousarray(t._data).tobytes())
        if (g := grad_of(t)) is not None:
            entry["grad"] = {**_array_head(g._data), "version": g._version}
            chunks.append(np.ascontiguousarray(g._data).tobytes())
        if t.grad_fn is not None:
            entry["lost"] = {"grad_fn": t.grad_fn.name, "retains_grad": t.retains_grad}
        entries.append(entry)
    for t_id, i in index.items():
        if "lost" in entries[i]:
            t = next(t for t in s.tensors.values() if id(t) == t_id)
            entries[i]["lost"]["leaves"] = sorted(
                index[id(leaf)] for leaf in _leaves(t) if id(leaf) in index
            )
    order = list(s.tensors)
    head = {"v": FORMAT, "work": s.work, "tensors": entries, "order": order}
    head["generator"] = s.generator.get_state()  # later draws continue the same stream
    head["programs"] = {name: p.stored for name, p in s.programs.items()}
    return pack(head, b"".join(chunks))


def _leaves(t: Tensor) -> list[Tensor]:
    """The leaf tensors ``t``'s graph reaches (iteratively: graphs may be 100,000 deep)."""
    seen: set[int] = set()
    leaves: list[Tensor] = []
    stack: list[Any] = [t.grad_fn]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for edge in getattr(node, "next_edges", ()):
            if edge is None:
                continue
            target = edge[0]
            if isinstance(target, Tensor):
                leaves.append(target)
            else:
                stack.append(target)
    return leaves


class GraphLost(Function):
    """The grad_fn of a non-leaf whose graph the store could not keep: any backward or
    grad that needs it answers 409 ``graph_lost`` (before any grad changes)."""

    name = "GraphLost"

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        names = ", ".join(repr(n) for n in getattr(ctx, "lost_names", ()))
        raise GraphLostError(
            f"the graph behind {names} was dropped: the session's journal passed "
            "GRADSERVE_JOURNAL_MAX_BYTES while a graph was held",
            hint=f"recompute {names} from the leaves (their values and grads are kept), "
            "then run backward again",
        )


_LOST_FNS: dict[str, type[GraphLost]] = {}


def _lost_fn(name: str) -> type[GraphLost]:
    """A ``GraphLost`` that shows the dropped node's name (``MulBackward0``)."""
    fn = _LOST_FNS.get(name)
    if fn is None:
        fn = _LOST_FNS[name] = type(name, (GraphLost,), {"name": name})
    return fn


def _lost_tensor(
    arr: np.ndarray, lost: dict[str, Any], names: list[str], leaves: list[Tensor]
) -> Tensor:
    node = Node(_lost_fn(str(lost["grad_fn"])))
    node.next_edges = tuple((leaf, 0) for leaf in leaves)
    node.out_shape, node.out_dtype = arr.shape, arr.dtype
    node.lost_names = names  # type: ignore[attr-defined]  # Node has a __dict__ for rare fields
    t = Tensor._make(arr, requires_grad=True, grad_fn=node)
    if lost.get("retains_grad"):
        t.retain_grad()
    return t


def _array(head: dict[str, Any], raw: memoryview, at: int) -> tuple[np.ndarray, int]:
    dtype = codec.dtype_of(head["dtype"])
    n = int(head["nbytes"])
    arr = np.frombuffer(raw[at : at + n], dtype=dtype.newbyteorder("<")).astype(dtype)
    return arr.reshape(head["shape"]), at + n


def restore(s: Session, blob: bytes) -> None:
    """Rebind the checkpoint's tensors in ``s`` (which must be empty)."""
    head, raw = unpack(blob)
    if head.get("v") != FORMAT:
        raise ValueError(f"checkpoint format {head.get('v')!r} is not {FORMAT}")
    if head.get("generator") is not None:
        s.generator.set_state(head["generator"])
    at = 0
    bound: dict[str, Tensor] = {}
    made: list[Tensor] = []
    for entry in head["tensors"]:
        arr, at = _array(entry["data"], raw, at)
        if (lost := entry.get("lost")) is not None:
            t = _lost_tensor(arr, lost, entry["names"], [made[i] for i in lost["leaves"]])
        else:
            t = Tensor(arr, requires_grad=bool(entry["requires_grad"]))
        made.append(t)
        t._vc[0] = int(entry["version"])
        if (gh := entry["grad"]) is not None:
            garr, at = _array(gh, raw, at)
            g = Tensor(garr)
            g._vc[0] = int(gh["version"])
            t._grad = g
        for name in entry["names"]:
            bound[name] = t
    s.tensors = {name: bound[name] for name in head["order"]}
    for name, body in head.get("programs", {}).items():
        if name not in s.programs:  # a live copy whose graphs were dropped keeps its own
            s.programs[name] = compiled.compile_stored(name, body)
    s.work = int(head["work"])
    s.bytes_bound = None
    s.settle()  # exact again, and the manager's totals with it (a live copy's graphs dropped)
