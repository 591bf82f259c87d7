"""The backward pass: ``backward`` fills ``.grad``, ``grad`` returns gradients.

One iterative engine serves both (no recursion: a 100,000-op chain works).
It sorts the reachable graph topologically, runs each node's rule once with
the sum of the gradients that reached it, reduces broadcast gradients to the
input's shape in one place, and only at the end (when nothing failed)
accumulates into ``.grad`` and frees saved tensors. A failed backward
therefore changes nothing.
"""

from __future__ import annotations

import heapq
import operator
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import anomaly, dtypes, fpstate, interrupt
from . import custom_function as function  # noqa: F401 - torch.autograd.function
from . import graph as graph  # torch.autograd.graph (saved_tensors_hooks)
from .anomaly import detect_anomaly as detect_anomaly
from .anomaly import set_detect_anomaly as set_detect_anomaly
from .custom_function import Function as Function
from .custom_function import FunctionCtx as FunctionCtx
from .custom_function import once_differentiable as once_differentiable
from .errors import (
    BadArgumentsError,
    EngineError,
    InternalVJPError,
    NoGradFnError,
    NotScalarError,
    ShapeMismatchError,
    UnusedInputError,
)
from .function import Node, no_complex_gradient
from .grad_mode import set_grad_enabled
from .hooks import NodeHooks
from .leafnode import AccumulateGrad
from .primitives import cast, clone, sum_to, sum_to_array
from .registry import OPS
from .tensor import Tensor
from .views import CopyBackwards

CREATE_GRAPH_CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using "
    "autograd.grad when creating the graph to avoid this. If you have to use this function, "
    "make sure to reset the .grad fields of your parameters to None after use to break the "
    "cycle and avoid the leak."
)
UNUSED_INPUT_MESSAGE = (
    "The differentiated Tensor at index {index} appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)


def _as_list(tensors: Any, what: str) -> list[Any]:
    if tensors is None:
        return []
    if isinstance(tensors, Tensor):
        return [tensors]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    raise GradientTypeError(f"{what} must be a Tensor or a sequence of Tensors")


def _grads_list(grads: Any, n: int) -> list[Any]:
    """PyTorch's ``_tensor_or_tensors_to_tuple``: None, one Tensor, or an iterable."""
    if grads is None:
        return [None] * n
    if isinstance(grads, Tensor):
        return [grads]
    try:
        return list(grads)
    except TypeError:
        raise GradientTypeError(f"'{type(grads).__name__}' object is not iterable") from None


def _inputs_list(inputs: Any, fn: str) -> list[Any]:
    """``inputs``: a Tensor, a sequence of Tensors or a dict of them (its values)."""
    if isinstance(inputs, Tensor):
        return [inputs]
    if type(inputs) is dict:
        return list(inputs.values())
    if isinstance(inputs, Mapping):
        raise GradientTypeError(
            f"`inputs` argument to `{fn}()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported."
        )
    return list(inputs)


def _size_str(shape: Sequence[int]) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"


def _make_root_grads(outputs: list[Tensor], grads: list[Any], kind: str) -> list[Tensor | None]:
    """PyTorch's ``_make_grads``: implicit ones for one-element outputs, exact shapes, a
    given gradient cast to its output's dtype (as its engine does); outputs and
    gradients pair up as ``zip`` pairs them, and a missing gradient is an error."""
    result: list[Tensor | None] = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not isinstance(out, Tensor):
            raise GradientTypeError(f"element {i} of tensors is not a Tensor")
        if g is None:
            if out.requires_grad:
                if out._data.size != 1:
                    raise NotScalarError("grad can be implicitly created only for scalar outputs")
                if not dtypes.is_floating(out.dtype):
                    raise NotScalarError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"torch.{dtypes.torch_name(out.dtype)}"
                    )
                result.append(Tensor._make(np.ones(out.shape, dtype=out.dtype)))
            else:
                result.append(None)
            continue
        if not isinstance(g, Tensor):
            raise GradientTypeError(
                f"gradients can be either Tensors or None, but got {type(g).__name__}"
            )
        if g.shape != out.shape:
            raise ShapeMismatchError(
                f"Mismatch in shape: {kind}[{i}] has a shape of {_size_str(g.shape)} and "
                f"output[{i}] has a shape of {_size_str(out.shape)}.",
                index=i,
            )
        if g.dtype != out.dtype and (dtypes.is_complex(out.dtype) or dtypes.is_complex(g.dtype)):
            raise BadArgumentsError(
                "For complex Tensors, both grad_output and output are required to have the "
                f"same dtype. Mismatch in dtype: {kind}[{i}] has a dtype of "
                f"torch.{dtypes.torch_name(g.dtype)} and output[{i}] has a dtype of "
                f"torch.{dtypes.torch_name(out.dtype)}."
            )
        if g.dtype != out.dtype and dtypes.is_floating(out.dtype):
            g = (
                Tensor._make(g._data.astype(out.dtype))
                if not g.requires_grad
                else cast(g, out.dtype)
            )
        result.append(g)
    if len(result) != len(outputs):
        raise BadLengthError(f"got {len(outputs)} tensors and {len(result)} gradients")
    return result


class BadLengthError(EngineError):
    code = "bad_arguments"


class GradientTypeError(BadArgumentsError, TypeError):
    """A wrong argument type (PyTorch raises TypeError)."""


class GradientValueError(BadArgumentsError, ValueError):
    """Arguments that contradict each other (PyTorch raises ValueError)."""


def _topological_order(roots: list[Node]) -> list[Node]:
    """Nodes reachable from ``roots``, each after every node that feeds it a gradient:
    by decreasing creation sequence, since an op's node is created after its inputs'."""
    seen = set(roots)
    stack = list(roots)
    while stack:
        for edge in stack.pop().next_edges:
            if edge is not None:
                child = edge[0]
                if type(child) is not Tensor and child not in seen:
                    seen.add(child)
                    stack.append(child)
    return sorted(seen, key=_by_seq, reverse=True)


_by_seq = operator.attrgetter("seq")


def _needed(
    order: list[Node], capture_edges: set[tuple[Node, int]], capture_leaves: set[int]
) -> set[Node]:
    """Nodes on some path to a captured input: only they run. A node whose output is
    captured is not run for it (``grad(y, h)`` stops at ``h``), so the graph behind
    the inputs stays unrun and unfreed for a later backward."""
    needed: set[Node] = set()
    for node in reversed(order):
        for edge in node.next_edges:
            if edge is None:
                continue
            target = edge[0]
            if type(target) is not Tensor:
                if target in needed or edge in capture_edges:
                    needed.add(node)
                    break
            elif id(target) in capture_leaves:
                needed.add(node)
                break
    return needed


def _position(node: Node, edge: tuple[Any, int]) -> int:
    """Which input of ``node`` an edge is (for an error's index; edges are distinct
    tuples, so identity finds it without counting on the hot loop)."""
    return next(i for i, e in enumerate(node.next_edges) if e is edge)


def _add(a: Any, b: Any) -> Any:
    return b if a is None else a + b


def _run(
    outputs: list[Tensor],
    root_grads: list[Tensor | None],
    *,
    create_graph: bool,
    inputs: list[Tensor] | None,
    run_inputs: bool = False,
) -> tuple[dict[Tensor, Tensor], dict[Tensor, Tensor], list[Tensor | None], list[Node]]:
    """Run the engine. Returns (leaf grads, retained non-leaf grads, captured input grads,
    executed nodes); commits nothing, so the caller frees and accumulates on success.

    With ``inputs``, gradients are captured where they reach each input (one slot per
    position, so an input given twice gets its gradient twice), and only the nodes
    between the outputs and the inputs run; with ``run_inputs`` (``backward(inputs=)``)
    a non-leaf input's own node runs too, as PyTorch's does (and is freed), though what
    it computes goes nowhere else.

    Without ``create_graph`` gradients travel as bare ndarrays and a Function's
    optional ``vjp`` (its numpy twin of ``backward``) runs when it has one: the
    hot path then costs one numpy call per node. With ``create_graph`` they are
    Tensors and every rule runs in engine ops, recording the backward graph."""
    _check_outputs(outputs)
    raw = not create_graph
    leaf_grads: dict[Tensor, Any] = {}
    retained: dict[Tensor, Tensor] = {}
    buffers: dict[Node, list[Any]] = {}
    for out, g in zip(outputs, root_grads):
        assert g is not None
        value = g._data if raw else g
        if out.grad_fn is None:
            leaf_grads[out] = _add(leaf_grads.get(out), value)
            continue
        buf = buffers.setdefault(out.grad_fn, [None] * out.grad_fn.n_outputs)
        buf[out._output_nr] = _add(buf[out._output_nr], value)

    # the nodes run by decreasing creation sequence (a topological order, see Node.seq),
    # each once its gradients are all in: a heap of those a gradient reached so far, so
    # no walk of the whole graph before the pass (PyTorch's ready queue)
    heap = [(-node.seq, node) for node in buffers]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    # a node reached while no other waits is next in any case: held here, not pushed (a
    # chain never touches the heap)
    ready: Node | None = None
    capture_edges: dict[tuple[Node, int], list[int]] = {}
    capture_leaf: dict[int, list[int]] = {}
    captured: list[Any] = []
    needed: set[Node] | None = None
    if inputs is not None:
        for i, t in enumerate(inputs):
            if t.grad_fn is None:
                capture_leaf.setdefault(id(t), []).append(i)
            else:
                capture_edges.setdefault((t.grad_fn, t._output_nr), []).append(i)
        captured = [None] * len(inputs)
        order = _topological_order(list(buffers))
        needed = _needed(order, set(capture_edges), set(capture_leaf))
    capture_nodes = {node for node, _ in capture_edges}
    if run_inputs and needed is not None:
        needed |= capture_nodes
    several_roots = len(outputs) > 1

    executed: list[Node] = []
    check = interrupt.current()  # a caller's deadline: called before each node runs
    user_fp = fpstate.current()  # hooks are user code: the user's numpy state
    quiet = fpstate.quiet_on()  # inf and NaN are answers, not numpy warnings
    nan_check = anomaly.checks_nan()
    node = None
    try:
        with set_grad_enabled(create_graph):
            while ready is not None or heap:
                if ready is not None:
                    node, ready = ready, None
                else:
                    node = pop(heap)[1]
                grads = buffers.pop(node)
                if len(grads) == 1:
                    if grads[0] is None:
                        continue
                elif all(g is None for g in grads):
                    continue
                runs = needed is None or node in needed
                if not runs and several_roots and node not in capture_nodes:
                    continue  # a root off every path: PyTorch's GraphRoot never reaches it
                # PyTorch captures a gradient before the tensor's hooks when the node also
                # runs (it leads to another input), after them when it is only captured
                if capture_edges and runs:
                    _capture(node, grads, capture_edges, captured)
                if node.tensor_refs:
                    user = fpstate.restore(user_fp)
                    try:
                        _tensor_hooks(node, grads, retained, raw)
                    finally:
                        fpstate.quiet_off(user)
                if capture_edges and not runs:
                    _capture(node, grads, capture_edges, captured)
                if not runs:
                    continue
                if node.pre_hooks:
                    user = fpstate.restore(user_fp)
                    try:
                        grads = _node_pre_hooks(node, grads, raw)
                    finally:
                        fpstate.quiet_off(user)
                incoming = grads
                if len(grads) > 1 and node.materialize_grads and any(g is None for g in grads):
                    # no gradient came: zeros
                    grads = [
                        g if g is not None else _zeros(*node.meta(nr), raw)
                        for nr, g in enumerate(grads)
                    ]
                if node.freed:
                    node._check_alive()
                if check is not None:
                    check()
                fn = node.fn
                if not raw:
                    in_grads = fn.backward(node, *grads)
                elif fn.vjp is not None:
                    in_grads = fn.vjp(node, *grads)
                else:
                    in_grads = fn.backward(
                        node, *[None if g is None else Tensor._make(g) for g in grads]
                    )
                    in_grads = (
                        tuple(None if g is None else g._data for g in in_grads)
                        if type(in_grads) is tuple
                        else None
                        if in_grads is None
                        else in_grads._data
                    )
                if type(in_grads) is not tuple:
                    in_grads = (in_grads,)
                if node.post_hooks:
                    user = fpstate.restore(user_fp)
                    try:
                        in_grads = _node_post_hooks(node, in_grads, incoming, raw)
                    finally:
                        fpstate.quiet_off(user)
                if nan_check:
                    anomaly.check_gradients(node.name, in_grads)
                executed.append(node)
                for edge, g in zip(node.next_edges, in_grads):
                    if edge is None or g is None:
                        continue
                    target, nr = edge
                    is_node = type(target) is not Tensor
                    if is_node:
                        if target.output_meta is None:
                            shape, dtype = target.out_shape, target.out_dtype
                        else:
                            shape, dtype = target.output_meta[nr]
                    else:
                        shape, dtype = target._data.shape, target._data.dtype
                    if dtype.kind == "c" and not node.fn.complex_ok:
                        # a backward written for reals reached a complex input: refuse
                        # rather than give a wrong gradient (complex_ok marks the right ones)
                        no_complex_gradient(node.fn)
                    gd = g.dtype  # the same dtype is nearly always the same object
                    if g.shape != shape or (gd is not dtype and gd != dtype):
                        g = _fit(node, g, shape, dtype, raw, edge)
                    if is_node:
                        if (
                            needed is not None
                            and target not in needed
                            and target not in capture_nodes
                        ):
                            continue
                        pending = buffers.get(target)
                        if pending is None:  # the first gradient to reach it: no sum
                            pending = buffers[target] = [None] * target.n_outputs
                            pending[nr] = g
                            if ready is None and not heap:
                                ready = target
                            else:
                                if ready is not None:
                                    push(heap, (-ready.seq, ready))
                                    ready = None
                                push(heap, (-target.seq, target))
                        else:
                            pending[nr] = _add(pending[nr], g)
                    elif inputs is None or id(target) in capture_leaf:
                        leaf_grads[target] = _add(leaf_grads.get(target), g)
    except Exception:
        if anomaly.OPEN[0]:
            anomaly.report(node)
        raise
    finally:
        fpstate.quiet_off(quiet)

    if inputs is not None:
        for t, g in leaf_grads.items():
            for idx in capture_leaf.get(id(t), ()):
                captured[idx] = g
    if raw:
        leaf_grads = {t: Tensor._make(g) for t, g in leaf_grads.items()}
        captured = [None if g is None else Tensor._make(g) for g in captured]
    return leaf_grads, retained, captured, executed


def _capture(
    node: Node,
    grads: list[Any],
    capture_edges: dict[tuple[Node, int], list[int]],
    captured: list[Any],
) -> None:
    for nr, g in enumerate(grads):
        if g is not None:
            for idx in capture_edges.get((node, nr), ()):
                captured[idx] = g


def _check_outputs(outputs: list[Tensor]) -> None:
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise NoGradFnError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )


def _zeros(shape: tuple[int, ...], dtype: np.dtype, raw: bool) -> Any:
    z = np.zeros(shape, dtype)
    return z if raw else Tensor._make(z)


def _free(executed: list[Node], tag: Any) -> None:
    for node in executed:
        node.release(tag)


def _fit(
    node: Node, g: Any, shape: tuple[int, ...], dtype: np.dtype, raw: bool, edge: tuple[Any, int]
) -> Any:
    """Reduce a broadcast gradient to its input's shape and cast it to its dtype."""
    if g.shape != shape:
        if not node.fn.broadcasts or not _expandable(shape, g.shape):
            raise InternalVJPError(
                f"Function {node.name} returned an invalid gradient at index "
                f"{_position(node, edge)} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}"
            )
        g = sum_to_array(np.asarray(g), shape) if raw else sum_to(g, shape)
    if g.dtype != dtype:
        if raw:  # a complex gradient of a real input is its real part (torch's handle_r_to_c)
            g = np.asarray(g)
            g = (g.real if g.dtype.kind == "c" and dtype.kind != "c" else g).astype(dtype)
        else:
            g = cast(g, dtype)
    return g


def _hook_values(grads: Any, raw: bool) -> tuple[Any, ...]:
    return tuple(None if g is None else Tensor._make(g) if raw else g for g in grads)


def _hook_name(hook: Any) -> str:
    return str(getattr(hook, "__name__", "<unknown>"))


def _check_hook_value(hook: Any, original: Any, new: Any) -> None:
    """PyTorch's ``check_single_result``: a hook may not change a gradient's dtype or size."""
    if not isinstance(new, Tensor):
        raise GradientTypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if original is None:
        return
    if new.dtype != original.dtype:
        raise BadArgumentsError(
            f"hook '{_hook_name(hook)}' has changed the type of value (was "
            f"torch.{dtypes.type_name(original.dtype)}Tensor got "
            f"torch.{dtypes.type_name(new.dtype)}Tensor)"
        )
    if new.shape != original.shape:
        raise BadArgumentsError(f"hook '{_hook_name(hook)}' has changed the size of value")


def _apply_tensor_hooks(hooks: list[Any], g: Tensor) -> Tensor:
    """A tensor's hooks in order, each on the previous one's result; one removed meanwhile
    still runs this time (PyTorch iterates over what was registered when it started)."""
    for hook in list(hooks):
        new = hook(g)
        if new is not None:
            _check_hook_value(hook, g, new)
            g = new
    return g


def _hook_result(hook: Any, result: Any, original: tuple[Any, ...]) -> tuple[Any, ...]:
    """PyTorch's ``check_result`` for a node hook's return value."""
    if not isinstance(result, tuple):
        raise GradientTypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(original):
        raise BadArgumentsError(
            f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
            f"{len(result)}, but expected {len(original)})"
        )
    for old, new in zip(original, result):
        if new is not None:
            if old is None:
                raise BadArgumentsError("can't replace a None gradient with a non-None value")
            _check_hook_value(hook, old, new)
    return result


def _node_pre_hooks(node: NodeHooks, grads: list[Any], raw: bool) -> list[Any]:
    """``Node.register_prehook`` hooks, on the gradients of the node's outputs."""
    values = _hook_values(grads, raw)
    for hook in list(node.pre_hooks or ()):
        new = hook(values)
        if new is not None:
            values = _hook_result(hook, new, values)
    return [None if g is None else g._data if raw else g for g in values]


def _node_post_hooks(
    node: Node, in_grads: tuple[Any, ...], incoming: list[Any], raw: bool
) -> tuple[Any, ...]:
    """``Node.register_hook`` hooks: ``hook(grad_inputs, grad_outputs)`` after the rule."""
    outs = _hook_values([None if e is None else g for e, g in zip(node.next_edges, in_grads)], raw)
    ins = _hook_values(incoming, raw)
    for hook in list(node.post_hooks or ()):
        new = hook(outs, ins)
        if new is not None:
            outs = _hook_result(hook, new, outs)
    return tuple(None if g is None else g._data if raw else g for g in outs)


def _expandable(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    """PyTorch's ``is_expandable_to``: ``shape`` broadcasts to ``to``."""
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


def _tensor_hooks(node: Node, grads: list[Any], retained: dict[Tensor, Tensor], raw: bool) -> None:
    """Run a non-leaf tensor's hooks on its gradient and keep it if it retains grad; an
    output no gradient reached keeps ``.grad`` None, as in PyTorch."""
    for nr, ref in node.tensor_refs or ():
        t = ref()
        # the node as last set: a view made stale by a write since keeps its hooks here
        # until its grad_fn is read (PyTorch moves them only when it regenerates it)
        if t is None or t._grad_fn is not node or grads[nr] is None:
            continue
        g = Tensor._make(grads[nr]) if raw else grads[nr]
        if t._hooks:
            g = _apply_tensor_hooks(t._hooks, g)
        grads[nr] = g._data if raw else g
        if t._retains_grad:
            retained[t] = g


def _commit(
    grads: dict[Tensor, Tensor], create_graph: bool, fresh: set[int], inplace: bool = True
) -> list[Tensor]:
    """Accumulate into ``.grad`` the way AccumulateGrad does (in place for leaves, a new
    sum for non-leaf tensors, as PyTorch does); never alias two grads."""
    touched = []
    for t, g in grads.items():
        if t.grad_fn is None and t._hooks:
            g = _apply_tensor_hooks(t._hooks, g)
        acc: AccumulateGrad | None = getattr(t, "_grad_acc", None) if inplace else None
        if acc is not None and acc.pre_hooks:
            (g,) = _node_pre_hooks(acc, [g], False)
        if inplace and not t.requires_grad_flag and t.grad_fn is None:
            continue  # AccumulateGrad skips a leaf that stopped requiring grad after its use
        old = t._grad
        if old is None:
            data = g._data
            if create_graph:
                # AccumulateGrad copies under grad mode: a fresh, dense .grad (an expanded
                # gradient would refuse a later in-place zero_), recorded as PyTorch records
                # it: a leaf's as CopyBackwards (clone_obey_contract), a retained one's clone
                if not g.requires_grad:
                    t._grad = Tensor._make(np.array(data, copy=True, order="C"))
                elif inplace:
                    t._grad = CopyBackwards.apply(Tensor._make(np.empty(data.shape, data.dtype)), g)
                else:
                    t._grad = clone(g)
            else:
                if t._data.flags.c_contiguous and not data.flags.c_contiguous:
                    # PyTorch's layout contract: a .grad with the leaf's strides
                    data = np.array(data, copy=True, order="C")
                elif not (data.flags.owndata and data.flags.writeable) or id(data) in fresh:
                    data = np.array(data, copy=True)
                fresh.add(id(data))
                t._grad = Tensor._make(data)
        elif not inplace or create_graph or old.requires_grad or not old._data.flags.writeable:
            t._grad = old + g
        else:
            np.add(old._data, g._data, out=old._data, casting="unsafe")
            old._vc[0] += 1
        touched.append(t)
        if acc is not None:
            for hook in list(acc.post_acc_hooks):
                if hook(t) is not None:
                    raise BadArgumentsError("Tensor post accumulate grad hooks should return None.")
            for post in list(acc.post_hooks or ()):
                post((), (g,))
    return touched


def _leaf_hooks(inputs: list[Tensor], captured: list[Tensor | None]) -> list[Tensor | None]:
    """A leaf input's hooks (PyTorch's pre-hooks of its AccumulateGrad) run before its
    gradient is captured, once per leaf however often it is listed."""
    done: dict[int, Tensor | None] = {}
    out = list(captured)
    for i, (t, g) in enumerate(zip(inputs, captured)):
        if t.grad_fn is not None or not t._hooks or g is None:
            continue
        if id(t) not in done:
            done[id(t)] = _apply_tensor_hooks(t._hooks, g)
        out[i] = done[id(t)]
    return out


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | dict[str, Tensor] | None = None,
    *,
    tag: Any = None,
) -> list[Tensor]:
    """``torch.autograd.backward``. Returns the tensors whose ``.grad`` changed;
    ``tag`` is recorded on the nodes this call frees (for error hints). With
    ``inputs``, only their ``.grad`` accumulates, non-leaf tensors included."""
    if create_graph:
        warnings.warn(CREATE_GRAPH_CYCLE_WARNING, UserWarning, stacklevel=2)
    wanted = None if inputs is None else _inputs_list(inputs, "backward")
    if wanted is not None and not wanted:
        raise BadLengthError("`inputs` argument to `backward()` cannot be empty.")
    outputs = _as_list(tensors, "tensors")
    root_grads = _make_root_grads(outputs, _grads_list(grad_tensors, len(outputs)), "grad_output")
    if retain_graph is None:
        retain_graph = create_graph
    _check_outputs(outputs)  # before the inputs, as PyTorch
    for t in wanted or ():
        if not isinstance(t, Tensor):
            raise GradientTypeError("inputs must be Tensors")
        if not t.requires_grad:
            raise NoGradFnError("can't retain_grad on Tensor that has requires_grad=False")
    for t in wanted or ():
        t.retain_grad()  # as PyTorch does: a non-leaf input keeps retaining afterwards
    leaf_grads, retained, captured, executed = _run(
        outputs, root_grads, create_graph=create_graph, inputs=wanted, run_inputs=True
    )
    if not retain_graph:
        _free(executed, tag)
    if wanted is not None:
        # non-leaf inputs got theirs through retain_grad, like every retaining tensor
        # whose node ran; leaves only through their capture
        leaves = {t: g for t, g in zip(wanted, captured) if g is not None and t.grad_fn is None}
    else:
        leaves = leaf_grads
    fresh = {id(g._data) for g in root_grads if g is not None}
    with set_grad_enabled(create_graph):  # AccumulateGrad runs in the backward's grad mode
        return _commit(leaves, create_graph, fresh) + _commit(retained, create_graph, fresh, False)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor] | dict[str, Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
    *,
    tag: Any = None,
) -> Any:
    """``torch.autograd.grad``: gradients of outputs w.r.t. inputs, ``.grad`` untouched.
    Only the graph between the outputs and the inputs runs (and is freed); an input
    given twice gets its gradient twice; a dict of inputs gives a dict of gradients.
    With ``is_grads_batched`` the first dimension of each grad_output is a batch: one
    vector-Jacobian product per entry, stacked (PyTorch uses vmap; this loops)."""
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    if is_grads_batched:
        return _batched_grad(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
            tag,
        )
    if materialize_grads and allow_unused is False:
        raise GradientValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_list(outputs, "outputs")
    ins = _inputs_list(inputs, "grad")
    if not ins:
        raise BadLengthError("`inputs` argument to `grad()` cannot be empty.")
    root_grads = _make_root_grads(outs, _grads_list(grad_outputs, len(outs)), "grad_output")
    _check_outputs(outs)  # PyTorch checks the outputs before the inputs
    for t in ins:
        if not isinstance(t, Tensor):
            raise GradientTypeError("inputs must be Tensors")
        if not t.requires_grad:
            raise NoGradFnError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    _, retained, captured, executed = _run(outs, root_grads, create_graph=create_graph, inputs=ins)
    captured = _leaf_hooks(ins, captured)
    if not allow_unused:
        for index, g in enumerate(captured):
            if g is None:
                raise UnusedInputError(UNUSED_INPUT_MESSAGE.format(index=index), index=index)
    if not retain_graph:
        _free(executed, tag)
    # the nodes that ran updated the grads their tensors retain, as in PyTorch
    with set_grad_enabled(create_graph):
        _commit(retained, create_graph, {id(g._data) for g in captured if g is not None}, False)
    if materialize_grads:
        captured = [
            g if g is not None else Tensor._make(np.zeros(t.shape, t.dtype), create_graph)
            for g, t in zip(captured, ins)
        ]
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), captured))
    return tuple(captured)


BATCHED_SHAPE_MESSAGE = (
    "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the "
    "batch dimension. The sizes of the remaining dimensions are expected to match the shape of "
    "corresponding output, but a mismatch was detected: grad_output[{i}] has a shape of {got} "
    "and output[{i}] has a shape of {want}. If you only want some tensors in `grad_output` to "
    "be considered batched, consider using vmap."
)


def _batched_grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any,
    retain_graph: bool | None,
    create_graph: bool,
    allow_unused: bool | None,
    materialize_grads: bool,
    tag: Any,
) -> Any:
    """``grad(..., is_grads_batched=True)``: one ``grad`` call per batch entry, stacked."""
    outs = _as_list(outputs, "outputs")
    grads = _grads_list(grad_outputs, len(outs))
    for i, (out, g) in enumerate(zip(outs, grads)):
        if isinstance(g, Tensor) and isinstance(out, Tensor) and g.shape[1:] != out.shape:
            raise ShapeMismatchError(
                BATCHED_SHAPE_MESSAGE.format(
                    i=i, got=_size_str(g.shape[1:]), want=_size_str(out.shape)
                ),
                index=i,
            )
    sizes = [g.shape[0] for g in grads if isinstance(g, Tensor)]
    if not sizes:  # nothing batched: an ordinary call
        return grad(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused=allow_unused,
            materialize_grads=materialize_grads,
            tag=tag,
        )
    n = sizes[0]
    keep = create_graph if retain_graph is None else retain_graph
    per = [
        grad(
            outputs,
            inputs,
            [g[k] if isinstance(g, Tensor) else g for g in grads],
            retain_graph=True if k < n - 1 else keep,
            create_graph=create_graph,
            allow_unused=allow_unused,
            materialize_grads=materialize_grads,
            tag=tag,
        )
        for k in range(n)
    ]
    stack = OPS["stack"].fn

    def stacked(column: list[Any]) -> Any:
        return None if column[0] is None else stack(column)

    if type(inputs) is dict:
        return {key: stacked([p[key] for p in per]) for key in inputs}
    return tuple(stacked([p[j] for p in per]) for j in range(len(per[0])))


# ``torch.autograd.forward_ad``: ``from engine.autograd import forward_ad`` and, since
# this module is no package, ``import engine.autograd.forward_ad`` through sys.modules
from . import forward_ad as forward_ad  # noqa: E402 - it imports grad from here

sys.modules[f"{__name__}.forward_ad"] = forward_ad

# ``torch.autograd.functional`` (jacobian, hessian, vjp, jvp, vhp, hvp) and
# ``torch.autograd.gradcheck``/``gradgradcheck``, the same way
from . import functional as functional  # noqa: E402 - it imports grad from here
from .gradcheck import gradcheck as gradcheck  # noqa: E402
from .gradcheck import gradgradcheck as gradgradcheck  # noqa: E402

sys.modules[f"{__name__}.functional"] = functional
