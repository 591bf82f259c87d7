"""Each session has its own generator: a manual_seed step seeds it, random ops draw from it
exactly what ``engine.Generator().manual_seed(seed)`` draws (the engine matches torch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from svc_helpers import SyncClient, assert_problem

import engine

S = "/v1/sessions/nb"
SEED = {"op": "manual_seed", "args": [0]}


def _data(r: Any) -> Any:
    assert r.status_code == 201, r.text
    return r.json()["data"]["data"]


def test_seeded_draws_match_the_engine_generator(client: SyncClient, session: str) -> None:
    r = client.post(f"{S}/ops", json=SEED)
    assert r.status_code == 201, r.text
    assert r.json() == {"tensors": []}
    drawn = [
        _data(client.post(f"{S}/ops", json={"out": "a", "op": "randn", "args": [2, 3]})),
        _data(client.post(f"{S}/ops", json={"out": "b", "expr": "rand(4)"})),
        _data(client.post(f"{S}/ops", json={"out": "c", "expr": "randn_like(x)"})),
        _data(client.post(f"{S}/ops", json={"out": "d", "op": "rand_like", "args": ["x"]})),
    ]
    g = engine.Generator().manual_seed(0)
    x = engine.tensor([1.0, 2.0])
    expected = [
        engine.randn(2, 3, generator=g),
        engine.rand(4, generator=g),
        engine.randn_like(x, generator=g),
        engine.rand_like(x, generator=g),
    ]
    for got, want in zip(drawn, expected):
        np.testing.assert_array_equal(np.array(got, np.float32), want.data)


def test_reseeding_restarts_the_stream(client: SyncClient, session: str) -> None:
    step = {"out": "a", "op": "randn", "args": [5]}
    client.post(f"{S}/ops", json={"op": "manual_seed", "args": [7]})
    first = _data(client.post(f"{S}/ops", json=step))
    second = _data(client.post(f"{S}/ops", json=step))
    assert first != second
    r = client.post(f"{S}/batch", json={"steps": [{"op": "manual_seed", "args": [7]}, step]})
    assert r.status_code == 200, r.text
    assert r.json()["tensors"][0]["data"]["data"] == first


def test_sessions_have_their_own_generators(client: SyncClient, session: str) -> None:
    assert client.post("/v1/sessions", json={"name": "other"}).status_code == 201
    step = {"out": "a", "op": "rand", "args": [3]}
    for s in (S, "/v1/sessions/other"):
        client.post(f"{s}/ops", json=SEED)
    mine = _data(client.post(f"{S}/ops", json=step))
    _data(client.post(f"{S}/ops", json=step))  # draws in one session leave the other alone
    theirs = _data(client.post("/v1/sessions/other/ops", json=step))
    assert mine == theirs


def test_a_failing_batch_rolls_the_generator_back(client: SyncClient, session: str) -> None:
    step = {"out": "a", "op": "randn", "args": [4]}
    client.post(f"{S}/ops", json=SEED)
    body = {"steps": [step, {"op": "manual_seed", "args": [3]}, step, {"out": "b", "op": "nope"}]}
    assert_problem(client.post(f"{S}/batch", json=body), 422, "unknown_op")
    after = _data(client.post(f"{S}/ops", json=step))
    client.post(f"{S}/ops", json=SEED)
    assert after == _data(client.post(f"{S}/ops", json=step))


def test_an_explicit_seed_keyword_wins(client: SyncClient, session: str) -> None:
    step = {"out": "a", "op": "randn", "args": [3], "kwargs": {"seed": 5}}
    assert _data(client.post(f"{S}/ops", json=step)) == _data(client.post(f"{S}/ops", json=step))


def test_stateless_gradient_with_a_seed(client: SyncClient) -> None:
    body = {
        "tensors": {"x": {"data": [1.0, 2.0], "requires_grad": True}},
        "steps": [SEED, {"out": "y", "expr": "(x * randn(2)).sum()"}],
        "backward": {"tensors": "y"},
        "fetch": ["x.grad"],
    }
    r = client.post("/v1/gradient", json=body)
    assert r.status_code == 200, r.text
    want = engine.randn(2, generator=engine.Generator().manual_seed(0)).data
    np.testing.assert_array_equal(np.array(r.json()["values"]["x.grad"]["data"], np.float32), want)


@pytest.mark.parametrize(
    "body",
    [
        {"op": "manual_seed", "args": ["x"]},
        {"op": "manual_seed", "args": [1, 2]},
        {"op": "manual_seed", "args": []},
        {"op": "manual_seed", "args": [1.5]},
        {"op": "manual_seed", "args": [0], "kwargs": {"seed": 1}},
    ],
)
def test_bad_seeds(client: SyncClient, session: str, body: dict[str, Any]) -> None:
    assert_problem(client.post(f"{S}/ops", json=body), 422, "validation_error")
