"""The graph node PyTorch shows for a leaf (``AccumulateGrad``) and node names.

Below the Tensor: a leaf keeps its accumulator (with the hooks registered on it), so
this module imports no Tensor at run time."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from .hooks import NodeHooks

if TYPE_CHECKING:
    from .tensor import Tensor

_CPP_NODES = {
    "CopySlices": "torch::autograd::CopySlices",
    "AccumulateGrad": "torch::autograd::AccumulateGrad",
}


class NodeName(str):
    """A node's name that PyTorch code may also call: ``grad_fn.name()``."""

    __slots__ = ()

    def __call__(self) -> str:
        return _CPP_NODES.get(self, str(self))


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
