"""Batch programs as the client sends them, before the server runs them: a proxy in the
test answers DESIGN.md's ``/batch`` contract (items ``{"backward"}``, ``{"zero_grad"}``,
``{"grad"}``, and ``fetch``) by forwarding each item to today's endpoints of a live
server; so the client's requests are checked against the contract, and a training loop
against PyTorch, with one request per iteration."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import numpy as np
import orjson
import pytest

from client import Session

VERBS = {"backward": "backward", "grad": "grad", "zero_grad": "zero_grad"}


class Programs:
    """An ``httpx`` transport: batch programs split into today's requests."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url)
        self.batches: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/openapi.json":
            spec = self.http.get("/openapi.json").json()
            spec["components"]["schemas"]["BatchIn"]["properties"]["fetch"] = {"type": "array"}
            return httpx.Response(200, json=spec)
        if request.method == "POST" and path.endswith("/batch"):
            return self.batch(path[: -len("/batch")], orjson.loads(request.content), request)
        answer = self.http.request(
            request.method,
            path,
            params=request.url.params,
            content=request.content,
            headers={"Content-Type": request.headers.get("Content-Type", "application/json")},
        )
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    def batch(self, base: str, body: dict[str, Any], request: httpx.Request) -> httpx.Response:
        self.batches.append(body)
        assert set(body) <= {"steps", "fetch"}
        tensors: list[dict[str, Any]] = []
        run: list[dict[str, Any]] = []

        def send_steps() -> None:
            if run:
                answer = self.http.post(
                    f"{base}/batch", json={"steps": run}, params={"values": "false"}
                )
                assert answer.status_code == 200, answer.text
                tensors.extend(answer.json()["tensors"])
                run.clear()

        for item in body["steps"]:
            verb = next((v for v in VERBS if v in item), None)
            if verb is None:
                run.append(item)
                continue
            assert len(item) == 1, item  # {"backward": {...}} and nothing else
            send_steps()
            answer = self.http.post(f"{base}/{VERBS[verb]}", json=item[verb])
            if answer.status_code >= 400:
                return httpx.Response(answer.status_code, content=answer.content)
        send_steps()
        values: dict[str, Any] = {}
        for name in body.get("fetch", []):
            if name.endswith(".grad"):
                values[name] = self.http.get(f"{base}/tensors/{name[:-5]}/grad").json()["grad"]
            else:
                values[name] = self.http.get(f"{base}/tensors/{name}").json()["data"]
        out: dict[str, Any] = {"tensors": tensors}
        if "fetch" in body:
            out["values"] = values
        return httpx.Response(200, json=out)


def _train(T: Any, X: Any, Y: Any, steps: int) -> tuple[list[float], Any]:
    w = T.tensor([0.0, 0.0, 0.0], requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with T.no_grad():
            w -= 0.1 * w.grad
        w.grad.zero_()
        losses.append(loss.item())
    return losses, w


@pytest.mark.torch
def test_a_training_iteration_is_one_batch_program(server: str, torch: Any) -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(16, 3)).astype(np.float32)
    Y = (X @ np.float32([1.0, -2.0, 0.5])).astype(np.float32)
    proxy = Programs(server)
    with Session(
        server,
        name=f"p-{uuid.uuid4().hex[:8]}",
        batch=True,
        lazy_backward=True,
        transport=httpx.MockTransport(proxy),
    ) as s:
        assert s.programs
        Xs, Ys = s.tensor(X), s.tensor(Y)
        before = s.requests
        losses, w = _train(s, Xs, Ys, 10)
        # w's PUT, then one request per iteration (forward, backward, update, zero_grad and
        # the loss.item() read)
        assert s.requests - before == 1 + 10
        ref_losses, ref_w = _train(torch, torch.tensor(X), torch.tensor(Y), 10)
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
        np.testing.assert_allclose(w.numpy(), ref_w.detach().numpy(), rtol=1e-5)
        s.delete()
    assert len(proxy.batches) == 10
    program = proxy.batches[1]  # the second iteration, as sent
    kinds = [next((v for v in VERBS if v in item), "step") for item in program["steps"]]
    assert kinds.count("backward") == 1 and kinds[-1] == "zero_grad"
    assert kinds.index("backward") < kinds.index("zero_grad")
    assert program["steps"][-1] == {"zero_grad": {"tensors": [w.name]}}
    assert len(program["fetch"]) == 1


@pytest.mark.torch
def test_async_sessions_send_batch_programs(server: str, torch: Any) -> None:
    import asyncio

    from client import AsyncSession

    rng = np.random.default_rng(2)
    X = rng.normal(size=(8, 3)).astype(np.float32)
    Y = (X @ np.float32([0.5, 1.0, -1.0])).astype(np.float32)
    proxy = Programs(server)

    async def train() -> tuple[list[float], np.ndarray, int]:
        async with AsyncSession(
            server, name=f"pa-{uuid.uuid4().hex[:8]}", transport=httpx.MockTransport(proxy)
        ) as s:
            assert s.programs
            Xs, Ys = s.tensor(X), s.tensor(Y)
            w = s.tensor([0.0, 0.0, 0.0], requires_grad=True)
            await s.flush()
            before = s.requests
            losses = []
            for _ in range(5):
                loss = ((Xs @ w - Ys) ** 2).mean()
                await loss.backward()
                with s.no_grad():
                    w -= 0.1 * w.grad
                w.grad.zero_()
                losses.append(await loss.item())
            used = s.requests - before
            values = await w.numpy()
            await s.delete()
            return losses, values, used

    async def all_of_them() -> list[Any]:
        return await asyncio.gather(*(train() for _ in range(4)))

    ref_losses, ref_w = _train(torch, torch.tensor(X), torch.tensor(Y), 5)
    for losses, w, used in asyncio.run(all_of_them()):
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
        np.testing.assert_allclose(w, ref_w.detach().numpy(), rtol=1e-5)
        # per iteration: the backward (with the steps before it), then the update and
        # zero_grad riding with the read of the loss
        assert used == 2 * 5
