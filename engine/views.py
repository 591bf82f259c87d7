"""Views and in-place writes, as PyTorch's autograd tracks them.

A view shares its base's memory and version counter and knows how to replay
itself from its root base (``ViewInfo.chain``: the view ops applied, in order).
Replaying the chain on ``arange(base.size)`` gives the view's *index map*: for
each view element, the flat position of the base element it aliases. Every
rule here is written with that map:

* an in-place op on a view rebases the base's history onto ``CopySlices``,
  which wraps the in-place op's node (PyTorch's ``CopySlices``): the base's
  gradient passes unchanged outside the view's region, and through the op's
  rule inside it;
* a view whose version differs from the one its ``grad_fn`` was made at (its
  base, or a sibling view, was written in place) regenerates its ``grad_fn``
  lazily as ``AsStridedBackward0`` on the base's current history, as PyTorch
  does when view replay is off (its default on CPU);
* hooks registered before an in-place op stay with the old node; a retained
  grad moves to the new one (PyTorch's ``update_tensor_hooks_on_new_gradfn``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import function
from .errors import BadArgumentsError, LeafInplaceError
from .function import Function, Node, _NoCtx

if TYPE_CHECKING:
    from .tensor import Tensor

OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
PARTIAL_OVERLAP_MESSAGE = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation."
)
NO_GRAD_VIEW_MESSAGE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)
STALE_NO_GRAD_VIEW_MESSAGE = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) "
    "or both outside (if you want the inplace to be tracked)."
)
MULTI_OUTPUT_VIEW_MESSAGE = (
    "Output {nr} of {name} is a view and is being modified inplace. This view is the output of a "
    "function that returns multiple views. Such functions do not allow the output views to be "
    "modified inplace. You should replace the inplace operation by an out-of-place one."
)
_CUSTOM_VIEW_TAIL = (
    "This view was created inside a custom Function (or because an input was returned as-is) "
    "and the autograd logic to handle view+inplace would override the custom backward "
    "associated with the custom Function, leading to incorrect gradients. This behavior is "
    "forbidden. You can fix this by cloning the output of the custom Function."
)
NO_GRAD_CUSTOM_VIEW_MESSAGE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    + _CUSTOM_VIEW_TAIL
)
DETACH_VIEW_MESSAGE = (
    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
    "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
    "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
    "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
)


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

    def index(self) -> np.ndarray:
        """Flat positions in the base of each view element (the view replayed on arange)."""
        if self._index is None:
            base = self.base._data
            arr = np.arange(base.size, dtype=np.int64).reshape(base.shape)
            ctx = _NoCtx()
            for cls, params, nr in self.chain:
                out = cls.forward(ctx, function._tensor_cls._make(arr), **params)
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
    view._view = ViewInfo(
        root,
        chain,
        parent._vc[0],
        not grad_on,
        None if nr is None else (cls, nr),
    )
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
                    ghost = function._tensor_cls._make(t._data, True, old, t._output_nr)
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


def refresh(t: Tensor) -> None:
    """Regenerate a stale view's ``grad_fn`` (PyTorch's ``VariableHooks::grad_fn``)."""
    info = t._view
    assert info is not None
    base = info.base
    if t._grad_fn is None and not base.requires_grad:
        return
    if info.no_grad:
        raise BadArgumentsError(STALE_NO_GRAD_VIEW_MESSAGE)
    if info.multi is not None:
        raise BadArgumentsError(_multi_message(t, info, stale=True))
    node: Any = AsStridedBackward0._node_type(AsStridedBackward0)  # the rule's context
    node.next_edges = (edge_of(base),)
    node.out_shape, node.out_dtype = t._data.shape, t._data.dtype
    node.index = info.index()
    node.in_shape = base._data.shape
    info.attr_version = t._vc[0]
    set_history(t, node, 0)


def check_inplace(t: Tensor, grad_on: bool) -> None:
    """PyTorch's refusals before an in-place write (shared memory, leaves, views)."""
    if grad_on:
        if t.requires_grad_flag and t._grad_fn is None and t._view is None:
            raise LeafInplaceError(LEAF_INPLACE_MESSAGE)
        info = t._view
        if info is not None:
            base = info.base
            # how the view was made is judged first (PyTorch's handle_view_on_rebase)
            if info.no_grad and base.requires_grad:
                raise BadArgumentsError(
                    NO_GRAD_CUSTOM_VIEW_MESSAGE if info.custom else NO_GRAD_VIEW_MESSAGE
                )
            if t.requires_grad_flag or base.requires_grad:
                check_multi_output(t)
            if base.requires_grad_flag and base._grad_fn is None:
                raise LeafInplaceError(VIEW_OF_LEAF_INPLACE_MESSAGE)
    data = t._data
    if (
        0 in data.strides
        and data.size  # an empty tensor has no element to share (numpy may give it 0 strides)
        and any(s == 0 and n > 1 for s, n in zip(data.strides, data.shape))
    ):
        raise BadArgumentsError(OVERLAP_MESSAGE)


def _dense(a: np.ndarray) -> bool:
    """PyTorch's ``is_non_overlapping_and_dense``: the strides, sorted, are those of a
    contiguous layout (size-1 dims ignored)."""
    dims = sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def check_partial_overlap(target: Tensor, sources: tuple[Any, ...]) -> None:
    """PyTorch's ``assert_no_partial_overlap`` before an in-place write: a source that
    shares only part of the target's memory (or all of it in another layout) would be
    read after being overwritten. Sources it cannot judge (expanded) pass, as there."""
    out = target._data
    if out.size == 0 or not _dense(out):
        return
    lo, hi = np.lib.array_utils.byte_bounds(out)
    for src in sources:
        data = getattr(src, "_data", None)
        if src is target or not isinstance(data, np.ndarray) or data.size == 0:
            continue
        if not _dense(data):
            continue
        slo, shi = np.lib.array_utils.byte_bounds(data)
        if (slo, shi) == (lo, hi):
            if data.strides != out.strides:
                raise BadArgumentsError(PARTIAL_OVERLAP_MESSAGE)
        elif slo < hi and lo < shi:
            raise BadArgumentsError(PARTIAL_OVERLAP_MESSAGE)


def check_multi_output(t: Tensor) -> None:
    info = t._view
    if info is not None and info.multi is not None:
        raise BadArgumentsError(_multi_message(t, info, stale=False))


_MULTI_TAIL = MULTI_OUTPUT_VIEW_MESSAGE.split("modified inplace. ", 1)[1]


def _multi_message(t: Tensor, info: ViewInfo, stale: bool) -> str:
    """PyTorch's handle_view_on_rebase text: who made the view (its node, or no_grad mode
    when it has none), then why writing it is refused (multi-output or custom Function)."""
    assert info.multi is not None
    cls, nr = info.multi
    what = "its base or another view of its base has been" if stale else "is being"
    if t._grad_fn is None:
        head = f"A view was created in no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        head = f"Output {nr} of {_op_name(cls)} is a view and {what} modified inplace."
    return f"{head} {_CUSTOM_VIEW_TAIL if info.custom else _MULTI_TAIL}"


def _op_name(cls: type[Function]) -> str:
    return re.sub(r"Backward\d*$", "", cls.name)


def _same_edge(a: tuple[Any, int] | None, b: tuple[Any, int] | None) -> bool:
    if a is None or b is None:
        return a is b
    return a[0] is b[0] and a[1] == b[1]


def rebase(view: Tensor, fn: Node, nr: int, old_edge: tuple[Any, int] | None) -> None:
    """An in-place op (node ``fn``, its result ``nr``) wrote through ``view``: the base's
    history becomes CopySlices wrapping ``fn``; the view regenerates from it lazily.
    ``old_edge`` is the view's edge before the write (what ``fn`` read as input 0)."""
    info = view._view
    assert info is not None
    base = info.base
    node: Any = CopySlices._node_type(CopySlices)
    base_edge = edge_of(base)
    if fn.next_edges and _same_edge(fn.next_edges[0], old_edge) and fn.n_outputs == 1:
        node.inner = fn  # PyTorch's form: the op's rule runs on the view's region
        node.next_edges = (base_edge, *fn.next_edges[1:])
    else:  # a composite op: take the new values' gradient as one input
        node.inner = None
        node.next_edges = (base_edge, (fn, nr))
        node.view_shape = view._data.shape
    node.out_shape, node.out_dtype = base._data.shape, base._data.dtype
    node.index = info.index()
    node.view_dtype = view._data.dtype
    set_history(base, node, 0)


LEAF_INPLACE_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE_MESSAGE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)


# -- the rules ----------------------------------------------------------------


def _gather(g: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.asarray(g.reshape(-1)[index])


def _scatter_add(g: np.ndarray, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    flat = np.bincount(index.reshape(-1), weights=g.reshape(-1), minlength=size)
    return flat.astype(g.dtype, copy=False).reshape(shape)


def _replace(g: np.ndarray, index: np.ndarray, values: np.ndarray | None) -> np.ndarray:
    out = np.array(g, order="C", copy=True)
    out.reshape(-1)[index.reshape(-1)] = 0 if values is None else values.reshape(-1)
    return out


class AsStridedBackward0(Function):
    """The elements of the base at ``index`` (a regenerated view's node)."""

    name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, index: np.ndarray) -> np.ndarray:
        ctx.index, ctx.in_shape = index, a._data.shape
        return _gather(a._data, index)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return AsStridedScatterBackward0.apply(g, index=ctx.index, shape=ctx.in_shape)

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> np.ndarray:
        return _scatter_add(g, ctx.index, ctx.in_shape)


class AsStridedScatterBackward0(Function):
    """The adjoint of ``AsStridedBackward0``: ``g`` added into zeros at ``index``."""

    name = "AsStridedScatterBackward0"

    @staticmethod
    def forward(ctx: Any, g: Tensor, *, index: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        ctx.index = index
        return _scatter_add(g._data, index, shape)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> Tensor:
        return AsStridedBackward0.apply(gg, index=ctx.index)


class _ReplaceRegion(Function):
    """``g`` with its elements at ``index`` replaced by ``values`` (zeros when absent)."""

    name = "CopySlicesBackward0"

    @staticmethod
    def forward(ctx: Any, g: Tensor, values: Tensor | None, *, index: np.ndarray) -> np.ndarray:
        ctx.index = index
        return _replace(g._data, index, None if values is None else values._data)

    @staticmethod
    def backward(ctx: Any, gg: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_g, need_v = ctx.needs_input_grad
        ga = _ReplaceRegion.apply(gg, None, index=ctx.index) if need_g else None
        gv = AsStridedBackward0.apply(gg, index=ctx.index) if need_v else None
        return ga, gv


def _as_tuple(res: Any) -> tuple[Any, ...]:
    return res if type(res) is tuple else (res,)


class CopySlices(Function):
    """The base's history after an in-place write through one of its views."""

    name = "CopySlices"
    broadcasts = True  # the wrapped op's other inputs may broadcast

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Any, ...]:
        index, inner = ctx.index, ctx.inner
        g_slice = AsStridedBackward0.apply(g, index=index)
        if inner is None:
            return _ReplaceRegion.apply(g, None, index=index), g_slice
        res = _as_tuple(inner.fn.backward(inner, g_slice))
        r0 = res[0]
        if r0 is not None and r0.dtype != ctx.view_dtype:
            r0 = function._tensor_cls._make(r0._data.astype(ctx.view_dtype))
        return (_ReplaceRegion.apply(g, r0, index=index), *res[1:])

    @staticmethod
    def vjp(ctx: Any, g: np.ndarray) -> tuple[Any, ...]:
        index, inner = ctx.index, ctx.inner
        g_slice = _gather(g, index)
        if inner is None:
            return _replace(g, index, None), g_slice.reshape(ctx.view_shape)
        fn = inner.fn
        if fn.vjp is not None:
            res = _as_tuple(fn.vjp(inner, g_slice))
        else:
            T = function._tensor_cls
            res = tuple(
                None if r is None else r._data
                for r in _as_tuple(fn.backward(inner, T._make(g_slice)))
            )
        r0 = res[0]
        return (_replace(g, index, None if r0 is None else np.asarray(r0)), *res[1:])


# -- the in-place writes themselves, recorded as PyTorch records them ---------


def _zeros_like(g: Tensor) -> Tensor:
    return function._tensor_cls._make(np.zeros(g._data.shape, g._data.dtype))


class CopyBackwards(Function):
    """``dst.copy_(src)``: src broadcast and cast into dst's shape and dtype."""

    name = "CopyBackwards"
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, dst: Tensor, src: Tensor) -> np.ndarray:
        return np.broadcast_to(src._data, dst._data.shape).astype(dst._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_dst, need_src = ctx.needs_input_grad
        return (_zeros_like(g) if need_dst else None), (g if need_src else None)


class FillBackward2(Function):
    """``fill_(number)``: nothing flows back to the overwritten values."""

    name = "FillBackward2"

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, value: Any) -> np.ndarray:
        return np.full(a._data.shape, value, a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _zeros_like(g)


class FillBackward3(Function):
    """``fill_(value)`` with a 0-d tensor, which receives the sum of the gradient."""

    name = "FillBackward3"

    @staticmethod
    def forward(ctx: Any, a: Tensor, value: Tensor) -> np.ndarray:
        return np.full(a._data.shape, value._data, a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_a, need_v = ctx.needs_input_grad
        gv = None
        if need_v:  # a sum written as scattering every element onto position 0
            index = np.zeros(g._data.shape, np.int64)
            gv = AsStridedScatterBackward0.apply(g, index=index, shape=())
        return (_zeros_like(g) if need_a else None), gv


class ZeroBackward0(Function):
    name = "ZeroBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.zeros(a._data.shape, a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _zeros_like(g)
