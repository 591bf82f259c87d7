"""The layers of real models against PyTorch, beyond what the op database sweeps:
PyTorch's errors (class and message), batch_norm's running statistics over
several training steps and its evaluation mode, einsum equations with their
gradients and double backward, NaN where PyTorch gives NaN, and the options
we refuse (with a message that says what to do)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import BadArgumentsError, EngineError
from tests.engine.torch_oracle import assert_same, require_torch

torch = require_torch()
F = torch.nn.functional

RNG = np.random.default_rng(11)


def leaf(lib: Any, data: Any, grad: bool = True, dtype: str = "float64") -> Any:
    data = np.asarray(data)
    grad = grad and data.dtype.kind == "f"
    if lib is E:
        return E.tensor(data, dtype=dtype if data.dtype.kind == "f" else None, requires_grad=grad)
    t = torch.from_numpy(data.copy())
    if data.dtype.kind == "f":
        t = t.to(getattr(torch, dtype))
    return t.requires_grad_(grad)


def op(lib: Any, name: str) -> Any:
    """The op in the engine, or PyTorch's spelling of it (``F.X`` else ``torch.X``)."""
    if lib is E:
        return E.OPS[name].fn
    return getattr(F, name, None) or getattr(torch, name)


def r(*shape: int) -> np.ndarray:
    return RNG.uniform(-2, 2, shape)


X = r(2, 3, 5)
Q = r(2, 3, 4)
IDX = np.array([1, 2])

ERRORS: dict[str, Any] = {
    "layer_norm shape": lambda lib: op(lib, "layer_norm")(leaf(lib, X), [4]),
    "layer_norm weight": lambda lib: op(lib, "layer_norm")(leaf(lib, X), [5], leaf(lib, r(4))),
    "layer_norm int shape": lambda lib: (
        F.layer_norm(leaf(lib, X), 5) if lib is torch else E.OPS["layer_norm"].fn(leaf(lib, X), 5)
    ),
    "batch_norm one value": lambda lib: op(lib, "batch_norm")(
        leaf(lib, r(1, 3)), None, None, training=True
    ),
    "batch_norm eval without stats": lambda lib: op(lib, "batch_norm")(
        leaf(lib, r(2, 3)), None, None
    ),
    "batch_norm stats size": lambda lib: op(lib, "batch_norm")(
        leaf(lib, r(2, 3)), leaf(lib, np.zeros(4), False), leaf(lib, np.ones(4), False)
    ),
    "batch_norm momentum None": lambda lib: op(lib, "batch_norm")(
        leaf(lib, r(2, 3)), None, None, training=True, momentum=None
    ),
    "group_norm groups": lambda lib: op(lib, "group_norm")(leaf(lib, r(2, 4, 3)), 3),
    "group_norm weight": lambda lib: op(lib, "group_norm")(
        leaf(lib, r(2, 4, 3)), 2, leaf(lib, r(3))
    ),
    "instance_norm one element": lambda lib: op(lib, "instance_norm")(leaf(lib, r(2, 3, 1))),
    "embedding float indices": lambda lib: op(lib, "embedding")(
        leaf(lib, np.array([1.0]), False), leaf(lib, r(5, 3))
    ),
    "embedding out of range": lambda lib: op(lib, "embedding")(
        leaf(lib, np.array([7])), leaf(lib, r(5, 3))
    ),
    "embedding padding_idx": lambda lib: op(lib, "embedding")(
        leaf(lib, IDX), leaf(lib, r(5, 3)), padding_idx=7
    ),
    "one_hot float": lambda lib: op(lib, "one_hot")(leaf(lib, np.array([1.0]), False)),
    "one_hot negative": lambda lib: op(lib, "one_hot")(leaf(lib, np.array([-1]))),
    "one_hot too large": lambda lib: op(lib, "one_hot")(leaf(lib, np.array([3])), 3),
    "one_hot empty": lambda lib: op(lib, "one_hot")(leaf(lib, np.zeros(0, np.int64))),
    "bilinear sizes": lambda lib: op(lib, "bilinear")(
        leaf(lib, r(2, 3)), leaf(lib, r(2, 4)), leaf(lib, r(5, 3, 3))
    ),
    "sdpa mask and causal": lambda lib: op(lib, "scaled_dot_product_attention")(
        leaf(lib, Q),
        leaf(lib, Q),
        leaf(lib, Q),
        attn_mask=leaf(lib, np.ones((3, 3), bool)),
        is_causal=True,
    ),
    "einsum sizes": lambda lib: op(lib, "einsum")(
        "ij,jk->ik", leaf(lib, r(2, 3)), leaf(lib, r(4, 5))
    ),
    "einsum operands": lambda lib: op(lib, "einsum")("ij,jk->ik", leaf(lib, r(2, 3))),
    "einsum subscripts": lambda lib: op(lib, "einsum")("ijk->ik", leaf(lib, r(2, 3))),
    "einsum output": lambda lib: op(lib, "einsum")("ij->ix", leaf(lib, r(2, 3))),
    "einsum repeated output": lambda lib: op(lib, "einsum")("ij->ii", leaf(lib, r(2, 3))),
    "einsum character": lambda lib: op(lib, "einsum")("i1->i", leaf(lib, r(2, 3))),
    "einsum diagonal sizes": lambda lib: op(lib, "einsum")("ii->i", leaf(lib, r(2, 3))),
    "tril 1-d": lambda lib: op(lib, "tril")(leaf(lib, r(3))),
    "addmm shapes": lambda lib: op(lib, "addmm")(
        leaf(lib, r(2, 2)), leaf(lib, r(2, 3)), leaf(lib, r(4, 2))
    ),
    "addmm 1-d": lambda lib: op(lib, "addmm")(
        leaf(lib, r(2, 2)), leaf(lib, r(3)), leaf(lib, r(3, 2))
    ),
    "baddbmm shapes": lambda lib: op(lib, "baddbmm")(
        leaf(lib, r(2, 2, 2)), leaf(lib, r(2, 2, 3)), leaf(lib, r(2, 4, 2))
    ),
    "addmv shapes": lambda lib: op(lib, "addmv")(
        leaf(lib, r(2)), leaf(lib, r(2, 3)), leaf(lib, r(4))
    ),
    "cross length": lambda lib: op(lib, "cross")(leaf(lib, r(2, 4)), leaf(lib, r(2, 4)), dim=1),
    "tensordot sizes": lambda lib: op(lib, "tensordot")(
        leaf(lib, r(2, 3)), leaf(lib, r(4, 5)), dims=1
    ),
    "tensordot negative": lambda lib: op(lib, "tensordot")(
        leaf(lib, r(2, 3)), leaf(lib, r(3, 5)), dims=-1
    ),
    "kl_div reduction": lambda lib: op(lib, "kl_div")(
        leaf(lib, r(3)), leaf(lib, r(3)), reduction="bogus"
    ),
    "bce pos_weight requires grad": lambda lib: op(lib, "binary_cross_entropy_with_logits")(
        leaf(lib, r(3)), leaf(lib, RNG.uniform(0, 1, 3), False), pos_weight=leaf(lib, r(3))
    ),
    "soft_margin target requires grad": lambda lib: op(lib, "soft_margin_loss")(
        leaf(lib, r(3)), leaf(lib, r(3))
    ),
    "cross_entropy probabilities shape": lambda lib: op(lib, "cross_entropy")(
        leaf(lib, r(3, 4)), leaf(lib, RNG.uniform(0, 1, (3, 5)), False)
    ),
    "cross_entropy label_smoothing": lambda lib: op(lib, "cross_entropy")(
        leaf(lib, r(3, 4)), leaf(lib, np.array([1, 2, 3])), label_smoothing=1.5
    ),
    "nll_loss N-d target": lambda lib: op(lib, "nll_loss")(
        leaf(lib, r(2, 3, 4)), leaf(lib, np.zeros((2, 5), np.int64))
    ),
    "gaussian_nll negative var": lambda lib: op(lib, "gaussian_nll_loss")(
        leaf(lib, r(3)), leaf(lib, r(3)), leaf(lib, -RNG.uniform(0.1, 1, 3))
    ),
    "gaussian_nll var size": lambda lib: op(lib, "gaussian_nll_loss")(
        leaf(lib, r(3, 2)), leaf(lib, r(3, 2)), leaf(lib, RNG.uniform(0.1, 1, 4))
    ),
    "cdist columns": lambda lib: op(lib, "cdist")(leaf(lib, r(3, 2)), leaf(lib, r(4, 3))),
    "cdist p": lambda lib: op(lib, "cdist")(leaf(lib, r(3, 2)), leaf(lib, r(4, 2)), p=-1.0),
    "cosine_embedding target": lambda lib: op(lib, "cosine_embedding_loss")(
        leaf(lib, r(3, 2)), leaf(lib, r(3, 2)), leaf(lib, np.ones(4))
    ),
    "triplet margin": lambda lib: op(lib, "triplet_margin_loss")(
        leaf(lib, r(3, 2)), leaf(lib, r(3, 2)), leaf(lib, r(3, 2)), margin=-1
    ),
    "margin_ranking dims": lambda lib: op(lib, "margin_ranking_loss")(
        leaf(lib, r(3)), leaf(lib, r(3)), leaf(lib, r(2, 3))
    ),
    "layer_norm of integers": lambda lib: op(lib, "layer_norm")(leaf(lib, IDX[None]), [2]),
    "group_norm of integers": lambda lib: op(lib, "group_norm")(leaf(lib, IDX[None]), 1),
    "huber_loss of integers": lambda lib: op(lib, "huber_loss")(leaf(lib, IDX), leaf(lib, IDX)),
    "kl_div of integers": lambda lib: op(lib, "kl_div")(
        leaf(lib, IDX), leaf(lib, IDX), reduction="sum"
    ),
    "cosine_similarity of integers": lambda lib: op(lib, "cosine_similarity")(
        leaf(lib, IDX[None]), leaf(lib, IDX[None])
    ),
    # mixed dtypes: PyTorch's CPU kernels refuse them (no promotion)
    "layer_norm float32 with float64 weight": lambda lib: op(lib, "layer_norm")(
        leaf(lib, X, dtype="float32"), [5], leaf(lib, r(5))
    ),
    "layer_norm float64 with float32 weight": lambda lib: op(lib, "layer_norm")(
        leaf(lib, X), [5], leaf(lib, r(5), dtype="float32")
    ),
    "batch_norm float64 stats": lambda lib: op(lib, "batch_norm")(
        leaf(lib, r(2, 3), dtype="float32"),
        leaf(lib, np.zeros(3), False),
        leaf(lib, np.ones(3), False),
        training=True,
    ),
    "group_norm mixed": lambda lib: op(lib, "group_norm")(
        leaf(lib, r(2, 4, 3), dtype="float32"), 2, leaf(lib, r(4))
    ),
    "einsum mixed": lambda lib: op(lib, "einsum")(
        "ij,jk->ik", leaf(lib, r(2, 3), dtype="float32"), leaf(lib, r(3, 2))
    ),
    "addmm mixed mat2": lambda lib: op(lib, "addmm")(
        leaf(lib, r(2, 2), dtype="float32"), leaf(lib, r(2, 3), dtype="float32"), leaf(lib, r(3, 2))
    ),
    "addmm mixed input": lambda lib: op(lib, "addmm")(
        leaf(lib, r(2, 2)), leaf(lib, r(2, 3), dtype="float32"), leaf(lib, r(3, 2), dtype="float32")
    ),
    "baddbmm mixed input": lambda lib: op(lib, "baddbmm")(
        leaf(lib, r(1, 2, 2)),
        leaf(lib, r(1, 2, 3), dtype="float32"),
        leaf(lib, r(1, 3, 2), dtype="float32"),
    ),
    "baddbmm mixed batch2": lambda lib: op(lib, "baddbmm")(
        leaf(lib, r(1, 2, 2), dtype="float32"),
        leaf(lib, r(1, 2, 3), dtype="float32"),
        leaf(lib, r(1, 3, 2)),
    ),
    "addmv mixed": lambda lib: op(lib, "addmv")(
        leaf(lib, r(2)), leaf(lib, r(2, 3), dtype="float32"), leaf(lib, r(3), dtype="float32")
    ),
    "tensordot mixed": lambda lib: op(lib, "tensordot")(
        leaf(lib, r(2, 3), dtype="float32"), leaf(lib, r(3, 2)), dims=1
    ),
    "bilinear mixed": lambda lib: op(lib, "bilinear")(
        leaf(lib, r(2, 3), dtype="float32"),
        leaf(lib, r(2, 3), dtype="float32"),
        leaf(lib, r(4, 3, 3)),
    ),
    "cdist mixed": lambda lib: op(lib, "cdist")(
        leaf(lib, r(3, 2), dtype="float32"), leaf(lib, r(4, 2))
    ),
    "cross mixed": lambda lib: op(lib, "cross")(
        leaf(lib, r(2, 3)), leaf(lib, r(2, 3), dtype="float32"), dim=1
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name: str) -> None:
    """The engine raises an EngineError of PyTorch's exception class with its message."""
    make = ERRORS[name]
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - PyTorch's classes vary
        make(torch)
    with pytest.raises(EngineError) as mine:
        make(E)
    assert isinstance(mine.value, type(theirs.value)), (type(mine.value), type(theirs.value))
    assert str(mine.value) == str(theirs.value).split("\n")[0]


# -- batch_norm and instance_norm running statistics -----------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 2, 2)])
def test_batch_norm_running_stats_follow_torch(shape: tuple[int, ...], dtype: str) -> None:
    """Several training steps update running_mean/var in place exactly as PyTorch does
    (unbiased variance, momentum); then evaluation mode normalizes by them."""
    c = shape[1]
    rm_e, rv_e = leaf(E, np.zeros(c), False, dtype), leaf(E, np.ones(c), False, dtype)
    rm_t, rv_t = leaf(torch, np.zeros(c), False, dtype), leaf(torch, np.ones(c), False, dtype)
    w, b = r(c), r(c)
    for step in range(4):
        x = r(*shape) * (step + 1) + step
        xe, xt = leaf(E, x, dtype=dtype), leaf(torch, x, dtype=dtype)
        we, wt = leaf(E, w, dtype=dtype), leaf(torch, w, dtype=dtype)
        ye = E.OPS["batch_norm"].fn(xe, rm_e, rv_e, we, leaf(E, b, False, dtype), True, 0.3)
        yt = F.batch_norm(xt, rm_t, rv_t, wt, leaf(torch, b, False, dtype), True, 0.3)
        assert_same(ye, yt)
        assert_same(rm_e, rm_t, graph=False, path=f"running_mean after step {step}")
        assert_same(rv_e, rv_t, graph=False, path=f"running_var after step {step}")
        assert rm_e._version == rm_t._version
        g = r(*shape).astype(dtype)
        E.backward(ye, E.tensor(g))
        yt.backward(torch.from_numpy(g))
        assert_same(xe.grad, xt.grad, graph=False, path="input grad")
        assert_same(we.grad, wt.grad, graph=False, path="weight grad")
    x = r(*shape)
    xe, xt = leaf(E, x, dtype=dtype), leaf(torch, x, dtype=dtype)
    ye = E.OPS["batch_norm"].fn(xe, rm_e, rv_e, None, None, False)
    yt = F.batch_norm(xt, rm_t, rv_t, None, None, False)
    assert_same(ye, yt)
    before = rm_e._data.copy()
    g = r(*shape).astype(dtype)
    E.backward(ye, E.tensor(g))
    yt.backward(torch.from_numpy(g))
    assert_same(xe.grad, xt.grad, graph=False, path="eval input grad")
    np.testing.assert_array_equal(rm_e.data, before)  # evaluation leaves the stats alone


def test_instance_norm_running_stats_follow_torch() -> None:
    rm_e, rv_e = leaf(E, np.zeros(3), False), leaf(E, np.ones(3), False)
    rm_t, rv_t = leaf(torch, np.zeros(3), False), leaf(torch, np.ones(3), False)
    for step in range(3):
        x = r(2, 3, 4) + step
        ye = E.OPS["instance_norm"].fn(leaf(E, x), rm_e, rv_e, momentum=0.2)
        yt = F.instance_norm(leaf(torch, x), rm_t, rv_t, momentum=0.2)
        assert_same(ye, yt)
        assert_same(rm_e, rm_t, graph=False, path="running_mean")
        assert_same(rv_e, rv_t, graph=False, path="running_var")


def test_batch_norm_training_without_running_stats_needs_none() -> None:
    x = leaf(E, r(4, 3))
    y = E.OPS["batch_norm"].fn(x, None, None, training=True)
    np.testing.assert_allclose(y._data.mean(axis=0), 0, atol=1e-12)


# -- einsum ----------------------------------------------------------------------------------

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij->ij", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,j->ij", [(3,), (2,)]),
    ("i,i->", [(4,), (4,)]),
    ("i,i->i", [(4,), (4,)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]),
    ("b...,b...->b...", [(2, 3), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ijk,ikl,lm->jm", [(2, 3, 2), (2, 2, 3), (3, 2)]),
    ("ij,kj", [(2, 3), (4, 3)]),
    ("Ab,bA->", [(2, 3), (3, 2)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]),
    ("ij->", [(0, 3)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_matches_torch_to_second_order(equation: str, shapes: list[tuple[int, ...]]) -> None:
    """Values, grad_fn, gradients, and the gradient of a gradient (create_graph)."""
    arrays = [r(*s) for s in shapes]
    mine = [leaf(E, a) for a in arrays]
    theirs = [leaf(torch, a) for a in arrays]
    ye, yt = E.OPS["einsum"].fn(equation, *mine), torch.einsum(equation, *theirs)
    assert_same(ye, yt)
    g = r(*yt.shape)
    ge = E.grad(ye, mine, E.tensor(g), create_graph=True)
    gt = torch.autograd.grad(yt, theirs, torch.from_numpy(g), create_graph=True)
    for a, b in zip(ge, gt):
        assert_same(a, b, graph=False)
    if not all(t.requires_grad for t in gt):
        return
    score_e = sum((x * x).sum() for x in ge)
    score_t = sum((x * x).sum() for x in gt)
    gge = E.grad(score_e, mine, allow_unused=True)
    ggt = torch.autograd.grad(score_t, theirs, allow_unused=True)
    for a, b in zip(gge, ggt):
        if b is None:
            assert a is None or not a._data.any()
        else:
            assert_same(a, b, graph=False, path="second order")


# -- NaN and inf as PyTorch ------------------------------------------------------------------


INF_LOGITS = np.array(
    [[1.0, np.inf, 2.0], [np.inf, np.inf, 1.0], [-np.inf, 0.0, 1.0], [-np.inf] * 3]
)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_over_infinities_is_torch_nan(name: str, dim: int, dtype: str) -> None:
    xe, xt = leaf(E, INF_LOGITS, dtype=dtype), leaf(torch, INF_LOGITS, dtype=dtype)
    ye, yt = E.OPS[name].fn(xe, dim), getattr(F, name)(xt, dim)
    assert_same(ye, yt)
    g = np.ones(INF_LOGITS.shape, dtype)
    E.backward(ye, E.tensor(g))
    yt.backward(torch.from_numpy(g))
    assert_same(xe.grad, xt.grad, graph=False)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_over_infinities_is_torch_nan(reduction: str) -> None:
    target = np.array([0, 1, 2, 0])
    xe, xt = leaf(E, INF_LOGITS), leaf(torch, INF_LOGITS)
    ye = E.OPS["cross_entropy"].fn(xe, leaf(E, target), reduction=reduction)
    yt = F.cross_entropy(xt, leaf(torch, target), reduction=reduction)
    assert_same(ye, yt)
    assert np.isnan(ye._data).any()


# -- layers that keep a gradient out ---------------------------------------------------------


def test_embedding_padding_row_gets_no_gradient() -> None:
    w = leaf(E, r(4, 3))
    idx = leaf(E, np.array([[0, 2], [2, 3]]))
    E.OPS["embedding"].fn(idx, w, padding_idx=2).sum().backward()
    np.testing.assert_array_equal(w.grad.data[2], 0.0)
    np.testing.assert_array_equal(w.grad.data[[0, 3]], 1.0)


def test_refused_options_say_what_to_do() -> None:
    w, idx, q = leaf(E, r(4, 3)), leaf(E, np.array([1])), leaf(E, Q)
    with pytest.raises(BadArgumentsError, match="max_norm is not supported.*max_norm=None"):
        E.OPS["embedding"].fn(idx, w, max_norm=1.0)
    with pytest.raises(BadArgumentsError, match="dropout probability has to be between 0 and 1"):
        E.OPS["scaled_dot_product_attention"].fn(q, q, q, dropout_p=1.5)


def test_causal_attention_is_masked_softmax_attention() -> None:
    """is_causal equals the explicit lower-triangular bool mask, values and gradients."""
    a = [r(2, 4, 3) for _ in range(3)]
    mine = [leaf(E, x) for x in a]
    other = [leaf(E, x) for x in a]
    sdpa = E.OPS["scaled_dot_product_attention"].fn
    y1 = sdpa(*mine, is_causal=True)
    y2 = sdpa(*other, attn_mask=E.tensor(np.tril(np.ones((4, 4), bool))))
    np.testing.assert_allclose(y1.data, y2.data)
    y1.sum().backward()
    y2.sum().backward()
    for x, z in zip(mine, other):
        np.testing.assert_allclose(x.grad.data, z.grad.data)


W5, B5, G243, W4, H1, H2 = r(5), r(5), r(2, 4, 3), r(4), r(3, 4), r(3, 4)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("layer_norm", lambda lib: (leaf(lib, X), [5], leaf(lib, W5), leaf(lib, B5))),
        ("group_norm", lambda lib: (leaf(lib, G243), 2, leaf(lib, W4))),
        ("scaled_dot_product_attention", lambda lib: (leaf(lib, Q), leaf(lib, Q), leaf(lib, Q))),
        ("huber_loss", lambda lib: (leaf(lib, H1), leaf(lib, H2))),
    ],
)
def test_named_composites_differentiate_twice_like_torch(name: str, args: Any) -> None:
    """A fused PyTorch node written as a composite: its gradient is itself differentiable."""
    ae, at = args(E), args(torch)
    ye, yt = op(E, name)(*ae), op(torch, name)(*at)
    le = [a for a in ae if isinstance(a, E.Tensor) and a.requires_grad]
    lt = [a for a in at if isinstance(a, torch.Tensor) and a.requires_grad]
    ge = E.grad((ye * ye).sum(), le, create_graph=True)
    gt = torch.autograd.grad((yt * yt).sum(), lt, create_graph=True)
    for a, b in zip(ge, gt):
        assert_same(a, b, graph=False)
    gge = E.grad(sum((g * g).sum() for g in ge), le)
    ggt = torch.autograd.grad(sum((g * g).sum() for g in gt), lt)
    for a, b in zip(gge, ggt):
        assert_same(a, b, graph=False, path="second order")


def test_composite_backward_twice_needs_retain_graph() -> None:
    """The named node frees like any other: a second backward fails as in PyTorch."""
    x = leaf(E, X)
    y = E.OPS["layer_norm"].fn(x, [5]).sum()
    y.backward()
    with pytest.raises(E.EngineError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_benchmark_block_is_the_same_computation_in_both() -> None:
    """bench/block.py times the engine against PyTorch on one computation: same value."""
    from bench import block

    mine, theirs = block.engine_block(E)(), block.torch_block(torch)()
    np.testing.assert_allclose(mine.data, theirs.detach().numpy(), rtol=1e-4)


@pytest.mark.parametrize(
    "name",
    [
        "einsum",
        "kron",
        "tensordot",
        "embedding",
        "one_hot",
        "scaled_dot_product_attention",
        "cdist",
    ],
)
def test_size_estimates_bound_every_sample(name: str) -> None:
    """An op whose result can outgrow its inputs says how big before it runs."""
    from engine.registry import OPS
    from tests.engine.torch_oracle import engine_inputs

    spec = OPS[name]
    assert spec.estimate is not None
    for s in spec.samples(np.random.default_rng(0)):  # type: ignore[misc]
        args, kwargs, _ = engine_inputs(s, np.float64)
        estimate = spec.estimate(args, kwargs)
        assert estimate is not None and estimate >= spec.fn(*args, **kwargs)._data.size, s.note
