"""Where the engine answered differently from PyTorch without an error (issue 15: the
OpInfo sweep and the random-program comparison): each scenario is written once against
a module ``T`` (``engine`` or ``torch``) and both outcomes compared, values, ``.grad``,
``grad_fn`` names, versions, warnings and errors."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from tests.engine.test_semantics import both, fn_name, outcome, quiet_grad
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1
pytestmark = pytest.mark.torch


def _t(T: Any, values: Any, requires_grad: bool = False) -> Any:
    return T.tensor(np.array(values, dtype=np.float64), requires_grad=requires_grad)


def _g(t: Any) -> Any:
    g = quiet_grad(t)
    return None if g is None else g.detach().clone()


def _grad(T: Any, y: Any, xs: list[Any], **kw: Any) -> Any:
    return T.autograd.grad(y, xs, **kw) if T is torch else T.grad(y, xs, **kw)


def _nn(T: Any) -> Any:
    return T.nn.functional


# -- svd: torch.svd's meaning, linalg.svd's in engine.linalg ---------------------------------


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("kw", [{}, {"some": False}, {"compute_uv": False}])
def test_svd_is_torch_svd(shape: tuple[int, ...], kw: dict[str, Any]) -> None:
    """U, S, V (not Vh), reduced unless some=False, zero-filled U and V without
    compute_uv; A == U diag(S) V^T; linalg.svd keeps (U, S, Vh) full."""
    a = np.random.default_rng(0).uniform(-1, 1, shape)

    def scenario(T: Any) -> Any:
        x = _t(T, a, True)
        u, s, v = T.svd(x, **kw)
        lu, ls, lvh = T.linalg.svd(x)
        shapes = [tuple(t.shape) for t in (u, s, v, lu, ls, lvh)]
        names = [fn_name(t) for t in (u, s, v)]
        rebuilt = (u[..., :, : s.shape[-1]] * s.unsqueeze(-2)) @ v[..., :, : s.shape[-1]].mT
        s.sum().backward()
        return (
            shapes,
            names,
            [u.requires_grad, v.requires_grad],
            s,
            _g(x),
            (rebuilt if kw.get("compute_uv", True) else None),
        )

    ours, ref = both(scenario)
    assert_values(ours, ref)
    if kw.get("compute_uv", True):
        np.testing.assert_allclose(ours[-1].detach().numpy(), a, atol=1e-12)


def test_svd_method_is_torch_svd() -> None:
    a = np.random.default_rng(1).uniform(-1, 1, (4, 2))
    ours, ref = both(lambda T: [tuple(t.shape) for t in _t(T, a).svd(some=False)])
    assert ours == ref == [(4, 4), (2,), (2, 2)]


# -- dropout2d on a 3-D input -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d"])
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 4), (2, 3, 4, 2), (2, 3, 2, 2, 2)])
def test_feature_dropout_reads_dims_and_warns_as_torch(name: str, shape: tuple[int, ...]) -> None:
    """dropout2d of (N, C, L) drops channels per (N, C) with torch 2.13's warning;
    dropout2d/3d warn on other ranks and go on, dropout1d refuses: same masks, same
    messages after the same seed."""
    x = np.random.default_rng(2).uniform(0.5, 1.5, shape)

    def scenario(T: Any) -> Any:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            T.manual_seed(3)
            result = outcome(lambda: getattr(_nn(T), name)(_t(T, x), 0.5))
        return result, [str(w.message) for w in seen]

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- diff(n=0), bernoulli, normal, matrix_power(A, 0) ----------------------------------------


def test_diff_of_order_zero_is_a_copy_of_the_input() -> None:
    """torch ignores prepend/append at n=0 and copies (CopyBackwards), never an alias."""

    def scenario(T: Any) -> Any:
        x = _t(T, [1.0, 2.0, 3.0], True)
        y = T.diff(x, n=0, prepend=_t(T, [5.0]), append=_t(T, [7.0, 8.0]))
        z = T.diff(x, n=0)
        aliased = z.data_ptr() == x.data_ptr() if T is torch else np.shares_memory(z.data, x.data)
        (y * 2 + z).sum().backward()
        return y, fn_name(y), aliased, _g(x)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_random_results_require_grad_with_a_zero_gradient() -> None:
    """bernoulli(p), normal(mean, std), matrix_power(A, 0): the result requires grad
    (a zero gradient), bernoulli(p, number) records NotImplemented."""

    def scenario(T: Any) -> Any:
        T.manual_seed(0)
        p = _t(T, [0.2, 0.5, 0.9], True)
        m, s = _t(T, [0.0, 1.0, 2.0], True), _t(T, [1.0, 2.0, 0.5], True)
        a = _t(T, [[2.0, 1.0], [0.5, 3.0]], True)
        outs = [
            T.bernoulli(p),
            T.normal(m, s),
            T.normal(m, 1.0),
            T.normal(0.0, s),
            T.normal(m, _t(T, np.ones((2, 3)))),
            T.linalg.matrix_power(a, 0),
        ]
        names = [fn_name(o) for o in outs]
        sum(o.sum() for o in outs).backward()
        refused = outcome(lambda: T.bernoulli(p, 0.3).sum().backward())
        return names, outs, _g(p), _g(m), _g(s), _g(a), fn_name(T.bernoulli(p, 0.3)), refused

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- random fillers in a graph: the old history is overwritten --------------------------------


@pytest.mark.parametrize(
    "fill",
    [
        lambda t: t.uniform_(),
        lambda t: t.normal_(),
        lambda t: t.bernoulli_(0.5),
    ],
    ids=["uniform_", "normal_", "bernoulli_"],
)
def test_random_fill_in_a_graph_rebases_its_history(fill: Any) -> None:
    """No gradient through the overwritten values (x.grad 0, not the old rule's); on a
    view the base is rebased through CopySlices."""

    def scenario(T: Any) -> Any:
        T.manual_seed(0)
        x = _t(T, [1.0, 2.0], True)
        h = x * 3
        fill(h)
        name, version = fn_name(h), h._version
        (h * h).sum().backward()
        w = _t(T, [1.0, 2.0, 3.0, 4.0], True)
        base = w * 3
        view = base[:2]
        fill(view)
        base.sum().backward()
        return name, version, _g(x), fn_name(base), fn_name(view), _g(w)

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- instance_norm, huber_loss, var_mean/std_mean, slogdet -----------------------------------


def test_instance_norm_bumps_the_running_stats_versions() -> None:
    x = np.random.default_rng(4).uniform(-1, 1, (2, 3, 4))

    def scenario(T: Any) -> Any:
        rm, rv = _t(T, np.zeros(3)), _t(T, np.ones(3))
        _nn(T).instance_norm(_t(T, x), rm, rv)
        after_instance = (rm._version, rv._version)
        _nn(T).batch_norm(_t(T, x), rm, rv, training=True)
        return after_instance, (rm._version, rv._version), rm, rv

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_huber_loss_gradient_where_the_difference_is_infinite(reduction: str) -> None:
    """+-delta where |input - target| is infinite (not inf * 0 = NaN); NaN stays NaN."""

    def scenario(T: Any) -> Any:
        x = _t(T, [np.inf, -np.inf, 1.0, np.nan, 0.5, 3.0], True)
        t = _t(T, [0.0, 0.0, 0.0, 0.0, 0.0, np.inf], True)
        _nn(T).huber_loss(x, t, reduction=reduction, delta=1.5).sum().backward()
        return _g(x), _g(t)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize("op", ["var_mean", "std_mean"])
def test_spread_and_mean_gradient_through_the_mean_alone(op: str) -> None:
    """A NaN spread sends nothing when only the mean is used (torch: undefined grad)."""

    def scenario(T: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = _t(T, [1.0, 2.0], True)
            spread, mean = getattr(T, op)(x[:1])
            mean.backward()
            y = _t(T, [1.0, np.inf], True)
            s2, m2 = getattr(T, op)(y)
            m2.backward()
            z = _t(T, [1.0, 3.0], True)
            s3, m3 = getattr(T, op)(z)
            (s3 + m3).backward()
        return spread, _g(x), _g(y), _g(z)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_slogdet_sign_alone_leaves_grad_none() -> None:
    a = [[2.0, 1.0], [1.0, 3.0]]

    def scenario(T: Any) -> Any:
        x = _t(T, a, True)
        sign, logabs = T.linalg.slogdet(x)
        sign.sum().backward()
        unused = _grad(T, T.linalg.slogdet(x * 1)[0].sum(), [x], allow_unused=True)
        y = _t(T, a, True)
        s2, l2 = T.linalg.slogdet(y)
        (s2 * l2).backward()
        return _g(x), unused, _g(y)

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- what a node saves decides which in-place write breaks backward -------------------------

SAVES = {
    "addmv": (lambda T, a, b, c: T.addmv(a, b, c), [(3,), (3, 4), (4,)]),
    "addmm": (lambda T, a, b, c: T.addmm(a, b, c), [(3, 2), (3, 4), (4, 2)]),
    "baddbmm": (lambda T, a, b, c: T.baddbmm(a, b, c), [(2, 3, 2), (2, 3, 4), (2, 4, 2)]),
    "addcdiv": (lambda T, a, b, c: T.addcdiv(a, b, c, value=0.5), [(3,), (3,), (3,)]),
    "addcmul": (lambda T, a, b, c: T.addcmul(a, b, c, value=0.5), [(3,), (3,), (3,)]),
    "lerp": (lambda T, a, b, c: T.lerp(a, b, c), [(3,), (3,), (3,)]),
    "einsum ii": (lambda T, a: T.einsum("ii", a), [(3, 3)]),
    "einsum ii->i": (lambda T, a: T.einsum("ii->i", a), [(3, 3)]),
    "einsum ij,jk": (lambda T, a, b: T.einsum("ij,jk->ik", a, b), [(3, 3), (3, 2)]),
    "adaptive_avg_pool1d": (lambda T, a: _nn(T).adaptive_avg_pool1d(a, 2), [(1, 2, 5)]),
    "adaptive_avg_pool2d": (lambda T, a: _nn(T).adaptive_avg_pool2d(a, 2), [(1, 2, 5, 5)]),
    "adaptive_max_pool2d": (lambda T, a: _nn(T).adaptive_max_pool2d(a, 2), [(1, 2, 5, 5)]),
    "max_pool2d": (lambda T, a: _nn(T).max_pool2d(a, 2), [(1, 2, 4, 4)]),
    "avg_pool2d": (lambda T, a: _nn(T).avg_pool2d(a, 2), [(1, 2, 4, 4)]),
}
_CASES = [
    (name, need, k)
    for name, (_, shapes) in SAVES.items()
    for need in np.ndindex(*(2,) * len(shapes))
    if any(need)
    for k in range(len(shapes))
]


@pytest.mark.parametrize(("name", "need", "written"), _CASES)
def test_inplace_write_after_the_op_fails_backward_as_torch(
    name: str, need: tuple[int, ...], written: int
) -> None:
    """Which inputs require grad decides what torch saves; writing an unsaved one in
    place is fine, a saved one fails backward (the same message)."""
    fn, shapes = SAVES[name]
    rng = np.random.default_rng(5)
    data = [rng.uniform(1, 2, s) for s in shapes]

    def scenario(T: Any) -> Any:
        leaves = [_t(T, d, bool(n)) for d, n in zip(data, need)]
        ins = [leaf * 1 if leaf.requires_grad else leaf.clone() for leaf in leaves]
        y = fn(T, *ins)
        with T.no_grad():
            ins[written].add_(1)
        kind, res = outcome(lambda: y.sum().backward())
        return kind, [_g(leaf) for leaf in leaves] if kind == "ok" else None

    ours, ref = both(scenario)
    assert ours[0] == ref[0], f"engine {ours[0]}, torch {ref[0]}"
    assert_values(ours, ref)


# -- create_graph: piecewise-linear gradients require grad -----------------------------------

CREATE_GRAPH = {
    "hardtanh": (lambda T, x: _nn(T).hardtanh(x), [(4,)]),
    "relu6": (lambda T, x: _nn(T).relu6(x), [(4,)]),
    "hardshrink": (lambda T, x: _nn(T).hardshrink(x), [(4,)]),
    "softshrink": (lambda T, x: _nn(T).softshrink(x), [(4,)]),
    "threshold": (lambda T, x: _nn(T).threshold(x, 0.1, 2.0), [(4,)]),
    "hardsigmoid": (lambda T, x: _nn(T).hardsigmoid(x), [(4,)]),
    "max_pool1d": (lambda T, x: _nn(T).max_pool1d(x, 2), [(1, 1, 4)]),
    "max_pool2d": (lambda T, x: _nn(T).max_pool2d(x, 2), [(1, 1, 4, 4)]),
    "avg_pool2d": (lambda T, x: _nn(T).avg_pool2d(x, 2), [(1, 1, 4, 4)]),
    "adaptive_avg_pool2d": (lambda T, x: _nn(T).adaptive_avg_pool2d(x, 2), [(1, 1, 5, 5)]),
    "adaptive_max_pool2d": (lambda T, x: _nn(T).adaptive_max_pool2d(x, 2), [(1, 1, 5, 5)]),
    "conv1d": (lambda T, x, w: _nn(T).conv1d(x, w), [(1, 2, 5), (3, 2, 2)]),
    "conv2d bias": (
        lambda T, x, w, b: _nn(T).conv2d(x, w, b),
        [(1, 2, 4, 4), (3, 2, 2, 2), (3,)],
    ),
    "conv_transpose1d": (lambda T, x, w: _nn(T).conv_transpose1d(x, w), [(1, 2, 5), (2, 3, 2)]),
}
_CG_CASES = [
    (name, need)
    for name, (_, shapes) in CREATE_GRAPH.items()
    for need in np.ndindex(*(2,) * len(shapes))
    if any(need)
]


@pytest.mark.parametrize(("name", "need"), _CG_CASES)
def test_create_graph_gradients_of_piecewise_linear_ops_require_grad(
    name: str, need: tuple[int, ...]
) -> None:
    """The gradient is torch's backward op over the forward inputs: it requires grad
    when one of them does (a zero second derivative), named as torch names it, and
    hardsigmoid's has no derivative (NotImplemented)."""
    fn, shapes = CREATE_GRAPH[name]
    rng = np.random.default_rng(6)
    data = [rng.uniform(-1, 1, s) for s in shapes]

    def scenario(T: Any) -> Any:
        xs = [_t(T, d, bool(n)) for d, n in zip(data, need)]
        wanted = [x for x in xs if x.requires_grad]
        grads = _grad(T, fn(T, *xs).sum(), wanted, create_graph=True)
        second = outcome(lambda: _grad(T, sum(g.sum() for g in grads), wanted, allow_unused=True))
        return [(g.requires_grad, fn_name(g)) for g in grads], grads, second

    ours, ref = both(scenario)
    assert_values(ours, ref)


# -- errors where torch answers, and torch's errors ------------------------------------------

ANSWERS = {
    "group_norm one value per group": lambda T: _nn(T).group_norm(_t(T, np.ones((1, 2, 1))), 2),
    "group_norm one value per group (1, 3)": lambda T: _nn(T).group_norm(_t(T, np.ones((1, 3))), 3),
    "group_norm two samples": lambda T: _nn(T).group_norm(_t(T, [[1.0, 2, 3], [4, 5, 7]]), 3),
    "group_norm (0, 2)": lambda T: _nn(T).group_norm(_t(T, np.ones((0, 2))), 1),
    "topk 0-d k=0": lambda T: tuple(T.topk(_t(T, 0.5), 0)),
    "topk 0-d k=1": lambda T: tuple(T.topk(_t(T, 0.5), 1)),
    "erfc 0-d": lambda T: T.erfc(_t(T, 0.5)),
    "erfinv 0-d": lambda T: T.erfinv(_t(T, 0.5)),
    "masked_scatter 0-d": lambda T: _t(T, 1.0).masked_scatter(T.tensor(True), _t(T, [5.0, 6.0])),
    "gather int32 index": lambda T: T.gather(
        _t(T, [1.0, 2, 3]), 0, T.tensor([2, 0], dtype=T.int32)
    ),
    "index_select int32 index": lambda T: _t(T, [1.0, 2, 3]).index_select(
        0, T.tensor([2, 0], dtype=T.int32)
    ),
    "take_along_dim negative": lambda T: T.take_along_dim(_t(T, [1.0, 2, 3]), T.tensor([-1, 0])),
    "atleast_1d list": lambda T: T.atleast_1d([_t(T, 1.0), _t(T, [2.0, 3])]),
    "atleast_3d tuple": lambda T: T.atleast_3d((_t(T, 1.0), _t(T, [2.0, 3]))),
    "batch_norm 1-D": lambda T: _nn(T).batch_norm(
        _t(T, np.ones(3)), _t(T, np.zeros(3)), _t(T, np.ones(3))
    ),
    "tensordot size-1": lambda T: T.tensordot(
        _t(T, np.ones((2, 1))), _t(T, np.ones((1, 3))), dims=([1], [0])
    ),
    "tensordot size-1 pair": lambda T: T.tensordot(
        _t(T, np.ones((2, 1, 3))), _t(T, np.ones((1, 3, 4))), dims=([1, 2], [0, 1])
    ),
    "zeros device": lambda T: T.zeros(2, device="cpu"),
    "ones device": lambda T: T.ones(2, 3, device="cpu", dtype=T.float64),
    "full device": lambda T: T.full((2,), 1.5, device="cpu"),
    "arange device": lambda T: T.arange(3, device="cpu"),
    "eye device": lambda T: T.eye(2, device="cpu"),
    "zeros_like device": lambda T: T.zeros_like(_t(T, [1.0]), device="cpu"),
    "tensor device": lambda T: T.tensor([1.0], device="cpu"),
    "rand device": lambda T: T.rand(2, device="cpu").shape,
    "to(dtype, False, True)": lambda T: (
        lambda a: (a.to(T.float32, False, True), a.to(T.float64, False, True) is a)
    )(_t(T, [1.0])),
    "to(device, dtype, False, True)": lambda T: (
        lambda a: a.to("cpu", T.float64, False, True) is a
    )(_t(T, [1.0])),
}


def _any_outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - ValueError, TypeError ... compared below
        return "error", exc


@pytest.mark.parametrize("case", list(ANSWERS))
def test_answers_and_errors_as_torch(case: str) -> None:
    """Where torch answers the engine answers the same; where it raises, the engine
    raises its class (an EngineError subclassing it) with its message."""
    ours, ref = both(lambda T: _any_outcome(lambda: ANSWERS[case](T)))
    assert ours[0] == ref[0], f"engine {ours}, torch {ref}"
    if ref[0] == "error":
        assert isinstance(ours[1], type(ref[1])), (ours, ref)
    assert_values(ours, ref)


def test_masked_scatter_of_a_0d_input_differentiates() -> None:
    def scenario(T: Any) -> Any:
        x, s = _t(T, 1.0, True), _t(T, [5.0, 6.0], True)
        y = (x * 1).masked_scatter(T.tensor(True), s)
        y.backward()
        return y, _g(x), _g(s)

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.ravel(),
        lambda a: a.t().ravel(),
        lambda a: a.t()[:1].ravel(),
        lambda a: a[:1].ravel(),
        lambda a: a[:, ::2].ravel(),
        lambda a: a[:, :1].ravel(),
    ],
    ids=["contiguous", "transposed", "transposed row", "row", "strided", "column"],
)
def test_ravel_views_exactly_when_torch_does(make: Any) -> None:
    """torch's ravel is contiguous().view(-1): a view of a contiguous input, else a copy."""

    def scenario(T: Any) -> Any:
        a = _t(T, np.arange(6.0).reshape(2, 3), True) * 1
        r = make(a)
        shares = r._base is a if T is torch else np.shares_memory(r.data, a.data)
        return r, fn_name(r), shares

    ours, ref = both(scenario)
    assert_values(ours, ref)


@pytest.mark.parametrize(
    "a,b",
    [
        ([[np.nan, 1.0]], [[0.0, 1.0]]),
        ([[np.inf, 1.0]], [[np.inf, 1.0]]),
        ([[np.inf, 1.0]], [[0.0, 1.0]]),
        ([[1.0, 2.0], [3.0, 3.0]], [[1.0, 0.0]]),
    ],
)
def test_cdist_p0_is_nan_where_a_difference_is_nan(a: Any, b: Any) -> None:
    """torch's p=0 kernel sums min(ceil(|d|), 1): NaN in, NaN out (inf - inf too)."""

    def scenario(T: Any) -> Any:
        r = T.cdist(_t(T, a, True), _t(T, b), p=0)
        return r, fn_name(r)

    ours, ref = both(scenario)
    assert_values(ours, ref)


def test_tensor_of_python_floats_with_a_dtype_parses_at_that_dtype() -> None:
    """tensor([0.3], dtype=float64) is 0.3 in float64, not float32's 0.3 widened (what
    made polygamma look 1e-7 off in float64)."""

    def scenario(T: Any) -> Any:
        x = T.tensor([0.3, 1.7, 12.5, 40.0, 0.1], dtype=T.float64)
        return x, T.polygamma(2, x), T.polygamma(3, x), x.tolist()

    ours, ref = both(scenario)
    assert ours[3] == ref[3]
    assert_values(ours, ref)
    np.testing.assert_allclose(ours[1].numpy(), ref[1].numpy(), rtol=1e-13)
