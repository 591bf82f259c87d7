"""Faults: a store unreachable at startup stops the process with the reason; a store lost
while running answers 503 ``store_unavailable`` (nothing unkept is acknowledged) and the
service recovers with it; a journal that cannot be replayed fails only its own session."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from store_helpers import ROOT, Server, free_port, start_redis, stop

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", ["redis", "sqlite"])
def test_unreachable_store_stops_the_process(tmp_path: Path, kind: str) -> None:
    if kind == "redis":
        url = f"redis://127.0.0.1:{free_port()}/0"
    else:
        (tmp_path / "ro").mkdir(mode=0o500)
        url = f"sqlite:///{tmp_path / 'ro' / 'sub' / 'g.db'}"
        if os.geteuid() == 0:  # root writes anywhere: a file where the directory must be
            (tmp_path / "f").write_text("")
            url = f"sqlite:///{tmp_path / 'f' / 'g.db'}"
    proc = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--port", str(free_port())],
        cwd=ROOT,
        env={**os.environ, "GRADSERVE_STORE": url},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert b"gradserve cannot start" in proc.stderr


def test_store_lost_while_running(tmp_path: Path, servers: list[Server]) -> None:
    rproc, url = start_redis(tmp_path)
    try:
        server = Server({"GRADSERVE_STORE": url}, tmp_path / "log").start()
        servers.append(server)
        c = httpx.Client(base_url=server.url, timeout=30)
        assert c.post("/v1/sessions", json={"name": "nb"}).status_code == 201
        x = {"data": [1.0, 2.0], "requires_grad": True}
        assert c.put("/v1/sessions/nb/tensors/x", json=x).status_code == 201
        os.kill(rproc.pid, signal.SIGKILL)
        rproc.wait()
        r = c.post("/v1/sessions/nb/ops", json={"out": "y", "expr": "x * 3"})
        assert r.status_code == 503, r.text
        assert r.json()["code"] == "store_unavailable"
        assert r.headers["retry-after"] == "1"
        for method, path in (("GET", "/v1/sessions"), ("GET", "/v1/sessions/nb/tensors/x")):
            r = c.request(method, path)
            assert (r.status_code, r.json()["code"]) == (503, "store_unavailable")
        assert c.get("/healthz").status_code == 200
        assert c.get("/readyz").status_code == 503
        # the same Redis comes back (its AOF kept every acknowledged write)
        port = url.rsplit(":", 1)[1].split("/")[0]
        rproc = subprocess.Popen(
            ["redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", str(tmp_path),
             "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while True:
            r = c.get("/v1/sessions/nb")
            if r.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert r.status_code == 200, r.text
        assert c.get("/readyz").json()["status"] == "ready"
        assert [t["name"] for t in r.json()["tensors"]] == ["x"]  # y was never acknowledged
        r = c.post("/v1/sessions/nb/ops", json={"out": "y", "expr": "x * 3"})
        assert r.status_code == 201
        assert r.json()["data"]["data"] == [3.0, 6.0]
    finally:
        stop(rproc)


def test_corrupt_journal_fails_only_its_session(tmp_path: Path, servers: list[Server]) -> None:
    db = tmp_path / "g.db"
    env = {"GRADSERVE_STORE": f"sqlite:///{db}"}
    server = Server(env, tmp_path / "log").start()
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for name in ("good", "bad"):
            assert c.post("/v1/sessions", json={"name": name}).status_code == 201
            c.put(f"/v1/sessions/{name}/tensors/x", json={"data": [1.0], "requires_grad": True})
            c.post(f"/v1/sessions/{name}/ops", json={"out": "y", "expr": "x * 2"})
    server.kill()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE records SET body = x'0500000000' WHERE key = '-/bad' AND seq = 2")
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as c:
        r = c.get("/v1/sessions/bad/tensors/y")
        assert r.status_code == 409
        assert r.json()["code"] == "session_corrupt"
        assert c.get("/v1/sessions/good/tensors/y").json()["data"]["data"] == [2.0]
        assert sorted(s["name"] for s in c.get("/v1/sessions").json()["sessions"]) == [
            "bad",
            "good",
        ]
        assert c.delete("/v1/sessions/bad").status_code == 204
        assert c.get("/v1/sessions/bad").status_code == 404
    assert "cannot be replayed" in (tmp_path / "log").read_text()
