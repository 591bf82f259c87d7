"""Batch programs: steps and backward/grad/zero_grad items in one all-or-nothing request."""

from __future__ import annotations

from typing import Any

import pytest
from svc_helpers import (
    TRAIN_ITERATION,
    SyncClient,
    assert_problem,
    put,
    regression_session,
    snapshot,
)

S = "/v1/sessions/nb"


def _batch(client: SyncClient, s: str, body: dict[str, Any], query: str = "") -> Any:
    return client.post(f"/v1/sessions/{s}/batch{query}", json=body)


def test_training_iteration_matches_separate_requests(client: SyncClient) -> None:
    """DESIGN's example: one request per iteration equals the four requests it replaces."""
    regression_session(client, "one")
    regression_session(client, "many")
    for _ in range(3):
        r = _batch(client, "one", {"steps": TRAIN_ITERATION, "fetch": ["loss", "w.grad"]})
        assert r.status_code == 200, r.text
        batch_loss = r.json()["values"]["loss"]
        assert r.json()["values"]["w.grad"] == {"data": [[0.0], [0.0]], "dtype": "float32"}
        assert [t["name"] for t in r.json()["tensors"]] == ["loss", "w"]

        many = "/v1/sessions/many"
        loss = client.post(f"{many}/ops", json=TRAIN_ITERATION[0]).json()["data"]
        assert (
            client.post(f"{many}/backward", json=TRAIN_ITERATION[1]["backward"]).status_code == 200
        )
        assert client.post(f"{many}/ops", json=TRAIN_ITERATION[2]).status_code == 201
        assert (
            client.post(f"{many}/zero_grad", json=TRAIN_ITERATION[3]["zero_grad"]).status_code
            == 200
        )
        assert batch_loss == loss
    assert snapshot(client, "one")["w"] == snapshot(client, "many")["w"]


def test_fetch_comes_with_data_whatever_values_says(client: SyncClient) -> None:
    """A fetched value is asked for by name: ``?values=false`` drops only the steps' data."""
    regression_session(client, "one")
    r = _batch(client, "one", {"steps": TRAIN_ITERATION[:2], "fetch": ["w.grad"]}, "?values=false")
    assert r.status_code == 200, r.text
    grad = r.json()["values"]["w.grad"]["data"]
    assert [g[0] for g in grad] == pytest.approx([-53 / 3, -68 / 3])
    assert "data" not in r.json()["tensors"][0]


def test_fetch_present_omits_step_values_unless_asked(client: SyncClient) -> None:
    regression_session(client, "one")
    r = _batch(client, "one", {"steps": TRAIN_ITERATION[:1], "fetch": ["loss"]})
    assert r.status_code == 200, r.text
    loss = r.json()["values"]["loss"]["data"]
    assert "data" not in r.json()["tensors"][0] and r.json()["tensors"][0]["shape"] == []
    r = _batch(client, "one", {"steps": TRAIN_ITERATION[:1], "fetch": ["loss"]}, "?values=true")
    assert r.json()["tensors"][0]["data"]["data"] == loss


def test_fetch_follows_encoding(client: SyncClient) -> None:
    regression_session(client, "one")
    r = _batch(client, "one", {"steps": [], "fetch": ["w"]}, "?encoding=base64&values=false")
    assert r.status_code == 200, r.text
    assert r.json()["values"]["w"]["shape"] == [2, 1] and "b64" in r.json()["values"]["w"]


def test_no_fetch_keeps_step_values(client: SyncClient, session: str) -> None:
    r = _batch(client, session, {"steps": [{"out": "y", "expr": "x * 2"}]})
    assert r.status_code == 200
    assert "data" in r.json()["tensors"][0]


def test_no_fetch_no_values(client: SyncClient, session: str) -> None:
    r = _batch(client, session, {"steps": [{"out": "y", "expr": "x * 2"}]})
    assert r.status_code == 200
    assert "values" not in r.json()


def test_failing_item_rolls_back_grads_and_freed_graph(client: SyncClient, session: str) -> None:
    """A backward that freed the graph and accumulated grads is undone by a later failure."""
    client.post(f"{S}/ops", json={"out": "loss", "expr": "(x ** 2).sum()"})
    assert client.post(f"{S}/backward", json={"tensors": "loss", "retain_graph": True}).is_success
    before = snapshot(client, session)
    body = {
        "steps": [
            {"backward": {"tensors": "loss"}},  # accumulates and frees PowBackward0
            {"zero_grad": {}},
            {"out": "z", "expr": "x * 3"},
            {"out": "bad", "op": "nope", "args": ["x"]},
        ]
    }
    problem = assert_problem(_batch(client, session, body), 422, "unknown_op")
    assert problem["step"] == 3
    assert snapshot(client, session) == before  # x.grad as it was, no 'z'
    # the graph was not left freed: a backward through it still runs, and accumulates
    r = client.post(f"{S}/backward", json={"tensors": "loss"})
    assert r.status_code == 200, r.text
    assert r.json()["grads"]["x"]["data"] == [4.0, 8.0]


def test_second_backward_in_a_batch_is_graph_freed(client: SyncClient, session: str) -> None:
    before = snapshot(client, session)
    body = {
        "steps": [
            {"out": "loss", "expr": "(x ** 2).sum()"},
            {"backward": {"tensors": "loss"}},
            {"backward": {"tensors": "loss"}},
        ]
    }
    problem = assert_problem(_batch(client, session, body), 409, "graph_freed")
    assert problem["step"] == 2
    assert "retain_graph" in problem["hint"]
    assert snapshot(client, session) == before


def test_grad_item_binds_out_and_fetch_reads_it(client: SyncClient, session: str) -> None:
    body = {
        "steps": [
            {"out": "y", "expr": "(x ** 3).sum()"},
            {"grad": {"outputs": ["y"], "inputs": ["x"], "create_graph": True, "out": ["gx"]}},
            {"out": "g2", "expr": "gx.sum()"},
            {"grad": {"outputs": "g2", "inputs": "x", "out": ["ggx"]}},
        ],
        "fetch": ["gx", "ggx", "x.grad"],
    }
    r = _batch(client, session, body)
    assert r.status_code == 200, r.text
    values = r.json()["values"]
    assert values["gx"]["data"] == [3.0, 12.0]  # 3 x^2
    assert values["ggx"]["data"] == [6.0, 12.0]  # 6 x
    assert values["x.grad"] is None  # grad leaves .grad untouched
    assert [t["name"] for t in r.json()["tensors"]] == ["y", "gx", "g2", "ggx"]


def test_zero_grad_item_set_to_none(client: SyncClient, session: str) -> None:
    body = {
        "steps": [
            {"out": "y", "expr": "(x * x).sum()"},
            {"backward": {"tensors": "y"}},
            {"zero_grad": {"tensors": ["x"], "set_to_none": True}},
        ],
        "fetch": ["x.grad"],
    }
    r = _batch(client, session, body)
    assert r.status_code == 200, r.text
    assert r.json()["values"] == {"x.grad": None}


def test_fetch_of_unknown_tensor_rolls_back(client: SyncClient, session: str) -> None:
    before = snapshot(client, session)
    body = {
        "steps": [{"out": "y", "expr": "(x * x).sum()"}, {"backward": {"tensors": "y"}}],
        "fetch": ["nope"],
    }
    assert_problem(_batch(client, session, body), 404, "tensor_not_found")
    assert snapshot(client, session) == before


@pytest.mark.parametrize(
    ("item", "status", "code"),
    [
        ({"backward": {"tensors": "x", "surprise": 1}}, 422, "validation_error"),
        ({"backward": {"tensors": "x"}, "zero_grad": {}}, 422, "validation_error"),
        ({"grad": {"outputs": "x"}}, 422, "validation_error"),
        ({"backward": {"tensors": "__x__"}}, 422, "invalid_name"),
    ],
)
def test_malformed_items(
    client: SyncClient, session: str, item: dict[str, Any], status: int, code: str
) -> None:
    assert_problem(_batch(client, session, {"steps": [item]}), status, code)


def test_bad_fetch_key(client: SyncClient, session: str) -> None:
    r = _batch(client, session, {"steps": [], "fetch": ["x.data"]})
    assert_problem(r, 422, "invalid_name")


@pytest.mark.parametrize(
    ("item", "status", "code"),
    [
        ({"backward": {"tensors": "x"}}, 422, "not_scalar"),
        ({"backward": {"tensors": "missing"}}, 404, "tensor_not_found"),
        ({"grad": {"outputs": "s", "inputs": "c"}}, 422, "no_grad_fn"),
    ],
)
def test_verb_errors_carry_the_index(
    client: SyncClient, session: str, item: dict[str, Any], status: int, code: str
) -> None:
    put(client, session, "c", [1.0])
    steps = [{"out": "s", "expr": "x.sum()"}, item]
    problem = assert_problem(_batch(client, session, {"steps": steps}), status, code)
    assert problem["step"] == 1
