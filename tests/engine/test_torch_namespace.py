"""``import engine as torch``: the namespaces and call forms a ported model uses,
each call run on the engine and on PyTorch with the same data and compared.

Covers ``out=`` (written, resized with PyTorch's warning, refused under autograd),
numpy's ``axis``/``keepdims`` names, sizes by keyword, PyTorch's dtype names and
helpers, ``engine.nn.functional`` (``inplace=``, legacy ``size_average``/``reduce``,
implicit softmax dims), ``engine.linalg`` (its own defaults) and ``engine.special``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import engine
from tests.engine.test_opinfo_samples import Case, check
from tests.engine.torch_oracle import require_torch

torch = require_torch()

rng = np.random.default_rng(3)
X = rng.uniform(-2, 2, (3, 4))
Y = rng.uniform(-2, 2, (3, 4))
SQ = rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)
V3 = rng.uniform(-1, 1, (2, 3))
LOGITS = rng.uniform(-2, 2, (4, 5))
TARGETS = np.array([0, 3, 1, 4])

CASES = [
    # -- torch namespace: dtype names and helpers --
    Case("dtype names", lambda t: [t.tensor([1, 2], dtype=d) for d in (t.float, t.double, t.half, t.int, t.long, t.short, t.bool, t.uint8, t.int8)], ()),
    Case("is_tensor numel", lambda t, a: (t.is_tensor(a), t.is_tensor(1), t.numel(a), t.is_floating_point(a)), (X,)),
    Case("result_type", lambda t, a: str(t.result_type(a, 2.5)).removeprefix("torch."), (np.array([1, 2]),)),
    Case("promote_types", lambda t: str(t.promote_types(t.int32, t.float16)).removeprefix("torch."), ()),
    Case("can_cast", lambda t: (t.can_cast(t.float64, t.int32), t.can_cast(t.int32, t.float16)), ()),
    Case("get_default_dtype", lambda t: str(t.get_default_dtype()).removeprefix("torch."), ()),
    Case("from_numpy", lambda t: t.from_numpy(np.arange(3.0)), ()),
    Case("as_tensor", lambda t: t.as_tensor([1, 2], dtype=t.float64), ()),
    Case("meshgrid ij", lambda t, a, b: t.meshgrid(a, b, indexing="ij"), (X[0], Y[:, 0].copy())),
    Case("meshgrid xy", lambda t, a, b, c: t.meshgrid([a, b, c], indexing="xy"), (X[0], Y[:, 0].copy(), X[1, :2].copy())),
    Case("broadcast_tensors", lambda t, a, b: t.broadcast_tensors(a[:, :1], b[0]), (X, Y)),
    Case("broadcast_tensors mismatch", lambda t, a, b: t.broadcast_tensors(a, b[:2]), (X, Y)),
    Case("broadcast_shapes", lambda t: tuple(t.broadcast_shapes((3, 1), (4,), 2)) if False else tuple(t.broadcast_shapes((3, 1), (4,))), ()),
    Case("unique", lambda t: t.unique(t.tensor([3, 1, 3, 2, 1])), ()),
    Case("unique inverse counts", lambda t: t.unique(t.tensor([[3, 1], [3, 2]]), return_inverse=True, return_counts=True), ()),
    Case("unique dim", lambda t: t.tensor([[1, 2], [0, 5], [1, 2]]).unique(dim=0, return_counts=True), ()),
    Case("unique float", lambda t, a: t.unique(a.abs().round()), (X,), grad=False),
    Case("tensor helpers", lambda t, a: (a.stride(), a.t().stride(), a.is_contiguous(), a.t().is_contiguous(), a.element_size(), a.ndimension(), a.nelement(), str(a.device), a.is_cuda, a.cpu() is a, a.expand(2, 3, 4).stride()), (X,)),
    Case("to device and tensor", lambda t, a: (a.to("cpu") is a, a.to(t.tensor([1])), a.to("cpu", t.float64), a.to(device="cpu", dtype=t.float16)), (X,)),
    Case("to copy", lambda t, a: a.to(a.dtype, copy=True) is a, (X,)),
    # -- out= --
    Case("out written", lambda t, a, b: _out(t, t.add, (a, b), t.zeros(3, 4, dtype=a.dtype)), (X, Y), grad=False),
    Case("out resized from empty", lambda t, a: _out(t, t.exp, (a,), t.zeros(0, dtype=a.dtype)), (X,), grad=False),
    Case("out tuple", lambda t, a: _out(t, t.max, (a, 1), (t.zeros(0, dtype=a.dtype), t.zeros(0, dtype=t.long))), (X,), grad=False),
    Case("out refused under autograd", lambda t, a: t.mul(a, 2, out=t.zeros(3, 4, dtype=a.dtype)), (X,)),
    Case("out dtype cannot cast", lambda t, a: t.add(a, a, out=t.zeros(3, 4, dtype=t.long)), (X,), grad=False),
    Case("out no_grad", lambda t, a: _no_grad_out(t, a), (X,)),
    # -- numpy names --
    Case("axis", lambda t, a: (t.sum(a, axis=0), t.amax(a, axis=-1), t.cumsum(a, axis=1), t.softmax(a, axis=0)), (X,)),
    Case("keepdims", lambda t, a: (t.mean(a, 1, keepdims=True), a.std(axis=0, keepdims=True)), (X,)),
    Case("axis and dim", lambda t, a: t.sum(a, 0, axis=1), (X,)),
    # -- nn.functional --
    Case("F.relu inplace", lambda t, a: _inplace(t, "relu", a), (X,), grad=False),
    Case("F.leaky_relu positional inplace", lambda t, a: _inplace(t, "leaky_relu", a, 0.2), (X,), grad=False),
    Case("F.relu_", lambda t, a: t.nn.functional.relu_(a.clone()), (X,), grad=False),
    Case("F.elu alpha", lambda t, a: t.nn.functional.elu(a, alpha=0.5), (X,)),
    Case("F.hardtanh", lambda t, a: t.nn.functional.hardtanh(a, -0.5, 0.5), (X,)),
    Case("F.softmax dim", lambda t, a: t.nn.functional.softmax(a, dim=1), (X,)),
    Case("F.softmax implicit dim", lambda t, a: t.nn.functional.softmax(a), (X,)),
    Case("F.log_softmax implicit dim 3-d", lambda t, a: t.nn.functional.log_softmax(a.reshape(1, 3, 4)), (X,)),
    Case("F.cross_entropy", lambda t, a: t.nn.functional.cross_entropy(a, t.tensor(TARGETS)), (LOGITS,)),
    Case("F.cross_entropy reduce False", lambda t, a: t.nn.functional.cross_entropy(a, t.tensor(TARGETS), reduce=False), (LOGITS,)),
    Case("F.mse_loss size_average False", lambda t, a, b: t.nn.functional.mse_loss(a, b, size_average=False), (X, Y)),
    Case("F.l1_loss reduction", lambda t, a, b: t.nn.functional.l1_loss(a, b, reduction="sum"), (X, Y)),
    Case("F.linear", lambda t, a, w: t.nn.functional.linear(a, w), (X, Y[:2])),
    Case("F.normalize", lambda t, a: t.nn.functional.normalize(a, dim=0), (X,)),
    Case("F.gelu tanh", lambda t, a: t.nn.functional.gelu(a, approximate="tanh"), (X,)),
    Case("F.dropout eval", lambda t, a: t.nn.functional.dropout(a, 0.5, training=False), (X,)),
    Case("F.pad", lambda t, a: t.nn.functional.pad(a, (1, 2)), (X,)),
    Case("F.one_hot", lambda t: t.nn.functional.one_hot(t.tensor([0, 2, 1])), ()),
    # -- linalg --
    Case("linalg.norm vector", lambda t, a: t.linalg.norm(a.reshape(-1)), (X,)),
    Case("linalg.norm flattened", lambda t, a: t.linalg.norm(a), (X,)),
    Case("linalg.norm matrix ord", lambda t, a: t.linalg.norm(a, ord=1), (X,)),
    Case("linalg.norm dims", lambda t, a: t.linalg.norm(a, dim=(0, 1), keepdim=True), (X,)),
    Case("linalg.norm dim", lambda t, a: t.linalg.norm(a, 3, dim=1), (X,)),
    Case("linalg.norm ord inf 3-d refused", lambda t, a: t.linalg.norm(a.reshape(1, 3, 4), ord=2), (X,)),
    Case("linalg.cross default dim", lambda t, a, b: t.linalg.cross(a, b), (V3, V3[::-1].copy())),
    Case("linalg.diagonal default dims", lambda t, a: t.linalg.diagonal(a.reshape(2, 2, 3), offset=1), (X,)),
    Case("linalg.inv det", lambda t, a: (t.linalg.inv(a), t.linalg.det(a)), (SQ,)),
    Case("linalg.solve", lambda t, a, b: t.linalg.solve(a, b), (SQ, X[:, :3].T.copy())),
    Case("linalg.vector_norm", lambda t, a: t.linalg.vector_norm(a, ord=1, dim=0), (X,)),
    Case("linalg.svdvals", lambda t, a: t.linalg.svdvals(a), (SQ,)),
    # -- special --
    Case("special.expit", lambda t, a: t.special.expit(a), (X,)),
    Case("special.erfinv", lambda t, a: t.special.erfinv(a / 3), (X,)),
    Case("special.xlogy logit", lambda t, a: (t.special.xlogy(a, a.abs() + 1), t.special.logit(a.sigmoid())), (X,)),
    Case("special.logsumexp", lambda t, a: t.special.logsumexp(a, 1), (X,)),
]  # fmt: skip


def _out(t: Any, fn: Any, args: tuple[Any, ...], out: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fn(*args, out=out)
    same = result is out if not isinstance(out, tuple) else all(r is o for r, o in zip(result, out))
    return same, out


def _no_grad_out(t: Any, a: Any) -> Any:
    out = t.zeros(1, dtype=a.dtype)
    with t.no_grad(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        t.mul(a, 2, out=out)
    return out, [str(w.message).split(" (Triggered internally at ")[0] for w in seen]


def _inplace(t: Any, name: str, a: Any, *args: Any) -> Any:
    x = a.clone()
    if args:
        y = getattr(t.nn.functional, name)(x, *args, True)
    else:
        y = getattr(t.nn.functional, name)(x, inplace=True)
    return y is x, x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_torch_namespace(case: Case, dtype: str) -> None:
    check(case, dtype)


def test_implicit_softmax_dim_warns_as_torch() -> None:
    x = np.ones((2, 3))
    with warnings.catch_warnings(record=True) as mine:
        warnings.simplefilter("always")
        engine.nn.functional.softmax(engine.tensor(x))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.nn.functional.softmax(torch.from_numpy(x))
    assert [str(w.message) for w in mine] == [str(w.message) for w in theirs]


def test_namespaces_cover_their_names() -> None:
    """Every name the namespaces export is callable, and PyTorch has it there too."""
    for module, theirs in (
        (engine.nn.functional, torch.nn.functional),
        (engine.linalg, torch.linalg),
        (engine.special, torch.special),
    ):
        names = [n for n in vars(module) if not n.startswith("_") and callable(vars(module)[n])]
        names = [n for n in names if vars(module)[n].__module__ != "typing"]
        exported = [n for n in names if not isinstance(vars(module)[n], type)]
        assert exported
        missing = [n for n in exported if n not in ("Any", "Callable", "Tensor", "annotations")]
        missing = [n for n in missing if not hasattr(theirs, n)]
        assert not missing, f"{module.__name__}: not in PyTorch: {missing}"
