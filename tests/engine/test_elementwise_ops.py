"""Elementwise ops beyond the op database: integer inputs, kinks and boundaries,
non-finite gradients, saved-tensor rules, higher order, and the erf behind gelu.

The database (test_op_database.py) already runs gradcheck, gradgradcheck and
PyTorch parity over every sample; these tests pin down what samples cannot.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine as E
from engine.errors import (
    BadArgumentsError,
    DtypeMismatchError,
    GraphFreedError,
    ShapeMismatchError,
    VersionMismatchError,
)
from engine.ops.elementwise import _erf
from tests.engine.torch_oracle import assert_kernel_close, assert_values, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1
F = torch.nn.functional

pytestmark = pytest.mark.torch

# name -> (engine call, torch call)
UNARY: dict[str, tuple[Any, Any]] = {
    "exp": (E.exp, torch.exp),
    "log": (E.log, torch.log),
    "log1p": (E.log1p, torch.log1p),
    "expm1": (E.expm1, torch.expm1),
    "sqrt": (E.sqrt, torch.sqrt),
    "rsqrt": (E.rsqrt, torch.rsqrt),
    "sin": (E.sin, torch.sin),
    "cos": (E.cos, torch.cos),
    "tan": (E.tan, torch.tan),
    "tanh": (E.tanh, torch.tanh),
    "sigmoid": (E.sigmoid, torch.sigmoid),
}
ACTIVATIONS: dict[str, tuple[Any, Any]] = {
    "relu": (E.relu, torch.relu),
    "leaky_relu": (E.leaky_relu, F.leaky_relu),
    "leaky_relu(0.2)": (lambda x: E.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2)),
    "elu": (E.elu, F.elu),
    "elu(0.5)": (lambda x: E.elu(x, alpha=0.5), lambda x: F.elu(x, alpha=0.5)),
    "gelu": (E.gelu, F.gelu),
    "gelu(tanh)": (
        lambda x: E.gelu(x, approximate="tanh"),
        lambda x: F.gelu(x, approximate="tanh"),
    ),
    "silu": (E.silu, F.silu),
    "softplus": (E.softplus, F.softplus),
    "softplus(2, 1)": (
        lambda x: E.softplus(x, beta=2.0, threshold=1.0),
        lambda x: F.softplus(x, beta=2.0, threshold=1.0),
    ),
}
ALL = {**UNARY, **ACTIVATIONS}


def _pair(values: Any, dtype: str = "float64") -> tuple[E.Tensor, Any]:
    data = np.asarray(values, dtype=dtype)
    return (
        E.tensor(data, requires_grad=True),
        torch.tensor(data, requires_grad=True),
    )


def _grads(fn: Any, x: Any, lib: Any) -> tuple[Any, Any]:
    y = fn(x)
    y.backward(lib.ones_like(y) if lib is torch else E.ones_like(y))
    return y, x.grad


# -- dtypes -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_float_functions_of_integers_compute_in_float32(name: str, dtype: str) -> None:
    mine_fn, torch_fn = UNARY[name]
    data = np.array([1, 0, 3]).astype(dtype)
    mine, theirs = mine_fn(E.tensor(data)), torch_fn(torch.tensor(data))
    assert mine.dtype == np.float32 and theirs.dtype == torch.float32
    assert_values(mine, theirs, rtol=1e-6)


def test_relu_keeps_integers_and_refuses_bools() -> None:
    y = E.relu(E.tensor([1, -2, 3]))
    assert y.dtype == np.int64 and y.tolist() == [1, 0, 3]
    with pytest.raises(DtypeMismatchError) as err:
        E.relu(E.tensor([True, False]))
    assert str(err.value) == "Boolean inputs not supported for relu"


@pytest.mark.parametrize(
    ("name", "kernel"),
    [
        ("leaky_relu", "leaky_relu_cpu"),
        ("elu", "elu_cpu"),
        ("gelu", "GeluKernelImpl"),
        ("silu", "silu_cpu"),
        ("softplus", "softplus_cpu"),
    ],
)
def test_float_only_activations_refuse_integers_as_torch(name: str, kernel: str) -> None:
    mine_fn, torch_fn = ACTIVATIONS[name]
    with pytest.raises(NotImplementedError) as theirs:
        torch_fn(torch.tensor([1, 2]))
    with pytest.raises(DtypeMismatchError) as mine:
        mine_fn(E.tensor([1, 2]))
    assert str(mine.value) == str(theirs.value) == f"\"{kernel}\" not implemented for 'Long'"
    assert mine.value.code == "dtype_mismatch"


@pytest.mark.parametrize("name", sorted(ALL))
def test_float32_stays_float32(name: str) -> None:
    mine_fn, _ = ALL[name]
    x = E.tensor(np.linspace(-2, 2, 5, dtype=np.float32) + 2.5, requires_grad=True)
    y = mine_fn(x)
    y.sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32


# -- values and gradients at kinks, boundaries and extremes -------------------------------


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradients_at_zero_and_extremes(name: str) -> None:
    """relu'(0) = 0, leaky_relu'(0) = slope, elu'(0) = alpha, saturated tails, NaN."""
    mine_fn, torch_fn = ACTIVATIONS[name]
    values = [0.0, -0.0, -1e-300, 1e-300, -50.0, 50.0, -800.0, 800.0, 19.99, 20.01, math.nan]
    x, tx = _pair(values)
    y, g = _grads(mine_fn, x, E)
    ty, tg = _grads(torch_fn, tx, torch)
    assert_values(y, ty)
    assert_values(g, tg)


def test_relu_grad_at_zero_is_zero() -> None:
    x = E.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    E.relu(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]


def test_infinite_gradient_does_not_leak_through_a_dead_relu() -> None:
    """log(relu(x)): the infinite d/dy log(0) meets relu's zero; PyTorch gives 0, not nan."""
    x, tx = _pair([-1.0, 0.0, 2.0])
    E.log(E.relu(x)).sum().backward()
    torch.log(torch.relu(tx)).sum().backward()
    assert_values(x.grad, tx.grad)
    assert x.grad.tolist() == [0.0, 0.0, 0.5]


@pytest.mark.parametrize(
    "bounds",
    [(-1.0, 1.0), (None, 0.0), (0.0, None), (1.0, -1.0), (math.nan, None)],
    ids=["both", "max", "min", "min above max", "nan min"],
)
def test_clamp_gradient_passes_at_the_boundary(bounds: tuple[Any, Any]) -> None:
    lo, hi = bounds
    values = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, math.inf, math.nan]
    x, tx = _pair(values)
    y, g = _grads(lambda t: E.clamp(t, lo, hi), x, E)
    ty, tg = _grads(lambda t: torch.clamp(t, lo, hi), tx, torch)
    assert y.grad_fn.name == ty.grad_fn.name() == "ClampBackward1"
    assert_values(y, ty)
    assert_values(g, tg)


def test_clamp_tensor_bounds_get_gradients() -> None:
    x, tx = _pair([[1.0, 0.0, 3.0, 5.0], [-1.0, 2.0, 2.5, 0.0]])
    lo, tlo = _pair([1.0, 2.0, 3.0, 4.0])
    hi, thi = _pair([[2.0], [2.0]])
    y = E.clamp(x, lo, hi)
    ty = torch.clamp(tx, tlo, thi)
    assert y.grad_fn.name == ty.grad_fn.name() == "ClampBackward0"
    g = np.arange(8.0).reshape(2, 4)
    y.backward(E.tensor(g, dtype="float64"))
    ty.backward(torch.tensor(g))
    assert_values(y, ty)
    for mine, theirs in ((x, tx), (lo, tlo), (hi, thi)):
        assert_values(mine.grad, theirs.grad)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda T, x, b: T.clamp(x, min=b), "ClampBackward0"),
        (lambda T, x, b: T.clamp(x, max=b), "ClampBackward0"),
        # a 0-d bound that needs no grad counts as a number
        (lambda T, x, b: T.clamp(x, b.detach(), 1.0), "ClampBackward1"),
        (lambda T, x, b: T.clamp_min(x, b), "ClampMinBackward1"),
        (lambda T, x, b: T.clamp_max(x, b), "ClampMaxBackward1"),
        (lambda T, x, b: T.clamp_min(x, 0.5), "ClampMinBackward0"),
        (lambda T, x, b: T.clamp_max(x, 0.5), "ClampMaxBackward0"),
    ],
)
def test_clamp_variants_record_torch_nodes(call: Any, name: str) -> None:
    x, tx = _pair([-1.0, 0.5, 2.0])
    b, tb = _pair(0.5)
    y, ty = call(E, x, b), call(torch, tx, tb)
    assert y.grad_fn.name == ty.grad_fn.name() == name
    y.sum().backward()
    ty.sum().backward()
    assert_values(x.grad, tx.grad)
    if tb.grad is None:
        assert b.grad is None
    else:
        assert_values(b.grad, tb.grad)


def test_clamp_dtypes_follow_torch_promotion() -> None:
    assert E.clamp(E.tensor([1, 5]), 0, 3).dtype == np.int64
    assert E.clamp(E.tensor([1, 5]), 0.5).dtype == np.float32
    assert E.clamp(E.tensor([True, False]), -1, 1).dtype == np.int64
    assert E.clamp(E.tensor([1.0], dtype="float32"), E.tensor(0.0, dtype="float64")).dtype == (
        np.float32
    )


def test_clamp_needs_a_bound() -> None:
    with pytest.raises(RuntimeError) as theirs:
        torch.clamp(torch.ones(2))
    with pytest.raises(BadArgumentsError) as mine:
        E.clamp(E.ones(2))
    assert str(mine.value) == str(theirs.value)
    assert E.clip(E.tensor([-2.0, 2.0]), -1, 1).tolist() == [-1.0, 1.0]


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_ties_split_and_nan(op: str) -> None:
    a, ta = _pair([1.0, 2.0, 3.0, math.nan, 0.0])
    b, tb = _pair([1.0, 1.0, 4.0, 0.0, math.nan])
    y = getattr(E, op)(a, b)
    ty = getattr(torch, op)(ta, tb)
    y.backward(E.tensor([1.0, 2.0, 4.0, 8.0, 16.0], dtype="float64"))
    ty.backward(torch.tensor([1.0, 2.0, 4.0, 8.0, 16.0], dtype=torch.float64))
    assert y.grad_fn.name == ty.grad_fn.name()
    assert_values(y, ty)
    assert_values(a.grad, ta.grad)
    assert_values(b.grad, tb.grad)
    assert a.grad.tolist()[0] == b.grad.tolist()[0] == 0.5


def test_maximum_broadcast_errors_and_promotion() -> None:
    with pytest.raises(RuntimeError) as theirs:
        torch.maximum(torch.ones(2, 3), torch.ones(4))
    with pytest.raises(ShapeMismatchError) as mine:
        E.maximum(E.ones(2, 3), E.ones(4))
    assert str(mine.value) == str(theirs.value)
    f32 = E.ones(3)
    assert E.maximum(f32, E.tensor(0.5, dtype="float64")).dtype == np.float32
    assert E.maximum(E.tensor([1, 2]), E.tensor([0.5])).dtype == np.float32
    with pytest.raises(TypeError) as theirs_t:
        torch.maximum(torch.ones(3), 2)  # type: ignore[call-overload]
    with pytest.raises(TypeError) as mine_t:
        E.maximum(f32, 2)
    assert str(mine_t.value) == str(theirs_t.value)  # the binding demands a Tensor
    assert E.maximum(f32, E.tensor(2)).tolist() == [2.0, 2.0, 2.0]


def test_gelu_rejects_unknown_approximation() -> None:
    with pytest.raises(RuntimeError) as theirs:
        F.gelu(torch.ones(2), approximate="fast")
    with pytest.raises(BadArgumentsError) as mine:
        E.gelu(E.ones(2), approximate="fast")
    assert str(mine.value) == str(theirs.value)


# -- erf ----------------------------------------------------------------------------------


def test_erf_within_a_few_ulp_of_libm() -> None:
    x = np.concatenate(
        [
            np.linspace(-7.0, 7.0, 20001),
            np.geomspace(1e-300, 1.0, 200),
            -np.geomspace(1e-300, 1.0, 200),
            [0.0, -0.0, 1.0, 2.0, 3.5, 6.0, -6.0, 1e300],
        ]
    )
    ref = np.array([math.erf(v) for v in x])
    got = _erf(x)
    assert np.all(np.abs(got - ref) <= 8 * np.spacing(np.abs(ref)))
    assert np.signbit(_erf(np.array([-0.0]))).all()
    assert _erf(np.array([math.inf, -math.inf])).tolist() == [1.0, -1.0]
    assert np.isnan(_erf(np.array([math.nan]))).all()
    assert _erf(np.zeros((0, 3))).shape == (0, 3)


# -- graph semantics ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL))
def test_second_derivative_matches_torch(name: str) -> None:
    mine_fn, torch_fn = ALL[name]
    values = [0.3, -1.2, 2.1, 0.9, -0.4]
    x, tx = _pair(values)
    (g,) = E.grad(mine_fn(x).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(torch_fn(tx).sum(), tx, create_graph=True)
    assert_values(g, tg)
    assert g.requires_grad == tg.requires_grad
    (gg,) = E.grad(g.sum(), x, allow_unused=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx, allow_unused=True)
    assert_values(gg, tgg)


@pytest.mark.parametrize(
    ("name", "node"),
    [
        ("relu", "ThresholdBackwardBackward0"),
        ("sigmoid", "SigmoidBackwardBackward0"),
        ("tanh", "TanhBackwardBackward0"),
        ("leaky_relu", "LeakyReluBackwardBackward0"),
        ("elu", "EluBackwardBackward0"),
        ("gelu", "GeluBackwardBackward0"),
        ("softplus", "SoftplusBackwardBackward0"),
        ("silu", "MulBackward0"),
    ],
)
def test_backward_graph_names_match_torch(name: str, node: str) -> None:
    mine_fn, torch_fn = ALL[name]
    x, tx = _pair([0.5, -1.0])
    (g,) = E.grad(mine_fn(x).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(torch_fn(tx).sum(), tx, create_graph=True)
    assert g.grad_fn.name == type(tg.grad_fn).__name__ == node


@pytest.mark.parametrize("name", sorted(ALL))
def test_numpy_vjp_agrees_with_engine_backward(name: str) -> None:
    """Each op's numpy ``vjp`` (plain backward) and its engine-op rule (create_graph)."""
    mine_fn, _ = ALL[name]
    x = E.tensor(np.array([0.3, -1.2, 2.1, 0.9, -0.4, 3.0]), requires_grad=True)
    v = E.tensor(np.linspace(-1.0, 1.0, 6))
    (fast,) = E.grad(mine_fn(x), x, v)
    (graph,) = E.grad(mine_fn(x), x, v, create_graph=True)
    np.testing.assert_allclose(fast.data, graph.data, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    ("name", "saves_result"),
    [
        ("relu", True),
        ("sigmoid", True),
        ("tanh", True),
        ("exp", True),
        ("sqrt", True),
        ("sin", False),
        ("log", False),
        ("gelu", False),
        ("softplus", False),
    ],
)
def test_in_place_edit_of_a_saved_tensor_fails_backward_as_torch(
    name: str, saves_result: bool
) -> None:
    """What each op saves (its input or its result) decides which edit breaks backward."""
    mine_fn, torch_fn = ALL[name]

    def run(T: Any, fn: Any) -> str:
        x = T.tensor([0.5, 1.5], requires_grad=True)
        h = x * 1.0
        y = fn(h)
        (y if saves_result else h).mul_(2.0)
        try:
            y.sum().backward()
        except (RuntimeError, VersionMismatchError) as exc:
            return str(exc)
        return "ok"

    theirs, mine = run(torch, torch_fn), run(E, mine_fn)
    assert theirs.startswith("one of the variables needed for gradient computation")
    assert mine == theirs


def test_in_place_edit_is_a_version_error() -> None:
    x = E.tensor([0.5, 1.5], requires_grad=True)
    y = E.sigmoid(x * 1.0)
    y.mul_(2.0)
    with pytest.raises(VersionMismatchError):
        y.sum().backward()


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "gelu", "clamp", "maximum"])
def test_second_backward_through_a_freed_node_raises(name: str) -> None:
    fns = {
        **ALL,
        "clamp": (lambda t: E.clamp(t, 0.0, 1.0), None),
        "maximum": (lambda t: E.maximum(t, t * 0.5), None),
    }
    x = E.tensor([0.5, -1.0], requires_grad=True)
    y = fns[name][0](x).sum()
    y.backward(retain_graph=False)
    with pytest.raises(GraphFreedError):
        y.backward()


def test_methods_exist_where_torch_has_them() -> None:
    x = E.tensor([-1.0, 0.5])
    for name in ("exp", "log1p", "sqrt", "sigmoid", "tanh", "relu", "clamp", "clip", "maximum"):
        assert hasattr(x, name), name
        assert hasattr(torch.Tensor, name), name
    for name in ("leaky_relu", "elu", "gelu", "silu", "softplus"):
        assert not hasattr(torch.Tensor, name), name
    assert x.clamp(min=0.0).tolist() == [0.0, 0.5]


@pytest.mark.parametrize("name", sorted(ALL))
def test_overflow_and_domain_edges_are_silent(name: str) -> None:
    """inf and nan are PyTorch's answers at the edges (exp(1000), log(0), sqrt(-1)):
    no numpy RuntimeWarning leaks into logs."""
    mine_fn, torch_fn = ALL[name]
    x, tx = _pair([1000.0, -1000.0, 0.0, -1.0, math.inf, -math.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, g = _grads(mine_fn, x, E)
        if name != "silu":  # its create_graph rule is engine mul, whose inf * 0 warns
            y2 = mine_fn(x)
            E.grad(y2, x, E.ones_like(y2), create_graph=True)
    ty, tg = _grads(torch_fn, tx, torch)
    assert_values(y, ty)
    assert_values(g, tg)


# -- the wider library: special values, refusals, operators ---------------------------------

SPECIALS = [-np.inf, -3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 7.5, np.inf, np.nan]
# name -> (engine call, torch call); each is run on SPECIALS (and its gradient too)
MORE_UNARY: dict[str, tuple[Any, Any]] = {
    name: (getattr(E, name), getattr(torch, name))
    for name in [
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "erfc",
        "erfinv",
        "exp2",
        "log2",
        "log10",
        "trunc",
        "frac",
        "sinc",
        "logit",
        "deg2rad",
        "rad2deg",
        "nan_to_num",
        "sign",
        "abs",
        "positive",
    ]
} | {
    "logit(eps)": (lambda x: E.logit(x, eps=0.1), lambda x: torch.logit(x, eps=0.1)),
    "celu": (E.celu, F.celu),
    "selu": (E.selu, F.selu),
    "relu6": (E.relu6, F.relu6),
    "hardtanh": (E.hardtanh, F.hardtanh),
    "hardswish": (E.hardswish, F.hardswish),
    "hardsigmoid": (E.hardsigmoid, F.hardsigmoid),
    "mish": (E.mish, F.mish),
    "softsign": (E.softsign, F.softsign),
    "logsigmoid": (E.logsigmoid, F.logsigmoid),
    "tanhshrink": (E.tanhshrink, F.tanhshrink),
    "softshrink": (E.softshrink, F.softshrink),
    "hardshrink": (E.hardshrink, F.hardshrink),
    "threshold": (lambda x: E.threshold(x, 0.5, -2.0), lambda x: F.threshold(x, 0.5, -2.0)),
    "relu of a NaN": (lambda x: E.relu(x * float("nan")), lambda x: torch.relu(x * float("nan"))),
    "clamp": (lambda x: E.clamp(x, -1.0, 1.0), lambda x: torch.clamp(x, -1.0, 1.0)),
    "elu": (E.elu, F.elu),
    "leaky_relu": (E.leaky_relu, F.leaky_relu),
    "gelu": (E.gelu, F.gelu),
    "gelu(tanh)": (
        lambda x: E.gelu(x, approximate="tanh"),
        lambda x: F.gelu(x, approximate="tanh"),
    ),
    "silu": (E.silu, F.silu),
    "softplus": (E.softplus, F.softplus),
    "sigmoid": (E.sigmoid, torch.sigmoid),
    "tanh": (E.tanh, torch.tanh),
    "relu": (E.relu, torch.relu),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(MORE_UNARY))
def test_special_values_and_gradients_match_torch(name: str, dtype: str) -> None:
    """Values, grad_fn name and gradient at ±inf, NaN, ±0 and the domain edges: NaN and
    inf exactly where PyTorch has them, and no numpy warning."""
    mine_fn, torch_fn = MORE_UNARY[name]
    x, tx = _pair(SPECIALS, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = mine_fn(x)
        y.backward(E.ones_like(y))
    ty = torch_fn(tx)
    ty.backward(torch.ones_like(ty))
    # rtol 2e-6 / 1e-12 as ulps: the engine's formulas are not always torch's
    tol = {"ulps": 32, "atol": 1e-6} if dtype == "float32" else {"ulps": 4600, "atol": 1e-14}
    value_free, grad_free = _kernel_dependent(name, dtype)
    assert_kernel_close(y, ty, kernel_dependent=value_free, err_msg="value", **tol)
    assert y.dtype == np.dtype(dtype)
    assert (y.grad_fn.name if y.grad_fn else None) == (ty.grad_fn.name() if ty.grad_fn else None)
    assert_kernel_close(x.grad, tx.grad, kernel_dependent=grad_free, err_msg="gradient", **tol)


_NEG_ZERO = np.array([v == 0 and np.signbit(v) for v in SPECIALS])
_INF = np.isinf(SPECIALS)


def _kernel_dependent(name: str, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(value, gradient) positions of SPECIALS whose answer depends on the kernel torch
    picks for the CPU (seen on AVX2 and AVX-512 machines, and ATEN_CPU_CAPABILITY=default):
    logit at -0.0 is -inf or +inf (its vectorized float32 kernel, and the sign of its
    float64 gradient there); float32 gelu at +-inf is inf or NaN (AVX-512), its
    gradient there too."""
    none = np.zeros(len(SPECIALS), bool)
    if name == "logit":
        return _NEG_ZERO, _NEG_ZERO
    if name == "gelu" and dtype == "float32":
        return _INF, _INF
    return none, none


def test_sign_of_nan_is_zero_and_abs_gradient_there_is_zero() -> None:
    x, tx = _pair([np.nan, -2.0, 0.0, 3.0])
    assert E.sign(x).tolist()[0] == 0.0 == torch.sign(tx)[0].item()
    E.abs(x).sum().backward()
    torch.abs(tx).sum().backward()
    assert_values(x.grad, tx.grad)
    assert x.grad.tolist()[0] == 0.0
    y, ty = _pair([np.nan, -2.0, 0.0, 3.0])
    E.l1_loss(y, E.zeros(4)).backward()
    F.l1_loss(ty, torch.zeros(4, dtype=torch.float64)).backward()
    assert_values(y.grad, ty.grad)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_propagate_nan(op: str) -> None:
    a, ta = _pair([np.nan, 1.0, np.nan, -np.inf])
    b, tb = _pair([0.0, np.nan, np.nan, np.inf])
    y, ty = getattr(E, op)(a, b), getattr(torch, op)(ta, tb)
    assert_values(y, ty)
    y.sum().backward()
    ty.sum().backward()
    assert_values(a.grad, ta.grad)
    assert_values(b.grad, tb.grad)


def test_integer_powers() -> None:
    i, ti = E.tensor([3, -4, 1, -1, 2]), torch.tensor([3, -4, 1, -1, 2])
    e, te = E.tensor([-1, 2, -3, -3, 0]), torch.tensor([-1, 2, -3, -3, 0])
    assert (i**e).tolist() == (ti**te).tolist()
    assert (2**e).tolist() == (2**te).tolist()
    for exponent in (-2, -1):
        with pytest.raises(RuntimeError) as theirs:
            ti**exponent
        with pytest.raises(RuntimeError) as mine:
            i**exponent
        assert str(mine.value) == str(theirs.value)
    assert (i**-1.0).dtype == np.float32
    assert_values(i**-1.0, ti**-1.0)


# (engine call, torch call): PyTorch refuses these; the engine refuses them the same way
REFUSALS: dict[str, tuple[Any, Any]] = {
    "bool - bool": (
        lambda: E.tensor([True]) - E.tensor([False]),
        lambda: torch.tensor([True]) - torch.tensor([False]),
    ),
    "bool - 1": (lambda: E.tensor([True]) - 1, lambda: torch.tensor([True]) - 1),
    "1 - bool": (lambda: 1 - E.tensor([True]), lambda: 1 - torch.tensor([True])),
    "-bool": (lambda: -E.tensor([True]), lambda: -torch.tensor([True])),
    "+bool": (lambda: +E.tensor([True]), lambda: +torch.tensor([True])),
    "int ** -2": (lambda: E.tensor([2]) ** -2, lambda: torch.tensor([2]) ** -2),
    "bool ** bool": (
        lambda: E.tensor([True]) ** E.tensor([True]),
        lambda: torch.tensor([True]) ** torch.tensor([True]),
    ),
    "clamp(x, number, tensor)": (
        lambda: E.clamp(E.tensor([1.0]), 0.0, E.tensor([2.0])),
        lambda: torch.clamp(torch.tensor([1.0]), 0.0, torch.tensor([2.0])),
    ),
    "clip(x, tensor, int)": (
        lambda: E.clip(E.tensor([1.0]), E.tensor([0.0]), 2),
        lambda: torch.clip(torch.tensor([1.0]), torch.tensor([0.0]), 2),
    ),
    "abs(bool)": (lambda: E.abs(E.tensor([True])), lambda: torch.abs(torch.tensor([True]))),
    "frac(int)": (lambda: E.frac(E.tensor([1])), lambda: torch.frac(torch.tensor([1]))),
    "float & float": (
        lambda: E.bitwise_and(E.tensor([1.0]), E.tensor([1.0])),
        lambda: torch.bitwise_and(torch.tensor([1.0]), torch.tensor([1.0])),
    ),
    "div rounding_mode": (
        lambda: E.div(E.tensor([1.0]), 2, rounding_mode="round"),
        lambda: torch.div(torch.tensor([1.0]), 2, rounding_mode="round"),
    ),
    "int // 0": (lambda: E.tensor([1]) // 0, lambda: torch.tensor([1]) // 0),
    "int % 0": (lambda: E.tensor([1]) % 0, lambda: torch.tensor([1]) % 0),
    "fmod(int, 0)": (lambda: E.fmod(E.tensor([1]), 0), lambda: torch.fmod(torch.tensor([1]), 0)),
    "bool // bool": (
        lambda: E.tensor([True]) // E.tensor([True]),
        lambda: torch.tensor([True]) // torch.tensor([True]),
    ),
    "hypot(int, int)": (
        lambda: E.hypot(E.tensor([1]), E.tensor([2])),
        lambda: torch.hypot(torch.tensor([1]), torch.tensor([2])),
    ),
    "hardswish(int)": (
        lambda: E.hardswish(E.tensor([1])),
        lambda: F.hardswish(torch.tensor([1])),
    ),
    "mish(int)": (lambda: E.mish(E.tensor([1])), lambda: F.mish(torch.tensor([1]))),
    "celu(int)": (lambda: E.celu(E.tensor([1])), lambda: F.celu(torch.tensor([1]))),
    "softshrink(-1)": (
        lambda: E.softshrink(E.tensor([1.0]), -1.0),
        lambda: F.softshrink(torch.tensor([1.0]), -1.0),
    ),
    "glu of an odd dim": (
        lambda: E.glu(E.tensor([1.0, 2.0, 3.0])),
        lambda: F.glu(torch.tensor([1.0, 2.0, 3.0])),
    ),
    "prelu weights": (
        lambda: E.prelu(E.ones(2, 3), E.ones(2)),
        lambda: F.prelu(torch.ones(2, 3), torch.ones(2)),
    ),
    "lerp dtypes": (
        lambda: E.lerp(E.tensor([1.0]), E.tensor([1.0], dtype="float64"), 0.5),
        lambda: torch.lerp(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), 0.5),
    ),
    "heaviside dtypes": (
        lambda: E.heaviside(E.tensor([1.0]), E.tensor([1])),
        lambda: torch.heaviside(torch.tensor([1.0]), torch.tensor([1])),
    ),
    "int requires grad": (
        lambda: E.tensor([1, 2]).requires_grad_(),
        lambda: torch.tensor([1, 2]).requires_grad_(),
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refusals_match_torch(name: str) -> None:
    mine_fn, torch_fn = REFUSALS[name]
    with pytest.raises(Exception) as theirs:
        torch_fn()
    with pytest.raises(E.EngineError) as mine:
        mine_fn()
    assert isinstance(mine.value, type(theirs.value)), (type(mine.value), type(theirs.value))
    assert str(mine.value) == str(theirs.value)


def test_floor_divide_records_a_node_that_refuses_backward() -> None:
    x, tx = _pair([1.5, -2.5])
    y, ty = x // 2, tx // 2
    assert_values(y, ty)
    assert y.requires_grad and y.grad_fn.name == type(ty.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError) as theirs:
        ty.sum().backward()
    with pytest.raises(E.EngineError) as mine:
        y.sum().backward()
    assert str(mine.value) == str(theirs.value)


OPERATORS = ["&", "|", "^", "//", "%", "+", "*", "**"]


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize(
    ("left", "right"),
    [
        (np.array([5, -3, 12]), np.array([3, 6, -5])),
        (np.array([True, False, True]), np.array([True, True, False])),
        (np.array([5, 3, 12], np.uint8), 3),
        (np.array([7, -3], np.int8), np.array([2, 4], np.uint8)),
        (5, np.array([3, -2, 7])),
    ],
    ids=["int64", "bool", "uint8 and number", "int8 and uint8", "number first"],
)
def test_integer_and_bool_operators_match_torch(op: str, left: Any, right: Any) -> None:
    def wrap(v: Any, lib: Any) -> Any:
        if not isinstance(v, np.ndarray):
            return v
        return E.Tensor(v.copy()) if lib is E else torch.from_numpy(v.copy())

    code = f"a {op} b"
    try:
        want = eval(code, {"a": wrap(left, torch), "b": wrap(right, torch)})  # noqa: S307
    except Exception as exc:
        with pytest.raises(type(exc)):
            eval(code, {"a": wrap(left, E), "b": wrap(right, E)})  # noqa: S307
        return
    got = eval(code, {"a": wrap(left, E), "b": wrap(right, E)})  # noqa: S307
    assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch."))
    np.testing.assert_array_equal(got.data, want.numpy())


@pytest.mark.parametrize("data", [[5, -3, 0], [True, False]], ids=["int64", "bool"])
def test_invert_matches_torch(data: list[Any]) -> None:
    got, want = ~E.tensor(data), ~torch.tensor(data)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("mode", ["trunc", "floor", None])
def test_division_modes_on_signed_operands(mode: str | None) -> None:
    a = np.array([-7.5, -7.0, -0.5, 0.0, 0.5, 7.0, 7.5, np.inf, -np.inf, np.nan])
    b = np.array([2.0, -2.0, 0.0, -0.0, 3.0, 0.0, -np.inf, 2.0, 2.0, 1.0])
    got = E.div(E.tensor(a), E.tensor(b), rounding_mode=mode)
    want = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode)
    np.testing.assert_array_equal(got.data, want.numpy())
    ints = np.array([-7, 7, -7, 7, 0])
    divs = np.array([2, 2, -2, -2, 5])
    got = E.div(E.tensor(ints), E.tensor(divs), rounding_mode=mode)
    want = torch.div(torch.tensor(ints), torch.tensor(divs), rounding_mode=mode)
    assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch."))
    np.testing.assert_array_equal(got.data, want.numpy())


@pytest.mark.parametrize("name", ["remainder", "fmod"])
def test_remainders_on_signed_and_special_operands(name: str) -> None:
    a = np.array([-7.5, 7.5, -7.0, 7.0, 1.0, np.inf, 3.0, -0.0])
    b = np.array([2.0, -2.0, -3.0, 3.0, 0.0, 2.0, np.inf, 1.0])
    got = getattr(E, name)(E.tensor(a), E.tensor(b))
    want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    np.testing.assert_array_equal(got.data, want.numpy())
    got = getattr(E, name)(E.tensor([-7, 7, -7]), 3)
    assert got.tolist() == getattr(torch, name)(torch.tensor([-7, 7, -7]), 3).tolist()


def test_erfinv_is_exact_to_float64_ulps() -> None:
    """Against PyTorch's float64 erfinv, tails included, and erf(erfinv(y)) = y."""
    y = np.concatenate(
        [
            np.linspace(-0.999, 0.999, 2001),
            1 - np.logspace(-16, -1, 60),
            -(1 - np.logspace(-16, -1, 60)),
            np.logspace(-300, -1, 40),
        ]
    )
    got = E.erfinv(E.tensor(y, dtype="float64")).data
    want = torch.erfinv(torch.tensor(y, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=4e-15, atol=0)
    back = E.erf(E.tensor(got, dtype="float64")).data
    np.testing.assert_allclose(back, y, rtol=2e-15, atol=1e-300)  # erf's own few ulps


def test_erfc_keeps_relative_accuracy_in_the_tail() -> None:
    x = np.concatenate([np.linspace(-6, 27, 661), [-np.inf, np.inf, np.nan]])
    got = E.erfc(E.tensor(x, dtype="float64")).data
    want = torch.erfc(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0, equal_nan=True)


BINARY_SPECIALS = {
    "atan2": (E.atan2, torch.atan2),
    "hypot": (E.hypot, torch.hypot),
    "logaddexp": (E.logaddexp, torch.logaddexp),
    "logaddexp2": (E.logaddexp2, torch.logaddexp2),
    "copysign": (E.copysign, torch.copysign),
    "xlogy": (E.xlogy, torch.xlogy),
    "remainder": (E.remainder, torch.remainder),
    "fmod": (E.fmod, torch.fmod),
    "maximum": (E.maximum, torch.maximum),
    "fmax": (E.fmax, torch.fmax),
    "fmin": (E.fmin, torch.fmin),
    "lerp(0.3)": (lambda a, b: E.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3)),
}


@pytest.mark.parametrize("name", sorted(BINARY_SPECIALS))
def test_binary_special_values_match_torch(name: str) -> None:
    """Every pair of special values: values, and gradients where PyTorch's are finite."""
    grid = np.array([-np.inf, -2.0, -0.0, 0.0, 0.5, 3.0, np.inf, np.nan])
    a_data, b_data = (v.reshape(-1) for v in np.meshgrid(grid, grid))
    mine_fn, torch_fn = BINARY_SPECIALS[name]
    a, ta = _pair(a_data)
    b, tb = _pair(b_data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = mine_fn(a, b)
        y.backward(E.ones_like(y))
    ty = torch_fn(ta, tb)
    ty.backward(torch.ones_like(ty))
    assert_values(y, ty)
    assert y.grad_fn.name == ty.grad_fn.name()
    assert_values(a.grad, ta.grad)
    assert_values(b.grad, tb.grad)


@pytest.mark.parametrize("name", ["asin", "erfinv", "trunc", "logit", "xlogy", "lerp", "fmod"])
def test_in_place_variants_match_torch(name: str) -> None:
    extra = {"xlogy": (2.0,), "lerp": (torch.tensor([0.9, 0.1]), 0.25), "fmod": (0.3,)}
    args = extra.get(name, ())
    x, tx = _pair([0.4, 0.7])
    mine_args = tuple(E.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args)
    y, ty = x * 1.0, tx * 1.0
    getattr(y, name + "_")(
        *[E.tensor(np.asarray(a, np.float64)) if isinstance(a, E.Tensor) else a for a in mine_args]
    )
    getattr(ty, name + "_")(*[a.double() if isinstance(a, torch.Tensor) else a for a in args])
    assert y._version == ty._version
    assert_values(y, ty)
    assert y.grad_fn.name == ty.grad_fn.name()
    y.sum().backward()
    ty.sum().backward()
    assert_values(x.grad, tx.grad)


def test_isclose_and_predicates_match_torch() -> None:
    a = np.array([1.0, 1.0 + 1e-6, np.nan, np.inf, -np.inf, 0.0, -0.0])
    b = np.array([1.0, 1.0, np.nan, np.inf, np.inf, 1e-9, 0.0])
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 1e-3}):
        got = E.isclose(E.tensor(a), E.tensor(b), **kwargs)
        want = torch.isclose(torch.tensor(a), torch.tensor(b), **kwargs)
        assert got.tolist() == want.tolist()
    for name in ("isnan", "isinf", "isfinite", "signbit"):
        assert (
            getattr(E, name)(E.tensor(a)).tolist() == getattr(torch, name)(torch.tensor(a)).tolist()
        )


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("prelu", (np.array([[-1.0, 2.0, -3.0], [0.5, -0.5, 1.0]]), np.array([0.1, 0.2, 0.3]))),
        ("glu", (np.array([[-1.0, 2.0, -3.0, 0.5], [0.5, -0.5, 1.0, 2.0]]),)),
        ("softmin", (np.array([[-1.0, 2.0, -3.0], [0.5, -0.5, 1.0]]), 1)),
    ],
)
def test_parametric_activations_second_order_match_torch(name: str, args: tuple[Any, ...]) -> None:
    """Gradients of gradients (create_graph) for the activations with weights or dims."""
    mine = [E.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args]
    theirs = [torch.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args]
    y = getattr(E, name)(*mine)
    ty = getattr(F, name)(*theirs)
    leaves = [t for t in mine if isinstance(t, E.Tensor)]
    tleaves = [t for t in theirs if isinstance(t, torch.Tensor)]
    grads = E.grad((y * y).sum(), leaves, create_graph=True)
    tgrads = torch.autograd.grad((ty * ty).sum(), tleaves, create_graph=True)
    for g, tg in zip(grads, tgrads):
        assert_values(g, tg)
    second = E.grad(sum(g.sum() for g in grads), leaves)
    tsecond = torch.autograd.grad(sum(g.sum() for g in tgrads), tleaves)
    for g, tg in zip(second, tsecond):
        assert_values(g, tg)


HALF_OPS = [
    "relu",
    "sigmoid",
    "tanh",
    "exp",
    "sin",
    "abs",
    "gelu",
    "silu",
    "softplus",
    "leaky_relu",
    "elu",
    "celu",
    "selu",
    "mish",
    "hardswish",
    "hardsigmoid",
    "logsigmoid",
    "softsign",
    "erf",
    "atan",
    "sinh",
    "square",
    "reciprocal",
    "hardtanh",
    "relu6",
]


@pytest.mark.parametrize("name", HALF_OPS)
def test_float16_values_and_gradients_match_torch(name: str) -> None:
    """float16 leaves: the result and the gradient stay float16 and agree with PyTorch's
    (which computes in float32 and rounds, as the engine's float64-then-round does)."""
    data = np.array([-1.5, -0.25, 0.5, 2.0], np.float16)
    mine_fn = getattr(E, name)
    torch_fn = getattr(torch, name, None) or getattr(F, name)
    x = E.Tensor(data.copy(), requires_grad=True)
    tx = torch.from_numpy(data.copy()).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = mine_fn(x)
        y.sum().backward()
    ty = torch_fn(tx)
    ty.sum().backward()
    assert y.dtype == np.float16 and x.grad.dtype == np.float16
    assert_values(y._data.astype(np.float64), ty.detach().double(), rtol=2e-3, atol=2e-3)
    assert_values(x.grad._data.astype(np.float64), tx.grad.double(), rtol=5e-3, atol=5e-3)


def _finite(lo: float, hi: float) -> Any:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


# op -> (elements of input, elements of other) for broadcasting draws
NEW_BINARY = {
    "atan2": ((-3.0, 3.0), (0.25, 3.0)),
    "hypot": ((-3.0, 3.0), (0.25, 3.0)),
    "logaddexp": ((-3.0, 3.0), (-3.0, 3.0)),
    "logaddexp2": ((-3.0, 3.0), (-3.0, 3.0)),
    "copysign": ((0.25, 3.0), (-3.0, 3.0)),
    "xlogy": ((-3.0, 3.0), (0.25, 3.0)),
    "fmax": ((-3.0, 3.0), (-3.0, 3.0)),
    "fmin": ((-3.0, 3.0), (-3.0, 3.0)),
}


@pytest.mark.parametrize("name", sorted(NEW_BINARY))
def test_new_binary_ops_broadcast_like_torch(name: str) -> None:
    """Hypothesis draws broadcastable shape pairs; values and both gradients match."""
    (alo, ahi), (blo, bhi) = NEW_BINARY[name]

    @settings(max_examples=15, deadline=None)
    @given(data=st.data())
    def check(data: Any) -> None:
        shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
        a = data.draw(hnp.arrays(np.float64, shapes.input_shapes[0], elements=_finite(alo, ahi)))
        b = data.draw(hnp.arrays(np.float64, shapes.input_shapes[1], elements=_finite(blo, bhi)))
        x, tx = _pair(a)
        y, ty = _pair(b)
        out, tout = getattr(E, name)(x, y), getattr(torch, name)(tx, ty)
        assert_values(out, tout)
        g = np.linspace(-1.0, 1.0, out._data.size).reshape(out.shape)
        out.backward(E.tensor(g, dtype="float64"))
        tout.backward(torch.tensor(g))
        assert_values(x.grad, tx.grad)
        assert_values(y.grad, ty.grad)

    check()
