"""ATen's softmax and dropout pieces that op_db calls directly: ``_safe_softmax``
(attention's softmax, zero where a whole row is masked to -inf),
``_softmax_backward_data`` and ``native_dropout_backward`` (the backward kernels as
ops of their own, differentiable again), and ``nn.functional.linear_cross_entropy``
(a linear layer into cross-entropy). Each is a composite recorded under ATen's name.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..binding import Binding
from ..errors import DtypeMismatchError, ShapeMismatchError
from ..estimates import copies_of
from ..registry import Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor, normalize_dim
from .arithmetic import where
from .linalg import linear
from .loss import cross_entropy
from .reduction import softmax
from .reduction import sum as sum_
from .shape import reshape, to_dtype


def _safe_body(x: Tensor, *, dim: int, dead: np.ndarray) -> Tensor:
    rows = Tensor._make(dead)
    return where(rows, 0.0, softmax(where(rows, 0.0, x), dim))


def _safe_samples(rng: np.random.Generator) -> list[Any]:
    x = S.rand(rng, 3, 4)
    x[1] = -np.inf
    x[2, 0] = -np.inf
    return [sample(x, 1, note="a masked row"), sample(S.rand(rng, 2, 3), 0, note="plain")]


@register(
    samples=_safe_samples,
    method=False,
    estimate=copies_of(1, "input"),
    binding=Binding(tensors=("input",)),
    torch="ops.aten._safe_softmax.default",
)
def _safe_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """Softmax along ``dim``, zero along the rows whose every element is -inf."""
    x = as_tensor(input)
    if dtype is not None:
        x = to_dtype(x, dtype)
    d = normalize_dim(dim, x.ndim)
    xd = x._data
    dead = np.all(xd == -np.inf, axis=d, keepdims=True) if x.ndim else np.array(xd == -np.inf)
    return composite("SafeSoftmaxBackward0", _safe_body, x, dim=d, dead=dead)


def _softmax_bw_body(g: Tensor, y: Tensor, *, dim: int) -> Tensor:
    return y * (g - sum_(g * y, dim, keepdim=True))


def _softmax_bw_samples(rng: np.random.Generator) -> list[Any]:
    x = S.rand(rng, 2, 3)
    y = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    return [sample(S.rand(rng, 2, 3), y, 1, "float64", note="rows")]


@register(
    complex_inputs="\"softmax_backward_lastdim_kernel_impl\" not implemented for '{type}'",
    samples=_softmax_bw_samples,
    method=False,
    estimate=copies_of(1, "grad_output"),
    binding=Binding(tensors=("grad_output", "output")),
)
def _softmax_backward_data(
    grad_output: Tensor, output: Tensor, dim: int, input_dtype: Any
) -> Tensor:
    """Softmax's gradient from its result: ``output * (g - sum(g * output, dim))``."""
    g, y = as_tensor(grad_output), as_tensor(output)
    if g.shape != y.shape:
        raise ShapeMismatchError(
            f"grad_output and output must have the same shape, got {list(g.shape)} and "
            f"{list(y.shape)}"
        )
    if g.dtype != y.dtype:
        raise DtypeMismatchError(
            f"expected scalar type {_scalar(g.dtype)} but found {_scalar(y.dtype)}"
        )
    # input_dtype only matters for half-precision gradients (none on the engine)
    if not y.ndim:
        return composite("SoftmaxBackwardDataBackward0", _softmax_bw_body0, g, y)
    d = normalize_dim(dim, y.ndim)
    return composite("SoftmaxBackwardDataBackward0", _softmax_bw_body, g, y, dim=d)


def _scalar(dt: Any) -> str:
    return {"float32": "Float", "float64": "Double"}.get(dtypes.torch_name(dt), str(dt))


def _softmax_bw_body0(g: Tensor, y: Tensor) -> Tensor:
    return y * (g - g * y)


def _dropout_bw_body(g: Tensor, mask: Tensor, *, scale: float) -> Tensor:
    return g * to_dtype(mask, g.dtype) * scale


@register(
    samples=lambda rng: [
        sample(S.rand(rng, 3, 4), Const(rng.random((3, 4)) > 0.5), 2.0, note="scale 2")
    ],
    method=False,
    estimate=copies_of(1, "grad_output"),
    binding=Binding(tensors=("grad_output", "mask")),
    torch="ops.aten.native_dropout_backward.default",
)
def native_dropout_backward(grad_output: Tensor, mask: Tensor, scale: float) -> Tensor:
    """Dropout's gradient: ``grad_output * mask * scale``."""
    g, m = as_tensor(grad_output), as_tensor(mask)
    return composite("NativeDropoutBackwardBackward0", _dropout_bw_body, g, m, scale=float(scale))


# -- linear_cross_entropy ----------------------------------------------------------------------


def _lce_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 4, 3), r(rng, 5, 3), Const(np.array([0, 2, 4, 1])), note="indices"),
        sample(
            r(rng, 4, 3),
            r(rng, 5, 3),
            Const(np.array([0, 2, 4, 1])),
            linear_bias=r(rng, 5),
            reduction="sum",
            note="bias, sum",
        ),
    ]


def _lce_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The logits: a batch row per class."""
    x: Any = args[0] if args else kwargs.get("input")
    w: Any = args[1] if len(args) > 1 else kwargs.get("linear_weight")
    if not (hasattr(x, "shape") and hasattr(w, "shape")):
        return None
    return 3 * math.prod(x.shape[:-1]) * math.prod(w.shape[:-1]) + math.prod(x.shape)


def _shape(t: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"


@register(
    samples=_lce_samples,
    method=False,
    estimate=_lce_estimate,
    binding=Binding(tensors=("input", "linear_weight", "target")),
    torch="nn.functional.linear_cross_entropy",
)
def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: Any = None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target)``, logits shaped
    (*batch, classes, *out_features); ``options`` (PyTorch's chunking) change no value."""
    x, w, t = as_tensor(input), as_tensor(linear_weight), as_tensor(target)
    if x.ndim < 1 or x.ndim > 2:
        raise ShapeMismatchError(f"expected input with dimensionality 1 or 2, got {x.ndim}")
    if w.ndim < 2:
        raise ShapeMismatchError(
            f"expected linear_weight with dimensionality at least 2, got {w.ndim}"
        )
    batches, fin = x.shape[:-1], x.shape[-1]
    if fin != w.shape[-1]:
        raise ShapeMismatchError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {fin} and {w.shape[-1]}, respectively"
        )
    classes, outs = w.shape[0], w.shape[1:-1]
    b = None if linear_bias is None else as_tensor(linear_bias)
    if b is not None and b.shape != (classes, *outs):
        raise ShapeMismatchError(
            f"expected linear_bias shape {_shape((classes, *outs))}, got {_shape(b.shape)}"
        )
    if outs and not batches:
        raise ShapeMismatchError(
            f"K-dimensional loss defined by linear_weight shape {_shape(w.shape)} requires"
            f" batched input, (N, {fin}), got unbatched input with shape {_shape(x.shape)}"
        )
    logits_shape = (*batches, classes, *outs)
    if t.shape == logits_shape and ignore_index is not None:
        raise ShapeMismatchError(
            "ignore_index cannot be specified when target contains probabilities"
        )
    if outs:
        w = reshape(w, (math.prod(outs) * classes, fin))
        if b is not None:
            b = reshape(b, (math.prod(outs) * classes,))
    logits = reshape(linear(x, w, b), logits_shape)
    return cross_entropy(
        logits,
        t,
        weight,
        -100 if ignore_index is None else ignore_index,
        reduction,
        label_smoothing,
    )
