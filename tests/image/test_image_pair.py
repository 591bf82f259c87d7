"""Two replicas of the image behind docker/nginx's configuration (compose.yml's
``lb``): each session stays on the replica nginx picked for its name, an unnamed
create is routed by the name nginx gives it, stateless calls are spread. Against
``GRADSERVE_IMAGE_LB_URL`` (``docker/smoke.sh``) or a pair started here (conftest.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from .conftest import Pair
from .test_image_http import GRADIENT, call, flat, tutorial_steps

UPSTREAM_HEADER = "x-gradserve-upstream"


def via_lb(
    http: httpx.Client, pair: Pair, method: str, path: str, body: Any = None, expect: int = 200
) -> tuple[str, httpx.Response]:
    """The answer through nginx, and the replica that gave it."""
    r = call(http, method, pair.lb + path, body, expect)
    upstream = r.headers.get(UPSTREAM_HEADER, "")
    assert upstream, f"nginx sent no {UPSTREAM_HEADER} header: {dict(r.headers)}"
    return upstream.split(",")[-1].strip(), r  # after a failed try nginx lists every one


def holders(http: httpx.Client, pair: Pair, name: str) -> list[str]:
    """The replicas that have the session, asked directly."""
    found = []
    for key, url in pair.replicas.items():
        r = http.get(f"{url}/v1/sessions/{name}")
        assert r.status_code in (200, 404), f"{url}: {r.status_code} {r.text[:300]}"
        if r.status_code == 200:
            found.append(key)
    return found


def run_tutorial_through(http: httpx.Client, pair: Pair, name: str, upstream: str) -> None:
    for method, path, body in tutorial_steps(name):
        expect = 200 if path.endswith("/backward") else 201
        got, _ = via_lb(http, pair, method, path, body, expect=expect)
        assert got == upstream, f"{method} {path} went to {got}; {name} lives on {upstream}"
    got, r = via_lb(http, pair, "GET", f"/v1/sessions/{name}/tensors/x/grad")
    assert got == upstream and flat(r.json()["grad"]) == [2.0, 4.0]


def test_sessions_stay_on_one_replica_behind_nginx(http: httpx.Client, pair: Pair) -> None:
    where = {}
    for i in range(12):
        name = f"image-{i:02d}-{uuid.uuid4().hex[:8]}"
        upstream, _ = via_lb(http, pair, "POST", "/v1/sessions", {"name": name}, expect=201)
        run_tutorial_through(http, pair, name, upstream)
        where[name] = upstream
    # Both replicas hold sessions (a false failure has chance 2 * 0.5**12).
    assert set(where.values()) == set(pair.replicas), where
    for name, upstream in where.items():
        assert holders(http, pair, name) == [upstream], f"{name} should live on {upstream} only"


def test_an_unnamed_session_is_routed_by_the_name_nginx_gives_it(
    http: httpx.Client, pair: Pair
) -> None:
    upstream, r = via_lb(http, pair, "POST", "/v1/sessions", None, expect=201)
    name = r.json()["name"]
    run_tutorial_through(http, pair, name, upstream)
    assert holders(http, pair, name) == [upstream]


def test_stateless_gradient_is_spread_over_the_replicas(http: httpx.Client, pair: Pair) -> None:
    seen = set()
    for _ in range(6):
        upstream, r = via_lb(http, pair, "POST", "/v1/gradient", GRADIENT)
        assert flat(r.json()["values"]["x.grad"]) == [2.0, 4.0]
        seen.add(upstream)
    assert seen == set(pair.replicas), f"/v1/gradient only reached {seen}"
