"""One session, written once, over two transports (as ``httpx`` runs one client over a sync
and an async transport).

Every behaviour of a session is a conversation: a generator that yields effects
(``Request``: one HTTP request; ``Stream``: a request answered with Server-Sent
Events) and receives their answers. ``Session`` drives a conversation with
``httpx.Client`` and returns its value; ``AsyncSession`` drives the same
conversation with ``httpx.AsyncClient`` and returns an awaitable. A method is
declared once here with ``awaited`` (``s.backward(...)`` in one,
``await s.backward(...)`` in the other) or ``building`` (never awaited: building a
leaf, ``zero_grad``, ``manual_seed``, a step; an ``AsyncSession`` queues it, so its
conversation asks for nothing).

What differs is policy, not code: ``batch`` (queue steps until a read),
``deferred`` (queue leaf uploads and zero_grad requests too: an async session's
building never waits), ``programs`` (the server's ``/batch`` takes backward,
zero_grad and ``fetch``), ``lazy_backward`` (queue the backward too).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import display, errors, wire
from .conversation import Conversation, Request, Stream
from .steps import Steps
from .tensor import GradRef, Tensor

Action = dict[str, Any] | Request  # a queued batch item, or a queued request


def awaited(conversation: Callable[..., Conversation]) -> Any:
    """A session method from a conversation: run now by ``Session``, awaitable in
    ``AsyncSession`` (each session's ``_drive``)."""

    @functools.wraps(conversation)
    def method(self: SessionBase, *args: Any, **kwargs: Any) -> Any:
        return self._drive(conversation(self, *args, **kwargs))

    return method


def building(conversation: Callable[..., Conversation]) -> Any:
    """A session method that is never awaited: ``Session`` may send (eager mode), an
    ``AsyncSession`` only queues (``_build``)."""

    @functools.wraps(conversation)
    def method(self: SessionBase, *args: Any, **kwargs: Any) -> Any:
        return self._build(conversation(self, *args, **kwargs))

    return method


def supports_programs(openapi: dict[str, Any]) -> bool:
    """Whether the server's ``/batch`` takes backward/grad/zero_grad items and ``fetch``."""
    schema = openapi.get("components", {}).get("schemas", {}).get("BatchIn", {})
    return "fetch" in schema.get("properties", {})


def _is_zero_grad(action: Action) -> bool:
    return isinstance(action, Request) and action.path.endswith("/zero_grad")


def _reads_grad(item: dict[str, Any]) -> bool:
    return ".grad" in item.get("expr", "") or any(k in item for k in ("backward", "grad"))


class SessionBase:
    """A session's behaviour; ``Session`` and ``AsyncSession`` add a transport, a driver
    and their lifecycle."""

    name: str
    steps: Steps
    _t: Any
    binary: bool | None
    encoding: str
    batch: bool
    deferred: bool  # leaf uploads and zero_grad requests queue too (AsyncSession)
    programs: bool
    lazy_backward: bool
    max_batch: int
    clean: bool
    _path: str
    _queue: list[Action]
    _pending: list[Tensor]  # handles whose steps are queued
    _recording: bool
    _deleted: bool

    def _init_state(self, handle: type[Tensor]) -> None:
        self._path = ""
        self._queue = []
        self._pending = []
        self._recording = False  # inside ``with s.program(...)``: queue, never send
        self._deleted = False
        self.programs = False
        self.steps = Steps(self, {}, self._submit, handle=handle)

    # --- drivers ---------------------------------------------------------------------------

    def _drive(self, conversation: Conversation) -> Any:
        raise NotImplementedError

    def _build(self, conversation: Conversation) -> Any:
        raise NotImplementedError

    async def _send(self, effect: Request | Stream) -> Any:
        raise NotImplementedError

    @staticmethod
    def _no_io(conversation: Conversation) -> Any:
        """Run a conversation that may not ask for anything (an async session's building)."""
        try:
            effect = conversation.send(None)
        except StopIteration as stop:
            return stop.value
        conversation.close()
        raise RuntimeError(f"an AsyncSession cannot send while building: {effect}")

    @property
    def requests(self) -> int:
        """HTTP requests made so far."""
        return self._t.requests  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self._queue)} queued)"

    # --- opening, info, names ----------------------------------------------------------------

    def _open(self, name: str | None, create: bool) -> Conversation:
        """Create the session (or attach to it); the op catalogue; whether ``/batch`` runs
        batch programs. Returns the name."""
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
        if self.batch:
            self.programs = supports_programs((yield Request("GET", "/openapi.json")))
        return name

    def _info(self) -> Conversation:
        """``GET /v1/sessions/{s}``: tensors' metadata, bytes, times."""
        yield from self._flush()
        return (yield Request("GET", self._path))

    info = awaited(_info)

    def _delete(self) -> Conversation:
        """Drop the session on the server."""
        self._queue.clear()
        self._pending.clear()
        yield Request("DELETE", self._path)
        self._deleted = True

    delete = awaited(_delete)

    def _remove_temporaries(self) -> Conversation:
        """Unbind every generated name this client bound; the names removed."""
        mine = set(self.steps.temporaries())
        if not mine:
            return []
        try:
            info = yield Request("GET", self._path)
        except errors.SessionNotFoundError:
            return []
        gone = [t["name"] for t in info.get("tensors", []) if t["name"] in mine]
        for name in gone:
            with contextlib.suppress(errors.TensorNotFoundError):
                yield Request("DELETE", f"{self._path}/tensors/{name}")
        self.steps.free.clear()
        return gone

    remove_temporaries = awaited(_remove_temporaries)

    def _closing(self) -> Conversation:
        """What ``close()``/``aclose()`` say before the connection closes."""
        if self.clean and self._path and not self._deleted:
            self._queue.clear()
            self._pending.clear()
            yield from self._remove_temporaries()

    def invalidate(self) -> None:
        """Forget cached values and grads (after another client wrote this session)."""
        self.steps.forget()

    def decode(self, value: dict[str, Any]) -> np.ndarray:
        return wire.decode(value)

    def _getitem(self, name: str) -> Conversation:
        """A handle on a tensor already bound in the session (``s["x"]``; in an async
        session its metadata is awaited: ``await t.meta()``)."""
        handle = self.steps.handles.get(name)
        if self.deferred:
            return handle or self.steps.attach(name, None)  # type: ignore[arg-type]
        yield from self._flush()
        if handle is not None:
            return handle
        return self.steps.attach(name, (yield from self._fetch(name, values=False)))

    __getitem__ = building(_getitem)

    # --- the queue -------------------------------------------------------------------------------

    def _queued(self) -> bool:
        return bool(self._queue)

    def _enqueue(self, item: dict[str, Any], outs: list[Tensor]) -> Conversation:
        """Queue a batch item; a queued zero_grad request stays last (it commutes with a
        step that reads no grad), so a loop's update and next forward share a batch."""
        at = len(self._queue)
        if not _reads_grad(item):
            while at and _is_zero_grad(self._queue[at - 1]):
                at -= 1
        self._queue.insert(at, item)
        self._pending.extend(outs)
        if len(self._queue) >= self.max_batch:
            yield from self._flush()

    def _submit(self, step: dict[str, Any], outs: list[Tensor]) -> None:
        """A step from ``Steps``: queued (batch), or sent now (eager)."""
        self._build(self._submit_step(step, outs))

    def _submit_step(self, step: dict[str, Any], outs: list[Tensor]) -> Conversation:
        if self.batch:
            yield from self._enqueue(step, outs)
            return
        yield from self._flush()
        body = yield Request(
            "POST", f"{self._path}/ops", {"json": step, "params": self._params(False)}
        )
        by_name = {m.get("name"): m for m in body.get("tensors", [body])}
        for h in outs:
            if h._name in by_name:
                h._set_meta(by_name[h._name])

    def _flush(self, fetch: Sequence[str] = ()) -> Conversation:
        """Send what is queued, in order: batch items as one ``/batch`` (all or nothing)
        between queued requests; with ``fetch`` (a server running batch programs), the
        values of those names (``"x"``, ``"x.grad"``) read after the last item."""
        if self._recording:
            raise RuntimeError(
                "a value was read while recording a program: nothing runs until the program "
                "is stored; read it after train.run(...) (or fetch it)"
            )
        actions, pending = self._queue, self._pending
        self._queue, self._pending = [], []
        values: dict[str, Any] = {}
        group: list[dict[str, Any]] = []
        try:
            for i, action in enumerate(actions):
                if isinstance(action, dict):
                    group.append(action)
                    if i + 1 < len(actions):
                        continue
                    values = yield from self._send_batch(group, pending, fetch)
                    continue
                if group:
                    yield from self._send_batch(group, pending, ())
                    group = []
                yield action
        except errors.GradserveError as exc:
            for h in pending:  # all or nothing: none of these results exists on the server
                if h._meta is None:
                    h._failed = exc
            self.steps.grads.clear()
            raise
        return values

    flush = awaited(_flush)

    def _send_batch(
        self, items: list[dict[str, Any]], pending: list[Tensor], fetch: Sequence[str]
    ) -> Conversation:
        body: dict[str, Any] = {"steps": items}
        fetching = bool(fetch) and self.programs
        if fetching:
            body["fetch"] = list(fetch)
        answer = yield Request(  # the output options cover the fetched values too
            "POST", f"{self._path}/batch", {"json": body, "params": self._params(fetching)}
        )
        metas = {m.get("name"): m for m in answer.get("tensors", [])}
        for h in pending:
            if not h._stale and h._name in metas:
                h._set_meta(metas[h._name])
        return answer.get("values") or {}

    # --- what a handle asks of its session (steps.Remote) -----------------------------------

    def _fetch(self, name: str, *, values: bool) -> Conversation:
        """The tensor's metadata (and values): from the flush that sends queued steps when
        the server can fetch in a batch, else with a GET."""
        if self.programs and self._queue and values:
            got = yield from self._flush(fetch=[name])
            handle = self.steps.handles.get(name)
            if name in got and handle is not None and handle._meta is not None:
                return {**handle._meta, "data": got[name]}
        yield from self._flush()
        raw, meta = self._raw(name) if values else (False, None)
        if raw:  # (no metadata in a binary answer: the handle keeps what it knows)
            return {**(meta or {}), "data": (yield from self._download(f"tensors/{name}"))}
        return (
            yield Request("GET", f"{self._path}/tensors/{name}", {"params": self._params(values)})
        )

    fetch = awaited(_fetch)

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

    def grad_pending(self, name: str) -> bool:
        """Whether ``x.grad`` is a reference read when used: always in an async session;
        in a sync one when a queued batch-program backward decides it, so
        ``w -= lr * w.grad`` rides in the same request."""
        if self.deferred:
            return True
        return (
            self.lazy_backward
            and self.programs
            and any(isinstance(i, dict) and "backward" in i for i in self._queue)
        )

    def _read_grad(self, name: str) -> Conversation:
        """``name``'s grad (cached) or None, and PyTorch's warning if any."""
        cached = self.steps.grads.get(name)
        if cached is not None:  # every queued item that changes a grad updates or drops it
            return cached, None
        if self.programs and self._queue:
            got = yield from self._flush(fetch=[f"{name}.grad"])
            value = got.get(f"{name}.grad")
            if value is not None:
                self.steps.grads[name] = self.decode(value)
                return self.steps.grads[name], None
        yield from self._flush()
        cached = self.steps.grads.get(name)
        if cached is not None:
            return cached, None
        raw, meta = self._raw(name)
        if raw:
            grad = yield from self._download(f"tensors/{name}/grad")
            if grad is not None:
                self.steps.grads[name] = grad
                return grad, None
            if meta is not None and meta["is_leaf"]:
                return None, None  # (a non-leaf's PyTorch warning comes with the JSON answer)
        path = f"{self._path}/tensors/{name}/grad"
        body = yield Request("GET", path, {"params": self._params()})
        if body.get("grad") is None:
            return None, body.get("warning")
        self.steps.grads[name] = self.decode(body["grad"])
        return self.steps.grads[name], body.get("warning")

    read_grad = awaited(_read_grad)

    def _clear_grad(self, name: str) -> Conversation:
        yield from self._flush()
        self.steps.grads.pop(name, None)
        yield Request("DELETE", f"{self._path}/tensors/{name}/grad")

    clear_grad = awaited(_clear_grad)

    def _patch(self, t: Any, body: dict[str, Any]) -> Conversation:
        t._check()
        yield from self._flush()
        self.steps.grads.pop(t.name, None)
        path = f"{self._path}/tensors/{t.name}"
        return (yield Request("PATCH", path, {"json": body, "params": self._params(False)}))

    patch = awaited(_patch)

    # --- leaves, seeds, files --------------------------------------------------------------

    def _tensor(
        self,
        data: Any,
        *,
        requires_grad: bool = False,
        name: str | None = None,
        dtype: str | None = None,
    ) -> Conversation:
        """``torch.tensor(data, requires_grad=...)``: a leaf, bound with PUT (queued in an
        async session)."""
        if isinstance(data, Tensor):
            if self.deferred:
                raise TypeError("await t.numpy() first: s.tensor(await t.numpy())")
            data = data.numpy()
        arr = wire.as_array(data, dtype)
        generated = name is None
        name = name or self.steps.new_name()
        if wire.use_binary(self.binary, arr.size):
            request = wire.raw_upload(arr, requires_grad)
            request["params"].update(self._params(False))
        else:
            body = {**wire.encode(arr), "requires_grad": requires_grad}
            request = {"json": body, "params": self._params(False)}
        put = Request("PUT", f"{self._path}/tensors/{name}", request)
        if self.deferred:
            meta = wire.leaf_meta(name, arr, requires_grad)
            self._queue.append(put)
        else:
            yield from self._flush()
            meta = yield put
        handle = self.steps.bind(name, meta, generated=generated)
        handle._value = arr.astype(wire.DTYPES[wire.dtype_name(arr.dtype)].newbyteorder("="))
        return handle

    tensor = building(_tensor)

    def _manual_seed(self, seed: int) -> Conversation:
        """``torch.manual_seed(seed)`` for this session's generator (a ``manual_seed`` step):
        ``randn``/``rand``/... then draw what PyTorch draws after the same seed."""
        yield from self._submit_step({"op": "manual_seed", "args": [int(seed)]}, [])

    manual_seed = building(_manual_seed)

    def _save(self, path: str | Path) -> Conversation:
        """Write the session's leaves and their grads to a safetensors file
        (``GET .../export``; ``safetensors.torch.load_file`` reads it)."""
        yield from self._flush()
        response = yield Request("GET", f"{self._path}/export", {"raw": "bytes"})
        Path(path).write_bytes(response.content)

    save = awaited(_save)

    def _load(self, path: str | Path) -> Conversation:
        """Create or rebind the leaves (and grads) of a safetensors file (``POST .../import``),
        all or nothing."""
        yield from self._flush()
        content = Path(path).read_bytes()
        headers = {"Content-Type": "application/octet-stream"}
        yield Request("POST", f"{self._path}/import", {"content": content, "headers": headers})
        self.steps.forget()

    load = awaited(_load)

    # --- autograd ------------------------------------------------------------------------------

    def _know_dtypes(self, outputs: Any, grads: Any) -> Conversation:
        """A gradient given as data is cast to its output's dtype: the metadata of outputs
        still queued is read first (``y.backward([0.1, 1.0])`` after queued steps)."""
        if grads is None:
            return
        for t in [outputs] if isinstance(outputs, Tensor) else list(outputs):
            if isinstance(t, Tensor) and not isinstance(t, GradRef) and t._meta is None:
                t._check()
                yield from self._flush()
                t._check()
                if t._meta is None:
                    t._set_meta((yield from self._fetch(t.name, values=False)))

    def _backward(
        self,
        tensors: Any,
        grad_tensors: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> Conversation:
        """``torch.autograd.backward``: accumulate into the leaves' ``.grad``."""
        yield from self._know_dtypes(tensors, grad_tensors)
        body = self.steps.backward_body(tensors, grad_tensors, retain_graph, create_graph, inputs)
        self.steps.grads.clear()  # which grads it changed is known when it has run
        if self.programs:  # the queued steps and the backward: one request
            yield from self._enqueue({"backward": body}, [])
            if not self.lazy_backward:
                yield from self._flush()  # its errors raise here, and x.grad is exact after
            return
        yield from self._flush()
        path = f"{self._path}/backward"
        result = yield Request("POST", path, {"json": body, "params": self._params()})
        for name, value in result["grads"].items():
            self.steps.grads[name] = self.decode(value)

    backward = awaited(_backward)

    def _grad(
        self,
        outputs: Any,
        inputs: Any,
        grad_outputs: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        allow_unused: bool = False,
    ) -> Conversation:
        """``torch.autograd.grad``: one handle per input (None if unused), ``.grad`` untouched.
        The results are bound in the session, so they can be differentiated again."""
        yield from self._know_dtypes(outputs, grad_outputs)
        body, names = self.steps.grad_body(
            outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused
        )
        try:
            yield from self._flush()
            path = f"{self._path}/grad"
            result = yield Request("POST", path, {"json": body, "params": self._params()})
        except BaseException:
            self.steps.release(names)
            raise
        self.steps.grads.clear()  # a non-leaf on the path that retains grad got a new .grad
        handles = self.steps.grad_handles(names, result["grads"], self.decode)
        if self.deferred:  # metadata for await-free attributes
            for h in handles:
                if h is not None:
                    h._set_meta((yield from self._fetch(h.name, values=False)))
        return handles

    grad = awaited(_grad)

    def _zero_grad(
        self, set_to_none: bool = False, tensors: Sequence[Tensor] | None = None
    ) -> Conversation:
        """Zero the grads of ``tensors``, or of every leaf (``optimizer.zero_grad()``)."""
        body = self.steps.zero_grad_body(set_to_none, tensors)
        last = self._queue[-1] if self._queue else None
        if self.programs:
            if isinstance(last, dict) and self._merge_zero_grad(last.get("zero_grad"), body):
                return
            yield from self._enqueue({"zero_grad": body}, [])
            return
        if self.batch:
            # queued, and kept last: queued steps that read grads run first, a later step
            # that reads a grad goes after it
            if _is_zero_grad(last) and self._merge_zero_grad(last.kwargs["json"], body):  # type: ignore[arg-type,union-attr]
                return
            path = f"{self._path}/zero_grad"
            self._queue.append(Request("POST", path, {"json": body, "params": self._params(False)}))
            return
        yield from self._flush()
        yield Request("POST", f"{self._path}/zero_grad", {"json": body})

    zero_grad = building(_zero_grad)

    # --- pictures -------------------------------------------------------------------------------

    def _graph(
        self,
        roots: Sequence[Tensor | str] | None = None,
        format: str = "json",  # noqa: A002
        *,
        temporaries: bool | None = None,
        saved: bool = False,
        accumulate_grad: bool = False,
    ) -> Conversation:
        """The backward graph (``GET .../graph``): a ``Graph`` (the JSON as a dict, drawn as
        SVG in a notebook), or DOT/Mermaid/SVG text. ``temporaries`` shows generated names
        too (default: when ``roots`` are given); ``saved`` annotates the saved tensors and
        ``accumulate_grad`` draws AccumulateGrad nodes apart, as torchviz does."""
        yield from self._flush()
        params: dict[str, Any] = {}
        if saved:
            params["saved"] = "true"
        if accumulate_grad:
            params["accumulate_grad"] = "true"
        if roots is not None:
            params["roots"] = ",".join(r if isinstance(r, str) else r.name for r in roots)
        if temporaries if temporaries is not None else roots is not None:
            params["temporaries"] = "true"
        if format != "json":
            path = f"{self._path}/graph.{format}"
            return (yield Request("GET", path, {"params": params, "raw": True}))
        body = yield Request("GET", f"{self._path}/graph", {"params": params})
        svg = Request("GET", f"{self._path}/graph.svg", {"params": params, "raw": True})
        if self.deferred:  # a notebook's display cannot await: the drawing comes along
            drawing = yield svg
            return display.Graph(body, lambda: drawing)
        return display.Graph(body, lambda: self._drive(_ask(svg)))

    graph = awaited(_graph)

    # --- helpers ----------------------------------------------------------------------------------

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

    def _take_queue(self) -> list[dict[str, Any]]:
        """The queued items, taken out of the queue (a program's recording)."""
        items, self._queue, self._pending = self._queue, [], []
        if any(isinstance(i, Request) for i in items):
            raise RuntimeError(
                "a leaf was made (or a grad zeroed without batch programs) while recording "
                "a program: make the leaves before the recording"
            )
        return items  # type: ignore[return-value]

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


def _ask(request: Request) -> Conversation:
    """A conversation of one request."""
    return (yield request)
