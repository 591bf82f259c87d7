"""A session rebuilt from its journal answers exactly as the uninterrupted one (in-process:
a second app on the same SQLite file stands for the restarted process)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from store_helpers import answer, script
from svc_helpers import SyncClient

from service.app import create_app
from service.settings import Settings


def _app(**kw: Any) -> FastAPI:
    return create_app(Settings(_env_file=None, **kw))  # type: ignore[call-arg]


def _run(app: FastAPI, requests: list[Any]) -> list[tuple[int, Any]]:
    out = []
    with SyncClient(app) as client:
        for method, path, body in requests:
            r = client.request(method, path, json=body)
            out.append(answer(r.status_code, r.json() if r.content else None))
    return out


@pytest.mark.parametrize("every", [1000, 1])
@pytest.mark.parametrize("cut", [1, 5, 8, 11, 17, 21, 23, 27, 33, 40, 43])
def test_rebuilt_session_answers_the_same(
    tmp_path: Path, reference: list[tuple[int, Any]], cut: int, every: int
) -> None:
    steps = script()
    url = f"sqlite:///{tmp_path / 'g.db'}"
    first = _run(_app(store=url, checkpoint_records=every), steps[:cut])
    second = _run(_app(store=url, checkpoint_records=every), steps[cut:])
    for i, (got, want) in enumerate(zip(first + second, reference)):
        assert got == want, (i, steps[i])
    assert any(status >= 400 for status, _ in reference)  # the script checks errors too


@pytest.mark.parametrize("cut", [4, 17, 33])
def test_rebuilt_from_redis_answers_the_same(
    redis_url: str, reference: list[tuple[int, Any]], cut: int
) -> None:
    steps = script()
    first = _run(_app(store=redis_url, checkpoint_records=3), steps[:cut])
    second = _run(_app(store=redis_url, checkpoint_records=3, lease_seconds=0.1), steps[cut:])
    for i, (got, want) in enumerate(zip(first + second, reference)):
        assert got == want, (i, steps[i])


def test_graph_lost_past_journal_max_bytes(tmp_path: Path) -> None:
    """Past GRADSERVE_JOURNAL_MAX_BYTES with a graph held, the graphs are dropped at once
    (leaves, grads, names, versions, grad_fn names kept) and a backward through them answers
    409 graph_lost; the restarted process answers exactly the same."""
    s = "/v1/sessions/nb"
    steps: list[Any] = [
        ("POST", "/v1/sessions", {"name": "nb"}),
        ("PUT", f"{s}/tensors/x", {"data": [1.0, 2.0], "requires_grad": True}),
        ("POST", f"{s}/ops", {"out": "y", "expr": "x * x"}),
        ("POST", f"{s}/ops", {"out": "z", "expr": "y.sum()"}),
        ("POST", f"{s}/backward", {"tensors": "z", "retain_graph": True}),
        *[("POST", f"{s}/ops", {"out": f"pad{i}", "expr": "x + 1"}) for i in range(12)],
        ("GET", f"{s}/tensors/z", None),
        ("GET", f"{s}/tensors/x", None),
        ("POST", f"{s}/backward", {"tensors": "z"}),
        ("POST", f"{s}/grad", {"outputs": "z", "inputs": "x"}),
        ("POST", f"{s}/ops", {"out": "w", "expr": "(y * 3).sum()"}),
        ("POST", f"{s}/backward", {"tensors": "w"}),
        ("GET", f"{s}/tensors/x", None),
        ("POST", f"{s}/ops", {"out": "v", "expr": "(x ** 3).sum()"}),
        ("POST", f"{s}/backward", {"tensors": "v"}),
        ("GET", f"{s}/tensors/x", None),
    ]
    url = f"sqlite:///{tmp_path / 'g.db'}"
    whole = _run(_app(store=url, journal_max_bytes=600), steps)
    z, x = whole[17], whole[18]
    assert z == (200, {"name": "z", "shape": [], "dtype": "float32", "requires_grad": True,
                       "is_leaf": False, "grad_fn": "SumBackward0", "retains_grad": False,
                       "version": 0, "has_grad": False, "data": {"data": 5.0, "dtype": "float32"},
                       "grad": None})  # fmt: skip
    assert x[1]["grad"]["data"] == [2.0, 4.0]
    for status, body in (whole[19], whole[20], whole[22]):
        assert (status, body["code"]) == (409, "graph_lost"), body
        assert "'z'" in body["detail"] or "'y'" in body["detail"]
        assert body["hint"].startswith("recompute")
    assert whole[23][1]["grad"]["data"] == [2.0, 4.0]  # the failed backwards changed nothing
    assert whole[-1][1]["grad"]["data"] == [5.0, 16.0]  # a new graph from the leaves works
    url2 = f"sqlite:///{tmp_path / 'h.db'}"
    for cut in (3, 18, 20, 24):
        got = _run(_app(store=url2, journal_max_bytes=600), steps[:cut])
        got += _run(_app(store=url2, journal_max_bytes=600), steps[cut:])
        assert got == whole, cut
        (tmp_path / "h.db").unlink()


def test_random_draws_replay_draw_for_draw(tmp_path: Path) -> None:
    """rand/randn draw from the session's own generator (PyTorch's default seed, then its
    manual_seed steps), so a rebuilt session draws the same values and keeps the graphs
    that saved them: every answer after a restart at any cut equals the uninterrupted run."""
    s = "/v1/sessions/nb"
    steps: list[Any] = [
        ("POST", "/v1/sessions", {"name": "nb"}),
        ("PUT", f"{s}/tensors/x", {"data": [1.0, 2.0, 3.0], "requires_grad": True}),
        ("POST", f"{s}/ops", {"out": "w", "op": "randn", "args": [3], "kwargs": {"requires_grad": True}}),
        ("POST", f"{s}/ops", {"out": "y", "expr": "(x * randn(3)).sum()"}),
        ("POST", f"{s}/ops", {"out": "z", "expr": "(w * x).sum()"}),
        ("POST", f"{s}/ops", {"op": "manual_seed", "args": [7]}),
        ("POST", f"{s}/ops", {"out": "k", "op": "randn", "args": [20]}),
        ("POST", f"{s}/backward", {"tensors": "z"}),
        ("GET", f"{s}/tensors/w", None),
        ("GET", f"{s}/tensors/x", None),
        ("GET", f"{s}/tensors/k", None),
        ("POST", f"{s}/backward", {"tensors": "y"}),
        ("GET", f"{s}/tensors/x", None),
        ("POST", f"{s}/ops", {"out": "r", "op": "rand", "args": [2]}),
    ]  # fmt: skip
    whole = _run(_app(store=f"sqlite:///{tmp_path / 'g.db'}"), steps)
    assert whole[11][0] == 200  # the graph that saved a draw still runs
    assert whole[9][1]["grad"]["data"] == whole[8][1]["data"]["data"]  # dz/dx = w
    for cut in (3, 4, 6, 7, 12):
        url = f"sqlite:///{tmp_path / f'cut{cut}.db'}"
        got = _run(_app(store=url), steps[:cut]) + _run(_app(store=url), steps[cut:])
        assert got == whole, cut


def test_owners_are_kept_as_digests(tmp_path: Path) -> None:
    """The store never holds an API key; after a restart each key still sees only its own
    sessions (another key's is a 404, also in the listing)."""
    db = tmp_path / "g.db"
    keys = "k-alpha-secret,k-beta-secret"
    app = _app(store=f"sqlite:///{db}", api_keys=keys)
    alpha = {"Authorization": "Bearer k-alpha-secret"}
    beta = {"Authorization": "Bearer k-beta-secret"}
    with SyncClient(app) as c:
        assert c.post("/v1/sessions", json={"name": "mine"}, headers=alpha).status_code == 201
        assert (
            c.put("/v1/sessions/mine/tensors/x", json={"data": [1.0]}, headers=alpha).status_code
            == 201
        )
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"k-alpha-secret" not in raw and b"k-beta-secret" not in raw
    with SyncClient(_app(store=f"sqlite:///{db}", api_keys=keys)) as c:
        assert c.get("/v1/sessions/mine/tensors/x", headers=alpha).status_code == 200
        assert c.get("/v1/sessions/mine/tensors/x", headers=beta).status_code == 404
        assert c.get("/v1/sessions", headers=beta).json()["sessions"] == []
        assert [s["name"] for s in c.get("/v1/sessions", headers=alpha).json()["sessions"]] == [
            "mine"
        ]
        assert c.delete("/v1/sessions/mine", headers=beta).status_code == 404


def test_replay_keeps_what_was_acknowledged_under_lowered_limits(tmp_path: Path) -> None:
    """Records passed the size limits when they were acknowledged: a restart with lower
    limits rebuilds the session as it was (no record refused), and only new requests meet
    the new limits."""
    s = "/v1/sessions/big"
    url = f"sqlite:///{tmp_path / 'g.db'}"
    first = [
        ("POST", "/v1/sessions", {"name": "big"}),
        ("PUT", f"{s}/tensors/x", {"data": [1.0, 2.0, 3.0], "requires_grad": True}),
        ("POST", f"{s}/ops?values=false", {"out": "y", "expr": "(x.reshape(3, 1) * x).repeat(40, 40)"}),
        ("POST", f"{s}/ops", {"out": "z", "expr": "y.sum()"}),
    ]  # fmt: skip
    done = _run(_app(store=url), first)
    assert [status for status, _ in done] == [201, 201, 201, 201], done
    later = [
        ("GET", f"{s}/tensors/y?values=false", None),
        ("POST", f"{s}/backward", {"tensors": "z"}),
        ("POST", f"{s}/ops", {"out": "w", "expr": "y * 2"}),
    ]
    again = _run(_app(store=url, max_tensor_elements=100, max_session_bytes=4096), later)
    assert again[0] == (200, done[2][1])  # the 14,400-element graph is back, as it was
    assert again[1][0] == 507 and again[1][1]["code"] == "limit_exceeded", again[1]
    assert again[2][0] == 413 and again[2][1]["code"] == "limit_exceeded", again[2]


def _damaged(tmp_path: Path, damage: str) -> Any:
    """Three acknowledged puts on SQLite, the file damaged as ``damage`` says, then the
    session read by a fresh process (app)."""

    url = f"sqlite:///{tmp_path / 'g.db'}"
    s = "/v1/sessions/nb"
    steps: list[Any] = [("POST", "/v1/sessions", {"name": "nb"})]
    steps += [("PUT", f"{s}/tensors/t{i}", {"data": [float(i)] * 4}) for i in range(3)]
    assert all(status < 300 for status, _ in _run(_app(store=url), steps))
    db = sqlite3.connect(tmp_path / "g.db")
    if damage == "missing tail":
        db.execute("DELETE FROM records WHERE seq = (SELECT max(seq) FROM records)")
    elif damage in ("torn tail", "flipped byte"):
        seq, body = db.execute("SELECT seq, body FROM records ORDER BY seq DESC").fetchone()
        body = bytearray(body)
        if damage == "torn tail":
            del body[-9:]
        else:
            body[-6] ^= 0x01  # a bit of the payload
        db.execute("UPDATE records SET body = ? WHERE seq = ?", (bytes(body), seq))
    elif damage == "swapped records":
        db.execute("UPDATE records SET seq = -seq WHERE seq IN (2, 3)")
        db.execute("UPDATE records SET seq = CASE seq WHEN -2 THEN 3 ELSE 2 END WHERE seq < 0")
    db.commit()
    db.close()
    return _run(_app(store=url), [("GET", s, None)])[0]


@pytest.mark.parametrize("damage", ["missing tail", "torn tail", "flipped byte", "swapped records"])
def test_a_damaged_journal_is_corrupt_never_served_short(tmp_path: Path, damage: str) -> None:
    status, body = _damaged(tmp_path, damage)
    assert status == 409 and body["code"] == "session_corrupt", body


def test_an_undamaged_journal_serves_every_change(tmp_path: Path) -> None:
    status, body = _damaged(tmp_path, "none")
    assert status == 200 and [t["name"] for t in body["tensors"]] == ["t0", "t1", "t2"]
