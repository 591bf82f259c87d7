"""The store on its own: TTL, limits, owners, transactions."""

from __future__ import annotations

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
from service.session.state import SessionStore, Transaction, bindings_bytes, owner_of


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def store(**limits: object) -> tuple[SessionStore, Clock]:
    clock = Clock()
    return SessionStore(make_settings(**limits), clock=clock), clock


def test_create_get_delete() -> None:
    s, _ = store()
    created = s.create("nb", None)
    assert s.get("nb", None) is created
    with pytest.raises(SessionExistsError):
        s.create("nb", None)
    s.delete("nb", None)
    with pytest.raises(SessionNotFoundError):
        s.get("nb", None)


def test_generated_names_are_valid_and_distinct() -> None:
    s, _ = store()
    names = {s.create(None, None).name for _ in range(20)}
    assert len(names) == 20


@pytest.mark.parametrize("name", ["", "-a", "a" * 65, "a b", "a/b", "é"])
def test_invalid_session_names(name: str) -> None:
    s, _ = store()
    with pytest.raises(InvalidNameError):
        s.create(name, None)


def test_idle_ttl_evicts_lazily_and_on_sweep() -> None:
    s, clock = store(session_ttl_seconds=10)
    s.create("a", None)
    s.create("b", None)
    clock.now += 5
    s.get("a", None)  # touched: lives 10 s from now
    clock.now += 6
    with pytest.raises(SessionNotFoundError):
        s.get("b", None)
    assert [x.name for x in s.list(None)] == ["a"]
    clock.now += 11
    assert s.list(None) == []
    assert len(s) == 0


def test_max_sessions_is_429_and_expired_ones_make_room() -> None:
    s, clock = store(max_sessions=2, session_ttl_seconds=10)
    s.create("a", None)
    s.create("b", None)
    with pytest.raises(LimitExceededError) as info:
        s.create("c", None)
    assert info.value.status == 429
    clock.now += 11
    s.create("c", None)


def test_owners_have_separate_namespaces() -> None:
    s, _ = store()
    a, b = owner_of("key-a"), owner_of("key-b")
    s.create("nb", a)
    s.create("nb", b)  # no clash, no leak
    with pytest.raises(SessionNotFoundError):
        s.get("other", a)
    assert [x.owner for x in s.list(a)] == [a]
    assert a is not None and "key-a" not in a


def test_transaction_rolls_back_bindings_and_in_place_writes() -> None:
    s, _ = store()
    session = s.create("nb", None)
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
