"""Session.program: a block recorded once and stored, then run by name (progress from the
server's events) and differentiated, compared with the same loop and torch.func."""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

import numpy as np
import pytest

from client import AsyncSession, Session


def _data(s: Session) -> tuple[Any, Any, Any]:
    X = s.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="X")
    Y = s.tensor([[1.0], [2.0], [3.0]], name="Y")
    w = s.tensor([[0.5], [-0.5]], requires_grad=True, name="w")
    return X, Y, w


def test_recorded_program_runs_as_the_loop(session: Session, server: str) -> None:
    X, Y, w = _data(session)
    with session.program("train") as train:
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with session.no_grad():
            w -= 0.01 * w.grad
        session.zero_grad(tensors=[w])
    assert train.info["pure"] is False and train.info["steps"] >= 4
    seen: list[int] = []
    out = train.run(repeat=6, fetch=[loss, "w"], every=2, progress=lambda i, v: seen.append(i))
    assert out["iterations"] == 6 and seen == [2, 4]

    with Session(server) as other:  # the same loop, sent step by step
        X2, Y2, w2 = _data(other)
        for _ in range(6):
            l2 = ((X2 @ w2 - Y2) ** 2).mean()
            l2.backward()
            with other.no_grad():
                w2 -= 0.01 * w2.grad
            other.zero_grad(tensors=[w2])
        np.testing.assert_allclose(out["values"]["w"], w2.numpy(), rtol=1e-6)
        np.testing.assert_allclose(out["values"][loss.name], l2.item(), rtol=1e-6)
        other.delete()
    np.testing.assert_allclose(w.numpy(), out["values"]["w"])  # the handle reads the session
    train.run(repeat=2, progress=True)  # a bar when tqdm is installed; the same run without


def test_reading_while_recording_is_refused(session: Session) -> None:
    X, Y, w = _data(session)
    with pytest.raises(RuntimeError, match="while recording"), session.program("p"):
        (X @ w).sum().item()


def test_derivatives_from_python(session: Session, torch: Any) -> None:
    X, Y, w = _data(session)
    with session.program("f") as f:
        p = (X @ w).tanh()
        loss = ((p - Y) ** 2).mean()
    assert f.info["pure"] is True
    J = f.jacobian(of=p, wrt=w)[p.name]["w"]
    tX, tY, tw = (torch.tensor(a) for a in (X.numpy(), Y.numpy(), w.numpy()))
    want = torch.func.jacrev(lambda w: (tX @ w).tanh())(tw)
    np.testing.assert_allclose(J, want.numpy(), rtol=1e-5, atol=1e-7)
    grads = f.per_sample_grad(of=loss, wrt=[w], batch={X: 0, Y: 0})["w"]
    per = torch.func.vmap(torch.func.grad(lambda w, x, y: ((((x @ w).tanh()) - y) ** 2).mean()),
                          in_dims=(None, 0, 0))(tw, tX, tY)  # fmt: skip
    np.testing.assert_allclose(grads, per.numpy(), rtol=1e-5, atol=1e-7)
    hv = f.hvp(of=loss, wrt=[w], v={w: np.array([[1.0], [0.0]], np.float32)})["w"]
    assert hv.shape == (2, 1)


def test_async_program_records_runs_and_differentiates(server: str, session: Session) -> None:
    """``AsyncSession.program``: the same recording, run with progress and derivatives,
    awaited; its answers equal the sync client's on the same session state."""
    X, Y, w = _data(session)
    with session.program("f") as f:
        p = (X @ w).tanh()
    want = f.jacobian(of=p, wrt=w)[p.name]["w"]

    async def run() -> tuple[Any, dict[str, Any], list[int], Any]:
        async with AsyncSession(server, name=f"a-{uuid.uuid4().hex[:8]}") as s:
            aX = s.tensor(X.numpy(), name="X")
            aY = s.tensor(Y.numpy(), name="Y")
            aw = s.tensor(w.numpy(), requires_grad=True, name="w")
            async with s.program("g") as g:
                q = (aX @ aw).tanh()
            J = (await g.jacobian(of=q, wrt=aw))[q.name]["w"]
            async with s.program("train", fetch=["w"]) as train:
                loss = ((aX @ aw - aY) ** 2).mean()
                await loss.backward()
                with s.no_grad():
                    aw -= 0.01 * aw.grad
                s.zero_grad(tensors=[aw])
            seen: list[int] = []
            out = await train.run(repeat=4, every=2, progress=lambda i, v: seen.append(i))
            graph = await s.graph([loss])
            await s.delete()
            return J, out, seen, graph

    J, out, seen, graph = asyncio.run(run())
    np.testing.assert_allclose(J, want, rtol=1e-6)
    assert out["iterations"] == 4 and seen == [2]  # (the last iteration: the result)
    for _ in range(4):  # the same loop, sync and step by step
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with session.no_grad():
            w -= 0.01 * w.grad
        session.zero_grad(tensors=[w])
    np.testing.assert_allclose(out["values"]["w"], w.numpy(), rtol=1e-6)
    assert graph["nodes"] and "<svg" in graph._repr_svg_()


def test_progress_bar_with_and_without_tqdm(
    session: Session, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``progress=True`` draws a tqdm bar when tqdm is installed (the ``progress`` extra);
    without it the run is the same, with no bar."""
    X, Y, w = _data(session)
    with session.program("train", fetch=["w"]) as train:
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        with session.no_grad():
            w -= 0.01 * w.grad
        session.zero_grad(tensors=[w])
    pytest.importorskip("tqdm")
    first = train.run(repeat=3, progress=True)
    assert "3/3" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import tqdm.auto fails
    second = train.run(repeat=3, progress=True)
    assert "3/3" not in capsys.readouterr().err
    assert first["iterations"] == second["iterations"] == 3
    assert not np.allclose(first["values"]["w"], second["values"]["w"])  # it ran again
