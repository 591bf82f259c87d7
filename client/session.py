"""``Session``: a named remote session that reads like the ``torch`` module.

    from client import Session
    s = Session("http://127.0.0.1:8000", name="demo")    # creates it, or attaches
    x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = x ** 2
    y.backward([1.0, 1.0], retain_graph=True)
    x.grad                                               # tensor([2., 4.])

Results of ops get generated names (``_t<hex>_<n>``); a name whose handle was
garbage-collected is reused for the next result, so a loop does not grow the
session, and ``close()`` (or leaving the ``with`` block) unbinds them all.
With ``batch=True`` steps are queued and sent as one ``/batch`` (all or
nothing) when a value or metadata is read, before any other request, or when
``flush()`` is called; against a server that runs batch programs (DESIGN.md),
``backward`` sends the queued steps and itself as one ``/batch``, ``zero_grad``
and the update ride in the next one with the value read (``fetch``): two
requests per training iteration. With ``lazy_backward=True`` the backward is
queued too, so an iteration is one request; its errors then raise at the next
flush (as a batched step's do) and ``x.grad`` after a queued backward is a
reference read when used (a leaf the backward did not reach raises then,
instead of being None).

Caches: values and grads read once are kept until this client changes them
(a step bound the name, an assign, backward, zero_grad, ...). They assume this
client is the only writer of the session; ``invalidate()`` drops them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import display, errors, wire
from .base import SessionBase
from .programs import Program, handle_event, parse_events
from .steps import Steps
from .tensor import Tensor
from .transport import Transport, answer


def supports_programs(openapi: dict[str, Any]) -> bool:
    """Whether the server's ``/batch`` takes backward/grad/zero_grad items and ``fetch``."""
    schema = openapi.get("components", {}).get("schemas", {}).get("BatchIn", {})
    return "fetch" in schema.get("properties", {})


class Session(SessionBase):
    """A gradserve session: leaves, steps, backward, grads, as in a PyTorch notebook."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        name: str | None = None,
        *,
        api_key: str | None = None,
        batch: bool = False,
        create: bool = True,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.1,
        encoding: str = "base64",
        binary: bool | None = None,
        max_batch: int = 500,
        clean: bool = True,
        lazy_backward: bool = False,
        transport: Any = None,
    ) -> None:
        if encoding not in ("json", "base64"):
            raise ValueError("encoding is 'json' or 'base64'")
        self._t = Transport(
            url,
            api_key=api_key,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            transport=transport,
        )
        self.batch = batch
        self.encoding = encoding
        self.binary = binary  # raw bytes for leaves, values, grads: None = by size
        self.max_batch = max_batch
        self.clean = clean
        self.lazy_backward = lazy_backward
        self._queue: list[dict[str, Any]] = []  # steps and batch-program items
        self._pending: list[Tensor] = []  # handles whose steps are queued
        self._zeroes: list[dict[str, Any]] = []  # zero_grad bodies deferred to the next flush
        self._closed = False
        self._deleted = False
        self._recording = False  # inside ``with s.program(...)``: queue, never send
        self.steps = Steps(self, {}, self._submit)
        self.name = self._run(self._open(name, create))
        self.programs = batch and supports_programs(self._t.request("GET", "/openapi.json"))

    # --- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None:
                self.flush()
        finally:
            self.close()

    def close(self) -> None:
        """Unbind this client's temporaries (``_t...`` names) and close the connection. The
        session and the names you gave stay on the server; ``delete()`` drops it all."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.clean and not self._deleted:
                self._queue.clear()
                self._pending.clear()
                self.remove_temporaries()
        finally:
            self._t.close()

    def remove_temporaries(self) -> list[str]:
        """Unbind every generated name this client bound; the names removed."""
        mine = set(self.steps.temporaries())
        if not mine:
            return []
        try:
            info = self._t.request("GET", self._path)
        except errors.SessionNotFoundError:
            return []
        gone = [t["name"] for t in info.get("tensors", []) if t["name"] in mine]
        for name in gone:
            with contextlib.suppress(errors.TensorNotFoundError):
                self._t.request("DELETE", f"{self._path}/tensors/{name}")
        self.steps.free.clear()
        return gone

    def delete(self) -> None:
        """Drop the session on the server."""
        self._queue.clear()
        self._pending.clear()
        self._t.request("DELETE", self._path)
        self._deleted = True

    def __repr__(self) -> str:
        return f"Session({self.name!r}, {len(self._queue)} queued)"

    def info(self) -> dict[str, Any]:
        """``GET /v1/sessions/{s}``: tensors' metadata, bytes, times."""
        return self._run(self._info())  # type: ignore[no-any-return]

    def invalidate(self) -> None:
        """Forget cached values and grads (after another client wrote this session)."""
        self.steps.forget()

    def __getitem__(self, name: str) -> Tensor:
        """A handle on a tensor already bound in the session (``s["x"]``)."""
        self.flush()
        handle = self.steps.handles.get(name)
        if handle is not None:
            return handle
        return self.steps.attach(name, self.fetch(name, values=False))

    # --- what a handle asks of its session (steps.Remote) ------------------------------------

    def decode(self, value: dict[str, Any]) -> np.ndarray:
        return wire.decode(value)

    def fetch(self, name: str, *, values: bool) -> dict[str, Any]:
        """The tensor's metadata (and values): from the flush that sends queued steps when
        the server can fetch in a batch, else with a GET."""
        if self.programs and self._queue and values:
            got = self.flush(fetch=[name])
            handle = self.steps.handles.get(name)
            if name in got and handle is not None and handle._meta is not None:
                return {**handle._meta, "data": got[name]}
        self.flush()
        raw, meta = self._raw(name) if values else (False, None)
        if raw:  # (no metadata in a binary answer: the handle keeps what it knows)
            return {**(meta or {}), "data": self._get_raw(f"tensors/{name}")}
        return self._t.request(  # type: ignore[no-any-return]
            "GET", f"{self._path}/tensors/{name}", params=self._params(values)
        )

    def _get_raw(self, path: str) -> np.ndarray | None:
        """A binary download (None for a grad that is None: 204)."""
        return self._run(self._download(path))  # type: ignore[no-any-return]

    def grad_pending(self, name: str) -> bool:
        """Whether a queued batch-program backward decides ``name``'s grad: ``x.grad`` is then
        a reference read when used, so ``w -= lr * w.grad`` rides in the same request."""
        return self.lazy_backward and self.programs and any("backward" in i for i in self._queue)

    def read_grad(self, name: str) -> tuple[np.ndarray | None, str | None]:
        """``name``'s grad (cached) or None, and PyTorch's warning if any."""
        cached = self.steps.grads.get(name)
        if cached is not None:  # every queued item that changes a grad updates or drops it
            return cached, None
        if self.programs and self._queue:
            got = self.flush(fetch=[f"{name}.grad"])
            value = got.get(f"{name}.grad")
            if value is not None:
                self.steps.grads[name] = self.decode(value)
                return self.steps.grads[name], None
        self.flush()
        cached = self.steps.grads.get(name)
        if cached is not None:
            return cached, None
        raw, meta = self._raw(name)
        if raw:
            grad = self._get_raw(f"tensors/{name}/grad")
            if grad is not None:
                self.steps.grads[name] = grad
                return grad, None
            if meta is not None and meta["is_leaf"]:
                return None, None  # (a non-leaf's PyTorch warning comes with the JSON answer)
        body = self._t.request("GET", f"{self._path}/tensors/{name}/grad", params=self._params())
        if body.get("grad") is None:
            return None, body.get("warning")
        self.steps.grads[name] = self.decode(body["grad"])
        return self.steps.grads[name], body.get("warning")

    def clear_grad(self, name: str) -> None:
        self._run(self._clear_grad(name))

    def patch(self, t: Tensor, body: dict[str, Any]) -> dict[str, Any]:
        return self._run(self._patch(t, body))  # type: ignore[no-any-return]

    # --- sending steps -------------------------------------------------------------------------

    # --- stored programs -----------------------------------------------------------------------

    def program(
        self, name: str, *, fetch: Sequence[Any] = ()
    ) -> contextlib.AbstractContextManager[Program]:
        """``with s.program("train", fetch=[...]) as train:`` records what the block does and
        stores it as the program ``name`` (nothing runs); then ``train.run(repeat=100)``,
        ``train.jacobian(of, wrt)``, ... (see ``client.programs``)."""
        return Program(self, name, fetch).recording()

    def _drive(self, conversation: Any) -> Any:
        return self._run(conversation)

    def _flush_pending(self) -> None:
        self.flush()

    def _take_queue(self) -> tuple[list[dict[str, Any]], list[Tensor]]:
        """The queued items and their handles, taken out of the queue (a recording's)."""
        self._flush_zeroes_into_queue()
        items, pending = self._queue, self._pending
        self._queue, self._pending = [], []
        return items, pending

    def _stream_events(self, path: str, body: dict[str, Any], on_progress: Any) -> Any:
        """POST with ``Accept: text/event-stream``: each progress event to ``on_progress``;
        the result event's body."""
        with self._t.http.stream(
            "POST", path, json=body, params={"encoding": "base64"},
            headers={"Accept": "text/event-stream"},
        ) as response:  # fmt: skip
            if response.status_code >= 400:
                response.read()
                answer(response, "POST", path, False)
            for kind, data in parse_events(response.iter_lines()):
                result = handle_event(kind, data, on_progress)
                if result is not None:
                    return result
        raise errors.TransportError(f"POST {path}: the event stream ended without a result")

    def flush(self, fetch: Sequence[str] = ()) -> dict[str, Any]:
        """Send the queued steps as one ``/batch`` (all or nothing), then any deferred
        ``zero_grad``; with ``fetch`` (a server running batch programs), the values of those
        names (``"x"``, ``"x.grad"``) read after the last item."""
        if self._recording:
            raise RuntimeError(
                "a value was read while recording a program: nothing runs until the program "
                "is stored; read it after train.run(...) (or fetch it)"
            )
        values: dict[str, Any] = {}
        if self._queue:
            steps, pending = self._queue, self._pending
            self._queue, self._pending = [], []
            body: dict[str, Any] = {"steps": steps}
            if fetch:
                body["fetch"] = list(fetch)
            try:
                # the output options cover the fetched values too: with a fetch, values come
                # back (and fill the step results' value caches)
                answer = self._t.request(
                    "POST", f"{self._path}/batch", json=body, params=self._params(bool(fetch))
                )
            except errors.GradserveError as exc:
                for h in pending:  # all or nothing: none of these exists on the server
                    h._failed = exc
                if any("backward" in s or "grad" in s or "zero_grad" in s for s in steps):
                    self.steps.grads.clear()
                while self._zeroes:  # asked for separately: still done
                    self._send_zero_grad(self._zeroes.pop(0))
                raise
            metas = {m["name"]: m for m in answer.get("tensors", [])}
            for h in pending:
                if not h._stale and h._name in metas:
                    h._set_meta(metas[h._name])
            values = answer.get("values") or {}
        while self._zeroes:
            self._send_zero_grad(self._zeroes.pop(0))
        return values

    def _submit(self, step: dict[str, Any], outs: list[Tensor]) -> None:
        if self.batch:
            if self._zeroes and ".grad" in step.get("expr", ""):
                self.flush()  # this step reads a grad that a deferred zero_grad must zero first
            self._enqueue(step, outs)
            return
        self.flush()
        body = self._t.request("POST", f"{self._path}/ops", json=step, params=self._params(False))
        by_name = {m.get("name"): m for m in body.get("tensors", [body])}
        for h in outs:
            if h._name in by_name:
                h._set_meta(by_name[h._name])

    def _enqueue(self, item: dict[str, Any], outs: list[Tensor]) -> None:
        self._queue.append(item)
        self._pending.extend(outs)
        if len(self._queue) >= self.max_batch:
            self.flush()

    # --- leaves, seeds, files ------------------------------------------------------------------

    def tensor(
        self,
        data: Any,
        *,
        requires_grad: bool = False,
        name: str | None = None,
        dtype: str | None = None,
    ) -> Tensor:
        """``torch.tensor(data, requires_grad=...)``: a leaf, bound with PUT."""
        if isinstance(data, Tensor):
            data = data.numpy()
        arr = wire.as_array(data, dtype)
        generated = name is None
        name = name or self.steps.new_name()
        self.flush()
        if wire.use_binary(self.binary, arr.size):
            upload = wire.raw_upload(arr, requires_grad)
            upload["params"].update(self._params(False))
            meta = self._t.request("PUT", f"{self._path}/tensors/{name}", **upload)
        else:
            body = {**wire.encode(arr), "requires_grad": requires_grad}
            meta = self._t.request(
                "PUT", f"{self._path}/tensors/{name}", json=body, params=self._params(False)
            )
        handle = self.steps.bind(name, meta, generated=generated)
        handle._value = arr.astype(wire.DTYPES[wire.dtype_name(arr.dtype)].newbyteorder("="))
        return handle

    def manual_seed(self, seed: int) -> None:
        """``torch.manual_seed(seed)`` for this session's generator (a ``manual_seed`` step):
        ``randn``/``rand``/... then draw what PyTorch draws after the same seed."""
        self._submit({"op": "manual_seed", "args": [int(seed)]}, [])

    def save(self, path: str | Path) -> None:
        """Write the session's leaves and their grads to a safetensors file
        (``GET .../export``; ``safetensors.torch.load_file`` reads it)."""
        self._run(self._save(path))

    def load(self, path: str | Path) -> None:
        """Create or rebind the leaves (and grads) of a safetensors file (``POST .../import``),
        all or nothing."""
        self._run(self._load(path))

    # --- ops ---------------------------------------------------------------------------------------

    # --- autograd ----------------------------------------------------------------------------

    def backward(
        self,
        tensors: Any,
        grad_tensors: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """``torch.autograd.backward``: accumulate into the leaves' ``.grad``."""
        body = self.steps.backward_body(tensors, grad_tensors, retain_graph, create_graph, inputs)
        if self.programs:  # the queued steps and the backward: one request
            self._flush_zeroes_into_queue()
            self._enqueue({"backward": body}, [])
            self.steps.grads.clear()  # which grads it changed is known when it has run
            if not self.lazy_backward:
                self.flush()  # its errors raise here, and x.grad is exact afterwards
            return
        self.flush()
        result = self._t.request("POST", f"{self._path}/backward", json=body, params=self._params())
        for name, value in result["grads"].items():
            self.steps.grads[name] = self.decode(value)

    def grad(
        self,
        outputs: Any,
        inputs: Any,
        grad_outputs: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        allow_unused: bool = False,
    ) -> tuple[Tensor | None, ...]:
        """``torch.autograd.grad``: one handle per input (None if unused), ``.grad`` untouched.
        The results are bound in the session, so they can be differentiated again."""
        body, names = self.steps.grad_body(
            outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused
        )
        try:
            self.flush()
            result = self._t.request("POST", f"{self._path}/grad", json=body, params=self._params())
        except BaseException:
            self.steps.release(names)
            raise
        self.steps.grads.clear()  # a non-leaf on the path that retains grad got a new .grad
        return self.steps.grad_handles(names, result["grads"], self.decode)

    def zero_grad(self, set_to_none: bool = False, tensors: Sequence[Tensor] | None = None) -> None:
        """Zero the grads of ``tensors``, or of every leaf (``optimizer.zero_grad()``)."""
        body = self.steps.zero_grad_body(set_to_none, tensors)
        if self.programs:
            last = self._queue[-1] if self._queue else {}
            if self._merge_zero_grad(last.get("zero_grad"), body):
                return
            self._enqueue({"zero_grad": body}, [])
            return
        if self.batch and self._zeroes and self._merge_zero_grad(self._zeroes[-1], body):
            return
        if self.batch:
            # deferred: queued steps that read grads run first (they are in the batch before it),
            # later steps that read a grad flush it first; so it rides along with the next flush
            self._zeroes.append(body)
            return
        self.flush()
        self._send_zero_grad(body)

    def _flush_zeroes_into_queue(self) -> None:
        while self._zeroes:
            self._queue.append({"zero_grad": self._zeroes.pop(0)})

    def _send_zero_grad(self, body: dict[str, Any]) -> None:
        self._t.request("POST", f"{self._path}/zero_grad", json=body)

    def graph(
        self,
        roots: Sequence[Tensor | str] | None = None,
        format: str = "json",  # noqa: A002
        *,
        temporaries: bool | None = None,
        saved: bool = False,
        accumulate_grad: bool = False,
    ) -> Any:
        """The backward graph (``GET .../graph``): a ``Graph`` (the JSON as a dict, drawn as
        SVG in a notebook), or DOT/Mermaid/SVG text. ``temporaries`` shows generated names
        too (default: when ``roots`` are given); ``saved`` annotates the saved tensors and
        ``accumulate_grad`` draws AccumulateGrad nodes apart, as torchviz does."""
        self.flush()
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
            return self._t.request("GET", f"{self._path}/graph.{format}", params=params, raw=True)
        body = self._t.request("GET", f"{self._path}/graph", params=params)
        return display.Graph(
            body,
            lambda: self._t.request("GET", f"{self._path}/graph.svg", params=params, raw=True),
        )
