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

Every method is written once in ``client.base`` (shared with ``AsyncSession``);
this module adds the synchronous transport, its driver and the lifecycle.
"""

from __future__ import annotations

from typing import Any

from .base import SessionBase
from .conversation import Conversation, Request, Stream, drive, run_now
from .programs import ProgramsMixin
from .tensor import Tensor
from .transport import Transport


class Session(ProgramsMixin, SessionBase):
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
        self.deferred = False
        self.encoding = encoding
        self.binary = binary  # raw bytes for leaves, values, grads: None = by size
        self.max_batch = max_batch
        self.clean = clean
        self.lazy_backward = lazy_backward
        self._closed = False
        self.name = ""
        self._init_state(Tensor)
        self.name = self._drive(self._open(name, create))

    def _drive(self, conversation: Conversation) -> Any:
        """Run a conversation with ``httpx.Client``: its value."""
        return run_now(drive(conversation, self._send))

    async def _send(self, effect: Request | Stream) -> Any:  # never suspends
        if isinstance(effect, Request):
            return self._t.request(effect.method, effect.path, **effect.kwargs)
        return self._t.stream(effect.path, effect.body, effect.on_progress)

    _build = _drive  # building may send in a sync session (eager mode)

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
            self._drive(self._closing())
        finally:
            self._t.close()
