"""Requests on one session are serialized; different sessions run in parallel; large
work runs in worker threads without breaking either."""

from __future__ import annotations

import asyncio

import pytest
from svc_helpers import SyncClient, make_settings, put

from service.app import create_app


@pytest.mark.parametrize("offload_elements", [0, 10**9])  # always a thread / never
def test_one_session_is_serialized(offload_elements: int) -> None:
    with SyncClient(create_app(make_settings(offload_elements=offload_elements))) as c:
        c.post("/v1/sessions", json={"name": "nb"})
        put(c, "nb", "n", 0.0)

        async def bump() -> int:
            r = await c.client.post("/v1/sessions/nb/ops", json={"out": "n", "expr": "n + 1"})
            return r.status_code

        async def many() -> list[int]:
            return await asyncio.gather(*(bump() for _ in range(40)))

        assert c.run(many()) == [201] * 40
        assert c.get("/v1/sessions/nb/tensors/n").json()["data"]["data"] == 40.0


def test_sessions_run_side_by_side() -> None:
    with SyncClient(create_app(make_settings(offload_elements=0))) as c:
        names = [f"s{i}" for i in range(8)]

        async def work(name: str) -> float:
            await c.client.post("/v1/sessions", json={"name": name})
            await c.client.put(
                f"/v1/sessions/{name}/tensors/x", json={"data": [1.0, 2.0], "requires_grad": True}
            )
            await c.client.post(
                f"/v1/sessions/{name}/ops", json={"out": "y", "expr": "(x ** 2).sum()"}
            )
            r = await c.client.post(f"/v1/sessions/{name}/backward", json={"tensors": "y"})
            return r.json()["grads"]["x"]["data"]

        async def all_of_them() -> list[float]:
            return await asyncio.gather(*(work(n) for n in names))

        assert c.run(all_of_them()) == [[2.0, 4.0]] * 8
