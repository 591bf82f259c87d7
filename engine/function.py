"""Recording ops: a ``Function`` pairs a numpy forward with a backward rule
written in engine ops; ``apply`` runs the forward and, when grad mode is on and
an input requires grad, records a ``Node`` (the PyTorch ``grad_fn``).

The node is the rule's context (``ctx``) as in ``torch.autograd.Function``: it
keeps what ``save_for_backward`` saved, with the version of each saved tensor,
so an in-place edit before backward is caught, and frees it after a backward
without ``retain_graph``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from . import dtypes
from .errors import GRAPH_FREED_MESSAGE, GraphFreedError, VersionMismatchError
from .grad_mode import _enabled

if TYPE_CHECKING:
    from .tensor import Tensor

# Filled by tensor.py at import (breaks the import cycle Tensor <-> Function).
_tensor_cls: Any = None


def _wrap(data: np.ndarray) -> Tensor:
    return _tensor_cls._make(data)


class _NoCtx:
    """The context handed to forward when nothing is recorded: saves are no-ops."""

    def save_for_backward(self, *items: Any) -> None:
        pass

    def save_result(self) -> None:
        pass


class Node:
    """One recorded op in the backward graph (``grad_fn``)."""

    def __init__(self, fn: type[Function]) -> None:
        self.fn = fn
        self.name = fn.name
        self.next_edges: tuple[tuple[Any, int] | None, ...] = ()
        self.input_meta: tuple[tuple[tuple[int, ...], np.dtype] | None, ...] = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self.output_meta: tuple[tuple[tuple[int, ...], np.dtype], ...] = ()
        self._saved: tuple[Any, ...] | None = None
        self._saved_result = False
        self._result: list[tuple[np.ndarray, Any, int]] | None = None
        self.had_saved = False
        self.freed = False
        self.freed_by: Any = None
        self.tensor_refs: list[tuple[int, weakref.ref[Tensor]]] | None = None

    # -- what forward calls -------------------------------------------------
    def save_for_backward(self, *items: Any) -> None:
        """Keep tensors (version-checked) or raw arrays for the backward rule."""
        self._saved = tuple(
            (t, t._vc, t._vc[0]) if isinstance(t, _tensor_cls) else (t, None, 0) for t in items
        )
        self.had_saved = True

    def save_result(self) -> None:
        """Keep the forward result(s); unpacked as tensors whose grad_fn is this node."""
        self._saved_result = True
        self.had_saved = True

    # -- what backward calls ------------------------------------------------
    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        self._check_alive()
        saved = self._saved or ()
        for t, vc, version in saved:
            if vc is not None and vc[0] != version:
                raise VersionMismatchError(_version_message(t, vc[0], version), node=self)
        return tuple(t for t, _, _ in saved)

    @property
    def result(self) -> Tensor:
        """The first forward result, for rules written in terms of the output."""
        return self.results[0]

    @property
    def results(self) -> tuple[Tensor, ...]:
        self._check_alive()
        out = []
        for nr, (data, vc, version) in enumerate(self._result or ()):
            if vc[0] != version:
                t = _tensor_cls._make(data)
                t.grad_fn = self
                raise VersionMismatchError(_version_message(t, vc[0], version), node=self)
            t = _tensor_cls._make(data, True, self, nr)
            t._vc = vc
            out.append(t)
        return tuple(out)

    def _check_alive(self) -> None:
        if self.freed:
            raise GraphFreedError(GRAPH_FREED_MESSAGE, node=self)

    def release(self, tag: Any = None) -> None:
        """Free saved tensors after a backward without retain_graph."""
        if self.had_saved and not self.freed:
            self._saved = None
            self._result = None
            self.freed = True
            self.freed_by = tag

    # -- introspection (PyTorch's grad_fn API) ------------------------------
    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        out: list[tuple[Any, int]] = []
        for edge in self.next_edges:
            if edge is None:
                out.append((None, 0))
            elif isinstance(edge[0], Node):
                out.append(edge)
            else:
                out.append((AccumulateGrad(edge[0]), 0))
        return tuple(out)

    def register_tensor(self, nr: int, tensor: Tensor) -> None:
        """Route this node's output ``nr`` gradient to the tensor's hooks/retain_grad."""
        refs = self.tensor_refs if self.tensor_refs is not None else []
        if not any(n == nr and r() is tensor for n, r in refs):
            refs.append((nr, weakref.ref(tensor)))
        self.tensor_refs = refs

    def __repr__(self) -> str:
        return f"<{self.name} object at {hex(id(self))}>"


class AccumulateGrad:
    """The graph node PyTorch shows for a leaf: gradients arriving here accumulate."""

    name = "AccumulateGrad"

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable
        self.next_functions: tuple[()] = ()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


def _version_message(t: Tensor, now: int, expected: int) -> str:
    kind = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}.get(
        dtypes.torch_name(t.dtype), "Float"
    )
    desc = f"[torch.{kind}Tensor [{', '.join(map(str, t.shape))}]]"
    if t.grad_fn is not None:
        desc += f", which is output {t._output_nr} of {t.grad_fn.name},"
    return (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {desc} is at version {now}; expected version {expected} instead. "
        "Hint: the backtrace further above shows the operation that failed to compute its "
        "gradient. The variable in question was changed in there or anywhere later. Good luck!"
    )


class Function:
    """Base of every differentiable op.

    ``forward(ctx, *tensors, **params)`` returns an ndarray (or a tuple for ops
    with several results); ``backward(ctx, *grads)`` returns one gradient per
    tensor input (a Tensor or None), computed with engine ops so that
    ``create_graph=True`` can differentiate it again. With ``broadcasts`` set,
    the backward loop sums gradients back to each input's shape; otherwise a
    gradient of the wrong shape is an engine bug and fails loudly.
    """

    name: ClassVar[str] = "Function"
    broadcasts: ClassVar[bool] = False

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs: Any, **params: Any) -> Any:
        """Run forward; record a node when grad mode is on and an input requires grad.
        Inputs are Tensors, or Python numbers that act as constants."""
        record = False
        if _enabled.get():
            for t in inputs:
                if type(t) is _tensor_cls and t.requires_grad_flag:
                    record = True
                    break
        if not record:
            out = cls.forward(_NoCtx(), *inputs, **params)
            if type(out) is tuple:
                return tuple(_wrap(o) for o in out)
            return _wrap(out)
        node = Node(cls)
        out = cls.forward(node, *inputs, **params)
        needs = tuple(type(t) is _tensor_cls and t.requires_grad_flag for t in inputs)
        node.needs_input_grad = needs
        node.next_edges = tuple(
            ((t.grad_fn if t.grad_fn is not None else t), t._output_nr) if need else None
            for t, need in zip(inputs, needs)
        )
        node.input_meta = tuple(
            (t.data.shape, t.data.dtype) if need else None for t, need in zip(inputs, needs)
        )
        many = type(out) is tuple
        outs = out if many else (out,)
        results = []
        for nr, arr in enumerate(outs):
            if type(arr) is not np.ndarray:
                arr = np.asarray(arr)
            differentiable = arr.dtype.kind == "f"
            results.append(
                _tensor_cls._make(arr, differentiable, node if differentiable else None, nr)
            )
        node.output_meta = tuple((r.data.shape, r.data.dtype) for r in results)
        if node._saved_result:
            node._result = [(r.data, r._vc, r._vc[0]) for r in results]
        return tuple(results) if many else results[0]


def function(
    name: str, forward: Callable[..., Any], backward: Callable[..., Any], broadcasts: bool = False
) -> type[Function]:
    """Declare a Function from two plain functions (keeps one-line rules one line)."""
    return type(
        name,
        (Function,),
        {
            "name": name,
            "broadcasts": broadcasts,
            "forward": staticmethod(forward),
            "backward": staticmethod(backward),
        },
    )
