"""``torch.autograd.Function``: a user's own differentiable op, written with tensors.

Unlike the engine's op ``Function`` (numpy forward, rule per op), a custom Function's
``forward(ctx, *args)`` computes on Tensors under ``no_grad`` and ``backward(ctx,
*grads)`` returns one gradient per forward argument. ``apply`` records one node, the
``ctx`` itself (as in PyTorch, ``out.grad_fn is ctx``), named ``<Class>Backward``. It
keeps PyTorch's contract: ``save_for_backward`` (version-checked), ``mark_dirty``
(in-place outputs take the node as their history), ``mark_non_differentiable``,
``set_materialize_grads``, ``needs_input_grad``, ``once_differentiable`` and the
``setup_context`` style.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import anomaly, views
from .dispatch import CUSTOM_FUNCTION, ask
from .dispatch import OPEN as BATCHING_OPEN
from .dual import FROM_BACKWARD
from .errors import (
    GRAPH_FREED_MESSAGE,
    ArgumentTypeError,
    EngineError,
    GraphFreedError,
    InplaceViewError,
)
from .function import Function as _OpFunction
from .function import Node, ViewInfo
from .grad_mode import _enabled, no_grad
from .tensor import Tensor, check_multi_output

LEGACY_MESSAGE = (
    "Legacy autograd function with non-static forward method is deprecated. Please use "
    "new-style autograd function with static forward method. (Example: "
    "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
)
DIRTY_NOT_OUTPUT_MESSAGE = (
    "Some elements marked as dirty during the forward method were not returned as output. "
    "The inputs that are modified inplace must all be outputs of the Function."
)
ONCE_DIFFERENTIABLE_MESSAGE = (
    "trying to differentiate twice a function that was marked with @once_differentiable"
)
LEAF_DIRTY_MESSAGE = "a leaf Variable that requires grad has been used in an in-place operation."
SAVED_ONCE_MESSAGE = (
    "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set "
    "on the autograd.Function. Either access saved_tensors only once, or set "
    "clear_saved_tensors_on_access=False."
)


class CustomFunctionError(EngineError):
    """A custom Function broke its contract (PyTorch raises RuntimeError)."""

    code = "bad_arguments"


class BackwardCFunction(Node):
    """The ``ctx`` handed to ``forward`` and ``backward``, and the ``grad_fn`` of the
    outputs: a graph node that also carries what the user stored on it."""

    needs_input_grad: tuple[bool, ...] = ()  # shadows Node's property: set per call
    materialize_grads = True
    input_is_tensor: tuple[bool, ...] = ()
    tensor_outputs: tuple[bool, ...] = ()
    non_diff_outputs: frozenset[int] = frozenset()
    function_class: ClassVar[type[Function] | None] = None

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors (or None) for backward; versions are taken when forward ends."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise ArgumentTypeError(
                    f"save_for_backward can only save variables, but argument {i} is of "
                    f"type {type(t).__name__}"
                )
        self.to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Inputs the forward modified in place; they must be returned as outputs."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs that get no gradient (``requires_grad`` False; zeros in backward)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs without gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if self.__dict__.get("saved_freed"):
            raise GraphFreedError(GRAPH_FREED_MESSAGE, node=self)
        if self.__dict__.get("saved_accessed"):
            raise CustomFunctionError(SAVED_ONCE_MESSAGE)
        if "to_save" in self.__dict__ and self._saved is None and self._packed is None:
            return tuple(self.to_save)  # read inside forward: not recorded yet
        saved: tuple[Any, ...] = Node.saved_tensors.fget(self)  # type: ignore[attr-defined]
        cls = self.function_class
        if cls is not None and cls.clear_saved_tensors_on_access:
            self._saved = self._packed = None  # PyTorch drops them once handed out
            self.saved_accessed = True
        return saved

    def release(self, tag: Any = None) -> None:
        """Free saved tensors; the node itself stays runnable (PyTorch's PyNode), but
        ``saved_tensors`` refuses from now on, saved or not."""
        self._saved = self._packed = None
        if not self.__dict__.get("saved_freed"):
            self.saved_freed = True
            self.freed_by = tag


def _apply(cls: type[Function], *args: Any, **kwargs: Any) -> Any:
    return cls._apply(*args, **kwargs)


def _forward_is_static(cls: type) -> bool:
    return isinstance(inspect.getattr_static(cls, "forward", None), staticmethod)


class Function:
    """Base class of custom differentiable operations (``torch.autograd.Function``).

    Subclasses define ``forward(ctx, *args)`` (or ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grads)``, both
    static, and call ``Cls.apply(*args)``."""

    _op: ClassVar[type[_OpFunction] | None] = None
    clear_saved_tensors_on_access: ClassVar[bool] = False  # free saved tensors once read
    # under vmap: the forward's ops batched (True), or the ``vmap`` staticmethod's rule
    generate_vmap_rule: ClassVar[bool] = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise CustomFunctionError(LEGACY_MESSAGE)

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def vmap(info: Any, in_dims: tuple[Any, ...], *args: Any) -> Any:
        """``(output, out_dims)`` for inputs whose batch dims are ``in_dims``."""
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap "
            "staticmethod or set generate_vmap_rule=True."
        )

    @classmethod
    def _node_class(cls) -> type[_OpFunction]:
        op: type[_OpFunction] | None = cls.__dict__.get("_op")
        if op is None:
            name = cls.__name__ + "Backward"
            op = type(
                name,
                (_OpFunction,),
                {
                    "name": name,
                    "broadcasts": True,  # PyTorch sums an expandable gradient to shape
                    "backward": staticmethod(functools.partial(_run_backward, cls)),
                },
            )
            op._node_type = type(name, (BackwardCFunction,), {"function_class": cls})
            cls._op = op
        return op

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if BATCHING_OPEN[0]:  # under vmap: its rule for autograd.Functions decides
            return ask(CUSTOM_FUNCTION, _apply, (cls, *args), kwargs)
        return cls._apply(*args, **kwargs)

    @classmethod
    def _apply(cls, *args: Any, **kwargs: Any) -> Any:
        if not _forward_is_static(cls):
            raise CustomFunctionError(LEGACY_MESSAGE)
        separate = cls.setup_context is not Function.setup_context
        if kwargs or separate:
            sig = inspect.signature(cls.forward)
            params = list(sig.parameters.values())
            if not separate:
                params = params[1:]  # ctx
            bound = sig.replace(parameters=params).bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        tensors_need = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        recording = _enabled.get() and any(tensors_need)
        edges: list[tuple[Any, int] | None] = []  # one per Tensor argument, as in PyTorch
        for a, need in zip(args, tensors_need):
            if need and recording:
                fn = a.grad_fn  # a stale view regenerates its node first
                edges.append((fn, a._output_nr) if fn is not None else (a, 0))
            elif isinstance(a, Tensor):
                edges.append(None)
        # created after its inputs' nodes, as ``Node.seq`` requires
        op = cls._node_class()
        ctx: Any = op._node_type(op)
        ctx.needs_input_grad = tensors_need
        ctx.input_is_tensor = tuple(isinstance(a, Tensor) for a in args)
        ctx.next_edges = tuple(edges)
        if anomaly.OPEN[0]:
            anomaly.record(ctx)
        with no_grad():
            if separate:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args)
        return _wrap_outputs(ctx, args, output, recording)


def _wrap_outputs(
    ctx: BackwardCFunction, args: tuple[Any, ...], output: Any, recording: bool
) -> Any:
    """PyTorch's ``_wrap_outputs``: give each differentiable output the node as history."""
    is_tuple = isinstance(output, tuple)
    outputs = list(output) if is_tuple else [output]
    state = ctx.__dict__
    dirty = state.get("dirty_tensors", ())
    non_diff = state.get("non_differentiable", ())
    dirty_ids = {id(t) for t in dirty}
    non_diff_ids = {id(t) for t in non_diff}
    input_ids = {id(a) for a in args if isinstance(a, Tensor)}
    if any(id(t) not in {id(o) for o in outputs} for t in dirty):
        raise CustomFunctionError(DIRTY_NOT_OUTPUT_MESSAGE)
    for t in dirty:
        t._vc[0] += 1  # PyTorch bumps the version of each tensor marked dirty
    meta: list[tuple[tuple[int, ...], np.dtype]] = []
    non_diff_nrs: list[int] = []
    views_out: list[tuple[Tensor, int]] = []
    tensor_outputs: list[bool] = []
    for nr, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            meta.append(((), np.dtype(np.float32)))
            tensor_outputs.append(False)
            continue
        meta.append((out._data.shape, out._data.dtype))
        tensor_outputs.append(True)
        is_input = id(out) in input_ids
        if not recording:
            if is_input and id(out) not in dirty_ids:
                outputs[nr] = out.detach()  # PyTorch returns a view of it, without history
            elif out._view is not None:
                out._view.custom = True
                out._view.multi = (ctx.fn, nr)
            continue
        differentiable = id(out) not in non_diff_ids and out._data.dtype.kind == "f"
        if not differentiable:
            non_diff_nrs.append(nr)
            if is_input and out.requires_grad:
                if id(out) in dirty_ids:
                    out.detach_()
                else:
                    outputs[nr] = out.detach()
            continue
        if id(out) in dirty_ids:
            _rebase_dirty(out, ctx, nr, args)
        elif is_input:
            alias = Tensor._make(out._data, True, ctx, nr)
            alias._vc = out._vc
            info = out._view
            root, chain = (out, ()) if info is None else (info.base, info.chain)
            alias._view = ViewInfo(root, chain, out._vc[0], False, None)
            views_out.append((alias, nr))
            outputs[nr] = alias
        else:
            out._grad_fn = ctx
            out._output_nr = nr
            out.requires_grad_flag = True
            if out._view is not None:
                out._view.no_grad = False
                out._view.attr_version = out._vc[0]
                views_out.append((out, nr))
    # views among the outputs refuse in-place writes, as PyTorch's creation meta says: one
    # of several differentiable outputs as a multi-output view, otherwise as a custom one
    n_differentiable = sum(
        1 for o in outputs if isinstance(o, Tensor) and o._grad_fn is ctx and id(o) not in dirty_ids
    )
    for view, nr in views_out:
        assert view._view is not None
        view._view.multi = (ctx.fn, nr)
        view._view.custom = n_differentiable == 1
    ctx.output_meta = tuple(meta)
    ctx.n_outputs = len(outputs)
    ctx.out_shape, ctx.out_dtype = meta[0] if meta else ((), np.dtype(np.float32))
    ctx.tensor_outputs = tuple(tensor_outputs)
    ctx.non_diff_outputs = frozenset(non_diff_nrs)
    if "to_save" in state:
        Node.save_for_backward(ctx, *ctx.to_save)
    return tuple(outputs) if is_tuple else outputs[0]


def _rebase_dirty(t: Tensor, ctx: BackwardCFunction, nr: int, args: tuple[Any, ...]) -> None:
    """An input modified in place: its history becomes this node, as in-place ops do."""
    info = t._view
    if info is None:
        if t.requires_grad_flag and t._grad_fn is None:
            raise CustomFunctionError(LEAF_DIRTY_MESSAGE)
        views.set_history(t, ctx, nr)
        t.requires_grad_flag = True
        return
    t._check_inplace(grad_on=True)
    check_multi_output(t)
    if info.no_grad:
        raise InplaceViewError(views.NO_GRAD_VIEW_MESSAGE)
    tensor_args = [a for a in args if isinstance(a, Tensor)]
    old_edge = next(e for a, e in zip(tensor_args, ctx.next_edges) if a is t)
    views.rebase(t, ctx, nr, old_edge)
    t.requires_grad_flag = True
    info.attr_version = -1  # regenerate the view's grad_fn from the base's new history


def _run_backward(cls: type[Function], ctx: BackwardCFunction, *grads: Any) -> tuple[Any, ...]:
    """Call the user's backward and check what it returned against the forward's inputs."""
    name = cls.__name__ + "Backward"
    tensor_outputs = ctx.__dict__.get("tensor_outputs", ())
    grads_list = [
        None if (nr < len(tensor_outputs) and not tensor_outputs[nr]) else g
        for nr, g in enumerate(grads)
    ]
    non_diff = ctx.__dict__.get("non_diff_outputs", ())
    if not ctx.__dict__.get("_materialize_non_diff_grads", True):
        grads_list = [None if nr in non_diff else g for nr, g in enumerate(grads_list)]
    backward = cls.backward
    if cls.vjp is not Function.vjp:
        if backward is not Function.backward:
            raise CustomFunctionError(
                "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                "You should only implement one of them."
            )
        backward = cls.vjp
    result = backward(ctx, *grads_list)
    if not isinstance(result, tuple):
        result = (result,)
    n_inputs = len(ctx.input_is_tensor)
    if len(result) != n_inputs:
        if len(result) > n_inputs and all(r is None for r in result[n_inputs:]):
            result = result[:n_inputs]
        else:
            raise CustomFunctionError(
                f"function {name} returned an incorrect number of gradients (expected "
                f"{n_inputs}, got {len(result)})"
            )
    out = []
    edges = iter(ctx.next_edges)
    for i, g in enumerate(result):
        if not ctx.input_is_tensor[i]:
            if g is not None:
                raise CustomFunctionError(
                    f"function {name} returned a gradient different than None at position "
                    f"{i + 1}, but the corresponding forward input was not a Variable"
                )
            continue
        if g is not None and not isinstance(g, Tensor):
            raise CustomFunctionError(f"expected Variable or None (got {type(g).__name__})")
        out.append(g if next(edges) is not None else None)
    return tuple(out)


class _DelayedError(_OpFunction):
    name = "Error"
    jvp = FROM_BACKWARD

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise CustomFunctionError(ctx.message)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a custom backward without recording; differentiating its result again raises."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not _enabled.get():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        items = list(outputs) if is_tuple else [outputs]
        node: Any = _DelayedError._node_type(_DelayedError)
        node.message = ONCE_DIFFERENTIABLE_MESSAGE
        node.next_edges = tuple(
            None if not isinstance(t, Tensor) else (t.detach().requires_grad_(True), 0)
            for t in items
        )
        node.n_outputs = len(items)
        node.output_meta = tuple(
            (t._data.shape, t._data.dtype) if isinstance(t, Tensor) else ((), np.dtype("f4"))
            for t in items
        )
        node.out_shape, node.out_dtype = node.output_meta[0]
        wrapped = [
            Tensor._make(t._data, True, node, nr) if isinstance(t, Tensor) else None
            for nr, t in enumerate(items)
        ]
        return tuple(wrapped) if is_tuple else wrapped[0]

    return wrapper


FunctionCtx = BackwardCFunction
