"""A real ``gradserve serve`` process on a free 127.0.0.1 port, stopped by its PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """Start the CLI as a user would and wait until /healthz answers."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    stop_server(proc)
    raise RuntimeError("server did not become healthy in 30 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    proc, url = start_server()
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture
def http(server_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server_url, timeout=30) as client:
        yield client


@pytest.fixture(scope="session")
def torch():  # type: ignore[no-untyped-def]
    """PyTorch, the oracle: missing torch fails under REQUIRE_TORCH=1, else skips."""
    try:
        import torch as torch_module
    except ImportError:
        if os.environ.get("REQUIRE_TORCH") == "1":
            pytest.fail("REQUIRE_TORCH=1 but torch is not installed")
        pytest.skip("torch not installed")
    return torch_module
