"""Ops PyTorch itself writes as compositions of other ops (CompositeImplicitAutograd):
the same composition here, so values, gradients and ``grad_fn`` names follow from
the parts (``msort`` is a ``sort``, ``rms_norm`` ends in a ``mul``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError, DtypeMismatchError
from ..primitives import conj
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor


@register(
    complex_inputs=(RuntimeError, " Sort does not support complex dtypes on CPU"),
    samples=lambda rng: [sample(S.rand(rng, 4, 3)), sample(S.rand(rng, 5)), sample(S.rand(rng))],
)
def msort(input: Tensor) -> Tensor:
    """Sorted along dim 0 (``sort(input, dim=0).values``)."""
    return as_tensor(input).sort(dim=0).values


def _diagflat_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """n elements become an (n + |offset|)² matrix: the result outgrows the input."""
    shape = tuple(getattr(args[0], "shape", ())) if args else ()
    offset = args[1] if len(args) > 1 else kwargs.get("offset", 0)
    if not isinstance(offset, int):
        return None
    return (math.prod(shape) + abs(offset)) ** 2


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3)),
        sample(S.rand(rng, 2, 2), 1, note="a matrix, flattened, above the diagonal"),
        sample(S.rand(rng, 3), -2, note="below"),
    ],
    estimate=_diagflat_estimate,
)
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the flattened input on diagonal ``offset``."""
    a = as_tensor(input)
    return a.reshape(-1).diag_embed(offset)


@register(
    samples=lambda rng: [
        sample(Const(np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]))),
        sample(Const(np.array([True, False, True])), note="bool"),
        sample(Const(np.array(2.0)), note="0-d"),
    ],
    differentiable=False,
)
def argwhere(input: Tensor) -> Tensor:
    """The indices of the non-zero elements, one row each (``nonzero(input)``)."""
    return as_tensor(input).nonzero()


def _rms_norm_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), (4,)),
        sample(S.rand(rng, 2, 3, 4), [3, 4], S.rand(rng, 3, 4), note="weight"),
        sample(S.rand(rng, 2, 5), (5,), eps=0.1, note="eps"),
    ]


@register(samples=_rms_norm_samples, method=False)
def rms_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``input / sqrt(mean(input², last dims) + eps)`` (eps: the dtype's epsilon by
    default), times ``weight``."""
    a = as_tensor(input)
    shape = (
        (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    )
    n = len(shape)
    if not n:
        raise BadArgumentsError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []"
        )
    if a.ndim < n or tuple(a.shape[a.ndim - n :]) != shape:
        sizes = ", ".join(str(s) for s in a.shape)
        raise BadArgumentsError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*{', '.join(str(s) for s in shape)}], but got input of size[{sizes}]"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise BadArgumentsError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {list(shape)}"
        )
    if eps is None:
        eps = (
            float(np.finfo(a.dtype).eps) if dtypes.is_floating(a.dtype) else 1.1920928955078125e-07
        )
    dims = tuple(range(a.ndim - n, a.ndim))
    out = (
        a * (a.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
        if dims
        else a * (a.pow(2) + eps).rsqrt()
    )
    return out if weight is None else out * weight


def _vecdot_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), S.rand(rng, 4)),
        sample(S.rand(rng, 2, 3), S.rand(rng, 2, 3), dim=0, note="dim 0"),
    ]


@register(samples=_vecdot_samples, method=False, torch="linalg.vecdot")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``linalg.vecdot``: the dot product along ``dim``, broadcasting the rest."""
    a, b = as_tensor(x), as_tensor(y)
    if a.dtype != b.dtype:
        raise DtypeMismatchError(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{dtypes.type_name(a.dtype)} and y of type {dtypes.type_name(b.dtype)} instead"
        )
    return (conj(a) * b).sum(dim)  # the first conjugated, as torch


def _multi_dot_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample([S.rand(rng, 2, 3), S.rand(rng, 3, 4)]),
        sample(
            [S.rand(rng, 3), S.rand(rng, 3, 2), S.rand(rng, 2, 4), S.rand(rng, 4)], note="1-d ends"
        ),
        sample([S.rand(rng, 2, 3), S.rand(rng, 3, 3), S.rand(rng, 3)], note="1-d last"),
    ]


_DTYPE_WORDS = {"float32": "float", "float64": "double", "int64": "long", "int32": "int"}


@register(samples=_multi_dot_samples, method=False, torch="linalg.multi_dot")
def multi_dot(tensors: Any) -> Tensor:
    """``linalg.multi_dot``: the product of a chain of matrices (the first and last may be
    vectors), left to right."""
    ts = [as_tensor(t) for t in tensors]
    if len(ts) < 2:
        raise BadArgumentsError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        where = "the first tensor" if i == 0 else "the last tensor" if i == len(ts) - 1 else ""
        if where and t.ndim not in (1, 2):
            raise BadArgumentsError(f"multi_dot(): {where} must be 1D or 2D but got {t.ndim}D")
        if not where and t.ndim != 2:
            raise BadArgumentsError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        if t.dtype != ts[0].dtype:
            first, this = (
                _DTYPE_WORDS.get(np.dtype(d).name, str(d)) for d in (ts[0].dtype, t.dtype)
            )
            raise DtypeMismatchError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is {first} "
                f"and tensor {i} {this}"
            )
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = list(ts)
    if first_1d:
        mats[0] = mats[0].unsqueeze(0)
    if last_1d:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise BadArgumentsError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                f"{list(ts[i + 1].shape)} cannot be multiplied"
            )
    out = mats[0]
    for m in mats[1:]:
        out = out.mm(m)
    shape = tuple(out.shape)
    if first_1d:
        shape = shape[1:]
    if last_1d:
        shape = shape[:-1]
    return out.view(shape)  # PyTorch ends in a view whatever the ends (``ViewBackward0``)


# -- products and assemblies PyTorch records as one node ---------------------------------------


def _addr_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), S.rand(rng, 3), S.rand(rng, 4)),
        sample(
            S.rand(rng, 4), S.rand(rng, 3), S.rand(rng, 4), beta=0.5, alpha=2.0, note="broadcast"
        ),
    ]


@register(
    complex_inputs="addr is not implemented for '{type}' in this engine", samples=_addr_samples
)
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta·input + alpha·outer(vec1, vec2)`` (``input`` ignored when ``beta`` is 0)."""
    a, u, v = as_tensor(input), as_tensor(vec1), as_tensor(vec2)
    for name, t in (("vec1", u), ("vec2", v)):
        if t.ndim != 1:
            raise BadArgumentsError(f"addr: Expected 1-D argument {name}, but got {t.ndim}-D")

    alpha, beta = _scalars(alpha, beta, a, u, v)

    def body(a: Tensor, u: Tensor, v: Tensor) -> Tensor:
        prod = u.outer(v) * alpha if alpha != 1 else u.outer(v)
        if beta == 0:
            return prod.clone()
        return a * beta + prod if beta != 1 else a + prod

    return _as(composite("AddrBackward0", body, a, u, v, saves=_factors_saved), a, u, v)


def _addbmm_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4), S.rand(rng, 2, 3, 5), S.rand(rng, 2, 5, 4)),
        sample(S.rand(rng, 4), S.rand(rng, 2, 3, 5), S.rand(rng, 2, 5, 4), beta=0.5, alpha=2.0),
    ]


@register(
    complex_inputs="addbmm is not implemented for '{type}' in this engine", samples=_addbmm_samples
)
def addbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
) -> Tensor:
    """``beta·input + alpha·Σ_b batch1[b] @ batch2[b]`` (``input`` ignored when ``beta`` is 0)."""
    a, b1, b2 = as_tensor(input), as_tensor(batch1), as_tensor(batch2)
    for name, t in (("batch1", b1), ("batch2", b2)):
        if t.ndim != 3:
            raise BadArgumentsError(f"{name} must be a 3D tensor")

    alpha, beta = _scalars(alpha, beta, a, b1, b2)

    def body(a: Tensor, b1: Tensor, b2: Tensor) -> Tensor:
        prod = b1.bmm(b2).sum(0)
        prod = prod * alpha if alpha != 1 else prod
        if beta == 0:
            return prod.clone()
        return a * beta + prod if beta != 1 else a + prod

    return _as(composite("AddbmmBackward0", body, a, b1, b2, saves=_factors_saved), a, b1, b2)


def _factors_saved(need: Any) -> tuple[bool, ...]:
    """torch's addr/addbmm nodes save each factor for the other's gradient, never input."""
    return (False, need[2], need[1])


def _scalars(alpha: Any, beta: Any, *inputs: Tensor) -> tuple[Any, Any]:
    """PyTorch casts ``alpha`` and ``beta`` to an integer result's type (0.6 is 0)."""
    if all(not dtypes.is_floating(t.dtype) for t in inputs):
        return int(alpha), int(beta)
    return alpha, beta


def _as(out: Tensor, *inputs: Tensor) -> Tensor:
    """The result in the inputs' promoted dtype (integer and bool products keep theirs)."""
    dtype = inputs[0].dtype
    for t in inputs[1:]:
        dtype = dtypes.promote(dtype, t.dtype) or dtype
    return out if out.dtype == dtype else out.to(dtype)


def _block_diag_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), S.rand(rng, 1, 2)),
        sample(S.rand(rng), S.rand(rng, 3), S.rand(rng, 2, 2), note="0-d, 1-d, 2-d"),
    ]


def _block_diag_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The inputs' rows summed by their columns summed (tiny rows make a huge square),
    twice: each block's padded row band, then their concatenation."""
    shapes = [tuple(t.shape) for t in args if hasattr(t, "shape")]
    rows = sum(s[0] if len(s) == 2 else 1 for s in shapes)
    cols = sum(s[-1] if len(s) == 2 else math.prod(s) for s in shapes)
    return 2 * rows * cols


@register(samples=_block_diag_samples, method=False, estimate=_block_diag_estimate)
def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the inputs (a 0-d is 1×1, a vector one row)."""
    ts = [as_tensor(t) for t in tensors]
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise BadArgumentsError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                f"{t.ndim} dimensions"
            )
    if not ts:
        return Tensor._make(np.zeros((1, 0), np.float32))
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = dtypes.promote(dtype, t.dtype) or dtype

    def body(*ts: Tensor) -> Tensor:
        mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in ts]
        mats = [m if m.dtype == dtype else m.to(dtype) for m in mats]
        width = sum(m.shape[1] for m in mats)
        rows, left = [], 0
        for m in mats:
            right = width - left - m.shape[1]
            parts = [m.new_zeros((m.shape[0], left)), m, m.new_zeros((m.shape[0], right))]
            rows.append(OPS["cat"].fn(parts, 1))
            left += m.shape[1]
        return OPS["cat"].fn(rows, 0)

    # PyTorch's node keeps the inputs' sizes and dtypes only: a second backward works
    return composite("BlockDiagBackward0", body, *ts, saves=lambda need: (False,) * len(need))


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 2), S.rand(rng, 3)),
        sample(S.rand(rng, 3), note="one"),
    ],
    method=False,
    estimate=lambda args, kwargs: _cartesian_estimate(args),
)
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of the inputs' elements, one row each (a single input itself)."""
    ts = [as_tensor(t) for t in tensors]
    for t in ts:
        if t.ndim != 1:
            raise BadArgumentsError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    grid = tuple(t.shape[0] for t in ts)
    cols = []
    for k, t in enumerate(ts):
        shape = [1] * len(ts)
        shape[k] = grid[k]
        cols.append(t.reshape(shape).expand(grid).reshape(-1))
    return OPS["stack"].fn(cols, 1)


def _cartesian_estimate(args: tuple[Any, ...]) -> int | None:
    """The product of the inputs' lengths, one column per input, twice (the columns,
    then their stack): three vectors of 1000 make 3·10⁹ elements."""
    sizes = [math.prod(t.shape) for t in args if hasattr(t, "shape")]
    return 2 * len(sizes) * math.prod(sizes) if len(sizes) > 1 else None


def _fill_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), 1.5),
        sample(S.rand(rng, 2, 3), S.rand(rng), note="a 0-d value"),
    ]


@register(samples=_fill_samples)
def fill(input: Tensor, value: Any) -> Tensor:
    """A tensor like ``input`` holding ``value`` everywhere (a number or a 0-d tensor)."""
    a = as_tensor(input)
    if isinstance(value, Tensor):
        if value.ndim:
            raise BadArgumentsError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions."
            )
        return composite("FillBackward1", _filled, a, value)
    return composite("FillBackward0", lambda a: _filled(a, a.new_full((), value)), a)


def _filled(a: Tensor, v: Tensor) -> Tensor:
    # ``where`` keeps ``a`` in the graph with an exact zero gradient (inf - inf is no zero)
    everywhere = Tensor._make(np.ones(a.shape, bool))
    return OPS["where"].fn(everywhere, v.to(a.dtype), a)


@register(
    samples=lambda rng: [sample(2.5), sample(3, dtype="float64")],
    method=False,
    differentiable=False,
)
def scalar_tensor(
    s: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given."""
    target = dtypes.to_dtype(dtype) if dtype is not None else dtypes.float32
    value = s.item() if isinstance(s, Tensor) else s
    return Tensor._make(np.asarray(value, dtype=target)).requires_grad_(bool(requires_grad))


# -- the trapezoidal rule ----------------------------------------------------------------------


def _trapezoid_parts(y: Any, x: Any, dim: int) -> tuple[Tensor, Tensor | None, int]:
    a = as_tensor(y)
    if a._data.dtype.kind not in "fc":  # complex samples integrate as complex
        a = a.to(dtypes.float32)
    d = dim % a.ndim if a.ndim else 0
    if x is None:
        return a, None, d
    t = as_tensor(x)
    if t.ndim == 1 and t.shape[0] != a.shape[d]:
        raise BadArgumentsError("trapezoid: There must be one `x` value for each sample point")
    return a, t, d


def _spacing(x: Tensor, y: Tensor, d: int) -> Tensor:
    """The gaps between sample points, shaped to broadcast against ``y``'s pairs."""
    if x.ndim == 1:
        gaps = x.diff()
        return gaps.reshape([-1 if k == d else 1 for k in range(y.ndim)])
    return x.diff(dim=d)


def _pairs(y: Tensor, d: int) -> Tensor:
    n = y.shape[d]
    return y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)


def _trapezoid_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 3, 4)),
        sample(S.rand(rng, 3, 4), dx=0.5, dim=0, note="dx"),
        sample(S.rand(rng, 3, 4), np.sort(S.rand(rng, 4)), note="x"),
    ]


@register(samples=_trapezoid_samples, method=False)
def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, at points ``x`` or a
    spacing of ``dx`` (1 by default)."""
    a, t, d = _trapezoid_parts(y, x, dim)
    if a.shape[d] == 0:
        return a.new_zeros(tuple(s for k, s in enumerate(a.shape) if k != d))
    if t is None:
        step = 1.0 if dx is None else dx

        def body(a: Tensor) -> Tensor:
            ends = a.select(d, 0) + a.select(d, -1)
            return (a.sum(d) - ends * 0.5) * step

        return composite("MulBackward1", body, a)
    return composite(
        "DivBackward1", lambda a, t: (_spacing(t, a, d) * _pairs(a, d)).sum(d) / 2.0, a, t
    )


@register(samples=_trapezoid_samples, method=False)
def trapz(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """``trapezoid``'s older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


@register(samples=_trapezoid_samples, method=False)
def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral of ``y`` along ``dim`` (one element fewer)."""
    a, t, d = _trapezoid_parts(y, x, dim)
    if a.shape[d] == 0:
        return a.new_zeros(a.shape)
    if t is None:
        step = 1.0 if dx is None else dx
        return (_pairs(a, d) * (step / 2.0)).cumsum(d)
    return composite(
        "DivBackward1", lambda a, t: (_spacing(t, a, d) * _pairs(a, d)).cumsum(d) / 2.0, a, t
    )
