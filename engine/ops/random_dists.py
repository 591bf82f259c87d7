"""The in-place samplers of other distributions: ``exponential_``, ``cauchy_``,
``geometric_``, ``log_normal_``.

PyTorch's CPU kernels draw these one element at a time in order (a serial kernel),
each from one ``uniform_real_distribution<double>`` draw (log-normal from one
``normal_distribution<double>`` draw) whatever the tensor's dtype, then transform it
in double and round to the dtype: reproduced here, the same seed fills the same
values. Like ``normal_``, each writes its tensor and, in a graph, gives the
overwritten values a zero gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import BadArgumentsError, DtypeMismatchError
from ..registry import Const, register, sample
from ..tensor import Tensor
from .creation_ops import _not_implemented
from .random_ops import _fill, _generator, _torch_method, _zero_gradient

ExponentialBackward0 = _zero_gradient("ExponentialBackward0")
CauchyBackward0 = _zero_gradient("CauchyBackward0")
GeometricBackward0 = _zero_gradient("GeometricBackward0")
LogNormalBackward0 = _zero_gradient("LogNormalBackward0")


def _g(x: float) -> str:
    """A double as PyTorch's messages print it (C++ stream: 6 significant digits)."""
    return f"{x:g}"


def _continuous(t: Tensor, name: str, type_name: str) -> np.dtype:
    dt = t.dtype
    if dt.kind != "f":
        raise DtypeMismatchError(
            f"{name} distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {type_name}"
        )
    return dt


def _samples(*args: Any) -> Any:
    def build(rng: np.random.Generator) -> list[Any]:
        return [
            sample(Const(np.zeros((10,), np.float32)), *args, seed=0, note="10 elements"),
            sample(Const(np.zeros((5, 5))), *args, seed=1, note="float64"),
        ]

    return build


def _register(name: str, *args: Any) -> Any:
    return register(
        name,
        samples=_samples(*args),
        differentiable=False,
        function=False,
        writes=("self",),
        torch=_torch_method(name),
    )


@_register("exponential_", 1.5)
def exponential_(
    self: Tensor, lambd: float = 1.0, *, generator: Any = None, seed: int | None = None
) -> Tensor:
    """Fill in place with exponential samples of rate ``lambd``: ``-log1p(-u) / lambd``."""
    lambd = float(lambd)
    if not lambd > 0.0:
        raise BadArgumentsError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    dt = _continuous(self, "Exponential", dtypes.type_name(self.dtype))
    u = _generator(seed, generator).doubles(self._data.size)
    values = (-1.0 / lambd) * np.log1p(-u)
    return _fill(self, values.reshape(self.shape).astype(dt), ExponentialBackward0)


@_register("cauchy_", -2.0, 0.5)
def cauchy_(
    self: Tensor,
    median: float = 0.0,
    sigma: float = 1.0,
    *,
    generator: Any = None,
    seed: int | None = None,
) -> Tensor:
    """Fill in place with Cauchy samples: ``median + sigma * tan(pi * (u - 1/2))``."""
    sigma = float(sigma)
    if not sigma > 0.0:
        raise BadArgumentsError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    dt = _continuous(self, "Cauchy", dtypes.cpp_name(self.dtype))
    u = _generator(seed, generator).doubles(self._data.size)
    values = float(median) + sigma * np.tan(np.pi * (u - 0.5))
    return _fill(self, values.reshape(self.shape).astype(dt), CauchyBackward0)


@_register("geometric_", 0.3)
def geometric_(self: Tensor, p: float, *, generator: Any = None, seed: int | None = None) -> Tensor:
    """Fill in place with the number of Bernoulli(``p``) trials up to the first success:
    ``ceil(log(u) / log1p(-p))`` (integer dtypes too)."""
    p = float(p)
    if not 0.0 < p < 1.0:
        raise BadArgumentsError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    if self.dtype == dtypes.bool_:
        raise _not_implemented("geometric_cpu", self.dtype)
    u = _generator(seed, generator).doubles(self._data.size)
    with np.errstate(all="ignore"):
        values = np.ceil(np.log(u) / np.log1p(-p))
    return _fill(self, values.reshape(self.shape).astype(self.dtype), GeometricBackward0)


@_register("log_normal_", 0.5, 0.25)
def log_normal_(
    self: Tensor,
    mean: float = 1.0,
    std: float = 2.0,
    *,
    generator: Any = None,
    seed: int | None = None,
) -> Tensor:
    """Fill in place with ``exp`` of normal samples of ``mean`` and ``std``."""
    std = float(std)
    if not std > 0.0:
        raise BadArgumentsError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    if self.dtype.kind != "f":
        raise _not_implemented("log_normal_cpu", self.dtype)
    normal = _generator(seed, generator).normal_doubles(self._data.size)
    with np.errstate(over="ignore"):
        values = np.exp(normal * std + float(mean))
    return _fill(self, values.reshape(self.shape).astype(self.dtype), LogNormalBackward0)
