"""A real server shared with clients one does not trust: a request past its deadline
stops, is rolled back and answers 503 while /healthz keeps answering; slow and
half-open clients are cut; a bug answers a problem and the connection stays usable."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from .conftest import ROOT, free_port, start_server, stop_server

pytestmark = pytest.mark.integration

DEADLINE = 2.0
N = 2000  # a 2000x2000 float32 matmul: a fraction of a second each
CHAIN = " @ ".join(["x"] * 40)  # far longer than the deadline without one


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[int, str]]:
    env = {"GRADSERVE_REQUEST_SECONDS": str(DEADLINE), "GRADSERVE_READ_SECONDS": "5",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}  # fmt: skip
    proc, url = start_server(env)
    try:
        yield proc.pid, url
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def url(server: tuple[int, str]) -> str:
    return server[1]


def _peak_rss_mb(pid: int) -> float:
    """The process's high-water mark of resident memory (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


def test_a_60_mb_json_body_is_refused_before_it_costs_memory(server: tuple[int, str]) -> None:
    pid, url = server
    body = b'{"data": [' + b"1.5," * 15_000_000 + b"1.5]}"  # 60 MB, 15 million numbers
    with httpx.Client(base_url=url, timeout=60) as http:
        http.delete("/v1/sessions/big")
        assert http.post("/v1/sessions", json={"name": "big"}).status_code == 201
        before = _peak_rss_mb(pid)
        r = http.put("/v1/sessions/big/tensors/x", content=body,
                     headers={"Content-Type": "application/json"})  # fmt: skip
        grown = _peak_rss_mb(pid) - before
        print(f"60 MB JSON body: {r.status_code}, peak RSS +{grown:.0f} MiB")
        assert r.status_code == 413 and r.json()["code"] == "limit_exceeded"
        assert grown < 256  # parsed, it took about 1 GB
        assert http.get("/healthz").status_code == 200


def test_keys_are_isolated() -> None:
    env = {"GRADSERVE_API_KEYS": "key-a,key-b", "GRADSERVE_KEY_MAX_SESSIONS": "5",
           "GRADSERVE_MAX_SESSIONS": "20"}  # fmt: skip
    proc, url = start_server(env)
    a, b = {"Authorization": "Bearer key-a"}, {"Authorization": "Bearer key-b"}
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            made = [http.post("/v1/sessions", headers=a).status_code for _ in range(8)]
            assert made == [201] * 5 + [429] * 3  # key A is held to its share
            r = http.post("/v1/sessions", json={"name": "mine"}, headers=b)
            assert r.status_code == 201  # key B is not locked out
            assert http.get("/v1/sessions/mine", headers=a).status_code == 404
            listed = http.get("/v1/sessions", headers=b).json()["sessions"]
            assert [s["name"] for s in listed] == ["mine"]
            assert "sessions" not in http.get("/readyz").json()  # no server-wide count
            assert http.get("/readyz", headers=b).json()["sessions"] == 1
    finally:
        stop_server(proc)


def _long_request(url: str, path: str, body: object) -> tuple[httpx.Response, float]:
    with httpx.Client(base_url=url, timeout=120) as http:
        start = time.monotonic()
        r = http.post(path, json=body)
        return r, time.monotonic() - start


@pytest.mark.parametrize("kind", ["op", "batch"])
def test_a_long_request_stops_at_its_deadline_and_changes_nothing(url: str, kind: str) -> None:
    name = f"deadline-{kind}"
    with httpx.Client(base_url=url, timeout=60) as http:
        http.delete(f"/v1/sessions/{name}")
        assert http.post("/v1/sessions", json={"name": name}).status_code == 201
        x = np.full((N, N), 1e-3, dtype=np.float32)
        r = http.put(
            f"/v1/sessions/{name}/tensors/x?shape={N},{N}&dtype=float32",
            content=x.tobytes(),
            headers={"Content-Type": "application/octet-stream"},
        )
        assert r.status_code == 201, r.text
        before = http.get(f"/v1/sessions/{name}/tensors/x?values=false").json()
        if kind == "op":
            path, body = f"/v1/sessions/{name}/ops", {"out": "y", "expr": CHAIN}
        else:  # an earlier in-place write of the batch is rolled back too
            path = f"/v1/sessions/{name}/batch"
            body = {"steps": [{"out": "x", "expr": "x * 2", "assign": True},
                              {"out": "y", "expr": CHAIN}]}  # fmt: skip
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(_long_request, url, path, body)
            health = []
            while not future.done():  # the event loop answers while the work runs
                health.append(http.get("/healthz", timeout=10).status_code)
            r, elapsed = future.result()
        print(f"{kind}: answered {r.status_code} after {elapsed:.2f} s (deadline {DEADLINE} s)")
        assert r.status_code == 503, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "deadline_exceeded" and r.headers["retry-after"]
        assert elapsed < DEADLINE + 5  # stopped at an op boundary, not at the chain's end
        assert health and set(health) == {200}
        tensors = http.get(f"/v1/sessions/{name}?values=false").json()["tensors"]
        assert [t["name"] for t in tensors] == ["x"]  # no y
        after = http.get(
            f"/v1/sessions/{name}/tensors/x", headers={"Accept": "application/octet-stream"}
        )
        assert np.array_equal(np.frombuffer(after.content, np.float32).reshape(N, N), x)
        assert http.get(f"/v1/sessions/{name}/tensors/x?values=false").json() == before
        http.delete(f"/v1/sessions/{name}")


def _closed_by_server(sock: socket.socket) -> bool:
    """Blocks until the server closes the connection (or 20 s pass: not closed)."""
    sock.settimeout(20)
    try:
        while sock.recv(65536):  # an answer (a 404 before the body is read) may come first
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def test_half_open_and_slow_clients_are_cut(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Len")  # and no more
    half_body = socket.create_connection(("127.0.0.1", port))
    half_body.sendall(b"PUT /v1/sessions/nb/tensors/x HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"da")  # fmt: skip
    try:
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200  # still serving
        assert _closed_by_server(slow)
        assert _closed_by_server(half_body)
        assert all(_closed_by_server(s) for s in idle)
    finally:
        for s in [*idle, slow, half_body]:
            s.close()


BUGGY_SERVER = """
import sys, uvicorn
from service.app import create_app
from service.protocol import bounded_protocol
app = create_app()

@app.get("/boom")
async def boom() -> None:
    raise RuntimeError("a bug")

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), http=bounded_protocol(30),
            log_level="critical")
"""


def _read_response(f: object) -> tuple[int, dict[str, str], bytes]:
    status_line = f.readline()  # type: ignore[attr-defined]
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while line := f.readline().decode().strip():  # type: ignore[attr-defined]
        k, _, v = line.partition(":")
        headers[k.lower()] = v.strip()
    body = f.read(int(headers.get("content-length", 0)))  # type: ignore[attr-defined]
    return status, headers, body


def test_a_bug_answers_a_problem_and_keeps_the_connection() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", BUGGY_SERVER, str(port)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        sock.settimeout(10)
        f = sock.makefile("rb")
        sock.sendall(b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, body = _read_response(f)
        assert status == 500 and headers["content-type"] == "application/problem+json"
        assert b'"internal_error"' in body
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # the same connection
        status, _, body = _read_response(f)
        assert status == 200 and b'"ok"' in body
        sock.close()
    finally:
        stop_server(proc)  # type: ignore[arg-type]
