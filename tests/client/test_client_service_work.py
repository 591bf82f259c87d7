"""Client features that need the service's batch programs, seeds and safetensors
export/import (DESIGN.md "Batch programs", "Binary tensors, export and import",
"Randomness"). These run against the server of this tree; they pass once that
service work is merged."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from client import AsyncSession, Session


def _name() -> str:
    return f"sw-{uuid.uuid4().hex[:12]}"


@pytest.mark.torch
def test_manual_seed_draws_what_torch_draws(server: str, torch: Any) -> None:
    with Session(server, name=_name()) as s:
        s.manual_seed(0)
        a = s.randn(2, 3)
        b = s.rand(4)
        torch.manual_seed(0)
        np.testing.assert_array_equal(a.numpy(), torch.randn(2, 3).numpy())
        np.testing.assert_array_equal(b.numpy(), torch.rand(4).numpy())
        s.delete()


@pytest.mark.torch
def test_save_is_a_safetensors_file_torch_reads_and_load_restores(
    server: str, torch: Any, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    path = tmp_path / "session.safetensors"
    with Session(server, name=_name()) as s:
        w = s.tensor([1.0, 2.0, 3.0], requires_grad=True, name="w")
        (w * w).sum().backward()
        s.save(path)
        s.delete()
    loaded = load_file(str(path))
    np.testing.assert_array_equal(loaded["w"].numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(loaded["w.grad"].numpy(), [2.0, 4.0, 6.0])
    with Session(server, name=_name()) as t:
        t.load(path)
        w2 = t["w"]
        assert w2.requires_grad and w2.is_leaf
        np.testing.assert_array_equal(w2.numpy(), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(w2.grad.numpy(), [2.0, 4.0, 6.0])
        t.delete()


def test_batch_mode_sends_a_training_iteration_as_one_request(server: str) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 3)).astype(np.float32)
    Y = (X @ np.float32([1.0, -2.0, 0.5])).astype(np.float32)
    with Session(server, name=_name(), batch=True, lazy_backward=True) as s:
        assert s.programs, "the server's /batch does not take backward/zero_grad items yet"
        Xs, Ys = s.tensor(X), s.tensor(Y)
        w = s.tensor([0.0, 0.0, 0.0], requires_grad=True, name="w")
        losses = []
        before = s.requests
        for _ in range(10):
            loss = ((Xs @ w - Ys) ** 2).mean()
            loss.backward()
            with s.no_grad():
                w -= 0.1 * w.grad
            w.grad.zero_()
            losses.append(loss.item())  # fetched by the same /batch
        assert s.requests - before == 10
        assert losses[-1] < losses[0]
        s.delete()


def test_async_session_iteration_is_one_request_with_programs(server: str) -> None:
    async def run() -> int:
        async with AsyncSession(server, name=_name()) as s:
            assert s.programs
            w = s.tensor([1.0, 2.0], requires_grad=True, name="w")
            await s.flush()
            before = s.requests
            loss = (w * w).sum()
            await loss.backward()
            with s.no_grad():
                w -= 0.1 * w.grad
            w.grad.zero_()
            np.testing.assert_allclose(await w.numpy(), [0.8, 1.6])
            used = s.requests - before
            await s.delete()
            return used

    assert asyncio.run(run()) == 2  # the backward, then the update + zero_grad with the read
