"""What every /v1 router shares: the orjson route class, auth, and common problems."""

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.routing import APIRoute

from ..deps import authenticate
from ..http import FastJSONRoute, problems


def v1_router(
    tag: str, prefix: str = "/v1", *, session_routes: bool = False, declared_bodies: bool = True
) -> APIRouter:
    """A /v1 router whose every route checks the API key. ``session_routes``: every route
    resolves its session through ``session_call`` or ``get_session``, which check the key
    themselves, so the router needs no dependency of its own (one less solve per request
    on the hot routes; ``test_request_path`` checks that every /v1 route answers 401).
    ``declared_bodies=False``: no route declares a body to FastAPI (they read theirs with
    a ``Payload``), so FastAPI's own route class does, without the orjson request."""
    return APIRouter(
        prefix=prefix,
        tags=[tag],
        route_class=FastJSONRoute if declared_bodies else APIRoute,
        dependencies=[] if session_routes else [Depends(authenticate)],
    )


def documented(*codes: str, limits: tuple[int, ...] = ()) -> dict[int | str, dict[str, Any]]:
    """Problems any /v1 route can answer, plus the route's own."""
    return problems("unauthorized", "validation_error", *codes, limits=limits)


BODY = ("invalid_json", "unsupported_media_type")
# with GRADSERVE_STORE set (service/session/journal.py)
STORE = ("store_unavailable", "session_moved")
SESSION = ("invalid_name", "session_not_found", *STORE, "session_corrupt")
TENSOR = (*SESSION, "tensor_not_found")
