"""Hook handles shared by tensors and graph nodes (``torch.utils.hooks.RemovableHandle``)."""

from __future__ import annotations

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
