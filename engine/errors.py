"""Typed engine errors.

Each error carries a stable ``code`` that the service maps to an HTTP problem;
messages keep PyTorch's wording where PyTorch has one, so users can search it.
"""

from __future__ import annotations

from typing import Any

from gradcore.messages import (
    LEAF_INPLACE_MESSAGE as LEAF_INPLACE_MESSAGE,  # engine.tensor raises it
)


class EngineError(RuntimeError):
    """Base class: ``code`` is stable, ``str(err)`` is the user-facing message. A
    RuntimeError, as PyTorch raises, so tutorial code that catches one still works."""

    code = "engine_error"

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context

    def __getattr__(self, name: str) -> Any:
        # context entries (node, index, ...) read as attributes; absent ones are None
        if name in ("message", "context") or name.startswith("__"):
            raise AttributeError(name)
        return self.context.get(name)


class ShapeMismatchError(EngineError):
    code = "shape_mismatch"


class NotScalarError(EngineError):
    code = "not_scalar"


class NoGradFnError(EngineError):
    code = "no_grad_fn"


class DtypeNotDifferentiableError(EngineError):
    code = "dtype_not_differentiable"


class DtypeMismatchError(EngineError):
    code = "dtype_mismatch"


class UnusedInputError(EngineError):
    code = "unused_input"


class GraphFreedError(EngineError):
    code = "graph_freed"


class LeafInplaceError(EngineError):
    code = "leaf_inplace"


class InplaceViewError(EngineError):
    """An in-place write to a view whose base requires grad, while recording."""

    code = "inplace_view"


class VersionMismatchError(EngineError):
    code = "version_mismatch"


class NotLeafError(EngineError):
    code = "not_leaf"


class BadArgumentsError(EngineError):
    code = "bad_arguments"


class ArgumentTypeError(BadArgumentsError, TypeError):
    """An argument of the wrong type: PyTorch raises TypeError."""


class ArgumentValueError(BadArgumentsError, ValueError):
    """An argument of the right type but a bad value, where PyTorch raises ValueError."""


class UnknownOpError(EngineError):
    code = "unknown_op"


class InvalidTensorError(EngineError):
    code = "invalid_tensor"


class IndexOutOfRangeError(EngineError, IndexError):
    """A dim or an index out of range: PyTorch raises IndexError."""

    code = "index_out_of_range"


class InternalVJPError(EngineError):
    """A backward rule returned a gradient of the wrong shape: a bug in the engine."""

    code = "internal_vjp_error"


GRAPH_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the graph "
    "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
    "you need to backward through the graph a second time or if you need to access saved "
    "tensors after calling backward."
)


class NotImplementedBackward(EngineError):
    """A backward through an op PyTorch has no derivative for."""

    code = "not_differentiable"
