"""Stored programs from Python: ``with s.program("train") as train:`` records what the
block does (steps, ``backward``, in-place updates, ``zero_grad``) instead of running it,
and stores it on the server once; ``train.run(repeat=100)`` then runs it by name, with a
progress bar fed by the server's events, and ``train.jacobian(...)`` and the other
derivatives of a pure program are one request each.

The requests are written once, as conversations (``base.Request`` effects), which the
sync ``Session`` and the ``AsyncSession`` each drive with their own transport."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import numpy as np
import orjson

from . import errors, wire
from .base import Request

Conversation = Generator[Request, Any, Any]
Named = Any  # a tensor handle (``.name``) or a name


def _name(t: Named) -> str:
    return t if isinstance(t, str) else str(t.name)


def _names(ts: Named | Sequence[Named]) -> list[str]:
    if isinstance(ts, str) or hasattr(ts, "name"):
        return [_name(ts)]
    return [_name(t) for t in ts]


class Program:
    """A program stored in a session: run it, or differentiate it if it is pure."""

    def __init__(self, session: Any, name: str, fetch: Sequence[Named] = ()) -> None:
        self.session = session
        self.name = name
        self.fetch = _names(fetch) if fetch else []
        self.info: dict[str, Any] = {}
        self._saved: dict[str, Any] | None = None

    @property
    def path(self) -> str:
        return f"{self.session._path}/programs/{self.name}"

    def __repr__(self) -> str:
        return f"Program({self.name!r}, {self.info or 'not stored yet'})"

    # --- recording ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def recording(self) -> Iterator[Program]:
        """Queue what the block does (nothing is sent), then store it as this program."""
        s = self.session
        s._flush_pending()
        self._saved = {
            k: getattr(s, k) for k in ("batch", "programs", "max_batch", "lazy_backward")
        }
        s.batch, s.programs, s.max_batch, s.lazy_backward = True, True, 1 << 30, True
        s._recording = True
        ok = False
        try:
            yield self
            ok = True
        finally:
            items, _ = s._take_queue()
            s._recording = False
            for k, v in self._saved.items():
                setattr(s, k, v)
            s.invalidate()  # the handles it bound name what the runs bind: read them fresh
        if ok:
            s._drive(self._store(items))

    def _store(self, items: list[dict[str, Any]]) -> Conversation:
        body: dict[str, Any] = {"steps": items}
        if self.fetch:
            body["fetch"] = self.fetch
        self.info = yield Request("PUT", self.path, {"json": body})
        return self

    # --- running -----------------------------------------------------------------------------

    def _run_body(
        self, repeat: int, fetch: Sequence[Named] | None, every: int | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"repeat": repeat}
        if fetch is not None:
            body["fetch"] = _names(fetch)
        if every is not None:
            body["every"] = every
        return body

    def _decoded(self, answer: dict[str, Any]) -> dict[str, Any]:
        """A run's answer with its values as arrays."""
        values = {k: None if v is None else wire.decode(v) for k, v in answer["values"].items()}
        out = {"iterations": answer["iterations"], "values": values}
        if answer.get("history"):
            out["history"] = {k: [None if v is None else wire.decode(v) for v in vs]
                              for k, vs in answer["history"].items()}  # fmt: skip
        return out

    def run(
        self,
        repeat: int = 1,
        *,
        fetch: Sequence[Named] | None = None,
        every: int | None = None,
        progress: bool | Callable[[int, dict[str, Any]], Any] = False,
    ) -> dict[str, Any]:
        """Run ``repeat`` times; the fetched values after the last iteration (arrays).

        ``progress``: True shows a tqdm bar (when tqdm is installed) fed by the server's
        progress events; a callable gets ``(iteration, values)`` for each event."""
        body = self._run_body(repeat, fetch, every)
        self.session.invalidate()  # values and grads change: handles read them again
        if progress is False:
            return self._decoded(self.session._drive(self._run(body)))
        return self._decoded(self.session._stream_events(self.path + "/run", body,
                                                        _progress(repeat, progress)))  # fmt: skip

    def _run(self, body: dict[str, Any]) -> Conversation:
        answer = yield Request("POST", self.path + "/run", {"json": body, "params": _B64})
        return answer

    # --- derivatives of a pure program -------------------------------------------------------

    def _derive(self, kind: str, body: dict[str, Any]) -> Any:
        answer = self.session._drive(_ask(f"{self.path}/{kind}", body))
        return _arrays(answer)

    def jacobian(self, of: Named | Sequence[Named], wrt: Named | Sequence[Named], *,
                 mode: str = "rev") -> dict[str, dict[str, np.ndarray]]:  # fmt: skip
        """``torch.func.jacrev`` (``mode="fwd"``: ``jacfwd``): ``{of: {wrt: array}}``."""
        return self._derive("jacobian", {"of": _names(of), "wrt": _names(wrt), "mode": mode})[
            "jacobian"
        ]

    def hessian(self, of: Named, wrt: Named | Sequence[Named]) -> dict[str, dict[str, np.ndarray]]:
        return self._derive("hessian", {"of": _name(of), "wrt": _names(wrt)})["hessian"]

    def vjp(self, of: Named | Sequence[Named], wrt: Named | Sequence[Named],
            cotangents: dict[Named, Any]) -> dict[str, np.ndarray]:  # fmt: skip
        body = {"of": _names(of), "wrt": _names(wrt), "cotangents": _values(cotangents)}
        return self._derive("vjp", body)["vjp"]

    def jvp(self, of: Named | Sequence[Named], tangents: dict[Named, Any]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:  # fmt: skip
        answer = self._derive("jvp", {"of": _names(of), "tangents": _values(tangents)})
        return answer["values"], answer["jvp"]

    def hvp(self, of: Named, wrt: Named | Sequence[Named], v: dict[Named, Any]) -> dict[str, np.ndarray]:  # fmt: skip
        body = {"of": _name(of), "wrt": _names(wrt), "v": _values(v)}
        return self._derive("hvp", body)["hvp"]

    def per_sample_grad(self, of: Named, wrt: Named | Sequence[Named],
                        batch: dict[Named, int]) -> dict[str, np.ndarray]:  # fmt: skip
        body = {
            "of": _name(of),
            "wrt": _names(wrt),
            "batch": {_name(k): d for k, d in batch.items()},
        }
        return self._derive("per_sample_grad", body)["grads"]

    def delete(self) -> None:
        self.session._drive(_ask(self.path, None, "DELETE"))


_B64 = {"encoding": "base64"}


def _ask(path: str, body: Any, method: str = "POST") -> Conversation:
    kwargs: dict[str, Any] = {"params": _B64}
    if body is not None:
        kwargs["json"] = body
    return (yield Request(method, path, kwargs))


def _values(given: dict[Named, Any]) -> dict[str, Any]:
    return {_name(k): wire.encode(np.asarray(v)) for k, v in given.items()}


def _arrays(value: Any) -> Any:
    """A derivative's answer with its tensor values as arrays, nested as it is."""
    if isinstance(value, dict):
        if "dtype" in value and ("data" in value or "b64" in value):
            return wire.decode(value)
        return {k: _arrays(v) for k, v in value.items()}
    return value


def _progress(
    total: int, progress: bool | Callable[[int, dict[str, Any]], Any]
) -> Callable[[int, dict[str, Any]], Any]:
    """What each progress event does: the caller's callable, or a tqdm bar."""
    if callable(progress):
        return progress
    try:
        from tqdm.auto import tqdm
    except ImportError:  # no bar without tqdm; the run is the same
        return lambda i, values: None
    bar = tqdm(total=total, unit="it")

    def update(i: int, values: dict[str, Any]) -> None:
        bar.update(i - bar.n)
        shown = {
            k: float(np.asarray(v).ravel()[0])
            for k, v in values.items()
            if v is not None and np.asarray(v).size
        }
        if shown:
            bar.set_postfix(shown)
        if i >= total:
            bar.close()

    return update


def parse_events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """Server-Sent Events as ``(event, data)``."""
    kind = ""
    for line in lines:
        if line.startswith("event: "):
            kind = line[7:].strip()
        elif line.startswith("data: "):
            yield kind, orjson.loads(line[6:])


def handle_event(kind: str, data: Any, on_progress: Callable[[int, dict[str, Any]], Any]) -> Any:
    """A progress event goes to ``on_progress``; the result is returned; an error raised."""
    if kind == "progress":
        values = {k: None if v is None else wire.decode(v) for k, v in data["values"].items()}
        on_progress(data["iteration"], values)
        return None
    if kind == "error":
        raise errors.from_problem(int(data.get("status", 500)), data)
    return data
