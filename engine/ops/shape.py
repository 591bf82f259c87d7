"""Shape ops: views and copies that move gradients without arithmetic.

Each view returns a numpy view of its input's memory, as PyTorch's views share
storage; each rule's gradient is the inverse movement, written with these same
ops so that ``create_graph=True`` records it (``permute`` undoes ``permute``,
``cat`` slices, ``stack`` selects, ``split`` concatenates).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..dual import LINEAR
from ..errors import ArgumentTypeError, ArgumentValueError, BadArgumentsError, ShapeMismatchError
from ..function import Function
from ..primitives import (
    CloneBackward0,
    ExpandBackward0,
    SelectBackward0,
    SliceBackward0,
    ViewBackward0,
    cast,
    slice_key,
    viewable,
)
from ..primitives import reshape as reshape_to
from ..registry import Const, Results, register, sample
from ..tensor import Tensor
from . import samples as S
from ._util import as_tensor, normalize_dim, shape_arg


def _sizes(shape: tuple[int, ...]) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """Resolve one ``-1`` and check the element count, with PyTorch's message."""
    if shape.count(-1) > 1:
        raise BadArgumentsError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise BadArgumentsError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 and numel == 0:
            raise ShapeMismatchError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                "unspecified dimension size -1 can be any value and is ambiguous"
            )
        if known == 0 or numel % known:
            raise ShapeMismatchError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ShapeMismatchError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _reshape_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3), (3, 2)),
        sample(S.rand(rng, 2, 3), (-1,)),
        sample(S.rand(rng, 2, 3), 3, 1, 2, note="sizes as separate ints"),
        sample(S.rand(rng), (1, 1), note="0-d"),
        sample(S.rand(rng, 1), (), note="to 0-d"),
        sample(S.rand(rng, 0, 2), (2, 0), note="empty"),
    ]


@register(samples=_reshape_samples)
def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The same elements in a new shape (one dimension may be -1); a view when possible."""
    a = as_tensor(input)
    return reshape_to(a, _infer_shape(shape_arg(shape), a._data.size))


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3), (3, 2)),
        sample(S.rand(rng, 4), (2, -1)),
        sample(S.rand(rng), (1,)),
        sample(S.rand(rng, 0, 3), (3, 0)),
        sample(S.rand(rng, 2, 4), "int64", gradcheck=False, note="as a dtype: the same bits"),
        sample(S.rand(rng, 3, 2), "int32", gradcheck=False, note="as a dtype of other size"),
    ]
)
def view(input: Tensor, *shape: Any) -> Tensor:
    """``reshape`` that PyTorch allows only when the result can share the input's memory;
    ``view(dtype)`` reads the same bytes as another dtype (no history, as in PyTorch)."""
    a = as_tensor(input)
    if len(shape) == 1 and isinstance(shape[0], (str, np.dtype)):
        return _view_dtype(a, dtypes.to_dtype(shape[0]))
    target = _infer_shape(shape_arg(shape), a._data.size)
    if not viewable(a._data, target):
        raise ShapeMismatchError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return ViewBackward0.apply(a, shape=target)


def _view_dtype(a: Tensor, dt: np.dtype) -> Tensor:
    """PyTorch's ``view(dtype)``: same-size dtypes reinterpret every element; otherwise the
    last dim (contiguous, its size divisible by the ratio) is split or merged."""
    src = a._data
    old, new = src.dtype.itemsize, dt.itemsize
    names = f"{dtypes.type_name(src.dtype)} as {dtypes.type_name(dt)}"
    if old != new:
        if src.ndim == 0:
            raise BadArgumentsError(
                f"self.dim() cannot be 0 to view {names} (different element sizes)"
            )
        stride = src.strides[-1] // old if src.shape[-1] > 1 else 1
        if stride != 1:
            raise BadArgumentsError(
                f"self.stride(-1) must be 1 to view {names} (different element sizes), "
                f"but got {stride}"
            )
        if old < new and src.shape[-1] % (new // old):
            raise BadArgumentsError(
                f"self.size(-1) must be divisible by {new // old} to view {names} "
                f"(different element sizes), but got {src.shape[-1]}"
            )
    out = Tensor._make(src.view(dt))
    out._vc = a._vc  # the same memory: in-place writes through either are seen by both
    return out


def _flatten_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 3, 4)),
        sample(S.rand(rng, 2, 3, 4), 1),
        sample(S.rand(rng, 2, 3, 4), 0, -2),
        sample(S.rand(rng, 2, 3, 4), start_dim=1, end_dim=1, note="no-op returns the input"),
        sample(S.rand(rng), note="0-d becomes (1,)"),
        sample(S.rand(rng, 0, 3)),
    ]


@register(samples=_flatten_samples)
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim..end_dim`` into one (a 0-d tensor becomes shape (1,))."""
    a = as_tensor(input)
    nd = a._data.ndim
    start, end = normalize_dim(start_dim, nd), normalize_dim(end_dim, nd)
    if start > end:
        raise BadArgumentsError("flatten() has invalid args: start_dim cannot come after end_dim")
    if nd == 0:
        return reshape(a, (1,))
    if start == end:
        return a  # PyTorch returns the input itself
    shape = a._data.shape
    target = shape[:start] + (math.prod(shape[start : end + 1]),) + shape[end + 1 :]
    if a._data.flags.c_contiguous:
        return ViewBackward0.apply(a, shape=target)
    return reshape(a, target)


def _unsqueeze_dims(g: Tensor, dims: tuple[int, ...]) -> Tensor:
    for d in dims:  # ascending: each dim is an index into the final shape
        g = UnsqueezeBackward0.apply(g, dim=d)
    return g


class SqueezeBackward0(Function):
    """``squeeze()``: every size-1 dimension."""

    name = "SqueezeBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...]) -> np.ndarray:
        ctx.dims, ctx.in_shape = dims, a._data.shape
        return a._data.squeeze(axis=dims) if dims else a._data.view()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return _unsqueeze_dims(g, ctx.dims)


class SqueezeBackward1(SqueezeBackward0):
    """``squeeze(dim)``."""

    name = "SqueezeBackward1"


class SqueezeBackward2(SqueezeBackward0):
    """``squeeze(dims)`` with a tuple of dims."""

    name = "SqueezeBackward2"


def _squeeze_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 2, 1, 3, 1)),
        sample(S.rand(rng, 2, 1, 3), 1),
        sample(S.rand(rng, 2, 1, 3), 0, note="size != 1: unchanged"),
        sample(S.rand(rng, 1, 3, 1), (0, -1)),
        sample(S.rand(rng), note="0-d"),
        sample(S.rand(rng), 0, note="0-d with dim"),
        sample(S.rand(rng, 0, 1)),
    ]


@register(samples=_squeeze_samples)
def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Drop size-1 dimensions: all of them, or those among ``dim`` (an int or a tuple)."""
    a = as_tensor(input)
    shape = a._data.shape
    if dim is None:
        return SqueezeBackward0.apply(a, dims=tuple(i for i, s in enumerate(shape) if s == 1))
    if isinstance(dim, (list, tuple)):
        dims = [normalize_dim(d, a.ndim) for d in dim]
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise BadArgumentsError(f"dim {d} appears multiple times in the list of dims")
        picked = tuple(d for d in sorted(dims) if a.ndim and shape[d] == 1)
        return SqueezeBackward2.apply(a, dims=picked)
    d = normalize_dim(dim, a.ndim)
    return SqueezeBackward1.apply(a, dims=(d,) if a.ndim and shape[d] == 1 else ())


class UnsqueezeBackward0(Function):
    name = "UnsqueezeBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dim: int) -> np.ndarray:
        ctx.dim = dim
        return np.expand_dims(a._data, dim)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return SqueezeBackward1.apply(g, dims=(ctx.dim,))


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3), 0),
        sample(S.rand(rng, 2, 3), -1),
        sample(S.rand(rng, 2, 3), 1),
        sample(S.rand(rng), 0),
        sample(S.rand(rng, 0, 2), 2),
    ]
)
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at ``dim`` (in ``[-ndim-1, ndim]``)."""
    a = as_tensor(input)
    return UnsqueezeBackward0.apply(a, dim=normalize_dim(dim, a.ndim + 1))


class PermuteBackward0(Function):
    name = "PermuteBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, dims: tuple[int, ...]) -> np.ndarray:
        ctx.dims = dims
        return a._data.transpose(dims)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return PermuteBackward0.apply(g, dims=_inverse(ctx.dims))


def _inverse(dims: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 2, 3, 4), 2, 0, 1),
        sample(S.rand(rng, 2, 3), (1, 0)),
        sample(S.rand(rng, 2, 3, 4), (-1, 0, 1)),
        sample(S.rand(rng), ()),
        sample(S.rand(rng, 0, 3), (1, 0)),
    ]
)
def permute(input: Tensor, *dims: Any) -> Tensor:
    """Reorder dimensions: result dimension i is input dimension ``dims[i]`` (a view)."""
    a = as_tensor(input)
    order = shape_arg(dims)
    if len(order) != a.ndim:
        raise BadArgumentsError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{a.ndim} is not equal to len(dims) = {len(order)}"
        )
    norm = tuple(normalize_dim(d, a.ndim) for d in order)
    if len(set(norm)) != len(norm):
        raise BadArgumentsError("permute(): duplicate dims are not allowed.")
    return PermuteBackward0.apply(a, dims=norm)


def _legacy_name(dtype: np.dtype) -> str:
    kind = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}
    return f"torch.{kind.get(dtypes.torch_name(dtype), 'Float')}Tensor"


def _expand_shape(a: Tensor, sizes: tuple[int, ...]) -> tuple[int, ...]:
    in_shape = a._data.shape
    if len(sizes) < len(in_shape):
        raise ShapeMismatchError(
            f"expand({_legacy_name(a.dtype)}{{{_sizes(in_shape)}}}, size={_sizes(sizes)}): the "
            f"number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(in_shape)})"
        )
    lead = len(sizes) - len(in_shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise ShapeMismatchError(
                    f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                    f"non-existing dimension {i}"
                )
            out.append(s)
            continue
        d = in_shape[i - lead]
        if s == -1:
            out.append(d)
        elif d == 1 or d == s:
            out.append(s)
        else:
            raise ShapeMismatchError(
                f"The expanded size of the tensor ({s}) must match the existing size ({d}) at "
                f"non-singleton dimension {i}.  Target sizes: {_sizes(sizes)}.  "
                f"Tensor sizes: {_sizes(in_shape)}"
            )
    return tuple(out)


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 1), (3, 4)),
        sample(S.rand(rng, 2), 3, 2),
        sample(S.rand(rng), (2,)),
        sample(S.rand(rng, 1, 2), (-1, 2)),
        sample(S.rand(rng, 1, 2), (0, 2), note="empty"),
    ],
    estimate=estimates.expand,
)
def expand(input: Tensor, *sizes: Any) -> Tensor:
    """A broadcast view to a larger shape (-1 keeps a dimension)."""
    a = as_tensor(input)
    return ExpandBackward0.apply(a, shape=_expand_shape(a, shape_arg(sizes)))


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 1), (2, 3, 4)),
        sample(S.rand(rng, 3), (2, 3)),
        sample(S.rand(rng), (2, 2)),
        sample(S.rand(rng, 2), (0, 2), note="empty"),
    ],
    estimate=estimates.expand,
)
def broadcast_to(input: Tensor, shape: Any) -> Tensor:
    """``expand`` to ``shape`` under the broadcasting rules (a view)."""
    a = as_tensor(input)
    return ExpandBackward0.apply(a, shape=_expand_shape(a, shape_arg((shape,))))


def to_dtype(input: Tensor, dtype: Any) -> Tensor:
    """Cast to another dtype (differentiable between float dtypes)."""
    return cast(as_tensor(input), dtype)


@register(
    name="to",
    samples=lambda rng: [
        sample(S.rand(rng, 3), "float32", note="float32 rounding", gradcheck=False),
        sample(S.rand(rng, 2, 2), "float64"),
    ],
)
def to(
    input: Tensor,
    dtype: Any = None,
    *more: Any,
    device: Any = None,
    copy: bool = False,
    **_: Any,
) -> Tensor:
    """Cast to ``dtype`` (float32, float64, int64, bool); the result is a copy only if it differs
    (or ``copy``). PyTorch's other forms: ``x.to("cpu")`` (the only device), ``x.to(other)``."""
    text = str(dtype)
    if more and (text == "cpu" or text.startswith(("cpu:", "cuda", "mps"))):
        device, dtype, more = dtype, more[0], more[1:]  # ``x.to(device, dtype, ...)``
    if len(more) >= 2:  # then ``non_blocking, copy`` (non_blocking means nothing here)
        copy = bool(more[1])
    if isinstance(dtype, Tensor):
        dtype = dtypes.torch_name(dtype._data.dtype)
    for where in (dtype, device):
        text = str(where)
        if where is not None and (text == "cpu" or text.startswith(("cpu:", "cuda", "mps"))):
            if text.startswith(("cuda", "mps")):
                raise BadArgumentsError(f"the engine runs on the CPU only, not on {text!r}")
            dtype = None if where is dtype else dtype
    if dtype is None:
        return clone(input) if copy else input
    out = to_dtype(input, dtype)
    return clone(out) if copy and out is input else out


@register(samples=lambda rng: S.unary(rng))
def clone(input: Tensor) -> Tensor:
    """A copy with its own memory that keeps the history (the gradient passes unchanged)."""
    return CloneBackward0.apply(as_tensor(input))


@register(samples=lambda rng: [*S.unary(rng), sample(S.rand(rng, 3, 2).T, note="transposed")])
def contiguous(input: Tensor) -> Tensor:
    """The input itself when its memory is in row-major order, else a row-major copy."""
    a = as_tensor(input)
    if a._data.flags.c_contiguous:
        return a
    return CloneBackward0.apply(a, contiguous=True)


@register(samples=lambda rng: S.unary(rng), differentiable=False)
def detach(input: Tensor) -> Tensor:
    """The same data (shared memory and version counter) without history."""
    return as_tensor(input).detach()


# -- joining and splitting ---------------------------------------------------


def _tensor_list(tensors: Any, op: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(
            f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
            f"{type(tensors).__name__}"
        )
    out = []
    for i, t in enumerate(tensors):
        if isinstance(t, Tensor):
            out.append(t)
        elif isinstance(t, (list, np.ndarray)):
            out.append(as_tensor(t))
        else:
            raise ArgumentTypeError(
                f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}"
            )
    return out


def _narrow(g: Tensor, dim: int, start: int, length: int) -> Tensor:
    return SliceBackward0.apply(g, key=slice_key(dim, start, start + length))


class CatBackward0(Function):
    name = "CatBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, *tensors: Tensor, dim: int, dtype: np.dtype) -> np.ndarray:
        # 1-D empty tensors are skipped, as PyTorch's legacy rule allows
        ctx.dim = dim
        ctx.sizes = sizes = [t._data.shape[dim] if t._data.shape != (0,) else -1 for t in tensors]
        arrays = [t._data for t, s in zip(tensors, sizes) if s >= 0]
        if not arrays:
            return np.empty((0,), dtype)
        return np.concatenate(arrays, axis=dim, dtype=dtype, casting="unsafe")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        out: list[Tensor | None] = []
        offset = 0
        for size, need in zip(ctx.sizes, ctx.needs_input_grad):
            if size < 0:
                out.append(Tensor._make(np.zeros((0,), g.dtype)) if need else None)
                continue
            out.append(_narrow(g, ctx.dim, offset, size) if need else None)
            offset += size
        return tuple(out)


def _cat_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample([S.rand(rng, 2, 3), S.rand(rng, 1, 3)]),
        sample([S.rand(rng, 2, 3), S.rand(rng, 2, 2), S.rand(rng, 2, 1)], dim=1),
        sample([S.rand(rng, 2, 3), S.rand(rng, 2, 3)], dim=-1),
        sample([S.rand(rng, 3)], note="one tensor"),
        sample(
            [S.rand(rng, 2, 3), Const(np.array([1.0, 2.0, 3.0]).reshape(1, 3))], note="a constant"
        ),
        sample([S.rand(rng, 0, 3), S.rand(rng, 2, 3)], note="empty part"),
        sample([S.rand(rng, 2), S.rand(rng, 0)], note="legacy 1-D empty is skipped"),
    ]


@register(samples=_cat_samples, method=False, estimate=estimates.total, out_overlap="none")
def cat(tensors: Any, dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension ``dim`` (dtypes promote as in PyTorch)."""
    ts = _tensor_list(tensors, "cat")
    if not ts:
        raise ArgumentValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(ts):
        if t._data.ndim == 0:
            raise BadArgumentsError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated"
            )
    dtype = dtypes.result_type(*ts)
    ref_i = next((i for i, t in enumerate(ts) if t._data.shape != (0,)), None)
    if ref_i is None:
        return CatBackward0.apply(*ts, dim=0, dtype=dtype)
    ref = ts[ref_i]._data.shape
    d = normalize_dim(dim, len(ref))
    for i, t in enumerate(ts):
        shape = t._data.shape
        if shape == (0,):
            continue
        if len(shape) != len(ref):
            raise ShapeMismatchError(
                f"Tensors must have same number of dimensions: got {len(ref)} and {len(shape)}"
            )
        for k, (a, b) in enumerate(zip(ref, shape)):
            if k != d and a != b:
                raise ShapeMismatchError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {a} "
                    f"but got size {b} for tensor number {i} in the list."
                )
    return CatBackward0.apply(*ts, dim=d, dtype=dtype)


class StackBackward0(Function):
    name = "StackBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, *tensors: Tensor, dim: int, dtype: np.dtype) -> np.ndarray:
        ctx.dim = dim
        return np.stack([t._data for t in tensors], axis=dim, dtype=dtype, casting="unsafe")

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        return tuple(
            SelectBackward0.apply(g, dim=ctx.dim, index=i) if need else None
            for i, need in enumerate(ctx.needs_input_grad)
        )


def _stack_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample([S.rand(rng, 2, 3), S.rand(rng, 2, 3)]),
        sample([S.rand(rng, 2, 3), S.rand(rng, 2, 3), S.rand(rng, 2, 3)], dim=2),
        sample([S.rand(rng, 3), S.rand(rng, 3)], dim=-1),
        sample([S.rand(rng), S.rand(rng)], note="0-d"),
        sample([S.rand(rng, 2), Const(np.array([1.0, 2.0]))], note="a constant"),
        sample([S.rand(rng, 0, 3), S.rand(rng, 0, 3)], dim=1, note="empty"),
    ]


@register(samples=_stack_samples, method=False, estimate=estimates.total)
def stack(tensors: Any, dim: int = 0) -> Tensor:
    """Join equally shaped tensors along a new dimension ``dim``."""
    ts = _tensor_list(tensors, "stack")
    if not ts:
        raise BadArgumentsError("stack expects a non-empty TensorList")
    ref = ts[0]._data.shape
    for i, t in enumerate(ts):
        if t._data.shape != ref:
            raise ShapeMismatchError(
                f"stack expects each tensor to be equal size, but got {_sizes(ref)} at entry 0 "
                f"and {_sizes(t._data.shape)} at entry {i}"
            )
    d = normalize_dim(dim, len(ref) + 1)
    return StackBackward0.apply(*ts, dim=d, dtype=dtypes.result_type(*ts))


class SplitBackward0(Function):
    name = "SplitBackward0"
    complex_ok = True  # a rearrangement: the same for complex values
    jvp = LINEAR
    is_view = True

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, sizes: tuple[int, ...], dim: int) -> tuple[np.ndarray, ...]:
        ctx.dim = dim
        bounds = np.cumsum(sizes)[:-1].tolist()
        return tuple(np.split(a._data, bounds, axis=dim))

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> Tensor:
        if len(grads) == 1:
            return grads[0]
        return CatBackward0.apply(*grads, dim=ctx.dim, dtype=grads[0].dtype)


class SplitWithSizesBackward0(SplitBackward0):
    name = "SplitWithSizesBackward0"


def _at_least_1d(a: Tensor, op: str) -> None:
    if a._data.ndim == 0:
        raise BadArgumentsError(f"{op} expects at least a 1-dimensional tensor")


def _split_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 5, 2), 2),
        sample(S.rand(rng, 2, 6), [1, 2, 3], dim=1),
        sample(S.rand(rng, 4, 3), 4, note="one piece"),
        sample(S.rand(rng, 3, 4), 3, dim=-1),
        sample(S.rand(rng, 0, 3), 2, note="empty"),
    ]


@register(
    samples=_split_samples,
    results=Results("split", arg="split_size_or_sections"),
    estimate=estimates.split,
    numpy_names=False,  # torch.functional.split: written in Python, no alias parsed
)
def split(input: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    a = as_tensor(input)
    _at_least_1d(a, "split")
    d = normalize_dim(dim, a.ndim)
    n = a._data.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = shape_arg((split_size_or_sections,))
        if any(s < 0 for s in sizes):
            raise BadArgumentsError(
                "split_with_sizes expects split_sizes have only non-negative entries, but got "
                f"split_sizes={list(sizes)}"
            )
        if sum(sizes) != n:
            raise ShapeMismatchError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {d}), but got split_sizes={list(sizes)}"
            )
        return SplitWithSizesBackward0.apply(a, sizes=sizes, dim=d)
    size = shape_arg((split_size_or_sections,))[0]
    if size < 0:
        raise BadArgumentsError(
            f"split expects split_size be non-negative, but got split_size={size}"
        )
    if size == 0 and n != 0:
        raise BadArgumentsError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
        )
    pieces = max(-(-n // size), 1) if size else 1
    sizes = tuple(min(size, n - i * size) for i in range(pieces))
    return SplitBackward0.apply(a, sizes=sizes, dim=d)


def _chunk_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(S.rand(rng, 6, 2), 3),
        sample(S.rand(rng, 2, 5), 3, dim=1, note="uneven"),
        sample(S.rand(rng, 6), 4, note="fewer pieces than asked"),
        sample(S.rand(rng, 0, 2), 2, note="empty"),
    ]


@register(samples=_chunk_samples, results=Results("chunk", arg="chunks"), estimate=estimates.chunk)
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` nearly equal pieces along ``dim`` (there may be fewer)."""
    a = as_tensor(input)
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)):
        raise BadArgumentsError(f"chunks must be an integer, got {chunks!r}")
    _at_least_1d(a, "chunk")
    if chunks <= 0:
        raise BadArgumentsError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, a.ndim)
    n = a._data.shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:
        return SplitWithSizesBackward0.apply(a, sizes=(0,) * int(chunks), dim=d)
    return split(a, size, d)
