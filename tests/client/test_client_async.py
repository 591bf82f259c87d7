"""``AsyncSession``: many sessions trained concurrently in one event loop learn exactly
what the synchronous client and PyTorch learn; building costs no round trip."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import numpy as np
import pytest

from client import AsyncSession, Session, errors

SESSIONS = 16
STEPS = 5
LR = 0.1


def _data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(8, 3)).astype(np.float32)
    Y = (X @ np.float32([2.0, -3.0, 0.5]) + 1.0).astype(np.float32)
    return X, Y


def _torch_run(torch: Any, seed: int) -> tuple[list[float], np.ndarray, np.ndarray]:
    X, Y = (torch.tensor(a) for a in _data(seed))
    w = torch.zeros(3, requires_grad=True)
    b = torch.tensor(0.0, requires_grad=True)
    losses = []
    for _ in range(STEPS):
        loss = ((X @ w + b - Y) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
        with torch.no_grad():
            w -= LR * w.grad
            b -= LR * b.grad
        w.grad.zero_()
        b.grad.zero_()
    return losses, w.detach().numpy(), np.float32(b.item())


def _sync_run(url: str, seed: int) -> tuple[list[float], np.ndarray, np.ndarray]:
    with Session(url, name=f"sync-{uuid.uuid4().hex[:8]}") as s:
        Xn, Yn = _data(seed)
        X, Y = s.tensor(Xn), s.tensor(Yn)
        w = s.tensor([0.0, 0.0, 0.0], requires_grad=True)
        b = s.tensor(0.0, requires_grad=True)
        losses = []
        for _ in range(STEPS):
            loss = ((X @ w + b - Y) ** 2).mean()
            loss.backward()
            losses.append(loss.item())
            with s.no_grad():
                w -= LR * w.grad
                b -= LR * b.grad
            w.grad.zero_()
            b.grad.zero_()
        out = losses, w.numpy(), np.float32(b.item())
        s.delete()
        return out


async def _async_run(url: str, seed: int) -> tuple[list[float], np.ndarray, np.ndarray]:
    async with AsyncSession(url, name=f"aio-{seed}-{uuid.uuid4().hex[:8]}") as s:
        Xn, Yn = _data(seed)
        X, Y = s.tensor(Xn), s.tensor(Yn)
        w = s.tensor([0.0, 0.0, 0.0], requires_grad=True)
        b = s.tensor(0.0, requires_grad=True)
        losses = []
        for _ in range(STEPS):
            loss = ((X @ w + b - Y) ** 2).mean()
            await loss.backward()
            losses.append(await loss.item())
            with s.no_grad():
                w -= LR * w.grad
                b -= LR * b.grad
            w.grad.zero_()
            b.grad.zero_()
        out = losses, await w.numpy(), np.float32(await b.item())
        await s.delete()
        return out


@pytest.mark.torch
def test_sixteen_sessions_train_concurrently_like_torch_and_the_sync_client(
    server: str, torch: Any
) -> None:
    async def all_of_them() -> list[Any]:
        return await asyncio.gather(*(_async_run(server, seed) for seed in range(SESSIONS)))

    results = asyncio.run(all_of_them())
    for seed, (losses, w, b) in enumerate(results):
        ref_losses, ref_w, ref_b = _torch_run(torch, seed)
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w, ref_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, ref_b, rtol=1e-5, atol=1e-6)
        if seed < 2:  # and the synchronous client, bit for bit
            s_losses, s_w, s_b = _sync_run(server, seed)
            assert losses == s_losses
            np.testing.assert_array_equal(w, s_w)
            assert b == s_b


def test_building_is_queued_and_reads_are_awaited(server: str) -> None:
    async def run() -> None:
        async with AsyncSession(server) as s:
            start = s.requests
            x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
            y = x**2
            z = (y * 3).sum()
            assert s.requests == start  # nothing sent yet
            assert x.shape == (2,) and x.requires_grad  # a leaf's metadata is known locally
            with pytest.raises(RuntimeError, match="await t.meta"):
                _ = z.grad_fn
            meta = await z.meta()
            assert meta["grad_fn"] == "SumBackward0" and z.grad_fn == "SumBackward0"
            await z.backward(retain_graph=True)
            np.testing.assert_array_equal(await x.grad.numpy(), [6.0, 12.0])
            np.testing.assert_array_equal(await x.grad_values(), [6.0, 12.0])
            assert await y.grad_values() is None  # a non-leaf
            x.grad.zero_()
            np.testing.assert_array_equal(await x.grad_values(), [0.0, 0.0])
            assert await (x * 2).tolist() == [2.0, 4.0]
            with pytest.raises(TypeError, match="await"):
                float(z)
            (g,) = await s.grad(z, [x], create_graph=True)
            assert g is not None
            np.testing.assert_array_equal(await g.numpy(), [6.0, 12.0])
            assert g.grad_fn is not None
            bad = x + s.tensor([1.0, 2.0, 3.0])
            with pytest.raises(errors.ShapeMismatchError):
                await bad.numpy()
            await s.delete()

    asyncio.run(run())


def test_temporaries_are_removed_on_close(server: str) -> None:
    name = f"clean-{uuid.uuid4().hex[:8]}"

    async def run() -> list[str]:
        async with AsyncSession(server, name=name) as s:
            x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
            y = x * 2
            for _ in range(5):
                y = y + 1
            await y.sum().backward()
        with Session(server, name=name) as check:
            names = [t["name"] for t in check.info()["tensors"]]
            check.delete()
        return names

    assert asyncio.run(run()) == ["x"]
