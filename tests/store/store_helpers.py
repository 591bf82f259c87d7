"""Scripted sessions for the durability tests (a uniquely named module: tests/ is not a
package): requests whose answers must not change when the server dies between them."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from svc_helpers import SyncClient

from service.app import create_app
from service.settings import Settings

Request = tuple[str, str, dict[str, Any] | None]

S = "/v1/sessions/nb"


def script() -> list[Request]:
    """A notebook's worth of autograd: leaves, graphs kept and freed, create_graph, in-place
    training steps, grads zeroed and dropped, flags flipped, names unbound, and errors."""
    return [
        ("POST", "/v1/sessions", {"name": "nb"}),
        ("PUT", f"{S}/tensors/x", {"data": [1.0, 2.0, 3.0], "requires_grad": True}),
        ("PUT", f"{S}/tensors/w", {"data": [[0.5, -1.0], [2.0, 0.25], [1.5, 1.0]],
                                  "dtype": "float64", "requires_grad": True}),
        ("PUT", f"{S}/tensors/k", {"data": [1, 2, 3], "dtype": "int64"}),
        ("POST", f"{S}/ops", {"out": "y", "expr": "x ** 2 * 3"}),
        ("POST", f"{S}/ops", {"out": "z", "op": "sum", "args": ["y"]}),
        ("POST", f"{S}/backward", {"tensors": "z", "retain_graph": True}),
        ("GET", f"{S}/tensors/x/grad", None),
        ("POST", f"{S}/backward", {"tensors": "z"}),
        ("GET", f"{S}/tensors/x", None),
        ("POST", f"{S}/backward", {"tensors": "z"}),  # graph_freed
        ("POST", f"{S}/ops", {"out": "s", "expr": "(x + x).sum()"}),
        ("POST", f"{S}/backward", {"tensors": "s"}),
        ("POST", f"{S}/backward", {"tensors": "s"}),  # add/sum only: runs again
        ("POST", f"{S}/zero_grad", {"tensors": ["x"]}),
        ("POST", f"{S}/ops", {"out": "c", "expr": "x ** 3"}),
        ("POST", f"{S}/grad", {"outputs": "c", "inputs": "x", "grad_outputs": [{"data": [1, 1, 1]}],
                               "create_graph": True, "out": ["gx"]}),
        ("POST", f"{S}/ops", {"out": "g2", "expr": "gx.sum()"}),
        ("POST", f"{S}/backward", {"tensors": "g2"}),
        ("GET", f"{S}/tensors/x/grad", None),
        ("POST", f"{S}/batch", {"steps": [
            {"out": "loss", "expr": "((w.t() @ x.double()) ** 2).mean()"},
            {"out": "h", "op": "mul", "args": ["loss", 2]}]}),
        ("POST", f"{S}/backward", {"tensors": "loss", "retain_graph": True}),
        ("POST", f"{S}/ops", {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True}),
        ("GET", f"{S}/tensors/w", None),
        ("POST", f"{S}/backward", {"tensors": "h"}),  # w saved by the graph, changed: version
        ("POST", f"{S}/ops", {"out": "w", "expr": "w + 1", "assign": False}),  # rebind
        ("PATCH", f"{S}/tensors/y", {"retain_grad": True}),
        ("POST", f"{S}/ops", {"out": "q", "expr": "(y * k).sum()"}),
        ("POST", f"{S}/backward", {"tensors": "q"}),
        ("GET", f"{S}/tensors/y/grad", None),
        ("DELETE", f"{S}/tensors/y/grad", None),
        ("GET", f"{S}/tensors/y", None),
        ("DELETE", f"{S}/tensors/c", None),
        ("GET", f"{S}/tensors/c", None),  # 404
        ("POST", f"{S}/ops", {"out": "bad", "expr": "x @ w"}),  # shape_mismatch, no change
        ("PATCH", f"{S}/tensors/x", {"requires_grad": False}),
        ("POST", f"{S}/zero_grad", {"set_to_none": True}),
        ("POST", f"{S}/ops", {"out": ["vals", "idx"], "expr": "w.max(dim=1)"}),
        ("POST", f"{S}/ops", {"out": "m", "expr": "vals.sum() * 2"}),
        ("POST", f"{S}/backward", {"tensors": "m", "retain_graph": True}),
        ("GET", f"{S}/tensors/w", None),
        ("GET", f"{S}/graph", None),
        ("POST", f"{S}/backward", {"tensors": "m"}),
        ("GET", f"{S}/tensors/w", None),
        ("POST", f"{S}/backward", {"tensors": "m"}),  # graph_freed
        ("GET", f"{S}/tensors/x", None),
    ]  # fmt: skip


def answer(status: int, body: Any) -> tuple[int, Any]:
    """What must match between runs: the status and the body without wall-clock times."""
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("created", "last_used", "expires")}
    return status, body


def memory_run(requests: list[Any]) -> list[tuple[int, Any]]:
    app: FastAPI = create_app(Settings(_env_file=None))  # type: ignore[call-arg]
    with SyncClient(app) as client:
        return [ask(client, r) for r in requests]


def ask(client: Any, request: Any) -> tuple[int, Any]:
    method, path, body = request
    r = client.request(method, path, json=body)
    return answer(r.status_code, r.json() if r.content else None)


def http_run(url: str, requests: list[Any]) -> list[tuple[int, Any]]:
    with httpx.Client(base_url=url, timeout=30) as client:
        return [ask(client, r) for r in requests]


def same(got: list[Any], want: list[Any], offset: int = 0) -> None:
    steps = script()
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, (offset + i, steps[offset + i])


# --- real processes: Redis and gradserve ---------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Debian's redis-server on a free 127.0.0.1 port, AOF with fsync on every write."""
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI_REDIS") == "1":
            pytest.fail("redis-server is missing (make redis-deps installs it)")
        pytest.skip("redis-server is not installed (make redis-deps; CI_REDIS=1 requires it)")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp),
         "--appendonly", "yes", "--appendfsync", "always", "--save", "",
         "--daemonize", "no", "--protected-mode", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(64).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    stop(proc)
    raise RuntimeError("redis-server did not answer in 20 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


ROOT = Path(__file__).resolve().parents[2]


class Server:
    """A real ``gradserve serve`` process on a free port, killed by its PID."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1",
                 "--port", str(self.port)],
                cwd=ROOT,
                env={**os.environ, **self.env},
                stdout=subprocess.DEVNULL,
                stderr=log,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("server did not become healthy in 30 s")

    def kill(self) -> None:
        """``kill -9``: no shutdown hook runs."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)  # type: ignore[arg-type]
