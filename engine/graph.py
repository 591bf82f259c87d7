"""``torch.autograd.graph``'s saved-tensor hooks: under ``saved_tensors_hooks(pack,
unpack)`` every tensor a recorded op saves for backward is handed to ``pack`` (under
no_grad) and what it returns is kept instead; backward gets ``unpack(packed)`` back.

Context-local like grad mode (a stack per context). Saving is on every op's hot path,
so a node reads the process-wide count ``OPEN`` first and looks the stack up only
while some caller has hooks set (as ``interrupt.OPEN`` does for op checks). A saved
value packed by hooks is not version-checked on unpack: PyTorch cannot see through
the hooks either."""

from __future__ import annotations

import abc
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

from .errors import ArgumentTypeError, EngineError
from .grad_mode import no_grad
from .hooks import NodeHooks
from .leafnode import grad_accumulator
from .tensor import Tensor

Hooks = tuple[Callable[[Tensor], Any], Callable[[Any], Any]]

_stack: ContextVar[tuple[Hooks, ...]] = ContextVar("saved_tensors_hooks", default=())
_disabled: ContextVar[str | None] = ContextVar("saved_tensors_hooks_disabled", default=None)
OPEN = [0]  # hook contexts entered in any context and not left yet

PACK_INPLACE_MESSAGE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
    "pack hook cannot be modified by in-place operations as this can lead to unexpected "
    "side-effects. Please open an issue if you need to perform in-place operations on the "
    "input to a pack hook."
)


class GraphError(EngineError):
    """torch.autograd.graph's refusals: hooks set where a caller disabled them, a pack
    hook that wrote its input, the gradient edge of a tensor without grad."""

    code = "bad_arguments"


class Packed:
    """A saved tensor as its pack hook left it: the hook's value, the unpack hook, and
    the history the unpacked tensor gets back (a non-leaf's node and output number, or
    the leaf itself, held as PyTorch's grad accumulator holds it)."""

    __slots__ = ("value", "unpack", "grad_fn", "output_nr", "leaf")

    def __init__(self, value: Any, unpack: Callable[[Any], Any], t: Tensor) -> None:
        self.value = value
        self.unpack = unpack
        self.grad_fn = t._grad_fn if t._view is None else t.grad_fn
        self.output_nr = t._output_nr
        self.leaf = t if self.grad_fn is None and t.requires_grad_flag else None


def current() -> Hooks | None:
    """The innermost hooks set in this context, or None."""
    stack = _stack.get()
    return stack[-1] if stack else None


def pack(t: Tensor, hooks: Hooks) -> Packed:
    """Call the pack hook on a tensor being saved (under no_grad, as PyTorch does)."""
    version = t._vc[0]
    with no_grad():
        value = hooks[0](t)
    if t._vc[0] != version:
        raise GraphError(PACK_INPLACE_MESSAGE)
    return Packed(value, hooks[1], t)


def unpack(packed: Packed) -> Tensor:
    """The unpack hook's tensor (the caller gives it its saved history back)."""
    out = packed.unpack(packed.value)
    if not isinstance(out, Tensor):
        raise ArgumentTypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
            f"type {type(out).__name__}"
        )
    return out


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Pack tensors saved for backward with ``pack_hook``; unpack with ``unpack_hook``."""

    def __init__(
        self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Any]
    ) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        message = _disabled.get()
        if message is not None:
            raise GraphError(message)
        _stack.set((*_stack.get(), (self.pack_hook, self.unpack_hook)))
        OPEN[0] += 1

    def __exit__(self, *args: object) -> None:
        _stack.set(_stack.get()[:-1])
        OPEN[0] -= 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Saved tensors kept as CPU copies (every engine tensor is on the CPU already)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: t, lambda t: t)


class Node(abc.ABC):  # noqa: B024 - an interface checked by __subclasshook__ only
    """What ``isinstance(t.grad_fn, Node)`` checks: every graph node the engine makes
    (an op's ``grad_fn``, a custom Function's, a leaf's AccumulateGrad)."""

    @classmethod
    def __subclasshook__(cls, subclass: type) -> bool:
        return cls is Node and issubclass(subclass, NodeHooks)


class GradientEdge(NamedTuple):
    """A node and one of its outputs: where a tensor's gradient flows in."""

    node: Any
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge a tensor's gradient enters the graph by (its leaf's accumulator)."""
    if not tensor.requires_grad:
        raise GraphError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    fn = tensor.grad_fn
    if fn is None:
        return GradientEdge(grad_accumulator(tensor), 0)
    return GradientEdge(fn, tensor._output_nr)


def increment_version(tensor: Tensor | Any) -> None:
    """Bump the version of a tensor (or of each in an iterable), as an in-place write
    the engine did not see would: saved-tensor checks then catch it."""
    for t in [tensor] if isinstance(tensor, Tensor) else tensor:
        t._vc[0] += 1


@contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Generator[None, None, None]:
    """Setting hooks inside raises ``RuntimeError(error_message)``; entering while hooks
    are set raises it at once."""
    token = _disabled.set(error_message)
    try:
        if _stack.get():
            raise GraphError(error_message)
        yield
    finally:
        _disabled.reset(token)
