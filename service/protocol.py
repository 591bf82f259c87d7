"""uvicorn's httptools protocol with a bound on reading a request.

uvicorn times out only an idle keep-alive connection between two requests: a client
that connects and sends nothing, or sends half a request and stops (a half-open or a
slowloris client), holds its connection for ever. Here every request must arrive whole
within ``read_seconds`` of the connection opening or of the previous answer, else the
connection is closed; ``gradserve serve`` runs uvicorn with it."""

from __future__ import annotations

import asyncio
from asyncio import TimerHandle
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` whose requests must arrive within ``read_seconds``."""

    read_seconds: float = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timer: TimerHandle | None = None

    def _arm_read_timer(self) -> None:
        self._cancel_read_timer()
        self._read_timer = self.loop.call_later(self.read_seconds, self._read_timed_out)

    def _cancel_read_timer(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_read_timer()

    def on_message_complete(self) -> None:
        self._cancel_read_timer()  # the request is in: the app's deadline bounds the rest
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_read_timer()  # the next request, if any, within the bound too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_read_timer()
        super().connection_lost(exc)


def bounded_protocol(read_seconds: float) -> type[BoundedHttpToolsProtocol]:
    """The protocol class with ``read_seconds`` set (uvicorn takes a class)."""
    return type(
        "BoundedHttpToolsProtocol", (BoundedHttpToolsProtocol,), {"read_seconds": read_seconds}
    )
