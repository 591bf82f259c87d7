"""A failing batch changes nothing, arguments an op writes in place included: batch_norm
in training mode updates its running stats (its registration's ``writes`` fact), and a
later failing item must restore them, in memory and in what a store replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi import FastAPI
from svc_helpers import SyncClient, put

from engine import OPS
from service.app import create_app
from service.settings import Settings

X = [[1.0, 2.0, 0.5], [3.0, -1.0, 2.5], [0.0, 4.0, -2.0], [2.0, 1.0, 1.0]]
BN = {
    "out": "y",
    "op": "batch_norm",
    "args": ["x", "rm", "rv"],
    "kwargs": {"training": True, "momentum": 0.5},
}
FAILING = {"out": "bad", "expr": "x @ rm.reshape(1, 3)"}  # shape_mismatch


def _app(**kw: Any) -> FastAPI:
    return create_app(Settings(_env_file=None, **kw))  # type: ignore[call-arg]


def _setup(client: SyncClient, s: str) -> None:
    assert client.post("/v1/sessions", json={"name": s}).status_code == 201
    put(client, s, "x", X)
    put(client, s, "rm", [0.0, 0.0, 0.0])
    put(client, s, "rv", [1.0, 1.0, 1.0])


def _stats(client: SyncClient, s: str) -> dict[str, Any]:
    out = {}
    for name in ("rm", "rv"):
        r = client.get(f"/v1/sessions/{s}/tensors/{name}")
        assert r.status_code == 200, r.text
        out[name] = (r.json()["data"]["data"], r.json()["version"])
    return out


def _expected(torch: Any, batches: int) -> dict[str, list[float]]:
    rm, rv = torch.zeros(3), torch.ones(3)
    for _ in range(batches):
        torch.nn.functional.batch_norm(torch.tensor(X), rm, rv, training=True, momentum=0.5)
    return {"rm": rm.tolist(), "rv": rv.tolist()}


def test_batch_norm_registers_its_writes() -> None:
    assert OPS["batch_norm"].writes == ("running_mean", "running_var")
    assert OPS["instance_norm"].writes == ("running_mean", "running_var")
    assert OPS["add"].writes == ()


@pytest.mark.parametrize("form", ["op", "expr"])
def test_failed_batch_restores_running_stats(client: SyncClient, torch: Any, form: str) -> None:
    _setup(client, "bn")
    before = _stats(client, "bn")
    bn = (
        BN
        if form == "op"
        else {"out": "y", "expr": "batch_norm(x, rm, rv, training=True, momentum=0.5)"}
    )
    r = client.post("/v1/sessions/bn/batch", json={"steps": [bn, FAILING]})
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "shape_mismatch" and r.json()["step"] == 1
    assert _stats(client, "bn") == before
    # the same batch without the failing item updates them as PyTorch does
    r = client.post("/v1/sessions/bn/batch", json={"steps": [bn]})
    assert r.status_code == 200, r.text
    want = _expected(torch, 1)
    got = _stats(client, "bn")
    for name in ("rm", "rv"):
        np.testing.assert_allclose(got[name][0], want[name], rtol=1e-6)
        assert got[name][1] == before[name][1]  # PyTorch's kernel does not bump the version


def test_failed_batch_after_batch_norm_replays_from_sqlite(tmp_path: Path, torch: Any) -> None:
    """A second app on the same SQLite file stands for the restarted process: it replays
    the journal and must hold what the first answered, running stats included."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    with SyncClient(_app(store=url)) as client:
        _setup(client, "bn")
        assert client.post("/v1/sessions/bn/batch", json={"steps": [BN]}).status_code == 200
        r = client.post("/v1/sessions/bn/batch", json={"steps": [BN, FAILING]})
        assert r.status_code == 422, r.text
        live = _stats(client, "bn")
    with SyncClient(_app(store=url)) as client:
        assert _stats(client, "bn") == live
        assert client.post("/v1/sessions/bn/batch", json={"steps": [BN]}).status_code == 200
        replayed = _stats(client, "bn")
    want = _expected(torch, 2)
    for name in ("rm", "rv"):
        np.testing.assert_allclose(live[name][0], _expected(torch, 1)[name], rtol=1e-6)
        np.testing.assert_allclose(replayed[name][0], want[name], rtol=1e-6)
