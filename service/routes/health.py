"""Liveness, readiness and Prometheus metrics (outside /v1: no API key needed)."""

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..deps import JournalDep, StoreDep
from ..http import JSONBody
from ..schemas import HealthOut

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="healthz", response_model=HealthOut)
async def healthz() -> Response:
    """Liveness: the process answers."""
    return JSONBody({"status": "ok"})


@router.get("/readyz", operation_id="readyz", response_model=HealthOut)
async def readyz(store: StoreDep, journal: JournalDep) -> Response:
    """Readiness: the app is built and its session store answers (503 while it does not)."""
    if not await journal.reachable():
        return JSONBody({"status": "store_unavailable", "sessions": len(store)}, status_code=503)
    return JSONBody({"status": "ready", "sessions": len(store)})


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
