"""Forward-mode state: the dual level, a tensor's tangent, and the rule kinds.

Below ``function`` (which propagates tangents through every recorded op), so it
imports only the Tensor. A tangent lives on its tensor (``Tensor._fw``) as
``(level, tangent)`` and counts only while that level is the current one: leaving
a level forgets every tangent made in it at once, as PyTorch does. The level is
context-local (a ContextVar, as grad mode is); ``LIVE`` counts the levels open in
any context so the op hot path pays one list read when forward AD is unused.

A differentiable ``Function`` declares its forward rule beside its backward rule
(``Function.jvp``): a ``jvp(ctx, *tangents)`` staticmethod written with engine ops
(explicit), ``LINEAR`` (the op is linear in its float inputs: the rule is the op
applied to the tangents), ``MULTILINEAR`` (linear in each float input with the others
fixed, as matmul and conv are, plus an additive bias at ``Function.jvp_bias``: the rule
is the sum of the op applied with one input replaced by its tangent), ``REDUCTION``
(each result element reads its own slice of the input, along ``ctx.dims``: the row of
the Jacobian is the backward rule applied to ones, summed against the tangent over the
slice), ``SELF_ADJOINT`` (the Jacobian is symmetric, as for
elementwise unary ops: the rule is the backward rule applied to the tangent) or
``FROM_BACKWARD`` (the generic fallback: the backward rule differentiated again).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from .tensor import Tensor


class Rule:
    """A forward rule derived from another fact of the op (see the module doc)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return self.kind


LINEAR = Rule("LINEAR")
MULTILINEAR = Rule("MULTILINEAR")
REDUCTION = Rule("REDUCTION")
SELF_ADJOINT = Rule("SELF_ADJOINT")
FROM_BACKWARD = Rule("FROM_BACKWARD")


class Level:
    """One open dual level: its number (PyTorch counts from 0) and the tensors that
    received a tangent in it, forgotten when it closes."""

    __slots__ = ("index", "alive", "holders", "token")

    def __init__(self, index: int) -> None:
        self.index = index
        self.token: Any = None  # the ContextVar token that restores the context on exit
        self.alive = True
        self.holders: list[weakref.ref[Tensor]] = []

    def close(self) -> None:
        self.alive = False
        for ref in self.holders:
            t = ref()
            if t is not None and t._fw is not None and t._fw[0] is self:
                t._fw = None
        self.holders.clear()


_current: ContextVar[Level | None] = ContextVar("dual_level", default=None)
LIVE = [0]  # open levels in any context: the hot path's one check

# An op call with a tangent runs ``PROPAGATE[0](cls, inputs, params, level)``
# (``engine.forward_rules``, which needs the primitives above ``function``), and the
# generic fallback ``FALLBACK[0]`` needs the backward engine: both fill their slot
# once at import, as the ops fill the registry
PROPAGATE: list[Callable[..., Any]] = []
FALLBACK: list[Callable[..., Any]] = []


def current() -> Level | None:
    """The open level of this context, or None."""
    return _current.get() if LIVE[0] else None


def set_current(level: Level | None) -> Any:
    return _current.set(level)


def reset_current(token: Any) -> None:
    _current.reset(token)


def tangent(t: Any, level: Level | None) -> Tensor | None:
    """``t``'s tangent at ``level`` (None when it has none, or is no tensor)."""
    if type(t) is not Tensor or level is None:
        return None
    fw = t._fw
    if fw is not None and fw[0] is level:
        return fw[1]  # type: ignore[no-any-return]
    return None


def set_tangent(t: Tensor, level: Level, value: Tensor) -> None:
    t._fw = (level, value)
    level.holders.append(weakref.ref(t))


def any_tangent(values: Any, level: Level | None) -> bool:
    if level is None:
        return False
    return any(type(v) is Tensor and v._fw is not None and v._fw[0] is level for v in values)


def needs_derivative(t: Tensor) -> bool:
    """Whether a shortcut that skips recording would lose a derivative: ``t`` requires
    grad, or carries a tangent at the open level."""
    return t.requires_grad or tangent(t, current()) is not None


class suspended:
    """No tangent propagates inside (a forward rule computes with primals only)."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = _current.set(None)

    def __exit__(self, *exc: Any) -> None:
        _current.reset(self.token)
