"""What every /v1 router shares: the orjson route class, auth, and common problems."""

from typing import Any

from fastapi import APIRouter, Depends

from ..deps import authenticate
from ..http import FastJSONRoute, problems


def v1_router(tag: str, prefix: str = "/v1") -> APIRouter:
    return APIRouter(
        prefix=prefix,
        tags=[tag],
        route_class=FastJSONRoute,
        dependencies=[Depends(authenticate)],
    )


def documented(*codes: str, limits: tuple[int, ...] = ()) -> dict[int | str, dict[str, Any]]:
    """Problems any /v1 route can answer, plus the route's own."""
    return problems("unauthorized", "validation_error", *codes, limits=limits)


BODY = ("invalid_json", "unsupported_media_type")
STORE = ("store_unavailable", "session_moved")  # with GRADSERVE_STORE set (service/journal.py)
SESSION = ("invalid_name", "session_not_found", *STORE, "session_corrupt")
TENSOR = (*SESSION, "tensor_not_found")
