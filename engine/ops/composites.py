"""Ops a ported model calls that PyTorch builds from others: the optimizer updates
(``addcmul``, ``addcdiv``), stacking and reshaping conveniences (``hstack``,
``atleast_2d``, ``ravel``, ``unflatten``, ``expand_as`` ...), ``diff``, ``rot90``,
``dist``, ``normalize``, ``pixel_shuffle``, and the predicates and index makers
(``isin``, ``searchsorted``, ``triu_indices`` ...).

Each is written as a composite of registered ops, so its gradient (and double
backward) comes from theirs. Where PyTorch records one node of its own name
(``AddcmulBackward0``, ``Rot90Backward0``), the composite records that node
(``_composite.composite``); where PyTorch's own implementation is a composite
(``hstack`` records ``CatBackward0``), ours is the same composite. Ops are called
through the registry, so the modules that define them can move freely.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..binding import Binding
from ..errors import (
    ArgumentTypeError,
    BadArgumentsError,
    IndexOutOfRangeError,
    ShapeMismatchError,
)
from ..primitives import conj
from ..registry import OPS, Const, Sample, register, sample
from ..tensor import Tensor
from ..views import CopyBackwards
from . import samples as S
from ._composite import composite, named
from ._util import as_tensor, normalize_dim
from .creation_ops import check_steps, zero_dim_bound


def _op(name: str) -> Any:
    return OPS[name].fn


# -- optimizer updates ----------------------------------------------------------------------


def _addc_samples(rng: np.random.Generator) -> list[Sample]:
    r, nz = S.rand, S.away_from_zero
    return [
        sample(r(rng, 2, 3), r(rng, 2, 3), nz(rng, 2, 3), note="same shape"),
        sample(r(rng, 2, 3), r(rng, 3), nz(rng, 2, 1), value=0.5, note="broadcast, value"),
        sample(r(rng), r(rng), nz(rng), value=-2, note="0-d"),
        sample(r(rng, 0, 3), r(rng, 3), nz(rng, 3), note="empty"),
    ]


def _addcmul_body(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any) -> Tensor:
    return _op("add")(input, _op("mul")(tensor1, tensor2), alpha=value)


def _addcdiv_body(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any) -> Tensor:
    return _op("add")(input, _op("div")(tensor1, tensor2), alpha=value)


@register(samples=_addc_samples, inplace=True)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (Adam's moment update), one node."""
    return composite(
        "AddcmulBackward0",
        _addcmul_body,
        input,
        tensor1,
        tensor2,
        value=value,
        saves=lambda need: (False, need[2], need[1]),  # each factor for the other's grad
    )


@register(samples=_addc_samples, inplace=True)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (Adam's step), one node."""
    t1, t2 = as_tensor(tensor1), as_tensor(tensor2)
    if t1.dtype.kind in "biu" and t2.dtype.kind in "biu":
        raise BadArgumentsError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic "
            "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes."
        )
    return composite(
        "AddcdivBackward0",
        _addcdiv_body,
        input,
        tensor1,
        tensor2,
        value=value,
        saves=lambda need: (False, need[2], True),  # torch keeps tensor2 always
    )


# -- differences ----------------------------------------------------------------------------


def _diff_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 5), note="vector"),
        sample(r(rng, 3, 4), 2, 0, note="n=2 dim 0"),
        sample(r(rng, 3, 4), dim=-1, prepend=r(rng, 3, 1), append=r(rng, 3, 2), note="pre/append"),
        sample(r(rng, 2, 3), 3, note="n beyond size"),
        sample(r(rng, 0, 3), note="empty"),
        sample(Const(np.array([1, 4, 9, 16])), note="int"),
        sample(Const(np.array([True, False, False, True])), note="bool: logical_xor"),
    ]


@register(samples=_diff_samples)
def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None
) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (bool: ``!=`` of neighbours)."""
    x = as_tensor(input)
    if x.ndim == 0:
        raise BadArgumentsError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise BadArgumentsError(f"order must be non-negative but got {n}")
    d = normalize_dim(dim, x.ndim)
    if n == 0:  # torch: zeros_like(input).copy_(input), prepend/append unused
        return CopyBackwards.apply(Tensor._make(np.empty(x.shape, x._data.dtype)), x)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = _op("cat")([as_tensor(p) for p in parts], d)
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = _op("narrow")(x, d, 1, size - 1), _op("narrow")(x, d, 0, size - 1)
        x = _op("logical_xor")(hi, lo) if x.dtype == dtypes.bool_ else _op("sub")(hi, lo)
    return x


# -- reshaping conveniences ------------------------------------------------------------------


def _one_tensor(rng: np.random.Generator) -> list[Sample]:
    return S.unary(rng)


@register(samples=_one_tensor)
def ravel(input: Tensor) -> Tensor:
    """The elements as one dim: torch's ``contiguous().view(-1)`` (a view exactly when
    the input is contiguous, else a row-major copy)."""
    return _op("view")(_op("contiguous")(input), -1)


def _select_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), 0, 1, note="dim 0"),
        sample(r(rng, 3, 4), -1, -2, note="negative dim and index"),
        sample(r(rng, 4), 0, 3, note="vector"),
        sample(r(rng, 2, 0), 0, 1, note="empty"),
    ]


@register(samples=_select_samples)
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, that dim removed (a view)."""
    x = as_tensor(input)
    if x.ndim == 0:
        raise IndexOutOfRangeError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, x.ndim)
    size = x.shape[d]
    if not -size <= index < size:
        raise IndexOutOfRangeError(
            f"select(): index {index} out of range for tensor of size {list(x.shape)} at "
            f"dimension {d}"
        )
    return _op("getitem")(x, (slice(None),) * d + (index,))


def _unflatten_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 2, 6), 1, (2, 3), note="split a dim"),
        sample(r(rng, 6, 2), 0, (-1, 2), note="inferred size"),
        sample(r(rng, 4), -1, [2, 2], note="negative dim, list"),
        sample(r(rng, 0, 4), 1, (2, 2), note="empty"),
    ]


@register(samples=_unflatten_samples)
def unflatten(input: Tensor, dim: int, sizes: Any) -> Tensor:
    """Dim ``dim`` split into ``sizes`` (one may be -1)."""
    x = as_tensor(input)
    d = normalize_dim(dim, x.ndim)
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise BadArgumentsError("unflatten: sizes must be non-empty")
    shape = (*x.shape[:d], *sizes, *x.shape[d + 1 :])
    known = int(np.prod([s for s in sizes if s != -1]))
    if -1 not in sizes and known != x.shape[d]:
        raise BadArgumentsError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
            f"{dim} ({x.shape[d]}) in the input tensor"
        )
    return _op("view")(x, *shape)


def _like_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), Const(np.zeros((3, 2))), note="matrix"),
        sample(r(rng, 6), Const(np.zeros((2, 3))), note="vector"),
        sample(r(rng), Const(np.zeros(())), note="0-d"),
        sample(r(rng, 0, 3), Const(np.zeros((3, 0))), note="empty"),
    ]


@register(samples=_like_samples, function=False)
def view_as(input: Tensor, other: Tensor) -> Tensor:
    """A view with ``other``'s shape."""
    return _op("view")(input, *other.shape)


@register(samples=_like_samples, function=False)
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` reshaped to ``other``'s shape."""
    return _op("reshape")(input, *other.shape)


def _expand_as_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 1, 3), Const(np.zeros((2, 3))), note="expand a dim"),
        sample(r(rng, 3), Const(np.zeros((4, 2, 3))), note="new leading dims"),
        sample(r(rng), Const(np.zeros((2,))), note="0-d"),
        sample(r(rng, 1), Const(np.zeros((0,))), note="empty"),
    ]


@register(samples=_expand_as_samples, function=False)
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` broadcast to ``other``'s shape (a view)."""
    return _op("expand")(input, *other.shape)


def _type_as_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), Const(np.zeros(1, dtype=np.int64)), note="to int64"),
        sample(r(rng, 3), Const(np.zeros(1, dtype=np.float32)), note="to float32"),
        sample(r(rng, 0, 2), Const(np.zeros(1, dtype=np.float64)), note="to float64 (empty)"),
    ]


@register(samples=_type_as_samples, function=False)
def type_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` in ``other``'s dtype (itself when they match)."""
    if input.dtype == other.dtype:
        return input
    return _op("to")(input, dtypes.torch_name(other.dtype))


# -- stacking -------------------------------------------------------------------------------


def _stack_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample([r(rng, 3), r(rng, 2)], note="vectors"),
        sample([r(rng, 2, 3), r(rng, 2, 1)], note="matrices"),
        sample((r(rng), r(rng)), note="0-d"),
        sample([r(rng, 2, 1, 2), r(rng, 2, 3, 2)], note="3-d"),
        sample([r(rng, 2, 0), r(rng, 2, 3)], note="empty part"),
    ]


def _vstack_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample([r(rng, 3), r(rng, 3)], note="vectors"),
        sample([r(rng, 2, 3), r(rng, 1, 3)], note="matrices"),
        sample((r(rng), r(rng)), note="0-d"),
        sample([r(rng, 0, 3), r(rng, 2, 3)], note="empty part"),
    ]


def _dstack_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample([r(rng, 3), r(rng, 3)], note="vectors"),
        sample([r(rng, 2, 3), r(rng, 2, 3)], note="matrices"),
        sample([r(rng, 2, 3, 1), r(rng, 2, 3, 2)], note="3-d"),
        sample((r(rng), r(rng)), note="0-d"),
    ]


def _column_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample([r(rng, 3), r(rng, 3)], note="vectors"),
        sample([r(rng, 3), r(rng, 3, 2)], note="vector and matrix"),
        sample((r(rng), r(rng)), note="0-d"),
    ]


def _seq(tensors: Any, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(
            f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
            f"{type(tensors).__name__}"
        )
    if not tensors:  # PyTorch's stacks check this before cat does
        raise BadArgumentsError(f"{op} expects a non-empty TensorList")
    return [as_tensor(t) for t in tensors]


def _atleast(t: Tensor, n: int) -> Tensor:
    """PyTorch's ``atleast_nd`` of one tensor (the dims it adds, where it adds them)."""
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return _op("reshape")(t, *([1] * n))
    if n == 2 or t.ndim == 2:  # (k,) -> (1, k); (a, b) -> (a, b, 1)
        return _op("unsqueeze")(t, 0 if t.ndim == 1 else -1)
    return _op("unsqueeze")(_op("unsqueeze")(t, 0), -1)  # (k,) -> (1, k, 1)


def _atleast_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng), note="0-d"),
        sample(r(rng, 3), note="vector"),
        sample(r(rng, 2, 3), note="matrix"),
        sample(r(rng, 2, 1, 2), note="3-d"),
        sample(r(rng, 0), note="empty"),
    ]


@register(samples=_atleast_samples, method=False)
def atleast_1d(input: Tensor) -> Tensor:
    """``input`` with at least one dim."""
    return _atleast_each(input, 1)


def _atleast_each(input: Any, n: int) -> Any:
    """torch's ``atleast_nd`` of a list or tuple of tensors: a tuple, one per tensor."""
    if isinstance(input, (list, tuple)):
        return tuple(_atleast(as_tensor(t), n) for t in input)
    return _atleast(as_tensor(input), n)


@register(samples=_atleast_samples, method=False)
def atleast_2d(input: Tensor) -> Tensor:
    """``input`` with at least two dims (a vector becomes a row)."""
    return _atleast_each(input, 2)


@register(samples=_atleast_samples, method=False)
def atleast_3d(input: Tensor) -> Tensor:
    """``input`` with at least three dims (a vector ``(k,)`` becomes ``(1, k, 1)``)."""
    return _atleast_each(input, 3)


@register(samples=_stack_samples, method=False, estimate=estimates.total)
def hstack(tensors: Any) -> Tensor:
    """Tensors joined column-wise (along dim 0 for vectors, else dim 1)."""
    ts = [_atleast(t, 1) for t in _seq(tensors, "hstack")]
    return _op("cat")(ts, 0 if ts and ts[0].ndim == 1 else 1)


@register(samples=_vstack_samples, method=False, estimate=estimates.total)
def vstack(tensors: Any) -> Tensor:
    """Tensors joined row-wise, vectors as rows."""
    return _op("cat")([_atleast(t, 2) for t in _seq(tensors, "vstack")], 0)


@register(samples=_vstack_samples, method=False, estimate=estimates.total)
def row_stack(tensors: Any) -> Tensor:
    """``vstack`` by its other name."""
    return vstack(tensors)


@register(samples=_dstack_samples, method=False, estimate=estimates.total)
def dstack(tensors: Any) -> Tensor:
    """Tensors joined depth-wise (along dim 2)."""
    return _op("cat")([_atleast(t, 3) for t in _seq(tensors, "dstack")], 2)


@register(samples=_column_samples, method=False, estimate=estimates.total)
def column_stack(tensors: Any) -> Tensor:
    """Tensors joined as columns: 0-d and vectors become ``(n, 1)`` columns."""
    ts = [
        _op("reshape")(t, t.numel(), 1) if t.ndim <= 1 else t for t in _seq(tensors, "column_stack")
    ]
    return _op("cat")(ts, 1)


# -- flips and rotations --------------------------------------------------------------------


def _matrices(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), note="matrix"),
        sample(r(rng, 2, 3, 2), note="3-d"),
        sample(r(rng, 0, 2), note="empty"),
    ]


@register(samples=_matrices)
def fliplr(input: Tensor) -> Tensor:
    """Columns in reverse order (dim 1)."""
    x = as_tensor(input)
    if x.ndim < 2:
        raise BadArgumentsError("Input must be >= 2-d.")
    return _op("flip")(x, [1])


@register(samples=_matrices)
def flipud(input: Tensor) -> Tensor:
    """Rows in reverse order (dim 0)."""
    x = as_tensor(input)
    if x.ndim < 1:
        raise BadArgumentsError("Input must be >= 1-d.")
    return _op("flip")(x, [0])


def _rot90_body(x: Tensor, *, k: int, dims: tuple[int, int]) -> Tensor:
    a, b = dims
    if k == 1:
        return _op("transpose")(_op("flip")(x, [b]), a, b)
    if k == 2:
        return _op("flip")(x, [a, b])
    if k == 3:
        return _op("flip")(_op("transpose")(x, a, b), [b])
    return _op("clone")(x)


def _rot90_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), note="k=1"),
        sample(r(rng, 2, 3), 2, note="k=2"),
        sample(r(rng, 2, 3), -1, note="k=-1"),
        sample(r(rng, 2, 3, 4), 4, [1, 2], note="k=4 dims 1,2"),
        sample(r(rng, 2, 3, 4), 1, (2, 0), note="dims reversed"),
    ]


@register(samples=_rot90_samples)
def rot90(input: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:
    """A quarter turn ``k`` times in the plane of ``dims``, from the first towards the
    second."""
    x = as_tensor(input)
    if len(dims) != 2:
        raise BadArgumentsError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise BadArgumentsError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    a, b = normalize_dim(dims[0], x.ndim), normalize_dim(dims[1], x.ndim)
    if a == b:
        raise BadArgumentsError(
            f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}"
        )
    # torch's node saves no tensor (k and dims only): a freed graph still runs it
    return composite(
        "Rot90Backward0", _rot90_body, x, saves=lambda need: (False,), k=k % 4, dims=(a, b)
    )


# -- products and distances -----------------------------------------------------------------


def _inner_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3), r(rng, 3), note="vectors"),
        sample(r(rng, 2, 3), r(rng, 4, 3), note="matrices"),
        sample(r(rng, 2, 3), r(rng, 3), note="matrix and vector"),
    ]


def _inner_body(a: Tensor, b: Tensor) -> Tensor:
    return _op("tensordot")(a, b, ([-1], [-1]))


@register(samples=_inner_samples, estimate=estimates.inner)
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sums of products over the last dims of both (``a @ b.mT`` for matrices)."""
    a, b = as_tensor(input), as_tensor(other)
    if a.ndim == 0 or b.ndim == 0:
        return _op("mul")(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeMismatchError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    return composite("ViewBackward0", _inner_body, a, b)


def _vdot_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3), r(rng, 3), note="vectors"),
        sample(r(rng, 0), r(rng, 0), note="empty"),
    ]


@register(samples=_vdot_samples)
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two vectors, the first conjugated."""
    return composite("VdotBackward0", _vdot_body, input, other)


def _vdot_body(a: Tensor, b: Tensor) -> Tensor:
    return _op("dot")(conj(a), b)


named("VdotBackward0").complex_ok = True  # conj and dot are complex-aware


def _dist_body(a: Tensor, b: Tensor, *, p: Any) -> Tensor:
    return _op("vector_norm")(_op("sub")(a, b), p)


def _dist_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), r(rng, 2, 3), note="p=2"),
        sample(r(rng, 2, 3), r(rng, 3), 1, note="p=1, broadcast"),
        sample(r(rng, 4), r(rng, 4), 3.0, note="p=3"),
        sample(r(rng, 4), r(rng, 4), float("inf"), note="p=inf"),
    ]


@register(samples=_dist_samples)
def dist(input: Tensor, other: Tensor, p: Any = 2) -> Tensor:
    """The ``p``-norm of ``input - other``."""
    return composite("DistBackward0", _dist_body, input, other, p=p)


def _float_power_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(S.positive(rng, 2, 3), S.rand(rng, 2, 3), note="tensors"),
        sample(S.positive(rng, 3), 2.5, note="float exponent"),
        sample(S.rand(rng, 3), 2, note="int exponent"),
        sample(Const(np.array([1, 2, 3])), 2, note="int base"),
    ]


@register(samples=_float_power_samples, binding=Binding(either=("input", "exponent")))
def float_power(input: Any, exponent: Any) -> Tensor:
    """``pow`` computed in float64 (complex128 when either side is complex)."""
    base = as_tensor(input)
    wide = "complex128" if _is_complex(base) or _is_complex(exponent) else "float64"
    to64 = lambda v: _op("to")(v, wide) if isinstance(v, Tensor) else v  # noqa: E731
    return _op("pow")(to64(base), to64(exponent))


def _is_complex(v: Any) -> bool:
    return isinstance(v, complex) or (isinstance(v, Tensor) and v.dtype.kind == "c")


# -- nn.functional --------------------------------------------------------------------------


def _normalize_body(x: Tensor, *, p: Any, dim: Any, eps: float) -> Tensor:
    denom = _op("clamp_min")(_op("vector_norm")(x, p, dim, True), eps)
    return _op("div")(x, _op("expand_as")(denom, x))


def _normalize_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), note="rows"),
        sample(r(rng, 2, 3), 1.0, 0, note="p=1 dim 0"),
        sample(r(rng, 4), dim=0, note="vector"),
        sample(r(rng, 2, 3, 2), dim=-1, eps=1e-3, note="eps"),
    ]


@register(samples=_normalize_samples, method=False, torch="nn.functional.normalize")
def normalize(input: Tensor, p: Any = 2.0, dim: Any = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim`` (at least ``eps``)."""
    return _normalize_body(as_tensor(input), p=p, dim=dim, eps=eps)


def _shuffle_body(x: Tensor, *, r: int, up: bool) -> Tensor:
    *lead, c, h, w = x.shape
    n = len(lead)
    if up:
        y = _op("reshape")(x, *lead, c // (r * r), r, r, h, w)
        y = _op("permute")(y, *range(n), n, n + 3, n + 1, n + 4, n + 2)
        return _op("reshape")(y, *lead, c // (r * r), h * r, w * r)
    y = _op("reshape")(x, *lead, c, h // r, r, w // r, r)
    y = _op("permute")(y, *range(n), n, n + 2, n + 4, n + 1, n + 3)
    return _op("reshape")(y, *lead, c * r * r, h // r, w // r)


def _pixel_shuffle_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 1, 4, 2, 3), 2, note="batch"),
        sample(r(rng, 9, 2, 2), 3, note="no batch"),
        sample(r(rng, 2, 1, 4, 2, 2), 2, note="two batch dims"),
    ]


def _pixel_unshuffle_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 1, 1, 4, 6), 2, note="batch"),
        sample(r(rng, 2, 3, 3), 3, note="no batch"),
    ]


@register(samples=_pixel_shuffle_samples, method=False, torch="nn.functional.pixel_shuffle")
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C r², H, W)`` rearranged to ``(*, C, H r, W r)``."""
    x = as_tensor(input)
    r = int(upscale_factor)
    if x.ndim < 3:
        raise BadArgumentsError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{x.ndim} dimension(s)"
        )
    if r <= 0 or x.shape[-3] % (r * r):
        raise BadArgumentsError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={x.shape[-3]} is not divisible by "
            f"{r * r}"
        )
    return composite("PixelShuffleBackward0", _shuffle_body, x, r=r, up=True)


@register(samples=_pixel_unshuffle_samples, method=False, torch="nn.functional.pixel_unshuffle")
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H r, W r)`` rearranged to ``(*, C r², H, W)``."""
    x = as_tensor(input)
    r = int(downscale_factor)
    if x.ndim < 3:
        raise BadArgumentsError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, but got input "
            f"with {x.ndim} dimension(s)"
        )
    if r <= 0 or x.shape[-2] % r or x.shape[-1] % r:
        raise BadArgumentsError(
            "pixel_unshuffle expects height and width to be divisible by downscale_factor, "
            f"but input.size(-2)={x.shape[-2]}, input.size(-1)={x.shape[-1]}, "
            f"downscale_factor={r}"
        )
    return composite("PixelUnshuffleBackward0", _shuffle_body, x, r=r, up=False)


# -- predicates, searches and index makers (no gradient) ---------------------------------------


def _inf_samples(rng: np.random.Generator) -> list[Sample]:
    v = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -2.0])
    return [
        sample(Const(v), note="specials"),
        sample(Const(v.reshape(2, 3)), note="matrix"),
        sample(Const(np.array([1, 2])), note="int"),
        sample(Const(np.zeros((0, 2))), note="empty"),
    ]


@register(
    complex_inputs=(RuntimeError, "isposinf does not support complex inputs."),
    samples=_inf_samples,
    differentiable=False,
)
def isposinf(input: Tensor) -> Tensor:
    """Where ``input`` is +inf."""
    x = as_tensor(input)
    return Tensor._make(np.isposinf(x._data) if x.dtype.kind == "f" else np.zeros(x.shape, bool))


@register(
    complex_inputs=(RuntimeError, "isneginf does not support complex inputs."),
    samples=_inf_samples,
    differentiable=False,
)
def isneginf(input: Tensor) -> Tensor:
    """Where ``input`` is -inf."""
    x = as_tensor(input)
    return Tensor._make(np.isneginf(x._data) if x.dtype.kind == "f" else np.zeros(x.shape, bool))


@register(samples=_inf_samples, differentiable=False)
def isreal(input: Tensor) -> Tensor:
    """Where ``input`` has no imaginary part (everywhere for a real tensor)."""
    data = as_tensor(input)._data
    return Tensor._make(data.imag == 0 if data.dtype.kind == "c" else np.ones(data.shape, bool))


def _isin_samples(rng: np.random.Generator) -> list[Sample]:
    a = np.array([[1, 2, 3], [4, 5, 6]])
    return [
        sample(Const(a), Const(np.array([2, 6, 9])), note="ints"),
        sample(Const(a), Const(np.array([2, 6])), invert=True, note="invert"),
        sample(Const(a.astype(float)), 5.0, note="scalar test_elements"),
        sample(Const(np.zeros((0,))), Const(np.array([1.0])), note="empty"),
    ]


@register(
    complex_inputs=(RuntimeError, "Unsupported input type encountered for isin(): {type}"),
    samples=_isin_samples,
    differentiable=False,
    method=False,
)
def isin(
    elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False
) -> Tensor:
    """Where each of ``elements`` is one of ``test_elements``."""
    e, t = as_tensor(elements), as_tensor(test_elements)
    return Tensor._make(np.isin(e._data, t._data, assume_unique=assume_unique, invert=invert))


def _search_samples(rng: np.random.Generator) -> list[Sample]:
    seq = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
    vals = np.array([[3.0, 6.0, 9.0], [0.0, 10.0, 5.0]])
    return [
        sample(Const(seq), Const(vals), note="left"),
        sample(Const(seq), Const(vals), right=True, note="right"),
        sample(Const(seq), Const(vals), side="right", note="side right"),
        sample(
            Const(np.array([[1, 3, 5], [2, 4, 6]])), Const(np.array([[3], [5]])), note="batched"
        ),
        sample(Const(seq), 4.0, note="scalar"),
        sample(Const(seq), Const(vals), out_int32=True, note="int32"),
    ]


@register(
    complex_inputs="\"searchsorted_out_cpu\" not implemented for '{type}'",
    samples=_search_samples,
    differentiable=False,
    method=False,
)
def searchsorted(
    sorted_sequence: Tensor,
    input: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Any = None,
) -> Tensor:
    """Where each value would be inserted into the sorted last dim to keep it sorted."""
    seq = as_tensor(sorted_sequence)
    if side is not None:
        if side not in ("left", "right"):
            raise BadArgumentsError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise BadArgumentsError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    how: Any = "right" if right else "left"
    s = seq._data
    if sorter is not None:
        s = np.take_along_axis(s, as_tensor(sorter)._data, axis=-1)
    scalar = not isinstance(input, Tensor)
    v = np.asarray(input._data if isinstance(input, Tensor) else input)
    if s.ndim <= 1:
        out = np.searchsorted(s, v, side=how)
    else:
        if v.shape[:-1] != s.shape[:-1]:
            raise ShapeMismatchError(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                "N-1 dimensions of boundaries tensor and input value tensor must match, but "
                f"we got boundaries tensor {list(s.shape)} and input value tensor "
                f"{list(v.shape)}"
            )
        rows = int(np.prod(v.shape[:-1]))  # explicit: -1 cannot be inferred with empty shapes
        flat_s, flat_v = s.reshape(rows, s.shape[-1]), v.reshape(rows, v.shape[-1])
        out = np.zeros(flat_v.shape, dtype=np.int64)
        for k, (a, b) in enumerate(zip(flat_s, flat_v)):
            out[k] = np.searchsorted(a, b, side=how)
        out = out.reshape(v.shape)
    out = np.asarray(out, dtype=np.int32 if out_int32 else np.int64)
    return Tensor._make(out.reshape(()) if scalar else out)


def _bucketize_samples(rng: np.random.Generator) -> list[Sample]:
    b = np.array([1.0, 3.0, 5.0, 7.0])
    v = np.array([[0.0, 3.0, 6.0], [9.0, 1.0, 5.0]])
    return [
        sample(Const(v), Const(b), note="left"),
        sample(Const(v), Const(b), right=True, note="right"),
        sample(2.0, Const(b), note="scalar"),
        sample(Const(v), Const(b), out_int32=True, note="int32"),
    ]


@register(
    complex_inputs="\"searchsorted_out_cpu\" not implemented for '{type}'",
    samples=_bucketize_samples,
    differentiable=False,
    method=False,
)
def bucketize(
    input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False
) -> Tensor:
    """The bucket of each value among sorted 1-D ``boundaries``."""
    bounds = as_tensor(boundaries)
    if bounds.ndim != 1:
        raise BadArgumentsError(
            f"boundaries tensor must be 1 dimension, but got dim({bounds.ndim})"
        )
    return searchsorted(bounds, input, out_int32=out_int32, right=right)


def _index_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(3, 3, note="square"),
        sample(3, 4, 1, note="offset 1"),
        sample(4, 3, -1, note="offset -1"),
        sample(0, 0, note="empty"),
    ]


def _tri_indices(row: int, col: int, offset: int, upper: bool, dtype: Any) -> Tensor:
    rows, cols = np.nonzero(
        np.triu(np.ones((row, col), bool), offset)
        if upper
        else np.tril(np.ones((row, col), bool), offset)
    )
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    return Tensor._make(np.stack([rows, cols]).astype(dt).reshape(2, -1))


@register(
    samples=_index_samples, differentiable=False, method=False, estimate=estimates.tri_indices
)
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None) -> Tensor:
    """The (row, column) indices of the upper triangle of a ``row x col`` matrix."""
    return _tri_indices(row, col, offset, True, dtype)


@register(
    samples=_index_samples, differentiable=False, method=False, estimate=estimates.tri_indices
)
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None) -> Tensor:
    """The (row, column) indices of the lower triangle of a ``row x col`` matrix."""
    return _tri_indices(row, col, offset, False, dtype)


def _logspace_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(0, 2, 5, note="base 10"),
        sample(-1.0, 1.0, 4, 2.0, note="base 2"),
        sample(0, 1, 1, note="one step"),
        sample(0, 1, 0, note="no steps"),
        sample(0, 3, 4, dtype="float64", note="float64"),
    ]


@register(
    samples=_logspace_samples, differentiable=False, method=False, estimate=estimates.linspace
)
def logspace(
    start: Any,
    end: Any,
    steps: int,
    base: float = 10.0,
    *,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` points from ``base**start`` to ``base**end``, evenly spaced in exponent."""
    check_steps("logspace", start, end, steps)
    start, end = zero_dim_bound(start, "logspace", "start"), zero_dim_bound(end, "logspace", "end")
    if steps < 0:
        raise BadArgumentsError("number of steps must be non-negative")
    dt = dtypes.to_dtype(dtype)
    if dt.kind in "iu":  # PyTorch's integer kernel: integer bounds, a float32 base
        lo, hi = int(float(start)), int(float(end))
        step = (hi - lo) / (steps - 1) if steps > 1 else 0.0
        i = np.arange(steps, dtype=np.float64)
        exps = np.where(i < max(steps // 2, 1), lo + step * i, hi - step * (steps - i - 1))
        base = float(np.float32(base))
    else:
        exps = np.linspace(float(start), float(end), steps, dtype=np.float64)
    out = Tensor(np.power(float(base), exps).astype(dt))
    return out.requires_grad_(True) if requires_grad else out


# -- new tensors ----------------------------------------------------------------------------


def _empty_samples(rng: np.random.Generator) -> list[Sample]:
    return [sample(2, 3, note="sizes"), sample((4,), note="tuple"), sample(0, note="empty")]


@register(
    samples=_empty_samples,
    differentiable=False,
    method=False,
    estimate=estimates.sized,
    torch=lambda torch, *a, **k: torch.zeros(*a, **k),  # its values are unspecified
)
def empty(*size: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` (zeros here: the values are unspecified in PyTorch)."""
    return _op("zeros")(*size, dtype=dtype, requires_grad=requires_grad)


@register(
    samples=lambda rng: [sample(Const(S.rand(rng, 2, 3)))],
    differentiable=False,
    method=False,
    torch=lambda torch, *a, **k: torch.zeros_like(*a, **k),  # its values are unspecified
)
def empty_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor like ``input`` (zeros here: the values are unspecified in PyTorch)."""
    return _op("zeros_like")(input, dtype=dtype, requires_grad=requires_grad)


def _new_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(Const(S.rand(rng, 2)), (2, 3), note="tuple size"),
        sample(Const(np.array([1, 2])), [3], note="int64 source"),
        sample(Const(S.rand(rng, 2)), (2,), dtype="float64", note="dtype"),
    ]


def _new(input: Tensor, size: Any, dtype: Any, fill: Any, requires_grad: bool) -> Tensor:
    dt = input.dtype if dtype is None else dtypes.to_dtype(dtype)
    shape = tuple(size) if isinstance(size, (list, tuple)) else (size,)
    out = Tensor(np.full(shape, fill, dtype=dt))
    return out.requires_grad_(True) if requires_grad else out


@register(samples=_new_samples, differentiable=False, function=False, estimate=estimates.new_sized)
def new_zeros(
    input: Tensor, size: Any, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """Zeros of ``size`` with ``input``'s dtype (unless given)."""
    return _new(input, size, dtype, 0, requires_grad)


@register(samples=_new_samples, differentiable=False, function=False, estimate=estimates.new_sized)
def new_ones(input: Tensor, size: Any, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones of ``size`` with ``input``'s dtype (unless given)."""
    return _new(input, size, dtype, 1, requires_grad)


@register(
    samples=_new_samples,
    differentiable=False,
    function=False,
    estimate=estimates.new_sized,
    torch=lambda torch, x, *a, **k: x.new_zeros(*a, **k),  # its values are unspecified
)
def new_empty(
    input: Tensor, size: Any, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of ``size`` with ``input``'s dtype (zeros here: unspecified in PyTorch)."""
    return _new(input, size, dtype, 0, requires_grad)


def _new_full_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(Const(S.rand(rng, 2)), (2, 3), 1.5, note="float"),
        sample(Const(np.array([1, 2])), [3], 7, note="int64 source"),
        sample(Const(S.rand(rng, 2)), (2,), 2.0, dtype="float64", note="dtype"),
    ]


@register(
    samples=_new_full_samples, differentiable=False, function=False, estimate=estimates.new_full
)
def new_full(
    input: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """``fill_value`` in a tensor of ``size`` with ``input``'s dtype (unless given)."""
    return _new(input, size, dtype, fill_value, requires_grad)


def _new_tensor_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(Const(S.rand(rng, 2)), [1.0, 2.0], note="list"),
        sample(Const(np.array([1, 2])), [[1, 2]], note="int64 source"),
        sample(Const(S.rand(rng, 2)), 3, dtype="float64", note="dtype"),
    ]


@register(samples=_new_tensor_samples, differentiable=False, function=False)
def new_tensor(
    input: Tensor, data: Any, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """A new leaf holding ``data`` in ``input``'s dtype (unless given)."""
    dt = input.dtype if dtype is None else dtypes.to_dtype(dtype)
    value = data._data if isinstance(data, Tensor) else np.asarray(data)
    out = Tensor(np.array(value, dtype=dt))
    return out.requires_grad_(True) if requires_grad else out


# -- matrix functions ------------------------------------------------------------------------


def _square_batches(rng: np.random.Generator, *shape: int) -> np.ndarray:
    n = shape[-1]
    return rng.uniform(-0.5, 0.5, size=shape) + np.eye(n)


def _matrix_power_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(_square_batches(rng, 3, 3), 2, note="square"),
        sample(_square_batches(rng, 3, 3), 5, note="n=5"),
        sample(_square_batches(rng, 2, 3, 3), 3, note="batch"),
        sample(_square_batches(rng, 3, 3), 1, note="n=1"),
        sample(_square_batches(rng, 3, 3), -2, note="negative"),
        sample(_square_batches(rng, 2, 2), -1, note="inverse"),
    ]


@register(out_overlap="unchecked", samples=_matrix_power_samples, work=estimates.cubic(25))
def matrix_power(input: Tensor, n: int) -> Tensor:
    """The ``n``-th power of square matrices (of the inverse for negative ``n``), by
    repeated squaring as PyTorch does."""
    a = as_tensor(input)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise BadArgumentsError(
            "linalg.matrix_power: A must be batches of square matrices, but they are "
            + (f"{a.shape[-2]} by {a.shape[-1]} matrices" if a.ndim >= 2 else "not matrices")
        )
    if n == 0:  # torch: A.clone().copy_(eye): requires grad, a zero gradient
        eye = _op("eye")(a.shape[-1], dtype=dtypes.torch_name(a.dtype))
        return CopyBackwards.apply(_op("clone")(a), eye)
    if n < 0:
        a, n = _op("inv")(a), -n
    if n == 1:
        return a if a is not input else _op("clone")(a)
    result: Tensor | None = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else _op("matmul")(result, base)
        n >>= 1
        if n:
            base = _op("matmul")(base, base)
    assert result is not None
    return result


def _logdet_samples(rng: np.random.Generator) -> list[Sample]:
    return [
        sample(_square_batches(rng, 3, 3), note="matrix"),
        sample(_square_batches(rng, 2, 3, 3), note="batch"),
        sample(-_square_batches(rng, 3, 3), note="negative determinant: nan", gradcheck=False),
    ]


@register(samples=_logdet_samples, work=estimates.cubic(4))
def logdet(input: Tensor) -> Tensor:
    """``log(det(A))``: NaN where the determinant is negative (PyTorch's composite)."""
    sign, logabs = _op("slogdet")(input)
    return _op("where")(_op("lt")(sign, 0), float("nan"), logabs)
