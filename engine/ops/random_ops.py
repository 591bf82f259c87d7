"""Random ops: rand, randn, randint, randperm, normal, bernoulli, dropout and the
in-place fillers ``normal_``, ``uniform_``, ``bernoulli_``.

Each draws from ``generator=`` (an ``engine.Generator``), from a fresh generator
seeded with ``seed=`` (our shorthand), or from the context's default generator
(``engine.manual_seed``), with PyTorch's CPU transforms: the same seed gives the
same values as in PyTorch 2.13 (see ``engine.random``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes, estimates
from ..compat import cpu_device
from ..dual import FROM_BACKWARD
from ..errors import BadArgumentsError, DtypeMismatchError
from ..function import Function
from ..random import Generator, default_generator
from ..registry import Const, register, sample
from ..tensor import Tensor, _snapshot
from ..views import inplace
from ._util import as_tensor
from .arithmetic import mul, not_implemented_function
from .creation_ops import _dtype, _leaf, _like, _not_implemented, _size


def _generator(seed: Any, generator: Any) -> Generator:
    """The stream to draw from: ``generator`` (advances), a fresh one from ``seed``, or
    the context's default generator."""
    if generator is not None and seed is not None:
        raise BadArgumentsError("pass either seed or generator, not both")
    if generator is not None:
        if isinstance(generator, Generator):
            return generator
        raise BadArgumentsError(
            f"generator must be an engine.Generator, got {type(generator).__name__}"
        )
    if seed is None:
        return default_generator()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise BadArgumentsError(f"seed must be a non-negative integer, got {seed!r}")
    return Generator(int(seed))


def _floating(dt: np.dtype, kernel: str) -> np.dtype:
    if dt.kind != "f":
        raise _not_implemented(kernel, dt)
    return dt


def _torch_call(name: str) -> Callable[..., Any]:
    """How PyTorch spells the call: ``seed=`` becomes a seeded ``torch.Generator``."""

    def call(torch: Any, *args: Any, seed: Any = None, **kwargs: Any) -> Any:
        gen = torch.Generator().manual_seed(0 if seed is None else seed)
        return getattr(torch, name)(*args, generator=gen, **kwargs)

    return call


def _sized_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(2, 3, seed=0, note="ints"),
        sample((4,), seed=1, dtype="float64", note="tuple, float64"),
        sample((), seed=2, note="0-d"),
        sample(0, 2, seed=3, note="empty"),
        sample(5, 7, seed=4, note="35 elements: blocks of 16 and a redrawn tail"),
        sample(2, 2, seed=5, requires_grad=True, note="requires_grad"),
    ]


def _like_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(Const(rng.uniform(-1, 1, (2, 3))), seed=0, note="float"),
        sample(Const(rng.uniform(-1, 1, ())), seed=1, note="0-d"),
        sample(Const(np.zeros((0, 2))), seed=2, note="empty"),
        sample(Const(np.array([1, 2])), seed=3, dtype="float64", note="dtype override"),
        sample(Const(rng.uniform(-1, 1, (4, 5))), seed=4, note="20 elements"),
        sample(Const(rng.uniform(-1, 1, (2,))), seed=5, requires_grad=True, note="requires_grad"),
    ]


@register(
    samples=_sized_samples,
    differentiable=False,
    method=False,
    torch=_torch_call("rand"),
    estimate=estimates.sized,
)
def rand(
    *size: Any,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniform samples from [0, 1), as ``torch.rand`` draws them."""
    shape = _size("rand", size)
    dt = _floating(_dtype(dtype), "check_uniform_bounds")
    return _leaf(_generator(seed, generator).uniform(shape, dt), requires_grad)


@register(
    samples=_sized_samples,
    differentiable=False,
    method=False,
    torch=_torch_call("randn"),
    estimate=estimates.sized,
)
def randn(
    *size: Any,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal samples, as ``torch.randn`` draws them."""
    shape = _size("randn", size)
    dt = _floating(_dtype(dtype), "normal_kernel_cpu")
    return _leaf(_generator(seed, generator).normal(shape, dt), requires_grad)


@register(samples=_like_samples, differentiable=False, method=False, torch=_torch_call("rand_like"))
def rand_like(
    input: Tensor,
    *,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``rand`` in the shape (and, by default, the dtype) of ``input``."""
    a = _like(input)
    dt = _floating(_dtype(dtype, a.dtype), "check_uniform_bounds")
    return _leaf(_generator(seed, generator).uniform(a.shape, dt), requires_grad)


@register(
    samples=_like_samples, differentiable=False, method=False, torch=_torch_call("randn_like")
)
def randn_like(
    input: Tensor,
    *,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``randn`` in the shape (and, by default, the dtype) of ``input``."""
    a = _like(input)
    dt = _floating(_dtype(dtype, a.dtype), "normal_kernel_cpu")
    return _leaf(_generator(seed, generator).normal(a.shape, dt), requires_grad)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise BadArgumentsError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _randint_bounds(op: str, low: int, high: int) -> None:
    if low >= high:
        raise BadArgumentsError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )


def _randint_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(10, (3, 4), seed=0, note="high, size"),
        sample(-5, 5, (6,), seed=1, note="low, high, size"),
        sample(0, 2**40, (3,), seed=2, note="a wide range: 64-bit draws"),
        sample(3, (2,), seed=3, dtype="float64", note="float64"),
        sample(0, 100, (5,), seed=4, dtype="float32", note="float dtype"),
    ]


def _randint_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    size = kwargs.get("size", args[-1] if args else None)
    return estimates.sized((size,), {}) if isinstance(size, (list, tuple)) else None


@register(
    samples=_randint_samples,
    differentiable=False,
    method=False,
    torch=_torch_call("randint"),
    estimate=_randint_estimate,
)
def randint(
    *args: Any,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if len(args) == 2:
        low, high, size = 0, args[0], args[1]
    elif len(args) == 3:
        low, high, size = args
    else:
        raise BadArgumentsError(
            "randint() takes (high, size) or (low, high, size), "
            f"got {len(args)} positional arguments"
        )
    low, high = _int(low, "low"), _int(high, "high")
    shape = _size("randint", (size,))
    _randint_bounds("randint", low, high)
    dt = _dtype(dtype, np.dtype(np.int64))
    if dt.kind == "c":  # torch's check (the engine drew integers into the real part)
        raise BadArgumentsError(
            "check_random_bounds handles only integral, floating-point and boolean types"
        )
    values = _generator(seed, generator).integers(low, high, shape, dt)
    return _leaf(values, requires_grad)


@register(
    complex_inputs=(
        RuntimeError,
        "check_random_bounds handles only integral, floating-point and boolean types",
    ),
    samples=lambda rng: [
        sample(Const(np.zeros((2, 3))), 5, seed=0, note="high"),
        sample(Const(np.zeros((4,), np.int64)), -3, 3, seed=1, note="low, high, int64"),
    ],
    differentiable=False,
    method=False,
    torch=_torch_call("randint_like"),
)
def randint_like(
    input: Tensor,
    *bounds: Any,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``randint`` in the shape (and, by default, the dtype) of ``input``."""
    a = _like(input)
    if len(bounds) == 1:
        low, high = 0, bounds[0]
    elif len(bounds) == 2:
        low, high = bounds
    else:
        raise BadArgumentsError("randint_like() takes (input, high) or (input, low, high)")
    low, high = _int(low, "low"), _int(high, "high")
    _randint_bounds("randint_like", low, high)
    dt = _dtype(dtype, a.dtype)
    return _leaf(_generator(seed, generator).integers(low, high, a.shape, dt), requires_grad)


@register(
    samples=lambda rng: [
        sample(10, seed=0, note="ten"),
        sample(1, seed=1, note="one"),
        sample(0, seed=2, note="none"),
        sample(37, seed=3, note="37"),
    ],
    differentiable=False,
    method=False,
    torch=_torch_call("randperm"),
    estimate=lambda args, kwargs: estimates.sized(args[:1], {}),
)
def randperm(
    n: int,
    *,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A random permutation of ``0 .. n-1``, as ``torch.randperm`` shuffles."""
    n = _int(n, "n")
    if n < 0:
        raise BadArgumentsError(f"n must be non-negative, got{n}")
    dt = _dtype(dtype, np.dtype(np.int64))
    return _leaf(_generator(seed, generator).permutation(n, dt), requires_grad)


def _std_checked(std: float) -> float:
    if std < 0:
        raise BadArgumentsError(f"normal expects std >= 0.0, but found std {std}")
    return std


@register(
    complex_inputs="normal is not implemented for '{type}' in this engine",
    samples=lambda rng: [
        sample(2.0, 3.0, (3,), seed=0, note="numbers and a size"),
        sample(0.0, 1.0, (4, 8), seed=1, note="32 elements"),
        sample(Const(rng.uniform(-1, 1, (2, 3))), 0.5, seed=2, note="tensor mean"),
        sample(1.0, Const(rng.uniform(0.5, 2, (20,))), seed=3, note="tensor std"),
        sample(
            Const(rng.uniform(-1, 1, (17,))),
            Const(rng.uniform(0.5, 2, (17,))),
            seed=4,
            note="both tensors",
        ),
        sample(1.6, 0.3, (2, 3), seed=5, dtype="float64", device="cpu", note="device='cpu'"),
    ],
    differentiable=False,
    method=False,
    torch=_torch_call("normal"),
    estimate=estimates.normal,
)
def normal(
    mean: Any,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Any = None,
    seed: int | None = None,
    dtype: Any = None,
    device: Any = None,
) -> Tensor:
    """``torch.normal``: numbers and a size, or tensors of means and/or deviations
    (standard normals scaled then shifted, in the result's dtype, as PyTorch does);
    ``device`` the CPU, as the factories take it."""
    cpu_device(device)
    gen = _generator(seed, generator)
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise BadArgumentsError("normal() with numbers for mean and std needs a size")
        shape = _size("normal", (size,))
        dt = _floating(_dtype(dtype), "normal_kernel_cpu")
        return _leaf(gen.normal(shape, dt, float(mean), _std_checked(float(std))), False)
    if size is not None:
        raise BadArgumentsError("normal() takes a size only with numbers for mean and std")
    m, s = as_tensor(mean), as_tensor(std)
    if isinstance(std, Tensor) and (s._data < 0).any():
        raise BadArgumentsError("normal expects all elements of std >= 0.0")
    dt = dtypes.result_type(m, s)
    if not dtypes.is_floating(dt):
        dt = dtypes.DEFAULT_FLOAT
    shape = tuple(np.broadcast_shapes(m.shape, s.shape))
    z = gen.normal(shape, dt)
    out = ((z * s._data.astype(dt)).astype(dt) + m._data.astype(dt)).astype(dt)
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        return NormalBackward3.apply(mean, std, values=out)
    if isinstance(mean, Tensor):
        return NormalBackward1.apply(mean, values=out)
    return NormalBackward2.apply(std, values=out)


@register(
    complex_inputs="\"bernoulli_tensor_cpu_self_\" not implemented for '{type}'",
    samples=lambda rng: [
        sample(Const(rng.uniform(0, 1, (3, 4))), seed=0, note="float32 probabilities"),
        sample(Const(np.array([0.0, 1.0, 0.5])), seed=1, note="0 and 1"),
        sample(Const(rng.uniform(0, 1, (5,))), 0.3, seed=2, note="a number p"),
    ],
    differentiable=False,
    torch=_torch_call("bernoulli"),
)
def bernoulli(
    input: Tensor, p: float | None = None, *, generator: Any = None, seed: int | None = None
) -> Tensor:
    """Zeros and ones: each element 1 with the probability ``input`` holds there (or
    with the number ``p``), in ``input``'s shape and dtype."""
    a = _like(input)
    gen = _generator(seed, generator)
    if p is not None:
        values = gen.bernoulli(_probability(p), a.shape, a.dtype)
        return BernoulliNotImplemented.apply(a, compute=lambda _a: values)
    data = a._data
    if data.size and (np.isnan(data).any() or data.min() < 0 or data.max() > 1):
        raise BadArgumentsError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return BernoulliBackward0.apply(a, values=gen.bernoulli_tensor(data, data.dtype))


def _probability(p: Any) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise BadArgumentsError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return p


def _zero_gradient(name: str) -> type[Function]:
    """The node of a random op that PyTorch differentiates as a constant
    (derivatives.yaml: ``zeros_like``): its result requires grad when an input does,
    and each such input gets a zero gradient."""

    def forward(ctx: Any, *inputs: Any, values: np.ndarray) -> np.ndarray:
        ctx.shapes = [(t._data.shape, t._data.dtype) for t in inputs]
        return values

    def backward(ctx: Any, g: Tensor) -> Any:
        zeros = tuple(
            Tensor._make(np.zeros(shape, dt)) if ctx.needs_input_grad[i] else None
            for i, (shape, dt) in enumerate(ctx.shapes)
        )
        return zeros if len(zeros) > 1 else zeros[0]

    attrs = {
        "name": name,
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        "jvp": FROM_BACKWARD,  # the zero gradient: a zero tangent, as PyTorch's
    }
    return type(name, (Function,), attrs)


BernoulliBackward0 = _zero_gradient("BernoulliBackward0")
NormalBackward1 = _zero_gradient("NormalBackward1")  # tensor mean, number std
NormalBackward2 = _zero_gradient("NormalBackward2")  # number mean, tensor std
NormalBackward3 = _zero_gradient("NormalBackward3")  # both tensors
BernoulliNotImplemented = not_implemented_function("bernoulli")  # bernoulli(input, p)
UniformBackward0 = _zero_gradient("UniformBackward0")  # uniform_
NormalBackward0 = _zero_gradient("NormalBackward0")  # normal_
BernoulliBackward2 = _zero_gradient("BernoulliBackward2")  # bernoulli_(p)


# -- in-place fillers ------------------------------------------------------------------------


def _fill(t: Tensor, values: np.ndarray, node: type[Function]) -> Tensor:
    """Write ``values`` into ``t``; in a graph, rebase its history onto ``node`` (a
    zero gradient to the overwritten values; CopySlices on the base of a view)."""
    t._check_inplace()
    if t._records():
        return inplace(t, node.apply(_snapshot(t), values=values))
    return t._write(values)


def _filler_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(Const(np.zeros((3, 4), np.float32)), seed=0, note="12 elements"),
        sample(Const(np.zeros((33,))), seed=1, note="33 float64 elements"),
    ]


def _torch_method(name: str, *extra: Any) -> Callable[..., Any]:
    def call(torch: Any, t: Any, *args: Any, seed: Any = None, **kwargs: Any) -> Any:
        gen = torch.Generator().manual_seed(0 if seed is None else seed)
        return getattr(t.clone(), name)(*args, generator=gen, **kwargs)

    return call


@register(
    "normal_",
    samples=_filler_samples,
    differentiable=False,
    function=False,
    writes=("self",),
    torch=_torch_method("normal_"),
)
def normal_(
    self: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    *,
    generator: Any = None,
    seed: int | None = None,
) -> Tensor:
    """Fill in place with normal samples (PyTorch's ``normal_``), bumping the version."""
    dt = _floating(self.dtype, "normal_kernel_cpu")
    gen = _generator(seed, generator)
    values = gen.normal(self.shape, dt, float(mean), _std_checked(float(std)))
    return _fill(self, values, NormalBackward0)


@register(
    "uniform_",
    samples=_filler_samples,
    differentiable=False,
    function=False,
    writes=("self",),
    torch=_torch_method("uniform_"),
)
def uniform_(
    self: Tensor,
    a: float = 0.0,
    b: float = 1.0,
    *,
    generator: Any = None,
    seed: int | None = None,
) -> Tensor:
    """Fill in place with samples uniform on [a, b) (PyTorch's ``uniform_``)."""
    dt = _floating(self.dtype, "check_uniform_bounds")
    if a > b:
        raise BadArgumentsError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}"
        )
    values = _generator(seed, generator).uniform(self.shape, dt, float(a), float(b))
    return _fill(self, values, UniformBackward0)


@register(
    "bernoulli_",
    complex_inputs="\"bernoulli_scalar_cpu_\" not implemented for '{type}'",
    samples=_filler_samples,
    differentiable=False,
    function=False,
    writes=("self",),
    torch=_torch_method("bernoulli_"),
)
def bernoulli_(
    self: Tensor, p: float = 0.5, *, generator: Any = None, seed: int | None = None
) -> Tensor:
    """Fill in place with zeros and ones, each 1 with probability ``p``."""
    values = _generator(seed, generator).bernoulli(_probability(p), self.shape, self.dtype)
    return _fill(self, values, BernoulliBackward2)


# -- dropout ---------------------------------------------------------------------------------


def _dropout_p(p: Any) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise BadArgumentsError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def _noise_mul(
    input: Tensor, noise_shape: tuple[int, ...], p: float, training: bool, gen: Generator
) -> Tensor:
    """PyTorch's ``_dropout_impl``: ``input * (bernoulli_(1 - p) / (1 - p))``."""
    if p == 0 or not training or input._data.size == 0:
        return input
    dt = input.dtype
    if dt.kind != "f":
        raise DtypeMismatchError(f"dropout is not implemented for {dtypes.torch_name(dt)}")
    if p == 1:
        return mul(input, Tensor._make(np.zeros((), dt)))
    noise = gen.bernoulli(1.0 - p, noise_shape, dt)
    noise = (noise / dt.type(1.0 - p)).astype(dt)
    return mul(input, Tensor._make(noise))


def _dropout_samples(rng: np.random.Generator) -> list[Any]:
    return [
        sample(rng.uniform(-1, 1, (4, 5)), 0.5, seed=0, note="p=0.5"),
        sample(rng.uniform(-1, 1, (30,)), 0.2, seed=1, note="p=0.2"),
        sample(rng.uniform(-1, 1, (3,)), 0.5, training=False, seed=2, note="eval: identity"),
        sample(rng.uniform(-1, 1, (3,)), 1.0, seed=3, note="p=1: zeros"),
    ]


def _torch_dropout(name: str) -> Callable[..., Any]:
    def call(torch: Any, *args: Any, seed: Any = None, **kwargs: Any) -> Any:
        torch.manual_seed(0 if seed is None else seed)
        return getattr(torch.nn.functional, name)(*args, **kwargs)

    return call


@register(
    complex_inputs="\"bernoulli_scalar_cpu_\" not implemented for '{type}'",
    samples=_dropout_samples,
    method=False,
    torch=_torch_dropout("dropout"),
)
def dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Any = None,
    seed: int | None = None,
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``: the
    same mask as ``torch.nn.functional.dropout`` after the same seed."""
    p = _dropout_p(p)
    if inplace:
        raise BadArgumentsError("dropout(inplace=True) is not supported; use inplace=False")
    a = _like(input)
    return _noise_mul(a, a.shape, p, bool(training), _generator(seed, generator))


_FEATURE_DEPRECATED = (
    "{name}: Received a {nd}-D input to {name}, which is deprecated and will result in an "
    "error in a future release. To retain the behavior and silence this warning, please use "
    "dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
    "{dims} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
    "{lo}D or {hi}D inputs)."
)
_DROPOUT2D_3D = (
    "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
    "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
    "dim. This behavior will change in a future release to interpret the input as one without "
    "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
    "behavior, please switch to using dropout1d instead."
)


def _feature_noise_shape(name: str, dims: int, a: Tensor) -> tuple[int, ...]:
    """The mask's shape as ``torch.nn.functional.<name>`` builds it: ``dropout1d``
    refuses other ranks; ``dropout2d``/``dropout3d`` warn and go on; ``dropout2d``
    reads a 3-D input as (N, C, L) (torch 2.13, with its warning), ``dropout3d`` a
    non-5-D one as unbatched; then one draw per (batch, channel)."""
    nd, lo, hi = a.ndim, dims + 1, dims + 2
    if nd not in (lo, hi):
        if dims == 1:
            raise BadArgumentsError(
                f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that "
                "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or "
                "3D inputs)."
            )
        msg = _FEATURE_DEPRECATED.format(name=name, nd=nd, dims=dims, lo=lo, hi=hi)
        warnings.warn(msg, UserWarning, stacklevel=4)
    if dims == 2 and nd == 3:
        warnings.warn(_DROPOUT2D_3D, UserWarning, stacklevel=4)
    unbatched = dims != 2 and nd != hi
    full = (1, *a.shape) if unbatched else tuple(a.shape)
    if len(full) < 2:
        raise BadArgumentsError("Feature dropout requires at least 2 dimensions in the input")
    noise = full[:2] + (1,) * (len(full) - 2)
    return noise[1:] if unbatched else noise


def _feature_dropout(name: str, dims: int) -> Callable[..., Tensor]:
    def fn(
        input: Tensor,
        p: float = 0.5,
        training: bool = True,
        inplace: bool = False,
        *,
        generator: Any = None,
        seed: int | None = None,
    ) -> Tensor:
        p = _dropout_p(p)
        if inplace:
            raise BadArgumentsError(f"{name}(inplace=True) is not supported; use inplace=False")
        a = _like(input)
        shape = _feature_noise_shape(name, dims, a)
        return _noise_mul(a, shape, p, bool(training), _generator(seed, generator))

    fn.__name__ = name
    fn.__doc__ = (
        f"Zero whole channels with probability ``p`` (``torch.nn.functional.{name}``), "
        "scaling the rest by ``1/(1-p)``."
    )
    return fn


def _feature_samples(dims: int) -> Callable[[np.random.Generator], list[Any]]:
    def build(rng: np.random.Generator) -> list[Any]:
        return [
            sample(rng.uniform(-1, 1, (2, 3) + (4,) * dims), 0.5, seed=0, note="batched"),
            sample(rng.uniform(-1, 1, (4, 3) + (2,) * dims), 0.3, seed=1, note="p=0.3"),
        ]

    return build


for _name, _dims in (("dropout1d", 1), ("dropout2d", 2), ("dropout3d", 3)):
    register(
        complex_inputs="\"bernoulli_scalar_cpu_\" not implemented for '{type}'",
        samples=_feature_samples(_dims),
        method=False,
        torch=_torch_dropout(_name),
    )(_feature_dropout(_name, _dims))
