"""``kill -9`` in the middle of a repeated program run, on a real server: every iteration
acknowledged by a progress event is kept, and what is kept is a whole number of
iterations (the state equals an uninterrupted run of that many). A client that goes away
stops the run; what completed is kept, through a restart too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from store_helpers import Server, http_run, memory_run

pytestmark = pytest.mark.integration

S = "/v1/sessions/nb"
N = 48
SETUP: list[Any] = [
    ("POST", "/v1/sessions", {"name": "nb"}),
    (
        "PUT",
        f"{S}/tensors/A",
        {
            "data": [[((i * 7 + j) % 11 - 5) / (10 * N) for j in range(N)] for i in range(N)],
            "dtype": "float64",
        },
    ),  # fmt: skip
    ("PUT", f"{S}/tensors/v", {"data": [1.0] * N, "dtype": "float64", "requires_grad": True}),
    ("PUT", f"{S}/tensors/c", {"data": [0.0], "dtype": "float64"}),
    (
        "PUT",
        f"{S}/programs/step",
        {
            "steps": [
                {"out": "loss", "expr": "((A @ v).tanh() ** 2).sum() + (v * v).sum() * 0.01"},
                {"backward": {"tensors": "loss"}},
                {"out": "v", "expr": "v - 0.1 * v.grad", "assign": True},
                {"zero_grad": {"tensors": ["v"]}},
                {"out": "c", "expr": "c + 1", "assign": True},
            ],
            "fetch": ["c"],
        },
    ),  # fmt: skip
]
READ = [("GET", f"{S}/tensors/v", None), ("GET", f"{S}/tensors/c", None)]


def _progress(url: str, events: int, *, until_kill: Server | None) -> list[int]:
    """Stream a long run; after ``events`` progress events kill the server (or, without
    one, close the stream). Returns the iterations the progress events acknowledged."""
    seen: list[int] = []
    body = {"repeat": 100_000, "every": 3}
    with (
        httpx.Client(base_url=url, timeout=30) as client,
        client.stream(
            "POST", f"{S}/programs/step/run", json=body, headers={"Accept": "text/event-stream"}
        ) as r,
    ):
        assert r.status_code == 200
        kind = ""
        try:
            for line in r.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind == "progress":
                    seen.append(orjson.loads(line[6:])["iteration"])
                    if len(seen) == events:
                        if until_kill is None:
                            break
                        until_kill.kill()
        except httpx.TransportError:
            assert until_kill is not None
    return seen


def _kept(url: str, acknowledged: int) -> None:
    """The state is that of a whole number k >= acknowledged of iterations."""
    got = http_run(url, READ)
    (k,) = got[1][1]["data"]["data"]
    assert k == int(k) and k >= acknowledged, (k, acknowledged)
    want = memory_run([*SETUP, ("POST", f"{S}/programs/step/run", {"repeat": int(k)}), *READ])
    assert got == want[-2:]


@pytest.fixture(params=["sqlite", "redis"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    if request.param == "sqlite":
        return {"GRADSERVE_STORE": f"sqlite:///{tmp_path / 'g.db'}",
                "GRADSERVE_CHECKPOINT_RECORDS": "7"}  # fmt: skip
    url = request.getfixturevalue("redis_url")
    return {"GRADSERVE_STORE": url, "GRADSERVE_CHECKPOINT_RECORDS": "7"}


def test_kill_during_a_streamed_run(
    tmp_path: Path, servers: list[Server], env: dict[str, str]
) -> None:
    server = Server(env, tmp_path / "log").start()
    servers.append(server)
    http_run(server.url, SETUP)
    seen = _progress(server.url, 4, until_kill=server)
    assert seen == [3, 6, 9, 12]
    server = Server(env, tmp_path / "log").start()
    servers.append(server)
    _kept(server.url, seen[-1])


def test_disconnect_stops_the_run_and_it_is_kept(
    tmp_path: Path, servers: list[Server], env: dict[str, str]
) -> None:
    server = Server(env, tmp_path / "log").start()
    servers.append(server)
    http_run(server.url, SETUP)
    seen = _progress(server.url, 2, until_kill=None)
    first = http_run(server.url, READ)  # answered: the run stopped and released the session
    (k,) = first[1][1]["data"]["data"]
    assert seen[-1] <= k < 100_000
    server.kill()
    server = Server(env, tmp_path / "log").start()
    servers.append(server)
    assert http_run(server.url, READ) == first
    _kept(server.url, seen[-1])
