"""What one container of the image must answer over HTTP, written once:
``docker/smoke.sh`` runs these against the built image (``GRADSERVE_IMAGE_URL``),
``make test`` against a server started from this checkout (see conftest.py).

The tutorial example is ``x = [1, 2]`` requiring grad, ``y = x ** 2``,
``y.backward([1, 1])``, so ``x.grad == [2, 4]``: by a session, and by one stateless
``POST /v1/gradient``. Tensors of every engine dtype go in and out as raw bytes.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]
DTYPE_BYTES = {"float16": 2, "float32": 4, "float64": 8, "uint8": 1, "int8": 1, "int16": 2}
DTYPE_BYTES |= {"int32": 4, "int64": 8, "bool": 1}
GRADIENT = {
    "tensors": {"x": {"data": [1.0, 2.0], "requires_grad": True}},
    "steps": [{"out": "y", "op": "pow", "args": ["x", 2]}],
    "backward": {"tensors": "y", "grad_tensors": [{"data": [1.0, 1.0]}]},
    "fetch": ["x.grad"],
}


def tutorial_steps(name: str) -> list[tuple[str, str, Any]]:
    return [
        ("PUT", f"/v1/sessions/{name}/tensors/x", {"data": [1.0, 2.0], "requires_grad": True}),
        ("POST", f"/v1/sessions/{name}/ops", {"out": "y", "op": "pow", "args": ["x", 2]}),
        (
            "POST",
            f"/v1/sessions/{name}/backward",
            {"tensors": "y", "grad_tensors": [{"data": [1.0, 1.0]}]},
        ),
    ]


def flat(v: Any) -> list[float]:
    """A wire tensor (``{"data": ...}`` or nested lists) as a flat list of floats."""
    if isinstance(v, dict):
        v = v["data"]
    if isinstance(v, list):
        return [x for item in v for x in flat(item)]
    return [float(v)]


def call(
    http: httpx.Client, method: str, url: str, body: Any = None, expect: int = 200
) -> httpx.Response:
    r = http.request(method, url, json=body)
    assert r.status_code == expect, f"{method} {url} -> {r.status_code}: {r.text[:500]}"
    return r


def test_healthz_answers_ok(http: httpx.Client, base_url: str) -> None:
    assert call(http, "GET", f"{base_url}/healthz").json() == {"status": "ok"}


def test_tutorial_example_by_a_session(http: httpx.Client, base_url: str) -> None:
    name = f"image-{uuid.uuid4().hex[:10]}"
    created = call(http, "POST", f"{base_url}/v1/sessions", {"name": name}, expect=201)
    assert created.json()["name"] == name
    expects = [201, 201, 200]
    for (method, path, body), status in zip(tutorial_steps(name), expects):
        call(http, method, base_url + path, body, expect=status)
    grad = call(http, "GET", f"{base_url}/v1/sessions/{name}/tensors/x/grad").json()["grad"]
    assert flat(grad) == [2.0, 4.0] and grad["dtype"] == "float32"
    call(http, "DELETE", f"{base_url}/v1/sessions/{name}", expect=204)
    gone = call(http, "GET", f"{base_url}/v1/sessions/{name}", expect=404)
    assert gone.headers["content-type"].startswith("application/problem+json")
    assert gone.json()["code"] == "session_not_found"


def test_tutorial_example_stateless(http: httpx.Client, base_url: str) -> None:
    values = call(http, "POST", f"{base_url}/v1/gradient", GRADIENT).json()["values"]
    assert flat(values["x.grad"]) == [2.0, 4.0]


def test_raw_bytes_in_and_out_for_every_dtype(http: httpx.Client, base_url: str) -> None:
    name = f"image-{uuid.uuid4().hex[:10]}"
    call(http, "POST", f"{base_url}/v1/sessions", {"name": name}, expect=201)
    try:
        for dtype in DTYPES:
            raw = bytes(range(48))[: 6 * DTYPE_BYTES[dtype]] if dtype != "bool" else b"\0\1" * 3
            url = f"{base_url}/v1/sessions/{name}/tensors/t"
            r = http.put(
                url,
                params={"dtype": dtype, "shape": "2,3"},
                content=raw,
                headers={"Content-Type": "application/octet-stream"},
            )
            assert r.status_code in (200, 201), r.text
            assert r.json()["dtype"] == dtype and r.json()["shape"] == [2, 3]
            back = call(http, "GET", url, None).json()
            assert back["dtype"] == dtype and back["data"]["dtype"] == dtype
            got = http.get(url, headers={"Accept": "application/octet-stream"})
            assert got.status_code == 200 and got.content == raw
            assert got.headers["gradserve-dtype"] == dtype
            assert got.headers["gradserve-shape"] == "2,3"
        none = http.get(f"{url}/grad", headers={"Accept": "application/octet-stream"})
        assert none.status_code == 204  # no grad
    finally:
        call(http, "DELETE", f"{base_url}/v1/sessions/{name}", expect=204)
