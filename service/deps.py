"""``Annotated`` dependency aliases: every route gets settings, auth, the sessions, and
its path resources validated and looked up, without a line of its own.

All are ``async def``: FastAPI runs a plain ``def`` dependency in a worker thread,
which would cost a thread hop per dependency per request."""

import hmac
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Depends, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, TypeAdapter, ValidationError

from .errors import UnauthorizedError
from .names import SESSION_NAME_PATTERN, TENSOR_NAME_PATTERN, check_session_name, check_tensor_name
from .session.manager import SessionManager
from .session.state import Session, owner_of
from .settings import Settings

SESSION_DESCRIPTION = "Session name: letters, digits, '_', '.', '-' (1-64)."
ENCODING_DESCRIPTION = "json: nested lists; base64: raw little-endian bytes."
VALUES_DESCRIPTION = "false: metadata only, without data and grad."


async def app_settings(request: Request) -> Settings:
    """The app's settings: ``create_app(settings)``, else the environment (``get_settings``);
    a test may also replace this dependency through ``app.dependency_overrides``.

    Read from the app rather than through ``dependency_overrides``, which FastAPI
    re-analyzes on every request."""
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(app_settings)]


async def get_sessions(request: Request) -> SessionManager:
    """The app's one session manager."""
    return request.app.state.sessions


SessionsDep = Annotated[SessionManager, Depends(get_sessions)]


async def authenticate(request: Request) -> str | None:
    """The caller's owner id: None without API keys; 401 for a missing or wrong key.

    Reads the header itself (no sub-dependencies: each costs time on every request);
    ``app.build_openapi`` documents the bearer scheme."""
    return owner_from_header(request.app.state.settings, request.headers.get("authorization"))


def owner_from_header(settings: Settings, authorization: str | None) -> str | None:
    """``authenticate`` on the raw header value."""
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
        description=SESSION_DESCRIPTION,
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


async def get_session(request: Request, session: SessionPath) -> Session:
    """The caller's session named in the path (``invalid_name`` / ``session_not_found``)."""
    state = request.app.state
    owner = owner_from_header(state.settings, request.headers.get("authorization"))
    sessions: SessionManager = state.sessions
    return await sessions.session(check_session_name(session), owner)


SessionDep = Annotated[Session, Depends(get_session)]


async def tensor_name(tensor: TensorPath) -> str:
    return check_tensor_name(tensor)


TensorNameDep = Annotated[str, Depends(tensor_name)]


@dataclass(frozen=True, slots=True)
class Output:
    """How tensor values are written in a response."""

    encoding: Literal["json", "base64"]
    values: bool


_OUTPUTS = {(e, v): Output(e, v) for e in ("json", "base64") for v in (True, False)}

EncodingQuery = Annotated[Literal["json", "base64"], Query(description=ENCODING_DESCRIPTION)]
ValuesQuery = Annotated[bool, Query(description=VALUES_DESCRIPTION)]


async def output_options(encoding: EncodingQuery = "json", values: ValuesQuery = True) -> Output:
    return _OUTPUTS[(encoding, values)]


OutputDep = Annotated[Output, Depends(output_options)]


class OutputQuery(BaseModel):
    """``?encoding=`` and ``?values=``, validated as FastAPI validates query parameters."""

    encoding: Literal["json", "base64"] = "json"
    values: bool = True


_OUTPUT_QUERY = TypeAdapter(OutputQuery)


@dataclass(frozen=True, slots=True)
class SessionCall:
    """What a route on one session needs: the session, how to write tensors, the settings,
    and the request (for a body a ``Payload`` reads)."""

    session: Session
    out: Output
    settings: Settings
    request: Request


async def session_call(request: Request) -> SessionCall:
    """Key, session and output options in one flat dependency with no parameters of its
    own: FastAPI solves each declared parameter and each nested dependency on every
    request, and these routes carry a training loop. ``build_openapi`` documents the
    parameters it reads (``SESSION_CALL_PARAMETERS``)."""
    state = request.app.state
    settings: Settings = state.settings
    owner = owner_from_header(settings, request.headers.get("authorization"))
    name = check_session_name(request.path_params["session"])
    sessions: SessionManager = state.sessions
    found = await sessions.session(name, owner)
    out = _OUTPUTS[("json", True)]
    if request.scope["query_string"]:
        out = _output(request)
    return SessionCall(found, out, settings, request)


def _output(request: Request) -> Output:
    query = request.query_params
    given = {k: query[k] for k in ("encoding", "values") if k in query}
    try:
        parsed = _OUTPUT_QUERY.validate_python(given)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None
    return _OUTPUTS[(parsed.encoding, parsed.values)]


CallDep = Annotated[SessionCall, Depends(session_call)]

SESSION_CALL_PARAMETERS: list[dict[str, Any]] = [
    {
        "description": SESSION_DESCRIPTION,
        "in": "path",
        "name": "session",
        "required": True,
        "schema": {"$ref": "#/components/schemas/SessionName", "description": SESSION_DESCRIPTION},
    },
    {
        "description": ENCODING_DESCRIPTION,
        "in": "query",
        "name": "encoding",
        "required": False,
        "schema": {
            "$ref": "#/components/schemas/Encoding",
            "default": "json",
            "description": ENCODING_DESCRIPTION,
        },
    },
    {
        "description": VALUES_DESCRIPTION,
        "in": "query",
        "name": "values",
        "required": False,
        "schema": {
            "default": True,
            "description": VALUES_DESCRIPTION,
            "title": "Values",
            "type": "boolean",
        },
    },
]
