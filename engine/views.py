"""In-place writes, through views or on their bases, as PyTorch's autograd tracks them.

A view shares its base's memory and version counter and knows how to replay
itself from its root base (``function.ViewInfo.chain``: the view ops applied, in
order; making views and regenerating their history is part of recording, in
``function``).
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

import weakref
from typing import Any

import numpy as np

from . import dtypes, dual
from .dual import FROM_BACKWARD, LINEAR, LIVE
from .errors import BadArgumentsError, InplaceViewError, ShapeMismatchError
from .function import (
    AsStridedBackward0,
    Function,
    Node,
    _NoCtx,
    edge_of,
    set_history,
)
from .memory_overlap import assert_no_partial_overlap
from .overlapping_writes import iteration_order, self_overlaps
from .registry import OPS
from .tensor import NO_GRAD_VIEW_MESSAGE, Tensor, _snapshot, check_multi_output


def check_partial_overlap(target: Tensor, sources: tuple[Any, ...]) -> None:
    """PyTorch's ``assert_no_partial_overlap`` before an in-place write: a source that
    shares only part of the target's memory (or all of it in another layout) would be
    read after being overwritten. Sources it cannot judge (expanded) pass, as there."""
    for src in sources:
        assert_no_partial_overlap(target, src)


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
    node.order = iteration_order(view._data) if self_overlaps(view._data) else None
    node.view_dtype = view._data.dtype
    set_history(base, node, 0)


# -- the rules ----------------------------------------------------------------


def _replace(
    g: np.ndarray, index: np.ndarray, values: np.ndarray | None, order: Any = None
) -> np.ndarray:
    """``order``: the axes in the order PyTorch's copy visits them, when elements of the
    region share a position (the last visit's value stays, as there)."""
    out = np.array(g, order="C", copy=True)
    if values is not None and order is not None:
        index, values = index.transpose(order), values.transpose(order)
    out.reshape(-1)[index.reshape(-1)] = 0 if values is None else values.reshape(-1)
    return out


class _ReplaceRegion(Function):
    """``g`` with its elements at ``index`` replaced by ``values`` (zeros when absent).
    PyTorch computes it by writing into a view of a copy of ``g``, so it records a
    CopySlices node."""

    name = "CopySlices"
    jvp = LINEAR

    @staticmethod
    def forward(
        ctx: Any, g: Tensor, values: Tensor | None, *, index: np.ndarray, order: Any = None
    ) -> np.ndarray:
        ctx.index = index
        return _replace(g._data, index, None if values is None else values._data, order)

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
    jvp = FROM_BACKWARD
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
            r0 = Tensor._make(r0._data.astype(ctx.view_dtype))
        return (_ReplaceRegion.apply(g, r0, index=index, order=ctx.order), *res[1:])


# -- the in-place writes themselves, recorded as PyTorch records them ---------


def _zeros_like(g: Tensor) -> Tensor:
    return Tensor._make(np.zeros(g._data.shape, g._data.dtype))


class CopyBackwards(Function):
    """``dst.copy_(src)``: src broadcast and cast into dst's shape and dtype."""

    name = "CopyBackwards"
    jvp = LINEAR
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
    jvp = LINEAR
    jvp_params = {"value": 0}

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, value: Any) -> np.ndarray:
        return np.full(a._data.shape, value, a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _zeros_like(g)


class FillBackward3(Function):
    """``fill_(value)`` with a 0-d tensor, which receives the sum of the gradient."""

    name = "FillBackward3"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, value: Tensor) -> np.ndarray:
        return np.full(a._data.shape, value._data, a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        need_a, need_v = ctx.needs_input_grad
        gv = OPS["sum"].fn(g) if need_v else None  # PyTorch's grad.sum()
        return (_zeros_like(g) if need_a else None), gv


class ZeroBackward0(Function):
    name = "ZeroBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.zeros(a._data.shape, a._data.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _zeros_like(g)


# -- writing in place -------------------------------------------------------------


def dual_write(t: Tensor, *others: Any) -> bool:
    """Whether an in-place write to ``t`` with ``others`` must carry tangents (forward
    AD is on and one of them has one): then it takes the path through ``inplace``."""
    level = dual.current()
    return level is not None and dual.any_tangent((t, *others), level)


def write_tangent(t: Tensor, result: Tensor | None) -> None:
    """After ``t`` took ``result``'s values in place, its tangent takes ``result``'s
    (zeros if it has none), written into the tangent ``t`` has, so views of it see the
    write, as in PyTorch. A view without a tangent gets one as a view of a tangent its
    base gets (zeros) first."""
    level = dual.current()
    if level is None:
        return
    new = None if result is None else dual.tangent(result, level)
    old = dual.tangent(t, level)
    if new is None and old is None:
        return
    value = np.zeros((), t._data.dtype) if new is None else new._data
    if old is not None:
        old._write(value)
        return
    info = t._view
    if info is None:
        tan = Tensor._make(np.array(np.broadcast_to(value, t._data.shape), t._data.dtype))
        dual.set_tangent(t, level, tan)
        return
    base = info.base
    root = dual.tangent(base, level)
    if root is None:
        root = Tensor._make(np.zeros(base._data.shape, base._data.dtype))
        dual.set_tangent(base, level, root)
    arr = root._data
    ctx = _NoCtx()
    for cls, params, nr in info.chain:  # the view replayed on the base's tangent
        out = cls.forward(ctx, Tensor._make(arr), **params)
        arr = out if nr is None else out[nr]
    tan = Tensor._make(arr)
    tan._write(value)
    dual.set_tangent(t, level, tan)


def inplace(t: Tensor, result: Tensor) -> Tensor:
    """Finish an in-place op on ``t`` given its out-of-place result: write, bump the
    version, rebase the history. ``result``'s node read ``t``'s pre-write value as its
    input 0."""
    t._check_inplace()
    if result._data.shape != t._data.shape:
        raise RuntimeError(
            f"output with shape {list(t.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    if LIVE[0]:
        write_tangent(t, result)
    fn = result._grad_fn
    info = t._view
    if fn is None:
        t._write(result._data)
        return t
    nr = result._output_nr
    if info is not None:
        check_multi_output(t)
        if info.no_grad:
            raise InplaceViewError(NO_GRAD_VIEW_MESSAGE)
        old_edge = edge_of(t)
        t._write(result._data)
        rebase(t, fn, nr, old_edge)
        t.grad_fn  # noqa: B018 - regenerated now, as PyTorch's rebase_history does
    else:
        t._write(result._data)
        set_history(t, fn, nr)
    if fn._result is not None:
        # the op saved its result: that is now this tensor, version-checked as such
        fn._result[nr] = (t._data, t._vc, t._vc[0])
        if info is not None and t._grad_fn is not None:
            held = (weakref.ref(t._grad_fn), t._output_nr)
            fn.result_views = {**(fn.result_views or {}), nr: held}
    return t


def zero_(self: Tensor) -> Tensor:
    """``t.zero_()``."""
    self._check_inplace()
    if self._records() or dual_write(self):
        return inplace(self, ZeroBackward0.apply(_snapshot(self)))
    return self._write(np.zeros((), dtype=self._data.dtype))


def fill_(self: Tensor, value: Any) -> Tensor:
    """``t.fill_(value)``: a number, or a 0-d tensor that receives the gradient's sum."""
    self._check_inplace()
    if isinstance(value, complex) and self._data.dtype.kind != "c" and value.imag:
        raise BadArgumentsError(  # torch's check: a complex value into a real tensor
            f"value cannot be converted to type {dtypes.cpp_name(self._data.dtype)} without "
            "overflow"
        )
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise BadArgumentsError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        if self._records(value) or dual_write(self, value):
            source = _snapshot(self) if self.requires_grad_flag else self
            return inplace(self, FillBackward3.apply(source, value))
        return self._write(value._data)
    if self._records() or dual_write(self):
        return inplace(self, FillBackward2.apply(_snapshot(self), value=value))
    return self._write(np.asarray(value if isinstance(value, complex) else float(value)))


def copy_(self: Tensor, src: Tensor | Any) -> Tensor:
    """``t.copy_(src)``: write ``src`` (broadcast to this shape, cast to this dtype)."""
    s = src if isinstance(src, Tensor) else Tensor._make(np.asarray(src))
    self._check_inplace()
    try:
        np.broadcast_to(s._data, self._data.shape)
    except ValueError:
        raise ShapeMismatchError(_copy_shape_message(self.shape, s.shape)) from None
    if self._records(s) or dual_write(self, s):
        source = _snapshot(self) if self.requires_grad_flag else self
        return inplace(self, CopyBackwards.apply(source, s))
    return self._write(s._data)


def _copy_shape_message(dst: tuple[int, ...], src: tuple[int, ...]) -> str:
    for i in range(1, max(len(dst), len(src)) + 1):
        a = dst[-i] if i <= len(dst) else 1
        b = src[-i] if i <= len(src) else 1
        if a != b and b != 1:
            return (
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                f"non-singleton dimension {max(len(dst), len(src)) - i}"
            )
    return f"expand: the number of sizes provided ({len(dst)}) must be greater or equal"


# the in-place Tensor methods written here (``engine.methods`` binds them)
TENSOR_METHODS = {"zero_": zero_, "fill_": fill_, "copy_": copy_}
