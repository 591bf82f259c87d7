"""The in-place samplers of other distributions (``exponential_``, ``cauchy_``,
``geometric_``, ``log_normal_``) and ``multinomial``.

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

from .. import dtypes, estimates
from ..compat import write_out
from ..errors import BadArgumentsError, DtypeMismatchError
from ..registry import Const, register, sample
from ..tensor import Tensor
from ._util import as_tensor
from .creation_ops import _not_implemented
from .random_ops import _fill, _generator, _torch_call, _torch_method, _zero_gradient

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


# torch's errors for a complex tensor where the engine's draws would fill its real part
_COMPLEX_REFUSALS = {
    "geometric_": "\"geometric_cpu\" not implemented for '{type}'",
    "log_normal_": "\"log_normal_cpu\" not implemented for '{type}'",
}


def _register(name: str, *args: Any) -> Any:
    return register(
        name,
        samples=_samples(*args),
        differentiable=False,
        function=False,
        writes=("self",),
        torch=_torch_method(name),
        complex_inputs=_COMPLEX_REFUSALS.get(name),
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


# -- multinomial -------------------------------------------------------------------------------

_MAX_CATEGORIES = 1 << 24  # the index is computed in float: its consecutive integers


def _multinomial_checks(x: np.ndarray, n: int, replacement: bool, out: Any) -> None:
    """PyTorch's refusals, in its order, before any value is read."""
    if not 0 < x.ndim <= 2:
        raise BadArgumentsError("prob_dist must be 1 or 2 dim")
    if x.dtype.kind != "f":
        raise DtypeMismatchError(
            "multinomial only supports floating-point dtypes for input, got: "
            + dtypes.type_name(x.dtype)
        )
    if out is not None and out.dtype != dtypes.int64:
        raise DtypeMismatchError(
            f"multinomial expects Long tensor out, got: {dtypes.type_name(out.dtype)}"
        )
    if n <= 0:
        raise BadArgumentsError("cannot sample n_sample <= 0 samples")
    if not replacement and n > x.shape[-1]:
        raise BadArgumentsError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        )
    if x.shape[-1] > _MAX_CATEGORIES:
        raise BadArgumentsError("number of categories cannot exceed 2^24")


def _gumbel_top(x: np.ndarray, n: int, gen: Any) -> np.ndarray:
    """Without replacement (or one sample): the ``n`` largest of ``p / q`` with ``q``
    exponential draws (PyTorch's Gumbel trick), largest first."""
    if not bool((x < np.inf).all() and (x >= 0).all()):
        raise BadArgumentsError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((x.reshape(-1, x.shape[-1]).sum(-1) == 0).any()):
        raise BadArgumentsError("invalid multinomial distribution (sum of probabilities <= 0)")
    q = (-np.log1p(-gen.doubles(x.size))).astype(x.dtype).reshape(x.shape)
    ratio = x / q
    if n == 1:
        return np.argmax(ratio, axis=-1)[..., None]
    return np.argsort(-ratio, axis=-1, kind="stable")[..., :n]


def _with_replacement(x: np.ndarray, n: int, gen: Any) -> np.ndarray:
    """PyTorch's CPU kernel: per row, the cumulative sum in the input's precision,
    normalized, its last bucket set to 1, then a binary search per uniform draw."""
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty((rows.shape[0], n), np.int64)
    for i, row in enumerate(rows):
        if bool((row < 0).any()):
            raise BadArgumentsError(
                "invalid multinomial distribution (encountering probability entry < 0)"
            )
        if not bool(np.isfinite(row).all()):
            raise BadArgumentsError(
                "invalid multinomial distribution (encountering probability entry = infinity "
                "or NaN)"
            )
        cum = np.cumsum(row, dtype=row.dtype)
        total = cum[-1]
        if not total > 0:
            raise BadArgumentsError("invalid multinomial distribution (sum of probabilities <= 0)")
        cum = cum / total
        cum[-1] = 1
        out[i] = np.searchsorted(cum.astype(np.float64), gen.doubles(n), side="left")
    return out.reshape((*x.shape[:-1], n))


def _multinomial_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The indices (a row of ``num_samples`` per distribution) beside the input's copies."""
    x = estimates.arg(args, kwargs, 0, "input")
    n = estimates.arg(args, kwargs, 1, "num_samples")
    if not hasattr(x, "shape") or isinstance(n, bool) or not isinstance(n, int):
        return None
    rows = x.shape[0] if len(x.shape) == 2 else 1
    return rows * max(n, 0) + 3 * estimates.numel(x)


@register(
    estimate=_multinomial_size,
    samples=lambda rng: [
        sample(Const(rng.uniform(0, 1, (4,))), 3, seed=0, note="without replacement"),
        sample(Const(rng.uniform(0, 1, (3, 10))), 3, True, seed=1, note="rows, replacement"),
        sample(Const(rng.uniform(0, 1, (5,))), 1, seed=2, note="one sample"),
    ],
    differentiable=False,
    torch=_torch_call("multinomial"),
)
def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Any = None,
    seed: int | None = None,
    out: Tensor | None = None,
) -> Tensor:
    """Indices drawn from the categories of each row of ``input`` (weights, not
    necessarily normalized): the same indices as ``torch.multinomial`` after the same seed."""
    x = as_tensor(input)._data
    n = int(num_samples)
    _multinomial_checks(x, n, bool(replacement), out)
    gen = _generator(seed, generator)
    shape = (*x.shape[:-1], n)
    if x.size == 0:
        values = np.zeros(shape, np.int64)
    elif not replacement or n == 1:
        values = _gumbel_top(x, n, gen)
    else:
        values = _with_replacement(x, n, gen)
    result = Tensor._make(np.ascontiguousarray(values, dtype=np.int64))
    if out is None:
        return result
    write_out(out, result)
    return out
