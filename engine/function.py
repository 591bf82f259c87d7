"""Recording ops: a ``Function`` pairs a numpy forward with a backward rule
written in engine ops; ``apply`` runs the forward and, when grad mode is on and
an input requires grad, records a ``Node`` (the PyTorch ``grad_fn``).

The node is the rule's context (``ctx``) as in ``torch.autograd.Function``: it
keeps what ``save_for_backward`` saved, with the version of each saved tensor,
so an in-place edit before backward is caught, and frees it after a backward
without ``retain_graph``.
"""

from __future__ import annotations

import itertools
import re
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from . import dtypes
from .errors import (
    GRAPH_FREED_MESSAGE,
    GraphFreedError,
    ShapeMismatchError,
    VersionMismatchError,
)
from .grad_mode import _enabled

if TYPE_CHECKING:
    from .tensor import Tensor

_sequence = itertools.count()

# Filled by tensor.py at import (breaks the import cycle Tensor <-> Function).
_tensor_cls: Any = None


def _wrap(data: np.ndarray) -> Tensor:
    return _tensor_cls._make(data)


class _NoGrads:
    """``needs_input_grad`` when nothing is recorded: no input needs a gradient."""

    def __getitem__(self, index: int) -> bool:
        return False


class _NoCtx:
    """The context handed to forward when nothing is recorded: saves are no-ops."""

    needs_input_grad = _NoGrads()

    def save_for_backward(self, *items: Any) -> None:
        pass

    def save_result(self) -> None:
        pass


class Node:
    """One recorded op in the backward graph (``grad_fn``).

    Recording a node is on every op's hot path, and Python's garbage collector
    runs in proportion to container allocations, so a node keeps the minimum:
    its edges and its output's shape and dtype. An input's expected gradient
    shape is read from the edge's target (the producing node, or the leaf);
    rarely set fields live in a lazily created ``__dict__``."""

    __slots__ = (
        "fn",
        "seq",
        "next_edges",
        "out_shape",
        "out_dtype",
        "_saved",
        "_versions",
        "__dict__",
        "__weakref__",
    )

    fn: type[Function]
    seq: int
    next_edges: tuple[tuple[Any, int] | None, ...]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    _versions: tuple[int, ...]

    output_meta: tuple[tuple[tuple[int, ...], np.dtype], ...] | None = None  # several outputs
    n_outputs = 1
    _saved_result = False
    _result: list[tuple[np.ndarray, Any, int]] | None = None
    freed = False
    freed_by: Any = None
    tensor_refs: list[tuple[int, Callable[[], Tensor | None]]] | None = None
    inner: Node | None = None  # the in-place op's node a CopySlices wraps
    # output nr -> the history (node, output nr) of the view an in-place op wrote its saved
    # result into, held weakly as PyTorch's SavedVariable does: while that node lives the
    # result unpacks with it (and a version error names it, AsStrided), else with this node
    result_views: dict[int, tuple[weakref.ref[Node], int]] | None = None

    def __init__(self, fn: type[Function]) -> None:
        self.fn = fn
        # creation order: a node's consumers are always created after it, so
        # running nodes by decreasing ``seq`` is a topological order
        self.seq = next(_sequence)
        self._saved: tuple[Any, ...] | None = None

    @property
    def name(self) -> str:
        return self.fn.name

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        return tuple(edge is not None for edge in self.next_edges)

    def meta(self, nr: int) -> tuple[tuple[int, ...], np.dtype]:
        """Shape and dtype of output ``nr`` (what a gradient flowing into it must have)."""
        if self.output_meta is None:
            return self.out_shape, self.out_dtype
        return self.output_meta[nr]

    @property
    def had_saved(self) -> bool:
        return self._saved is not None or self._saved_result

    # -- what forward calls -------------------------------------------------
    def save_for_backward(self, *items: Any) -> None:
        """Keep tensors (version-checked) or raw values for the backward rule."""
        self._saved = items
        T = _tensor_cls
        if len(items) == 2:  # the common binary case, unrolled (hot path)
            a, b = items
            self._versions = (a._vc[0] if type(a) is T else 0, b._vc[0] if type(b) is T else 0)
        else:
            self._versions = tuple([t._vc[0] if type(t) is T else 0 for t in items])

    def save_result(self) -> None:
        """Keep the forward result(s); unpacked as tensors whose grad_fn is this node."""
        self._saved_result = True

    # -- what backward calls ------------------------------------------------
    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if self.freed:
            raise GraphFreedError(GRAPH_FREED_MESSAGE, node=self)
        saved = self._saved
        if saved is None:
            return ()
        for t, version in zip(saved, self._versions):
            if type(t) is _tensor_cls:
                if t._vc[0] != version:
                    raise VersionMismatchError(
                        _version_message(t, t._vc[0], version), node=self, tensor=t
                    )
                if t._output_nr < 0 and self.seq < -t._output_nr:
                    raise VersionMismatchError(DETACHED_MESSAGE, node=self, tensor=t)
        return saved

    @property
    def result(self) -> Tensor:
        """The first forward result, for rules written in terms of the output."""
        return self.results[0]

    @property
    def results(self) -> tuple[Tensor, ...]:
        self._check_alive()
        out = []
        for nr, (data, vc, version) in enumerate(self._result or ()):
            held = self.result_views.get(nr) if self.result_views else None
            fn = held[0]() if held is not None else None
            if vc[0] != version:
                t = _tensor_cls._make(data)
                t.grad_fn = fn if fn is not None else self
                raise VersionMismatchError(_version_message(t, vc[0], version), node=self, tensor=t)
            if fn is not None and held is not None:  # written into a view: its history
                t = _tensor_cls._make(data, True, fn, held[1])
            else:
                t = _tensor_cls._make(data, True, self, nr)
            t._vc = vc
            out.append(t)
        return tuple(out)

    def _check_alive(self) -> None:
        if self.freed:
            raise GraphFreedError(GRAPH_FREED_MESSAGE, node=self)

    def release(self, tag: Any = None) -> None:
        """Free saved tensors after a backward without retain_graph."""
        # CopySlices drops the op it wraps whatever that saved (PyTorch's fn_ = nullptr)
        held = self._saved is not None or self._saved_result or self.fn.name == "CopySlices"
        if held and not self.freed:
            self._saved = None
            self._result = None
            self.freed = True
            self.freed_by = tag
        if self.inner is not None:
            self.inner.release(tag)

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


DETACHED_MESSAGE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
    "not supported, please use out-of-place `.detach()` instead"
)


def detached_marker() -> int:
    """What ``detach_`` stores in ``_output_nr`` (meaningless without a grad_fn): minus the
    next node sequence number, so nodes created before it, which saved the tensor while it
    had history, refuse to use it."""
    return -next(_sequence)


_CPP_NODES = {"CopySlices": "torch::autograd::CopySlices"}


def _version_message(t: Tensor, now: int, expected: int) -> str:
    kind = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}.get(
        dtypes.torch_name(t.dtype), "Float"
    )
    desc = f"[torch.{kind}Tensor [{', '.join(map(str, t.shape))}]]"
    if t.grad_fn is not None:
        # PyTorch prints its C++ node names in full (torch::autograd::CopySlices)
        name = t.grad_fn.name
        # and drop "Backward0" but keep an overload's number: ClampBackward1 is "Clamp1"
        op = _CPP_NODES.get(name) or re.sub(r"Backward(0|(\d*))$", r"\2", name)
        desc += f", which is output {t._output_nr} of {op},"
    return (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {desc} is at version {now}; expected version {expected} instead. "
        "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )


class Function:
    """Base of every differentiable op.

    ``forward(ctx, *tensors, **params)`` returns an ndarray (or a tuple for ops
    with several results); ``backward(ctx, *grads)`` returns one gradient per
    tensor input (a Tensor or None), computed with engine ops so that
    ``create_graph=True`` can differentiate it again. With ``broadcasts`` set,
    the backward loop sums gradients back to each input's shape; otherwise a
    gradient of the wrong shape is an engine bug and fails loudly.

    A hot op may also define ``vjp(ctx, *grads)`` on ndarrays, used when no
    graph of the backward pass is wanted; the op database checks it against
    ``backward`` and PyTorch. A ``vjp`` must never write into an incoming
    gradient: it may be a read-only broadcast view, or shared with another edge.
    """

    name: ClassVar[str] = "Function"
    broadcasts: ClassVar[bool] = False
    # Optional numpy twin of ``backward`` (arrays in, arrays out) for the hot
    # path without create_graph; ``backward`` stays the reference rule.
    vjp: ClassVar[Callable[..., Any] | None] = None
    # The forward returns a numpy view of input 0: the result shares its memory
    # and version counter, so writes through either are seen by saved-tensor checks.
    is_view: ClassVar[bool] = False

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
        grad_on = _enabled.get()
        if grad_on:
            T = _tensor_cls
            for t in inputs:
                if type(t) is T:
                    if t._view is not None:
                        t.grad_fn  # noqa: B018 - a stale view regenerates its history first
                    if t.requires_grad_flag:
                        return cls._record(inputs, params)
        try:
            out = cls.forward(_NoCtx(), *inputs, **params)
        except ValueError as exc:
            raise _shape_error(cls, inputs, exc) from None
        if type(out) is tuple:
            results = tuple(_wrap(o) for o in out)
            if cls.is_view:
                for nr, r in enumerate(results):
                    r._view_of(inputs[0], cls, params, nr, grad_on)
            return results
        if cls.is_view:
            return _wrap(out)._view_of(inputs[0], cls, params, None, grad_on)
        return _wrap(out)

    @classmethod
    def _record(cls, inputs: tuple[Any, ...], params: dict[str, Any]) -> Any:
        # Edges first, node second: reading a stale view's ``grad_fn`` regenerates it,
        # and a node must be created after the nodes it points to (see ``Node.seq``).
        # A forward may read ``ctx.needs_input_grad`` to save only what is needed.
        T = _tensor_cls
        edges: tuple[tuple[Any, int] | None, ...]
        if len(inputs) == 1:  # apply refreshed it if it is a view
            t = inputs[0]
            fn = t._grad_fn
            edges = ((fn, t._output_nr) if fn is not None else (t, 0),)
        elif len(inputs) == 2:  # binary ops, unrolled (hot path)
            a, b = inputs
            edge_a = edge_b = None
            if type(a) is T:
                fn = a._grad_fn if a._view is None else a.grad_fn
                if fn is not None:
                    edge_a = (fn, a._output_nr)
                elif a.requires_grad_flag:
                    edge_a = (a, 0)
            if type(b) is T:
                fn = b._grad_fn if b._view is None else b.grad_fn
                if fn is not None:
                    edge_b = (fn, b._output_nr)
                elif b.requires_grad_flag:
                    edge_b = (b, 0)
            edges = (edge_a, edge_b)
        else:
            listed: list[tuple[Any, int] | None] = []
            for t in inputs:
                edge = None
                if type(t) is T:
                    fn = t._grad_fn if t._view is None else t.grad_fn
                    if fn is not None:
                        edge = (fn, t._output_nr)
                    elif t.requires_grad_flag:
                        edge = (t, 0)
                listed.append(edge)
            edges = tuple(listed)
        node = Node(cls)
        node.next_edges = edges
        try:
            out = cls.forward(node, *inputs, **params)
        except ValueError as exc:
            raise _shape_error(cls, inputs, exc) from None
        make = _tensor_cls._make
        if type(out) is not tuple:
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            dtype = out.dtype
            result = make(out, True, node, 0) if dtype.kind == "f" else make(out)
            if cls.is_view:
                result._view_of(inputs[0], cls, params, None, True)
            node.out_shape = out.shape
            node.out_dtype = dtype
            if node._saved_result:
                node._result = [(out, result._vc, 0)]
            return result
        results = []
        for nr, arr in enumerate(out):
            if type(arr) is not np.ndarray:
                arr = np.asarray(arr)
            differentiable = arr.dtype.kind == "f"
            results.append(make(arr, differentiable, node if differentiable else None, nr))
            if cls.is_view:
                results[-1]._view_of(inputs[0], cls, params, nr, True)
        node.output_meta = tuple((r._data.shape, r._data.dtype) for r in results)
        node.n_outputs = len(results)
        if node._saved_result:
            node._result = [(r._data, r._vc, 0) for r in results]
        return tuple(results)


def _shape_error(cls: type[Function], inputs: tuple[Any, ...], exc: ValueError) -> Exception:
    """NumPy's ValueError from a broadcasting forward, as PyTorch's shape error."""
    if not cls.broadcasts:
        return exc
    from .ops._util import broadcast_message

    shapes = tuple(np.shape(t._data if type(t) is _tensor_cls else t) for t in inputs)
    return ShapeMismatchError(broadcast_message(shapes))


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
