"""Complex tensors' parts: ``real``, ``imag``, conjugation and ``view_as_real``, with
PyTorch's gradient convention for complex numbers (a tensor's ``.grad`` is
``dL/dx + i dL/dy`` for ``z = x + iy`` and a real loss ``L``, the conjugate Wirtinger
derivative times two, so gradient descent moves ``z`` downhill): ``real``'s gradient
is ``g`` itself, ``imag``'s is ``i g``, ``conj``'s the conjugate of ``g``.

These are what the spectral ops (``fft``) and their gradients need, and what a user
needs to bring a complex result back to reals; ``conj`` and ``real_part`` live in
``primitives`` (product rules conjugate their saved operand). Other ops whose rules
hold for complex tensors say so with ``complex_ok``: products (``mul``, ``div``,
``matmul`` and its kin, ``solve``), ``abs``/``sgn``, rearrangements and shape ops, which
is what ``linalg.eig``'s backward is made of; every other op stays real."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..dual import LINEAR
from ..errors import BadArgumentsError
from ..function import Function
from ..primitives import ConjBackward0 as ConjBackward0
from ..primitives import RealBackward0, cast, conj
from ..primitives import real_part as real_part
from ..registry import register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite, named
from ._util import as_tensor


class ImagBackward0(Function):
    """The imaginary part of a complex tensor; its gradient is ``i g``."""

    name = "ImagBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.in_dtype = a._data.dtype
        return a._data.imag.copy()  # ascontiguousarray would make a 0-d result 1-d

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ComplexBackward0.apply(ZeroLike.apply(g), g)


class ZeroLike(Function):
    """Zeros shaped as ``a`` in a graph (the real part of ``i g``)."""

    name = "ZerosLikeBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.zeros_like(a._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ZeroLike.apply(g)


class ComplexBackward0(Function):
    """``real + i imag`` from two real tensors of one dtype and shape."""

    name = "ComplexBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, re: Tensor, im: Tensor) -> np.ndarray:
        out = np.empty(re._data.shape, dtypes.to_complex(re._data.dtype))
        out.real, out.imag = re._data, im._data
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        return RealBackward0.apply(g), ImagBackward0.apply(g)


class ViewAsRealBackward0(Function):
    """A complex tensor as reals with a last dimension of 2 (re, im); a copy here."""

    name = "ViewAsRealBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        return np.stack([a._data.real, a._data.imag], axis=-1)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ViewAsComplexBackward0.apply(g)


class ViewAsComplexBackward0(Function):
    """Reals with a last dimension of 2 as one complex tensor; a copy here."""

    name = "ViewAsComplexBackward0"
    complex_ok = True
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        d = a._data
        out = np.empty(d.shape[:-1], dtypes.to_complex(d.dtype))
        out.real, out.imag = d[..., 0], d[..., 1]
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return ViewAsRealBackward0.apply(g)


conjugate = conj  # ``a`` conjugated: a complex tensor's conjugate, a real tensor itself


def _complex_samples(rng: np.random.Generator) -> list[Any]:
    return [sample(S.rand(rng, 3, 2)), sample(S.rand(rng, 4, 2), note="two rows")]


@register(samples=_complex_samples, method=False)
def view_as_complex(input: Tensor) -> Tensor:
    """A real tensor whose last dimension is 2 (re, im) as a complex one."""
    a = as_tensor(input)
    d = a._data
    if d.dtype not in (dtypes.float32, dtypes.float64):
        raise BadArgumentsError(
            "view_as_complex is only supported for float and double tensors, but got a "
            f"tensor of scalar type: {dtypes.type_name(d.dtype)}"
        )
    if d.ndim == 0 or d.shape[-1] != 2:
        raise BadArgumentsError("Tensor must have a last dimension of size 2")
    return ViewAsComplexBackward0.apply(a)


@register(samples=lambda rng: [sample(S.rand(rng, 3), S.rand(rng, 3))], method=False)
def complex(real: Tensor, imag: Tensor) -> Tensor:
    """``real + i imag`` from two float tensors of one dtype (broadcast)."""
    re, im = _real_pair(as_tensor(real), as_tensor(imag))
    return ComplexBackward0.apply(re, im)


def _real_pair(re: Tensor, im: Tensor) -> tuple[Tensor, Tensor]:
    """Two float tensors of one dtype, broadcast to one shape (``complex``, ``polar``)."""
    floats = (dtypes.float32, dtypes.float64)
    if re._data.dtype not in floats or im._data.dtype not in floats:
        raise BadArgumentsError(
            f"Expected both inputs to be Half, Float or Double tensors but got "
            f"{dtypes.type_name(re._data.dtype)} and {dtypes.type_name(im._data.dtype)}"
        )
    if re._data.dtype != im._data.dtype:
        raise BadArgumentsError(
            f"Expected object of scalar type {dtypes.type_name(re._data.dtype)} but got "
            f"scalar type {dtypes.type_name(im._data.dtype)} for second argument"
        )
    if re.shape != im.shape:
        shape = np.broadcast_shapes(re.shape, im.shape)
        re, im = re.expand(*shape), im.expand(*shape)
    return re, im


@register(
    samples=lambda rng: [
        sample(S.positive(rng, 3), S.rand(rng, 3)),
        sample(S.positive(rng, 2, 1), S.rand(rng, 3), note="broadcast"),
    ],
    method=False,
)
def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """``abs * (cos(angle) + i sin(angle))`` from two float tensors of one dtype."""
    r, theta = _real_pair(as_tensor(abs), as_tensor(angle))
    return composite("PolarBackward0", _polar_body, r, theta)


def _polar_body(r: Tensor, theta: Tensor) -> Tensor:
    return ComplexBackward0.apply(r * theta.cos(), r * theta.sin())


named("PolarBackward0").complex_ok = True  # its body is made of complex-aware nodes


def _cast_samples(rng: np.random.Generator) -> list[Any]:
    return [sample(S.rand(rng, 2, 3)), sample(S.rand(rng, 4), note="vector")]


@register(samples=_cast_samples, function=False, differentiable=False)
def cfloat(input: Tensor) -> Tensor:
    """A copy as complex64 (the tensor itself if it already is)."""
    return cast(as_tensor(input), dtypes.complex64)


@register(samples=_cast_samples, function=False)
def cdouble(input: Tensor) -> Tensor:
    """A copy as complex128 (the tensor itself if it already is)."""
    return cast(as_tensor(input), dtypes.complex128)
