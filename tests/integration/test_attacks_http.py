"""Attacks that need a real server and a real socket: a client that goes away in the
middle of a long plain-JSON program run stops the run (as the SSE run stops), so a
stranger cannot leave a session, and a share of the CPU, busy for a run no one reads."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .conftest import start_server, stop_server

REPEAT = 10_000_000  # hours of iterations: only a stopped run answers the next request


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    proc, url = start_server({"GRADSERVE_MAX_REPEAT": str(REPEAT)})
    try:
        yield url
    finally:
        stop_server(proc)


def test_a_plain_run_stops_when_its_client_disconnects(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as c:
        assert c.post("/v1/sessions", json={"name": "gone"}).status_code == 201
        c.put("/v1/sessions/gone/tensors/x", json={"data": [0.0]}).raise_for_status()
        body = {"steps": [{"out": "x", "expr": "x + 1", "assign": True}]}
        assert c.put("/v1/sessions/gone/programs/p", json=body).status_code == 201
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes the socket
            httpx.post(f"{url}/v1/sessions/gone/programs/p/run", json={"repeat": REPEAT},
                       timeout=1.0)  # fmt: skip
        # the run released the session (else this waits for the whole run: a timeout)
        first = c.get("/v1/sessions/gone/tensors/x").json()["data"]["data"]
        (done,) = first
        assert 0 < done < REPEAT and done == int(done)  # whole iterations, kept
        again = c.get("/v1/sessions/gone/tensors/x").json()["data"]["data"]
        assert again == first  # stopped, not running on in the background
