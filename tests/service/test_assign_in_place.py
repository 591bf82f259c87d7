"""Assign steps as PyTorch's ``p.copy_(expr)``: what shares the target's memory (a view
bound to a name) sees the write, a name bound to the result keeps its own values, and a
failing batch restores the target, whether the step wrote into the target's memory or
(copy-on-write, nothing else holding either array) gave it the result's."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from svc_helpers import SyncClient, assert_problem, put

from engine import Tensor
from service.compute.steps import _swap
from service.session.state import Session, Transaction


def _batch(client: SyncClient, s: str, *steps: dict[str, Any]) -> Any:
    return client.post(f"/v1/sessions/{s}/batch", json={"steps": list(steps)})


def _values(client: SyncClient, s: str, name: str) -> Any:
    r = client.get(f"/v1/sessions/{s}/tensors/{name}")
    assert r.status_code == 200, r.text
    return r.json()["data"]["data"]


def _session(client: SyncClient, s: str, b64: bool = False) -> None:
    assert client.post("/v1/sessions", json={"name": s}).status_code == 201
    if b64:  # decoded as a view of the decoded buffer, which only that view holds
        raw = base64.b64encode(np.array([1, 2, 3, 4], "<f4").tobytes()).decode()
        r = client.put(
            f"/v1/sessions/{s}/tensors/w",
            json={"b64": raw, "dtype": "float32", "shape": [4], "requires_grad": True},
        )
        assert r.status_code == 201, r.text
    else:
        put(client, s, "w", [1.0, 2.0, 3.0, 4.0], requires_grad=True)
    put(client, s, "g", [2.0, 2.0, 2.0, 2.0])


@pytest.mark.parametrize("b64", [False, True], ids=["json", "b64"])
def test_an_assign_of_a_fresh_result_then_a_rollback(client: SyncClient, b64: bool) -> None:
    _session(client, "cow1", b64)
    r = _batch(client, "cow1", {"out": "w", "expr": "w - 0.5 * g", "assign": True})
    assert r.status_code == 200, r.text
    assert _values(client, "cow1", "w") == [0.0, 1.0, 2.0, 3.0]
    r = _batch(
        client,
        "cow1",
        {"out": "w", "expr": "w * 3", "assign": True},
        {"out": "w", "expr": "w + 1", "assign": True},
        {"out": "z", "expr": "missing + 1"},
    )
    assert_problem(r, 404, "tensor_not_found")
    assert _values(client, "cow1", "w") == [0.0, 1.0, 2.0, 3.0]
    r = client.post("/v1/sessions/cow1/ops", json={"out": "s", "expr": "(w * w).sum()"})
    assert r.status_code == 201, r.text
    r = client.post("/v1/sessions/cow1/backward", json={"tensors": "s"})
    assert r.status_code == 200, r.text
    assert _values(client, "cow1", "w") == [0.0, 1.0, 2.0, 3.0]
    r = client.get("/v1/sessions/cow1/tensors/w/grad")
    assert r.json()["grad"]["data"] == [0.0, 2.0, 4.0, 6.0]


def test_a_name_bound_to_the_result_keeps_its_values(client: SyncClient) -> None:
    _session(client, "cow2")
    r = _batch(
        client,
        "cow2",
        {"out": "w", "expr": "g", "assign": True},
        {"out": "w", "expr": "w * 5", "assign": True},
    )
    assert r.status_code == 200, r.text
    assert _values(client, "cow2", "w") == [10.0, 10.0, 10.0, 10.0]
    assert _values(client, "cow2", "g") == [2.0, 2.0, 2.0, 2.0]
    r = _batch(
        client, "cow2", {"out": "h", "expr": "g * 1"}, {"out": "w", "expr": "h", "assign": True}
    )
    assert r.status_code == 200, r.text
    r = _batch(client, "cow2", {"out": "w", "expr": "w + 1", "assign": True})
    assert r.status_code == 200, r.text
    assert _values(client, "cow2", "h") == [2.0, 2.0, 2.0, 2.0]
    assert _values(client, "cow2", "w") == [3.0, 3.0, 3.0, 3.0]


@pytest.mark.parametrize("b64", [False, True], ids=["json", "b64"])
def test_a_view_of_the_target_sees_the_write_and_the_rollback(
    client: SyncClient, b64: bool
) -> None:
    _session(client, "cow3", b64)
    r = _batch(client, "cow3", {"out": "v", "expr": "w.data[1:3]"})
    assert r.status_code == 200, r.text
    r = _batch(client, "cow3", {"out": "w", "expr": "w * 10", "assign": True})
    assert r.status_code == 200, r.text
    assert _values(client, "cow3", "v") == [20.0, 30.0]
    r = _batch(
        client,
        "cow3",
        {"out": "w", "expr": "w + 1", "assign": True},
        {"out": "z", "expr": "missing + 1"},
    )
    assert_problem(r, 404, "tensor_not_found")
    assert _values(client, "cow3", "v") == [20.0, 30.0]
    assert _values(client, "cow3", "w") == [10.0, 20.0, 30.0, 40.0]


def _txn() -> Transaction:
    return Transaction(Session("t", None, 60.0, 0.0, 0.0))


def test_an_upload_viewing_its_whole_buffer_takes_the_result_without_a_copy() -> None:
    """A decoded upload's array is a view of a buffer only it holds: as good as owned, so
    the assign swaps arrays (a training loop's updates copy nothing), and a rollback gives
    the old array back untouched."""
    raw = np.arange(4, dtype="<f4").tobytes()
    target = Tensor(np.frombuffer(raw, "<f4").astype(np.float32).reshape(2, 2))
    old = id(target._data)  # (a reference would count as a holder)
    txn = _txn()
    result = Tensor(np.full((2, 2), 7.0, np.float32))  # held as run_step holds it
    assert _swap(txn, target, result)
    assert target._data.tolist() == [[7.0, 7.0], [7.0, 7.0]]
    assert target._version == 1
    txn.rollback()
    assert id(target._data) == old and target._data.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert target._version == 0


def test_an_array_whose_buffer_another_view_shares_is_written_in_place() -> None:
    """A second view of the buffer (a slice of the target, or of its base) must see the
    write: no swap."""
    base = np.arange(4, dtype=np.float32)
    target = Tensor(base.reshape(2, 2))
    del base
    other = target._data[0]  # a view: numpy points its base at the same owner
    result = Tensor(np.zeros((2, 2), np.float32))
    assert not _swap(_txn(), target, result)
    del other
    assert _swap(_txn(), target, result)  # the same, once that view is gone
    part = Tensor(np.arange(4, dtype=np.float32)[:2])  # a view of half of its buffer
    result = Tensor(np.zeros(2, np.float32))
    assert not _swap(_txn(), part, result)
