"""``kill -9`` of a real server at points of a scripted session, then a restart (or another
replica): every later answer equals the uninterrupted run's."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from store_helpers import Server, http_run, memory_run, same, script

pytestmark = pytest.mark.integration


def _random_cuts(seed: int) -> tuple[int, ...]:
    """Three kill points drawn (seeded, so a failure reproduces) from the whole script."""
    return tuple(sorted(random.Random(seed).sample(range(1, len(script())), 3)))


@pytest.mark.parametrize("cuts", [(6, 20, 31), (11, 25, 42), _random_cuts(1), _random_cuts(2)])
def test_sqlite_survives_kill_between_requests(
    tmp_path: Path, servers: list[Server], reference: list[Any], cuts: tuple[int, ...]
) -> None:
    env = {"GRADSERVE_STORE": f"sqlite:///{tmp_path / 'g.db'}", "GRADSERVE_CHECKPOINT_RECORDS": "4"}
    steps = script()
    got: list[Any] = []
    bounds = [0, *cuts, len(steps)]
    for lo, hi in zip(bounds, bounds[1:]):
        server = Server(env, tmp_path / "log").start()
        servers.append(server)
        got += http_run(server.url, steps[lo:hi])
        server.kill()
    same(got, reference)


def test_sqlite_kill_while_a_request_runs(tmp_path: Path, servers: list[Server]) -> None:
    """The request in flight is either kept (and then answered as kept) or not at all."""
    env = {"GRADSERVE_STORE": f"sqlite:///{tmp_path / 'g.db'}"}
    n = 700
    setup = [
        ("POST", "/v1/sessions", {"name": "nb"}),
        ("PUT", "/v1/sessions/nb/tensors/a",
         {"data": [[(i * 7 + j) % 5 / 5 for j in range(n)] for i in range(n)],
          "dtype": "float64", "requires_grad": True}),
    ]  # fmt: skip
    heavy = ("POST", "/v1/sessions/nb/ops", {"out": "b", "expr": "(a @ a @ a @ a).tanh()"})
    after = [
        ("GET", "/v1/sessions/nb/tensors/b?values=false", None),
        ("POST", "/v1/sessions/nb/ops", {"out": "s", "expr": "(a * 2).sum()"}),
        ("POST", "/v1/sessions/nb/backward", {"tensors": "s"}),
        ("GET", "/v1/sessions/nb/tensors/a?values=false", None),
        ("POST", "/v1/sessions/nb/backward", {"tensors": "s"}),
    ]
    server = Server(env, tmp_path / "log").start()
    servers.append(server)
    http_run(server.url, setup)
    answered: list[int] = []

    def send() -> None:
        try:
            with httpx.Client(base_url=server.url, timeout=30) as c:
                answered.append(c.post(heavy[1], json=heavy[2]).status_code)
        except httpx.TransportError:
            pass

    thread = threading.Thread(target=send)
    thread.start()
    time.sleep(0.15)  # the matmuls are running
    server.kill()
    thread.join()
    server = Server(env, tmp_path / "log").start()
    servers.append(server)
    got = http_run(server.url, after)
    kept = got[0][0] == 200
    if answered:  # answered 201 before the kill: it must be kept
        assert kept
    want = memory_run(setup + ([heavy] if kept else []) + after)[-len(after) :]
    assert got == want
    assert got[-1][1]["code"] == "graph_freed"
