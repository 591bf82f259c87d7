"""Programs: stored once (checked and compiled), run by name, all or nothing per iteration."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from svc_helpers import (
    TRAIN_ITERATION,
    SyncClient,
    assert_problem,
    make_settings,
    regression_session,
    snapshot,
)

from service.app import create_app
from service.session.manager import SessionManager

P = "/v1/sessions/one/programs"


@pytest.fixture
def one(client: SyncClient) -> SyncClient:
    regression_session(client, "one")
    return client


def _events(text: str) -> list[tuple[str, Any]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], orjson.loads(lines["data"])))
    return out


def test_put_answers_reads_binds_pure(one: SyncClient) -> None:
    r = one.put(f"{P}/train", json={"steps": TRAIN_ITERATION, "fetch": ["loss"]})
    assert r.status_code == 201, r.text
    assert r.json() == {"name": "train", "steps": 4, "reads": ["X", "w", "Y"],
                        "binds": ["loss", "w"], "pure": False, "fetch": ["loss"]}  # fmt: skip
    r = one.put(f"{P}/train", json={"steps": TRAIN_ITERATION[:1]})
    assert r.status_code == 200 and r.json()["pure"] is True and r.json()["binds"] == ["loss"]
    info = one.get("/v1/sessions/one").json()
    assert [p["name"] for p in info["programs"]] == ["train"]
    assert one.get(P).json()["programs"][0]["steps"] == 1
    shown = one.get(f"{P}/train").json()
    assert shown["items"] == TRAIN_ITERATION[:1]


@pytest.mark.parametrize(
    ("step", "status", "code"),
    [
        ({"out": "y", "expr": "x +* 2"}, 422, "expr_invalid"),
        ({"out": "y", "expr": "nosuch(x)"}, 422, "unknown_op"),
        ({"out": "y", "op": "nosuch", "args": ["x"]}, 422, "unknown_op"),
        ({"out": "y", "op": "pow", "args": ["x", 2, 3, 4]}, 422, "bad_arguments"),
        ({"out": "y", "expr": "x.sum(1, 2, 3, 4, 5)"}, 422, "bad_arguments"),
        ({"out": "y", "expr": "x.nosuch_()"}, 422, "unknown_op"),
    ],
)
def test_put_checks_every_item_now(
    one: SyncClient, step: dict[str, Any], status: int, code: str
) -> None:
    """An item that could never run is refused when stored, with its index; nothing kept."""
    r = one.put(f"{P}/bad", json={"steps": [{"out": "a", "expr": "X * 2"}, step]})
    body = assert_problem(r, status, code)
    assert body["step"] == 1
    assert one.get(P).json()["programs"] == []


def test_put_bad_fetch_and_body(one: SyncClient) -> None:
    r = one.put(f"{P}/p", json={"steps": TRAIN_ITERATION, "fetch": ["w.data"]})
    assert_problem(r, 422, "invalid_name")
    assert_problem(one.put(f"{P}/p", json={"steps": []}), 422, "validation_error")
    assert_problem(one.put(f"{P}/1bad", json={"steps": TRAIN_ITERATION}), 422, "invalid_name")
    assert_problem(one.get(f"{P}/nope"), 404, "program_not_found")
    assert_problem(one.delete(f"{P}/nope"), 404, "program_not_found")
    assert_problem(one.post(f"{P}/nope/run"), 404, "program_not_found")


def test_run_equals_batches(client: SyncClient) -> None:
    """repeat=n is n batches of the same items."""
    regression_session(client, "one")
    regression_session(client, "many")
    assert client.put(f"{P}/train", json={"steps": TRAIN_ITERATION}).status_code == 201
    r = client.post(f"{P}/train/run", json={"repeat": 5, "fetch": ["loss", "w"]})
    assert r.status_code == 200, r.text
    assert r.json()["iterations"] == 5
    for _ in range(5):
        b = client.post(
            "/v1/sessions/many/batch", json={"steps": TRAIN_ITERATION, "fetch": ["loss"]}
        )
        assert b.status_code == 200
    assert r.json()["values"]["loss"] == b.json()["values"]["loss"]
    assert snapshot(client, "one")["w"] == snapshot(client, "many")["w"]
    assert r.json()["values"]["w"]["data"] == snapshot(client, "many")["w"]["data"]["data"]


def test_run_history_every(one: SyncClient) -> None:
    slow = [
        *TRAIN_ITERATION[:2],
        {"out": "w", "expr": "w - 0.01 * w.grad", "assign": True},
        TRAIN_ITERATION[3],
    ]
    one.put(f"{P}/train", json={"steps": slow, "fetch": ["loss"]})
    r = one.post(f"{P}/train/run", json={"repeat": 6, "every": 2})
    assert r.status_code == 200, r.text
    losses = [v["data"] for v in r.json()["history"]["loss"]]
    assert len(losses) == 3 and losses[0] > losses[1] > losses[2]
    assert r.json()["values"]["loss"]["data"] == losses[-1]


def test_run_default_and_values_options(one: SyncClient) -> None:
    one.put(f"{P}/train", json={"steps": TRAIN_ITERATION, "fetch": ["loss"]})
    r = one.post(f"{P}/train/run")
    assert r.status_code == 200 and r.json()["iterations"] == 1
    r = one.post(f"{P}/train/run?encoding=base64", json={"fetch": ["w.grad"]})
    assert r.json()["values"]["w.grad"]["shape"] == [2, 1] and "b64" in r.json()["values"]["w.grad"]


def test_failing_iteration_keeps_the_earlier_ones(client: SyncClient) -> None:
    """Iteration 2 fails (w grew past the check): iterations 0-1 are kept, 2 rolled back."""
    regression_session(client, "one")
    regression_session(client, "many")
    steps = [
        {"out": "w", "expr": "w + 1", "assign": True},
        {"out": "ok", "expr": "w.sum() > 5"},
        {"out": "picked", "expr": "X[ok.long() * 5]"},
    ]
    client.put(f"{P}/p", json={"steps": steps})
    r = client.post(f"{P}/p/run", json={"repeat": 10})
    body = assert_problem(r, 422, "index_out_of_range")
    assert body["iteration"] == 2 and body["step"] == 2
    w = snapshot(client, "one")["w"]["data"]["data"]
    assert w == [[2.5], [1.5]]  # two iterations kept: 0.5 + 2, -0.5 + 2


def test_run_limits_and_fetch_checked_first(one: SyncClient) -> None:
    one.put(f"{P}/train", json={"steps": TRAIN_ITERATION})
    before = snapshot(one, "one")
    r = one.post(f"{P}/train/run", json={"repeat": 10**9})
    assert_problem(r, 413, "limit_exceeded")
    r = one.post(f"{P}/train/run", json={"fetch": ["nope"]})
    assert_problem(r, 404, "tensor_not_found")
    assert_problem(one.post(f"{P}/train/run", json={"repeat": 0}), 422, "validation_error")
    assert snapshot(one, "one") == before


def test_program_count_limit() -> None:
    app = create_app(make_settings(max_programs=2))
    app.state.sessions = SessionManager(app.state.settings)
    with SyncClient(app) as c:
        c.post("/v1/sessions", json={"name": "s"})
        for name in ("a", "b"):
            assert c.put(f"/v1/sessions/s/programs/{name}", json={"steps": [{"out": "y", "expr": "1 + 1"}]}).status_code == 201  # fmt: skip
        r = c.put("/v1/sessions/s/programs/c", json={"steps": [{"out": "y", "expr": "1 + 1"}]})
        assert_problem(r, 429, "limit_exceeded")
        assert c.put("/v1/sessions/s/programs/a", json={"steps": [{"out": "z", "expr": "2"}]}).status_code == 200  # fmt: skip


def test_delete_program(one: SyncClient) -> None:
    one.put(f"{P}/train", json={"steps": TRAIN_ITERATION})
    assert one.delete(f"{P}/train").status_code == 204
    assert one.get(P).json()["programs"] == []


def test_sse_progress_then_result(one: SyncClient) -> None:
    one.put(f"{P}/train", json={"steps": TRAIN_ITERATION, "fetch": ["loss"]})
    r = one.post(f"{P}/train/run", json={"repeat": 6, "every": 2},
                 headers={"Accept": "text/event-stream"})  # fmt: skip
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = _events(r.text)
    assert [k for k, _ in events] == ["progress", "progress", "result"]
    assert [d["iteration"] for _, d in events[:2]] == [2, 4]
    assert events[-1][1]["iterations"] == 6
    assert [h["data"] for h in events[-1][1]["history"]["loss"]][:2] == [
        d["values"]["loss"]["data"] for _, d in events[:2]
    ]


def test_sse_error_event(one: SyncClient) -> None:
    one.put(f"{P}/p", json={"steps": [{"out": "w", "expr": "w + 1", "assign": True},
                                      {"out": "z", "expr": "X[(w.sum() > 3).long() * 9]"}]})  # fmt: skip
    r = one.post(f"{P}/p/run", json={"repeat": 5, "every": 1},
                 headers={"Accept": "text/event-stream"})  # fmt: skip
    events = _events(r.text)
    assert [k for k, _ in events] == ["progress", "error"]
    problem = events[-1][1]
    assert problem["code"] == "index_out_of_range" and problem["iteration"] == 1
    assert problem["step"] == 1


def test_sse_unknown_program_is_a_plain_problem(one: SyncClient) -> None:
    r = one.post(f"{P}/nope/run", headers={"Accept": "text/event-stream"})
    assert_problem(r, 404, "program_not_found")


def test_heavy_iterations_run_in_a_worker_thread() -> None:
    """With every iteration over the offload threshold, chunks run in a worker thread:
    the same iterations, the same failure bookkeeping."""
    app = create_app(make_settings(offload_elements=0))
    app.state.sessions = SessionManager(app.state.settings)
    with SyncClient(app) as c:
        regression_session(c, "one")
        regression_session(c, "many")
        c.put(f"{P}/train", json={"steps": TRAIN_ITERATION})
        r = c.post(f"{P}/train/run", json={"repeat": 4, "every": 2, "fetch": ["w"]})
        assert r.status_code == 200 and len(r.json()["history"]["w"]) == 2, r.text
        for _ in range(4):
            assert (
                c.post("/v1/sessions/many/batch", json={"steps": TRAIN_ITERATION}).status_code
                == 200
            )
        assert snapshot(c, "one")["w"] == snapshot(c, "many")["w"]
        regression_session(c, "two")
        two = "/v1/sessions/two/programs"
        c.put(f"{two}/p", json={"steps": [{"out": "w", "expr": "w + 1", "assign": True},
                                          {"out": "z", "expr": "X[(w.sum() > 3).long() * 9]"}]})  # fmt: skip
        body = assert_problem(c.post(f"{two}/p/run", json={"repeat": 5}), 422, "index_out_of_range")
        assert body["iteration"] == 1 and body["step"] == 1


def test_deadline_applies_per_iteration() -> None:
    """An iteration past GRADSERVE_REQUEST_SECONDS is stopped and rolled back, as any
    failure: the problem carries the iteration."""
    app = create_app(make_settings())
    app.state.sessions = SessionManager(app.state.settings)
    with SyncClient(app) as c:
        regression_session(c, "one")
        before = snapshot(c, "one")
        c.put(f"{P}/train", json={"steps": TRAIN_ITERATION})
        app.state.settings = make_settings(request_seconds=1e-9)
        body = assert_problem(
            c.post(f"{P}/train/run", json={"repeat": 3}), 503, "deadline_exceeded"
        )
        assert body["iteration"] == 0
        app.state.settings = make_settings()
        assert snapshot(c, "one") == before


COMPILED_FORMS = [
    {"out": "a", "expr": "2 - X * w.sum()"},  # reflected sub (rsub), a call inside
    {"out": "b", "expr": "2 / (X + 1)"},  # reflected div: reciprocal then mul
    {"out": "c", "expr": "1 < X.mean(dim=1, keepdim=True)"},  # mirrored, method with keywords
    {"out": "d", "expr": "(X > 1) & (X < 5)"},  # logical operator: the general path
    {"out": "e", "expr": "X[1] * 3 + relu(Y - 2)"},  # indexing: the general path
    {"out": "f", "expr": "w.data ** 2 + w.grad"},  # .data, .grad
    {"out": "g", "op": "mul", "args": ["X", 0.5]},  # a plain op step
    {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
]


def test_compiled_forms_equal_batches(client: SyncClient) -> None:
    """Each form an expression compiles to (or falls back from) gives what the same items
    give as a /batch, which parses and dispatches them per request."""
    regression_session(client, "one")
    regression_session(client, "many")
    seed = [{"out": "loss", "expr": "((X @ w - Y) ** 2).mean()"},
            {"backward": {"tensors": "loss"}}]  # fmt: skip
    names = [s["out"] for s in COMPILED_FORMS]
    assert client.put(f"{P}/p", json={"steps": [*seed, *COMPILED_FORMS]}).status_code == 201
    r = client.post(f"{P}/p/run", json={"repeat": 2, "fetch": names})
    assert r.status_code == 200, r.text
    for _ in range(2):
        b = client.post("/v1/sessions/many/batch?values=true",
                        json={"steps": [*seed, *COMPILED_FORMS], "fetch": names})  # fmt: skip
        assert b.status_code == 200, b.text
    assert r.json()["values"] == b.json()["values"]


def test_compiled_errors_name_step_and_position(one: SyncClient) -> None:
    """A missing tensor in a compiled expression: 404 with its step and position, and
    the iteration rolled back."""
    one.put(f"{P}/p", json={"steps": [{"out": "w", "expr": "w + 1", "assign": True},
                                      {"out": "z", "expr": "X * 2 + nosuch"}]})  # fmt: skip
    before = snapshot(one, "one")
    body = assert_problem(one.post(f"{P}/p/run", json={"repeat": 3}), 404, "tensor_not_found")
    assert body["iteration"] == 0 and body["step"] == 1
    assert body["position"] == {"line": 1, "col": 9}
    assert snapshot(one, "one") == before
