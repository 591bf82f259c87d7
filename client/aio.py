"""``AsyncSession``: the torch-like client on ``httpx.AsyncClient``, for many sessions
in one event loop.

    async with AsyncSession(url, name="a") as s:
        w = s.tensor([0.0, 0.0], requires_grad=True, name="w")  # queued, no round trip
        loss = ((X @ w - Y) ** 2).mean()                        # queued
        await loss.backward()                                   # sends the queue, runs backward
        with s.no_grad():
            w -= 0.1 * w.grad                                   # queued
        w.grad.zero_()                                          # queued
        print(await loss.item(), await w.numpy())               # sends the queue, reads

Every session method is written once in ``client.base`` (shared with ``Session``); this
module adds the awaited handle, the asynchronous transport, its driver and the lifecycle.

Building is synchronous and costs nothing on the wire: leaves, ops, operators,
in-place updates, ``zero_grad`` and ``manual_seed`` are queued in order.
What needs an answer is awaited, and sends the queue first: values
(``await t.numpy()``, ``t.item()``, ``t.tolist()``), metadata
(``await t.meta()``, after which ``t.shape``, ``t.dtype``, ``t.grad_fn``... are
plain attributes), grads (``await t.grad_values()`` or ``await
t.grad.numpy()``; None when there is no grad), ``await y.backward()``, ``await
s.grad(...)``, ``await s.flush()``, ``await s.info()``, ``await s.save(path)``
and ``await s.load(path)``. Against a server that runs batch programs
(DESIGN.md), a queue of steps, ``backward`` and ``zero_grad`` is one
``/batch`` request and the value read rides in it (``fetch``); otherwise the
queue goes out as ``/batch`` requests between the leaf PUTs and the
backward/zero_grad calls, in order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import SessionBase
from .conversation import Conversation, Request, Stream, drive
from .programs import ProgramsMixin
from .tensor import GradRef, Tensor, describe
from .transport import AsyncTransport


class AsyncTensor(Tensor):
    """A handle in an ``AsyncSession``: ops are queued; reads and backward are awaited."""

    _session: Any  # an AsyncSession

    def _metadata(self) -> dict[str, Any]:
        self._check()
        if self._meta is None:
            raise RuntimeError(
                f"the metadata of {self._name!r} is not known yet: await t.meta() (or any read, "
                "or s.flush()) first"
            )
        return self._meta

    def __repr__(self) -> str:
        if self._value is None or self._meta is None:
            return f"<gradserve.AsyncTensor {self._name!r} (await t.numpy() to read it)>"
        return describe(self._meta, self._value)

    def _sync_read(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an AsyncTensor's values are awaited: await t.numpy() / await t.item()")

    __array__ = __float__ = __int__ = __bool__ = __index__ = _values = _sync_read  # type: ignore[assignment]

    @property
    def data(self) -> Any:  # type: ignore[override]
        """``x.data``: the same values without history (a queued ``detach``)."""
        return self.detach()

    @data.setter
    def data(self, values: Any) -> None:
        self._session.steps.assign_value(self, np.asarray(values))


class AsyncGradRef(GradRef, AsyncTensor):  # type: ignore[misc]
    """``x.grad`` of an ``AsyncTensor``: its reads are ``GradRef``'s, awaited."""

    @property  # type: ignore[misc]
    def data(self) -> AsyncGradRef:  # type: ignore[override]
        return self  # x.grad.data.zero_()


AsyncTensor._grad_ref = AsyncGradRef


class AsyncSession(ProgramsMixin, SessionBase):
    """A gradserve session driven from asyncio; see the module docstring."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        name: str | None = None,
        *,
        api_key: str | None = None,
        create: bool = True,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.1,
        encoding: str = "base64",
        binary: bool | None = None,
        clean: bool = True,
        transport: Any = None,
    ) -> None:
        if encoding not in ("json", "base64"):
            raise ValueError("encoding is 'json' or 'base64'")
        self._t = AsyncTransport(
            url,
            api_key=api_key,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            transport=transport,
        )
        self.name = name or ""
        self.create = create
        self.batch = True  # building queues; whatever needs an answer is awaited
        self.deferred = True
        self.lazy_backward = False  # ``await y.backward()`` raises its own errors
        self.max_batch = 1 << 62
        self.encoding = encoding
        self.binary = binary  # raw bytes for leaves, values, grads: None = by size
        self.clean = clean
        self._init_state(AsyncTensor)
        self.steps.lazy = True

    def _drive(self, conversation: Conversation) -> Any:
        """Run a conversation with ``httpx.AsyncClient``: an awaitable of its value."""
        return drive(conversation, self._send)

    async def _send(self, effect: Request | Stream) -> Any:
        if isinstance(effect, Request):
            return await self._t.request(effect.method, effect.path, **effect.kwargs)
        return await self._t.stream(effect.path, effect.body, effect.on_progress)

    def _build(self, conversation: Conversation) -> Any:
        return self._no_io(conversation)  # building only queues here

    # --- lifecycle -----------------------------------------------------------------------------

    async def open(self) -> AsyncSession:
        """Create (or attach to) the session and read the op catalogue."""
        self.name = await self._drive(self._open(self.name or None, self.create))
        return self

    async def __aenter__(self) -> AsyncSession:
        return await self.open()

    async def __aexit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None:
                await self.flush()
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Unbind this client's temporaries and close the connection (the session stays)."""
        try:
            await self._drive(self._closing())
        finally:
            await self._t.aclose()
