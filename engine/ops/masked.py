"""``torch.masked`` on dense tensors: each reduction or normalization with ``mask=``
(broadcast to the input; True keeps an element). A masked-out element is replaced by
the reduction's identity (0 for sums, 1 for products, -inf for maxima ...) with
``where``, then the plain op runs, as torch/masked/_ops.py does for strided inputs.

Everything is a composition of registered ops, so gradients (zero at masked-out
elements), double backward and forward AD come from theirs. Registered as
``masked_<name>``; ``engine.masked`` gives them torch's names.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError
from ..registry import OPS, Const, Sample, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import ArgumentValueError, IndexRangeError
from ._util import as_tensor

_SMALL_INTS: tuple[np.dtype, ...] = tuple(
    np.dtype(t) for t in (np.uint8, np.bool_, np.int8, np.int16, np.int32)
)


def _op(name: str) -> Any:
    return OPS[name].fn


def _canonical_dim(dim: Any, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple (None or () for every dim), torch.masked's checks."""
    if dim == () or dim is None:
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise BadArgumentsError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexRangeError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {d})"
            )
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input: Tensor, mask: Any) -> Tensor:
    m = as_tensor(mask)
    if tuple(m.shape) != tuple(input.shape):
        if m.ndim > input.ndim:
            raise IndexRangeError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than "
                "of the input)"
            )
        m = _op("broadcast_to")(m, tuple(input.shape))
    return m if m.dtype == np.bool_ else m.to(dtypes.bool_)


def _identity(kind: str, input: Tensor) -> Any:
    dt = input.dtype
    if kind == "sum":
        return Tensor._make(np.asarray(0, dt))
    if kind == "prod":
        return Tensor._make(np.asarray(1, dt))
    if kind in ("amax", "amin"):
        if dt.kind == "f":
            return Tensor._make(np.asarray(-np.inf if kind == "amax" else np.inf, dt))
        if dt.kind in "iu":
            info = np.iinfo(dt)
            return Tensor._make(np.asarray(info.min if kind == "amax" else info.max, dt))
        raise NotImplementedError(f"identity of {kind} on {dtypes.torch_name(dt)} input")
    if kind == "median":
        return Tensor._make(np.asarray(np.nan, dt if dt.kind == "f" else dtypes.float32))
    raise NotImplementedError(kind)


def _combine(kind: str, input: Tensor, mask: Any) -> Tensor:
    """The input with masked-out elements replaced by ``kind``'s identity."""
    if mask is None:
        return input
    return _op("where")(_input_mask(input, mask), input, _identity(kind, input))


def _sum_dtype(input: Tensor, dtype: Any) -> Any:
    if dtype is not None:
        return dtype
    return dtypes.int64 if input.dtype in _SMALL_INTS else input.dtype


def _mask_of(rng: np.random.Generator, *shape: int) -> Const:
    """A random mask keeping two elements of every row and column at least (no slice
    fully masked out: its NaN or -inf would make finite differences meaningless)."""
    m = rng.random(shape) > 0.3
    m[:2] = True
    m[..., :2] = True
    return Const(m)


def _reduction_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), note="no mask"),
        sample(r(rng, 3, 4), 1, mask=_mask_of(rng, 3, 4), note="dim 1"),
        sample(r(rng, 3, 4), (0, 1), keepdim=True, mask=_mask_of(rng, 3, 1), note="broadcast mask"),
    ]


def _arg_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), note="no mask"),
        sample(r(rng, 3, 4), 1, mask=_mask_of(rng, 3, 4), note="dim 1"),
        sample(r(rng, 3, 4), 0, keepdim=True, mask=_mask_of(rng, 1, 4), note="broadcast mask"),
    ]


# torch's errors for a complex input where its kernels take real dtypes only
_COMPLEX_REFUSALS: dict[str, Any] = {
    "amax": "\"max_values_cpu\" not implemented for '{type}'",
    "amin": "\"min_values_cpu\" not implemented for '{type}'",
    "argmax": (RuntimeError, "argmax(): does not support complex input"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
}


def _define_reduction(name: str, doc: str) -> None:
    def op(
        input: Tensor,
        dim: Any = None,
        *,
        keepdim: bool = False,
        dtype: Any = None,
        mask: Tensor | None = None,
    ) -> Tensor:
        return _REDUCTIONS[name](as_tensor(input), dim, bool(keepdim), dtype, mask)

    op.__name__ = op.__qualname__ = f"masked_{name}"
    op.__doc__ = doc
    register(
        f"masked_{name}",
        samples=_arg_samples if name.startswith("arg") else _reduction_samples,
        method=False,
        torch=f"masked.{name}",
        differentiable=name not in ("argmax", "argmin"),
        complex_inputs=_COMPLEX_REFUSALS.get(name),
    )(op)


def _sum(a: Tensor, dim: Any, keepdim: bool, dtype: Any, mask: Any) -> Tensor:
    dims = _canonical_dim(dim, a.ndim)
    return _op("sum")(_combine("sum", a, mask), dims, keepdim, dtype=_sum_dtype(a, dtype))


def _prod(a: Tensor, dim: Any, keepdim: bool, dtype: Any, mask: Any) -> Tensor:
    dims = _canonical_dim(dim, a.ndim)
    out = _combine("prod", a, mask).to(_sum_dtype(a, dtype))
    for d in reversed(dims):
        out = _op("prod")(out, d, keepdim)
    return out


def _extreme(kind: str) -> Any:
    def run(a: Tensor, dim: Any, keepdim: bool, dtype: Any, mask: Any) -> Tensor:
        x = _combine(kind, a, mask)
        dims = _canonical_dim(dim, x.ndim)
        return _op(kind)(x, dims, keepdim).to(a.dtype if dtype is None else dtype)

    return run


def _arg(kind: str) -> Any:
    def run(a: Tensor, dim: Any, keepdim: bool, dtype: Any, mask: Any) -> Tensor:
        x = _combine("amax" if kind == "argmax" else "amin", a, mask)
        return _op(kind)(x, dim, keepdim).to(a.dtype if dtype is None else dtype)

    return run


def _mean(a: Tensor, dim: Any, keepdim: bool, dtype: Any, mask: Any) -> Tensor:
    source = "Optional" if dtype is not None else "Input"
    dt = dtypes.to_dtype(dtype) if dtype is not None else a.dtype
    if dt.kind != "f":
        raise ArgumentValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either a "
            f"floating point or complex dtype. Got: torch.{np.dtype(dt).name}"
        )
    if mask is None:
        count = _sum(Tensor._make(np.ones(a.shape, np.int64)), dim, keepdim, None, None)
        total = _sum(a, dim, keepdim, dt, None)
    else:
        m = _input_mask(a, mask)
        count = _op("sum")(m, _canonical_dim(dim, a.ndim), keepdim)
        total = _sum(a, dim, keepdim, dt, m)
    return total / count


def _std_var(
    a: Tensor,
    dim: Any,
    unbiased: Any,
    correction_opt: Any,
    keepdim: bool,
    dtype: Any,
    mask: Any,
    take_sqrt: bool,
) -> Tensor:
    if unbiased is not None and correction_opt is not None:
        raise BadArgumentsError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    dt = dtypes.to_dtype(dtype) if dtype is not None else a.dtype
    if dt.kind != "f":
        dt = dtypes.float32
    dims = _canonical_dim(dim, a.ndim)
    if mask is None:
        count = _op("sum")(Tensor._make(np.ones(a.shape, np.int64)), dims, True)
        total_x = _op("sum")(a, dims, True, dtype=dt)
        m = None
    else:
        m = _input_mask(a, mask)
        count = _op("sum")(m, dims, True)
        total_x = _op("sum")(_combine("sum", a, m), dims, True, dtype=dt)
    x = a - total_x / count
    total = _op("sum")(
        _combine("sum", x * x, m) if m is not None else x * x, dims, keepdim, dtype=dt
    )
    if not keepdim:
        count = _op("reshape")(count, tuple(total.shape))
    if correction != 0:
        count = count.to(dt) - correction
        count = _op("maximum")(count, Tensor._make(np.zeros((), dt)))
    out = (total / count).to(dt)
    return _op("sqrt")(out) if take_sqrt else out


_REDUCTIONS: dict[str, Any] = {
    "sum": _sum,
    "prod": _prod,
    "amax": _extreme("amax"),
    "amin": _extreme("amin"),
    "argmax": _arg("argmax"),
    "argmin": _arg("argmin"),
    "mean": _mean,
}

for _name, _doc in [
    ("sum", "The sum of the elements ``mask`` keeps."),
    ("prod", "The product of the elements ``mask`` keeps."),
    ("amax", "The largest element ``mask`` keeps (-inf where none)."),
    ("amin", "The smallest element ``mask`` keeps (inf where none)."),
    ("argmax", "The index of the largest element ``mask`` keeps."),
    ("argmin", "The index of the smallest element ``mask`` keeps."),
    ("mean", "The mean of the elements ``mask`` keeps (NaN where none)."),
]:
    _define_reduction(_name, _doc)


def _var_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), note="no mask"),
        sample(r(rng, 3, 4), 1, mask=_mask_of(rng, 3, 4), note="dim 1"),
        sample(r(rng, 3, 4), 0, False, keepdim=True, mask=_mask_of(rng, 3, 4), note="biased"),
        sample(r(rng, 3, 4), (0, 1), correction=0, mask=_mask_of(rng, 1, 4), note="correction"),
    ]


@register(
    complex_inputs="masked_var is not implemented for '{type}' in this engine",
    samples=_var_samples,
    method=False,
    torch="masked.var",
)
def masked_var(
    input: Tensor,
    dim: Any = None,
    unbiased: bool | None = None,
    *,
    correction: float | None = None,
    keepdim: bool = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """The variance of the elements ``mask`` keeps."""
    a = as_tensor(input)
    return _std_var(a, dim, unbiased, correction, bool(keepdim), dtype, mask, take_sqrt=False)


@register(
    complex_inputs="masked_std is not implemented for '{type}' in this engine",
    samples=_var_samples,
    method=False,
    torch="masked.std",
)
def masked_std(
    input: Tensor,
    dim: Any = None,
    unbiased: bool | None = None,
    *,
    correction: float | None = None,
    keepdim: bool = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """The standard deviation of the elements ``mask`` keeps."""
    a = as_tensor(input)
    return _std_var(a, dim, unbiased, correction, bool(keepdim), dtype, mask, take_sqrt=True)


def _dim_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), 1, note="no mask"),
        sample(r(rng, 3, 4), 1, mask=_mask_of(rng, 3, 4), note="dim 1"),
        sample(r(rng, 3, 4), 0, mask=_mask_of(rng, 1, 4), note="broadcast mask"),
    ]


@register(samples=_dim_samples, method=False, torch="masked.cumsum")
def masked_cumsum(
    input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """The running sum along ``dim``, masked-out elements counting 0."""
    a = as_tensor(input)
    dt = a.dtype if dtype is None else dtype
    d = _canonical_dim(dim, a.ndim)[0]
    return _op("cumsum")(_combine("sum", a, mask), d, dtype=dt).to(dt)


@register(samples=_dim_samples, method=False, torch="masked.cumprod")
def masked_cumprod(
    input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """The running product along ``dim``, masked-out elements counting 1."""
    a = as_tensor(input)
    dt = a.dtype if dtype is None else dtype
    d = _canonical_dim(dim, a.ndim)[0]
    return _op("cumprod")(_combine("prod", a, mask), d, dtype=dt).to(dt)


@register(samples=_dim_samples, method=False, torch="masked.median")
def masked_median(
    input: Tensor,
    dim: int = -1,
    *,
    keepdim: bool = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """The lower median along ``dim`` of the elements ``mask`` keeps (NaN where none)."""
    a = as_tensor(input)
    dt = a.dtype if dtype is None else dtypes.to_dtype(dtype)
    d = _canonical_dim(dim, a.ndim)[0]
    is_float = a.dtype.kind == "f"
    if not is_float:
        a = a.to(dtypes.float32)
    out = _op("nanmedian")(_combine("median", a, mask), d, keepdim).values
    if is_float:
        return out
    if not np.isnan(out._data).any():
        return out.to(dt)
    raise ArgumentValueError(
        "masked median expects no fully masked out rows if dtype is not floating point"
    )


@register(
    complex_inputs="masked_logsumexp is not implemented for '{type}' in this engine",
    samples=_reduction_samples,
    method=False,
    torch="masked.logsumexp",
)
def masked_logsumexp(
    input: Tensor,
    dim: Any = None,
    *,
    keepdim: bool = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """log(sum(exp)) of the elements ``mask`` keeps (-inf where none)."""
    a = as_tensor(input)
    dt = a.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, a.ndim)
    return _op("logsumexp")(_combine("amax", a, mask), dims, keepdim).to(dt)


def _logaddexp_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    keep = rng.random((3, 4)) > 0.4
    return [
        sample(r(rng, 3, 4), r(rng, 3, 4), note="no masks"),
        sample(
            r(rng, 3, 4),
            r(rng, 3, 4),
            input_mask=Const(keep),
            other_mask=Const(~keep | (rng.random((3, 4)) > 0.5)),  # never both out
            note="masks",
            gradcheck=False,  # -inf operands: second derivatives are NaN
        ),
    ]


@register(samples=_logaddexp_samples, method=False, torch="masked.logaddexp")
def masked_logaddexp(
    input: Tensor,
    other: Tensor,
    *,
    dtype: Any = None,
    input_mask: Tensor | None = None,
    other_mask: Tensor | None = None,
) -> Tensor:
    """log(exp(input) + exp(other)), each masked-out element counting as -inf."""
    a, b = as_tensor(input), as_tensor(other)
    dt = a.dtype if dtype is None else dtype
    return _op("logaddexp")(_combine("amax", a, input_mask), _combine("amax", b, other_mask)).to(dt)


def _norm_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), note="no mask"),
        sample(r(rng, 3, 4), 1, 1, mask=_mask_of(rng, 3, 4), note="L1 dim 1"),
        sample(r(rng, 3, 4), math.inf, 0, keepdim=True, mask=_mask_of(rng, 3, 4), note="inf"),
    ]


@register(samples=_norm_samples, method=False, torch="masked.norm")
def masked_norm(
    input: Tensor,
    ord: float | None = 2.0,
    dim: Any = None,
    *,
    keepdim: bool = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """The vector ``ord``-norm of the elements ``mask`` keeps."""
    a = as_tensor(input)
    dt = a.dtype if dtype is None else dtype
    x = a
    if mask is not None:
        fill = np.inf if ord == -math.inf else 0
        x = _op("where")(_input_mask(a, mask), a, Tensor._make(np.asarray(fill, a.dtype)))
    dims = _canonical_dim(dim, a.ndim)
    return _op("vector_norm")(x, ord, dims, bool(keepdim), dtype=dt)


def _define_normalization(name: str, fill: str, doc: str) -> None:
    def op(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
        a = as_tensor(input)
        dt = a.dtype if dtype is None else dtype
        d = _canonical_dim(dim, a.ndim)[0]
        return _op(name)(_combine(fill, a, mask), d, dtype=dt)

    op.__name__ = op.__qualname__ = f"masked_{name}"
    op.__doc__ = doc
    register(f"masked_{name}", samples=_dim_samples, method=False, torch=f"masked.{name}")(op)


_define_normalization("softmax", "amax", "softmax along ``dim`` over the elements ``mask`` keeps.")
_define_normalization(
    "log_softmax", "amax", "log_softmax along ``dim`` over the elements ``mask`` keeps."
)
_define_normalization("softmin", "amin", "softmin along ``dim`` over the elements ``mask`` keeps.")


def _normalize_samples(rng: np.random.Generator) -> list[Sample]:
    r = S.rand
    return [
        sample(r(rng, 3, 4), 2.0, 1, note="no mask"),
        sample(r(rng, 3, 4), 1.0, 0, mask=_mask_of(rng, 3, 4), note="L1 dim 0"),
    ]


@register(samples=_normalize_samples, method=False, torch="masked.normalize")
def masked_normalize(
    input: Tensor,
    ord: float,
    dim: int,
    *,
    eps: float = 1e-12,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """``input`` divided by the ``ord``-norm along ``dim`` of the elements ``mask`` keeps."""
    a = as_tensor(input)
    dt = a.dtype if dtype is None else dtype
    x = _combine("sum", a, mask)
    nrm = masked_norm(a, ord, dim, keepdim=True, dtype=dt, mask=mask)
    denom = _op("maximum")(nrm, Tensor._make(np.asarray(eps, nrm.dtype)))
    return _op("div")(x, denom)
