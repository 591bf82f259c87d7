"""gradcheck / gradgradcheck: what they accept, what they reject, and how they say it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine
from engine import Function, GradcheckError, Tensor, gradcheck, gradgradcheck
from engine.errors import BadArgumentsError
from engine.gradcheck import FULL_JACOBIAN_MAX


def leaf(rng: np.random.Generator, *shape: int, low: float = 0.5, high: float = 2.0) -> Tensor:
    return Tensor(rng.uniform(low, high, size=shape), requires_grad=True)


class ScaledSquareBackward(Function):
    """x**2 whose VJP is off by ``ctx.scale`` for the *second* input only."""

    name = "MulBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> np.ndarray:
        ctx.save_for_backward(a, b)
        return a.data * b.data

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        a, b = ctx.saved_tensors
        return g * b, g * a * 1.5  # the second is wrong


class DetachedSquareBackward(Function):
    """x**2 whose VJP is right in value but treats x as a constant (wrong second order)."""

    name = "PowBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        return a.data * a.data

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g * (a.detach() * 2.0)


class NoisyExpBackward(Function):
    """exp whose backward is a little different on every call (not reentrant)."""

    name = "ExpBackward0"

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> np.ndarray:
        ctx.save_for_backward(a)
        ctx.calls = 0
        return np.exp(a.data)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        ctx.calls += 1
        return g * engine.exp(a) + ctx.calls * 1e-9


def _raises(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(GradcheckError) as info:
        fn(*args, **kwargs)
    assert info.value.code == "gradcheck_failed"
    return str(info.value)


# -- accepts -------------------------------------------------------------------------------


@pytest.mark.parametrize("fast_mode", [None, False, True])
def test_correct_functions_pass(rng: np.random.Generator, fast_mode: bool | None) -> None:
    x, y = leaf(rng, 2, 3), leaf(rng, 3)
    assert gradcheck(lambda a, b: a * b + a / b, (x, y), fast_mode=fast_mode)
    assert gradcheck(lambda a: engine.log(a).sum(dim=1), x, fast_mode=fast_mode)
    assert gradgradcheck(lambda a, b: (a * a * b).sum(), (x, y), fast_mode=fast_mode)


def test_large_inputs_use_random_directions_and_pass(rng: np.random.Generator) -> None:
    x = leaf(rng, 20, 10)
    assert x.numel() > FULL_JACOBIAN_MAX
    assert gradcheck(lambda a: engine.exp(a) * a, (x,))
    assert gradgradcheck(lambda a: (a * a * a).sum(), (x,))


def test_several_outputs_and_non_differentiable_ones(rng: np.random.Generator) -> None:
    x, y = leaf(rng, 3), leaf(rng, 3)

    def fn(a: Tensor, b: Tensor) -> tuple[Any, ...]:
        return a * b, 7, a > b, a + b * b

    assert gradcheck(fn, (x, y))
    assert gradgradcheck(fn, (x, y))


def test_inputs_that_do_not_require_grad_are_fixed(rng: np.random.Generator) -> None:
    x, c = leaf(rng, 4), Tensor(rng.uniform(size=4))
    seen = []

    def fn(a: Tensor, b: Tensor, k: float) -> Tensor:
        seen.append(b._data.copy())
        return a * b * k

    assert gradcheck(fn, (x, c, 3.0))
    assert all(np.array_equal(s, c.data) for s in seen)


def test_empty_and_zero_dim_inputs(rng: np.random.Generator) -> None:
    assert gradcheck(lambda a: a * a, (leaf(rng, 0, 3),))
    assert gradcheck(lambda a: a * a, (leaf(rng),))
    assert gradgradcheck(lambda a: a * a * a, (leaf(rng),))


def test_no_differentiable_outputs_needs_constant_outputs(rng: np.random.Generator) -> None:
    x = leaf(rng, 3)
    assert gradcheck(lambda a: a > 1.0, (x,))
    message = _raises(gradcheck, lambda a: a.detach() * 2.0, (x,))
    assert message == "Numerical gradient for function expected to be zero"


def test_given_grad_outputs(rng: np.random.Generator) -> None:
    x = leaf(rng, 3)
    g = Tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)
    assert gradgradcheck(lambda a: a * a * a, (x,), (g,))
    assert gradgradcheck(lambda a: a * a * a, (x,), g)


def test_the_inputs_are_left_unchanged(rng: np.random.Generator) -> None:
    x = leaf(rng, 3)
    before = x._data.copy()
    gradcheck(lambda a: a * a, (x,))
    assert np.array_equal(x.data, before) and x.grad is None and x._version == 0


# -- rejects -------------------------------------------------------------------------------


@pytest.mark.parametrize("fast_mode", [False, True])
def test_wrong_vjp_names_output_and_input(rng: np.random.Generator, fast_mode: bool) -> None:
    x, y = leaf(rng, 3), leaf(rng, 3)
    message = _raises(gradcheck, ScaledSquareBackward.apply, (x, y), fast_mode=fast_mode)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 1,\nnumerical:")
    assert "\nanalytical:tensor(" in message


def test_input_index_counts_only_differentiable_inputs(rng: np.random.Generator) -> None:
    const, y, x = Tensor(rng.uniform(size=3)), leaf(rng, 3), leaf(rng, 3)
    message = _raises(
        gradcheck, lambda c, b, a: ScaledSquareBackward.apply(a * c, b), (const, x, y)
    )
    # the wrong gradient flows to `b` = x, the first input that requires grad
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,")


def test_full_mismatch_message_shows_the_jacobians(rng: np.random.Generator) -> None:
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = Tensor(np.array([3.0, 4.0]), requires_grad=True)
    message = _raises(gradcheck, ScaledSquareBackward.apply, (x, y), fast_mode=False)
    assert message == (
        "Jacobian mismatch for output 0 with respect to input 1,\n"
        "numerical:tensor([[1.0000, 0.0000],\n"
        "        [0.0000, 2.0000]], dtype=torch.float64)\n"
        "analytical:tensor([[1.5000, 0.0000],\n"
        "        [0.0000, 3.0000]], dtype=torch.float64)\n"
    )


def test_raise_exception_false_returns_false(rng: np.random.Generator) -> None:
    x, y = leaf(rng, 3), leaf(rng, 3)
    assert gradcheck(ScaledSquareBackward.apply, (x, y), raise_exception=False) is False
    assert gradgradcheck(DetachedSquareBackward.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_rejects_a_wrong_second_derivative(rng: np.random.Generator) -> None:
    x = leaf(rng, 3)
    assert gradcheck(DetachedSquareBackward.apply, (x,))
    message = _raises(gradgradcheck, DetachedSquareBackward.apply, (x,))
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,")


def test_nondeterministic_backward_is_not_reentrant(rng: np.random.Generator) -> None:
    x = leaf(rng, 3)
    message = _raises(gradcheck, NoisyExpBackward.apply, (x,))
    assert message.startswith("Backward is not reentrant")
    # tolerated nondeterminism passes the Jacobians; the noise added to a zero grad_output
    # then fails PyTorch's next check, as in PyTorch
    message = _raises(gradcheck, NoisyExpBackward.apply, (x,), nondet_tol=1e-6)
    assert message == "backward not multiplied by grad_output"


def test_at_least_one_input_must_require_grad() -> None:
    with pytest.raises(BadArgumentsError) as info:
        gradcheck(lambda a: a * 2.0, (Tensor(np.ones(2)),))
    assert str(info.value) == (
        "gradcheck expects at least one input tensor to require gradient, "
        "but none of them have requires_grad=True."
    )


def test_single_precision_inputs_warn() -> None:
    x = Tensor(np.ones(2, dtype=np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        gradcheck(lambda a: a * 2.0, (x,), raise_exception=False)


# -- same verdicts as PyTorch --------------------------------------------------------------


def test_verdicts_match_torch(torch: Any, rng: np.random.Generator) -> None:
    a, b = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.5, 2.0, 3)
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.tensor(b, requires_grad=True)
    cases = [
        (lambda p, q: p * q / (p + q), True),
        (lambda p, q: (p * p * q).sum(), True),
    ]
    for fn, expected in cases:
        assert gradcheck(fn, (x, y)) is expected
        assert torch.autograd.gradcheck(fn, (tx, ty)) is expected
        assert gradgradcheck(fn, (x, y)) is expected
        assert torch.autograd.gradgradcheck(fn, (tx, ty)) is expected
