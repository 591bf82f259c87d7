"""Named composites: an op that PyTorch runs as one kernel with one ``grad_fn``
(``NativeLayerNormBackward0``, ``HuberLossBackward0``, ...) whose math we write
once, as a composite of engine ops.

The result records one node with PyTorch's name. Its backward differentiates
the composite itself, so the rule is never written twice and ``create_graph``
(double backward) works: while recording, the forward builds the composite's
small graph on detached aliases of the inputs and the backward runs the engine
on it; under ``create_graph`` the composite is rebuilt on the saved inputs so
the gradient stays a function of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import autograd
from ..errors import BadArgumentsError, DtypeMismatchError, IndexOutOfRangeError
from ..forward_rules import through
from ..function import Function, Node
from ..grad_mode import enable_grad, is_grad_enabled, no_grad
from ..tensor import Tensor
from ._tie import tie

Body = Callable[..., Tensor]


def _own(out: np.ndarray, inputs: tuple[Any, ...]) -> np.ndarray:
    """A fused kernel writes fresh memory: never hand back an input's buffer."""
    for x in inputs:
        if type(x) is Tensor and np.may_share_memory(out, x._data):
            return out.copy()
    return out


def _grads(y: Tensor, xs: list[Any], need: tuple[bool, ...], g: Tensor, create: bool) -> Any:
    targets = [x for x, n in zip(xs, need) if n]
    found = iter(
        autograd.grad(
            y,
            targets,
            g,
            retain_graph=True,
            create_graph=create,
            allow_unused=True,
            materialize_grads=True,
        )
        if targets
        else ()
    )
    return tuple(next(found) if n else None for n in need)


class _Unsaved:
    """An input the node keeps without saving it (no version check): PyTorch's formula
    for the gradients asked for does not read it, so writing it later is allowed."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


Saves = Callable[[Any], tuple[bool, ...]]


class Composite(Function):
    """Base of named composites: ``apply(*inputs, body=fn, params={...})`` computes
    ``fn(*inputs, **params)``; subclasses only set ``name``."""

    name = "Composite"

    @staticmethod
    def jvp(ctx: Any, *tangents: Any) -> Any:
        """The chain rule through the body: each primitive it calls by its own rule."""
        params = {**ctx.params, **ctx.tangent_params}
        return through(lambda *xs: ctx.body(*xs, **params), ctx.inputs, tangents)

    @staticmethod
    def forward(
        ctx: Any,
        *inputs: Any,
        body: Body,
        params: dict[str, Any],
        tangent_params: dict[str, Any] | None = None,
        saves: Saves | None = None,
        fused: str | None = None,
    ) -> np.ndarray:
        if not isinstance(ctx, Node):
            with no_grad():
                return _own(body(*inputs, **params)._data, inputs)
        node: Any = ctx  # a Node keeps extra fields in its __dict__
        node.body, node.params = body, params
        node.tangent_params = tangent_params or {}
        node.fused = fused
        keep = None if saves is None else saves(node.needs_input_grad)
        if keep == ():  # torch's nodes save intermediates that share memory, not versions
            aliases = [
                Tensor._make(x._data, x.requires_grad_flag) if type(x) is Tensor else x
                for x in inputs
            ]
        else:
            aliases = [
                x.detach().requires_grad_() if type(x) is Tensor and x.requires_grad_flag else x
                for x in inputs
            ]
        with enable_grad():
            y = body(*aliases, **params)
        # the inner graph is saved with the inputs, so freeing the node frees it too
        held: Any = inputs
        if keep is not None:
            own = not keep
            held = (
                [_Unsaved(x) for x in inputs]
                if own
                else [x if k else _Unsaved(x) for x, k in zip(inputs, keep)]
            )
            if not own and not any(keep):  # torch's node saves nothing: a second backward works
                node.unsaved = (*held, (y, aliases))
                return _own(y._data, inputs)
        node.save_for_backward(*held, (y, aliases))
        return _own(y._data, inputs)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Any:
        kept = ctx.__dict__.get("unsaved")
        # checks versions, and that it is alive
        *held, (y, aliases) = ctx.saved_tensors if kept is None else kept
        inputs = [h.value if type(h) is _Unsaved else h for h in held]
        need = ctx.needs_input_grad
        if not is_grad_enabled():
            return _grads(y, aliases, need, g, create=False)
        # create_graph: rebuild on per-position views of the inputs, so the gradient
        # is recorded as a function of them (and an input passed twice gets two grads)
        xs = [x.view(x.shape) if n else x for x, n in zip(inputs, need)]
        y = ctx.body(*xs, **ctx.params)
        grads = _grads(y, xs, need, g, create=True)
        if ctx.fused is None:
            return grads
        # PyTorch's one backward op reads the gradient and every input: each gradient
        # it returns requires grad when any of them does; its double backward defines
        # only the gradients that really depend on them (none for the bias)
        ins = [x for x in inputs if type(x) is Tensor]
        return tuple(
            None if gr is None else tie(gr, g, *ins, name=ctx.fused, zero=False)
            for gr in (grads if isinstance(grads, tuple) else (grads,))
        )


def intermediates_only(need: Any) -> tuple[bool, ...]:
    """``saves`` for an op whose PyTorch nodes save intermediates, never an input."""
    return ()


_NAMED: dict[str, type[Composite]] = {}


def named(name: str) -> type[Composite]:
    """The composite Function recording ``name`` (one class per PyTorch name)."""
    cls = _NAMED.get(name)
    if cls is None:
        cls = _NAMED[name] = type(name, (Composite,), {"name": name})
    return cls


def composite(
    name: str,
    body: Body,
    *inputs: Any,
    tangent_params: dict[str, Any] | None = None,
    saves: Saves | None = None,
    fused: str | None = None,
    **params: Any,
) -> Tensor:
    """``body(*inputs, **params)`` recorded as one node called ``name``. ``saves`` maps
    ``needs_input_grad`` to the inputs PyTorch's node saves (all by default): only
    those are version-checked at backward; ``()``: PyTorch's nodes save intermediates
    only (no input is checked, a second backward needs ``retain_graph``). The forward
    rule runs the body with ``tangent_params`` over ``params`` (a parameter that shapes the gradient only, as
    embedding's ``scale``, is no part of the derivative). ``fused`` names PyTorch's
    backward op when it is one node over the gradient and all inputs (the norms'), so a
    create_graph gradient is recorded as that node."""
    out: Tensor = named(name).apply(
        *inputs,
        body=body,
        params=params,
        tangent_params=tangent_params,
        saves=saves,
        fused=fused,
    )
    return out


class ArgumentValueError(BadArgumentsError, ValueError):
    """A bad argument value that PyTorch refuses with ``ValueError`` (its Python layer)."""


class IndexRangeError(IndexOutOfRangeError, IndexError):
    """An index out of range, which PyTorch raises as ``IndexError``."""


class ArgumentTypeError(BadArgumentsError, TypeError):
    """An argument of the wrong type, which PyTorch's binding refuses with ``TypeError``."""


class ArgumentAssertionError(BadArgumentsError, AssertionError):
    """A precondition PyTorch's Python layer checks with ``assert`` (``AssertionError``)."""


class KernelDtypeError(DtypeMismatchError, NotImplementedError):
    """``"kernel" not implemented for 'Long'``: PyTorch raises ``NotImplementedError``."""
