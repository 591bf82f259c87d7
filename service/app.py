"""The application factory: settings, store, routers, error handlers, middleware."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from .docs import mount_docs
from .errors import install_handlers
from .observability import BodyLimitMiddleware, Metrics, RequestContextMiddleware
from .routes import ROUTERS
from .schemas import ProblemOut
from .sessions import SessionStore
from .settings import Settings, get_settings

VERSION = "0.1.0"
DESCRIPTION = """\
Reverse-mode automatic differentiation with PyTorch's autograd semantics, over REST.

Build a graph in a named session (leaves with `requires_grad`, steps that record a
`grad_fn`), call `backward` with `grad_tensors` and `retain_graph`, read the leaves'
`.grad` and zero them. Every error is `application/problem+json` with a stable `code`.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    """A new app with its own session store; ``settings`` overrides the environment."""
    settings = settings or get_settings()
    app = FastAPI(
        title="gradserve",
        version=VERSION,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.store = SessionStore(settings)
    app.state.metrics = Metrics(lambda: len(app.state.store))
    install_handlers(app)
    mount_docs(app)
    for router in ROUTERS:
        app.include_router(router)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(
        RequestContextMiddleware, metrics=app.state.metrics, log_requests=settings.access_log
    )

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def build_openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema, plus the problem model every error response refers to."""
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
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    problem = ProblemOut.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(problem.pop("$defs", {}))
    components["ProblemOut"] = problem
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    schema["components"]["securitySchemes"] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key, needed when the server sets GRADSERVE_API_KEYS.",
        }
    }
    for path, item in schema["paths"].items():
        if path.startswith("/v1/"):
            for operation in item.values():
                operation["security"] = [{"bearer": []}]
    return schema
