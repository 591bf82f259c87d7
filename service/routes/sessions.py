"""Sessions: create, list, read, delete."""

from typing import Annotated

from fastapi import Body, Response

from .. import views
from ..deps import AuthDep, SessionDep, SessionPath, SessionsDep
from ..http import JSONBody
from ..schemas import SessionIn, SessionListOut, SessionOut
from ._base import BODY, SESSION, STORE, documented, v1_router

router = v1_router("sessions", "/v1/sessions")


@router.post(
    "",
    operation_id="createSession",
    status_code=201,
    response_model=SessionOut,
    responses=documented(*BODY, "invalid_name", "session_exists", *STORE, limits=(413, 429)),
)
async def create_session(
    owner: AuthDep, sessions: SessionsDep, body: Annotated[SessionIn | None, Body()] = None
) -> Response:
    """Create a session; a name is generated when none is given (409 if it is taken)."""
    session = await sessions.create(body.name if body is not None else None, owner)
    return JSONBody(
        views.session(session),
        status_code=201,
        headers={"Location": f"/v1/sessions/{session.name}"},
    )


@router.get(
    "",
    operation_id="listSessions",
    response_model=SessionListOut,
    responses=documented("store_unavailable"),
)
async def list_sessions(owner: AuthDep, sessions: SessionsDep) -> Response:
    """List the caller's sessions."""
    return JSONBody({"sessions": await sessions.summaries(owner)})


@router.get(
    "/{session}",
    operation_id="getSession",
    response_model=SessionOut,
    responses=documented(*SESSION),
)
async def get_session(session: SessionDep) -> Response:
    """One session: its tensors (metadata), byte count, created/last-used/expiry times."""
    async with session.lock:
        return JSONBody(views.session(session))


@router.delete(
    "/{session}", operation_id="deleteSession", status_code=204, responses=documented(*SESSION)
)
async def delete_session(session: SessionPath, owner: AuthDep, sessions: SessionsDep) -> Response:
    """Drop a session and everything in it."""
    await sessions.delete(session, owner)  # also one whose journal cannot be replayed
    return Response(status_code=204)
