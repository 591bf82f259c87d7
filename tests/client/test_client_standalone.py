"""The client stands alone: ``import client`` loads no engine or service module (what the
two share lives in ``gradcore``), and ``Session``/``AsyncSession`` behave the same."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from client import AsyncSession, Session
from client.aio import AsyncGradRef, AsyncTensor
from client.tensor import GradRef, Tensor
from client.transport import AsyncTransport, Transport

ROOT = Path(__file__).resolve().parents[2]


def test_import_client_loads_no_engine_module() -> None:
    code = (
        "import sys, client; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('engine', 'service')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_gradcore_imports_nothing_of_ours() -> None:
    code = (
        "import sys, gradcore.results, gradcore.messages, gradcore.printing, gradcore.version; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('engine', 'service', 'client', 'numpy')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_client_and_engine_print_alike() -> None:
    """One set of repr rules (``gradcore.printing``): a client's values print as the
    engine's tensor of the same values does, summarized, wrapped and suffixed alike."""
    import engine
    from client.tensor import describe

    rng = np.random.default_rng(0)
    arrays = [
        np.float32([1.0, 4.0]),
        np.float64([0.5, 0.25]),
        np.float32([1e-5, 3.0, 1e9]),
        np.arange(12, dtype=np.int64).reshape(3, 4),
        np.array([True, False]),
        rng.normal(size=(40, 50)).astype(np.float32),  # summarized
        np.zeros((0, 3), np.float32),
        np.float16([1.5, -2.0]),
    ]
    for values in arrays:
        want = repr(engine.tensor(values))
        meta = {"shape": list(values.shape), "dtype": str(values.dtype)}
        assert describe(meta, values) == want
    big = {"shape": [100, 50], "dtype": "float64", "grad_fn": "MulBackward0"}
    assert describe(big, None) == (
        "tensor([...], size=(100, 50), dtype=torch.float64, grad_fn=<MulBackward0>)"
    )


def _sync_grad(url: str) -> list[float]:
    with Session(url, name=f"list-{uuid.uuid4().hex[:8]}") as s:
        x = s.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.backward([0.1, 1.0, 0.0001])
        out = x.grad.numpy().tolist()
        s.delete()
        return out


async def _async_grad(url: str) -> list[float]:
    async with AsyncSession(url, name=f"alist-{uuid.uuid4().hex[:8]}") as s:
        x = s.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        await y.backward([0.1, 1.0, 0.0001])
        out = (await x.grad.numpy()).tolist()
        await s.delete()
        return out


def test_a_list_as_gradient_in_both_clients(server: str) -> None:
    sync = _sync_grad(server)
    aio = asyncio.run(_async_grad(server))
    assert sync == aio
    np.testing.assert_allclose(sync, [0.2, 2.0, 0.0002], rtol=1e-6)


# what only one of them has: the lifecycle (``close`` / ``open``, ``aclose``, as httpx's
# clients); every other call is written once in client.base
SYNC_ONLY = {"close"}
ASYNC_ONLY = {"open", "aclose"}


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in inspect.getmembers(cls, callable)
        if not name.startswith("_")
    }


def test_both_sessions_offer_the_same_calls() -> None:
    """Every call of one is a call of the other with the same parameters (awaited in
    AsyncSession), but for the few listed above."""
    sync, aio = _public(Session), _public(AsyncSession)
    assert set(sync) - SYNC_ONLY == set(aio) - ASYNC_ONLY
    for name in set(sync) & set(aio):
        assert list(sync[name].parameters) == list(aio[name].parameters), name


def test_each_call_is_written_once() -> None:
    """Both sessions' calls are the same functions (client/base.py's conversations), so
    they cannot drift apart; only the lifecycle and the drivers are their own."""
    shared = (set(_public(Session)) - SYNC_ONLY) & (set(_public(AsyncSession)) - ASYNC_ONLY)
    assert {"backward", "grad", "tensor", "flush", "program", "graph", "zero_grad"} <= shared
    for name in shared:
        assert getattr(Session, name) is getattr(AsyncSession, name), name


# what a handle of one session does its own way: attributes an async handle cannot await
# (values, metadata read on use), the conversions that would need a value now, the class
# of its ``.grad``
HANDLE_OWN = {"_metadata", "_values", "__repr__", "__array__", "__float__", "__int__"}
HANDLE_OWN |= {"__bool__", "__index__", "data", "_sync_read", "_grad_ref"}


def _handle_calls(cls: type) -> dict[str, Any]:
    """The methods and properties the client's classes give ``cls``, as stored."""
    mine = [c for c in cls.__mro__ if c.__module__.startswith("client.")]
    names = {n for c in mine for n, v in vars(c).items() if callable(v) or isinstance(v, property)}
    return {n: inspect.getattr_static(cls, n) for n in names}


def test_each_handle_read_is_written_once() -> None:
    """A tensor handle's reads (``numpy``, ``item``, ``meta``, ``retain_grad``, ...) are the
    same functions in both sessions, conversations driven by the session: awaited in an
    AsyncSession, run now in a Session."""
    reads = {"numpy", "item", "tolist", "meta", "grad_values", "retain_grad", "requires_grad_"}
    for sync_cls, async_cls in ((Tensor, AsyncTensor), (GradRef, AsyncGradRef)):
        sync, aio = _handle_calls(sync_cls), _handle_calls(async_cls)
        assert set(aio) == set(sync) | {"_sync_read"}, async_cls
        assert reads | {"backward", "zero_", "detach"} <= set(sync)
        for name in set(sync) - HANDLE_OWN:
            assert sync[name] is aio[name], (async_cls, name)
    assert sync["grad"] is aio["grad"]  # one property: a reference in an async session


def test_both_transports_send_the_same_way() -> None:
    """The httpx transports share their set-up and their request (one conversation)."""
    assert Transport._request is AsyncTransport._request
    assert Transport.__mro__[1] is AsyncTransport.__mro__[1]  # one set-up: __init__ of both
