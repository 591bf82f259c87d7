"""Programs live with their session: stored, replaced, run and deleted programs are
rebuilt from the journal (and from checkpoints) exactly, runs included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from store_helpers import answer
from svc_helpers import SyncClient

from service.app import create_app
from service.settings import Settings

S = "/v1/sessions/nb"
TRAIN = [
    {"out": "loss", "expr": "((X @ w - Y) ** 2).mean()"},
    {"backward": {"tensors": "loss"}},
    {"out": "w", "expr": "w - 0.01 * w.grad", "assign": True},
    {"zero_grad": {"tensors": ["w"]}},
]
SCRIPT: list[Any] = [
    ("POST", "/v1/sessions", {"name": "nb"}),
    ("PUT", f"{S}/tensors/X", {"data": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}),
    ("PUT", f"{S}/tensors/Y", {"data": [[1.0], [2.0], [3.0]]}),
    ("PUT", f"{S}/tensors/w", {"data": [[0.5], [-0.5]], "requires_grad": True}),
    ("PUT", f"{S}/programs/train", {"steps": TRAIN, "fetch": ["loss"]}),
    ("POST", f"{S}/programs/train/run", {"repeat": 7}),
    ("DELETE", f"{S}/tensors/loss", None),  # no graph held: checkpoints keep the programs
    (
        "PUT",
        f"{S}/programs/noise",
        {"steps": [{"op": "manual_seed", "args": [3]}, {"out": "n", "expr": "randn(2)"}]},
    ),  # fmt: skip
    ("POST", f"{S}/programs/noise/run", {"repeat": 2, "fetch": ["n"]}),
    ("POST", f"{S}/programs/train/run", {"repeat": 5, "fetch": ["w", "loss"]}),
    ("PUT", f"{S}/programs/fwd", {"steps": [{"out": "p", "expr": "(X @ w).sum()"}]}),
    ("POST", f"{S}/programs/fwd/jacobian", {"of": ["p"], "wrt": ["w"]}),
    ("PUT", f"{S}/programs/train", {"steps": TRAIN[:1]}),
    ("POST", f"{S}/programs/train/run", {"repeat": 3, "fetch": ["loss"]}),
    ("DELETE", f"{S}/programs/noise", None),
    ("GET", f"{S}/programs", None),
    ("GET", S, None),
    ("POST", f"{S}/programs/noise/run", {}),
    ("GET", f"{S}/tensors/w", None),
]


def _app(**kw: Any) -> FastAPI:
    return create_app(Settings(_env_file=None, **kw))  # type: ignore[call-arg]


def _run(app: FastAPI, requests: list[Any]) -> list[tuple[int, Any]]:
    out = []
    with SyncClient(app) as client:
        for method, path, body in requests:
            r = client.request(method, path, json=body)
            got = r.json() if r.content else None
            if isinstance(got, dict) and "created" in got:  # the session's times differ
                got = {k: v for k, v in got.items() if k not in ("created", "last_used", "expires")}
            out.append(answer(r.status_code, got))
    return out


@pytest.fixture(scope="module")
def whole() -> list[tuple[int, Any]]:
    got = _run(_app(), SCRIPT)
    assert [s for s, _ in got].count(404) == 1 and got[-2][0] == 404
    return got


@pytest.mark.parametrize("every", [1000, 2])
@pytest.mark.parametrize("cut", [5, 6, 8, 9, 10, 13, 14, 15, 17])
def test_programs_rebuilt_from_sqlite(
    tmp_path: Path, whole: list[tuple[int, Any]], cut: int, every: int
) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    got = _run(_app(store=url, checkpoint_records=every), SCRIPT[:cut])
    got += _run(_app(store=url, checkpoint_records=every), SCRIPT[cut:])
    for i, (a, b) in enumerate(zip(got, whole)):
        assert a == b, (i, SCRIPT[i])


@pytest.mark.parametrize("cut", [6, 10, 14])
def test_programs_rebuilt_from_redis(
    redis_url: str, whole: list[tuple[int, Any]], cut: int
) -> None:
    got = _run(_app(store=redis_url, checkpoint_records=3), SCRIPT[:cut])
    got += _run(_app(store=redis_url, checkpoint_records=3, lease_seconds=0.1), SCRIPT[cut:])
    for i, (a, b) in enumerate(zip(got, whole)):
        assert a == b, (i, SCRIPT[i])
