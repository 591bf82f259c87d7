"""The session manager on its own (memory store): TTL, limits, owners, transactions."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import numpy as np
import pytest
from svc_helpers import make_settings

from engine import Tensor
from service.errors import (
    InvalidNameError,
    LimitExceededError,
    SessionExistsError,
    SessionNotFoundError,
)
from service.session.manager import SessionManager
from service.session.state import Transaction, bindings_bytes, owner_of

T = TypeVar("T")


def run(call: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(call)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def store(**limits: object) -> tuple[SessionManager, Clock]:
    clock = Clock()
    return SessionManager(make_settings(**limits), clock=clock), clock


def names(s: SessionManager, owner: str | None = None) -> list[str]:
    return [x["name"] for x in run(s.summaries(owner))]


def test_create_get_delete() -> None:
    s, _ = store()
    created = run(s.create("nb", None))
    assert run(s.session("nb", None)) is created
    with pytest.raises(SessionExistsError):
        run(s.create("nb", None))
    run(s.delete("nb", None))
    with pytest.raises(SessionNotFoundError):
        run(s.session("nb", None))


def test_generated_names_are_valid_and_distinct() -> None:
    s, _ = store()
    made = {run(s.create(None, None)).name for _ in range(20)}
    assert len(made) == 20


@pytest.mark.parametrize("name", ["", "-a", "a" * 65, "a b", "a/b", "é"])
def test_invalid_session_names(name: str) -> None:
    s, _ = store()
    with pytest.raises(InvalidNameError):
        run(s.create(name, None))


def test_idle_ttl_evicts_lazily_and_on_sweep() -> None:
    s, clock = store(session_ttl_seconds=10)
    run(s.create("a", None))
    run(s.create("b", None))
    clock.now += 5
    run(s.session("a", None))  # touched: lives 10 s from now
    clock.now += 6
    with pytest.raises(SessionNotFoundError):
        run(s.session("b", None))
    assert names(s) == ["a"]
    clock.now += 11
    assert names(s) == []
    assert len(s) == 0


def test_max_sessions_is_429_and_expired_ones_make_room() -> None:
    s, clock = store(max_sessions=2, session_ttl_seconds=10)
    run(s.create("a", None))
    run(s.create("b", None))
    with pytest.raises(LimitExceededError) as info:
        run(s.create("c", None))
    assert info.value.status == 429
    clock.now += 11
    run(s.create("c", None))


def test_owners_have_separate_namespaces() -> None:
    s, _ = store()
    a, b = owner_of("key-a"), owner_of("key-b")
    run(s.create("nb", a))
    run(s.create("nb", b))  # no clash, no leak
    with pytest.raises(SessionNotFoundError):
        run(s.session("other", a))
    assert names(s, a) == ["nb"] and s.count_held(a) == 1
    assert a is not None and "key-a" not in a


def test_transaction_rolls_back_bindings_and_in_place_writes() -> None:
    s, _ = store()
    session = run(s.create("nb", None))
    w = Tensor(np.array([1.0, 2.0], dtype=np.float32))
    view = w.data[:1]
    session.tensors["w"] = w
    txn = Transaction(session)
    txn.bindings["y"] = Tensor(np.zeros(2))
    txn.before_write(w)
    w.copy_(Tensor(np.array([5.0, 6.0], dtype=np.float32)))
    assert w._version == 1
    txn.rollback()
    assert session.tensors == {"w": w}
    assert w._data.tolist() == [1.0, 2.0] and w._version == 0
    assert view.tolist() == [1.0]  # views of the buffer see the old values


def test_bytes_count_shared_buffers_once() -> None:
    a = Tensor(np.zeros(100, dtype=np.float32))
    b = a.detach()
    assert bindings_bytes([a, b]) == 400
