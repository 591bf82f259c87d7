"""Scale-out with durable sessions: two replicas on one Redis (GRADSERVE_STORE) behind
nginx's consistent hash, as compose.yml's scale profile runs them.

A replica killed with SIGKILL loses nothing: nginx sends its sessions to the other
replica, which takes the lease over and replays the journal (no 404, grads intact),
and when the killed replica comes back and traffic returns to it, it catches up from
the journal before answering (no stale read). Opt-in like test_scaleout.py (needs nginx
and redis-server): ``make test-scaleout``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_scaleout import (
    APP_DIR,
    NGINX_DIR,
    Cluster,
    Proc,
    child_env,
    find_nginx,
    free_port,
    wait_http,
)

pytestmark = [pytest.mark.scaleout, pytest.mark.timeout(180)]


def find_redis() -> str:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server not found (make redis-deps)", pytrace=False)
    return exe


def wait_redis(port: int, proc: Proc) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.popen.poll() is None, f"redis-server exited:\n{proc.tail()}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    pytest.fail("redis-server did not answer in 20 s")


def start_replica(key: str, env: dict[str, str], log: Path) -> Proc:
    port = key.rsplit(":", 1)[1]
    with log.open("ab") as out:
        popen = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port", port],
            cwd=APP_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    proc = Proc(f"replica {key}", popen, log)
    wait_http(f"http://{key}/healthz", proc)
    return proc


@pytest.fixture(scope="module")
def durable() -> Iterator[tuple[Cluster, dict[str, str], Path]]:
    nginx = find_nginx()
    workdir = Path(tempfile.mkdtemp(prefix="gradserve-scaleout-redis-"))
    workdir.chmod(0o755)
    procs: dict[str, Proc] = {}
    try:
        redis_port = free_port()
        rlog = workdir / "redis.log"
        with rlog.open("wb") as out:
            rpop = subprocess.Popen(
                [find_redis(), "--port", str(redis_port), "--bind", "127.0.0.1",
                 "--dir", str(workdir), "--appendonly", "yes", "--appendfsync", "always",
                 "--save", ""],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        procs["redis"] = Proc("redis", rpop, rlog)
        env = {**child_env(), "GRADSERVE_STORE": f"redis://127.0.0.1:{redis_port}/0",
               "GRADSERVE_LEASE_SECONDS": "1"}  # fmt: skip
        wait_redis(redis_port, procs["redis"])
        replicas = {}
        for i in (1, 2):
            key = f"127.0.0.1:{free_port()}"
            procs[key] = start_replica(key, env, workdir / f"replica{i}.log")
            replicas[key] = f"http://{key}"
        lb_port = free_port()
        render_env = dict(os.environ, GRADSERVE_UPSTREAMS=" ".join(replicas),
                          GRADSERVE_LB_LISTEN=f"127.0.0.1:{lb_port}",
                          GRADSERVE_UPSTREAM_PARAMS="max_fails=1 fail_timeout=1s")  # fmt: skip
        site = subprocess.run(["sh", str(NGINX_DIR / "render.sh")], env=render_env, check=True,
                              capture_output=True, text=True).stdout  # fmt: skip
        (workdir / "gradserve.conf").write_text(site)
        conf = workdir / "nginx.conf"
        conf.write_text(
            f"worker_processes 1;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log info;\n"
            "events { worker_connections 512; }\nhttp {\n"
            f"    access_log {workdir}/access.log;\n"
            + "".join(f"    {k}_temp_path {workdir}/{k};\n"
                      for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
            + f"    include {workdir}/gradserve.conf;\n}}\n"
        )  # fmt: skip
        with (workdir / "nginx.out").open("wb") as out:
            popen = subprocess.Popen(
                [nginx, "-p", str(workdir), "-c", str(conf), "-e", "stderr", "-g", "daemon off;"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        procs["nginx"] = Proc("nginx", popen, workdir / "error.log")
        lb = f"http://127.0.0.1:{lb_port}"
        wait_http(f"{lb}/lb-healthz", procs["nginx"])
        cluster = Cluster(lb=lb, replicas=replicas, procs=procs)
        yield cluster, env, workdir
        cluster.client.close()
    finally:
        for key in sorted(procs, key=lambda k: (k != "nginx", k == "redis")):
            procs[key].stop(signal.SIGTERM)
        shutil.rmtree(workdir, ignore_errors=True)


def x_grad(c: Cluster, name: str) -> tuple[str, list[float]]:
    upstream, r = c.via_lb("GET", f"/v1/sessions/{name}/tensors/x/grad")
    return upstream, r.json()["grad"]["data"]


def train(c: Cluster, name: str) -> str:
    """One more y = x**2; backward: x.grad grows by 2x."""
    up, _ = c.via_lb("POST", f"/v1/sessions/{name}/ops", {"out": "y", "expr": "(x ** 2).sum()"})
    up2, _ = c.via_lb("POST", f"/v1/sessions/{name}/backward", {"tensors": "y"})
    assert up == up2
    return up


def test_sessions_survive_their_replica_and_come_back(
    durable: tuple[Cluster, dict[str, str], Path],
) -> None:
    c, env, workdir = durable
    where: dict[str, str] = {}
    for i in range(12):
        name = f"d{i:02d}-{uuid.uuid4().hex[:6]}"
        up, _ = c.via_lb("POST", "/v1/sessions", {"name": name}, expect=(201,))
        c.via_lb(
            "PUT", f"/v1/sessions/{name}/tensors/x", {"data": [1.0, 2.0], "requires_grad": True}
        )
        assert train(c, name) == up
        where[name] = up
    assert set(where.values()) == set(c.replicas), where
    victim = next(iter(c.replicas))
    moved = [n for n, u in where.items() if u == victim]
    c.procs[victim].stop(signal.SIGKILL)
    for name in moved:  # served by the survivor from the journal: no 404, grads intact
        up, grad = x_grad(c, name)
        assert up != victim and grad == [2.0, 4.0], (name, up, grad)
        assert train(c, name) != victim
        assert x_grad(c, name)[1] == [4.0, 8.0]
    listed = {s["name"] for s in c.call("GET", f"{c.lb}/v1/sessions").json()["sessions"]}
    assert set(where) <= listed
    c.procs[victim] = start_replica(victim, env, workdir / "replica-back.log")
    deadline = time.monotonic() + 20
    name = moved[0]
    while x_grad(c, name)[0] != victim:  # nginx sends traffic back after fail_timeout
        assert time.monotonic() < deadline, "traffic never returned to the restarted replica"
        time.sleep(0.2)
    for name in moved:  # the restarted replica caught up before answering: no stale read
        up, grad = x_grad(c, name)
        assert (up, grad) == (victim, [4.0, 8.0]), name
        assert train(c, name) == victim
        assert x_grad(c, name) == (victim, [6.0, 12.0])
    r = httpx.get(f"{c.replicas[victim]}/v1/sessions/{moved[0]}/tensors/x/grad", timeout=30)
    assert r.json()["grad"]["data"] == [6.0, 12.0]
