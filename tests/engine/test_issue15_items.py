"""Issue 15's itemized differences from PyTorch, each compared with torch 2.13 (the
``torch`` fixture): the op_db silent differences (kthvalue ties, logcumsumexp's float32
gradient, scatter_reduce's integer identities, the Bessel functions, prelu) and the
"Why" list (take_along_dim, attention, polygamma, singular log-determinants, ...)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import EngineError
from tests.engine.torch_oracle import assert_values, to_numpy

F = E.nn.functional


def _both(torch: Any, data: Any, requires_grad: bool = False) -> tuple[Any, Any]:
    x = np.asarray(data)
    return (
        E.tensor(x.copy(), requires_grad=requires_grad),
        torch.tensor(x.copy(), requires_grad=requires_grad),
    )


# -- op_db silent differences ---------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_kthvalue_ties_pick_torchs_index(torch: Any, rng: np.random.Generator, dim: int) -> None:
    """Among equal k-th values the index is the one aten's quickselect leaves at k."""
    for trial in range(60):
        x = rng.integers(-3, 3, (5, 7)).astype(np.float64)
        if trial % 3 == 0:
            x[rng.random(x.shape) < 0.2] = np.nan
        k = int(rng.integers(1, x.shape[dim] + 1))
        e, t = _both(torch, x)
        ev, tv = E.kthvalue(e, k, dim), torch.kthvalue(t, k, dim)
        assert_values(ev.values, tv.values)
        np.testing.assert_array_equal(to_numpy(ev.indices), to_numpy(tv.indices))
    e, t = _both(torch, np.array([[-8, 6, 9, 0, 0], [5, 5, 7, 6, 5]]))
    np.testing.assert_array_equal(
        to_numpy(E.kthvalue(e, 2, 1).indices), to_numpy(torch.kthvalue(t, 2, 1).indices)
    )


def test_logcumsumexp_float32_gradient(torch: Any, rng: np.random.Generator) -> None:
    """torch accumulates float32 in double; the backward's cancellation depends on it."""
    x = rng.standard_normal((5, 5, 5)).astype(np.float32) * 3
    g = rng.standard_normal((5, 5, 5)).astype(np.float32)
    for dim in (0, 1, 2):
        e, t = _both(torch, x, requires_grad=True)
        E.logcumsumexp(e, dim).backward(E.tensor(g))
        torch.logcumsumexp(t, dim).backward(torch.tensor(g))
        assert_values(e.grad, t.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("reduce", "dtype"),
    [
        (r, d)
        for r in ("prod", "amin", "amax", "mean", "sum")
        for d in (np.int64, np.int32, np.bool_, np.float64)
        if not (d is np.bool_ and r in ("mean", "sum"))  # torch refuses those
    ],
)
def test_scatter_reduce_without_self_starts_from_the_identity(
    torch: Any, rng: np.random.Generator, reduce: str, dtype: Any
) -> None:
    x = rng.integers(-5, 6, (10, 5)).astype(dtype)
    src = rng.integers(-5, 6, (5, 5)).astype(dtype)
    index = rng.integers(0, 10, (5, 5))
    for include_self in (True, False):
        e = E.scatter_reduce(
            E.tensor(x), 0, E.tensor(index), E.tensor(src), reduce, include_self=include_self
        )
        t = torch.scatter_reduce(
            torch.tensor(x),
            0,
            torch.tensor(index),
            torch.tensor(src),
            reduce,
            include_self=include_self,
        )
        np.testing.assert_array_equal(to_numpy(e), to_numpy(t))


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"])
def test_bessel_is_atens_formula(torch: Any, name: str) -> None:
    """aten's Cephes variant (no implicit leading 1 in the denominators) differs from
    scipy by up to ~1e-3 relative near the zeros; we follow aten to a few ulp."""
    x = np.concatenate(
        [np.linspace(-30, 30, 4001), [0.0, -0.0, 1e-6, 5.0, np.inf, -np.inf, np.nan, 1e300]]
    )
    e = getattr(E.special, name)(E.tensor(x))
    t = getattr(torch.special, name)(torch.tensor(x))
    assert_values(e, t, rtol=1e-11, atol=1e-300)
    x32 = x[~(np.abs(x) > 1e30)].astype(np.float32)
    e32 = getattr(E.special, name)(E.tensor(x32))
    t32 = getattr(torch.special, name)(torch.tensor(x32))
    assert_values(e32, t32, rtol=2e-4, atol=1e-6)


@pytest.mark.parametrize(("rx", "rw"), [(True, False), (False, True), (True, True)])
def test_prelu_create_graph_gradients_require_grad(torch: Any, rx: bool, rw: bool) -> None:
    x0 = np.array([[[-1.0, 2.0], [0.5, -3.0], [1.5, -0.2]]])
    w0 = np.array([0.1, 0.2, 0.3])
    got = []
    for lib in (E, torch):
        x, w = lib.tensor(x0, requires_grad=rx), lib.tensor(w0, requires_grad=rw)
        y = lib.nn.functional.prelu(x, w)
        ins = [t for t in (x, w) if t.requires_grad]
        got.append(lib.autograd.grad(y.sum(), ins, create_graph=True))
    for e, t in zip(*got):
        assert e.requires_grad == t.requires_grad
        assert_values(e, t)


def test_prelu_errors_are_torchs(torch: Any) -> None:
    cases = [
        (np.array(1.0), np.array([0.1, 0.2]), "Not allow zero-dim input tensor."),
        (np.ones((2, 3)), np.ones((1, 3)), "Expected `weight` to be a scalar or 1D tensor"),
    ]
    for x, w, message in cases:
        with pytest.raises(RuntimeError, match=message):
            torch.nn.functional.prelu(torch.tensor(x), torch.tensor(w))
        with pytest.raises(EngineError, match=message):
            F.prelu(E.tensor(x), E.tensor(w))


# -- the "Why" list ------------------------------------------------------------------------


def test_take_along_dim_wraps_indices_along_dim(torch: Any) -> None:
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[-1], [-9], [100]])
    e, t = _both(torch, a)
    assert_values(
        E.take_along_dim(e, E.tensor(idx), 1), torch.take_along_dim(t, torch.tensor(idx), 1)
    )
    with pytest.raises(RuntimeError, match="should be Long but got Int"):
        torch.take_along_dim(t, torch.tensor([[1]], dtype=torch.int32), 1)
    with pytest.raises(EngineError, match="should be Long but got Int"):
        E.take_along_dim(e, E.tensor(np.array([[1]], dtype=np.int32)), 1)


def test_gather_takes_an_int32_index(torch: Any) -> None:
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 3], [2, 1], [1, 1]], dtype=np.int32)
    e, t = _both(torch, a)
    assert_values(E.gather(e, 1, E.tensor(idx)), torch.gather(t, 1, torch.tensor(idx)))


def test_sdpa_nan_spoils_its_row_as_in_torch(torch: Any, rng: np.random.Generator) -> None:
    x = rng.random((2, 3, 4))
    x[0, 0, 0] = np.nan
    e, t = _both(torch, x)
    got = F.scaled_dot_product_attention(e, e, e)
    want = torch.nn.functional.scaled_dot_product_attention(t, t, t)
    assert_values(got, want, rtol=1e-10)
    assert np.isnan(to_numpy(got)[0]).all()


@pytest.mark.parametrize("v_heads", [2, 1])
@pytest.mark.parametrize("ndim", [3, 4])
def test_sdpa_enable_gqa(torch: Any, rng: np.random.Generator, v_heads: int, ndim: int) -> None:
    q0, k0, v0 = rng.random((1, 4, 3, 2)), rng.random((1, 2, 3, 2)), rng.random((1, v_heads, 3, 2))
    if ndim == 3:
        q0, k0, v0 = q0[0], k0[0], v0[0]
    out = []
    for lib in (E, torch):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in (q0, k0, v0))
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        y.sum().backward()
        out.append((y, q.grad, k.grad, v.grad))
    for a, b in zip(*out):
        assert_values(a, b, rtol=1e-10)
    with pytest.raises(EngineError, match="Number of heads in key and value must divide"):
        F.scaled_dot_product_attention(
            E.tensor(q0[..., :3, :, :]), E.tensor(k0), E.tensor(k0), enable_gqa=True
        )


def test_sdpa_dropout_draws_torchs_mask(torch: Any, rng: np.random.Generator) -> None:
    q0 = rng.random((1, 4, 3, 2))
    for p in (0.4, 1.0):
        out = []
        for lib in (E, torch):
            lib.manual_seed(3)
            q = lib.tensor(q0, requires_grad=True)
            y = lib.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=p)
            y.sum().backward()
            out.append((y, q.grad))
        for a, b in zip(*out):
            assert_values(a, b, rtol=1e-10, atol=1e-14)


def test_polygamma_1_is_atens_trigamma(torch: Any) -> None:
    x = np.concatenate([np.linspace(-10.3, 20, 3001), [0.0, -1.0, -2.0, 1e-300, np.inf]])
    assert_values(E.polygamma(1, E.tensor(x)), torch.polygamma(1, torch.tensor(x)), rtol=1e-14)


def test_logdet_backward_at_a_singular_matrix(torch: Any) -> None:
    """torch solves with the forward's LU: the zero pivot gives inf/NaN, no error; under
    create_graph it calls linalg.solve, which refuses (so do we)."""
    e, t = _both(torch, np.array([[1.0, 2.0], [2.0, 4.0]]), requires_grad=True)
    E.logdet(e).backward()
    torch.logdet(t).backward()
    assert_values(e.grad, t.grad)
    with pytest.raises(EngineError):
        E.autograd.grad(E.logdet(e), [e], create_graph=True)


def test_det_of_an_empty_matrix_under_create_graph(torch: Any) -> None:
    for shape in ((0, 0), (2, 0, 0)):
        e, t = _both(torch, np.zeros(shape), requires_grad=True)
        (ge,) = E.autograd.grad(E.linalg.det(e).sum(), [e], create_graph=True)
        (gt,) = torch.autograd.grad(torch.linalg.det(t).sum(), [t], create_graph=True)
        assert ge.shape == tuple(gt.shape) and ge.requires_grad == gt.requires_grad


def test_batch_norm_below_two_dims_is_torchs_index_error(torch: Any) -> None:
    for x, message in (
        (np.array([1.0, 2.0, 3.0]), "Dimension out of range"),
        (np.array(1.0), "tuple index"),
    ):
        with pytest.raises(IndexError, match=message):
            torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True)
        with pytest.raises(IndexError, match=message):
            F.batch_norm(E.tensor(x), None, None, training=True)


def test_already_right_items_stay_right(torch: Any, rng: np.random.Generator) -> None:
    """Items of the list that were right when checked: pinned here so they stay so."""
    # group_norm with one value per group and on an empty batch
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.group_norm(E.tensor(rng.random((1, 4, 1))), 4)
    assert F.group_norm(E.tensor(np.zeros((0, 2))), 1).shape == (0, 2)
    # erfc, erfinv, masked_scatter, topk(k=0) on 0-d inputs
    z = np.array(0.3)
    e, t = _both(torch, z)
    assert_values(E.erfc(e), torch.erfc(t))
    assert_values(E.erfinv(e), torch.erfinv(t))
    mask = np.array(True)
    assert_values(
        E.masked_scatter(e, E.tensor(mask), E.tensor(np.array([5.0]))),
        torch.masked_scatter(t, torch.tensor(mask), torch.tensor([5.0], dtype=torch.float64)),
    )
    assert [r.shape for r in E.topk(e, 0)] == [tuple(r.shape) for r in torch.topk(t, 0)]
    # diff(n=0) copies, and with prepend/append returns the input unchanged
    x = E.ones(3)
    assert not np.shares_memory(to_numpy(E.diff(x, n=0)), x.numpy())
    assert E.diff(x, n=0, prepend=E.zeros(1)).shape == (3,)
    # Tensor.to(dtype, non_blocking, copy)
    assert E.tensor(z).to(E.float32, False, True).dtype == np.float32
    # huber_loss where input - target is infinite; var_mean's mean with an infinite var
    e, t = _both(torch, np.array([np.inf, 1.0, -np.inf]), requires_grad=True)
    F.huber_loss(e, E.zeros(3, dtype=E.float64)).backward()
    torch.nn.functional.huber_loss(t, torch.zeros(3, dtype=torch.float64)).backward()
    assert_values(e.grad, t.grad)
    e, t = _both(torch, np.array([1.0, np.inf, 2.0]), requires_grad=True)
    E.var_mean(e)[1].backward()
    torch.var_mean(t)[1].backward()
    assert_values(e.grad, t.grad)
    # solve and cdist(p=0) with NaN
    a = np.array([[1.0, np.nan], [0.0, 1.0]])
    assert_values(
        E.linalg.solve(E.tensor(a), E.tensor(np.array([1.0, 2.0]))),
        torch.linalg.solve(torch.tensor(a), torch.tensor([1.0, 2.0], dtype=torch.float64)),
    )
    u, v = np.array([[1.0, np.nan]]), np.array([[1.0, 2.0], [3.0, 4.0]])
    assert_values(
        E.cdist(E.tensor(u), E.tensor(v), p=0),
        torch.cdist(torch.tensor(u), torch.tensor(v), p=0),
    )


def test_inf_stays_local_in_pools_and_bilinear(torch: Any) -> None:
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = np.inf
    e, t = _both(torch, x)
    tf = torch.nn.functional
    assert_values(F.adaptive_avg_pool2d(e, 3), tf.adaptive_avg_pool2d(t, 3))
    assert_values(F.adaptive_max_pool2d(e, 3), tf.adaptive_max_pool2d(t, 3))
    for size in ((6, 6), (3, 3)):
        assert_values(
            F.interpolate(e, size=size, mode="bilinear"),
            tf.interpolate(t, size=size, mode="bilinear"),
        )


def test_random_fills_in_a_graph_reset_history(torch: Any) -> None:
    """uniform_/normal_/bernoulli_ overwrite: no gradient flows through the old values,
    and on a view the base is rebased (CopySlices)."""
    for fn, args in (("uniform_", ()), ("normal_", ()), ("bernoulli_", (0.5,))):
        grads = []
        for lib in (E, torch):
            x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
            y = x * 3
            getattr(y[1:], fn)(*args)
            y.sum().backward()
            grads.append(x.grad)
        assert_values(*grads)


def test_instance_norm_bumps_running_stats_versions() -> None:
    rm, rv = E.zeros(2, dtype=E.float64), E.ones(2, dtype=E.float64)
    before = (rm._version, rv._version)
    F.instance_norm(
        E.tensor(np.random.default_rng(0).random((3, 2, 4))), rm, rv, use_input_stats=True
    )
    assert (rm._version, rv._version) == (before[0] + 1, before[1] + 1)


def test_create_graph_gradients_of_piecewise_linear_ops_require_grad(torch: Any) -> None:
    rng = np.random.default_rng(0)
    x0, w0 = rng.random((1, 2, 5, 5)) - 0.5, rng.random((3, 2, 3, 3))
    for name in ("hardsigmoid", "relu", "conv2d"):
        flags = []
        for lib in (E, torch):
            x, w = lib.tensor(x0, requires_grad=True), lib.tensor(w0, requires_grad=True)
            f = lib.nn.functional
            y = f.conv2d(x, w) if name == "conv2d" else getattr(f, name)(x)
            gs = lib.autograd.grad(y.sum(), [x, w], create_graph=True, allow_unused=True)
            flags.append([None if g is None else g.requires_grad for g in gs])
        assert flags[0] == flags[1], name


def test_slogdet_sign_alone_leaves_grad_none() -> None:
    a = E.tensor(np.eye(3) * 2, requires_grad=True)
    sign, _ = E.linalg.slogdet(a)
    sign.sum().backward()
    assert a.grad is None


def test_what_nodes_save_decides_like_torch(torch: Any) -> None:
    """A second backward or an in-place write after the forward fails exactly where
    torch's fails: addmv/addcdiv/einsum("ii") save only what torch saves, adaptive
    average pooling is checked like torch."""

    def outcome(lib: Any, build: Any, write: str | None) -> str:
        rng = np.random.default_rng(1)
        a, m, v = (
            lib.tensor(rng.random(s), dtype=lib.float64, requires_grad=r)
            for s, r in (((3,), True), ((3, 3), False), ((3,), False))
        )
        a2, m2, v2 = a * 1, m * 1, v * 1
        y = build(lib, a2, m2, v2).sum()
        if write is not None:
            {"a": a2, "m": m2, "v": v2}[write].add_(1)
        try:
            y.backward(retain_graph=write is not None)
            if write is None:
                y.backward()
        except Exception:
            return "raises"
        return "ok"

    builds = {
        "addmv": lambda lib, a, m, v: lib.addmv(a, m, v),
        "addcdiv": lambda lib, a, m, v: lib.addcdiv(a, v, m[0] + 2),
        "einsum": lambda lib, a, m, v: lib.einsum("ii", m + a),
        "adaptive_avg": lambda lib, a, m, v: lib.nn.functional.adaptive_avg_pool1d(
            (m + a).unsqueeze(0), 2
        ),
    }
    for name, build in builds.items():
        for write in (None, "a", "m", "v"):
            got = outcome(E, build, write)
            assert got == outcome(torch, build, write), (name, write, got)


def test_ravel_views_exactly_where_torch_does(torch: Any) -> None:
    """torch's ravel is contiguous().view(-1): a view where torch calls the input
    contiguous (size-1 dims' strides do not count), a copy otherwise."""
    makers = [
        lambda x: x.reshape(12, 1).t(),
        lambda x: x.reshape(3, 1, 4).transpose(0, 1),
        lambda x: x.reshape(2, 6)[:1],
        lambda x: x.reshape(4, 3)[::2, :1],
        lambda x: x.reshape(4, 3).t(),
    ]
    for make in makers:
        sums = []
        for lib in (E, torch):
            x = lib.arange(12.0)
            make(x).ravel().add_(100)
            sums.append(float(x.sum()))
        assert sums[0] == sums[1]


def test_retains_grad_after_grad_then_backward_inputs(torch: Any) -> None:
    states = []
    for lib in (E, torch):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x * 2
        z = (y * y).sum()
        lib.autograd.grad(z, [y], retain_graph=True)
        z.backward(inputs=[y])
        states.append((y.retains_grad, to_numpy(y.grad).tolist(), x.grad is None))
    assert states[0] == states[1]


def test_atleast_1d_list_and_tensordot_over_size_one_dims(torch: Any) -> None:
    e = E.atleast_1d([E.tensor(np.float64(1.0)), E.ones(2)])
    t = torch.atleast_1d([torch.tensor(1.0, dtype=torch.float64), torch.ones(2)])
    assert [r.shape for r in e] == [tuple(r.shape) for r in t]
    a, b = np.arange(3.0).reshape(1, 3), np.arange(2.0).reshape(1, 2)
    assert_values(
        E.tensordot(E.tensor(a), E.tensor(b), dims=([0], [0])),
        torch.tensordot(torch.tensor(a), torch.tensor(b), dims=([0], [0])),
    )
