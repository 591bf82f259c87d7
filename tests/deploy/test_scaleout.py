"""Scale-out: two gradserve replicas behind nginx with consistent hashing.

Starts, on 127.0.0.1 free ports, two replicas (``python -m service serve``, each
one uvicorn process) and nginx with the config that compose.yml's ``lb``
service uses: docker/nginx/gradserve.conf.template rendered by
docker/nginx/render.sh. Checks that

* every session always lands on the same replica (nginx's
  ``X-Gradserve-Upstream`` header on every response, and a direct look at each
  replica: the session exists on exactly that one);
* an unnamed ``POST /v1/sessions`` gets a name from nginx and is routed by it;
* stateless ``POST /v1/gradient`` is spread over both replicas;
* a session survives the *other* replica being killed (SIGKILL), and keeps
  working (new ops, backward accumulating into ``x.grad``).

Everything started here is stopped by PID at the end. Opt-in (needs nginx):
``pytest -m scaleout tests/deploy`` or ``GRADSERVE_SCALEOUT=1``.
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
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.scaleout, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
NGINX_DIR = ROOT / "docker" / "nginx"
# Where `python -m service` is importable from; another tree only to test this
# test against a stand-in app.
APP_DIR = Path(os.environ.get("GRADSERVE_DEPLOY_APP_DIR", ROOT))
UPSTREAM_HEADER = "x-gradserve-upstream"
N_SESSIONS = 24


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_nginx() -> str:
    for cand in (shutil.which("nginx"), "/usr/sbin/nginx", "/usr/local/sbin/nginx"):
        if cand and os.access(cand, os.X_OK):
            return cand
    pytest.fail(
        "nginx not found: the scale-out test needs it "
        "(apt-get install -y --no-install-recommends nginx-light)",
        pytrace=False,
    )


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.kill(self.popen.pid, sig)
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        except ProcessLookupError:
            pass


@dataclass
class Cluster:
    lb: str
    replicas: dict[str, str]  # "127.0.0.1:port" (as nginx reports it) -> base URL
    procs: dict[str, Proc] = field(default_factory=dict)  # same keys + "nginx"
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def call(self, method: str, url: str, body=None, expect=(200, 201, 204)) -> httpx.Response:
        r = self.client.request(method, url, json=body)
        assert r.status_code in expect, f"{method} {url} -> {r.status_code}: {r.text[:500]}"
        return r

    def via_lb(
        self, method: str, path: str, body=None, expect=(200, 201, 204)
    ) -> tuple[str, httpx.Response]:
        r = self.call(method, self.lb + path, body, expect)
        upstream = r.headers.get(UPSTREAM_HEADER, "")
        assert upstream, f"nginx gave no {UPSTREAM_HEADER} header: {dict(r.headers)}"
        # After a failed try nginx lists every upstream it tried: "a, b".
        return upstream.split(",")[-1].strip(), r

    def holder(self, session: str) -> list[str]:
        """The replicas that have the session, asked directly."""
        found = []
        for key, base in self.replicas.items():
            if self.procs[key].popen.poll() is not None:
                continue
            r = self.client.get(f"{base}/v1/sessions/{session}")
            assert r.status_code in (200, 404), f"{base}: {r.status_code} {r.text[:300]}"
            if r.status_code == 200:
                found.append(key)
        return found


def wait_http(url: str, proc: Proc, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            pytest.fail(
                f"{proc.name} exited ({proc.popen.returncode}) before {url} answered:\n{proc.tail()}"
            )
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{url} did not answer within {timeout} s:\n{proc.tail()}")


def child_env() -> dict[str, str]:
    # No GRADSERVE_* settings leak in from the caller (API keys would 401 us).
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADSERVE_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def render_config(workdir: Path, listen: str, upstreams: list[str]) -> Path:
    env = dict(os.environ, GRADSERVE_UPSTREAMS=" ".join(upstreams), GRADSERVE_LB_LISTEN=listen)
    site = subprocess.run(
        ["sh", str(NGINX_DIR / "render.sh")], env=env, check=True, capture_output=True, text=True
    ).stdout
    (workdir / "gradserve.conf").write_text(site)
    main = workdir / "nginx.conf"
    main.write_text(
        f"""worker_processes 1;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log info;
events {{ worker_connections 512; }}
http {{
    access_log {workdir}/access.log;
    client_body_temp_path {workdir}/client_body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
    include {workdir}/gradserve.conf;
}}
"""
    )
    return main


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    nginx = find_nginx()
    # nginx's workers drop root to "nobody", which must reach this directory.
    workdir = Path(tempfile.mkdtemp(prefix="gradserve-scaleout-"))
    workdir.chmod(0o755)
    procs: dict[str, Proc] = {}
    try:
        replicas = {}
        for i in (1, 2):
            port = free_port()
            key = f"127.0.0.1:{port}"
            log = workdir / f"replica{i}.log"
            with log.open("wb") as out:
                popen = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "service",
                        "serve",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                    ],
                    cwd=APP_DIR,
                    env=child_env(),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            procs[key] = Proc(f"replica{i}", popen, log)
            replicas[key] = f"http://{key}"
        for key, base in replicas.items():
            wait_http(f"{base}/healthz", procs[key])

        lb_port = free_port()
        conf = render_config(workdir, f"127.0.0.1:{lb_port}", list(replicas))
        check = subprocess.run(
            [nginx, "-t", "-p", str(workdir), "-c", str(conf), "-e", "stderr"],
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, f"nginx -t refused the rendered config:\n{check.stderr}"
        log = workdir / "nginx.out"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [nginx, "-p", str(workdir), "-c", str(conf), "-e", "stderr", "-g", "daemon off;"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        procs["nginx"] = Proc("nginx", popen, workdir / "error.log")
        lb = f"http://127.0.0.1:{lb_port}"
        wait_http(f"{lb}/lb-healthz", procs["nginx"])
        c = Cluster(lb=lb, replicas=replicas, procs=procs)
        yield c
        c.client.close()
    finally:
        # nginx first (it stops its workers on SIGQUIT/SIGTERM), then replicas.
        for key in sorted(procs, key=lambda k: k != "nginx"):
            procs[key].stop(signal.SIGTERM)
        shutil.rmtree(workdir, ignore_errors=True)


def tutorial(c: Cluster, session: str, upstream: str) -> None:
    """x = [1, 2] requires_grad; y = x**2; y.backward([1, 1]); x.grad == [2, 4]."""
    steps = [
        ("PUT", f"/v1/sessions/{session}/tensors/x", {"data": [1.0, 2.0], "requires_grad": True}),
        ("POST", f"/v1/sessions/{session}/ops", {"out": "y", "op": "pow", "args": ["x", 2]}),
        (
            "POST",
            f"/v1/sessions/{session}/backward",
            {"tensors": "y", "grad_tensors": [{"data": [1.0, 1.0]}]},
        ),
    ]
    for method, path, body in steps:
        got, _ = c.via_lb(method, path, body)
        assert got == upstream, f"{method} {path} went to {got}, the session lives on {upstream}"
    assert grad_of_x(c, session, upstream) == [2.0, 4.0]


def grad_of_x(c: Cluster, session: str, upstream: str) -> list[float]:
    got, r = c.via_lb("GET", f"/v1/sessions/{session}/tensors/x/grad")
    assert got == upstream, f"GET grad of {session} went to {got}, not {upstream}"
    return flat(r.json()["grad"])


def flat(v) -> list[float]:
    if isinstance(v, dict):
        v = v["data"]
    if isinstance(v, list):
        return [x for item in v for x in flat(item)]
    return [float(v)]


def contains_values(obj, want: list[float]) -> bool:
    """Whether a JSON document holds a tensor whose values are ``want``."""
    if isinstance(obj, dict):
        if "data" in obj:
            try:
                if flat(obj) == want:
                    return True
            except (TypeError, ValueError):
                pass
        return any(contains_values(v, want) for v in obj.values())
    if isinstance(obj, list):
        try:
            if flat(obj) == want:
                return True
        except (TypeError, ValueError):
            pass
        return any(contains_values(v, want) for v in obj)
    return False


@pytest.fixture(scope="module")
def placed(cluster: Cluster) -> dict[str, str]:
    """Named sessions created through nginx, each with the tutorial run on it: name -> replica."""
    where = {}
    for i in range(N_SESSIONS):
        name = f"so{i:02d}-{uuid.uuid4().hex[:8]}"
        upstream, r = cluster.via_lb("POST", "/v1/sessions", {"name": name}, expect=(201,))
        assert r.json()["name"] == name
        tutorial(cluster, name, upstream)
        where[name] = upstream
    return where


def test_sessions_are_pinned_to_one_replica(cluster: Cluster, placed: dict[str, str]) -> None:
    # Both replicas got sessions (2 * 0.5**24 chance of a false failure).
    assert set(placed.values()) == set(cluster.replicas), placed
    for _ in range(3):
        for name, upstream in placed.items():
            got, _ = cluster.via_lb("GET", f"/v1/sessions/{name}")
            assert got == upstream, f"{name}: {got} now, {upstream} at creation"
    for name, upstream in placed.items():
        assert cluster.holder(name) == [upstream], f"{name} should live on {upstream} only"


def test_unnamed_create_is_routed_by_the_name_nginx_gives_it(cluster: Cluster) -> None:
    for body in (None, {}, {"name": None}):
        upstream, r = cluster.via_lb("POST", "/v1/sessions", body, expect=(201,))
        name = r.json()["name"]
        assert name.startswith("gs-"), r.json()
        tutorial(cluster, name, upstream)
        assert cluster.holder(name) == [upstream]


def test_session_name_in_body_is_not_rewritten(cluster: Cluster) -> None:
    # Invalid names reach the service untouched and get its own answer (422).
    r = cluster.client.post(f"{cluster.lb}/v1/sessions", json={"name": "bad name!"})
    assert r.status_code == 422, r.text
    # A taken name is a 409 from the replica that has it.
    name = f"dup-{uuid.uuid4().hex[:8]}"
    first, _ = cluster.via_lb("POST", "/v1/sessions", {"name": name}, expect=(201,))
    second, r = cluster.via_lb("POST", "/v1/sessions", {"name": name}, expect=(409,))
    assert first == second


def gradient_body() -> dict:
    return {
        "tensors": {"x": {"data": [1.0, 2.0], "requires_grad": True}},
        "steps": [{"out": "y", "op": "pow", "args": ["x", 2]}],
        "backward": {"tensors": "y", "grad_tensors": [{"data": [1.0, 1.0]}]},
        "fetch": ["x.grad"],
    }


def test_stateless_gradient_is_spread_over_replicas(cluster: Cluster) -> None:
    seen = set()
    for _ in range(8):
        upstream, r = cluster.via_lb("POST", "/v1/gradient", gradient_body(), expect=(200,))
        assert contains_values(r.json(), [2.0, 4.0]), r.text
        seen.add(upstream)
    assert seen == set(cluster.replicas), f"/v1/gradient only reached {seen}"


def test_session_survives_the_other_replica_being_killed(
    cluster: Cluster, placed: dict[str, str]
) -> None:
    keys = list(cluster.replicas)
    victim, survivor = keys[1], keys[0]
    kept = [n for n, u in placed.items() if u == survivor]
    lost = [n for n, u in placed.items() if u == victim]
    assert kept and lost

    cluster.procs[victim].stop(signal.SIGKILL)
    assert cluster.procs[victim].popen.poll() is not None

    for name in kept:
        # Its state is intact and it keeps working: z = x**2, backward accumulates.
        assert grad_of_x(cluster, name, survivor) == [2.0, 4.0]
        got, _ = cluster.via_lb(
            "POST", f"/v1/sessions/{name}/ops", {"out": "z", "op": "pow", "args": ["x", 2]}
        )
        assert got == survivor
        got, _ = cluster.via_lb(
            "POST",
            f"/v1/sessions/{name}/backward",
            {"tensors": "z", "grad_tensors": [{"data": [1.0, 1.0]}]},
        )
        assert got == survivor
        assert grad_of_x(cluster, name, survivor) == [4.0, 8.0]

    # The victim's sessions are gone with its memory: never a 200 from elsewhere.
    for name in lost:
        r = cluster.client.get(f"{cluster.lb}/v1/sessions/{name}")
        assert r.status_code in (404, 502), f"{name}: {r.status_code} {r.text[:200]}"

    # Stateless work and new sessions go on through the survivor.
    for _ in range(4):
        upstream, r = cluster.via_lb("POST", "/v1/gradient", gradient_body(), expect=(200,))
        assert upstream == survivor and contains_values(r.json(), [2.0, 4.0])
    name = f"after-{uuid.uuid4().hex[:8]}"
    upstream, _ = cluster.via_lb("POST", "/v1/sessions", {"name": name}, expect=(201,))
    assert upstream == survivor
    tutorial(cluster, name, survivor)
