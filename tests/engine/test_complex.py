"""Complex tensors: PyTorch's promotion with complex dtypes, gradients of a real loss
through complex intermediates (torch's conjugate convention), and the refusal to record
a complex result through an op whose backward is written for reals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine
from engine import Function, Tensor, dtypes
from engine.errors import NotImplementedBackward

NAMES = ["float16", "float32", "float64", "int64", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", ["complex64", "complex128"])
def test_promotion_with_complex_matches_torch(a: str, b: str, torch: Any) -> None:
    mine = dtypes.promote(dtypes.to_dtype(a), dtypes.to_dtype(b))
    assert mine is not None and mine.name == str(
        torch.promote_types(getattr(torch, a), getattr(torch, b))
    ).removeprefix("torch.")


def test_python_complex_with_a_float_tensor_matches_torch(torch: Any) -> None:
    for dt in ("float32", "float64"):
        mine = dtypes.result_type(engine.ones(2, dtype=dt), 1j)
        theirs = (torch.ones(2, dtype=getattr(torch, dt)) + 1j).dtype
        assert mine.name == str(theirs).removeprefix("torch.")


def test_real_loss_through_complex_intermediates_matches_torch(torch: Any) -> None:
    x = np.random.default_rng(0).standard_normal((3, 8))
    ex = engine.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    e = engine.fft.irfft(engine.fft.rfft(ex, norm="ortho") + engine.fft.rfft(ex), n=8)
    t = torch.fft.irfft(torch.fft.rfft(tx, norm="ortho") + torch.fft.rfft(tx), n=8)
    w = np.random.default_rng(1).standard_normal(e.shape)
    engine.backward(e, engine.tensor(w))
    t.backward(torch.tensor(w))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_complex_cotangent_reaches_a_real_leaf_as_torch(torch: Any) -> None:
    x = np.linspace(-1.0, 1.0, 6)
    g = np.arange(6) + 1j * np.arange(6)[::-1]
    ex, tx = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    engine.backward(ex.cdouble(), engine.tensor(g))
    tx.cdouble().backward(torch.tensor(g))
    assert ex.grad.dtype == dtypes.float64
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


def test_a_complex_result_of_a_real_only_backward_is_refused() -> None:
    z = engine.fft.fft(engine.tensor(np.ones(4), requires_grad=True))
    with pytest.raises(NotImplementedBackward, match="not implemented for complex"):
        z**2
    with engine.no_grad():  # nothing recorded: the values are numpy's
        np.testing.assert_allclose((z**2).numpy(), z.detach().numpy() ** 2)


class _RealOnlyModulus(Function):
    """``|z|`` with a backward written for reals (``g * z``), not marked complex_ok."""

    name = "NormBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        return np.abs(a._data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g * a


def test_a_real_only_backward_reaching_a_complex_input_is_refused() -> None:
    """A real result of a complex leaf records, but a backward written for reals
    refuses to reach the complex input instead of giving a wrong gradient."""
    z = engine.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    loss = _RealOnlyModulus.apply(z).sum()
    with pytest.raises(NotImplementedBackward, match="derivative of Norm"):
        loss.backward()
    assert z.grad is None


def test_complex_gradient_dtype_must_match_the_output() -> None:
    z = engine.fft.fft(engine.tensor(np.ones(4), requires_grad=True))
    with pytest.raises(engine.EngineError, match="both grad_output and output"):
        engine.backward(z, engine.tensor(np.ones(4)))


_COMPLEX_VALUES = np.array([1 + 2j, -0.5 + 0.1j, 3 - 1j], np.complex64)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, t: m.sum(t),
        lambda m, t: m.prod(t),
        lambda m, t: m.cumsum(t, 0),
        lambda m, t: m.cumprod(t, 0),
        lambda m, t: m.reciprocal(t),
        lambda m, t: m.trapezoid(t),
    ],
    ids=["sum", "prod", "cumsum", "cumprod", "reciprocal", "trapezoid"],
)
def test_complex_values_of_ops_that_keep_them_match_torch(call: Any, torch: Any) -> None:
    """These ops compute complex inputs in their own dtype (a cast to int64 or float
    dropped the imaginary part silently)."""
    ours = call(engine, engine.tensor(_COMPLEX_VALUES))
    theirs = call(torch, torch.tensor(_COMPLEX_VALUES))
    assert ours.dtype == np.complex64
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)


@pytest.mark.parametrize("name", ["exp", "log", "sin", "sqrt", "sigmoid", "rsqrt", "erf"])
def test_unary_functions_refuse_complex_rather_than_drop_the_imaginary_part(name: str) -> None:
    with pytest.raises(RuntimeError, match="not implemented for 'ComplexFloat'"):
        getattr(engine, name)(engine.tensor(_COMPLEX_VALUES))
