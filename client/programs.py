"""Stored programs from Python: ``with s.program("train") as train:`` records what the
block does (steps, ``backward``, in-place updates, ``zero_grad``) instead of running it,
and stores it on the server once; ``train.run(repeat=100)`` then runs it by name, with a
progress bar fed by the server's events, and ``train.jacobian(...)`` and the other
derivatives of a pure program are one request each.

The requests are written once, as conversations (``Request`` and ``Stream`` effects),
which the sync ``Session`` and the ``AsyncSession`` each drive with their own
transport: in an ``AsyncSession`` the same calls are awaited (``async with
s.program("train") as train:``, ``await train.run(repeat=100, progress=True)``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import wire
from .conversation import Conversation, Request, Stream

Named = Any  # a tensor handle (``.name``) or a name


def _name(t: Named) -> str:
    return t if isinstance(t, str) else str(t.name)


def _names(ts: Named | Sequence[Named]) -> list[str]:
    if isinstance(ts, str) or hasattr(ts, "name"):
        return [_name(ts)]
    return [_name(t) for t in ts]


class Program:
    """A program stored in a session: run it, or differentiate it if it is pure. In an
    ``AsyncSession`` every call returns an awaitable of what the sync one returns."""

    def __init__(self, session: Any, name: str, fetch: Sequence[Named] = ()) -> None:
        self.session = session
        self.name = name
        self.fetch = _names(fetch) if fetch else []
        self.info: dict[str, Any] = {}

    @property
    def path(self) -> str:
        return f"{self.session._path}/programs/{self.name}"

    def __repr__(self) -> str:
        return f"Program({self.name!r}, {self.info or 'not stored yet'})"

    # --- recording ---------------------------------------------------------------------------

    def recording(self) -> Recording:
        """Queue what the block does (nothing is sent), then store it as this program."""
        return Recording(self)

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
    ) -> Any:
        """Run ``repeat`` times; the fetched values after the last iteration (arrays);
        awaited in an ``AsyncSession``.

        ``progress``: True shows a tqdm bar (when tqdm is installed: ``pip install
        'gradserve[progress]'``) fed by the server's progress events; a callable gets
        ``(iteration, values)`` for each event."""
        return self.session._drive(self._run(self._run_body(repeat, fetch, every), progress))

    def _run(
        self, body: dict[str, Any], progress: bool | Callable[[int, dict[str, Any]], Any]
    ) -> Conversation:
        self.session.invalidate()  # values and grads change: handles read them again
        path = self.path + "/run"
        if progress is False:
            answer = yield Request("POST", path, {"json": body, "params": _B64})
        elif callable(progress):
            answer = yield Stream(path, body, progress)
        else:
            bar, answer = Bar(body["repeat"]), None
            try:
                answer = yield Stream(path, body, bar)
            finally:
                bar.close(None if answer is None else self._decoded(answer))
        return self._decoded(answer)

    # --- derivatives of a pure program -------------------------------------------------------

    def _derive(self, kind: str, body: dict[str, Any], key: str | tuple[str, str]) -> Any:
        """One derivative request; its answer's ``key`` as arrays (awaited in an
        ``AsyncSession``)."""
        return self.session._drive(_ask(f"{self.path}/{kind}", body, key=key))

    def jacobian(self, of: Named | Sequence[Named], wrt: Named | Sequence[Named], *,
                 mode: str = "rev") -> Any:  # fmt: skip
        """``torch.func.jacrev`` (``mode="fwd"``: ``jacfwd``): ``{of: {wrt: array}}``."""
        body = {"of": _names(of), "wrt": _names(wrt), "mode": mode}
        return self._derive("jacobian", body, "jacobian")

    def hessian(self, of: Named, wrt: Named | Sequence[Named]) -> Any:
        body = {"of": _name(of), "wrt": _names(wrt)}
        return self._derive("hessian", body, "hessian")

    def vjp(self, of: Named | Sequence[Named], wrt: Named | Sequence[Named],
            cotangents: dict[Named, Any]) -> Any:  # fmt: skip
        body = {"of": _names(of), "wrt": _names(wrt), "cotangents": _values(cotangents)}
        return self._derive("vjp", body, "vjp")

    def jvp(self, of: Named | Sequence[Named], tangents: dict[Named, Any]) -> Any:  # fmt: skip
        body = {"of": _names(of), "tangents": _values(tangents)}
        return self._derive("jvp", body, ("values", "jvp"))

    def hvp(self, of: Named, wrt: Named | Sequence[Named], v: dict[Named, Any]) -> Any:  # fmt: skip
        body = {"of": _name(of), "wrt": _names(wrt), "v": _values(v)}
        return self._derive("hvp", body, "hvp")

    def per_sample_grad(self, of: Named, wrt: Named | Sequence[Named],
                        batch: dict[Named, int]) -> Any:  # fmt: skip
        body = {
            "of": _name(of),
            "wrt": _names(wrt),
            "batch": {_name(k): d for k, d in batch.items()},
        }
        return self._derive("per_sample_grad", body, "grads")

    def delete(self) -> Any:
        return self.session._drive(_ask(self.path, None, "DELETE"))


_B64 = {"encoding": "base64"}


def _ask(
    path: str, body: Any, method: str = "POST", key: str | tuple[str, str] | None = None
) -> Conversation:
    """One request; its answer's ``key`` (or keys) with tensor values as arrays."""
    kwargs: dict[str, Any] = {"params": _B64}
    if body is not None:
        kwargs["json"] = body
    answer = yield Request(method, path, kwargs)
    if key is None:
        return answer
    if isinstance(key, tuple):
        return tuple(_arrays(answer[k]) for k in key)
    return _arrays(answer[key])


class Recording:
    """``with s.program(name) as p:`` (``async with`` in an ``AsyncSession``): the block's
    steps are queued, never sent, then stored as the program."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._saved: dict[str, Any] = {}

    def _begin(self) -> Conversation:
        s = self.program.session
        yield from s._flush()
        self._saved = {
            k: getattr(s, k) for k in ("batch", "programs", "max_batch", "lazy_backward")
        }
        s.batch, s.programs, s.max_batch, s.lazy_backward = True, True, 1 << 62, True
        s._recording = True
        return self.program

    def _end(self, ok: bool) -> Conversation:
        s = self.program.session
        try:
            items = s._take_queue()
        finally:
            s._recording = False
            for k, v in self._saved.items():
                setattr(s, k, v)
            s.invalidate()  # the handles it bound name what the runs bind: read them fresh
        if ok:
            yield from self.program._store(items)

    def __enter__(self) -> Program:
        if self.program.session.deferred:
            raise TypeError("an AsyncSession records with `async with s.program(...)`")
        return self.program.session._drive(self._begin())

    def __exit__(self, kind: Any, *exc: Any) -> None:
        self.program.session._drive(self._end(kind is None))

    async def __aenter__(self) -> Program:
        return await self.program.session._drive(self._begin())

    async def __aexit__(self, kind: Any, *exc: Any) -> None:
        await self.program.session._drive(self._end(kind is None))


class ProgramsMixin:
    """``s.program(...)``, the same for both sessions."""

    def program(self, name: str, *, fetch: Sequence[Any] = ()) -> Recording:
        """``with s.program("train", fetch=[...]) as train:`` (``async with`` in an
        ``AsyncSession``) records what the block does and stores it as the program
        ``name`` (nothing runs); then ``train.run(repeat=100)``, ``train.jacobian(of,
        wrt)``, ... (see ``client.programs``)."""
        return Program(self, name, fetch).recording()


def _values(given: dict[Named, Any]) -> dict[str, Any]:
    return {_name(k): wire.encode(np.asarray(v)) for k, v in given.items()}


def _arrays(value: Any) -> Any:
    """A derivative's answer with its tensor values as arrays, nested as it is."""
    if isinstance(value, dict):
        if "dtype" in value and ("data" in value or "b64" in value):
            return wire.decode(value)
        return {k: _arrays(v) for k, v in value.items()}
    return value


class Bar:
    """A tqdm bar fed by a run's progress events (``pip install 'gradserve[progress]'``);
    without tqdm it shows nothing and the run is the same."""

    def __init__(self, total: int) -> None:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(total=total, unit="it")

    def __call__(self, i: int, values: dict[str, Any]) -> None:
        if self.bar is None:
            return
        self.bar.update(i - self.bar.n)
        shown = {
            k: float(np.asarray(v).ravel()[0])
            for k, v in values.items()
            if v is not None and np.asarray(v).size
        }
        if shown:
            self.bar.set_postfix(shown)

    def close(self, answer: dict[str, Any] | None) -> None:
        """The last iteration comes as the result, not as a progress event."""
        if self.bar is None:
            return
        if answer is not None:
            self(int(answer["iterations"]), answer["values"])
        self.bar.close()
