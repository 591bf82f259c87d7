"""``LocalServer``: run gradserve in a subprocess on 127.0.0.1 (tests, notebooks).

    with LocalServer() as url:
        s = Session(url)

Starts ``python -m service serve --host 127.0.0.1 --port <free port>`` with
this interpreter, waits for ``/healthz``, and stops that one process (by its
PID: SIGTERM, then SIGKILL after a grace period). Needs the service package
importable (the repository checkout or an install with the server extras).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    def __init__(
        self,
        *,
        port: int | None = None,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        startup_timeout: float = 30.0,
        python: str = sys.executable,
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **(env or {})}
        self.cwd = str(cwd) if cwd is not None else None
        self.startup_timeout = startup_timeout
        self.python = python
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server

    def start(self) -> str:
        cmd = [
            self.python,
            "-m",
            "service",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self.proc = subprocess.Popen(
            cmd, cwd=self.cwd, env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(timeout=1.0) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        f"gradserve exited with {self.proc.returncode} on start:\n{self.output()}"
                    )
                try:
                    if http.get(f"{self.url}/healthz").status_code == 200:
                        return self.url
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(
            f"gradserve did not answer /healthz in {self.startup_timeout}s:\n{self.output()}"
        )

    def output(self) -> str:
        """What the server printed so far (stdout and stderr)."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-5000:]

    def stop(self, grace: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()  # this PID only
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(grace)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        self._log.close()
