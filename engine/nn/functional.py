"""``torch.nn.functional`` over the registered ops, with PyTorch's signatures.

Most names are the ops themselves. The rest are thin adapters for what
``torch.nn.functional`` takes and the op catalogue does not: ``inplace=`` on
activations (the op's in-place form), the legacy ``size_average``/``reduce``
arguments of losses (mapped to ``reduction`` with PyTorch's warning), and
``softmax`` without ``dim`` (PyTorch's implicit dim choice, with its warning).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..methods import _inplace
from ..registry import OPS
from ..tensor import Tensor

# the ops torch.nn.functional exposes under the same name and signature
_SAME = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool3d",
    "avg_pool3d",
    "max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "bilinear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_similarity",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "embedding",
    "fold",
    "gelu",
    "glu",
    "group_norm",
    "hardshrink",
    "instance_norm",
    "interpolate",
    "layer_norm",
    "linear",
    "linear_cross_entropy",
    "logsigmoid",
    "max_pool1d",
    "max_pool2d",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pdist",
    "prelu",
    "scaled_dot_product_attention",
    "sigmoid",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "unfold",
    "normalize",
    "pixel_shuffle",
    "pixel_unshuffle",
    "rms_norm",
    "local_response_norm",
    "channel_shuffle",
    "triplet_margin_with_distance_loss",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "grid_sample",
    "embedding_bag",
    "multilabel_margin_loss",
    "ctc_loss",
    "multi_head_attention_forward",
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "rrelu",
    "alpha_dropout",
    "feature_alpha_dropout",
]

# activations whose torch.nn.functional form takes ``inplace`` as its last argument
_INPLACE = "relu relu6 elu celu selu silu mish hardsigmoid hardswish hardtanh leaky_relu threshold"

_LOSSES = (
    "binary_cross_entropy binary_cross_entropy_with_logits cosine_embedding_loss "
    "cross_entropy hinge_embedding_loss kl_div l1_loss margin_ranking_loss mse_loss "
    "nll_loss poisson_nll_loss smooth_l1_loss soft_margin_loss triplet_margin_loss "
    "huber_loss gaussian_nll_loss multilabel_soft_margin_loss multi_margin_loss"
)


def _legacy_reduction(size_average: Any, reduce: Any) -> str:
    """PyTorch's ``_Reduction.legacy_get_string``, with its deprecation warning."""
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction='"
        + ("none" if reduce is False else "mean" if size_average in (None, True) else "sum")
        + "' instead.",
        UserWarning,
        stacklevel=3,
    )
    if reduce is False:
        return "none"
    return "mean" if size_average in (None, True) else "sum"


def _inplace_form(name: str) -> Callable[..., Any]:
    fn = OPS[name].fn
    params = list(OPS[name].signature.parameters)[1:]

    def activation(input: Tensor, *args: Any, inplace: bool = False, **kwargs: Any) -> Any:
        if len(args) > len(params):  # ``inplace`` given positionally, as its last argument
            *args_, inplace = args
            args = tuple(args_)
        if not inplace:
            return fn(input, *args, **kwargs)
        return _inplace(name)(input, *args, **kwargs)

    activation.__name__ = activation.__qualname__ = name
    activation.__doc__ = OPS[name].doc
    return activation


def _loss(name: str) -> Callable[..., Any]:
    fn = OPS[name].fn

    def loss(*args: Any, size_average: Any = None, reduce: Any = None, **kwargs: Any) -> Any:
        if size_average is not None or reduce is not None:
            kwargs["reduction"] = _legacy_reduction(size_average, reduce)
        return fn(*args, **kwargs)

    loss.__name__ = loss.__qualname__ = name
    loss.__doc__ = OPS[name].doc
    return loss


def _implicit_dim(name: str, ndim: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_form(name: str) -> Callable[..., Any]:
    fn = OPS[name].fn

    def softmax(
        input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
    ) -> Tensor:
        if dim is None:
            dim = _implicit_dim(name, input.ndim)
        return fn(input, dim, dtype=dtype)

    softmax.__name__ = softmax.__qualname__ = name
    softmax.__doc__ = OPS[name].doc
    return softmax


def _build() -> dict[str, Callable[..., Any]]:
    table: dict[str, Callable[..., Any]] = {n: OPS[n].fn for n in _SAME if n in OPS}
    table.update({n: _inplace_form(n) for n in _INPLACE.split() if n in OPS})
    table.update({n: _loss(n) for n in _LOSSES.split() if n in OPS})
    table.update({n: _softmax_form(n) for n in ("softmax", "log_softmax", "softmin")})
    for name in ("relu", "elu", "celu", "selu", "leaky_relu", "hardtanh", "threshold"):
        if name in OPS:  # the ``name_`` forms torch.nn.functional has
            base = table[name]
            table[name + "_"] = lambda input, *a, _f=base, **k: _f(input, *a, inplace=True, **k)
    return table


globals().update(_build())


def _deprecated_upsample(name: str, mode: str, align_corners: bool | None) -> Callable[..., Any]:
    """``upsample_nearest``/``upsample_bilinear``: ``interpolate`` with PyTorch's warning."""

    def upsample(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
        warnings.warn(
            f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
            UserWarning,
            stacklevel=2,
        )
        return OPS["interpolate"].fn(input, size, scale_factor, mode, align_corners)

    upsample.__name__ = upsample.__qualname__ = name
    return upsample


upsample_nearest = _deprecated_upsample("upsample_nearest", "nearest", None)
upsample_bilinear = _deprecated_upsample("upsample_bilinear", "bilinear", True)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """PyTorch's always-both form of ``max_pool2d``: (output, indices) whatever
    ``return_indices`` says, as ``torch.nn.functional.max_pool2d_with_indices``."""
    return OPS["max_pool2d"].fn(input, kernel_size, stride, padding, dilation, ceil_mode, True)
