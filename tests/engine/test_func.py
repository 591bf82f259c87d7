"""``engine.func`` against ``torch.func``: each behaviour is written once against a
namespace ``T`` (torch, or the engine) and run with both; values must agree, and an
error must be raised by both with the same class and message. Finite differences
check what torch cannot (it is the oracle of the values, not of itself)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.func import pytree
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()

pytestmark = pytest.mark.torch


class NS:
    """What a behaviour needs: tensors, ops, ``func`` and ``F`` of one library."""

    def __init__(self, lib: Any, func: Any, F: Any) -> None:
        self.lib, self.func, self.F = lib, func, F

    def t(self, a: Any, dtype: Any = np.float64) -> Any:
        return self.lib.tensor(np.asarray(a, dtype=dtype))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lib, name)


TORCH = NS(torch, torch.func, torch.nn.functional)
ENGINE = NS(E, E.func, E.nn.functional)


def _run(behaviour: Callable[[NS], Any], T: NS) -> tuple[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", behaviour(T)
    except Exception as err:  # noqa: BLE001 - the error is the behaviour under test
        return "error", err


BEHAVIOURS: dict[str, Callable[[NS], Any]] = {}


def behaviour(fn: Callable[[NS], Any]) -> Callable[[NS], Any]:
    BEHAVIOURS[fn.__name__] = fn
    return fn


X = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.5]])
W = np.array([[0.2, -0.1], [0.5, 0.3], [-0.4, 0.6]])


# -- grad and friends ---------------------------------------------------------------
@behaviour
def grad_of_scalar(T: NS) -> Any:
    return T.func.grad(lambda x: (x.sin() * x).sum())(T.t(X))


@behaviour
def grad_argnums_tuple_and_aux(T: NS) -> Any:
    def f(x: Any, w: Any) -> Any:
        y = x @ w
        return (y.tanh() ** 2).mean(), y

    (gx, gw), aux = T.func.grad(f, argnums=(0, 1), has_aux=True)(T.t(X), T.t(W))
    return gx, gw, aux


@behaviour
def grad_and_value_dict_input(T: NS) -> Any:
    params = {"w": T.t(W), "b": T.t([0.1, -0.2])}

    def loss(p: Any, x: Any) -> Any:
        return ((x @ p["w"] + p["b"]).exp()).sum()

    return T.func.grad_and_value(loss)(params, T.t(X))


@behaviour
def grad_of_grad(T: NS) -> Any:
    return T.func.grad(T.func.grad(lambda x: x**3 * x.sin()))(T.t(0.7))


@behaviour
def grad_non_scalar_error(T: NS) -> Any:
    return T.func.grad(lambda x: x * 2)(T.t(X))


@behaviour
def grad_has_aux_not_tuple_error(T: NS) -> Any:
    return T.func.grad(lambda x: x.sum(), has_aux=True)(T.t(X))


@behaviour
def grad_bad_argnum_error(T: NS) -> Any:
    return T.func.grad(lambda x: x.sum(), argnums=3)(T.t(X))


@behaviour
def grad_leaks_nothing(T: NS) -> Any:
    x = T.t(X)
    w = T.t(W).requires_grad_()
    g = T.func.grad(lambda x: (x @ w.detach()).sum())(x)
    return g, x.requires_grad, x.grad is None, w.grad is None, g.requires_grad


@behaviour
def grad_under_no_grad(T: NS) -> Any:
    with T.no_grad():
        g = T.func.grad(lambda x: (x**2).sum())(T.t(X))
    return g, g.requires_grad


@behaviour
def vjp_tuple_output(T: NS) -> Any:
    out, fn = T.func.vjp(lambda x, w: (x @ w, x.exp()), T.t(X), T.t(W))
    return out, fn((T.t(np.ones((2, 2))), T.t(np.full((2, 3), 0.5))))


@behaviour
def vjp_cotangent_structure_error(T: NS) -> Any:
    _, fn = T.func.vjp(lambda x: (x, x), T.t(X))
    return fn(T.t(X))


@behaviour
def jacrev_matches_jacfwd(T: NS) -> Any:
    def f(x: Any) -> Any:
        return (x.sin() * x.sum()).reshape(-1)

    return T.func.jacrev(f)(T.t(X)), T.func.jacfwd(f)(T.t(X))


@behaviour
def jacrev_argnums_has_aux(T: NS) -> Any:
    return T.func.jacrev(lambda x, w: ((x @ w).exp(), w.sum()), argnums=(0, 1), has_aux=True)(
        T.t(X), T.t(W)
    )


@behaviour
def jacrev_of_jacrev(T: NS) -> Any:
    return T.func.jacrev(T.func.jacrev(lambda x: (x**3).prod()))(T.t([0.5, -1.0, 2.0]))


@behaviour
def hessian_of_quadratic_plus(T: NS) -> Any:
    return T.func.hessian(lambda x: (x**2).sum() * x.sin().sum())(T.t([0.4, 1.3, -0.2]))


@behaviour
def jvp_values(T: NS) -> Any:
    return T.func.jvp(lambda x: (x.exp() * 2, x.sum()), (T.t(X),), (T.t(np.ones((2, 3))),))


@behaviour
def jvp_of_grad_is_hvp(T: NS) -> Any:
    def f(x: Any) -> Any:
        return (x.sin() * x**2).sum()

    x, v = T.t([0.3, -0.8, 1.5]), T.t([1.0, 0.5, -2.0])
    return T.func.jvp(T.func.grad(f), (x,), (v,))


@behaviour
def jvp_under_vmap_and_jacfwd_of_jacrev(T: NS) -> Any:
    def f(x: Any) -> Any:
        return (x.sin() * x.sum()).exp()

    tangents = T.t(np.ones((2, 3)) * 0.5)
    per_row = T.func.vmap(lambda x, t: T.func.jvp(f, (x,), (t,)))(T.t(X), tangents)
    hess = T.func.jacfwd(T.func.jacrev(lambda x: f(x).sum()))(T.t(X[0]))
    return per_row, hess


@behaviour
def vmap_inplace_add_captured_error(T: NS) -> Any:
    acc = T.t(np.zeros((2, 3)))
    return T.func.vmap(lambda x: acc.add_(x))(T.t(np.ones((4, 2, 3))))


@behaviour
def jvp_tangent_shape_error(T: NS) -> Any:
    return T.func.jvp(lambda x: x * 2, (T.t(X),), (T.t(np.ones(3)),))


@behaviour
def jvp_primals_not_tuple_error(T: NS) -> Any:
    return T.func.jvp(lambda x: x * 2, T.t(X), T.t(X))


# -- vmap -------------------------------------------------------------------------
@behaviour
def vmap_in_dims_out_dims(T: NS) -> Any:
    def f(x: Any, w: Any, s: float) -> Any:
        return (x @ w).relu() * s, x.sum()

    xs = T.t(np.arange(12.0).reshape(3, 2, 2) / 7 - 0.6)
    return T.func.vmap(f, in_dims=(2, None, None), out_dims=(1, 0))(
        xs.permute(1, 2, 0), T.t(W[:2]), 2.0
    )


@behaviour
def vmap_pytree_in_dims(T: NS) -> Any:
    def f(d: Any, y: Any) -> Any:
        return d["a"] * y + d["b"]

    d = {"a": T.t(np.ones((4, 3)) * 2), "b": T.t([1.0, 2.0, 3.0])}
    return T.func.vmap(f, in_dims=({"a": 0, "b": None}, 0))(d, T.t(np.arange(4.0)))


@behaviour
def vmap_nested(T: NS) -> Any:
    x = T.t(np.arange(24.0).reshape(2, 3, 4) / 10)
    return T.func.vmap(T.func.vmap(lambda r: (r.softmax(0) * r).sum()))(x)


@behaviour
def vmap_chunk_size(T: NS) -> Any:
    x = T.t(np.arange(30.0).reshape(10, 3) / 9)
    return T.func.vmap(lambda r: r.log_softmax(-1).max(), chunk_size=3)(x)


@behaviour
def vmap_jacrev(T: NS) -> Any:
    return T.func.vmap(T.func.jacrev(lambda x: x.sin() * x.sum()))(T.t(X))


@behaviour
def vmap_hessian(T: NS) -> Any:
    return T.func.vmap(T.func.hessian(lambda x: (x**3).sum() * x[0]))(T.t(X))


@behaviour
def vmap_batch_size_error(T: NS) -> Any:
    return T.func.vmap(lambda a, b: a + b)(T.t(np.ones((2, 3))), T.t(np.ones((3, 3))))


@behaviour
def vmap_in_dims_structure_error(T: NS) -> Any:
    return T.func.vmap(lambda a, b: a + b, in_dims=(0, 0, 0))(T.t(X), T.t(X))


@behaviour
def vmap_zero_dim_error(T: NS) -> Any:
    return T.func.vmap(lambda a: a * 2)(T.t(1.0))


@behaviour
def vmap_non_tensor_in_dim_error(T: NS) -> Any:
    return T.func.vmap(lambda a, s: a * s, in_dims=(0, 0))(T.t(X), 2.0)


@behaviour
def vmap_inplace_captured_error(T: NS) -> Any:
    acc = T.t(np.zeros(3))

    def f(x: Any) -> Any:
        acc.add_(x)
        return x

    return T.func.vmap(f)(T.t(X))


@behaviour
def vmap_inplace_on_batched(T: NS) -> Any:
    def f(x: Any) -> Any:
        y = x.clone()
        y.mul_(2)
        return y

    return T.func.vmap(f)(T.t(X))


@behaviour
def vmap_randomness_error(T: NS) -> Any:
    return T.func.vmap(lambda x: x + T.rand(3))(T.t(X))


@behaviour
def vmap_randomness_different_shapes(T: NS) -> Any:
    out = T.func.vmap(lambda x: x * T.rand_like(x), randomness="different")(T.t(np.ones((5, 3))))
    same = T.func.vmap(lambda x: x * T.rand_like(x), randomness="same")(T.t(np.ones((5, 3))))
    return tuple(out.shape), bool((same[0] == same[4]).all()), bool((out[0] != out[4]).any())


@behaviour
def vmap_item_error(T: NS) -> Any:
    return T.func.vmap(lambda x: x.sum().item())(T.t(X))


def _mlp_params(T: NS) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    return {
        "w1": T.t(rng.normal(size=(5, 4)) * 0.5),
        "b1": T.t(rng.normal(size=5) * 0.1),
        "w2": T.t(rng.normal(size=(3, 5)) * 0.5),
        "b2": T.t(rng.normal(size=3) * 0.1),
    }


@behaviour
def per_sample_grads_mlp(T: NS) -> Any:
    rng = np.random.default_rng(4)
    x, y = T.t(rng.normal(size=(6, 4))), T.t(rng.integers(0, 3, size=6), np.int64)

    def loss(p: Any, xi: Any, yi: Any) -> Any:
        h = T.F.gelu(T.F.linear(xi, p["w1"], p["b1"]))
        logits = T.F.linear(h, p["w2"], p["b2"])
        return T.F.cross_entropy(logits.unsqueeze(0), yi.unsqueeze(0))

    return T.func.vmap(T.func.grad(loss), in_dims=(None, 0, 0))(_mlp_params(T), x, y)


@behaviour
def per_sample_grads_cnn(T: NS) -> Any:
    rng = np.random.default_rng(5)
    p = {
        "w": T.t(rng.normal(size=(4, 2, 3, 3)) * 0.3),
        "b": T.t(rng.normal(size=4) * 0.1),
        "v": T.t(rng.normal(size=(3, 36)) * 0.3),
    }
    x, y = T.t(rng.normal(size=(5, 2, 6, 6))), T.t(rng.integers(0, 3, size=5), np.int64)

    def loss(p: Any, xi: Any, yi: Any) -> Any:
        h = T.F.conv2d(xi.unsqueeze(0), p["w"], p["b"], padding=1)
        h = T.F.avg_pool2d(T.F.max_pool2d(T.F.relu(h), 2), 1)
        h = T.F.group_norm(h, 2)
        logits = T.F.linear(h.flatten(1), p["v"])
        return T.F.nll_loss(T.F.log_softmax(logits, -1), yi.unsqueeze(0))

    return T.func.vmap(T.func.grad(loss), in_dims=(None, 0, 0))(p, x, y)


@behaviour
def vmap_views_and_indexing(T: NS) -> Any:
    def f(x: Any, idx: Any) -> Any:
        y = x.reshape(2, 3).transpose(0, 1).flatten().unsqueeze(0).expand(2, 6)
        z = y.permute(1, 0)[1:4].squeeze().gather(1, idx)
        w = T.cat([z, z.index_select(0, idx[:, 0])], 1)
        return T.stack([w.sum(1), w.amax(1, keepdim=True).squeeze(1)], 0).mean(-1)

    xs = T.t(np.arange(24.0).reshape(4, 6) / 11)
    idx = T.t([[1], [0], [1]], np.int64)
    return T.func.vmap(f, in_dims=(0, None))(xs, idx)


@behaviour
def vmap_norms_and_losses(T: NS) -> Any:
    rng = np.random.default_rng(6)
    x = T.t(rng.normal(size=(3, 4, 2, 5)))
    t = T.t(rng.normal(size=(3, 4, 2, 5)))

    def f(a: Any, b: Any) -> Any:
        ln = T.F.layer_norm(a, (5,))
        bn = T.F.batch_norm(a.transpose(0, 1), None, None, training=True)
        return (
            T.F.mse_loss(ln, b),
            T.F.smooth_l1_loss(bn.transpose(0, 1), b, reduction="sum"),
            T.F.binary_cross_entropy_with_logits(a, b.sigmoid()),
        )

    return T.func.vmap(f)(x, t)


@behaviour
def vmap_matmul_shapes(T: NS) -> Any:
    rng = np.random.default_rng(7)
    a, b = T.t(rng.normal(size=(3, 4))), T.t(rng.normal(size=(3, 4, 2)))
    m = T.t(rng.normal(size=(5, 4)))
    return (
        T.func.vmap(T.matmul)(a, b),
        T.func.vmap(T.dot)(a, a),
        T.func.vmap(lambda v: m @ v)(a),
        T.func.vmap(lambda v: v @ b[0])(a),
        T.func.vmap(lambda q: T.mm(m, q))(b),
        T.func.vmap(lambda q: T.addmm(T.t(np.ones(2)), m, q))(b),
    )


@behaviour
def grad_of_vmap(T: NS) -> Any:
    return T.func.grad(lambda w: T.func.vmap(lambda x: (x @ w).sin().sum())(T.t(X)).sum())(T.t(W))


def _cmp(name: str) -> None:
    """The behaviour on torch and on the engine: the same error, or the same pytree of
    results through the oracle."""
    fn = BEHAVIOURS[name]
    kind_t, want = _run(fn, TORCH)
    kind_e, got = _run(fn, ENGINE)
    if kind_t == "error" or kind_e == "error":
        assert_values(got, want)
        return
    (fa, sa), (fb, sb) = pytree.flatten(got), pytree.flatten(want)
    assert str(sa) == str(sb), (sa, sb)
    assert_values(fa, fb, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(BEHAVIOURS))
def test_same_as_torch(name: str) -> None:
    _cmp(name)


# -- beyond comparison ------------------------------------------------------------
FAMILIES = {
    "elementwise": lambda T, x: (x.sin() * 2 + x.exp().clamp(max=3)).where(x > 0, x.tanh()),
    "reductions": lambda T, x: (
        x.sum(0)
        + x.mean(-1, keepdim=True).squeeze(-1)[0]
        + x.amax()
        + x.max(1)[0].sum()
        + x.var(1).sum()
    ),
    "views": lambda T, x: (
        x.reshape(6).view(3, 2).transpose(0, 1).flatten().unsqueeze(1).expand(6, 2).permute(1, 0)[0]
    ),
    "indexing": lambda T, x: (
        x[:, 1]
        + x.index_select(1, T.tensor([0, 2])).sum(1)
        + x.gather(1, T.tensor([[0], [1]])).squeeze(1)
    ),
    "softmax": lambda T, x: T.F.softmax(x, -1) + T.F.log_softmax(x, 0),
    "cat_stack": lambda T, x: T.cat([x, x], 0).sum(0) + T.stack([x, x], 1).sum((0, 1)),
    "matmul": lambda T, x: T.F.linear(x, T.ones(4, 3)) @ T.ones(4) + T.mm(x, T.ones(3, 2)).sum(1),
    "conv_pool": lambda T, x: T.F.adaptive_avg_pool2d(
        T.F.max_pool2d(T.F.conv2d(x.reshape(1, 1, 2, 3), T.ones(2, 1, 2, 2), padding=1), 2), 1
    ).flatten(),
    "norms": lambda T, x: (
        T.F.layer_norm(x, (3,)).sum() + T.F.group_norm(x.reshape(1, 2, 3), 1).sum()
    ),
    "losses": lambda T, x: T.F.cross_entropy(x, T.tensor([0, 2])) + T.F.mse_loss(x, x.detach() * 0),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_vmap_batches_family_without_fallback(family: str) -> None:
    """The op families the examples use run batched: no per-sample loop warning, and
    the same values as a Python loop over samples."""
    f = FAMILIES[family]
    xs = E.tensor(np.random.default_rng(8).normal(size=(4, 2, 3)).astype(np.float32))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = E.func.vmap(lambda x: f(ENGINE, x))(xs)
    loop = [m for m in seen if "batching rule" in str(m.message)]
    assert not loop, [str(m.message) for m in loop]
    ref = np.stack([f(ENGINE, xs[i]).numpy() for i in range(4)])
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_fallback_is_correct_and_named() -> None:
    xs = E.tensor(np.random.default_rng(9).normal(size=(3, 4)))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = E.func.vmap(lambda x: E.cumsum(x.sort()[0], 0))(xs)
    assert any("sort" in str(m.message) for m in seen)
    np.testing.assert_allclose(out.numpy(), np.cumsum(np.sort(xs.numpy(), 1), 1))


def test_jacobians_match_finite_differences() -> None:
    def f(x: Any) -> Any:
        return (x.sin() * x.sum()).tanh()

    x = np.array([0.3, -0.7, 1.1])
    jac = E.func.jacrev(f)(E.tensor(x)).numpy()
    eps = 1e-6
    fd = np.stack(
        [
            (f(E.tensor(x + eps * e)).numpy() - f(E.tensor(x - eps * e)).numpy()) / (2 * eps)
            for e in np.eye(3)
        ],
        1,
    )
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)
    hess = E.func.hessian(lambda x: f(x).sum())(E.tensor(x)).numpy()
    g = E.func.grad(lambda x: f(x).sum())
    fd2 = np.stack(
        [
            (g(E.tensor(x + eps * e)).numpy() - g(E.tensor(x - eps * e)).numpy()) / (2 * eps)
            for e in np.eye(3)
        ],
        1,
    )
    np.testing.assert_allclose(hess, fd2, rtol=1e-5, atol=1e-7)


def test_per_sample_grads_sum_to_batch_grad() -> None:
    """Per-sample gradients of a summed loss add up to the ordinary batch gradient."""
    p = _mlp_params(ENGINE)
    rng = np.random.default_rng(10)
    x, y = E.tensor(rng.normal(size=(7, 4))), E.tensor(rng.integers(0, 3, size=7))

    def loss(p: Any, x: Any, y: Any) -> Any:
        h = E.nn.functional.linear(x, p["w1"], p["b1"]).relu()
        return E.nn.functional.cross_entropy(
            E.nn.functional.linear(h, p["w2"], p["b2"]), y, reduction="sum"
        )

    per = E.func.vmap(E.func.grad(loss), in_dims=(None, 0, 0))(p, x.unsqueeze(1), y.unsqueeze(1))
    whole = E.func.grad(loss)(p, x, y)
    for k in p:
        np.testing.assert_allclose(per[k].numpy().sum(0), whole[k].numpy(), rtol=1e-10)


def test_message_of_non_scalar_grad() -> None:
    with pytest.raises(RuntimeError, match=re.escape("got tensor with 2 dims")):
        E.func.grad(lambda x: x)(E.ones(2, 2))
