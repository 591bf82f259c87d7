"""HTTP for the sessions: keep-alive, timeouts, retries, problem -> exception.

Retries are httpx-retries' ``RetryTransport``: GET, PUT and DELETE (idempotent
here: a PUT rebinds a leaf to the same value) are retried on connection
errors, timeouts and 429/502/503/504 answers, honouring ``Retry-After``, with
exponential backoff and full jitter. Every other method (POST, PATCH) is
retried only when the connection could not be made, so the request never
left: a POST that may have run on the server is never sent twice. Any error
answer is raised as the typed exception for its problem ``code``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import httpx
import orjson
from httpx_retries import Retry, RetryTransport

from . import errors, wire
from .conversation import drive, run_now

OnProgress = Callable[[int, dict[str, Any]], Any]
EVENTS = {"Accept": "text/event-stream"}

IDEMPOTENT = frozenset({"GET", "PUT", "DELETE", "HEAD", "OPTIONS"})
RETRY_STATUSES = (429, 502, 503, 504)
UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)  # the request never left


class UnsentOnly(Retry):
    """Retry a request only when it never left (no status is worth sending a POST twice)."""

    def is_retryable_status_code(self, status_code: int) -> bool:
        return False


def retry_policies(retries: int, backoff: float, max_wait: float = 30.0) -> tuple[Retry, Retry]:
    """(the policy for idempotent methods, the one for the rest: unsent requests only)."""
    idempotent = Retry(
        total=retries,
        backoff_factor=backoff,
        backoff_jitter=1.0,
        respect_retry_after_header=True,
        max_backoff_wait=max_wait,
        allowed_methods=IDEMPOTENT,
        status_forcelist=RETRY_STATUSES,
        retry_on_exceptions=(httpx.TransportError,),
    )
    unsent = UnsentOnly(
        total=retries,
        backoff_factor=backoff,
        backoff_jitter=1.0,
        max_backoff_wait=max_wait,
        allowed_methods=("POST", "PATCH"),
        retry_on_exceptions=UNSENT,
    )
    return idempotent, unsent


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "gradserve-client/0.2"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def encode_body(json: Any) -> tuple[bytes | None, dict[str, str]]:
    if json is None:
        return None, {}
    return orjson.dumps(json, option=orjson.OPT_SERIALIZE_NUMPY), {
        "Content-Type": "application/json"
    }


def _arguments(
    method: str,
    json: Any,
    content: bytes | None,
    params: dict[str, Any] | None,
    headers: dict[str, str] | None,
    unsent: Retry,
) -> dict[str, Any]:
    """``httpx``'s request arguments (both clients): the body, its headers, the retry
    policy of the method."""
    body, head = encode_body(json)
    if content is not None:
        body = content
    head.update(headers or {})
    extensions = {} if method in IDEMPOTENT else {"retry": unsent}
    return {"content": body, "params": params, "headers": head, "extensions": extensions}


def answer(response: httpx.Response, method: str, path: str, raw: bool | str) -> Any:
    """The decoded JSON body (None for 204), the text with ``raw=True``, the bytes with
    ``raw="bytes"``; an error answer raised as its typed exception."""
    if response.status_code >= 400:
        try:
            body = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            body = {"detail": response.text[:500]}
        if not isinstance(body, dict):
            body = {"detail": str(body)[:500]}
        raise errors.from_problem(response.status_code, body)
    if raw == "bytes":
        return response
    if response.status_code == 204 or not response.content:
        return None
    if raw:
        return response.text
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise errors.TransportError(
            f"{method} {path}: answer is not JSON ({response.headers.get('content-type')})"
        ) from exc


class Events:
    """Server-Sent Events read line by line: ``feed`` gives ``(event, data)`` at a data line."""

    def __init__(self) -> None:
        self.kind = ""

    def feed(self, line: str) -> tuple[str, Any] | None:
        if line.startswith("event: "):
            self.kind = line[7:].strip()
        elif line.startswith("data: "):
            return self.kind, orjson.loads(line[6:])
        return None


def handle_event(kind: str, data: Any, on_progress: OnProgress) -> Any:
    """A progress event goes to ``on_progress``; the result is returned; an error raised."""
    if kind == "progress":
        values = {k: None if v is None else wire.decode(v) for k, v in data["values"].items()}
        on_progress(data["iteration"], values)
        return None
    if kind == "error":
        raise errors.from_problem(int(data.get("status", 500)), data)
    return data


def _no_result(path: str) -> errors.TransportError:
    return errors.TransportError(f"POST {path}: the event stream ended without a result")


class _Transport:
    """What both transports are: one httpx client (one keep-alive connection pool) per
    session, the retry policies, and ``_request``, the request written once as a
    conversation whose one effect is the httpx call (a response, or an awaitable of one)."""

    def __init__(
        self,
        client: type[httpx.Client] | type[httpx.AsyncClient],
        base_url: str,
        *,
        api_key: str | None,
        timeout: float,
        connect_timeout: float,
        retries: int,
        backoff: float,
        transport: Any,
    ) -> None:
        self.idempotent, self.unsent = retry_policies(retries, backoff)
        self.requests = 0  # logical requests made, for tests and the curious
        self.http: Any = client(
            base_url=base_url.rstrip("/"),
            headers=_headers(api_key),
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            transport=RetryTransport(transport, retry=self.idempotent),
        )

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        raw: bool | str = False,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Generator[Any, Any, Any]:
        self.requests += 1
        arguments = _arguments(method, json, content, params, headers, self.unsent)
        try:
            response = yield self.http.request(method, path, **arguments)
        except httpx.HTTPError as exc:
            raise errors.TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        return answer(response, method, path, raw)


async def _given(value: Any) -> Any:
    return value


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


class Transport(_Transport):
    """Over one ``httpx.Client``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.1,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            httpx.Client,
            base_url,
            api_key=api_key,
            timeout=timeout,
            connect_timeout=connect_timeout,
            retries=retries,
            backoff=backoff,
            transport=transport or httpx.HTTPTransport(),
        )

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request (retried as the module says) and decode its answer."""
        return run_now(drive(self._request(method, path, **kwargs), _given))

    def stream(self, path: str, body: dict[str, Any], on_progress: OnProgress) -> Any:
        """POST with ``Accept: text/event-stream``: each progress event to ``on_progress``;
        the result event's body."""
        self.requests += 1
        with self.http.stream(
            "POST", path, json=body, params={"encoding": "base64"}, headers=EVENTS
        ) as response:
            if response.status_code >= 400:
                response.read()
                answer(response, "POST", path, False)
            events = Events()
            for line in response.iter_lines():
                event = events.feed(line)
                if event is not None and (result := handle_event(*event, on_progress)) is not None:
                    return result
        raise _no_result(path)


class AsyncTransport(_Transport):
    """The same over one ``httpx.AsyncClient``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.1,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            httpx.AsyncClient,
            base_url,
            api_key=api_key,
            timeout=timeout,
            connect_timeout=connect_timeout,
            retries=retries,
            backoff=backoff,
            transport=transport or httpx.AsyncHTTPTransport(),
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The same as ``Transport.request``, awaited."""
        return await drive(self._request(method, path, **kwargs), _awaited)

    async def stream(self, path: str, body: dict[str, Any], on_progress: OnProgress) -> Any:
        """The same as ``Transport.stream``, awaited."""
        self.requests += 1
        async with self.http.stream(
            "POST", path, json=body, params={"encoding": "base64"}, headers=EVENTS
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                answer(response, "POST", path, False)
            events = Events()
            async for line in response.aiter_lines():
                event = events.feed(line)
                if event is not None and (result := handle_event(*event, on_progress)) is not None:
                    return result
        raise _no_result(path)
