"""Normalization and the other parts of a layer: layer_norm, batch_norm,
group_norm, instance_norm, embedding, one_hot and bilinear, as
``torch.nn.functional`` computes them.

PyTorch runs each normalization as one kernel with one node
(``NativeLayerNormBackward0``, ...); we write its math once as a composite of
engine ops recorded under that name (``_composite``), so its gradient and its
double backward come from the same lines as its value.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import (
    BadArgumentsError,
    DtypeMismatchError,
    IndexOutOfRangeError,
    ShapeMismatchError,
)
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import (
    ArgumentAssertionError,
    ArgumentTypeError,
    ArgumentValueError,
    IndexRangeError,
    KernelDtypeError,
    composite,
)
from ._util import as_tensor, normalize_dim
from .elementwise import rsqrt
from .indexing import index_select
from .products import einsum
from .reduction import mean
from .shape import reshape

_TYPE = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "bool": "Bool"}


def _type(dt: np.dtype) -> str:
    return _TYPE.get(dtypes.torch_name(dt), str(dt).capitalize())


def _cpp(t: Tensor) -> str:
    """The C++ name of a tensor's dtype (``float``, ``double``), as some messages spell it."""
    return {"Float": "float", "Double": "double", "Long": "long int"}.get(
        _type(t.dtype), _type(t.dtype).lower()
    )


def _dims(shape: tuple[int, ...]) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _opt(value: Any) -> Tensor | None:
    return None if value is None else as_tensor(value)


def _normalize(x: Tensor, dims: tuple[int, ...], eps: float) -> Tensor:
    """``(x - mean) / sqrt(biased var + eps)`` over ``dims``."""
    xc = x - mean(x, dims, keepdim=True)
    return xc * rsqrt(mean(xc * xc, dims, keepdim=True) + eps)


def _affine(y: Tensor, w: Tensor | None, b: Tensor | None, shape: tuple[int, ...]) -> Tensor:
    if w is not None:
        y = y * reshape(w, shape)
    if b is not None:
        y = y + reshape(b, shape)
    return y


def _channel_shape(x: Tensor) -> tuple[int, ...]:
    """Where a per-channel vector broadcasts against (N, C, *)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


# -- layer_norm ----------------------------------------------------------------------------


def _layer_norm_body(
    x: Tensor, w: Tensor | None, b: Tensor | None, *, k: int, eps: float
) -> Tensor:
    shape = x.shape[x.ndim - k :]
    return _affine(_normalize(x, tuple(range(x.ndim - k, x.ndim)), eps), w, b, shape)


def _layer_norm_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 4), [4], r(rng, 4), r(rng, 4), note="weight and bias"),
        sample(r(rng, 2, 3, 4), (3, 4), note="two normalized dims, no affine"),
        sample(r(rng, 3, 5), (5,), r(rng, 5), eps=1e-3, note="weight only"),
        sample(r(rng, 3, 5), [5], None, r(rng, 5), note="bias only"),
        sample(r(rng, 4), [4], r(rng, 4), r(rng, 4), note="1-d"),
        sample(r(rng, 0, 4), [4], r(rng, 4), r(rng, 4), note="empty batch"),
    ]


@register(samples=_layer_norm_samples, method=False, torch="nn.functional.layer_norm")
def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""
    x, w, b = as_tensor(input), _opt(weight), _opt(bias)
    if not isinstance(normalized_shape, (list, tuple)):
        raise ArgumentTypeError(
            "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
            + type(normalized_shape).__name__
        )
    norm = tuple(int(n) for n in normalized_shape)
    k = len(norm)
    if x.ndim < k or x.shape[x.ndim - k :] != norm:
        raise ShapeMismatchError(
            f"Given normalized_shape={_dims(norm)}, expected input with shape "
            f"[*{''.join(f', {n}' for n in norm)}], but got input of size{_dims(x.shape)}"
        )
    for what, t in (("weight", w), ("bias", b)):
        if t is not None and t.shape != norm:
            raise ShapeMismatchError(
                f"Expected {what} to be of same shape as normalized_shape, but got {what} of "
                f"shape {_dims(t.shape)} and normalized_shape = {_dims(norm)}"
            )
    _floating("LayerNormKernelImpl", x)
    _same_dtype(x, w, b)
    return composite(
        "NativeLayerNormBackward0",
        _layer_norm_body,
        x,
        w,
        b,
        fused="NativeLayerNormBackwardBackward0",
        k=k,
        eps=float(eps),
    )


def _same_dtype(x: Tensor, *params: Tensor | None) -> None:
    """PyTorch's CPU norms take parameters of the input's dtype only."""
    for t in params:
        if t is not None and t.dtype != x.dtype:
            if x.dtype == np.dtype(np.float32):
                raise DtypeMismatchError(
                    "mixed dtype (CPU): expect parameter to have scalar type of Float"
                )
            raise DtypeMismatchError("mixed dtype (CPU): all inputs must share same datatype.")


def _floating(op: str, x: Tensor) -> None:
    if not dtypes.is_floating(x.dtype):
        raise KernelDtypeError(f"\"{op}\" not implemented for '{_type(x.dtype)}'")


# -- batch_norm ----------------------------------------------------------------------------


def _batch_norm_body(
    x: Tensor,
    w: Tensor | None,
    b: Tensor | None,
    *,
    stats: tuple[np.ndarray, np.ndarray] | None,
    eps: float,
) -> Tensor:
    shape = _channel_shape(x)
    if stats is None:
        return _batch_transform(x, (0,) + tuple(range(2, x.ndim)), w, b, eps)
    # evaluation: the running statistics are constants
    rm, rv = (Tensor._make(s.reshape(shape)) for s in stats)
    return _linear_terms(x, rm, rsqrt(rv + eps), w, b, shape)


def _batch_transform(
    x: Tensor, dims: tuple[int, ...], w: Tensor | None, b: Tensor | None, eps: float
) -> Tensor:
    """Normalized over ``dims`` with the batch statistics, then the affine terms."""
    m = mean(x, dims, keepdim=True)
    xc = x - m
    invstd = rsqrt(mean(xc * xc, dims, keepdim=True) + eps)
    return _linear_terms(x, m, invstd, w, b, _channel_shape(x))


def _linear_terms(
    x: Tensor, m: Tensor, invstd: Tensor, w: Tensor | None, b: Tensor | None, shape: Any
) -> Tensor:
    """PyTorch's CPU batch norm kernel: ``x * alpha + beta`` with ``alpha = invstd * w``
    and ``beta = b - mean * alpha`` (an infinite weight gives NaN where ``x * alpha`` and
    ``beta`` are opposite infinities, not the sign of ``x - mean``)."""
    alpha = invstd if w is None else invstd * reshape(w, shape)
    shift = m * alpha
    beta = -shift if b is None else reshape(b, shape) - shift
    return x * alpha + beta


def _update_running(running: Tensor | None, batch: np.ndarray, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch``, in place. PyTorch's kernel
    writes the buffer directly: its version counter does not move."""
    if running is not None:
        data = running._data
        if not data.flags.writeable:
            data = running._data = np.array(data)
        np.copyto(data, (1 - momentum) * data + momentum * batch.astype(data.dtype))


def _batch_stats(xd: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Batch mean and unbiased variance (what the running averages take)."""
    n = math.prod(xd.shape[a] for a in axes)
    m = xd.mean(axis=axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = ((xd - np.expand_dims(m, axes)) ** 2).sum(axis=axes) / (n - 1)
    return m, v


def _check_channels(what: str, t: Tensor | None, c: int) -> None:
    if t is not None and t._data.size != c:
        raise ShapeMismatchError(f"{what} should contain {c} elements not {t._data.size}")


def _bn_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand

    def stats(c: int) -> tuple[Const, Const]:
        return Const(r(rng, c)), Const(S.positive(rng, c))

    return [
        sample(r(rng, 4, 3), *stats(3), r(rng, 3), r(rng, 3), training=True, note="training 2-d"),
        sample(
            r(rng, 2, 3, 4), *stats(3), r(rng, 3), r(rng, 3), training=True, note="training 3-d"
        ),
        sample(
            r(rng, 2, 2, 2, 3),
            *stats(2),
            training=True,
            momentum=0.3,
            note="training 4-d, no affine",
        ),
        sample(r(rng, 3, 2), None, None, training=True, note="training, no running stats"),
        sample(r(rng, 2, 3, 4), *stats(3), r(rng, 3), r(rng, 3), note="evaluation"),
        sample(r(rng, 2, 3), *stats(3), None, r(rng, 3), eps=0.1, note="evaluation, bias only"),
    ]


@register(
    samples=_bn_samples,
    method=False,
    torch="nn.functional.batch_norm",
    writes=("running_mean", "running_var"),
)
def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of (N, C, *) by batch statistics (training, which also
    updates ``running_mean``/``running_var`` in place) or by the running ones."""
    x, w, b = as_tensor(input), _opt(weight), _opt(bias)
    rm, rv = _opt(running_mean), _opt(running_var)
    if momentum is None or isinstance(momentum, bool):
        raise ArgumentTypeError(
            f"batch_norm(): argument 'momentum' (position 7) must be float, not "
            f"{type(momentum).__name__ if momentum is not None else 'NoneType'}"
        )
    c = x.shape[1] if x.ndim > 1 else 0
    if training and x.ndim == 0:  # F.batch_norm's _verify_batch_size reads size[0]
        raise IndexOutOfRangeError("tuple index out of range")
    if training and x.ndim >= 1:
        per_channel = x.shape[0] * math.prod(x.shape[2:])
        if per_channel == 1:
            raise ArgumentValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"torch.Size({_dims(x.shape)})"
            )
    for what, t in (("running_mean", rm), ("running_var", rv), ("weight", w), ("bias", b)):
        _check_channels(what, t, c)
    if x.ndim == 1 and x.shape[0] == 0 and w is None and b is None:
        return x.clone()  # ATen answers an empty input with a copy (CloneBackward0)
    if x.ndim < 2:  # PyTorch reads the channel dim 1 (its error: dim 1 out of range)
        normalize_dim(1, x.ndim)
    _floating("batch_norm", x)
    _same_dtype(x, w, b, rm, rv)
    if not training and (rm is None or rv is None):
        which = "running_mean" if rm is None else "running_var"
        raise BadArgumentsError(f"{which} must be defined in evaluation mode")
    # copies: a later training step updates the buffers in place
    stats = None if training else (rm._data.copy(), rv._data.copy())  # type: ignore[union-attr]
    out = composite(
        "NativeBatchNormBackward0",
        _batch_norm_body,
        x,
        w,
        b,
        fused="NativeBatchNormBackwardBackward0",
        stats=stats,
        eps=eps,
    )
    if training and (rm is not None or rv is not None):
        m, v = _batch_stats(x._data, (0,) + tuple(range(2, x.ndim)))
        _update_running(rm, m, float(momentum))
        _update_running(rv, v, float(momentum))
    return out


# -- instance_norm and group_norm ----------------------------------------------------------


def _instance_body(
    x: Tensor,
    w: Tensor | None,
    b: Tensor | None,
    *,
    stats: tuple[np.ndarray, np.ndarray] | None,
    eps: float,
) -> Tensor:
    return (
        _batch_norm_body(x, w, b, stats=stats, eps=eps)
        if stats
        else _batch_transform(x, tuple(range(2, x.ndim)), w, b, eps)
    )


def _in_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 4), note="plain"),
        sample(r(rng, 2, 3, 2, 2), weight=r(rng, 3), bias=r(rng, 3), note="affine 4-d"),
        sample(
            r(rng, 2, 3, 4),
            Const(r(rng, 3)),
            Const(S.positive(rng, 3)),
            momentum=0.2,
            note="running stats updated",
        ),
        sample(
            r(rng, 2, 3, 4),
            Const(r(rng, 3)),
            Const(S.positive(rng, 3)),
            r(rng, 3),
            use_input_stats=False,
            note="running stats used",
        ),
    ]


@register(
    samples=_in_samples,
    method=False,
    torch="nn.functional.instance_norm",
    writes=("running_mean", "running_var"),
)
def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each (sample, channel) of (N, C, *) over its spatial elements."""
    x, w, b = as_tensor(input), _opt(weight), _opt(bias)
    rm, rv = _opt(running_mean), _opt(running_var)
    if use_input_stats and x.ndim >= 2 and math.prod(x.shape[2:]) == 1:
        raise ArgumentValueError(
            "Expected more than 1 spatial element when training, got input size "
            f"torch.Size({_dims(x.shape)})"
        )
    c = x.shape[1] if x.ndim > 1 else 0
    for what, t in (("running_mean", rm), ("running_var", rv), ("weight", w), ("bias", b)):
        _check_channels(what, t, c)
    _floating("batch_norm", x)
    _same_dtype(x, w, b, rm, rv)
    if not use_input_stats and (rm is None or rv is None):
        raise BadArgumentsError(
            "Expected running_mean and running_var to be defined when use_input_stats is false"
        )
    stats = None if use_input_stats else (rm._data.copy(), rv._data.copy())  # type: ignore[union-attr]
    # torch runs batch_norm on the input viewed as one batch: its fused backward op
    out = composite(
        "ViewBackward0",
        _instance_body,
        x,
        w,
        b,
        fused="NativeBatchNormBackwardBackward0",
        stats=stats,
        eps=eps,
    )
    if use_input_stats and (rm is not None or rv is not None):
        m, v = _batch_stats(x._data, tuple(range(2, x.ndim)))
        _update_running(rm, m.mean(axis=0), float(momentum))
        _update_running(rv, v.mean(axis=0), float(momentum))
        for running in (rm, rv):  # torch's composite writes them back with copy_
            if running is not None:
                running._vc[0] += 1
    return out


def _group_norm_body(
    x: Tensor, w: Tensor | None, b: Tensor | None, *, groups: int, eps: float
) -> Tensor:
    n = x.shape[0]
    per_group = math.prod(x.shape[1:]) // groups  # explicit: -1 is ambiguous when n is 0
    y = reshape(_normalize(reshape(x, (n, groups, per_group)), (2,), eps), x.shape)
    return _affine(y, w, b, _channel_shape(x))


def _gn_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 4, 3), 2, r(rng, 4), r(rng, 4), note="two groups"),
        sample(r(rng, 2, 6, 2, 2), 3, note="4-d, no affine"),
        sample(r(rng, 3, 4), 1, r(rng, 4), r(rng, 4), eps=1e-2, note="one group (layer norm)"),
        sample(r(rng, 2, 4, 3), 4, r(rng, 4), note="group per channel"),
    ]


@register(samples=_gn_samples, method=False, torch="nn.functional.group_norm")
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize (N, C, *) over groups of ``C // num_groups`` channels, then scale and shift."""
    x, w, b = as_tensor(input), _opt(weight), _opt(bias)
    if x.ndim < 2:
        raise ShapeMismatchError(
            f"Expected at least 2 dimensions for input tensor but received {x.ndim}"
        )
    c = x.shape[1]
    if num_groups > 0:  # torch's _verify_batch_size on (N*C/G, G, *spatial), first
        size = [x.shape[0] * c // num_groups, num_groups, *x.shape[2:]]
        if size[0] * math.prod(size[2:]) == 1:
            raise ArgumentValueError(
                f"Expected more than 1 value per channel when training, got input size {size}"
            )
    if num_groups <= 0 or c % num_groups:
        raise ShapeMismatchError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {_dims(x.shape)} and num_groups={num_groups}"
        )
    for what, t in (("weight", w), ("bias", b)):
        if t is not None and (t.ndim != 1 or t.shape[0] != c):
            raise ShapeMismatchError(
                f"Expected {what} to be a vector of size equal to the number of channels in "
                f"input, but got {what} of shape {_dims(t.shape)} and input of shape "
                f"{_dims(x.shape)}"
            )
    _floating("GroupNormKernelImpl", x)
    _same_dtype(x, w, b)
    return composite(
        "NativeGroupNormBackward0", _group_norm_body, x, w, b, groups=int(num_groups), eps=eps
    )


# -- embedding and one_hot -----------------------------------------------------------------


def _embedding_body(weight: Tensor, *, index: np.ndarray, scale: np.ndarray | None) -> Tensor:
    """The picked rows; ``scale`` (per index) scales their gradient only: ``p0 + (p - p0) * s``
    is exactly ``p`` in value, and its gradient is ``s`` (0 for padding_idx rows)."""

    flat = index_select(weight, 0, Tensor._make(index.reshape(-1)))
    if scale is not None:
        fixed = flat.detach()
        flat = fixed + (flat - fixed) * Tensor._make(scale.reshape(-1, 1).astype(flat.dtype))
    return reshape(flat, index.shape + (weight.shape[1],))


def _emb_samples(rng: np.random.Generator) -> list[Any]:
    # padding_idx and scale_grad_by_freq change the gradient on purpose (no longer the
    # derivative): those samples are checked against PyTorch, not finite differences
    w = S.rand
    return [
        sample(Const(np.array([[0, 2], [4, 2]])), w(rng, 5, 3), note="2-d indices, repeated"),
        sample(
            Const(np.array([1, 3, 1, 0])),
            w(rng, 4, 2),
            padding_idx=1,
            note="padding_idx",
            gradcheck=False,
        ),
        sample(
            Const(np.array([1, 3, 3])),
            w(rng, 4, 2),
            padding_idx=-1,
            note="negative padding_idx",
            gradcheck=False,
        ),
        sample(
            Const(np.array([1, 3, 1, 1])),
            w(rng, 4, 2),
            scale_grad_by_freq=True,
            note="by frequency",
            gradcheck=False,
        ),
        sample(Const(np.array(2)), w(rng, 4, 2), note="0-d index"),
        sample(Const(np.array([2, 0], dtype=np.int32)), w(rng, 3, 2), note="int32 indices"),
        sample(Const(np.zeros((0,), np.int64)), w(rng, 3, 2), note="no indices"),
    ]


def _embedding_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    idx, w = (list(args) + [kwargs.get("input"), kwargs.get("weight")])[:2]
    if not hasattr(idx, "shape") or not hasattr(w, "shape") or len(w.shape) != 2:
        return None
    return math.prod(idx.shape) * w.shape[1]


@register(
    samples=_emb_samples,
    method=False,
    torch="nn.functional.embedding",
    estimate=_embedding_estimate,
)
def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``; ``padding_idx``'s row gets no gradient."""
    idx, w = as_tensor(input), as_tensor(weight)
    if max_norm is not None:
        raise BadArgumentsError(
            "embedding: max_norm is not supported (it renormalizes weight in place); "
            "renormalize the weight yourself and pass max_norm=None"
        )
    if sparse:
        raise BadArgumentsError("embedding: sparse gradients are not supported; pass sparse=False")
    if w.ndim != 2:
        raise ShapeMismatchError("'weight' must be 2-D")
    n = w.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ArgumentAssertionError("Padding_idx must be within num_embeddings")
        padding_idx = int(padding_idx) % n
    if idx.dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise DtypeMismatchError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got torch.{_type(idx.dtype)}Tensor instead (while checking "
            "arguments for embedding)"
        )
    index = idx._data.astype(np.int64)
    if index.size and (index.min() < 0 or index.max() >= n):
        raise IndexRangeError("index out of range in self")
    scale = None
    if scale_grad_by_freq or padding_idx is not None:
        scale = np.ones(index.shape)
        if scale_grad_by_freq:
            counts = np.bincount(index.reshape(-1), minlength=n)
            scale = 1.0 / counts[index]
        if padding_idx is not None:
            scale = np.where(index == padding_idx, 0.0, scale)
    # padding_idx and scale_grad_by_freq shape the gradient only: PyTorch's forward AD
    # gives the padding row's tangent through, as the derivative does
    return composite(
        "EmbeddingBackward0",
        _embedding_body,
        w,
        tangent_params={"scale": None},
        index=index,
        scale=scale,
    )


def _one_hot_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(Const(np.array([0, 2, 1])), note="inferred classes"),
        sample(Const(np.array([[0, 2], [1, 1]])), 4, note="2-d, four classes"),
        sample(Const(np.array(1)), 3, note="0-d"),
        sample(Const(np.zeros((0,), np.int64)), 3, note="empty"),
    ]


def _one_hot_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Elements times classes (classes read from the data when not given)."""
    t = args[0] if args else kwargs.get("tensor")
    n = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
    data = getattr(t, "_data", None)
    if not isinstance(data, np.ndarray) or not isinstance(n, (int, np.integer)):
        return None
    if n == -1:
        n = int(data.max()) + 1 if data.size and data.dtype.kind in "iu" else 0
    return data.size * max(int(n), 0) + max(int(n), 0)  # and the classes' identity rows


@register(
    samples=_one_hot_samples,
    method=False,
    differentiable=False,
    torch="nn.functional.one_hot",
    estimate=_one_hot_estimate,
)
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Class indices as int64 one-hot rows (``num_classes=-1``: one more than the largest)."""
    t = as_tensor(tensor)
    if t.dtype != np.dtype(np.int64):
        raise DtypeMismatchError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = t._data
    if num_classes == -1:
        if idx.size == 0:
            raise BadArgumentsError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size and idx.min() < 0:
        raise BadArgumentsError("Class values must be non-negative.")
    if idx.size and idx.max() >= num_classes:
        raise BadArgumentsError("Class values must be smaller than num_classes.")
    out = (idx[..., None] == np.arange(num_classes)).astype(np.int64)
    return Tensor._make(out)


# -- bilinear ------------------------------------------------------------------------------


def _bilinear_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), r(rng, 2, 4), r(rng, 5, 3, 4), r(rng, 5), note="with bias"),
        sample(r(rng, 2, 3), r(rng, 2, 4), r(rng, 5, 3, 4), note="without bias"),
        sample(r(rng, 2, 2, 3), r(rng, 2, 2, 3), r(rng, 1, 3, 3), r(rng, 1), note="3-d batch"),
    ]


@register(samples=_bilinear_samples, method=False, torch="nn.functional.bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o]``."""
    x1, x2, w, b = as_tensor(input1), as_tensor(input2), as_tensor(weight), _opt(bias)
    if x1.ndim != x2.ndim:
        raise ShapeMismatchError(
            f"bilinear(): input dimensions do not match: got {x1.ndim} and {x2.ndim}"
        )
    if x1.shape[:-1] != x2.shape[:-1]:
        raise ShapeMismatchError(
            f"bilinear(): input batch dimensions do not match: got {_dims(x1.shape[:-1])} and "
            f"{_dims(x2.shape[:-1])}"
        )
    if w.ndim != 3:
        raise ShapeMismatchError(f"bilinear(): weight must be three-dimensional, but got {w.ndim}")
    for k, x in ((1, x1), (2, x2)):
        if x.shape[-1] != w.shape[k]:
            raise ShapeMismatchError(
                f"bilinear(): input{k} size does not match weight size: got {x.shape[-1]} but "
                f"expected {w.shape[k]}"
            )
    if b is not None and (b.ndim != 1 or b.shape[0] != w.shape[0]):
        raise ShapeMismatchError(
            f"bilinear(): bias size does not match weight size: got {b.shape[-1] if b.ndim else 0} "
            f"but expected {w.shape[0]}"
        )
    if not x1.dtype == x2.dtype == w.dtype or (b is not None and b.dtype != w.dtype):
        raise DtypeMismatchError(
            f"All tensors must have the same dtype, got input1: {_cpp(x1)}, input2: {_cpp(x2)}, "
            f"weight: {_cpp(w)}" + (f", bias: {_cpp(b)}" if b is not None else "")
        )
    y = einsum("...i,oij,...j->...o", x1, w, x2)
    return y if b is None else y + b
