"""Retries against a real HTTP server on 127.0.0.1 that is unavailable for a while:
``Retry-After`` is honoured for GET/PUT/DELETE, a POST that got an answer is never
sent twice."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from client import errors
from client.local import free_port
from client.transport import AsyncTransport, Transport

UNAVAILABLE = 2  # answers 503 to the first two requests of each path


class Flaky:
    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[str, float]]] = {}

    async def handle(self, request: Request) -> Response:
        seen = self.calls.setdefault(request.url.path, [])
        seen.append((request.method, time.monotonic()))
        if len(seen) <= UNAVAILABLE:
            return JSONResponse(
                {"code": "unavailable", "status": 503, "detail": "warming up"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
        return JSONResponse({"ok": True, "method": request.method})


@pytest.fixture
def flaky() -> Iterator[tuple[str, Flaky]]:
    state = Flaky()
    methods = ["GET", "PUT", "DELETE", "POST", "PATCH"]
    app = Starlette(routes=[Route("/{path:path}", state.handle, methods=methods)])
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}", state
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_idempotent_requests_wait_retry_after_then_succeed(
    flaky: tuple[str, Flaky], method: str
) -> None:
    url, state = flaky
    t = Transport(url, retries=3, backoff=0.01)
    try:
        assert t.request(method, "/v1/x", json={} if method == "PUT" else None) == {
            "ok": True,
            "method": method,
        }
    finally:
        t.close()
    times = [at for _, at in state.calls["/v1/x"]]
    assert len(times) == UNAVAILABLE + 1
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(gap >= 0.95 for gap in gaps), gaps  # Retry-After: 1, not the 0.01 s backoff


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_post_that_got_an_answer_is_not_retried(flaky: tuple[str, Flaky], method: str) -> None:
    url, state = flaky
    t = Transport(url, retries=3, backoff=0.01)
    try:
        with pytest.raises(errors.GradserveError) as info:
            t.request(method, "/v1/y", json={})
    finally:
        t.close()
    assert info.value.status == 503
    assert [m for m, _ in state.calls["/v1/y"]] == [method]


def test_retries_run_out_and_the_503_is_raised(flaky: tuple[str, Flaky]) -> None:
    url, state = flaky
    t = Transport(url, retries=1, backoff=0.01)
    try:
        with pytest.raises(errors.GradserveError) as info:
            t.request("GET", "/v1/z")
    finally:
        t.close()
    assert info.value.status == 503 and len(state.calls["/v1/z"]) == 2


def test_async_transport_retries_the_same_way(flaky: tuple[str, Flaky]) -> None:
    url, state = flaky

    async def run() -> tuple[object, str]:
        t = AsyncTransport(url, retries=3, backoff=0.01)
        try:
            got = await t.request("GET", "/v1/a")
            try:
                await t.request("POST", "/v1/b", json={})
            except errors.GradserveError as exc:
                return got, str(exc.status)
            return got, "no error"
        finally:
            await t.aclose()

    got, post = asyncio.run(run())
    assert got == {"ok": True, "method": "GET"} and post == "503"
    assert len(state.calls["/v1/a"]) == UNAVAILABLE + 1 and len(state.calls["/v1/b"]) == 1


def test_a_refused_connection_is_retried_then_reported() -> None:
    port = free_port()  # nothing listens there
    t = Transport(f"http://127.0.0.1:{port}", retries=2, backoff=0.01)
    try:
        with pytest.raises(errors.TransportError, match="ConnectError"):
            t.request("POST", "/v1/sessions", json={})
    finally:
        t.close()
