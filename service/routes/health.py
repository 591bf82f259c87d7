"""Liveness, readiness and Prometheus metrics (outside /v1: no API key needed)."""

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..deps import SessionsDep, owner_from_header
from ..errors import ServiceError
from ..http import JSONBody
from ..schemas import HealthOut

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="healthz", response_model=HealthOut)
async def healthz() -> Response:
    """Liveness: the process answers."""
    return JSONBody({"status": "ok"})


@router.get("/readyz", operation_id="readyz", response_model=HealthOut)
async def readyz(request: Request, sessions: SessionsDep) -> Response:
    """Readiness: the app is built and its session store answers (503 while it does not);
    `sessions` counts the caller's sessions (with API keys: only given a valid key)."""
    body: dict[str, object] = {"status": "ready"}
    if not await sessions.reachable():
        return JSONBody({**body, "status": "store_unavailable"}, status_code=503)
    try:
        owner = owner_from_header(request.app.state.settings, request.headers.get("authorization"))
    except ServiceError:
        return JSONBody(body)  # no key, or a wrong one: readiness without counts
    body["sessions"] = await sessions.count(owner)  # in the store, if durable
    return JSONBody(body)


@router.get(
    "/metrics",
    operation_id="metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    """Prometheus text: requests by route and status, latency, sessions held."""
    body = generate_latest(request.app.state.metrics.registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
