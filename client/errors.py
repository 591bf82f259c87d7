"""Typed exceptions for gradserve's problem+json answers.

Every error the server answers carries a stable ``code``; the client raises
the subclass registered for that code (``GraphFreedError`` for
``graph_freed``, ...), or ``GradserveError`` itself for a code it does not
know. Each keeps the problem's ``status``, ``detail`` (PyTorch's wording for
engine errors), ``hint`` and the whole ``problem`` body.

The autograd errors also derive from ``RuntimeError`` and the request errors
from ``ValueError``, as PyTorch raises them, so a tutorial's
``except RuntimeError:`` keeps working against the server.
"""

from __future__ import annotations

from typing import Any

from . import display


class GradserveError(Exception):
    """An error answered by gradserve (or met on the way to it)."""

    code: str = "error"

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        status: int | None = None,
        hint: str | None = None,
        title: str | None = None,
        problem: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        if code is not None:
            self.code = code
        self.detail = detail
        self.status = status
        self.hint = hint
        self.title = title
        self.problem: dict[str, Any] = problem or {}

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Per-field validation errors (``validation_error`` and friends)."""
        return list(self.problem.get("errors") or [])

    @property
    def position(self) -> dict[str, int] | None:
        """``{"line", "col"}`` of the offending token (``expr_invalid``)."""
        return self.problem.get("position")

    def __str__(self) -> str:
        text = self.detail
        if self.hint:
            text += f" (hint: {self.hint})"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status}, detail={self.detail!r})"

    def _display_args(self) -> tuple[str, str, int | None, str, str | None]:
        title = self.title or self.problem.get("title") or type(self).__name__
        return title, self.code, self.status, self.detail, self.hint

    def _repr_html_(self) -> str:
        """The problem as a card in a notebook (``display(err)``)."""
        return display.problem_html(*self._display_args())

    def _repr_markdown_(self) -> str:
        return display.problem_markdown(*self._display_args())


class TransportError(GradserveError):
    """The server could not be reached, or the answer was not a problem or JSON."""

    code = "transport_error"


# --- request errors (4xx that say the request was wrong) -----------------------------------------


class RequestError(GradserveError, ValueError):
    code = "bad_request"


class ValidationError(RequestError):
    code = "validation_error"


class InvalidJSONError(RequestError):
    code = "invalid_json"


class InvalidNameError(RequestError):
    code = "invalid_name"


class InvalidTensorError(RequestError):
    code = "invalid_tensor"


class ExprInvalidError(RequestError):
    code = "expr_invalid"


class UnknownOpError(RequestError):
    code = "unknown_op"


class BadArgumentsError(RequestError):
    code = "bad_arguments"


class UnsupportedMediaTypeError(RequestError):
    code = "unsupported_media_type"


class NotFoundError(GradserveError, LookupError):
    code = "not_found"


class SessionNotFoundError(NotFoundError):
    code = "session_not_found"


class TensorNotFoundError(NotFoundError):
    code = "tensor_not_found"


class MethodNotAllowedError(GradserveError):
    code = "method_not_allowed"


class ProgramNotFoundError(NotFoundError):
    code = "program_not_found"


class SessionExistsError(GradserveError):
    code = "session_exists"


class ProgramNotPureError(GradserveError):
    code = "program_not_pure"


class UnauthorizedError(GradserveError, PermissionError):
    code = "unauthorized"


class LimitExceededError(GradserveError):
    code = "limit_exceeded"


# --- autograd errors: PyTorch raises these as RuntimeError -------------------------------------


class AutogradError(GradserveError, RuntimeError):
    code = "autograd_error"


class ShapeMismatchError(AutogradError):
    code = "shape_mismatch"


class NotScalarError(AutogradError):
    code = "not_scalar"


class NoGradFnError(AutogradError):
    code = "no_grad_fn"


class DtypeNotDifferentiableError(AutogradError):
    code = "dtype_not_differentiable"


class DtypeMismatchError(AutogradError):
    code = "dtype_mismatch"


class UnusedInputError(AutogradError):
    code = "unused_input"


class NotLeafError(AutogradError):
    code = "not_leaf"


class IndexOutOfRangeError(AutogradError, IndexError):
    code = "index_out_of_range"


class GraphFreedError(AutogradError):
    code = "graph_freed"


class LeafInplaceError(AutogradError):
    code = "leaf_inplace"


class InplaceViewError(AutogradError):
    code = "inplace_view"


class VersionMismatchError(AutogradError):
    code = "version_mismatch"


class NotDifferentiableError(AutogradError):
    code = "not_differentiable"


class GraphLostError(AutogradError):
    code = "graph_lost"


class FuncError(AutogradError):
    """``torch.func``'s refusals (``func_error``, ``vmap_error``, ...): RuntimeError there."""

    code = "func_error"


class VmapError(FuncError):
    code = "vmap_error"


class VmapRandomnessError(FuncError):
    code = "vmap_randomness"


class VmapInplaceError(FuncError):
    code = "vmap_inplace"


class SessionCorruptError(GradserveError):
    code = "session_corrupt"


class StoreUnavailableError(GradserveError):
    """A 503 to retry (``Retry-After``): nothing was kept."""

    code = "store_unavailable"


class SessionMovedError(StoreUnavailableError):
    code = "session_moved"


class DeadlineExceededError(GradserveError):
    """A 503 to retry (``Retry-After``): the work ran past the deadline, nothing was kept."""

    code = "deadline_exceeded"


class ServerError(GradserveError):
    """A 5xx: a bug on the server side (``internal_error``, ``engine_error``, ...)."""

    code = "internal_error"


class InternalEngineError(ServerError):
    code = "engine_error"


class InternalVJPError(ServerError):
    code = "internal_vjp_error"


def _subclasses(cls: type[GradserveError]) -> list[type[GradserveError]]:
    out, stack = [], [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            out.append(sub)
            stack.append(sub)
    return out


ERRORS: dict[str, type[GradserveError]] = {
    c.code: c for c in _subclasses(GradserveError) if c not in (RequestError, AutogradError)
}
ERRORS["bad_request"] = RequestError


def from_problem(status: int, body: Any) -> GradserveError:
    """The typed exception for one problem+json body (or any other error answer)."""
    if not isinstance(body, dict) or "code" not in body:
        detail = body.get("detail") if isinstance(body, dict) else None
        text = detail if isinstance(detail, str) else f"HTTP {status}: {str(body)[:200]}"
        cls: type[GradserveError] = ServerError if status >= 500 else GradserveError
        return cls(
            text,
            code=f"http_{status}",
            status=status,
            problem=body if isinstance(body, dict) else {},
        )
    code = str(body["code"])
    cls = ERRORS.get(code) or (ServerError if status >= 500 else GradserveError)
    return cls(
        str(body.get("detail") or body.get("title") or code),
        code=code,
        status=int(body.get("status") or status),
        hint=body.get("hint"),
        title=body.get("title"),
        problem=body,
    )
