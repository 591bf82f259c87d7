"""Gradients PyTorch computes with one backward op that reads forward inputs
(``hardtanh_backward(grad, self)``, ``convolution_backward(grad, input, weight)``).

Under ``create_graph`` such a gradient is that op's output: it requires grad
whenever one of those inputs does, even where it does not depend on it (a zero
gradient flows there). ``tie`` records that node over a gradient computed with
engine ops, so ``requires_grad``, the ``grad_fn`` name and the double backward
are PyTorch's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dual import LINEAR
from ..errors import NotImplementedBackward
from ..function import Function
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor


class _Tie(Function):
    """``forward(result, *inputs)`` is ``result``; backward passes the gradient on to
    ``result`` (its own graph holds the real dependence) and zeros (or, with ``zero``
    off, no gradient) to the inputs."""

    name = "Tie"
    jvp = LINEAR  # the result's own tangent; the inputs add nothing
    refuses: str | None = None  # aten op PyTorch has no derivative for
    zero = True  # derivatives.yaml's zeros_like(self); else an undefined gradient

    @classmethod
    def forward(cls, ctx: Any, result: Tensor, *inputs: Tensor) -> np.ndarray:  # type: ignore[override]
        ctx.metas = [(t._data.shape, t._data.dtype) for t in inputs]
        return result._data.copy()  # the tie's output owns its memory

    @classmethod
    def backward(cls, ctx: Any, gg: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        if cls.refuses is not None:
            raise NotImplementedBackward(f"derivative for aten::{cls.refuses} is not implemented")
        need = ctx.needs_input_grad
        zeros = (
            Tensor._make(np.zeros(shape, dt)) if need[k + 1] and cls.zero else None
            for k, (shape, dt) in enumerate(ctx.metas)
        )
        return (gg if need[0] else None, *zeros)


_TIES: dict[tuple[str, str | None, bool], type[_Tie]] = {}


def tie(
    result: Tensor, *inputs: Any, name: str, refuses: str | None = None, zero: bool = True
) -> Tensor:
    """``result`` recorded as PyTorch's backward op ``name`` over ``inputs`` (when
    recording and one of them requires grad); ``refuses`` names the aten op whose
    derivative PyTorch does not implement (grad_fn ``NotImplemented``); ``zero`` off:
    the inputs get no gradient from the tie (PyTorch's undefined one), not zeros."""
    if not is_grad_enabled():
        return result
    tensors = [t for t in inputs if type(t) is Tensor]
    if not result.requires_grad and not any(t.requires_grad for t in tensors):
        return result
    key = (name, refuses, zero)
    cls = _TIES.get(key)
    if cls is None:
        attrs = {"name": name, "refuses": refuses, "zero": zero}
        cls = _TIES[key] = type(name, (_Tie,), attrs)
    out: Tensor = cls.apply(result, *tensors)
    return out
