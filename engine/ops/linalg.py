"""Linear algebra: matmul in all of PyTorch's shape cases, mm, bmm, mv, dot,
outer, t, transpose and linear.

``matmul`` runs one numpy matmul and records one node, named as PyTorch names
the result's ``grad_fn`` (PyTorch's ``_matmul_impl`` builds a chain of views,
mm/bmm and copies; the name of its last link depends on the shapes and on
which operands require grad, and ``_matmul_node`` replays that decision along
with PyTorch's error messages). ``linear`` with a bias is one fused node, as
PyTorch's ``addmm``: its backward is ``g @ W``, ``g.T @ x`` and ``g`` summed
over the batch, with no copies. Every rule has a numpy ``vjp`` twin for
backward passes that record no graph.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..dual import LINEAR, MULTILINEAR
from ..errors import DtypeMismatchError, ShapeMismatchError
from ..function import Function
from ..primitives import conj, conj_array
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, broadcast_shape, normalize_dim
from .arithmetic import AddBackward0, mul
from .shape import reshape, squeeze, unsqueeze

# -- PyTorch's error messages ----------------------------------------------------------------

_CPP_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}


def _cpp(dt: np.dtype) -> str:
    return _CPP_NAMES.get(dtypes.torch_name(dt), str(dt))


def _type(dt: np.dtype) -> str:
    return _TYPE_NAMES.get(dtypes.torch_name(dt), str(dt))


def _no_bool(kernel: str, dt: np.dtype) -> None:
    if dt == dtypes.bool_:
        raise DtypeMismatchError(f"\"{kernel}\" not implemented for 'Bool'")


def _check_mm(m1: tuple[int, int], m2: tuple[int, int], dt1: np.dtype, dt2: np.dtype) -> None:
    if m1[1] != m2[0]:
        raise ShapeMismatchError(
            f"mat1 and mat2 shapes cannot be multiplied ({m1[0]}x{m1[1]} and {m2[0]}x{m2[1]})"
        )
    if dt1 != dt2:
        raise DtypeMismatchError(
            f"expected m1 and m2 to have the same dtype, but got: {_cpp(dt1)} != {_cpp(dt2)}"
        )
    _no_bool("addmm_impl_cpu_", dt1)


def _check_mv(mat: tuple[int, int], vec: int, dt_mat: np.dtype, dt_vec: np.dtype) -> None:
    if mat[1] != vec:
        raise ShapeMismatchError(
            f"size mismatch, got input ({mat[0]}), mat ({mat[0]}x{mat[1]}), vec ({vec})"
        )
    if dt_mat != dt_vec:
        raise DtypeMismatchError(
            "addmv input tensors must have the same dtype, but got "
            f"{_type(dt_vec)}, {_type(dt_mat)}, and {_type(dt_vec)}"
        )
    _no_bool("addmv_impl_cpu", dt_mat)


def _check_dot(n1: int, n2: int, dt1: np.dtype, dt2: np.dtype) -> None:
    if dt1 != dt2:
        raise DtypeMismatchError(
            f"dot : expected both vectors to have same dtype, but found {_type(dt1)} and {_type(dt2)}"
        )
    if n1 != n2:
        raise ShapeMismatchError(
            f"inconsistent tensor size, expected tensor [{n1}] and src [{n2}] to have the same "
            f"number of elements, but got {n1} and {n2} elements respectively"
        )
    _no_bool("dot", dt1)


def _check_bmm(b1: int, m1: int, b2: int, m2: int, dt1: np.dtype, dt2: np.dtype) -> None:
    if (b1, m1) != (b2, m2):
        raise ShapeMismatchError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{b1}, {m1}] but got: [{b2}, {m2}]."
        )
    if dt1 != dt2:
        raise DtypeMismatchError(f"expected scalar type {_type(dt1)} but found {_type(dt2)}")
    _no_bool("bmm", dt1)


# -- views: t, transpose -----------------------------------------------------------------------


class TBackward0(Function):
    name = "TBackward0"
    complex_ok = True
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return a._data.T

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return TBackward0.apply(g)


class TransposeBackward0(Function):
    name = "TransposeBackward0"
    complex_ok = True
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim0: int, dim1: int) -> np.ndarray:
        ctx.dim0, ctx.dim1 = dim0, dim1
        return np.swapaxes(a._data, dim0, dim1) if a._data.ndim else a._data.view()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return TransposeBackward0.apply(g, dim0=ctx.dim0, dim1=ctx.dim1)


def _t(a: Tensor) -> Tensor:
    return TBackward0.apply(a)


def _mT(a: Tensor) -> Tensor:
    n = a._data.ndim
    return TransposeBackward0.apply(a, dim0=n - 2, dim1=n - 1)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3)),
        sample(S.rand(rng, 4), note="1-d"),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng, 0, 3), note="empty"),
    ]
)
def t(input: Tensor) -> Tensor:
    """Transpose of a matrix (0-d and 1-d tensors are returned as they are, as a view)."""
    a = as_tensor(input)
    if a.ndim > 2:
        raise ShapeMismatchError(
            f"t() expects a tensor with <= 2 dimensions, but self is {a.ndim}D"
        )
    return TBackward0.apply(a)


def _transpose_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 0, 1),
        sample(S.rand(rng, 2, 3, 4), -1, 0),
        sample(S.rand(rng, 2, 3), 1, 1, note="same dim"),
        sample(S.rand(rng), 0, -1, note="0-d"),
        sample(S.rand(rng, 0, 3, 2), 0, 2, note="empty"),
    ]


@register(samples=_transpose_samples)
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    a = as_tensor(input)
    return TransposeBackward0.apply(
        a, dim0=normalize_dim(dim0, a.ndim), dim1=normalize_dim(dim1, a.ndim)
    )


# -- products with a fixed shape: dot, mv, mm, bmm --------------------------------------------


def _conj(saved: tuple[Any, ...]) -> tuple[Any, ...]:
    """Saved operands conjugated (None and real tensors as they are): a product's
    gradient reads the other operand's conjugate, PyTorch's rule for complex tensors."""
    return tuple(None if t is None else conj(t) for t in saved)


def _save_crossed(ctx: Any, a: Tensor, b: Tensor) -> None:
    """Save each operand of a product only when the other needs a gradient (its own
    gradient never reads it), as PyTorch does: an in-place edit of an unsaved operand
    before backward is then allowed."""
    need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    ctx.save_for_backward(a if need_b else None, b if need_a else None)


class DotBackward0(Function):
    name = "DotBackward0"
    complex_ok = True  # each gradient reads the other operand conjugated
    jvp = MULTILINEAR  # a product: bilinear in its operands

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> np.ndarray:
        _save_crossed(ctx, a, b)
        return np.asarray(np.dot(a._data, b._data))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = _conj(ctx.saved_tensors)
        need_a, need_b = ctx.needs_input_grad
        return (g * b if need_a else None), (g * a if need_b else None)


class MvBackward0(Function):
    name = "MvBackward0"
    complex_ok = True
    jvp = MULTILINEAR  # a product: bilinear in its operands

    @staticmethod
    def forward(ctx: Any, a: Tensor, v: Tensor) -> np.ndarray:
        _save_crossed(ctx, a, v)
        return np.matmul(a._data, v._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, v = _conj(ctx.saved_tensors)
        need_a, need_v = ctx.needs_input_grad
        return (
            _outer(g, v) if need_a else None,
            MvBackward0.apply(_t(a), g) if need_v else None,
        )


class MmBackward0(Function):
    """``a @ b`` for matrices; BmmBackward0 is the same rule over a batch dimension."""

    name = "MmBackward0"
    complex_ok = True
    jvp = MULTILINEAR  # a product: bilinear in its operands
    ctx_fields = ("shapes",)

    @staticmethod
    def transpose(t: Tensor) -> Tensor:
        return _t(t)

    @staticmethod
    def transpose_array(x: np.ndarray) -> np.ndarray:
        return x.T

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> np.ndarray:
        _save_crossed(ctx, a, b)
        ctx.shapes = a._data.shape, b._data.shape
        return np.matmul(a._data, b._data)

    @classmethod
    def backward(cls, ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:  # type: ignore[override]
        a, b = _conj(ctx.saved_tensors)
        need_a, need_b = ctx.needs_input_grad
        return (
            cls.apply(g, cls.transpose(b)) if need_a else None,
            cls.apply(cls.transpose(a), g) if need_b else None,
        )

    vjp_row = "mlp"  # the numpy twin below earns its place on this bench row

    @classmethod
    def vjp(cls, ctx: Any, g: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:  # type: ignore[override]
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (
            np.matmul(g, cls.transpose_array(conj_array(b._data))) if need_a else None,
            np.matmul(cls.transpose_array(conj_array(a._data)), g) if need_b else None,
        )


class BmmBackward0(MmBackward0):
    name = "BmmBackward0"

    @staticmethod
    def transpose(t: Tensor) -> Tensor:
        return _mT(t)

    @staticmethod
    def transpose_array(x: np.ndarray) -> np.ndarray:
        return np.swapaxes(x, 1, 2)


# -- matmul --------------------------------------------------------------------------------


class _MatmulBackward(Function):
    """Any matmul shape case: numpy's matmul has PyTorch's semantics (1-d operands get a
    dimension that is removed after, batch dimensions broadcast); the gradients are
    summed back to broadcast operands by the backward loop."""

    name = "UnsafeViewBackward0"
    complex_ok = True
    jvp = MULTILINEAR  # a product: bilinear in its operands
    broadcasts = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> np.ndarray:
        _save_crossed(ctx, a, b)
        ctx.shapes = a._data.shape, b._data.shape
        return np.matmul(a._data, b._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = _conj(ctx.saved_tensors)
        need_a, need_b = ctx.needs_input_grad
        (sa, sb), sg = ctx.shapes, g._data.shape
        ga = gb = None
        if len(sb) == 1:  # (..., n, m) @ (m,): a is at least 2-d here
            if need_a:
                ga = reshape(g, sg + (1,)) * b
            if need_b:
                rows = reshape(a, (math.prod(sa[:-1]), sa[-1]))
                gb = MvBackward0.apply(_t(rows), reshape(g, (math.prod(sg),)))
        elif len(sa) == 1 and len(sb) == 2:  # PyTorch: a.unsqueeze(0).mm(b).squeeze_(0)
            g_row = unsqueeze(g, 0)
            if need_a:
                ga = squeeze(MmBackward0.apply(g_row, _t(b)), 0)
            if need_b:
                gb = MmBackward0.apply(_t(unsqueeze(a, 0)), g_row)
        elif len(sa) == 1:  # (m,) @ (..., m, p)
            if need_a:
                ga = reshape(_matmul_any(b, reshape(g, sg + (1,))), sg[:-1] + sa)
            if need_b:
                gb = reshape(a, sa + (1,)) * reshape(g, sg[:-1] + (1, sg[-1]))
        elif len(sb) == 2:  # (..., n, m) @ (m, p): fold the batch into one mm for b
            if need_a:
                ga = _matmul_any(g, _t(b))
            if need_b:
                rows = math.prod(sa[:-1])
                gb = MmBackward0.apply(_t(reshape(a, (rows, sa[-1]))), reshape(g, (rows, sg[-1])))
        else:
            if need_a:
                ga = _matmul_any(g, _mT(b))
            if need_b:
                gb = _matmul_any(_mT(a), g)
        return ga, gb


class _MatmulSqueeze(_MatmulBackward):
    """``1-d @ 2-d``: PyTorch computes ``a.unsqueeze(0).mm(b).squeeze_(0)``."""

    name = "SqueezeBackward4"


class _MatmulClone(_MatmulBackward):
    """``2-d @ n-d`` folded into one mm, transposed back and made contiguous."""

    name = "CloneBackward0"


class _MatmulTranspose(_MatmulBackward):
    """The same, when the transposed result is already contiguous (no copy, no clone)."""

    name = "TransposeBackward0"


def _matmul_any(a: Tensor, b: Tensor) -> Tensor:
    """A product inside a backward rule (no checks, no PyTorch naming needed)."""
    if a._data.ndim == 2 and b._data.ndim == 2:
        return MmBackward0.apply(a, b)
    return _MatmulBackward.apply(a, b)


def _should_fold(
    sa: tuple[int, ...],
    sb: tuple[int, ...],
    grad_a: bool,
    grad_b: bool,
    strides_a: tuple[int, ...],
    strides_b: tuple[int, ...],
) -> bool:
    """PyTorch's ``should_fold``: fold the batch of the larger operand into one mm/mv."""
    a_larger = len(sa) >= len(sb)
    dim_t1, dim_t2 = (len(sa), len(sb)) if a_larger else (len(sb), len(sa))
    if not (dim_t1 >= 3 and dim_t2 <= 2):
        return False
    if grad_b if a_larger else grad_a:
        return True
    if len(sa) == 2:
        return False
    if a_larger:
        shape, strides = sa, strides_a
    else:  # t1 is b transposed in its last two dimensions
        shape = sb[:-2] + (sb[-1], sb[-2])
        strides = strides_b[:-2] + (strides_b[-1], strides_b[-2])
    if math.prod(shape) == 0:
        return True
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(dim_t1 - 2))


def _plan(
    sa: tuple[int, ...],
    sb: tuple[int, ...],
    grad_a: bool,
    grad_b: bool,
    strides_a: tuple[int, ...],
    strides_b: tuple[int, ...],
    dt_a: np.dtype,
    dt_b: np.dtype,
) -> type[Function]:
    """PyTorch's ``_matmul_impl`` for operands with at least 3 dimensions on one side:
    check as it checks and return the Function named as its result's grad_fn."""
    da, db = len(sa), len(sb)
    if _should_fold(sa, sb, grad_a, grad_b, strides_a, strides_b):
        if da >= db:  # (..., n, m) @ (m, p) or (m,): one mm/mv on a's rows
            rows = (math.prod(sa[:-1]), sa[-1])
            if db == 2:
                _check_mm(rows, (sb[0], sb[1]), dt_a, dt_b)
            else:
                _check_mv(rows, sb[0], dt_a, dt_b)
            return _MatmulBackward
        # a @ b computed as (b^T @ a^T)^T on b's rows
        rows = (math.prod(sb[:-2]) * sb[-1], sb[-2])
        if da == 1:
            _check_mv(rows, sa[0], dt_b, dt_a)
            return _MatmulBackward
        _check_mm(rows, (sa[1], sa[0]), dt_b, dt_a)
        n, p = sa[0], sb[-1]
        contiguous = n == 1 or p == 1 or math.prod(sb[:-2]) * n * p == 0
        return _MatmulTranspose if contiguous else _MatmulClone
    if da == 3 and db == 3 and sa[0] != sb[0]:
        # a batch of one that requires grad is squeezed so its gradient is one mm
        if sa[0] == 1 and grad_a:
            return _plan(sa[1:], sb, grad_a, grad_b, strides_a[1:], strides_b, dt_a, dt_b)
        if sb[0] == 1 and grad_b:
            return _plan(sa, sb[1:], grad_a, grad_b, strides_a, strides_b[1:], dt_a, dt_b)
    batch = broadcast_shape(sa[:-2], sb[:-2] if db > 1 else ())
    count = math.prod(batch)
    m2 = sb[-2] if db > 1 else sb[0]
    _check_bmm(count, sa[-1], count, m2, dt_a, dt_b)
    return _MatmulBackward


def _matmul_node(a: Tensor, b: Tensor) -> type[Function]:
    x, y = a._data, b._data
    da, db = x.ndim, y.ndim
    if da == 0 or db == 0:
        raise ShapeMismatchError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        _check_dot(x.shape[0], y.shape[0], x.dtype, y.dtype)
        return DotBackward0
    if da == 2 and db == 1:
        _check_mv(x.shape, y.shape[0], x.dtype, y.dtype)  # type: ignore[arg-type]
        return MvBackward0
    if da == 1 and db == 2:
        _check_mm((1, x.shape[0]), y.shape, x.dtype, y.dtype)  # type: ignore[arg-type]
        return _MatmulSqueeze
    if da == 2 and db == 2:
        _check_mm(x.shape, y.shape, x.dtype, y.dtype)  # type: ignore[arg-type]
        return MmBackward0
    return _plan(
        x.shape, y.shape, a.requires_grad, b.requires_grad, x.strides, y.strides, x.dtype, y.dtype
    )


def _matmul_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3), r(rng, 3), note="1-d @ 1-d"),
        sample(r(rng, 2, 3), r(rng, 3, 4), note="2-d @ 2-d"),
        sample(r(rng, 2, 3), r(rng, 3), note="2-d @ 1-d"),
        sample(r(rng, 3), r(rng, 3, 4), note="1-d @ 2-d"),
        sample(r(rng, 2, 3, 4), r(rng, 2, 4, 5), note="3-d @ 3-d"),
        sample(r(rng, 2, 3, 4), r(rng, 4, 5), note="3-d @ 2-d"),
        sample(r(rng, 3, 4), r(rng, 2, 4, 5), note="2-d @ 3-d"),
        sample(r(rng, 1, 4), r(rng, 2, 4, 5), note="2-d @ 3-d, one row"),
        sample(r(rng, 2, 3, 4), r(rng, 4), note="3-d @ 1-d"),
        sample(r(rng, 4), r(rng, 2, 4, 5), note="1-d @ 3-d"),
        sample(r(rng, 2, 1, 3, 4), r(rng, 5, 4, 2), note="broadcast batch"),
        sample(r(rng, 1, 3, 4), r(rng, 2, 4, 5), note="batch of one"),
        sample(r(rng, 2, 3, 4), r(rng, 1, 4, 5), note="batch of one on b"),
        sample(r(rng, 0, 3), r(rng, 3, 2), note="empty"),
        sample(r(rng, 2, 0), r(rng, 0, 3), note="empty inner dimension"),
    ]


@register(
    out_overlap="unchecked",
    samples=_matmul_samples,
    operators=("__matmul__",),
    reflected=("__rmatmul__",),
    estimate=estimates.matmul,
)
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules for 1-d operands and broadcast batch dimensions."""
    a, b = as_tensor(input), as_tensor(other)
    return _matmul_node(a, b).apply(a, b)


@register(
    out_overlap="unchecked",
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3), S.rand(rng, 3, 4)),
        sample(S.rand(rng, 0, 3), S.rand(rng, 3, 2), note="empty"),
    ],
    estimate=estimates.matmul,
)
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices."""
    a, b = as_tensor(input), as_tensor(mat2)
    if a.ndim != 2:
        raise ShapeMismatchError("self must be a matrix")
    if b.ndim != 2:
        raise ShapeMismatchError("mat2 must be a matrix")
    _check_mm(a._data.shape, b._data.shape, a._data.dtype, b._data.dtype)  # type: ignore[arg-type]
    return MmBackward0.apply(a, b)


@register(
    out_overlap="unchecked",
    samples=lambda rng: [
        sample(S.rand(rng, 2, 2, 3), S.rand(rng, 2, 3, 4)),
        sample(S.rand(rng, 0, 2, 3), S.rand(rng, 0, 3, 1), note="empty"),
    ],
    estimate=estimates.matmul,
)
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product of two stacks of matrices with the same batch size."""
    a, b = as_tensor(input), as_tensor(mat2)
    if a.ndim != 3:
        raise ShapeMismatchError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise ShapeMismatchError("batch2 must be a 3D tensor")
    sa, sb = a._data.shape, b._data.shape
    _check_bmm(sa[0], sa[2], sb[0], sb[1], a._data.dtype, b._data.dtype)
    return BmmBackward0.apply(a, b)


@register(
    out_overlap="unchecked",
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3), S.rand(rng, 3)),
        sample(S.rand(rng, 0, 3), S.rand(rng, 3), note="empty"),
    ],
)
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Product of a matrix and a vector."""
    a, v = as_tensor(input), as_tensor(vec)
    if a.ndim != 2 or v.ndim != 1:
        raise ShapeMismatchError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    _check_mv(a._data.shape, v._data.shape[0], a._data.dtype, v._data.dtype)  # type: ignore[arg-type]
    return MvBackward0.apply(a, v)


@register(
    out_overlap="unchecked",
    samples=lambda rng: [
        sample(S.rand(rng, 3), S.rand(rng, 3)),
        sample(S.rand(rng, 0), S.rand(rng, 0), note="empty"),
    ],
)
def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two vectors of the same length."""
    a, b = as_tensor(input), as_tensor(other)
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeMismatchError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    _check_dot(a._data.shape[0], b._data.shape[0], a._data.dtype, b._data.dtype)
    return DotBackward0.apply(a, b)


def _outer(a: Tensor, b: Tensor) -> Tensor:
    return mul(reshape(a, (a._data.shape[0], 1)), b)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3), S.rand(rng, 4)),
        sample(S.rand(rng, 0), S.rand(rng, 2), note="empty"),
    ],
    estimate=estimates.outer,
)
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two vectors: ``input[:, None] * vec2``, as PyTorch computes it."""
    a, b = as_tensor(input), as_tensor(vec2)
    for what, v in (("self", a), ("vec2", b)):
        if v.ndim != 1:
            raise ShapeMismatchError(f"outer: Expected 1-D argument {what}, but got {v.ndim}-D")
    return _outer(a, b)


# -- linear --------------------------------------------------------------------------------


class AddmmBackward0(Function):
    """``linear(x, W, b)`` for a 2-d ``x``: ``addmm(b, x, W.t())`` in one node."""

    name = "AddmmBackward0"
    jvp = MULTILINEAR  # x @ W.T + b
    jvp_bias = 2
    broadcasts = True  # the bias gradient is summed over the batch by the backward loop

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, bias: Tensor) -> np.ndarray:
        _save_crossed(ctx, x, w)
        xd = x._data
        ctx.x_shape = xd.shape
        if xd.ndim != 2:
            xd = xd.reshape(math.prod(xd.shape[:-1]), xd.shape[-1])
        out = np.matmul(xd, w._data.T)
        out += bias._data
        if len(ctx.x_shape) != 2:
            out = out.reshape(ctx.x_shape[:-1] + (out.shape[-1],))
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        shape = ctx.x_shape
        if len(shape) != 2:
            rows = math.prod(shape[:-1])
            g = reshape(g, (rows, g._data.shape[-1]))
            if need_w:
                x = reshape(x, (rows, shape[-1]))
        gx = MmBackward0.apply(g, w) if need_x else None
        if gx is not None and len(shape) != 2:
            gx = reshape(gx, shape)
        gw = MmBackward0.apply(_t(g), x) if need_w else None
        return gx, gw, (g if need_b else None)

    vjp_row = "block"  # the transformer block's four linears (and _LinearViewBackward0's)

    @staticmethod
    def vjp(
        ctx: Any, g: np.ndarray
    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        shape = ctx.x_shape
        xd = x._data if need_w else None
        if len(shape) != 2:
            rows = math.prod(shape[:-1])
            g = g.reshape(rows, g.shape[-1])
            if xd is not None:
                xd = xd.reshape(rows, shape[-1])
        gx = np.matmul(g, w._data) if need_x else None
        if gx is not None and len(shape) != 2:
            gx = gx.reshape(shape)
        gw = np.matmul(g.T, xd) if xd is not None else None
        return gx, gw, (g if need_b else None)


class _LinearViewBackward0(AddmmBackward0):
    """``linear`` of a contiguous n-d (or 1-d) ``x`` with a 1-d bias: PyTorch flattens
    ``x`` to rows, calls addmm and views the result back (``_flatten_nd_linear``)."""

    name = "ViewBackward0"


def _check_bias(bias: Tensor, target: tuple[int, int], w: Tensor) -> None:
    """addmm expands the bias to the output's shape: PyTorch's expand messages."""
    bs = bias._data.shape
    if len(bs) > 2:
        raise ShapeMismatchError(
            f"expand(torch.{_type(bias._data.dtype)}Tensor{{[{', '.join(map(str, bs))}]}}, "
            f"size=[{target[0]}, {target[1]}]): the number of sizes provided (2) must be "
            f"greater or equal to the number of dimensions in the tensor ({len(bs)})"
        )
    for i in range(1, len(bs) + 1):
        if bs[-i] != 1 and bs[-i] != target[-i]:
            raise ShapeMismatchError(
                f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                f"({bs[-i]}) at non-singleton dimension {2 - i}.  Target sizes: "
                f"[{target[0]}, {target[1]}].  Tensor sizes: [{', '.join(map(str, bs))}]"
            )
    if bias._data.dtype != w._data.dtype:
        raise DtypeMismatchError(
            "self and mat2 must have the same dtype, but got "
            f"{_type(bias._data.dtype)} and {_type(w._data.dtype)}"
        )


def _linear_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), r(rng, 5, 4), r(rng, 5), note="2-d with bias"),
        sample(r(rng, 3, 4), r(rng, 5, 4), note="2-d without bias"),
        sample(r(rng, 2, 3, 4), r(rng, 5, 4), r(rng, 5), note="3-d with bias"),
        sample(r(rng, 2, 3, 4), r(rng, 5, 4), note="3-d without bias"),
        sample(r(rng, 4), r(rng, 5, 4), r(rng, 5), note="1-d with bias"),
        sample(r(rng, 4), r(rng, 5, 4), note="1-d without bias"),
        sample(r(rng, 3, 4), r(rng, 5, 4), r(rng, 3, 5), note="2-d bias"),
        sample(r(rng, 2, 3, 4), r(rng, 5, 4), r(rng, 3, 5), note="3-d, 2-d bias"),
        sample(r(rng, 3, 4), r(rng, 5, 4), r(rng), note="0-d bias"),
        sample(r(rng, 3, 4), r(rng, 4), note="1-d weight"),
        sample(r(rng, 0, 4), r(rng, 5, 4), r(rng, 5), note="empty batch"),
    ]


@register(
    samples=_linear_samples,
    method=False,
    torch="nn.functional.linear",
    estimate=estimates.linear,
)
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` (torch.nn.functional.linear); one fused node with a bias."""
    x, w = as_tensor(input), as_tensor(weight)
    if x.ndim == 0 or w.ndim == 0:
        raise ShapeMismatchError(
            f"both arguments to linear need to be at least 1D, but they are {x.ndim}D and {w.ndim}D"
        )
    if w.ndim > 2:
        raise ShapeMismatchError(
            f"t() expects a tensor with <= 2 dimensions, but self is {w.ndim}D"
        )
    b = None if bias is None else as_tensor(bias)
    if b is not None and (x.ndim == 2 or (b.ndim == 1 and x._data.flags.c_contiguous)):
        if w.ndim != 2:
            raise ShapeMismatchError(f"mat2 must be a matrix, got {w.ndim}-D tensor")
        xs, ws = x._data.shape, w._data.shape
        rows = math.prod(xs[:-1])
        _check_mm((rows, xs[-1]), (ws[1], ws[0]), x._data.dtype, w._data.dtype)
        _check_bias(b, (rows, ws[0]), w)
        fn = AddmmBackward0 if x.ndim == 2 else _LinearViewBackward0
        return fn.apply(x, w, b)
    out = matmul(x, TBackward0.apply(w))
    if b is None:
        return out
    # PyTorch adds the bias in place into the product: its shape and dtype stay

    shape = broadcast_shape(out._data.shape, b._data.shape)
    if shape != out._data.shape:
        raise ShapeMismatchError(
            f"output with shape {list(out._data.shape)} doesn't match the broadcast shape {list(shape)}"
        )
    return AddBackward0.apply(out, b, dtype=out._data.dtype)
