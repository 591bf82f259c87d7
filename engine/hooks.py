"""Hooks: their handles (``torch.utils.hooks.RemovableHandle``), the hook lists of graph
nodes, and the AccumulateGrad node PyTorch shows for a leaf (one per leaf, holding its hooks)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tensor import Tensor


class RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` (or leaving ``with handle:``)
    unregisters the hook; removing twice is harmless, as in PyTorch."""

    def __init__(self, hooks: list[Any], hook: Any) -> None:
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        for i, h in enumerate(self._hooks):
            if h is self._hook:
                del self._hooks[i]
                return

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class NodeHooks:
    """``register_hook``/``register_prehook`` of a graph node (``grad_fn`` or a leaf's
    AccumulateGrad); the backward pass runs ``pre_hooks`` and ``post_hooks``."""

    __slots__ = ()  # subclasses keep the lists in their __dict__
    pre_hooks: list[Any] | None = None
    post_hooks: list[Any] | None = None

    def register_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs)`` after this node runs; it may return new
        ``grad_inputs`` (PyTorch's ``Node.register_hook``)."""
        if self.post_hooks is None:
            self.post_hooks = []  # type: ignore[misc]  # a subclass's __dict__
        self.post_hooks.append(hook)
        return RemovableHandle(self.post_hooks, hook)

    def register_prehook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(grad_outputs)`` before this node runs; it may return new ``grad_outputs``."""
        if self.pre_hooks is None:
            self.pre_hooks = []  # type: ignore[misc]  # a subclass's __dict__
        self.pre_hooks.append(hook)
        return RemovableHandle(self.pre_hooks, hook)


# PyTorch prints its C++ nodes' names in full (grad_fn.name(), version errors)
CPP_NODE_NAMES = {
    "CopySlices": "torch::autograd::CopySlices",
    "AccumulateGrad": "torch::autograd::AccumulateGrad",
}


class NodeName(str):
    """A node's name that PyTorch code may also call: ``grad_fn.name()``."""

    __slots__ = ()

    def __call__(self) -> str:
        return CPP_NODE_NAMES.get(self, str(self))


class AccumulateGrad(NodeHooks):
    """The graph node PyTorch shows for a leaf: gradients arriving here accumulate. One
    per leaf (``grad_accumulator``), so hooks registered on it stay; it holds its leaf
    weakly, the leaf holds it."""

    name = NodeName("AccumulateGrad")

    def __init__(self, variable: Tensor) -> None:
        self._variable = weakref.ref(variable)
        self.next_functions: tuple[()] = ()
        self.post_acc_hooks: list[Callable[[Tensor], None]] = []

    @property
    def variable(self) -> Tensor | None:
        return self._variable()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad node, made on first use."""
    acc: AccumulateGrad | None = getattr(t, "_grad_acc", None)
    if acc is None:
        acc = AccumulateGrad(t)
        t._grad_acc = acc
    return acc
