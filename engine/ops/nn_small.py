"""Three small ``torch.nn.functional`` ops over existing engine ops:
``local_response_norm`` (PyTorch writes it in Python, so its nodes are the plain
ops'), and two aten kernels written as named composites so their ``grad_fn`` is
PyTorch's: ``pdist`` (``PdistBackward0``) and ``multilabel_margin_loss``
(``MultilabelMarginLossBackward0``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import BadArgumentsError, ShapeMismatchError
from ..registry import OPS, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import ArgumentValueError, composite
from ._util import as_tensor
from .loss import _apply_reduction, _reduction


def _op(name: str) -> Any:
    return OPS[name].fn


def _input_shape(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, ...] | None:
    x = args[0] if args else kwargs.get("input")
    shape = getattr(x, "shape", None)
    return None if shape is None else tuple(shape)


def _same_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    shape = _input_shape(args, kwargs)
    return None if shape is None else 4 * math.prod(shape)


# -- local_response_norm ----------------------------------------------------------------------


def _lrn_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The squares padded by ``size`` channels, then pooled."""
    shape = _input_shape(args, kwargs)
    size = args[1] if len(args) > 1 else kwargs.get("size")
    if shape is None or len(shape) < 2 or not isinstance(size, int):
        return None
    rest = math.prod(shape) // max(shape[1], 1)
    return 4 * math.prod(shape) + 2 * rest * (shape[1] + abs(size))


def _lrn_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 1, 6, 3), 2, alpha=3e-5, beta=0.5, k=1.25, note="3-d"),
        sample(r(rng, 2, 5, 2, 3), 3, note="4-d, defaults"),
    ]


@register(
    samples=_lrn_samples,
    method=False,
    torch="nn.functional.local_response_norm",
    estimate=_lrn_estimate,
    numpy_names=False,
    sizes_one_by_one=False,
)
def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Each value divided by ``(k + α·mean of squares over size neighbouring channels)^β``."""
    x = as_tensor(input)
    dim = x.ndim
    if dim < 3:
        raise ArgumentValueError(
            "Expected 3D or higher dimensionality                          input (got "
            f"{dim} dimensions)"
        )
    if x._data.size == 0:
        return x
    div = x * x
    if dim == 3:
        div = _op("unsqueeze")(div, 1)
        div = _op("pad")(div, (0, 0, size // 2, (size - 1) // 2))
        div = _op("squeeze")(_op("avg_pool2d")(div, (size, 1), stride=1), 1)
    else:
        sizes = x.shape
        div = _op("reshape")(div, (sizes[0], 1, sizes[1], sizes[2], -1))
        div = _op("pad")(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = _op("squeeze")(_op("avg_pool3d")(div, (size, 1, 1), stride=1), 1)
        div = _op("reshape")(div, sizes)
    div = _op("pow")(div * alpha + k, beta)
    return x / div


# -- pdist ------------------------------------------------------------------------------------


def _pdist_body(x: Tensor, *, i: np.ndarray, j: np.ndarray, p: float) -> Tensor:
    a = _op("index_select")(x, 0, Tensor._make(i))
    b = _op("index_select")(x, 0, Tensor._make(j))
    return _op("vector_norm")(a - b, p, 1)


def _pdist_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 4, 3), note="p=2"),
        sample(r(rng, 5, 2), 1.0, note="p=1"),
        sample(r(rng, 3, 4), float("inf"), note="p=inf"),
        sample(r(rng, 4, 3), 3.0, note="p=3"),
    ]


def _pdist_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    shape = _input_shape(args, kwargs)
    if shape is None or len(shape) != 2:
        return None
    n, m = shape
    return (n * (n - 1) // 2) * (2 * m + 1) + 2 * n * n


@register(samples=_pdist_samples, method=False, torch="pdist", estimate=_pdist_estimate)
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between rows ``i < j``, in row-major order of the pairs."""
    x = as_tensor(input)
    if x.ndim != 2:
        raise ShapeMismatchError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if x.dtype.kind != "f":
        raise BadArgumentsError("pdist only supports floating-point dtypes")
    if p < 0:
        raise BadArgumentsError("pdist only supports non-negative p values")
    i, j = np.triu_indices(x.shape[0], 1)
    return composite("PdistBackward0", _pdist_body, x, i=i, j=j, p=float(p))


# -- multilabel_margin_loss -------------------------------------------------------------------


def _mlm_body(x: Tensor, *, pairs: np.ndarray, red: str, shape: tuple[int, ...]) -> Tensor:
    """``pairs[n, a, i]`` counts target ``a`` of sample ``n`` against non-target ``i``."""
    n, c = pairs.shape[0], pairs.shape[1]
    x2 = _op("reshape")(x, (n, c))
    z = _op("clamp_min")(1 - _op("unsqueeze")(x2, 2) + _op("unsqueeze")(x2, 1), 0)
    loss = (z * Tensor._make(pairs.astype(x.dtype))).sum((1, 2)) / c
    return _op("reshape")(loss, shape) if red == "none" else _apply_reduction(loss, red)


def _mlm_pairs(t: np.ndarray, c: int) -> np.ndarray:
    n = t.shape[0]
    pairs = np.zeros((n, c, c), dtype=np.int64)
    for s in range(n):
        row = t[s]
        stop = np.nonzero(row < 0)[0]
        labels = row[: stop[0]] if stop.size else row
        member = np.zeros(c, dtype=bool)
        member[labels] = True
        for a in labels:
            pairs[s, a] += ~member
    return pairs


def _mlm_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    t = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [2, -1, 0, 0]])
    return [
        sample(r(rng, 3, 4), t, note="mean"),
        sample(r(rng, 3, 4), t, reduction="none", note="none"),
        sample(r(rng, 4), np.array([1, 3, -1, 2]), reduction="sum", note="1-d, sum"),
    ]


@register(
    complex_inputs="\"multilabel_margin_loss_forward_out_frame\" not implemented for '{type}'",
    samples=_mlm_samples,
    method=False,
    torch="nn.functional.multilabel_margin_loss",
    estimate=_same_size,
    numpy_names=False,
)
def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-label hinge loss: ``Σ_j Σ_{i∉y} max(0, 1 - (x[y_j] - x[i])) / C`` over the
    targets ``y`` listed before the first ``-1``."""
    if size_average is not None or reduce is not None:
        reduction = "none" if reduce is False else "mean" if size_average in (None, True) else "sum"
    red = _reduction(reduction)
    x, t = as_tensor(input), as_tensor(target)
    dims = "[" + ", ".join(str(v) for v in x.shape) + "]"
    if x.ndim > 2 or (x.ndim == 2 and x.shape[1] == 0) or (x.ndim == 1 and x.shape[0] == 0):
        raise ShapeMismatchError(
            f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {dims}"
        )
    c = x.shape[-1] if x.ndim else 1
    n = x.shape[0] if x.ndim == 2 else 1
    want = (n, c) if x.ndim == 2 else ((c,) if x.ndim == 1 else ())
    if t.shape != want and not (x.ndim <= 1 and t.ndim <= 1 and t._data.size == c):
        tdims = "[" + ", ".join(str(v) for v in t.shape) + "]"
        raise ShapeMismatchError(f"inconsistent target size: {tdims} for input of size: {dims}")
    tv = np.asarray(t._data).reshape(n, c).astype(np.int64)
    if ((tv < -1) | (tv >= c)).any():
        raise ShapeMismatchError("argument #2 'target' is out of range")
    shape = (n,) if x.ndim == 2 else ()
    return composite(
        "MultilabelMarginLossBackward0",
        _mlm_body,
        x,
        pairs=_mlm_pairs(tv, c),
        red=red,
        shape=shape,
    )
