"""Fixtures for the durable store tests: a real Redis started in a temp dir."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# the in-process client of tests/service
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))

from store_helpers import memory_run, script  # noqa: E402 - needs the path above


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


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    proc, url = start_redis(tmp_path)
    try:
        yield url
    finally:
        stop(proc)


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
        import httpx

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


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    """Servers a test starts (appended to the list); all stopped at the end."""
    started: list[Server] = []
    yield started
    for s in started:
        s.stop()


@pytest.fixture(scope="session")
def reference() -> list[tuple[int, Any]]:
    """The scripted session's answers from an uninterrupted in-memory server."""
    return memory_run(script())
