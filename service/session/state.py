"""The in-memory session store: named sessions of named tensors, with limits.

A session binds names to engine tensors. Requests on one session are
serialized by its ``asyncio.Lock``; different sessions run in parallel. With
API keys, each key has its own namespace, so another key's session is simply
not found (404). Idle sessions expire after the TTL: lazily when touched, and
in a sweep whenever sessions are created or listed.

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
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np

from engine import Generator, Tensor
from engine.function import Node

from ..errors import (
    LimitExceededError,
    SessionExistsError,
    SessionNotFoundError,
    TensorNotFoundError,
)
from ..names import check_session_name
from ..settings import Settings


def grad_of(t: Tensor) -> Tensor | None:
    """``t.grad`` without PyTorch's non-leaf warning (a non-leaf without retain_grad: None)."""
    return t.grad if (t.grad_fn is None or t.retains_grad) else None


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
        g = grad_of(t)
        if g is not None:
            _hold(held, g._data)
        fn = t._grad_fn
        if fn is not None and fn.seq >= since:
            nodes.append(fn)
    if nodes:
        _walk(held, nodes, since)
    return sum(held.values())


def _hold(held: dict[int, int], arr: Any) -> None:
    if type(arr) is np.ndarray:
        buf = _buffer(arr)
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
    # Stored programs by name (``service.compiled.Program``), compiled when stored.
    programs: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def expires(self) -> float:
        return self.last_used + self.ttl

    def nbytes(self) -> int:
        return bindings_bytes(self.tensors.values())

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
        self._journal: dict[int, tuple[Tensor, np.ndarray, int]] = {}
        # for autograd verbs in a batch: grads as they were, nodes before backward freed them
        self._grads: dict[int, tuple[Tensor, Tensor | None, np.ndarray | None, int, bool]] = {}
        self._nodes: dict[int, tuple[Node, Any, Any, bool, Any]] = {}
        self._generator: Generator | None = None

    def before_random(self) -> None:
        """Record the generator's state before the first draw or seed of the transaction."""
        if self._generator is None:
            self._generator = copy.deepcopy(self.session.generator)

    def before_grads(self) -> None:
        """Record every bound tensor's grad (object, data, version) before a verb writes
        grads (backward accumulates in place, zero_grad zeroes in place or drops)."""
        for t in self.bindings.values():
            if id(t) in self._grads:
                continue
            g = t._grad
            if g is None:
                self._grads[id(t)] = (t, None, None, 0, False)
            else:
                self._grads[id(t)] = (t, g, g._data.copy(), g._vc[0], g.requires_grad)

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
            self._journal[id(t)] = (t, t._data.copy(), t._version)

    def commit(self) -> None:
        self.session.tensors = self.bindings
        self._journal.clear()
        self._grads.clear()
        self._nodes.clear()
        self._generator = None

    def rollback(self) -> None:
        for t, data, version in self._journal.values():
            if t._data.shape == data.shape and t._data.flags.writeable:
                np.copyto(t._data, data)  # views of the buffer see the old values too
            else:
                t._data = data
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


class SessionStore:
    """Sessions by (owner, name); ``clock`` is injectable for TTL tests."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
        self._sessions: dict[tuple[str | None, str], Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def bytes_held(self, exclude: Session | None = None) -> tuple[int, int]:
        """Bytes held by every session but ``exclude``, and by those of ``exclude``'s key:
        each one's bound when it has one, else its exact count (read without its lock: a
        snapshot, good enough for a quota)."""
        total = same_key = 0
        owner = exclude.owner if exclude is not None else None
        for s in list(self._sessions.values()):
            if s is not exclude:
                bound = s.bytes_bound
                held = bound if bound is not None else bindings_bytes(list(s.tensors.values()))
                total += held
                if s.owner == owner:
                    same_key += held
        return total, same_key

    def sweep(self) -> int:
        """Drop every expired session that no request holds; returns how many."""
        now = self.clock()
        dead = [
            key for key, s in self._sessions.items() if s.expires <= now and not s.lock.locked()
        ]
        for key in dead:
            del self._sessions[key]
        return len(dead)

    def create(self, name: str | None, owner: str | None) -> Session:
        self.sweep()
        if len(self._sessions) >= self.settings.max_sessions:
            raise LimitExceededError(
                f"the server holds {len(self._sessions)} sessions; the limit is "
                f"{self.settings.max_sessions}",
                status=429,
                hint="delete sessions you no longer need, or retry later",
                headers={"Retry-After": "60"},
            )
        if owner is not None:  # with API keys: one key cannot take every place
            held = self.count(owner)
            if held >= self.settings.key_max_sessions:
                raise LimitExceededError(
                    f"this API key holds {held} sessions; the limit per key is "
                    f"{self.settings.key_max_sessions}",
                    status=429,
                    hint="delete sessions you no longer need (GRADSERVE_KEY_MAX_SESSIONS)",
                    headers={"Retry-After": "60"},
                )
        if name is None:
            name = self._fresh_name(owner)
        check_session_name(name)
        if (owner, name) in self._sessions:
            raise SessionExistsError(
                f"session {name!r} already exists", hint="pick another name, or omit it"
            )
        now = self.clock()
        session = Session(name, owner, self.settings.session_ttl_seconds, now, now)
        session.held_elsewhere = partial(self.bytes_held, session)
        self._sessions[(owner, name)] = session
        return session

    def count(self, owner: str | None) -> int:
        """Sessions held for ``owner``."""
        return sum(1 for o, _ in self._sessions if o == owner)

    def _fresh_name(self, owner: str | None) -> str:
        while True:
            name = "s-" + secrets.token_hex(6)
            if (owner, name) not in self._sessions:
                return name

    def get(self, name: str, owner: str | None) -> Session:
        """The live session, touched; an expired one is evicted and reported missing."""
        session = self._sessions.get((owner, name))
        now = self.clock()
        if session is not None and session.expires <= now and not session.lock.locked():
            del self._sessions[(owner, name)]
            session = None
        if session is None:
            raise SessionNotFoundError(
                f"no session {name!r}", hint="sessions expire after being idle; create it again"
            )
        session.last_used = now
        return session

    def list(self, owner: str | None) -> list[Session]:
        self.sweep()
        return [s for (o, _), s in self._sessions.items() if o == owner]

    def delete(self, name: str, owner: str | None) -> None:
        self.get(name, owner)
        del self._sessions[(owner, name)]

    # hooks of the durable journal (service/journal.py): a cache of the store's sessions
    def peek(self, name: str, owner: str | None) -> Session | None:
        """The session held in memory, untouched (no TTL check)."""
        return self._sessions.get((owner, name))

    def adopt(self, session: Session) -> None:
        """Hold a session rebuilt from the store."""
        self._sessions[(session.owner, session.name)] = session

    def forget(self, session: Session) -> None:
        """Stop holding ``session`` (if it is still the one held under its name)."""
        if self._sessions.get((session.owner, session.name)) is session:
            del self._sessions[(session.owner, session.name)]
