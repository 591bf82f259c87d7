"""The application factory: settings, store, routers, error handlers, middleware."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, params
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import TypeAdapter

from engine.version import __version__

from .bodies import Payload
from .deps import SESSION_CALL_PARAMETERS, session_call
from .docs import mount_docs
from .errors import install_handlers
from .observability import (
    BodyLimitMiddleware,
    Metrics,
    ProblemCORSMiddleware,
    RequestContextMiddleware,
)
from .routes import ROUTERS
from .schemas import Encoding, GraphFormat, ProblemOut
from .session.manager import SessionManager
from .settings import Settings, get_settings

log = logging.getLogger("gradserve")

VERSION = __version__
DESCRIPTION = """\
Reverse-mode automatic differentiation with PyTorch's autograd semantics, over REST.

Build a graph in a named session (leaves with `requires_grad`, steps that record a
`grad_fn`), call `backward` with `grad_tensors` and `retain_graph`, read the leaves'
`.grad` and zero them. Every error is `application/problem+json` with a stable `code`.
"""


def create_app(
    settings: Settings | None = None, dependencies: Sequence[params.Depends] = ()
) -> FastAPI:
    """A new app with its own session manager; ``settings`` overrides the environment;
    ``dependencies`` run on every route (FastAPI's app-level dependencies)."""
    settings = settings or get_settings()
    app = FastAPI(
        lifespan=lifespan,
        dependencies=list(dependencies),
        title="gradserve",
        version=VERSION,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.sessions = SessionManager(settings)
    app.state.metrics = Metrics(lambda: len(app.state.sessions))
    install_handlers(app)
    for router in ROUTERS:  # first: the router tries routes in order
        app.include_router(router)
    mount_docs(app)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(
        RequestContextMiddleware, metrics=app.state.metrics, log_requests=settings.access_log
    )
    if settings.cors_origins:  # outermost: a preflight is answered before anything else
        app.add_middleware(
            ProblemCORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["Location", "X-Request-ID", "Gradserve-Dtype", "Gradserve-Shape"],
            max_age=600,
        )

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """While the app serves: the session manager's store open (``GRADSERVE_STORE``) and
    its background task that evicts idle sessions, without traffic."""
    async with app.state.sessions.running():
        yield


def build_openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema, made for client generators: the problem model every error response
    refers to, optional bearer auth, and named components instead of inline copies."""
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        tags=[
            {"name": "sessions", "description": "Named sessions of tensors."},
            {"name": "tensors", "description": "Leaves, values, grads and flags."},
            {"name": "steps", "description": "Ops and expressions, alone or in atomic batches."},
            {"name": "autograd", "description": "backward, grad and the graph."},
            {"name": "stateless", "description": "One call, no session."},
            {"name": "catalogue", "description": "The ops the engine offers."},
            {"name": "health", "description": "Liveness, readiness, metrics."},
        ],
        separate_input_output_schemas=False,  # one TensorData, not -Input and -Output
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for payload in Payload.every:  # bodies read by the routes, not declared to FastAPI
        components.update(payload.components())
    _session_call_parameters(schema)
    problem = ProblemOut.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(problem.pop("$defs", {}))
    components["ProblemOut"] = problem
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    for alias in (Encoding, GraphFormat):  # used by parameters only, which FastAPI inlines
        components[alias.__name__] = TypeAdapter(alias.__value__).json_schema()
    _refer_to_components(schema)
    _optional_auth(schema)
    return schema


def _session_call_parameters(schema: dict[str, Any]) -> None:
    """The path and query parameters ``session_call`` reads, on every route that uses it."""
    session, *query = SESSION_CALL_PARAMETERS
    users = {
        route.operation_id
        for router in ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute)
        and any(d.call is session_call for d in route.dependant.dependencies)
    }
    for item in schema["paths"].values():
        for operation in item.values():
            if operation.get("operationId") in users:
                operation["parameters"] = [session, *operation.get("parameters", []), *query]


def _optional_auth(schema: dict[str, Any]) -> None:
    """Bearer auth, needed only when the server sets GRADSERVE_API_KEYS: declared once, at the
    top, as "a key or none", so generated clients call /v1 with or without one (a requirement
    on each operation makes openapi-python-client demand an AuthenticatedClient)."""
    schema["components"]["securitySchemes"] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key, needed when the server sets GRADSERVE_API_KEYS; "
            "a missing or wrong key is then a 401 `unauthorized` problem.",
        }
    }
    schema["security"] = [{"bearer": []}, {}]
    for path, item in schema["paths"].items():
        if not path.startswith("/v1/"):
            for operation in item.values():
                operation["security"] = []  # health and metrics never need a key


def _refer_to_components(schema: dict[str, Any]) -> None:
    """Parameters and bodies that FastAPI inlines (an enum, a name pattern, a union of forms)
    become a $ref to the component they copy, so generators make one type, not one per use."""
    components = schema["components"]["schemas"]

    def shape(s: dict[str, Any]) -> str | None:
        key = {k: s[k] for k in ("enum", "pattern", "oneOf") if k in s}
        return json.dumps(key, sort_keys=True) if key else None

    named = {shape(c): name for name, c in sorted(components.items()) if shape(c)}
    for item in schema["paths"].values():
        for operation in item.values():
            places = [p for p in operation.get("parameters", []) if "schema" in p]
            places += operation.get("requestBody", {}).get("content", {}).values()
            for place in places:
                s = place["schema"]
                if (name := named.get(shape(s))) is not None:
                    kept = {k: s[k] for k in ("default", "description") if k in s}
                    place["schema"] = {"$ref": f"#/components/schemas/{name}", **kept}
