"""What ``Session`` and ``AsyncSession`` do the same way, written once: the handle's
questions that need no round trip (grad mode, ops by name, the wire options, whether a
tensor travels as raw bytes). The two differ only in how they send (eagerly or queued;
``httpx.Client`` or ``httpx.AsyncClient``)."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from . import wire
from .steps import Steps


class SessionBase:
    """The transport-free half of a session; subclasses set ``steps``, ``_t``, ``binary``
    and ``encoding``."""

    steps: Steps
    _t: Any
    binary: bool | None
    encoding: str

    @property
    def requests(self) -> int:
        """HTTP requests made so far."""
        return self._t.requests  # type: ignore[no-any-return]

    def _params(self, values: bool = True) -> dict[str, Any]:
        return {"encoding": self.encoding} if values else {"values": "false"}

    def _raw(self, name: str) -> tuple[bool, dict[str, Any] | None]:
        """Whether ``name``'s values and grad travel as raw bytes (by ``binary``, else by
        size), and its handle's metadata when known."""
        handle = self.steps.handles.get(name)
        meta = None if handle is None or handle._stale else handle._meta
        if meta is None:
            return self.binary is True, None
        return wire.use_binary(self.binary, math.prod(meta["shape"])), meta

    # --- grad mode -------------------------------------------------------------------------------

    def is_grad_enabled(self) -> bool:
        return self.steps.is_grad_enabled()

    def no_grad(self) -> contextlib.AbstractContextManager[None]:
        """Steps sent inside run with ``"no_grad": true`` (``with torch.no_grad():``)."""
        return self.steps.grad_mode(False)

    def enable_grad(self) -> contextlib.AbstractContextManager[None]:
        return self.steps.grad_mode(True)

    # --- ops ---------------------------------------------------------------------------------------

    def expr(self, expression: str, *, name: str | None = None) -> Any:
        """A step in the server's expression language, bound to ``name`` (or a generated one):
        ``s.expr("3*a + 2*b*b + log(c)", name="y")``; names in it are session tensors."""
        return self.steps.expr(expression, name)

    def op(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Any catalogue op by name: ``s.op("cross_entropy", logits, target)``."""
        return self.steps.apply(op, args, kwargs)

    def __getattr__(self, op: str) -> Any:
        # torch-style functions: s.log(c), s.cat([a, b]), s.zeros(2, 3) -> catalogue ops
        if op.startswith("_") or op == "steps":
            raise AttributeError(op)
        self.steps.check_op(op)
        return lambda *args, **kwargs: self.steps.apply(op, args, kwargs)

    def ops(self) -> dict[str, dict[str, Any]]:
        """The catalogue (``GET /v1/ops``), by name."""
        return self.steps.catalogue
