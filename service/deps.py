"""``Annotated`` dependency aliases: every route gets settings, auth, the store, and
its path resources validated and looked up, without a line of its own.

All are ``async def``: FastAPI runs a plain ``def`` dependency in a worker thread,
which would cost a thread hop per dependency per request."""

import hmac
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Path, Query, Request

from .errors import UnauthorizedError
from .journal import Journal
from .names import SESSION_NAME_PATTERN, TENSOR_NAME_PATTERN, check_session_name, check_tensor_name
from .sessions import Session, SessionStore, owner_of
from .settings import Settings


async def app_settings(request: Request) -> Settings:
    """The app's settings: ``create_app(settings)``, else the environment (``get_settings``);
    a test may also replace this dependency through ``app.dependency_overrides``.

    Read from the app rather than through ``dependency_overrides``, which FastAPI
    re-analyzes on every request."""
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(app_settings)]


async def get_store(request: Request) -> SessionStore:
    return request.app.state.store


StoreDep = Annotated[SessionStore, Depends(get_store)]


async def get_journal(request: Request) -> Journal:
    return request.app.state.journal


JournalDep = Annotated[Journal, Depends(get_journal)]


async def authenticate(request: Request) -> str | None:
    """The caller's owner id: None without API keys; 401 for a missing or wrong key.

    Reads the header itself (no sub-dependencies: each costs time on every request);
    ``app.build_openapi`` documents the bearer scheme."""
    return owner_from_header(request.app.state.settings, request.headers.get("authorization"))


def owner_from_header(settings: Settings, authorization: str | None) -> str | None:
    """``authenticate`` on the raw header value (the fast lane has no ``Request``)."""
    keys = settings.api_keys
    if not keys:
        return None
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthorizedError("this server needs 'Authorization: Bearer <key>'")
    given = token.strip().encode()
    if not any(hmac.compare_digest(given, key.encode()) for key in keys):
        raise UnauthorizedError("the API key is not valid")
    return owner_of(token.strip())


AuthDep = Annotated[str | None, Depends(authenticate)]

SessionPath = Annotated[
    str,
    Path(
        description="Session name: letters, digits, '_', '.', '-' (1-64).",
        examples=["nb1"],
        json_schema_extra={"pattern": SESSION_NAME_PATTERN},
    ),
]
TensorPath = Annotated[
    str,
    Path(
        description="Tensor name: a Python identifier of at most 64 characters.",
        examples=["x"],
        json_schema_extra={"pattern": TENSOR_NAME_PATTERN},
    ),
]


async def get_session(request: Request, session: SessionPath, owner: AuthDep) -> Session:
    """The caller's session named in the path (``invalid_name`` / ``session_not_found``)."""
    journal: Journal = request.app.state.journal  # the store, or memory
    return await journal.session(check_session_name(session), owner)


SessionDep = Annotated[Session, Depends(get_session)]


async def tensor_name(tensor: TensorPath) -> str:
    return check_tensor_name(tensor)


TensorNameDep = Annotated[str, Depends(tensor_name)]


@dataclass(frozen=True)
class Output:
    """How tensor values are written in a response."""

    encoding: Literal["json", "base64"]
    values: bool


async def output_options(
    encoding: Annotated[
        Literal["json", "base64"],
        Query(description="json: nested lists; base64: raw little-endian bytes."),
    ] = "json",
    values: Annotated[
        bool, Query(description="false: metadata only, without data and grad.")
    ] = True,
) -> Output:
    return Output(encoding, values)


OutputDep = Annotated[Output, Depends(output_options)]
