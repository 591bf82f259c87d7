"""A session rebuilt from its journal answers exactly as the uninterrupted one (in-process:
a second app on the same SQLite file stands for the restarted process)."""

from __future__ import annotations

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
