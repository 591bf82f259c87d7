"""32 clients hammering 8 sessions with ops and backward: every accumulated
gradient is exact at the end and nothing answers 5xx."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

pytestmark = pytest.mark.integration

SESSIONS, CLIENTS, ROUNDS = 8, 32, 10


def test_many_clients_many_sessions_exact_grads(server_url: str) -> None:
    with httpx.Client(base_url=server_url, timeout=60) as http:
        for s in range(SESSIONS):
            name = f"conc-{s}"
            http.delete(f"/v1/sessions/{name}")
            assert http.post("/v1/sessions", json={"name": name}).status_code == 201
            r = http.put(
                f"/v1/sessions/{name}/tensors/x",
                json={"data": [1.0, 2.0, 3.0], "requires_grad": True},
            )
            assert r.status_code in (200, 201), r.text

    def worker(k: int) -> list[int]:
        name = f"conc-{k % SESSIONS}"
        statuses = []
        with httpx.Client(base_url=server_url, timeout=60) as http:
            for i in range(ROUNDS):
                out = f"y_{k}_{i}"
                r = http.post(
                    f"/v1/sessions/{name}/ops", json={"out": out, "expr": "(x * x).sum()"}
                )
                statuses.append(r.status_code)
                r = http.post(f"/v1/sessions/{name}/backward", json={"tensors": out})
                statuses.append(r.status_code)
        return statuses

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        statuses = [s for result in pool.map(worker, range(CLIENTS)) for s in result]
    assert all(s < 500 for s in statuses), sorted(set(statuses))
    assert set(statuses) <= {200, 201}, sorted(set(statuses))
    backwards_per_session = CLIENTS // SESSIONS * ROUNDS
    with httpx.Client(base_url=server_url, timeout=60) as http:
        for s in range(SESSIONS):
            grad = http.get(f"/v1/sessions/conc-{s}/tensors/x/grad").json()["grad"]["data"]
            np.testing.assert_allclose(grad, backwards_per_session * 2 * np.array([1.0, 2.0, 3.0]))
            http.delete(f"/v1/sessions/conc-{s}")
