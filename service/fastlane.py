"""A fast lane for the hot routes of a training loop: runOp, runBatch and backward.

FastAPI resolves a route's dependencies generically on every request (auth, settings,
session, output options, body): on a small step that is about 60% of the server's
time, and route matching another 10%. The fast lane answers these routes directly:
it matches the path with string operations, reads the query, key, session and body
itself, and calls **the route's own endpoint** with the same arguments FastAPI would.

The FastAPI routes stay the contract: they are in the OpenAPI document, and any
request the lane does not fully accept (an unusual query, a non-JSON body, a missing
key, an unknown session, a body that fails validation) is handed to them unchanged,
with the body replayed, so every refusal is FastAPI's own. An error raised while the
endpoint runs is rendered by the same function as the app's exception handlers.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin
from urllib.parse import parse_qsl

import orjson
from fastapi.routing import APIRoute
from pydantic import TypeAdapter
from starlette.datastructures import State
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .deps import Output, OutputDep, SessionDep, SettingsDep, owner_from_header
from .errors import ServiceError, known_error_response
from .http import LARGE_BODY, is_json
from .names import session_name_error

HOT_OPERATIONS = ("runOp", "runBatch", "backward")
_PREFIX = "/v1/sessions/"
_BOOLS = {"true": True, "false": False, "1": True, "0": False}
_ENCODINGS = {"json", "base64"}
REMEMBERED_BODIES = 256  # validated bodies kept, least recently used out first ...
REMEMBERED_BODY_BYTES = 16 << 10  # ... of at most 16 KiB each (a 100-step batch is 5 KiB)


@dataclass(frozen=True)
class _Hot:
    """One hot route: its endpoint, which parameter gets which value, and its body type."""

    route: APIRoute
    session_arg: str
    out_arg: str
    settings_arg: str
    body_arg: str
    body: TypeAdapter[Any]


def _hot_route(route: APIRoute) -> _Hot:
    """Read the endpoint's signature: session, output options, settings, and one body."""
    roles: dict[str, str] = {}
    body: tuple[str, Any] | None = None
    for name, param in inspect.signature(route.endpoint).parameters.items():
        for role, alias in (("session", SessionDep), ("out", OutputDep), ("settings", SettingsDep)):
            if param.annotation == alias:
                roles[role] = name
                break
        else:
            if body is not None:
                raise TypeError(f"{route.operation_id}: one body parameter, not {name!r} too")
            annotation = param.annotation
            if get_origin(annotation) is Annotated:  # Annotated[Model, Body(...)]
                annotation = get_args(annotation)[0]
            body = (name, annotation)
    if body is None or len(roles) != 3:
        raise TypeError(f"{route.operation_id}: not a (session, body, out, settings) endpoint")
    return _Hot(
        route=route,
        session_arg=roles["session"],
        out_arg=roles["out"],
        settings_arg=roles["settings"],
        body_arg=body[0],
        body=TypeAdapter(body[1]),
    )


def _output(query_string: bytes) -> Output | None:
    """``?encoding=`` and ``?values=`` in their plain spellings; None for anything else."""
    if not query_string:
        return Output("json", True)
    encoding, values, seen = "json", True, set()
    for key, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if key in seen:
            return None
        seen.add(key)
        if key == "encoding" and value in _ENCODINGS:
            encoding = value
        elif key == "values" and value in _BOOLS:
            values = _BOOLS[value]
        else:
            return None
    return Output(encoding, values)  # type: ignore[arg-type]


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands ``body`` over again, then defers to the connection."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


class FastLane:
    """ASGI middleware in front of the router: answers the hot routes it fully accepts."""

    def __init__(self, app: ASGIApp, state: State, routes: Iterable[BaseRoute]) -> None:
        self.app = app
        self.state = state
        self.hot: dict[tuple[str, str], _Hot] = {}
        self.parsed: OrderedDict[tuple[str | None, bytes], Any] = OrderedDict()
        for route in routes:
            if isinstance(route, APIRoute) and route.operation_id in HOT_OPERATIONS:
                tail = route.path.removeprefix(_PREFIX + "{session}")
                assert tail != route.path, f"{route.path} is not a session route"
                for method in route.methods or ():
                    self.hot[(method, tail)] = _hot_route(route)
        missing = set(HOT_OPERATIONS) - {h.route.operation_id for h in self.hot.values()}
        assert not missing, f"hot routes not found: {missing}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        hot = None
        if path.startswith(_PREFIX):
            session_name, slash, tail = path[len(_PREFIX) :].partition("/")
            hot = self.hot.get((scope["method"], slash + tail))
        if hot is None:
            await self.app(scope, receive, send)
            return
        args = self._arguments(hot, scope, session_name)
        if args is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = hot.route  # for the metrics and logs, as the router would
        try:
            chunks = []
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # nobody to answer
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body = b"".join(chunks)
            value = self._body(hot, body)
            if value is None:
                del scope["route"]
                await self.app(scope, _replay(body, receive), send)
                return
            args[hot.body_arg] = value
            response = await hot.route.endpoint(**args)
        except Exception as exc:  # the body over the limit, or an error of the step itself
            response = known_error_response(exc)
            if response is None:
                raise
        await response(scope, receive, send)

    def _arguments(self, hot: _Hot, scope: Scope, session_name: str) -> dict[str, Any] | None:
        """The endpoint's arguments except the body; None to leave the request to FastAPI."""
        out = _output(scope["query_string"])
        if out is None or session_name_error(session_name) is not None:
            return None
        content_type = authorization = None
        for key, value in scope["headers"]:  # the first of each, as Request.headers.get
            if key == b"content-type" and content_type is None:
                content_type = value.decode("latin-1")
            elif key == b"authorization" and authorization is None:
                authorization = value.decode("latin-1")
        if content_type is None or not is_json(content_type):
            return None
        settings = self.state.settings
        try:
            owner = owner_from_header(settings, authorization)
            session = self.state.store.get(session_name, owner)
        except ServiceError:
            return None
        return {hot.session_arg: session, hot.out_arg: out, hot.settings_arg: settings}

    def _body(self, hot: _Hot, body: bytes) -> Any:
        """The validated body, or None (invalid, or large enough to parse off the loop).

        A training loop sends the same bodies every iteration, so small ones are
        remembered: validated models are never changed by the endpoints."""
        if not body or len(body) > LARGE_BODY:
            return None
        key = (hot.route.operation_id, body)
        value = self.parsed.get(key)
        if value is not None:
            self.parsed.move_to_end(key)
            return value
        try:
            value = hot.body.validate_python(orjson.loads(body))
        except ValueError:  # orjson's JSONDecodeError and pydantic's ValidationError
            return None
        if len(body) <= REMEMBERED_BODY_BYTES:
            self.parsed[key] = value
            if len(self.parsed) > REMEMBERED_BODIES:
                self.parsed.popitem(last=False)
        return value
