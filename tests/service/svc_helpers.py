"""Helpers for the service tests (a uniquely named module: tests/ is not a package)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import httpx

from service.settings import Settings

PROBLEM = "application/problem+json"
T = TypeVar("T")


def make_settings(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **overrides)  # type: ignore[call-arg]


class SyncClient:
    """``httpx.AsyncClient`` over ``ASGITransport``, driven from sync tests.

    App exceptions are re-raised (``raise_app_exceptions``), so a request that
    reaches the catch-all ``internal_error`` handler fails the test."""

    def __init__(self, app: Any, headers: dict[str, str] | None = None) -> None:
        self.app = app
        self.runner = asyncio.Runner()
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers
        )

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.runner.run(self.client.aclose())
        self.runner.close()

    def run(self, awaitable: Awaitable[T]) -> T:
        return self.runner.run(awaitable)  # type: ignore[arg-type]

    def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        return self.run(self.client.request(method, url, **kw))

    def get(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("GET", url, **kw)

    def post(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("POST", url, **kw)

    def put(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("PUT", url, **kw)

    def patch(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("PATCH", url, **kw)

    def delete(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", url, **kw)


def put(client: SyncClient, s: str, name: str, data: Any, **extra: Any) -> dict[str, Any]:
    r = client.put(f"/v1/sessions/{s}/tensors/{name}", json={"data": data, **extra})
    assert r.status_code in (200, 201), r.text
    return r.json()


def step(client: SyncClient, s: str, **body: Any) -> dict[str, Any]:
    r = client.post(f"/v1/sessions/{s}/ops", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Every error: the status, problem+json, the stable code and its type URN."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM), response.headers
    body = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    assert body["type"] == f"urn:gradserve:problem:{code}"
    assert body["title"] and isinstance(body["detail"], str)
    return body


def snapshot(client: SyncClient, s: str) -> dict[str, Any]:
    """Names, values, grads and versions of a session: for atomicity checks."""
    info = client.get(f"/v1/sessions/{s}").json()
    return {
        t["name"]: client.get(f"/v1/sessions/{s}/tensors/{t['name']}").json()
        for t in info["tensors"]
    }


# one regression training iteration as batch-program items (DESIGN.md's example)
TRAIN_ITERATION: list[dict[str, Any]] = [
    {"out": "loss", "expr": "((X @ w - Y) ** 2).mean()"},
    {"backward": {"tensors": "loss"}},
    {"out": "w", "expr": "w - 0.1 * w.grad", "assign": True},
    {"zero_grad": {"tensors": ["w"]}},
]


def regression_session(client: SyncClient, s: str) -> None:
    """Session ``s`` holding X (3x2), Y (3x1) and w (2x1, requires grad): what
    ``TRAIN_ITERATION`` reads."""
    assert client.post("/v1/sessions", json={"name": s}).status_code == 201
    put(client, s, "X", [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    put(client, s, "Y", [[1.0], [2.0], [3.0]])
    put(client, s, "w", [[0.5], [-0.5]], requires_grad=True)
