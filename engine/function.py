"""Recording ops: a ``Function`` pairs a numpy forward with a backward rule
written in engine ops; ``apply`` runs the forward and, when grad mode is on and
an input requires grad, records a ``Node`` (the PyTorch ``grad_fn``).

The node is the rule's context (``ctx``) as in ``torch.autograd.Function``: it
keeps what ``save_for_backward`` saved, with the version of each saved tensor,
so an in-place edit before backward is caught, and frees it after a backward
without ``retain_graph``.

A view op's result is marked as a view of its input here too (``ViewInfo``),
and a view whose base was written in place since regenerates its ``grad_fn``
from the base's new history (``ViewInfo.refresh``, an ``AsStridedBackward0``
node): both are part of recording, so the Tensor reaches them through the
``ViewInfo`` it holds and this module imports the Tensor, not the reverse.
In-place writes themselves (``CopySlices``) are in ``views``.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import anomaly, dtypes, dual
from . import graph as saved_hooks
from .anomaly import OPEN as ANOMALY_OPEN
from .dual import LINEAR, LIVE
from .errors import (
    GRAPH_FREED_MESSAGE,
    ArgumentTypeError,
    GraphFreedError,
    InplaceViewError,
    NotImplementedBackward,
    ShapeMismatchError,
    VersionMismatchError,
)
from .fpstate import quiet_off, quiet_on
from .grad_mode import _enabled
from .graph import OPEN as SAVED_HOOKS_OPEN
from .hooks import NodeHooks
from .interrupt import OPEN as CHECKS_OPEN
from .interrupt import current as op_check
from .leafnode import _CPP_NODES, NodeName, grad_accumulator
from .registry import OPS
from .tensor import Tensor, clock, multi_output_message, no_grad_view_message

_make = Tensor._make
_new = object.__new__


def no_complex_gradient(cls: type[Function]) -> None:
    """Refuse to record a complex result of an op whose backward is written for reals
    (a wrong gradient would pass silently): the engine's complex gradients are those of
    the Functions marked ``complex_ok`` (spectral ops, parts, conjugation, casts, sums,
    products, ``solve``, ``abs``/``sgn``, rearrangements: see ``ops/complex_ops.py``)."""
    raise NotImplementedBackward(
        f"the derivative of {cls.name.split('Backward')[0]} is not implemented for complex "
        "tensors in this engine"
    )


class _NoGrads:
    """``needs_input_grad`` when nothing is recorded: no input needs a gradient."""

    def __getitem__(self, index: int) -> bool:
        return False


class _NoCtx:
    """The context handed to forward when nothing is recorded: saves are no-ops."""

    needs_input_grad = _NoGrads()

    def save_for_backward(self, *items: Any) -> None:
        pass

    def _pack(self, items: tuple[Any, ...]) -> bool:
        """Hand the tensors to this context's pack hook, if one is set."""
        hooks = saved_hooks.current()
        if hooks is None:
            return False
        pack = saved_hooks.pack
        self._packed = tuple([pack(t, hooks) if isinstance(t, Tensor) else t for t in items])
        self._saved = None
        return True

    def _pack_results(self, results: tuple[Tensor, ...]) -> bool:
        hooks = saved_hooks.current()
        if hooks is None:
            return False
        self._packed_result = tuple([saved_hooks.pack(r, hooks) for r in results])
        return True

    def save_result(self) -> None:
        pass


_PAIRS = ((False, False), (False, True)), ((True, False), (True, True))


class Node(NodeHooks):
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
        "freed",  # slots, not class defaults: release() would give each node a __dict__
        "freed_by",
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
    materialize_grads = True  # zeros for outputs no gradient reached (custom ctx may clear)
    _saved_result = False
    _result: list[tuple[np.ndarray, Any, int]] | None = None
    # what saved_tensors_hooks packed (engine/graph.py): saved tensors, saved results
    _packed: tuple[Any, ...] | None = None
    _packed_result: tuple[saved_hooks.Packed, ...] | None = None
    freed: bool
    freed_by: Any
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
        self.seq = next(clock)
        self._saved: tuple[Any, ...] | None = None
        self.freed = False
        self.freed_by = None

    @property
    def name(self) -> str:
        """The op's PyTorch node name; also callable, as PyTorch's ``grad_fn.name()``."""
        return NodeName(self.fn.name)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        edges = self.next_edges
        if len(edges) == 2:  # binary ops read it in every forward (hot path): no new tuple
            return _PAIRS[edges[0] is not None][edges[1] is not None]
        return tuple([edge is not None for edge in edges])

    def meta(self, nr: int) -> tuple[tuple[int, ...], np.dtype]:
        """Shape and dtype of output ``nr`` (what a gradient flowing into it must have)."""
        if self.output_meta is None:
            return self.out_shape, self.out_dtype
        return self.output_meta[nr]

    @property
    def had_saved(self) -> bool:
        return self._saved is not None or self._saved_result or self._packed is not None

    # -- what forward calls -------------------------------------------------
    def save_for_backward(self, *items: Any) -> None:
        """Keep tensors (version-checked) or raw values for the backward rule."""
        if SAVED_HOOKS_OPEN[0] and self._pack(items):
            return
        self._saved = items
        T = Tensor
        if len(items) == 2:  # the common binary case, unrolled (hot path)
            a, b = items
            self._versions = (a._vc[0] if type(a) is T else 0, b._vc[0] if type(b) is T else 0)
        else:
            self._versions = tuple([t._vc[0] if type(t) is T else 0 for t in items])

    def _pack(self, items: tuple[Any, ...]) -> bool:
        """Hand the tensors to this context's pack hook, if one is set."""
        hooks = saved_hooks.current()
        if hooks is None:
            return False
        pack = saved_hooks.pack
        self._packed = tuple([pack(t, hooks) if isinstance(t, Tensor) else t for t in items])
        self._saved = None
        return True

    def _pack_results(self, results: tuple[Tensor, ...]) -> bool:
        hooks = saved_hooks.current()
        if hooks is None:
            return False
        self._packed_result = tuple([saved_hooks.pack(r, hooks) for r in results])
        return True

    def save_result(self) -> None:
        """Keep the forward result(s); unpacked as tensors whose grad_fn is this node."""
        self._saved_result = True

    # -- what backward calls ------------------------------------------------
    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        saved = self._saved
        if saved is None:  # freed, packed by hooks or nothing saved
            if self.freed:
                raise GraphFreedError(GRAPH_FREED_MESSAGE, node=self)
            packed = self._packed
            return () if packed is None else tuple([_unpacked(p) for p in packed])
        if len(saved) == 2:  # the binary case, unrolled (hot path): all well, or the loop
            a, b = saved
            va, vb = self._versions
            T = Tensor
            if (type(a) is not T or (a._vc[0] == va and a._output_nr >= 0)) and (
                type(b) is not T or (b._vc[0] == vb and b._output_nr >= 0)
            ):
                return saved
        return self._check_saved(saved)

    def _check_saved(self, saved: tuple[Any, ...]) -> tuple[Any, ...]:
        """Each saved tensor at the version it was saved at (and not detached in place
        since): PyTorch's SavedVariable unpack checks, in order."""
        for t, version in zip(saved, self._versions):
            if type(t) is Tensor:
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
        if self._result is None and self._packed_result is not None:
            return tuple([_unpacked(p, self, nr) for nr, p in enumerate(self._packed_result)])
        out = []
        for nr, (data, vc, version) in enumerate(self._result or ()):
            held = self.result_views.get(nr) if self.result_views else None
            fn = held[0]() if held is not None else None
            if vc[0] != version:
                t = _make(data)
                t.grad_fn = fn if fn is not None else self
                raise VersionMismatchError(_version_message(t, vc[0], version), node=self, tensor=t)
            if fn is not None and held is not None:  # written into a view: its history
                t = _make(data, True, fn, held[1])
            else:
                t = _make(data, True, self, nr)
            t._vc = vc
            out.append(t)
        return tuple(out)

    def _check_alive(self) -> None:
        if self.freed:
            raise GraphFreedError(GRAPH_FREED_MESSAGE, node=self)

    def release(self, tag: Any = None) -> None:
        """Free saved tensors after a backward without retain_graph."""
        # CopySlices drops the op it wraps whatever that saved (PyTorch's fn_ = nullptr)
        held = (
            self._saved is not None
            or self._saved_result
            or self.fn.name == "CopySlices"
            or self._packed is not None
        )
        if held and not self.freed:
            self._saved = None
            self._result = None
            if self._packed is not None or self._packed_result is not None:
                self._packed = self._packed_result = None
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
                out.append((grad_accumulator(edge[0]), 0))
        return tuple(out)

    @property
    def metadata(self) -> dict[str, Any]:
        """A dict for the user's own notes on this node (PyTorch's ``grad_fn.metadata``)."""
        return self.__dict__.setdefault("_metadata", {})  # type: ignore[no-any-return]

    def __call__(self, *grads: Any) -> Any:
        """Run the backward rule on gradients of the outputs (PyTorch's ``grad_fn(g)``)."""
        if len(grads) != self.n_outputs:
            raise ArgumentTypeError(
                f"expected {self.n_outputs} arguments, got {len(grads)} instead"
            )
        return self.fn.backward(self, *grads)

    def register_tensor(self, nr: int, tensor: Tensor) -> None:
        """Route this node's output ``nr`` gradient to the tensor's hooks/retain_grad."""
        refs = self.tensor_refs if self.tensor_refs is not None else []
        if not any(n == nr and r() is tensor for n, r in refs):
            refs.append((nr, weakref.ref(tensor)))
        self.tensor_refs = refs

    def __repr__(self) -> str:
        return f"<{self.name} object at {hex(id(self))}>"


DETACHED_MESSAGE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
    "not supported, please use out-of-place `.detach()` instead"
)


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
    hint = (
        "Hint: the backtrace further above shows the operation that failed to compute its "
        "gradient. The variable in question was changed in there or anywhere later. Good luck!"
        if anomaly.is_anomaly_enabled()
        else "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )
    return (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {desc} is at version {now}; expected version {expected} instead. "
        + hint
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
    graph of the backward pass is wanted, but only where a row of
    ``bench/engine.py`` earns it: ``vjp_row`` beside the twin names that row, and
    tests/engine/test_twins.py checks the names, the count (ten at most) and that
    both forms agree. A ``vjp`` must never write into an incoming gradient: it may
    be a read-only broadcast view, or shared with another edge.
    """

    name: ClassVar[str] = "Function"
    broadcasts: ClassVar[bool] = False
    # Optional numpy twin of ``backward`` (arrays in, arrays out) for the hot
    # path without create_graph; ``backward`` stays the reference rule.
    vjp: ClassVar[Callable[..., Any] | None] = None
    vjp_row: ClassVar[str] = ""  # the bench/engine.py row (``ROWS``) that earns the twin
    # The forward returns a numpy view of input 0: the result shares its memory
    # and version counter, so writes through either are seen by saved-tensor checks.
    is_view: ClassVar[bool] = False
    # ``backward`` is right for complex tensors too (PyTorch's conjugate convention): a
    # Function without it refuses to record a complex result (``no_complex_gradient``)
    complex_ok: ClassVar[bool] = False
    # The forward-mode rule (``engine.dual``): ``jvp(ctx, *tangents)`` written with engine
    # ops (one tangent or None per input, returning the output's tangent, or a tuple), or
    # ``dual.LINEAR`` / ``SELF_ADJOINT`` / ``FROM_BACKWARD``; None: forward AD refused.
    jvp: ClassVar[Any] = None
    # keyword parameters the LINEAR rule overrides (an affine op's constant: a pad value)
    jvp_params: ClassVar[dict[str, Any]] = {}
    # the input a MULTILINEAR op adds (linear's and conv's bias), if any
    jvp_bias: ClassVar[int | None] = None

    # what the forward keeps on its context (``ctx.alpha = alpha``) in slots of the node
    # rather than a __dict__ made per node: for hot ops' fields
    ctx_fields: ClassVar[tuple[str, ...]] = ()

    _node_type: ClassVar[type[Node]] = Node

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # its nodes' class is named as PyTorch's (type(y.grad_fn).__name__ == "MulBackward0");
        # build them with ``cls._node_type(cls)``
        super().__init_subclass__(**kwargs)
        cls._node_type = type(cls.name, (Node,), {"__slots__": cls.ctx_fields})

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
        if CHECKS_OPEN[0]:  # a caller's deadline: a composite's loop of ops stops here too
            check = op_check()
            if check is not None:
                check()
        if LIVE[0]:  # forward AD is in use somewhere: does this call carry a tangent?
            level = dual.current()
            if level is not None and dual.any_tangent(inputs, level):
                return dual.PROPAGATE[0](cls, inputs, params, level)
        grad_on = _enabled.get()
        if grad_on:
            T = Tensor
            for t in inputs:
                if type(t) is T:
                    if t._view is not None:
                        # a stale view regenerates its history first; one made under no_grad
                        # requires grad through its base (and gets no edge)
                        if t.requires_grad:
                            return cls._record(inputs, params)
                    elif t.requires_grad_flag:
                        return cls._record(inputs, params)
        quiet = quiet_on()  # inf and NaN are answers, not numpy warnings (see fpstate)
        try:
            out = cls.forward(_NoCtx(), *inputs, **params)
        except ValueError as exc:
            raise _shape_error(cls, inputs, exc) from None
        finally:
            quiet_off(quiet)
        if type(out) is tuple:
            results = tuple(_make(o) for o in out)
            if cls.is_view:
                for nr, r in enumerate(results):
                    make_view(r, inputs[0], cls, params, nr, grad_on)
            return results
        if cls.is_view:
            return make_view(_make(out), inputs[0], cls, params, None, grad_on)
        return _make(out)

    @classmethod
    def _record(
        cls, inputs: tuple[Any, ...], params: dict[str, Any], node: Node | None = None
    ) -> Any:
        # Edges first, node second: reading a stale view's ``grad_fn`` regenerates it,
        # and a node must be created after the nodes it points to (see ``Node.seq``).
        # A forward may read ``ctx.needs_input_grad`` to save only what is needed.
        # Forward mode passes its ``node`` made already (``_apply_dual``).
        T = Tensor
        edges: tuple[tuple[Any, int] | None, ...]
        recording = True
        if node is not None:
            recording = _enabled.get()
        elif len(inputs) == 1:  # apply refreshed it if it is a view
            t = inputs[0]
            fn = t._grad_fn
            if fn is not None:
                edges = ((fn, t._output_nr),)
            else:  # a view made under no_grad may record without requiring grad itself
                edges = ((t, 0) if t.requires_grad_flag else None,)
        elif len(inputs) == 2:  # binary ops, unrolled (hot path)
            a, b = inputs
            edge_a: tuple[Any, int] | None = None
            edge_b: tuple[Any, int] | None = None
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
                edge: tuple[Any, int] | None = None
                if type(t) is T:
                    fn = t._grad_fn if t._view is None else t.grad_fn
                    if fn is not None:
                        edge = (fn, t._output_nr)
                    elif t.requires_grad_flag:
                        edge = (t, 0)
                listed.append(edge)
            edges = tuple(listed)
        if node is None:  # Node.__init__ inlined (one frame less per op)
            node = _new(cls._node_type)
            node.fn = cls
            node.seq = next(clock)
            node._saved = None
            node.freed = False
            node.freed_by = None
            node.next_edges = edges
            if ANOMALY_OPEN[0]:
                anomaly.record(node)
        quiet = quiet_on()
        try:
            out = cls.forward(node, *inputs, **params)
        except ValueError as exc:
            raise _shape_error(cls, inputs, exc) from None
        finally:
            quiet_off(quiet)
        make = _make
        if type(out) is not tuple:
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            dtype = out.dtype
            # Tensor._make inlined (one frame less per op)
            result = _new(T)
            result._data = out
            if dtype.kind in "fc":
                if dtype.kind == "c" and not cls.complex_ok:
                    no_complex_gradient(cls)
                result.requires_grad_flag = True
                result._grad_fn = node
            else:
                result.requires_grad_flag = False
                result._grad_fn = None
            result._grad = None
            result._output_nr = 0
            result._retains_grad = False
            result._vc = [0]
            result._hooks = None
            result._view = None
            result._fw = None
            if cls.is_view:
                make_view(result, inputs[0], cls, params, None, recording)
            node.out_shape = out.shape
            node.out_dtype = dtype
            if node._saved_result and not (SAVED_HOOKS_OPEN[0] and node._pack_results((result,))):
                node._result = [(out, result._vc, 0)]
            return result
        results = []
        for nr, arr in enumerate(out):
            if type(arr) is not np.ndarray:
                arr = np.asarray(arr)
            differentiable = arr.dtype.kind in "fc"
            if arr.dtype.kind == "c" and not cls.complex_ok:
                no_complex_gradient(cls)
            results.append(make(arr, differentiable, node if differentiable else None, nr))
            if cls.is_view:
                make_view(results[-1], inputs[0], cls, params, nr, recording)
        node.output_meta = tuple((r._data.shape, r._data.dtype) for r in results)
        node.n_outputs = len(results)
        if node._saved_result and not (SAVED_HOOKS_OPEN[0] and node._pack_results(tuple(results))):
            node._result = [(r._data, r._vc, 0) for r in results]
        return tuple(results)


def _shape_error(cls: type[Function], inputs: tuple[Any, ...], exc: ValueError) -> Exception:
    """NumPy's ValueError from a broadcasting forward, as PyTorch's shape error."""
    if not cls.broadcasts:
        return exc
    shapes = tuple(np.shape(t._data if type(t) is Tensor else t) for t in inputs)
    return ShapeMismatchError(broadcast_message(shapes))


def broadcast_message(shapes: tuple[tuple[int, ...], ...]) -> str:
    """PyTorch's message for shapes that do not broadcast (the first pair that differs)."""
    a, b = shapes[0], shapes[-1]
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da != db and da != 1 and db != 1:
            dim = max(len(a), len(b)) - i
            return (
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                f"at non-singleton dimension {dim}"
            )
    return f"shapes {[list(s) for s in shapes]} cannot be broadcast together"


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


# -- views: what a view knows, and its history regenerated after an in-place write ------


class ViewInfo:
    """What a view knows: its root base, how to replay itself from it, and the
    version of the shared counter at which its ``grad_fn`` was last valid."""

    __slots__ = ("base", "chain", "attr_version", "no_grad", "multi", "custom", "_index")

    def __init__(
        self,
        base: Tensor,
        chain: tuple[tuple[type[Function], dict[str, Any], int | None], ...],
        attr_version: int,
        no_grad: bool,
        multi: tuple[type[Function], int] | None,
    ) -> None:
        self.base = base
        self.chain = chain
        self.attr_version = attr_version
        self.no_grad = no_grad  # made under no_grad from a base that requires grad
        self.multi = multi  # (op, output nr) when one of several views of one op
        self.custom = False  # an output of a custom autograd.Function (then multi is set)
        self._index: np.ndarray | None = None

    def refresh(self, view: Tensor) -> None:
        """Regenerate ``view``'s stale ``grad_fn`` from the base's current history, as
        PyTorch's ``VariableHooks::grad_fn`` does (the Tensor's ``grad_fn`` calls this)."""
        base = self.base
        if view._grad_fn is None and not base.requires_grad:
            return
        if self.no_grad:
            raise InplaceViewError(no_grad_view_message(view, stale=True))
        if self.multi is not None:
            raise InplaceViewError(multi_output_message(view, self, stale=True))
        node: Any = AsStridedBackward0._node_type(AsStridedBackward0)  # the rule's context
        node.next_edges = (edge_of(base),)
        node.out_shape, node.out_dtype = view._data.shape, view._data.dtype
        node.index = self.index()
        node.in_shape = base._data.shape
        self.attr_version = view._vc[0]
        set_history(view, node, 0)

    def index(self) -> np.ndarray:
        """Flat positions in the base of each view element (the view replayed on arange)."""
        if self._index is None:
            base = self.base._data
            arr = np.arange(base.size, dtype=np.int64).reshape(base.shape)
            ctx = _NoCtx()
            for cls, params, nr in self.chain:
                out = cls.forward(ctx, _make(arr), **params)
                arr = out if nr is None else out[nr]
            self._index = np.asarray(arr)
        return self._index


def make_view(
    view: Tensor,
    parent: Tensor,
    cls: type[Function],
    params: dict[str, Any],
    nr: int | None,
    grad_on: bool,
) -> Tensor:
    """Mark ``view`` (made by ``cls`` from ``parent``) as a view of ``parent``'s root base."""
    info = parent._view
    chain: tuple[tuple[type[Function], dict[str, Any], int | None], ...]
    if info is None:
        root, chain = parent, ((cls, params, nr),)
    else:
        root, chain = info.base, info.chain + ((cls, params, nr),)
    view._vc = parent._vc
    multi = None if nr is None else (cls, nr)
    no_grad = not grad_on
    if grad_on and nr is None and info is not None:  # inherits PyTorch's creation_meta
        multi = None if info.multi is None else (cls, 0)
        no_grad = info.no_grad
    view._view = ViewInfo(root, chain, parent._vc[0], no_grad, multi)
    if multi is not None and nr is None:
        view._view.custom = info.custom  # type: ignore[union-attr]
    return view


def edge_of(t: Tensor) -> tuple[Any, int] | None:
    """The graph edge a gradient for ``t`` flows along (None when it needs none)."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    return (t, 0) if t.requires_grad_flag else None


class _StrongRef:
    """A node's reference to the pre-in-place version of a tensor (its old hooks)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor

    def __call__(self) -> Tensor:
        return self.tensor


def set_history(t: Tensor, fn: Node, nr: int) -> None:
    """Give ``t`` a new ``grad_fn``: hooks registered so far stay with the old node (they
    fire for the gradient of the old version); a retained grad follows the tensor."""
    old = t._grad_fn
    if old is not None and old.tensor_refs:
        ghost = None
        refs: list[tuple[int, Callable[[], Tensor | None]]] = []
        for n, ref in old.tensor_refs:
            if ref() is t:
                if ghost is None:
                    ghost = _make(t._data, True, old, t._output_nr)
                    ghost._vc = t._vc
                    ghost._hooks = t._hooks
                if ghost._hooks:
                    refs.append((n, _StrongRef(ghost)))
                continue
            refs.append((n, ref))
        old.tensor_refs = refs
        if ghost is not None:
            t._hooks = None
    t._grad_fn = fn
    t._output_nr = nr
    t.requires_grad_flag = True
    if t._retains_grad:
        fn.register_tensor(nr, t)


def _gather(g: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.asarray(g.reshape(-1)[index])


def _scatter_add(g: np.ndarray, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    flat = np.bincount(index.reshape(-1), weights=g.reshape(-1), minlength=size)
    return flat.astype(g.dtype, copy=False).reshape(shape)


class AsStridedBackward0(Function):
    """The elements of the base at ``index`` (a regenerated view's node)."""

    name = "AsStridedBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, index: np.ndarray) -> np.ndarray:
        ctx.index, ctx.in_shape = index, a._data.shape
        return _gather(a._data, index)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        # PyTorch's as_strided_backward: size-1 dims squeezed away and repeating (stride 0)
        # dims summed, last first; g then written (index_add_ if elements still repeat)
        # into zeros of the base's size, returned as an as_strided view of them
        index = ctx.index
        if index.size:
            for i in reversed(range(index.ndim)):
                if index.shape[i] == 1:
                    g, index = OPS["squeeze"].fn(g, i), index.squeeze(i)
                elif (np.take(index, 1, axis=i) == np.take(index, 0, axis=i)).all():
                    g, index = OPS["sum"].fn(g, i), np.take(index, 0, axis=i)
        unique = np.unique(index).size == index.size
        scatter = AsStridedScatterBackward0 if unique else _AsStridedIndexAdd
        zeros = _make(np.zeros(ctx.in_shape, g.dtype))
        storage = scatter.apply(zeros, g, index=index)
        whole = np.arange(storage._data.size).reshape(ctx.in_shape)
        return AsStridedBackward0.apply(storage, index=whole)


class AsStridedScatterBackward0(Function):
    """The adjoint of ``AsStridedBackward0``: ``g`` added at ``index`` into ``zeros`` (a
    constant of the base's shape; PyTorch copies g into a view of it: a CopySlices)."""

    name = "CopySlices"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, zeros: Tensor, g: Tensor, *, index: np.ndarray) -> np.ndarray:
        ctx.index = index
        return _scatter_add(g._data, index, zeros._data.shape)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> tuple[None, Tensor]:
        return None, AsStridedBackward0.apply(gg, index=ctx.index)


class _AsStridedIndexAdd(AsStridedScatterBackward0):
    """The same where the view repeats elements: PyTorch index_adds them."""

    name = "IndexAddBackward0"


class _SavedLeafAlias(Function):
    """A leaf's saved tensor that hooks packed, unpacked as another tensor: PyTorch gives
    it the leaf's grad accumulator; here it is an alias whose gradient goes to the leaf."""

    name = "AliasBackward0"
    jvp = LINEAR

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return g


def _unpacked(item: Any, node: Node | None = None, nr: int = 0) -> Any:
    """A saved value as backward reads it: hooks' packed tensors unpacked and given their
    saved history back (this node's output ``nr`` for a saved result)."""
    if type(item) is not saved_hooks.Packed:
        return item
    out = saved_hooks.unpack(item)
    if node is not None:
        return _make(out._data, True, node, nr)
    if item.grad_fn is not None:
        return _make(out._data, True, item.grad_fn, item.output_nr)
    leaf = item.leaf
    if leaf is None or out is leaf:
        return out if leaf is not None else _make(out._data)
    alias = _SavedLeafAlias._node_type(_SavedLeafAlias)
    alias.next_edges = ((leaf, 0),)
    alias.out_shape, alias.out_dtype = out._data.shape, out._data.dtype
    return _make(out._data, True, alias, 0)
