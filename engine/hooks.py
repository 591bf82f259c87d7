"""Hook handles shared by tensors and graph nodes (``torch.utils.hooks.RemovableHandle``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
