"""Every error the service answers, as RFC 9457 ``application/problem+json``.

Routes never build error bodies: they raise typed errors (``ServiceError`` here,
``EngineError`` from the engine) and one table, ``PROBLEMS``, maps each stable
``code`` to its HTTP status and title. The handlers installed by
``install_handlers`` also turn FastAPI's and Starlette's own errors (validation,
unknown route, wrong method, body too large) into the same shape, so no input
ever yields a bare 500 or a non-problem body.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from engine.errors import EngineError

log = logging.getLogger("gradserve")

PROBLEM_TYPE = "urn:gradserve:problem:"
PROBLEM_MEDIA_TYPE = "application/problem+json"

# code -> (status, title): the one table. Engine codes and service codes alike.
PROBLEMS: dict[str, tuple[int, str]] = {
    # request shape
    "validation_error": (422, "Request does not fit the schema"),
    "invalid_json": (400, "Body is not valid JSON"),
    "bad_request": (400, "Bad request"),
    "unsupported_media_type": (415, "Body must be application/json"),
    "invalid_name": (422, "Invalid name"),
    "invalid_tensor": (422, "Invalid tensor value"),
    "expr_invalid": (422, "Expression not allowed"),
    # resources
    "not_found": (404, "No such route"),
    "method_not_allowed": (405, "Method not allowed"),
    "session_not_found": (404, "Session not found"),
    "tensor_not_found": (404, "Tensor not found"),
    "session_exists": (409, "Session already exists"),
    "program_not_found": (404, "Program not found"),
    "program_not_pure": (409, "Program is not a pure function"),
    "unauthorized": (401, "Missing or wrong API key"),
    "limit_exceeded": (413, "Limit exceeded"),
    # engine (PyTorch's semantics)
    "unknown_op": (422, "Unknown operation"),
    "bad_arguments": (422, "Bad arguments"),
    "shape_mismatch": (422, "Shape mismatch"),
    "not_scalar": (422, "Gradient can only be implicit for scalar outputs"),
    "no_grad_fn": (422, "Tensor does not require grad"),
    "dtype_not_differentiable": (422, "Only floating point tensors can require gradients"),
    "not_differentiable": (422, "No derivative for this op"),
    "dtype_mismatch": (422, "Dtype mismatch"),
    "unused_input": (422, "Input not used in the graph"),
    "not_leaf": (422, "Operation needs a leaf tensor"),
    "index_out_of_range": (422, "Index out of range"),
    "graph_freed": (409, "Graph already freed"),
    "leaf_inplace": (409, "In-place operation on a leaf that requires grad"),
    "version_mismatch": (409, "Saved tensor modified in place"),
    "inplace_view": (409, "Tensor modified in place through a view"),
    # function transforms (engine.func), behind the program derivative routes
    "func_error": (422, "Function transform refused its arguments"),
    "vmap_error": (422, "vmap refused its arguments"),
    "vmap_randomness": (422, "Random op under vmap"),
    "vmap_inplace": (422, "In-place write of a batched value under vmap"),
    # durable stores (GRADSERVE_STORE, service/session/journal.py)
    "store_unavailable": (503, "Session store unavailable"),
    "session_moved": (503, "Session taken over by another replica"),
    "session_corrupt": (409, "Session journal cannot be replayed"),
    "graph_lost": (409, "Graph not kept by the session store"),
    # time (GRADSERVE_REQUEST_SECONDS)
    "deadline_exceeded": (503, "Request deadline exceeded"),
    # bugs: answered as problems too, but no test may ever reach them
    "internal_vjp_error": (500, "Internal error in a backward rule"),
    "engine_error": (500, "Internal engine error"),
    "internal_error": (500, "Internal server error"),
}

# code -> the fix, named: what a user most often got wrong and what to write instead. Only
# a ``[...]`` part holds ``{fields}``, filled by the raising site (``hint_fields``, or the
# engine error's context); it is left out when a field is not known. An explicit ``hint=``
# at the raise wins. (No other square brackets in the texts.) A ``code.variant`` key is
# the fix for one family of that code's messages (``_HINT_VARIANTS``).
HINTS: dict[str, str] = {
    "unknown_op": "[did you mean {closest}? ]GET /v1/ops lists the catalogue",
    "shape_mismatch": (
        "[the operands have shapes {shapes}; ]shapes broadcast from the last dimension, "
        "each pair equal or one of them 1: reshape or unsqueeze an operand to fit"
    ),
    # backward's gradient for an output, and matrix products, have their own fixes
    "shape_mismatch.grad": (
        "a gradient given to backward or grad (grad_tensors, grad_outputs) must have its "
        "output's shape exactly, it is not broadcast: send one shaped like the output"
    ),
    "shape_mismatch.matmul": (
        "[the operands have shapes {shapes}; ]a matrix product needs the inner sizes to "
        "agree, (n, k) @ (k, m) or (n, k) @ (k,): transpose (x.t(), x.transpose(-2, -1)) or "
        "reshape an operand"
    ),
    "no_grad_fn": (
        "it has no grad_fn: no leaf it depends on requires grad, or it was computed under "
        'no_grad. Give the leaf "requires_grad": true (when you put it, or PATCH it as '
        "requires_grad_() does), then compute the output again, outside no_grad"
    ),
    "dtype_not_differentiable": (
        'only floating tensors (float16, float32, float64) can require grad: send "dtype": '
        '"float32", or cast first (x.float())'
    ),
    "not_scalar": (
        "backward of a non-scalar needs a gradient shaped like the output: grad_tensors in "
        "the request, y.backward(torch.ones_like(y)) in Python; or reduce it first: "
        "y.sum().backward()"
    ),
    "leaf_inplace": (
        'update a leaf under no_grad (a step with "no_grad": true; with torch.no_grad(): '
        "in Python), or replace its values with an assign step"
    ),
    "inplace_view": (
        "write out of place instead (a = a * 2 rebinds the name to a new tensor), or clone "
        "the view first (a.clone().mul_(2))"
    ),
    "dtype_mismatch": (
        "[the operands are {dtypes}; ]cast one so both match: x.float() (float32) "
        "or x.double() (float64)"
    ),
    "method_not_allowed": "[this route allows {allow}]",
    "unsupported_media_type": "send the header 'Content-Type: application/json'",
}

_OPTIONAL = re.compile(r"\[([^\]]*)\]")

# (code, message pattern, HINTS key): a message family whose fix is not the code's own
_HINT_VARIANTS = (
    ("shape_mismatch", re.compile(r"^Mismatch in shape"), "shape_mismatch.grad"),
    (
        "shape_mismatch",
        re.compile(
            r"cannot be multiplied|^size mismatch, got input|^inconsistent tensor size"
            r"|^Expected size for first two dimensions"
        ),
        "shape_mismatch.matmul",
    ),
)


def hint_key(code: str, message: str) -> str:
    """The ``HINTS`` key for an error of ``code`` saying ``message``."""
    for variant_of, pattern, key in _HINT_VARIANTS:
        if code == variant_of and pattern.search(message):
            return key
    return code


def hint_for(code: str, /, **fields: Any) -> str | None:
    """The ``HINTS`` entry of ``code`` with ``fields`` filled in (None: no hint)."""
    template = HINTS.get(code)
    if template is None:
        return None
    fields = {k: v for k, v in fields.items() if v is not None}

    def part(m: re.Match[str]) -> str:
        try:
            return m.group(1).format(**fields)
        except (KeyError, IndexError):
            return ""

    return _OPTIONAL.sub(part, template).strip() or None


def closest(name: str, names: object) -> str | None:
    """The known name nearest to a typo (``sigmoud`` -> ``'sigmoid'``), quoted, or None
    (also when ``names`` cannot be listed)."""
    if not isinstance(names, Iterable):
        return None
    found = difflib.get_close_matches(name, [str(n) for n in names], n=1, cutoff=0.6)
    return repr(found[0]) if found else None


class ServiceError(Exception):
    """An error of the HTTP layer with a stable ``code`` from ``PROBLEMS``."""

    code = "internal_error"

    def __init__(
        self,
        detail: str,
        *,
        hint: str | None = None,
        hint_fields: dict[str, Any] | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.hint = hint or hint_for(self.code, **(hint_fields or {}))
        self.status = status or PROBLEMS[self.code][0]
        self.headers = headers
        self.extra = extra


class InvalidNameError(ServiceError):
    code = "invalid_name"


class InvalidTensorError(ServiceError):
    code = "invalid_tensor"


class InvalidJSONError(ServiceError):
    code = "invalid_json"


class UnsupportedMediaTypeError(ServiceError):
    code = "unsupported_media_type"


class ExprInvalidError(ServiceError):
    """Carries ``position`` = {"line", "col"} (1-based) of the offending token."""

    code = "expr_invalid"

    def __init__(self, detail: str, *, line: int = 1, col: int = 1, **kw: Any) -> None:
        super().__init__(f"{detail} (line {line}, column {col})", **kw)
        self.extra["position"] = {"line": line, "col": col}


class SessionNotFoundError(ServiceError):
    code = "session_not_found"


class TensorNotFoundError(ServiceError):
    code = "tensor_not_found"


class ProgramNotFoundError(ServiceError):
    code = "program_not_found"


class ProgramNotPureError(ServiceError):
    code = "program_not_pure"


class SessionExistsError(ServiceError):
    code = "session_exists"


class UnauthorizedError(ServiceError):
    code = "unauthorized"

    def __init__(self, detail: str, **kw: Any) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": "Bearer"}, **kw)


class LimitExceededError(ServiceError):
    """413 for a size, 429 for a count, 507 for memory; ``status`` says which."""

    code = "limit_exceeded"


class UnknownOpError(ServiceError):
    code = "unknown_op"


class BadArgumentsError(ServiceError):
    code = "bad_arguments"


class StoreUnavailableError(ServiceError):
    """503 with ``Retry-After``: the store did not keep the change (nothing acknowledged)."""

    code = "store_unavailable"

    def __init__(self, detail: str, **kw: Any) -> None:
        kw.setdefault("hint", "retry after a moment; the change was not kept")
        super().__init__(detail, headers={"Retry-After": "1"}, **kw)


class SessionMovedError(StoreUnavailableError):
    code = "session_moved"


class SessionCorruptError(ServiceError):
    code = "session_corrupt"


class GraphLostError(ServiceError):
    code = "graph_lost"


class DeadlineExceededError(ServiceError):
    """503 with ``Retry-After``: the work passed the request's deadline and was rolled back."""

    code = "deadline_exceeded"

    def __init__(self, detail: str, **kw: Any) -> None:
        kw.setdefault("hint", "the change was not kept; send smaller work, or retry later")
        super().__init__(detail, headers={"Retry-After": "1"}, **kw)


# --- rendering ------------------------------------------------------------------------------


class ProblemResponse(Response):
    media_type = PROBLEM_MEDIA_TYPE

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def problem(
    code: str,
    detail: str,
    *,
    status: int | None = None,
    hint: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> ProblemResponse:
    """The one place a problem body is built."""
    table_status, title = PROBLEMS.get(code, (422, code.replace("_", " ").capitalize()))
    status = status or table_status
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE + code,
        "title": title,
        "status": status,
        "code": code,
        "detail": detail,
    }
    if hint:
        body["hint"] = hint
    body.update({k: v for k, v in extra.items() if v is not None})
    return ProblemResponse(body, status_code=status, headers=headers)


# pydantic error types raised by our own validators that carry a service code
_CODED_ERROR_TYPES = {"invalid_tensor", "invalid_name", "expr_invalid", "json_invalid"}


def _field_errors(errors: Any) -> list[dict[str, Any]]:
    out = []
    for err in errors:
        out.append(
            {
                "loc": [p if isinstance(p, int | str) else str(p) for p in err.get("loc", ())],
                "msg": str(err.get("msg", "")),
                "type": str(err.get("type", "")),
            }
        )
    return out


def validation_problem(errors: Any) -> ProblemResponse:
    """422 ``validation_error`` listing each field, or the service code our validators set."""
    fields = _field_errors(errors)
    types = {f["type"] for f in fields}
    if types == {"json_invalid"}:
        detail = "; ".join(f["msg"] for f in fields) or "invalid JSON"
        return problem("invalid_json", f"request body is not valid JSON: {detail}", errors=fields)
    code = types.pop() if len(types) == 1 and types <= _CODED_ERROR_TYPES else "validation_error"
    detail = "; ".join(f"{'.'.join(map(str, f['loc']))}: {f['msg']}" for f in fields[:5])
    if len(fields) > 5:
        detail += f"; and {len(fields) - 5} more"
    return problem(code, detail or "invalid request", errors=fields)


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "limit_exceeded",
    415: "unsupported_media_type",
}


def known_error_response(exc: BaseException) -> Response | None:
    """The problem for an error the service expects while answering, else None.

    The exception handlers below answer with it."""
    if isinstance(exc, ServiceError):
        return problem(
            exc.code, exc.detail, status=exc.status, hint=exc.hint, headers=exc.headers, **exc.extra
        )
    if isinstance(exc, EngineError):
        if PROBLEMS.get(exc.code, (422,))[0] >= 500:
            log.error("engine bug: %s", exc, exc_info=exc)
        ctx = exc.context
        return problem(
            exc.code,
            str(exc),
            hint=ctx.get("hint") or hint_for(hint_key(exc.code, str(exc)), **ctx),
            step=ctx.get("step"),
            position=ctx.get("position"),
            iteration=ctx.get("iteration"),
        )
    if isinstance(exc, ValidationError):  # a model validated inside the service
        return validation_problem(exc.errors())
    if isinstance(exc, MemoryError):
        log.warning("out of memory: %r", exc)
        return problem(
            "limit_exceeded", "the server ran out of memory for this request", status=507
        )
    if isinstance(exc, StarletteHTTPException):  # the body over the limit, from receive
        return _http_problem(exc, str(exc.detail))
    return None


def _http_problem(
    exc: StarletteHTTPException, detail: str, headers: Mapping[str, str] | None = None
) -> Response:
    code = _HTTP_CODES.get(exc.status_code, "bad_request")
    headers = headers or exc.headers
    allow = (headers or {}).get("Allow") if code == "method_not_allowed" else None
    hint = hint_for(code, **({"allow": allow} if allow else {}))
    return problem(code, detail, status=exc.status_code, headers=headers, hint=hint)


def _allowed_methods(request: Request) -> str | None:
    """Every method some route serves at this path (one route per method in FastAPI, so
    Starlette's own ``Allow`` names only the first route it matched)."""
    methods: set[str] = set()
    path = request.url.path
    routes = list(request.app.router.routes)
    while routes:
        route = routes.pop()
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
        included = getattr(route, "original_router", None)  # an included router's routes
        if included is not None:
            routes.extend(included.routes)
    return ", ".join(sorted(methods)) or None


async def _known_error(request: Request, exc: Exception) -> Response:
    response = known_error_response(exc)
    assert response is not None
    return response


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return validation_problem(exc.errors())


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no route {request.method} {request.url.path}"
    elif exc.status_code == 405:
        detail = f"method {request.method} not allowed on {request.url.path}"
        allow = _allowed_methods(request)
        if allow:
            return _http_problem(exc, detail, {**(exc.headers or {}), "Allow": allow})
    return _http_problem(exc, detail)


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    log.error("unhandled %s: %s", type(exc).__name__, exc, exc_info=exc)
    return problem("internal_error", "unexpected server error; this is a bug, please report it")


def install_handlers(app: FastAPI) -> None:
    for known in (ServiceError, EngineError, ValidationError, MemoryError):
        app.add_exception_handler(known, _known_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected_error)
