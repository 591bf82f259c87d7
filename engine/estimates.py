"""Size estimates: an upper bound of the elements a call will allocate, read from
its arguments before it runs, for ops whose result can be much larger than their
inputs (``zeros(10**9)``, ``x.expand(...)``, ``a @ b``). Registered with the op
(``@register(estimate=...)``); the service refuses a call whose estimate is over
its limit before the engine allocates anything.

An estimate sees the call's arguments as given (tensors, or, before name
resolution, strings): anything with a ``shape`` is a tensor. It counts the
results and the intermediates that dominate them (a convolution's padded input
and im2col buffer, ``svd``'s full matrices), and returns None when it cannot
tell; the service checks the result's size again afterwards, so an estimate only
has to catch the huge.

An op that declares none gets ``default``: the broadcast of its tensors, right
for elementwise ops; an op of one tensor and numbers is taken to make no more than
its input (``may_grow``). ``tests/engine/test_estimates.py`` calls every op with
hostile sizes and fails for an op whose allocation outgrows its estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "shape") and not isinstance(v, list | tuple | np.ndarray)


def tensors_in(values: Iterable[Any]) -> list[Any]:
    """The tensors among the values, nested lists included."""
    out = []
    for v in values:
        if _is_tensor(v):
            out.append(v)
        elif isinstance(v, list | tuple):
            out.extend(tensors_in(v))
    return out


def shape_of(args: Sequence[Any]) -> tuple[int, ...] | None:
    """Integers given as ``f(2, 3)`` or ``f((2, 3))`` or ``f([2, 3])``."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = args[0]
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return tuple(args)
    return None


def _elements(shape: tuple[int, ...] | None) -> int | None:
    return None if shape is None else math.prod(max(d, 0) for d in shape)


def arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    """The argument at ``index`` or by ``name`` (None when not given)."""
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else None


def numel(t: Any) -> int:
    return math.prod(t.shape) if _is_tensor(t) else 0


def copies_of(count: int, name: str) -> Callable[[tuple[Any, ...], dict[str, Any]], int | None]:
    """An op whose results and working arrays are at most ``count`` copies of its
    tensor argument ``name`` (the first): factorizations, norms with statistics."""

    def estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
        t = arg(args, kwargs, 0, name)
        return count * numel(t) + 64 if _is_tensor(t) else None

    return estimate


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | np.integer) and not isinstance(v, bool) else None


# -- creation ops: sized by their arguments ---------------------------------------------


def sized(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``zeros(2, 3)``, ``ones((2, 3))``, ``rand(size=...)``."""
    size = kwargs.get("size", kwargs.get("shape"))
    return _elements(shape_of(args if size is None else [size]))


def full(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    size = kwargs.get("size", args[0] if args else ())
    return _elements(shape_of([size]))


def eye(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    n = kwargs.get("n", args[0] if args else 0)
    m = kwargs.get("m", args[1] if len(args) > 1 else n)
    if isinstance(n, int) and isinstance(m, int | type(None)):
        return max(n, 0) * max(m if m is not None else n, 0)
    return None


def linspace(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``linspace``/``logspace``: the steps, twice (the exponents, then the powers)."""
    steps = _int(arg(args, kwargs, 2, "steps"))
    return None if steps is None else 2 * max(steps, 0)


def new_sized(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``x.new_ones(size)`` and its kin (``x.new_ones(2, 3)`` too)."""
    size = kwargs.get("size")
    return _elements(shape_of(args[1:] if size is None else [size]))


def new_full(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    return _elements(shape_of([arg(args, kwargs, 1, "size")]))


def tri_indices(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``tril_indices(row, col)``: a row x col mask, then up to two indices per entry."""
    row, col = _int(arg(args, kwargs, 0, "row")), _int(arg(args, kwargs, 1, "col"))
    if row is None or col is None:
        return None
    return 3 * max(row, 0) * max(col, 0)


def normal(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``normal(mean, std, size)``: the size, else the broadcast of mean and std."""
    size = arg(args, kwargs, 2, "size")
    if size is not None:  # drawn in float64, then cast
        n = _elements(shape_of([size]))
        return None if n is None else 2 * n
    return default(args, kwargs)


def arange(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    nums = [a for a in args if isinstance(a, int | float) and not isinstance(a, bool)]
    start, end, step = 0.0, 0.0, 1.0
    if len(nums) == 1:
        end = nums[0]
    elif len(nums) >= 2:
        start, end = nums[0], nums[1]
        step = nums[2] if len(nums) > 2 else kwargs.get("step", 1.0)
    start = kwargs.get("start", start)
    end = kwargs.get("end", end)
    step = kwargs.get("step", step)
    try:
        count = math.ceil((float(end) - float(start)) / float(step))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None
    return max(count, 0) if math.isfinite(count) else None


# -- ops on tensors whose result outgrows their inputs ----------------------------------


def expand(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``x.expand(*sizes)`` / ``broadcast_to(x, shape)``: -1 keeps the input's size."""
    if not args or not _is_tensor(args[0]):
        return None
    size = kwargs.get("shape", kwargs.get("size"))
    sizes = shape_of(args[1:] if size is None else [size])
    if sizes is None:
        return None
    given = args[0].shape
    offset = len(sizes) - len(given)
    return _elements(
        tuple(given[i - offset] if d == -1 and i >= offset else d for i, d in enumerate(sizes))
    )


def matmul(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Batch (broadcast) x rows of the first x columns of the second."""
    tensors = tensors_in(list(args) + list(kwargs.values()))
    if len(tensors) < 2:
        return None
    a, b = tensors[0].shape, tensors[1].shape
    rows = a[-2] if len(a) >= 2 else 1
    cols = b[-1] if len(b) >= 2 else 1
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2]) if len(a) > 2 or len(b) > 2 else ()
    except ValueError:
        return None  # the op reports the mismatch in its own words
    return math.prod(batch) * rows * cols


def outer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    tensors = tensors_in(list(args) + list(kwargs.values()))
    return math.prod(math.prod(t.shape) for t in tensors[:2]) if len(tensors) >= 2 else None


def total(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``cat``/``stack``/``hstack``: the sum of the inputs' sizes."""
    tensors = tensors_in(list(args) + list(kwargs.values()))
    return sum(math.prod(t.shape) for t in tensors) if tensors else None


def index_select(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``index_select(x, dim, index)``: x's size with ``dim`` replaced by the index's."""
    x, dim, index = (
        arg(args, kwargs, 0, "input"),
        arg(args, kwargs, 1, "dim"),
        arg(args, kwargs, 2, "index"),
    )
    if not _is_tensor(x) or not _is_tensor(index) or _int(dim) is None:
        return None
    shape = x.shape
    if not shape:
        return numel(index)
    d = int(dim) % len(shape) if -len(shape) <= int(dim) < len(shape) else 0
    return math.prod(shape[:d]) * math.prod(shape[d + 1 :]) * numel(index)


def linear(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``linear(x, W)``: x's rows times W's output features (and the broadcast bias)."""
    x, w = arg(args, kwargs, 0, "input"), arg(args, kwargs, 1, "weight")
    if not _is_tensor(x) or not _is_tensor(w):
        return None
    rows = math.prod(x.shape[:-1])
    out = w.shape[0] if len(w.shape) == 2 else 1
    return rows * out + numel(arg(args, kwargs, 2, "bias"))


def inner(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``inner(a, b)``: every leading index of a with every leading index of b."""
    a, b = arg(args, kwargs, 0, "input"), arg(args, kwargs, 1, "other")
    if not _is_tensor(a) or not _is_tensor(b):
        return None
    return math.prod(a.shape[:-1]) * math.prod(b.shape[:-1]) + numel(a) + numel(b)


# a result's own cost, empty or not (a Tensor object and its array header), in elements
PER_RESULT = 64


def chunk(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``chunk(x, n)``: n results (empty ones too: ``x[0:0].chunk(10**7)``)."""
    x, n = arg(args, kwargs, 0, "input"), _int(arg(args, kwargs, 1, "chunks"))
    return None if n is None else numel(x) + PER_RESULT * max(n, 0)


def _or_zero(dim: Any) -> Any:
    """A dim argument, 0 when absent (never ``dim or 0``: a tensor has no truth value)."""
    return 0 if dim is None else dim


def _dim_size(x: Any, dim: Any) -> int | None:
    d = _int(dim)
    if not _is_tensor(x) or d is None or not x.shape or not -len(x.shape) <= d < len(x.shape):
        return None
    return int(x.shape[d])


def split(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``split(x, size)``: one result per piece (``split(x, 1)`` of a long x: many)."""
    x, size = arg(args, kwargs, 0, "input"), arg(args, kwargs, 1, "split_size_or_sections")
    n = _dim_size(x, _or_zero(arg(args, kwargs, 2, "dim")))
    if n is None:
        return None
    pieces = len(size) if isinstance(size, list | tuple) else -(-n // max(_int(size) or 1, 1))
    return numel(x) + PER_RESULT * pieces


def sections(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``tensor_split(x, n)``: n results; at given indices, one more than the indices."""
    x, cuts = arg(args, kwargs, 0, "input"), arg(args, kwargs, 1, "indices_or_sections")
    if isinstance(cuts, list | tuple):
        pieces = len(cuts) + 1
    elif _is_tensor(cuts):
        pieces = (int(cuts.shape[0]) + 1) if cuts.shape else (_int(cuts.item()) or 1)
    else:
        pieces = _int(cuts) or 1
    return numel(x) + PER_RESULT * max(pieces, 0)


def unbind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``unbind(x, dim)``: one result per index along ``dim``."""
    x = arg(args, kwargs, 0, "input")
    n = _dim_size(x, _or_zero(arg(args, kwargs, 1, "dim")))
    return None if n is None else numel(x) + PER_RESULT * n


def getitem(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Indexing by tensors: index elements x the rows they pick (at least the input)."""
    tensors = tensors_in(list(args) + list(kwargs.values()))
    if len(tensors) < 2:
        return None  # basic indexing returns a view, never larger than the input
    shape = tensors[0].shape
    rows = math.prod(shape[1:]) if len(shape) else 1
    return max(math.prod(shape), sum(math.prod(t.shape) for t in tensors[1:]) * rows)


def default(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """An op that declares no estimate: the broadcast of its tensors (elementwise)."""
    return broadcast(tensors_in(list(args) + list(kwargs.values())))


def broadcast(tensors: Sequence[Any]) -> int | None:
    """What an op without its own estimate allocates: its tensors' broadcast."""
    if len(tensors) < 2:
        return None
    try:
        return math.prod(np.broadcast_shapes(*(t.shape for t in tensors)))
    except ValueError:
        return None  # the op reports the mismatch (shape_mismatch)


# -- factorizations: results (and numpy's working copy) from the matrix's shape ---------


def _matrix_dims(a: Any) -> tuple[int, int, int] | None:
    """(batch, rows, columns) of a matrix argument."""
    if not _is_tensor(a) or len(a.shape) < 2:
        return None
    return math.prod(a.shape[:-2]), a.shape[-2], a.shape[-1]


def svd(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``svd(A)``: U (m x m with ``full_matrices``, else m x k), S, Vh, and A's copy."""
    dims = _matrix_dims(arg(args, kwargs, 0, "A"))
    if dims is None:
        return None
    batch, m, n = dims
    k = min(m, n)
    full = arg(args, kwargs, 1, "full_matrices")
    u_vh = m * m + n * n if full is None or bool(full) else (m + n) * k
    return batch * (u_vh + k + m * n)


def qr(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``qr(A)``: Q (m x m when ``complete``, else m x k), R, and A's copy."""
    dims = _matrix_dims(arg(args, kwargs, 0, "A"))
    if dims is None:
        return None
    batch, m, n = dims
    k = min(m, n)
    q = m * m if arg(args, kwargs, 1, "mode") == "complete" else m * k
    return batch * (q + 2 * m * n)


def eig(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """``linalg.eig(A)``: complex eigenvectors and eigenvalues (two elements' worth of
    memory each) and numpy's working copy of A."""
    dims = _matrix_dims(arg(args, kwargs, 0, "A"))
    if dims is None:
        return None
    batch, m, n = dims
    return batch * (2 * (n * n + n) + m * n)


# -- work: multiply-adds of one numpy call that nothing interrupts ------------------------


def cubic(factor: float) -> Callable[[tuple[Any, ...], dict[str, Any]], int | None]:
    """A LAPACK factorization of the first matrix argument (batch x m x n): ``factor``
    x batch x m x n x min(m, n) multiply-adds (``factor``: its time measured against a
    matmul of the same size), and a second matrix argument (``solve``'s B) costs its
    columns x m x n more."""

    def work(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
        mats = [t for t in tensors_in(list(args) + list(kwargs.values())) if len(t.shape) >= 2]
        if not mats:
            return None
        batch, m, n = _matrix_dims(mats[0]) or (1, 1, 1)
        total = factor * batch * m * n * min(m, n)
        if len(mats) > 1:
            total += math.prod(mats[1].shape) * max(m, n)
        return int(total)

    return work
