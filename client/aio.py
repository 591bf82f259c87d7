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

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import errors, wire
from .base import SessionBase
from .printing import tensor_repr
from .session import supports_programs
from .steps import Steps
from .tensor import GradRef, Tensor
from .transport import AsyncTransport

_ITEMS = ("backward", "grad", "zero_grad")


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

    async def meta(self) -> dict[str, Any]:
        """The tensor's metadata (shape, dtype, requires_grad, is_leaf, grad_fn, version)."""
        self._check()
        if self._meta is None or self._session._queued():
            await self._session.flush()
            self._check()
        if self._meta is None:
            self._set_meta(await self._session.fetch(self._name, values=False))
        assert self._meta is not None
        return self._meta

    async def numpy(self) -> np.ndarray:  # type: ignore[override]
        """The values, as a new numpy array (sends what is queued first)."""
        self._check()
        if self._value is None or self._session._queued():
            got = await self._session.flush(fetch=[self._name])
            self._check()
            if self._name in got:
                self._value = wire.decode(got[self._name])
        if self._value is None:
            self._set_meta(await self._session.fetch(self._name, values=True))
        assert self._value is not None
        return self._value.copy()

    async def item(self) -> float | int | bool:  # type: ignore[override]
        values = await self.numpy()
        if values.size != 1:
            raise RuntimeError(
                f"a Tensor with {values.size} elements cannot be converted to Scalar"
            )
        return values.reshape(()).item()  # type: ignore[no-any-return]

    async def tolist(self) -> Any:
        return (await self.numpy()).tolist()

    async def grad_values(self) -> np.ndarray | None:
        """``x.grad`` as a numpy array, or None when it is None."""
        self._check()
        return await self._session.read_grad(self._name)

    @property
    def grad(self) -> AsyncGradRef:  # type: ignore[override]
        """``x.grad`` as a reference: in an op (``w - lr * w.grad``) it is the remote grad,
        ``x.grad.zero_()`` queues a zero_grad, ``await x.grad.numpy()`` reads it (None if
        there is none)."""
        self._check()
        return AsyncGradRef(self)

    @grad.setter
    def grad(self, value: None) -> None:
        raise NotImplementedError("in an AsyncSession: s.zero_grad([t], set_to_none=True)")

    def backward(  # type: ignore[override]
        self,
        gradient: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> Any:
        """``await y.backward(...)``."""
        return self._session.backward(
            [self],
            None if gradient is None else [gradient],
            retain_graph=retain_graph,
            create_graph=create_graph,
            inputs=inputs,
        )

    async def retain_grad(self) -> None:  # type: ignore[override]
        await self._session.flush()
        self._set_meta(await self._session.patch(self, {"retain_grad": True}))

    async def requires_grad_(self, requires_grad: bool = True) -> AsyncTensor:  # type: ignore[override]
        await self._session.flush()
        self._set_meta(await self._session.patch(self, {"requires_grad": requires_grad}))
        return self

    def __repr__(self) -> str:
        if self._value is None or self._meta is None:
            return f"<gradserve.AsyncTensor {self._name!r} (await t.numpy() to read it)>"
        return tensor_repr(
            self._value,
            grad_fn=self._meta.get("grad_fn"),
            requires_grad=self._meta.get("requires_grad", False),
        )

    def _sync_read(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an AsyncTensor's values are awaited: await t.numpy() / await t.item()")

    __array__ = __float__ = __int__ = __bool__ = __index__ = _sync_read  # type: ignore[assignment]

    @property
    def data(self) -> Any:  # type: ignore[override]
        """``x.data``: the same values without history (a queued ``detach``)."""
        return self.detach()

    @data.setter
    def data(self, values: Any) -> None:
        self._session.steps.assign_value(self, np.asarray(values))


class AsyncGradRef(GradRef, AsyncTensor):  # type: ignore[misc]
    """``x.grad`` of an ``AsyncTensor``."""

    async def numpy(self) -> np.ndarray | None:  # type: ignore[override]
        return await self._session.read_grad(self._name)

    async def meta(self) -> dict[str, Any]:
        raise TypeError("a .grad has no session metadata; await x.grad.numpy()")

    def zero_(self) -> AsyncGradRef:
        self._session.zero_grad(tensors=[self._owner])
        return self

    @property  # type: ignore[misc]
    def data(self) -> AsyncGradRef:  # type: ignore[override]
        return self  # x.grad.data.zero_()

    def backward(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.steps.expr(f"{self._name}.grad").backward(*args, **kwargs)


class AsyncSession(SessionBase):
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
        self.encoding = encoding
        self.binary = binary  # raw bytes for leaves, values, grads: None = by size
        self.clean = clean
        self.programs = False
        self._path = ""
        # queued actions in order: batch items (dicts), or (method, path, request arguments)
        self._actions: list[dict[str, Any] | tuple[str, str, dict[str, Any]]] = []
        self._pending: list[Tensor] = []
        self._deleted = False
        self._opened = False
        self.steps = Steps(self, {}, self._submit, handle=AsyncTensor)
        self.steps.lazy = True

    # --- lifecycle -----------------------------------------------------------------------------

    async def open(self) -> AsyncSession:
        """Create (or attach to) the session and read the op catalogue."""
        self.name = await self._arun(self._open(self.name or None, self.create))
        self.programs = supports_programs(await self._t.request("GET", "/openapi.json"))
        self._opened = True
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
            if self.clean and self._opened and not self._deleted:
                self._actions.clear()
                self._pending.clear()
                mine = set(self.steps.temporaries())
                if mine:
                    info = await self._t.request("GET", self._path)
                    for t in info.get("tensors", []):
                        if t["name"] in mine:
                            with contextlib.suppress(errors.TensorNotFoundError):
                                await self._t.request("DELETE", f"{self._path}/tensors/{t['name']}")
        finally:
            await self._t.aclose()

    async def delete(self) -> None:
        """Drop the session on the server."""
        self._actions.clear()
        self._pending.clear()
        await self._t.request("DELETE", self._path)
        self._deleted = True

    def __repr__(self) -> str:
        return f"AsyncSession({self.name!r}, {len(self._actions)} queued)"

    # --- the queue -----------------------------------------------------------------------------

    def _queued(self) -> bool:
        return bool(self._actions)

    def _submit(self, step: dict[str, Any], outs: list[Tensor]) -> None:
        self._actions.append(step)
        self._pending.extend(outs)

    async def flush(self, fetch: Sequence[str] = ()) -> dict[str, Any]:
        """Send what is queued, in order; the values of ``fetch`` names when the server
        could read them in the last ``/batch``."""
        actions, pending = self._actions, self._pending
        self._actions, self._pending = [], []
        group: list[dict[str, Any]] = []
        values: dict[str, Any] = {}
        try:
            for i, action in enumerate(actions):
                if isinstance(action, dict):
                    group.append(action)
                    if i + 1 < len(actions):
                        continue
                    values = await self._send_batch(group, pending, fetch)
                    group = []
                    continue
                if group:
                    await self._send_batch(group, pending, ())
                    group = []
                method, path, request = action
                await self._t.request(method, path, **request)
        except errors.GradserveError as exc:
            for h in pending:
                if h._meta is None:
                    h._failed = exc
            self.steps.grads.clear()
            raise
        return values

    async def _send_batch(
        self, items: list[dict[str, Any]], pending: list[Tensor], fetch: Sequence[str]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"steps": items}
        fetching = bool(fetch) and self.programs
        if fetching:
            body["fetch"] = list(fetch)
        answer = await self._t.request(  # the output options cover the fetched values too
            "POST", f"{self._path}/batch", json=body, params=self._params(fetching)
        )
        metas = {m.get("name"): m for m in answer.get("tensors", [])}
        for h in pending:
            if not h._stale and h._name in metas:
                h._set_meta(metas[h._name])
        return answer.get("values") or {}  # type: ignore[no-any-return]

    # --- reads (awaited) -------------------------------------------------------------------------

    async def fetch(self, name: str, *, values: bool) -> dict[str, Any]:
        await self.flush()
        raw, meta = self._raw(name) if values else (False, None)
        if raw:  # (no metadata in a binary answer: the handle keeps what it knows)
            return {**(meta or {}), "data": await self._get_raw(f"tensors/{name}")}
        return await self._t.request(  # type: ignore[no-any-return]
            "GET", f"{self._path}/tensors/{name}", params=self._params(values)
        )

    async def _get_raw(self, path: str) -> np.ndarray | None:
        """A binary download (None for a grad that is None: 204)."""
        return await self._arun(self._download(path))  # type: ignore[no-any-return]

    def grad_pending(self, name: str) -> bool:
        return True  # x.grad is always a reference here, read when awaited

    async def read_grad(self, name: str) -> np.ndarray | None:
        if self._actions:
            got = await self.flush(fetch=[f"{name}.grad"])
            if f"{name}.grad" in got:
                value = got[f"{name}.grad"]
                return None if value is None else wire.decode(value)
        cached = self.steps.grads.get(name)
        if cached is not None:
            return cached.copy()
        if self._raw(name)[0]:
            grad = await self._get_raw(f"tensors/{name}/grad")
            if grad is None:
                return None
            self.steps.grads[name] = grad
            return grad.copy()
        body = await self._t.request(
            "GET", f"{self._path}/tensors/{name}/grad", params=self._params()
        )
        if body.get("grad") is None:
            return None
        self.steps.grads[name] = wire.decode(body["grad"])
        return self.steps.grads[name].copy()  # type: ignore[union-attr]

    async def patch(self, t: Tensor, body: dict[str, Any]) -> dict[str, Any]:
        return await self._arun(self._patch(t, body))  # type: ignore[no-any-return]

    async def clear_grad(self, name: str) -> None:
        await self._arun(self._clear_grad(name))

    async def info(self) -> dict[str, Any]:
        return await self._arun(self._info())  # type: ignore[no-any-return]

    def __getitem__(self, name: str) -> AsyncTensor:
        """A handle on a name bound in the session (its metadata: ``await t.meta()``)."""
        handle = self.steps.handles.get(name)
        if handle is None:
            handle = self.steps.handle(self, name, None)
            self.steps.handles[name] = handle
        return handle  # type: ignore[return-value]

    # --- building (queued) -----------------------------------------------------------------------

    def tensor(
        self,
        data: Any,
        *,
        requires_grad: bool = False,
        name: str | None = None,
        dtype: str | None = None,
    ) -> AsyncTensor:
        """``torch.tensor(data, requires_grad=...)``: a leaf, PUT with the next flush."""
        arr = wire.as_array(data, dtype)
        generated = name is None
        name = name or self.steps.new_name()
        if wire.use_binary(self.binary, arr.size):
            request = wire.raw_upload(arr, requires_grad)
            request["params"].update(self._params(False))
        else:
            body = {**wire.encode(arr), "requires_grad": requires_grad}
            request = {"json": body, "params": self._params(False)}
        meta = {
            "name": name,
            "shape": list(arr.shape),
            "dtype": wire.dtype_name(arr.dtype),
            "requires_grad": requires_grad,
            "is_leaf": True,
            "grad_fn": None,
            "retains_grad": False,
            "version": 0,
        }
        handle = self.steps.bind(name, meta, generated=generated)
        handle._value = arr.astype(wire.DTYPES[wire.dtype_name(arr.dtype)])
        self._actions.append(("PUT", f"{self._path}/tensors/{name}", request))
        return handle  # type: ignore[return-value]

    def manual_seed(self, seed: int) -> None:
        """``torch.manual_seed(seed)`` for this session (queued)."""
        self._actions.append({"op": "manual_seed", "args": [int(seed)]})

    def zero_grad(self, set_to_none: bool = False, tensors: Sequence[Tensor] | None = None) -> None:
        """Zero the grads of ``tensors``, or of every leaf (queued)."""
        body = self.steps.zero_grad_body(set_to_none, tensors)
        if self.programs:
            last = self._actions[-1] if self._actions else None
            if self._merge_zero_grad(
                last.get("zero_grad") if isinstance(last, dict) else None, body
            ):
                return
            self._actions.append({"zero_grad": body})
        else:
            request = {"json": body, "params": self._params(False)}
            self._actions.append(("POST", f"{self._path}/zero_grad", request))

    async def _know_dtypes(self, outputs: Any, grads: Any) -> None:
        """A gradient given as data is cast to its output's dtype (as in the sync client):
        read the metadata of outputs still queued (``await y.backward([0.1, 1.0])``)."""
        if grads is None:
            return
        for t in [outputs] if isinstance(outputs, Tensor) else list(outputs):
            if isinstance(t, AsyncTensor) and not isinstance(t, GradRef) and t._meta is None:
                await t.meta()

    # --- autograd (awaited) ----------------------------------------------------------------------

    async def backward(
        self,
        tensors: Any,
        grad_tensors: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """``torch.autograd.backward``: sends the queue and the backward."""
        await self._know_dtypes(tensors, grad_tensors)
        body = self.steps.backward_body(tensors, grad_tensors, retain_graph, create_graph, inputs)
        self.steps.grads.clear()
        if self.programs:
            self._actions.append({"backward": body})
            await self.flush()
            return
        await self.flush()
        result = await self._t.request(
            "POST", f"{self._path}/backward", json=body, params=self._params()
        )
        for name, value in result["grads"].items():
            self.steps.grads[name] = wire.decode(value)

    async def grad(
        self,
        outputs: Any,
        inputs: Any,
        grad_outputs: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        allow_unused: bool = False,
    ) -> tuple[Tensor | None, ...]:
        """``torch.autograd.grad``: handles bound in the session (with their values)."""
        await self._know_dtypes(outputs, grad_outputs)
        body, names = self.steps.grad_body(
            outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused
        )
        try:
            await self.flush()
            result = await self._t.request(
                "POST", f"{self._path}/grad", json=body, params=self._params()
            )
        except BaseException:
            self.steps.release(names)
            raise
        self.steps.grads.clear()  # a non-leaf on the path that retains grad got a new .grad
        handles = self.steps.grad_handles(names, result["grads"], wire.decode)
        for h in handles:  # metadata for await-free attributes
            if h is not None:
                h._set_meta(await self.fetch(h.name, values=False))
        return handles

    # --- files ---------------------------------------------------------------------------------

    async def save(self, path: str | Path) -> None:
        """The session's leaves and grads to a safetensors file (``GET .../export``)."""
        await self._arun(self._save(path))

    async def load(self, path: str | Path) -> None:
        """Leaves and grads from a safetensors file (``POST .../import``), all or nothing."""
        await self._arun(self._load(path))
