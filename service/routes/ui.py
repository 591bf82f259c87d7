"""Pages for people: a session's backward graph, drawn (not part of the API schema)."""

from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from .. import graph_svg
from ..compute import graph
from ..deps import get_session
from ..errors import ServiceError

router = APIRouter(prefix="/ui", include_in_schema=False)


_NOT_FOUND_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>gradserve · no such session</title>
<style>body {{ font-family: "DejaVu Sans", Helvetica, sans-serif; margin: 32px; color: #111827; }}
a {{ color: #1d4ed8; }}</style></head>
<body><h1>No session <code>{name}</code></h1>
<p>{detail}</p>
<p><a href="/ui/">Open the playground</a> to create one, or list sessions at
<a href="/v1/sessions">/v1/sessions</a>.</p></body></html>
"""


@router.get("/sessions/{session}", response_class=HTMLResponse)
async def get_session_page(request: Request, session: str) -> HTMLResponse:
    """The backward graph of a session's computations: leaves, grad_fn nodes with shapes,
    freed nodes dashed. An unknown session is an HTML 404 page (this is for people).

    Same auth as /v1: with GRADSERVE_API_KEYS set a browser cannot send the bearer key,
    so the page serves key-less servers (a notebook, a dev box)."""
    try:
        found = await get_session(request, session)
    except ServiceError as exc:
        page = _NOT_FOUND_PAGE.format(name=escape(session), detail=escape(exc.detail))
        return HTMLResponse(page, status_code=exc.status)
    async with found.lock:
        result = graph.build(found, None)
    svg_url = f"/v1/sessions/{found.name}/graph.svg"
    page = await run_in_threadpool(
        graph_svg.render_page, result, session=found.name, svg_url=svg_url
    )
    return HTMLResponse(page)
