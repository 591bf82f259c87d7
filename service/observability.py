"""Request ids, JSON logs, Prometheus metrics and the body size limit: pure ASGI
middleware, cheap on the hot path (no logging per request unless asked for)."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import problem

request_id: ContextVar[str] = ContextVar("request_id", default="-")
access_log = logging.getLogger("gradserve.access")

_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# the methods a label may name: any other token a client sends counts as "other", so a
# client cannot grow the metrics (and this process's memory) one label at a time
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class JSONFormatter(logging.Formatter):
    """One JSON object per line, with the request id of the request being served."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id.get(),
        }
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str) -> None:
    """JSON lines on stderr for our loggers and uvicorn's (whose own config is off)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JSONFormatter())
    for name in ("gradserve", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler] if name != "uvicorn.error" else []
        logger.setLevel(level.upper())
        logger.propagate = name == "uvicorn.error"


class Metrics:
    """Per-app registry (tests build many apps; the global one would collide)."""

    def __init__(self, sessions: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "gradserve_requests",
            "HTTP requests by route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gradserve_request_duration_seconds",
            "Time to answer a request",
            ["route"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10),
            registry=self.registry,
        )
        gauge = Gauge("gradserve_sessions", "Sessions held in memory", registry=self.registry)
        gauge.set_function(lambda: float(sessions()))
        # labelled children by (method, route, status): ``labels()`` costs a lock and a
        # tuple of strings per call, on every request
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(self, method: str, route: str, status: int, elapsed: float) -> None:
        """Count one request and its latency (labels bounded: route templates, known
        methods, statuses)."""
        if method not in _METHODS:
            method = "other"
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = (
                self.requests.labels(method, route, str(status)),
                self.latency.labels(route),
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(elapsed)


class RequestContextMiddleware:
    """Request id (``X-Request-ID``, echoed or generated), metrics, optional access log."""

    def __init__(self, app: ASGIApp, metrics: Metrics, log_requests: bool) -> None:
        self.app = app
        self.metrics = metrics
        self.log_requests = log_requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = ""
        for key, value in scope["headers"]:
            if key == b"x-request-id":
                rid = value.decode("latin-1")
                break
        if not _REQUEST_ID_RE.fullmatch(rid):
            rid = uuid.uuid4().hex
        token = request_id.set(rid)
        start = time.perf_counter()
        status = 500
        header = (b"x-request-id", rid.encode("latin-1"))

        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status = message["status"]
                started = True
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            if started:  # half an answer is out: the server closes the connection
                raise
            # a bug: answered as a problem here, not re-raised, so the server keeps the
            # keep-alive connection (re-raised, it would drop it without a word)
            access_log.error("unhandled %s: %s", type(exc).__name__, exc, exc_info=exc)
            response = problem(
                "internal_error", "unexpected server error; this is a bug, please report it"
            )
            await response(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - start
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            self.metrics.observe(scope["method"], route, status, elapsed)
            if self.log_requests or status >= 500:
                access_log.log(
                    logging.ERROR if status >= 500 else logging.INFO,
                    "request",
                    extra={
                        "request_id": rid,
                        "fields": {
                            "method": scope["method"],
                            "path": scope["path"],
                            "route": route,
                            "status": status,
                            "duration_ms": round(elapsed * 1000, 3),
                        },
                    },
                )
            request_id.reset(token)


class BodyTooLargeError(StarletteHTTPException):
    """Raised from ``receive`` once the body passes the limit; answered as a 413 problem."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body exceeds the limit of {limit} bytes")


class BodyLimitMiddleware:
    """413 ``limit_exceeded`` for a body over ``max_body_bytes``: at once when the
    Content-Length says so, else as soon as the streamed bytes pass it."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.limit = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope["headers"]:
            if key == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    response = problem(
                        "limit_exceeded",
                        f"the request body has {declared} bytes; the limit is {self.limit}",
                        status=413,
                        hint="send large tensors in several requests, or raise "
                        "GRADSERVE_MAX_BODY_BYTES",
                        headers={"Connection": "close"},
                    )
                    await response(scope, receive, send)
                    return
                break
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLargeError(self.limit)
            return message

        await self.app(scope, limited_receive, send)


class ProblemCORSMiddleware(CORSMiddleware):
    """Starlette's CORS, with a refused preflight answered as a ``bad_request`` problem
    (Starlette answers it in plain text) like every other error."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        headers = {k: v for k, v in response.headers.items() if k.startswith("access-control-")}
        return problem("bad_request", bytes(response.body).decode(), status=400, headers=headers)
