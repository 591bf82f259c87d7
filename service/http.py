"""FastAPI plumbing shared by the routers: the fast JSON route, responses, problem docs.

``FastJSONRoute`` parses request bodies with orjson (about 6x faster than the
standard library's ``json.loads`` that FastAPI uses: 10 ms instead of 65 ms for
100,000 floats) and refuses a body that is not JSON with 415. ``JSONBody``
renders with orjson, which writes numpy arrays natively.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio.to_thread
import orjson
import pydantic_core
from fastapi import Request, Response
from fastapi.routing import APIRoute

from .errors import PROBLEMS, LimitExceededError, UnsupportedMediaTypeError

LARGE_BODY = 1 << 20  # parsing a body above 1 MiB takes milliseconds: not on the event loop


class FastJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            # orjson.JSONDecodeError subclasses json.JSONDecodeError, which FastAPI
            # reports as a ``json_invalid`` validation error (our ``invalid_json``)
            body = await self.body()
            if len(body) > LARGE_BODY:
                check_json_values(body, self.app.state.settings.max_json_values)
                self._json = await anyio.to_thread.run_sync(parse_large_json, body)
            else:
                self._json = orjson.loads(body)
        return self._json


def check_json_values(body: bytes, limit: int) -> None:
    """Refuse (413) a JSON body of more than ``limit`` values before parsing it: parsed,
    each number costs about 32 bytes of Python objects (a 60 MB body of numbers would
    take a gigabyte); counting its commas costs a few milliseconds."""
    values = body.count(b",") + 1
    if values > limit:
        raise LimitExceededError(
            f"the JSON body holds about {values} values; the limit is {limit}",
            status=413,
            hint="send large tensors as base64 ('b64') or raw bytes "
            "(application/octet-stream), or raise GRADSERVE_MAX_JSON_VALUES",
        )


def parse_large_json(body: bytes) -> Any:
    """orjson, except for a body that is mostly one long string (a base64 tensor): there
    pydantic-core's parser (jiter) is 7x faster than orjson (1.5 ms instead of 10 ms for
    1,000,000 float32); on numbers orjson is 1.5x faster. jiter refuses what orjson
    refuses but reads an overflowing number as infinity; what it refuses is parsed again
    by orjson, so the error says what it says for any other body."""
    if body.count(b'"') * 4096 < len(body):
        try:
            return pydantic_core.from_json(body, allow_inf_nan=False, cache_strings=False)
        except ValueError:
            pass
    return orjson.loads(body)


def is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


class FastJSONRoute(APIRoute):
    """An APIRoute whose body is parsed by orjson, and only if it is declared JSON."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        has_body = self.body_field is not None

        async def route_handler(request: Request) -> Response:
            request = FastJSONRequest(request.scope, request.receive)
            content_type = request.headers.get("content-type")
            if (
                has_body
                and (content_type is None or not is_json(content_type))
                and await request.body()
            ):
                raise UnsupportedMediaTypeError(
                    f"the body must be application/json, not {content_type or 'untyped'}",
                )
            return await handler(request)

        return route_handler


class JSONBody(Response):
    """A JSON response rendered by orjson; numpy arrays and scalars are written natively."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY)


def problems(*codes: str, limits: tuple[int, ...] = ()) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` documenting the problem codes a route can answer.

    ``limit_exceeded`` is answered with 413, 429 or 507: ``limits`` says which."""
    by_status: dict[int, set[str]] = {}
    for code in codes:
        by_status.setdefault(PROBLEMS[code][0], set()).add(code)
    for status in limits:
        by_status.setdefault(status, set()).add("limit_exceeded")
    return {
        status: {
            "description": "Problem: " + ", ".join(f"`{c}`" for c in sorted(cs)),
            "content": {
                "application/problem+json": {"schema": {"$ref": "#/components/schemas/ProblemOut"}}
            },
        }
        for status, cs in sorted(by_status.items())
    }
