"""Pages for people: a session's backward graph, drawn (not part of the API schema)."""

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from .. import graph, graph_svg
from ..deps import SessionDep

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.get("/sessions/{session}", response_class=HTMLResponse)
async def get_session_page(session: SessionDep) -> HTMLResponse:
    """The backward graph of every non-leaf: leaves, grad_fn nodes, freed nodes dashed.

    Same auth as /v1 (SessionDep): with GRADSERVE_API_KEYS set a browser cannot send the
    bearer key, so the page serves key-less servers (a notebook, a dev box)."""
    async with session.lock:
        result = graph.build(session, None)
    svg_url = f"/v1/sessions/{session.name}/graph.svg"
    return HTMLResponse(graph_svg.render_page(result, session=session.name, svg_url=svg_url))
