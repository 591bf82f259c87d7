"""ATen's native normalization kernels (``native_layer_norm``, ``native_group_norm``,
``native_batch_norm``, ``_native_batch_norm_legit``, ``_batch_norm_with_update``):
the normalized result together with the statistics the kernel saves for its backward.

The result is the composite of ``norm`` (one node with ATen's name); the statistics
are what ATen returns beside it: constants where its kernel makes them so (layer norm,
batch norm), differentiable nodes where ATen's backward reads their gradients (group
norm's mean and rstd).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..binding import Binding
from ..errors import BadArgumentsError, ShapeMismatchError
from ..estimates import copies_of
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S

# the samples with gradcheck=False: the statistics do not require grad (as PyTorch's)
# yet move with the input, which finite differences see; they are compared with PyTorch
from ._composite import composite
from ._util import as_tensor
from .elementwise import rsqrt
from .norm import (
    _batch_norm_body,
    _batch_stats,
    _check_channels,
    _dims,
    _floating,
    _same_dtype,
    _update_running,
    group_norm,
    layer_norm,
)
from .reduction import mean
from .shape import reshape


def _opt(value: Any) -> Tensor | None:
    return None if value is None else as_tensor(value)


def _const(a: np.ndarray, dtype: Any) -> Tensor:
    return Tensor._make(np.ascontiguousarray(a, dtype=dtype))


def _invstd(var: np.ndarray, eps: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(var + eps)


# -- layer norm ----------------------------------------------------------------------------


def _layer_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 4), [4], r(rng, 4), r(rng, 4), 1e-5, note="affine", gradcheck=False),
        sample(r(rng, 2, 3, 4), [3, 4], None, None, 0.5, note="no affine", gradcheck=False),
        sample(Const(r(rng, 3, 4)), [4], r(rng, 4), r(rng, 4), 1e-5, note="weight and bias"),
    ]


@register(
    samples=_layer_samples,
    method=False,
    results=3,
    estimate=copies_of(3, "input"),
    binding=Binding(tensors=("input",)),
)
def native_layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None,
    bias: Tensor | None,
    eps: float,
) -> Any:
    """(layer_norm's result, mean, rstd): the statistics over the normalized dims, kept
    as size-1 dims (constants: ATen's backward does not read their gradients)."""
    x = as_tensor(input)
    norm = tuple(int(n) for n in normalized_shape)
    if not norm:
        raise ShapeMismatchError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
            f"least one element, but got normalized_shape = {_dims(norm)}"
        )
    out = layer_norm(x, list(norm), weight, bias, eps)
    axis = x.ndim - len(norm)
    dims = tuple(range(axis, x.ndim))
    xd = x._data
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (
            xd.mean(axis=dims, keepdims=True)
            if xd.size
            else np.zeros(x.shape[:axis] + (1,) * len(norm))
        )
        v = ((xd - m) ** 2).mean(axis=dims, keepdims=True) if xd.size else m
    shape = x.shape[:axis] + (1,) * len(norm)
    return (
        out,
        _const(np.reshape(m, shape), xd.dtype),
        _const(np.reshape(_invstd(v, float(eps)), shape), xd.dtype),
    )


# -- group norm ----------------------------------------------------------------------------


def _group_mean_body(x: Tensor, *, n: int, groups: int) -> Tensor:
    return mean(reshape(x, (n, groups, -1 if n * groups else 0)), (2,))


def _group_rstd_body(x: Tensor, *, n: int, groups: int, eps: float) -> Tensor:
    xr = reshape(x, (n, groups, -1 if n * groups else 0))
    xc = xr - mean(xr, (2,), keepdim=True)
    return rsqrt(mean(xc * xc, (2,)) + eps)


def _group_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 4, 3), r(rng, 4), r(rng, 4), 2, 4, 3, 2, 1e-5, note="two groups"),
        sample(r(rng, 2, 6, 2, 2), None, None, 2, 6, 4, 3, 1e-5, note="4-d, no affine"),
    ]


@register(
    samples=_group_samples,
    method=False,
    results=3,
    estimate=copies_of(3, "input"),
    binding=Binding(tensors=("input",)),
)
def native_group_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    N: int,
    C: int,
    HxW: int,
    group: int,
    eps: float,
) -> Any:
    """(group_norm's result, mean, rstd) with the statistics per (sample, group), each
    a node of its own (ATen's backward reads their gradients too)."""
    x = as_tensor(input)
    if x.numel() != N * C * HxW:
        raise ShapeMismatchError(f"Expected input to have {N * C * HxW} elements, got {x.numel()}")
    out = group_norm(x, group, weight, bias, eps)
    name = "NativeGroupNormBackward0"
    m = composite(name, _group_mean_body, x, n=N, groups=group)
    rstd = composite(name, _group_rstd_body, x, n=N, groups=group, eps=float(eps))
    return out, m, rstd


# -- batch norm ----------------------------------------------------------------------------


def _bn(
    name: str,
    input: Any,
    weight: Any,
    bias: Any,
    running_mean: Any,
    running_var: Any,
    training: bool,
    momentum: float,
    eps: float,
    fused: str = "NativeBatchNormBackwardBackward0",
) -> tuple[Tensor, Tensor, Tensor]:
    """ATen's CPU batch norm: the result recorded as ``name``, the batch mean and
    inverse std when training (else empty), the running statistics updated in place."""
    x, w, b = as_tensor(input), _opt(weight), _opt(bias)
    rm, rv = _opt(running_mean), _opt(running_var)
    c = x.shape[1] if x.ndim > 1 else (x.shape[0] if x.ndim else 1)
    for what, t in (("weight", w), ("bias", b), ("running_mean", rm), ("running_var", rv)):
        _check_channels(what, t, c)
    if x.ndim < 2:
        raise ShapeMismatchError(f"batch_norm: expected 2 or more dimensions, got {x.ndim}-D input")
    _floating("batch_norm", x)
    _same_dtype(x, w, b, rm, rv)
    if not training and (rm is None or rv is None):
        which = "running_mean" if rm is None else "running_var"
        raise BadArgumentsError(f"{which} must be defined in evaluation mode")
    stats = None if training else (rm._data.copy(), rv._data.copy())  # type: ignore[union-attr]
    out = composite(
        name,
        _batch_norm_body,
        x,
        w,
        b,
        fused=fused,
        stats=stats,
        eps=float(eps),
    )
    dt = x._data.dtype
    if not training:
        return out, _const(np.empty(0), dt), _const(np.empty(0), dt)
    axes = (0,) + tuple(range(2, x.ndim))
    m, v = _batch_stats(x._data, axes)
    n = math.prod(x.shape[a] for a in axes)
    with np.errstate(invalid="ignore", divide="ignore"):
        biased = v * (n - 1) / n if n else v
    _update_running(rm, m, float(momentum))
    _update_running(rv, v, float(momentum))
    return out, _const(m, dt), _const(_invstd(biased, float(eps)), dt)


def _bn_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    stats = (Const(r(rng, 3)), Const(S.positive(rng, 3)))
    return [
        sample(
            r(rng, 4, 3),
            r(rng, 3),
            r(rng, 3),
            *stats,
            True,
            0.1,
            1e-5,
            note="training",
            gradcheck=False,
        ),
        sample(r(rng, 2, 3, 4), None, None, *stats, False, 0.1, 1e-5, note="evaluation"),
        sample(
            r(rng, 2, 3, 4),
            r(rng, 3),
            None,
            None,
            None,
            True,
            0.5,
            1e-5,
            note="no stats",
            gradcheck=False,
        ),
    ]


_BN_WRITES = ("running_mean", "running_var")


@register(
    samples=_bn_samples,
    method=False,
    results=3,
    estimate=copies_of(3, "input"),
    writes=_BN_WRITES,
    binding=Binding(tensors=("input",)),
)
def native_batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> Any:
    """(batch_norm's result, batch mean, batch inverse std), the statistics empty in
    evaluation; training updates the running statistics in place."""
    return _bn(
        "NativeBatchNormBackward0",
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )


def _legit_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    stats = (Const(r(rng, 3)), Const(S.positive(rng, 3)))
    return [
        sample(
            r(rng, 4, 3),
            r(rng, 3),
            r(rng, 3),
            *stats,
            True,
            0.1,
            1e-5,
            note="training",
            gradcheck=False,
        ),
        sample(r(rng, 2, 3, 4), None, r(rng, 3), *stats, False, 0.1, 1e-5, note="evaluation"),
        sample(r(rng, 2, 3, 4), r(rng, 3), None, True, 0.5, 1e-5, note="no stats", gradcheck=False),
    ]


@register(
    samples=_legit_samples,
    method=False,
    results=3,
    estimate=copies_of(3, "input"),
    writes=_BN_WRITES,
    binding=Binding(tensors=("input",)),
)
def _native_batch_norm_legit(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Any,
    running_var: Any,
    training: Any = None,
    momentum: Any = None,
    eps: Any = None,
) -> Any:
    """``native_batch_norm`` with running statistics, or, called as ``(input, weight,
    bias, training, momentum, eps)``, without (ATen's ``no_stats`` overload)."""
    if isinstance(running_mean, bool):  # the no_stats overload
        return _bn(
            "NativeBatchNormLegitBackward1",
            input,
            weight,
            bias,
            None,
            None,
            running_mean,
            running_var,
            training,
        )
    return _bn(
        "NativeBatchNormLegitBackward0",
        input,
        weight,
        bias,
        running_mean,
        running_var,
        bool(training),
        momentum,
        eps,
    )


def _update_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    stats = (Const(r(rng, 3)), Const(S.positive(rng, 3)))
    return [
        sample(
            r(rng, 4, 3), r(rng, 3), r(rng, 3), *stats, 0.1, 1e-5, note="training", gradcheck=False
        ),
        sample(
            Const(r(rng, 4, 3)), r(rng, 3), r(rng, 3), *stats, 0.1, 1e-5, note="weight and bias"
        ),
    ]


@register(
    samples=_update_samples,
    method=False,
    results=4,
    estimate=copies_of(3, "input"),
    writes=_BN_WRITES,
    binding=Binding(tensors=("input", "running_mean", "running_var")),
    torch="ops.aten._batch_norm_with_update",
)
def _batch_norm_with_update(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor,
    running_var: Tensor,
    momentum: float,
    eps: float,
) -> Any:
    """Training batch norm: (result, batch mean, batch inverse std, an empty reserve),
    the running statistics updated in place."""
    out = _bn(
        "BatchNormWithUpdateBackward0",
        input,
        weight,
        bias,
        running_mean,
        running_var,
        True,
        momentum,
        eps,
        fused="BatchNormBackwardBackward0",  # its backward op: aten::batch_norm_backward
    )
    return (*out, Tensor._make(np.empty(0, np.uint8)))
