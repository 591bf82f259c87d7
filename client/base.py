"""What ``Session`` and ``AsyncSession`` do the same way, written once: the questions
that need no round trip (grad mode, ops by name, the wire options, whether a tensor
travels as raw bytes), and the conversations with the server as generators of effects
(``Flush()``, ``Request(...)``) that each session drives with its own transport, as
``httpx`` runs one client over a sync and an async transport: ``Session._run`` sends
with ``httpx.Client``, ``AsyncSession._arun`` awaits ``httpx.AsyncClient``. The two
differ only in how they send steps (eagerly or queued)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import errors, wire
from .steps import Steps


@dataclass
class Request:
    """An effect: one HTTP request; the driver sends back the decoded answer."""

    method: str
    path: str
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Flush:
    """An effect: send what the session has queued first."""


# a conversation with the server: yields effects, receives their results, returns a value
Conversation = Generator["Request | Flush", Any, Any]


class SessionBase:
    """The transport-free half of a session; subclasses set ``steps``, ``_t``, ``binary``
    and ``encoding``."""

    steps: Steps
    _t: Any
    binary: bool | None
    encoding: str

    _path: str

    # --- conversations, driven by Session._run / AsyncSession._arun -------------------------

    def _open(self, name: str | None, create: bool) -> Conversation:
        """Create the session (or attach to it); the op catalogue. Returns the name."""
        if name is None:
            name = (yield Request("POST", "/v1/sessions", {"json": {}}))["name"]
        elif create:
            try:
                yield Request("POST", "/v1/sessions", {"json": {"name": name}})
            except errors.SessionExistsError:
                yield Request("GET", f"/v1/sessions/{name}")
        else:
            yield Request("GET", f"/v1/sessions/{name}")
        self._path = f"/v1/sessions/{name}"
        body = yield Request("GET", "/v1/ops")  # names, forms, result rules: read once
        self.steps.catalogue.update({o["name"]: o for o in body["ops"]})
        return name

    def _info(self) -> Conversation:
        yield Flush()
        return (yield Request("GET", self._path))

    def _download(self, path: str) -> Conversation:
        """A binary download (None for a grad that is None: 204)."""
        response = yield Request(
            "GET", f"{self._path}/{path}", {"raw": "bytes", "headers": {"Accept": wire.BINARY}}
        )
        if response.status_code == 204:
            return None
        return wire.from_raw(
            response.content,
            response.headers.get(wire.DTYPE_HEADER),
            response.headers.get(wire.SHAPE_HEADER),
        )

    def _clear_grad(self, name: str) -> Conversation:
        yield Flush()
        self.steps.grads.pop(name, None)
        yield Request("DELETE", f"{self._path}/tensors/{name}/grad")

    def _patch(self, t: Any, body: dict[str, Any]) -> Conversation:
        t._check()
        yield Flush()
        self.steps.grads.pop(t.name, None)
        params = self._params(False)
        return (
            yield Request(
                "PATCH", f"{self._path}/tensors/{t.name}", {"json": body, "params": params}
            )
        )

    def _save(self, path: str | Path) -> Conversation:
        yield Flush()
        response = yield Request("GET", f"{self._path}/export", {"raw": "bytes"})
        Path(path).write_bytes(response.content)

    def _load(self, path: str | Path) -> Conversation:
        yield Flush()
        content = Path(path).read_bytes()
        headers = {"Content-Type": "application/octet-stream"}
        yield Request("POST", f"{self._path}/import", {"content": content, "headers": headers})
        self.steps.forget()

    def _run(self, conversation: Conversation) -> Any:
        """Drive a conversation with the synchronous transport (``Session``)."""
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = (
                    conversation.throw(error) if error is not None else conversation.send(value)
                )
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            try:
                if isinstance(effect, Flush):
                    value = self.flush()  # type: ignore[attr-defined]
                else:
                    value = self._t.request(effect.method, effect.path, **effect.kwargs)
            except Exception as exc:  # handed to the conversation: it may catch it
                error = exc

    async def _arun(self, conversation: Conversation) -> Any:
        """Drive a conversation with the asynchronous transport (``AsyncSession``)."""
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = (
                    conversation.throw(error) if error is not None else conversation.send(value)
                )
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            try:
                if isinstance(effect, Flush):
                    value = await self.flush()  # type: ignore[attr-defined]
                else:
                    value = await self._t.request(effect.method, effect.path, **effect.kwargs)
            except Exception as exc:
                error = exc

    @property
    def requests(self) -> int:
        """HTTP requests made so far."""
        return self._t.requests  # type: ignore[no-any-return]

    def _params(self, values: bool = True) -> dict[str, Any]:
        return {"encoding": self.encoding} if values else {"values": "false"}

    def _raw(self, name: str) -> tuple[bool, dict[str, Any] | None]:
        """Whether ``name``'s values and grad travel as raw bytes (by ``binary``, else by
        size), and its handle's metadata when known."""
        handle = self.steps.handles.get(name)
        meta = None if handle is None or handle._stale else handle._meta
        if meta is None:
            return self.binary is True, None
        return wire.use_binary(self.binary, math.prod(meta["shape"])), meta

    @staticmethod
    def _merge_zero_grad(last: Any, body: dict[str, Any]) -> bool:
        """``x.grad.zero_(); w.grad.zero_()``: one item. Whether ``body`` joined ``last``
        (a zero_grad body, or anything else)."""
        if not isinstance(last, dict) or "tensors" not in last or "tensors" not in body:
            return False
        if last.get("set_to_none") != body.get("set_to_none"):
            return False
        last["tensors"] = list(dict.fromkeys(last["tensors"] + body["tensors"]))
        return True

    # --- grad mode -------------------------------------------------------------------------------

    def is_grad_enabled(self) -> bool:
        return self.steps.is_grad_enabled()

    def no_grad(self) -> contextlib.AbstractContextManager[None]:
        """Steps sent inside run with ``"no_grad": true`` (``with torch.no_grad():``)."""
        return self.steps.grad_mode(False)

    def enable_grad(self) -> contextlib.AbstractContextManager[None]:
        return self.steps.grad_mode(True)

    # --- ops ---------------------------------------------------------------------------------------

    def expr(self, expression: str, *, name: str | None = None) -> Any:
        """A step in the server's expression language, bound to ``name`` (or a generated one):
        ``s.expr("3*a + 2*b*b + log(c)", name="y")``; names in it are session tensors."""
        return self.steps.expr(expression, name)

    def op(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Any catalogue op by name: ``s.op("cross_entropy", logits, target)``."""
        return self.steps.apply(op, args, kwargs)

    def __getattr__(self, op: str) -> Any:
        # torch-style functions: s.log(c), s.cat([a, b]), s.zeros(2, 3) -> catalogue ops
        if op.startswith("_") or op == "steps":
            raise AttributeError(op)
        self.steps.check_op(op)
        return lambda *args, **kwargs: self.steps.apply(op, args, kwargs)

    def ops(self) -> dict[str, dict[str, Any]]:
        """The catalogue (``GET /v1/ops``), by name."""
        return self.steps.catalogue
