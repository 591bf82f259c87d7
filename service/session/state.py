"""A session's state: named tensors, their bytes, and all-or-nothing changes to them.

A session binds names to engine tensors. Requests on one session are serialized by
its ``asyncio.Lock``; different sessions run in parallel (``manager`` holds them).

Batches are atomic through ``Transaction``: steps run against a copy of the
name -> tensor bindings, in-place writes (``assign`` steps, ``x.op_()`` methods, and
the arguments an op's registration ``writes``, such as batch_norm's running stats) are
journaled with the old data and version, and only a successful batch is committed.
"""

from __future__ import annotations

import asyncio
import copy
import difflib
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from engine import Generator, Tensor
from engine.errors import InplaceViewError
from engine.function import Node

from ..errors import (
    TensorNotFoundError,
)


def grad_of(t: Tensor) -> Tensor | None:
    """``t.grad`` without PyTorch's non-leaf warning (a non-leaf without retain_grad: None;
    a view whose history an in-place write made unusable, which PyTorch refuses to read:
    None, so reading the session does not fail for it)."""
    g = t._grad
    if g is None:
        return None
    if t._view is None:  # (``grad_fn`` is the node as set: no view to regenerate)
        return g if t._grad_fn is None or t._retains_grad else None
    try:
        leaf = t.grad_fn is None
    except InplaceViewError:
        return None
    return t.grad if (leaf or t.retains_grad) else None


def accumulates(t: Tensor) -> bool:
    """Whether a backward accumulates into ``t.grad`` (a leaf, or retain_grad, that
    requires grad); False for a view whose history an in-place write made unusable,
    which PyTorch refuses to read, so one such name does not fail a whole session."""
    if t._view is None:  # the flags as set (a view may take them from its base)
        return t.requires_grad_flag and (t._grad_fn is None or t._retains_grad)
    try:
        return t.requires_grad and (t.is_leaf or t.retains_grad)
    except InplaceViewError:
        return False


def _buffer(arr: np.ndarray) -> np.ndarray:
    """The array that owns ``arr``'s memory (a view's bytes are its base's)."""
    while isinstance(base := arr.base, np.ndarray):
        arr = base
    return arr


def bindings_bytes(tensors: Iterable[Tensor], since: int = 0) -> int:
    """Bytes held by tensors, their grads and the arrays their live graph nodes saved for
    backward (freed nodes hold none), each buffer once however many names, views or
    nodes share it. With ``since`` (a node clock reading), only nodes created since are
    walked: older ones were counted before, so a step's count does not grow with the
    graph behind it."""
    held: dict[int, int] = {}  # id(buffer) -> its bytes
    nodes: list[Any] = []
    for t in tensors:
        _hold(held, t._data)
        if t._grad is not None and (g := grad_of(t)) is not None:
            _hold(held, g._data)
        fn = t._grad_fn
        if fn is not None and fn.seq >= since:
            nodes.append(fn)
    if nodes:
        _walk(held, nodes, since)
    return sum(held.values())


def _hold(held: dict[int, int], arr: Any) -> None:
    if type(arr) is np.ndarray:
        buf = arr if arr.base is None else _buffer(arr)
        held[id(buf)] = buf.nbytes


def _walk(held: dict[int, int], nodes: list[Any], since: int) -> None:
    """The saved arrays of ``nodes`` and the nodes behind them (created since ``since``),
    and the leaves their edges reach (kept alive by the graph, named or not)."""
    seen: set[int] = set()
    while nodes:
        node = nodes.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for item in getattr(node, "_saved", None) or ():
            _hold(held, item._data if type(item) is Tensor else item)
        for data, _vc, _version in getattr(node, "_result", None) or ():
            _hold(held, data)
        extra = getattr(node, "__dict__", None)  # arrays a rule keeps on ctx (ctx.mask = ...)
        if extra:
            for value in extra.values():
                _hold(held, value._data if type(value) is Tensor else value)
        inner = getattr(node, "inner", None)
        if inner is not None:
            nodes.append(inner)
        for edge in node.next_edges:
            if edge is None:
                continue
            target = edge[0]
            if type(target) is Tensor:
                _hold(held, target._data)
            elif getattr(target, "seq", -1) >= since:
                nodes.append(target)


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(eq=False)
class Session:
    name: str
    owner: str | None
    ttl: float
    created: float
    last_used: float
    tensors: dict[str, Tensor] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    work: int = 0  # elements produced by steps: how heavy a backward may be
    # An upper bound of nbytes() kept by steps, so a step need not walk every tensor;
    # None after anything that may add bytes outside steps (new leaves, grads). Only
    # written under the session's lock.
    bytes_bound: int | None = None
    # The session's random source: a manual_seed step seeds it, random ops draw from it.
    generator: Generator = field(default_factory=Generator, repr=False)
    # Bytes the store's other sessions hold, all of them and those of this session's key
    # (GRADSERVE_MAX_TOTAL_BYTES, GRADSERVE_KEY_MAX_BYTES); None outside a store.
    held_elsewhere: Callable[[], tuple[int, int]] | None = field(default=None, repr=False)
    # Stored programs by name (``service.compute.compiled.Program``), compiled when stored.
    programs: dict[str, Any] = field(default_factory=dict, repr=False)
    # What this session counts for in its manager's running totals (``ledger``): its
    # bytes as of the last ``settle()``, and the ledger (None while not held by one).
    counted: int = field(default=0, repr=False)
    ledger: Any = field(default=None, repr=False)

    @property
    def expires(self) -> float:
        return self.last_used + self.ttl

    def nbytes(self) -> int:
        return bindings_bytes(self.tensors.values())

    def settle(self) -> int:
        """Make the byte count exact where a change dropped it, and the ledger's share of
        this session current (after every verb, restore and replay): other sessions'
        budget checks then read running totals, never this session's tensors."""
        if self.bytes_bound is None:
            self.bytes_bound = self.nbytes()
        held = self.bytes_bound + self.program_bytes()
        ledger = self.ledger
        if ledger is not None:
            ledger.move(self, held)
        else:
            self.counted = held
        return held

    def program_bytes(self) -> int:
        """What the stored programs count toward the session's memory."""
        return sum(p.nbytes for p in self.programs.values()) if self.programs else 0

    def lookup(self, name: str, bindings: dict[str, Tensor] | None = None) -> Tensor:
        """The tensor bound to ``name`` (404 ``tensor_not_found`` naming close matches)."""
        source = self.tensors if bindings is None else bindings
        try:
            return source[name]
        except KeyError:
            raise tensor_not_found(name, self.name, source) from None

    def names_of(self, tensors: Iterable[Tensor]) -> dict[int, list[str]]:
        """id(tensor) -> the names it is bound to."""
        wanted = {id(t) for t in tensors}
        out: dict[int, list[str]] = {}
        for name, t in self.tensors.items():
            if id(t) in wanted:
                out.setdefault(id(t), []).append(name)
        return out


def tensor_not_found(name: str, session: str, bindings: dict[str, Tensor]) -> TensorNotFoundError:
    close = difflib.get_close_matches(name, list(bindings), n=3)
    hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else None
    return TensorNotFoundError(f"session {session!r} has no tensor {name!r}", hint=hint)


class Transaction:
    """All-or-nothing changes to a session's bindings and to tensors written in place."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.bindings = dict(session.tensors)
        self._journal: dict[int, tuple[Tensor, np.ndarray, np.ndarray, int]] = {}
        # for autograd verbs in a batch: grads as they were, nodes before backward freed them
        self._grads: dict[int, tuple[Tensor, Tensor | None, np.ndarray | None, int, bool]] = {}
        self._nodes: dict[int, tuple[Node, Any, Any, bool, Any]] = {}
        self._generator: Generator | None = None

    def before_random(self) -> None:
        """Record the generator's state before the first draw or seed of the transaction."""
        if self._generator is None:
            self._generator = copy.deepcopy(self.session.generator)

    def before_grads(self, new: int = 2) -> None:
        """Record every bound tensor's grad (object, data, version) before a verb writes
        grads (backward accumulates in place, zero_grad zeroes in place or drops).

        ``new``: which tensors without a grad the verb may give one: 2 any (a backward
        with ``inputs`` writes a non-leaf's), 1 those that accumulate (leaves that
        require grad, retain_grad), 0 none (zero_grad); the rest need no record."""
        grads = self._grads
        for t in self.bindings.values():
            g = t._grad
            if g is None and new < 2 and (new == 0 or not accumulates(t)):
                continue
            if id(t) in grads:
                continue
            if g is None:
                grads[id(t)] = (t, None, None, 0, False)
            else:
                grads[id(t)] = (t, g, g._data.copy(), g._vc[0], g.requires_grad)

    def before_backward(self, roots: Iterable[Tensor]) -> None:
        """Record what a backward from ``roots`` may free: every node it can reach."""
        stack = [t.grad_fn for t in roots if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if id(node) in self._nodes:
                continue
            self._nodes[id(node)] = (node, node._saved, node._result, node.freed, node.freed_by)
            stack.extend(e[0] for e in node.next_edges if e is not None and isinstance(e[0], Node))

    def before_write(self, t: Tensor) -> None:
        """Record ``t``'s data and version before its first in-place write."""
        if id(t) not in self._journal:
            self._journal[id(t)] = (t, t._data, t._data.copy(), t._version)

    def swap_in(self, t: Tensor, data: np.ndarray) -> None:
        """``t`` takes the fresh array ``data`` (its dtype and shape) in place of a write
        into its memory, which nothing but ``t`` holds: the old array, untouched, is what a
        rollback restores. Copy-on-write: neither a copy of the old values nor a write."""
        if id(t) not in self._journal:
            # the old array is both what goes back and its untouched values
            self._journal[id(t)] = (t, t._data, t._data, t._version)
        t._data = data
        t._vc[0] += 1

    def commit(self) -> None:
        self.session.tensors = self.bindings
        self._journal.clear()
        self._grads.clear()
        self._nodes.clear()
        self._generator = None

    def rollback(self) -> None:
        for t, array, data, version in self._journal.values():
            # the old values go back into the memory that was written (views of the
            # buffer see them too), and the tensor gets its own array back: an expanded
            # tensor stays expanded (a later write into it is refused again)
            if data is array:  # swapped in (copy-on-write): the old array is intact
                pass
            elif t._data.shape == data.shape and t._data.flags.writeable:
                np.copyto(t._data, data)
            elif array.flags.writeable:
                np.copyto(array, data)
            t._data = array
            t._vc[0] = version
        self._journal.clear()
        for t, g, old, version, requires in self._grads.values():
            t._grad = g
            if g is not None and old is not None:
                if g._data.shape == old.shape and g._data.flags.writeable:
                    np.copyto(g._data, old)
                else:
                    g._data = old
                g._vc[0] = version
                g.requires_grad_flag = requires
        self._grads.clear()
        for node, saved, result, freed, freed_by in self._nodes.values():
            node._saved, node._result, node.freed, node.freed_by = saved, result, freed, freed_by
        self._nodes.clear()
        if self._generator is not None:
            self.session.generator = self._generator
            self._generator = None


def owner_of(key: str | None) -> str | None:
    """What the store keeps for an API key: a digest, never the key itself."""
    return None if key is None else hashlib.sha256(key.encode()).hexdigest()[:32]
