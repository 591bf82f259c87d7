"""One ``httpx.Client`` per session: keep-alive, timeouts, retries, problem -> exception.

Only idempotent methods (GET, PUT, DELETE) are retried, and only when the
request never got an answer (connection refused or reset, connect timeout):
a POST that may have run on the server is never sent twice. Any error answer
is raised as the typed exception for its problem ``code``.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson

from . import errors

IDEMPOTENT = frozenset({"GET", "PUT", "DELETE", "HEAD", "OPTIONS"})
RETRYABLE = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)


class Transport:
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.1,
        client: httpx.Client | None = None,
    ) -> None:
        headers = {"Accept": "application/json", "User-Agent": "gradserve-client/0.1"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.retries = retries
        self.backoff = backoff
        self.requests = 0  # round trips made, for tests and the curious
        self._own = client is None
        self.http = client or httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
        )
        if client is not None:
            self.http.headers.update(headers)

    def close(self) -> None:
        if self._own:
            self.http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        raw: bool = False,
    ) -> Any:
        """Send one request; the decoded JSON body (None for 204), or the text with ``raw``."""
        content = None
        headers = {}
        if json is not None:
            content = orjson.dumps(json, option=orjson.OPT_SERIALIZE_NUMPY)
            headers["Content-Type"] = "application/json"
        attempts = 1 + (self.retries if method in IDEMPOTENT else 0)
        for attempt in range(attempts):
            try:
                self.requests += 1
                response = self.http.request(
                    method, path, content=content, params=params, headers=headers
                )
                break
            except RETRYABLE as exc:
                if attempt + 1 >= attempts:
                    raise errors.TransportError(
                        f"{method} {path}: {type(exc).__name__}: {exc}"
                    ) from exc
                time.sleep(self.backoff * 2**attempt)
            except httpx.HTTPError as exc:  # read timeouts and the like: not retried
                raise errors.TransportError(
                    f"{method} {path}: {type(exc).__name__}: {exc}"
                ) from exc
        if response.status_code >= 400:
            try:
                body = orjson.loads(response.content)
            except orjson.JSONDecodeError:
                body = {"detail": response.text[:500]}
            raise errors.from_problem(response.status_code, body)
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
