"""Assign steps as PyTorch's ``p.copy_(expr)``: what shares the target's memory (a view
bound to a name) sees the write, a name bound to the result keeps its own values, and a
failing batch restores the target, whether the step wrote into the target's memory or
(copy-on-write, nothing else holding either array) gave it the result's."""

from __future__ import annotations

from typing import Any

from svc_helpers import SyncClient, assert_problem, put


def _batch(client: SyncClient, s: str, *steps: dict[str, Any]) -> Any:
    return client.post(f"/v1/sessions/{s}/batch", json={"steps": list(steps)})


def _values(client: SyncClient, s: str, name: str) -> Any:
    r = client.get(f"/v1/sessions/{s}/tensors/{name}")
    assert r.status_code == 200, r.text
    return r.json()["data"]["data"]


def _session(client: SyncClient, s: str) -> None:
    assert client.post("/v1/sessions", json={"name": s}).status_code == 201
    put(client, s, "w", [1.0, 2.0, 3.0, 4.0], requires_grad=True)
    put(client, s, "g", [2.0, 2.0, 2.0, 2.0])


def test_an_assign_of_a_fresh_result_then_a_rollback(client: SyncClient) -> None:
    _session(client, "cow1")
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


def test_a_view_of_the_target_sees_the_write_and_the_rollback(client: SyncClient) -> None:
    _session(client, "cow3")
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
