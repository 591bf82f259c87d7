"""JSON request bodies of the hot routes, validated with module-level ``TypeAdapter``s.

FastAPI's declared body costs far more than its validation (about 75 µs per request
against 6 µs for a step, measured in process): these routes read the body through a
``Payload`` instead, which parses with orjson, validates with one adapter built at
import, and remembers the last bodies it validated (a training loop sends the same
few bodies on every iteration; the models are frozen, so sharing them is safe).
Errors are FastAPI's own ``RequestValidationError``, so the problems are the same
as for any declared body; ``openapi()`` documents the body for the route.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, ClassVar, Generic, TypeVar

import anyio.to_thread
import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from .errors import UnsupportedMediaTypeError
from .http import LARGE_BODY, check_json_values, is_json, parse_large_json

T = TypeVar("T")

REMEMBERED_BODIES = 256  # validated bodies kept per payload type, least recently used out
REMEMBERED_BODY_BYTES = 16 << 10  # ... of at most 16 KiB each (a 100-step batch is 5 KiB)


class Payload(Generic[T]):
    """How one route reads its JSON body: the type, its adapter, its examples."""

    every: ClassVar[list[Payload[Any]]] = []  # build_openapi adds their schemas

    def __init__(
        self,
        tp: Any,
        name: str,
        *,
        required: bool = True,
        examples: dict[str, Any] | None = None,
        remember: bool = True,
    ) -> None:
        self.adapter: TypeAdapter[T] = TypeAdapter(tp)
        self.name = name  # the component the schema is published as
        self.required = required
        self.examples = examples
        self.remembered: OrderedDict[bytes, T] = OrderedDict()
        # False: every body is validated (a program's compiled form is its only cache)
        self.remember = remember
        Payload.every.append(self)

    async def read(self, request: Request) -> T | None:
        """The validated body; None for an absent optional body."""
        body = await request.body()
        if not body and not self.required:
            return None
        content_type = request.headers.get("content-type")
        if body and (content_type is None or not is_json(content_type)):
            raise UnsupportedMediaTypeError(
                f"the body must be application/json, not {content_type or 'untyped'}",
            )
        value = self.remembered.get(body)
        if value is not None:
            self.remembered.move_to_end(body)
            return value
        if not body:
            raise RequestValidationError(
                [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
            )
        try:
            if len(body) > LARGE_BODY:
                check_json_values(body, request.app.state.settings.max_json_values)
                parsed = await anyio.to_thread.run_sync(parse_large_json, body)
            else:
                parsed = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise RequestValidationError(
                [{"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error"}]
            ) from None
        try:
            value = self.adapter.validate_python(parsed)
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
            ) from None
        if self.remember and len(body) <= REMEMBERED_BODY_BYTES:
            self.remembered[body] = value
            if len(self.remembered) > REMEMBERED_BODIES:
                self.remembered.popitem(last=False)
        return value

    def openapi(self) -> dict[str, Any]:
        """The route's ``openapi_extra``: its request body, a $ref to the component."""
        media: dict[str, Any] = {"schema": {"$ref": f"#/components/schemas/{self.name}"}}
        if self.examples:
            media["examples"] = self.examples
        return {"requestBody": {"required": self.required, "content": {"application/json": media}}}

    def components(self) -> dict[str, Any]:
        """The schema of the body and of every model it refers to, by component name."""
        schema = self.adapter.json_schema(ref_template="#/components/schemas/{model}")
        defs = schema.pop("$defs", {})
        if schema.get("$ref") != f"#/components/schemas/{self.name}":
            defs[self.name] = schema
        return dict(defs)
