"""The ``*_copy`` ops (PyTorch's functionalization variants: ``permute_copy`` is
``permute`` into fresh memory) and the conjugation ops, which are identities on real
tensors. Each copy records one node under PyTorch's name (``PermuteBackward0_copy``),
its gradient that of the view it copies (``_composite``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import estimates
from ..errors import BadArgumentsError
from ..primitives import conj as conjugated
from ..primitives import real_part
from ..registry import OPS, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite
from ._util import as_tensor


def _copy(grad_name: str, view: str, input: Any, *args: Any, **kwargs: Any) -> Tensor:
    fn = OPS[view].fn
    return composite(
        grad_name,
        lambda a, args, kwargs: fn(a, *args, **kwargs),
        as_tensor(input),
        args=args,
        kwargs=kwargs,
        saves=_nothing,
    )


def _nothing(need: Any) -> tuple[bool, ...]:
    """A view's gradient reads no tensor: torch's copy nodes save nothing."""
    return (False,)


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 1), (2, 3, 4)), sample(S.rand(rng), [2])],
    method=False,
    estimate=estimates.expand,
)
def expand_copy(input: Tensor, size: Any, *, implicit: bool = False) -> Tensor:
    """``expand`` into fresh memory."""
    return _copy("ExpandBackward0_copy", "expand", input, tuple(size))


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 4)), sample(S.rand(rng, 2, 3, 4), 1, 0, 2)],
    method=False,
)
def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``diagonal`` into fresh memory."""
    return _copy("DiagonalBackward0_copy", "diagonal", input, offset, dim1, dim2)


@register(samples=lambda rng: [sample(S.rand(rng, 3, 4)), sample(S.rand(rng))], method=False)
def alias_copy(input: Tensor) -> Tensor:
    """A copy (``alias`` into fresh memory)."""
    return composite(
        "AliasBackward0_copy", lambda a: a.view(a.shape), as_tensor(input), saves=_nothing
    )


@register(
    samples=lambda rng: [sample(S.rand(rng, 4, 3), 0, 1, 2), sample(S.rand(rng, 4, 3), -1, 0, 1)]
)
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``narrow`` into fresh memory (its own kernel: its own messages)."""
    a = as_tensor(input)
    if dim >= max(a.ndim, 1):  # below the range: the usual IndexError (narrow)
        raise BadArgumentsError(
            "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false."
        )
    if a.ndim and length < 0:
        size = a.shape[dim]
        raise BadArgumentsError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size})."
        )
    return composite(
        "NarrowCopyBackward0", lambda a: a.narrow(dim, start, length), a, saves=_nothing
    )


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 4), (12,)), sample(S.rand(rng, 2, 6), [3, -1])],
    method=False,
)
def view_copy(input: Tensor, size: Any) -> Tensor:
    """``view`` into fresh memory."""
    return _copy(
        "ViewBackward0_copy", "view", input, tuple(size) if isinstance(size, list | tuple) else size
    )


@register(samples=lambda rng: [sample(S.rand(rng, 2, 3, 4), (2, 0, 1))], method=False)
def permute_copy(input: Tensor, dims: Any) -> Tensor:
    """``permute`` into fresh memory."""
    return _copy("PermuteBackward0_copy", "permute", input, tuple(dims))


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 1, 2)), sample(S.rand(rng, 1, 2), 0)], method=False
)
def squeeze_copy(input: Tensor, dim: Any = None) -> Tensor:
    """``squeeze`` into fresh memory."""
    which = 0 if dim is None else 1 if isinstance(dim, int) else 2  # PyTorch's overloads
    return _copy(f"SqueezeBackward{which}_copy", "squeeze", input, dim)


@register(samples=lambda rng: [sample(S.rand(rng, 3, 2), 1), sample(S.rand(rng), 0)], method=False)
def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """``unsqueeze`` into fresh memory."""
    return _copy("UnsqueezeBackward0_copy", "unsqueeze", input, dim)


@register(
    samples=lambda rng: [sample(S.rand(rng, 3, 2), 0, 1), sample(S.rand(rng, 2, 3, 4), -1, 0)],
    method=False,
)
def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose`` into fresh memory."""
    return _copy("TransposeBackward0_copy", "transpose", input, dim0, dim1)


@register(samples=lambda rng: [sample(S.rand(rng, 3, 2)), sample(S.rand(rng, 4))], method=False)
def t_copy(input: Tensor) -> Tensor:
    """``t`` into fresh memory."""
    return _copy("TBackward0_copy", "t", input)


# -- conjugation: identities on real tensors (PyTorch returns the input itself) --------------


def _real_samples(rng: np.random.Generator) -> list[Any]:
    return [sample(S.rand(rng, 2, 3)), sample(S.rand(rng))]


@register(samples=_real_samples)
def conj(input: Tensor) -> Tensor:
    """The complex conjugate (a copy: no lazy conjugate bit here); a real tensor itself."""
    return conjugated(as_tensor(input))


@register(samples=_real_samples)
def conj_physical(input: Tensor) -> Tensor:
    """The conjugate in fresh memory for complex tensors; a real tensor itself."""
    return conjugated(as_tensor(input))


@register(samples=_real_samples)
def resolve_conj(input: Tensor) -> Tensor:
    """Materializes a lazy conjugation; a real tensor has none: itself."""
    return as_tensor(input)


@register(samples=_real_samples)
def resolve_neg(input: Tensor) -> Tensor:
    """Materializes a lazy negation; the engine has none: itself."""
    return as_tensor(input)


@register(samples=_real_samples, method=False, torch="torch.real")  # Tensor.real: a property
def real(input: Tensor) -> Tensor:
    """The real part (a copy for a complex tensor); a real tensor itself."""
    return real_part(as_tensor(input))
