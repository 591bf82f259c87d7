"""Where the image checks send their requests.

``GRADSERVE_IMAGE_URL`` (one server) and ``GRADSERVE_IMAGE_LB_URL`` with
``GRADSERVE_IMAGE_REPLICAS`` (nginx in front of replicas, listed as nginx names them
in ``X-Gradserve-Upstream``: ``127.0.0.1:8001 127.0.0.1:8002``) point them at a
running image; ``docker/smoke.sh`` sets them. Without them the same checks run on
processes started here (``make test``): one ``LocalServer``, and two behind the
nginx configuration of ``docker/nginx`` when nginx is installed. Without nginx the
pair check is skipped, saying why, unless ``GRADSERVE_SCALEOUT=1`` makes that a
failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from client import LocalServer
from client.local import free_port

ROOT = Path(__file__).resolve().parents[2]
NGINX_DIR = ROOT / "docker" / "nginx"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(here):
            item.add_marker(pytest.mark.integration)


@dataclass
class Pair:
    """nginx's URL and the replicas behind it: upstream name -> the replica's own URL."""

    lb: str
    replicas: dict[str, str]


def _server_env() -> dict[str, str]:
    # No GRADSERVE_* setting of the caller reaches the server (an API key would 401 us).
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADSERVE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["GRADSERVE_LOG_LEVEL"] = "warning"
    return env


def _local_server() -> LocalServer:
    return LocalServer(cwd=ROOT, env=_server_env())


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The image under test (``GRADSERVE_IMAGE_URL``), or a server started here."""
    url = os.environ.get("GRADSERVE_IMAGE_URL")
    if url:
        yield url.rstrip("/")
        return
    srv = _local_server()
    try:
        yield srv.start()
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


def _nginx() -> str:
    for cand in (shutil.which("nginx"), "/usr/sbin/nginx", "/usr/local/sbin/nginx"):
        if cand and os.access(cand, os.X_OK):
            return cand
    why = (
        "nginx is not installed (apt-get install -y --no-install-recommends nginx-light), "
        "and GRADSERVE_IMAGE_LB_URL does not name a running pair"
    )
    if os.environ.get("GRADSERVE_SCALEOUT", "") not in ("", "0"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def _nginx_conf(workdir: Path, listen: str, upstreams: list[str]) -> Path:
    """docker/nginx's site (rendered by its render.sh, as the lb container does) in a
    main config that keeps every file nginx writes in ``workdir``."""
    env = dict(os.environ, GRADSERVE_UPSTREAMS=" ".join(upstreams), GRADSERVE_LB_LISTEN=listen)
    site = subprocess.run(
        ["sh", str(NGINX_DIR / "render.sh")], env=env, check=True, capture_output=True, text=True
    ).stdout
    (workdir / "gradserve.conf").write_text(site)
    temp = "\n".join(
        f"    {kind}_temp_path {workdir}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = workdir / "nginx.conf"
    conf.write_text(
        f"worker_processes 1;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n    access_log off;\n{temp}\n    include {workdir}/gradserve.conf;\n}}\n"
    )
    return conf


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"nginx exited ({proc.returncode}):\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail(f"{url} did not answer in {timeout} s:\n{log.read_text(errors='replace')}")


@pytest.fixture(scope="session")
def pair() -> Iterator[Pair]:
    """Two replicas behind nginx: the image's (``GRADSERVE_IMAGE_LB_URL`` and
    ``GRADSERVE_IMAGE_REPLICAS``), or two ``LocalServer`` and nginx started here."""
    lb = os.environ.get("GRADSERVE_IMAGE_LB_URL")
    if lb:
        names = os.environ.get("GRADSERVE_IMAGE_REPLICAS", "").replace(",", " ").split()
        assert len(names) >= 2, "GRADSERVE_IMAGE_REPLICAS must list the replicas (host:port)"
        yield Pair(lb.rstrip("/"), {n: f"http://{n}" for n in names})
        return
    nginx = _nginx()
    # nginx's workers drop root to "nobody", which must reach this directory.
    workdir = Path(tempfile.mkdtemp(prefix="gradserve-image-"))
    workdir.chmod(0o755)
    servers = [_local_server(), _local_server()]
    proc = None
    try:
        urls = [srv.start() for srv in servers]
        replicas = {u.removeprefix("http://"): u for u in urls}
        listen = f"127.0.0.1:{free_port()}"
        conf = _nginx_conf(workdir, listen, list(replicas))
        log = workdir / "nginx.out"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [nginx, "-p", str(workdir), "-c", str(conf), "-e", "stderr", "-g", "daemon off;"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        _wait(f"http://{listen}/lb-healthz", proc, log)
        yield Pair(f"http://{listen}", replicas)
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # this PID only; nginx stops its workers
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        for srv in servers:
            srv.stop()
        shutil.rmtree(workdir, ignore_errors=True)
