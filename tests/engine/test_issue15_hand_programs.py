"""Programs written by hand of the kinds the random generator draws rarely (issue 15):
hooks and retain_grad on views written in place, ``inputs=`` with non-leaves and
views, backward twice with retained graphs and accumulation, grad of grad with
in-place writes in between, no_grad views. Each runs on ``engine`` and ``torch``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E
from tests.engine.test_semantics import outcome, quiet_grad
from tests.engine.torch_oracle import assert_values, require_torch

torch = require_torch()  # fails instead of skipping under REQUIRE_TORCH=1
pytestmark = pytest.mark.torch


def G(t: Any) -> Any:
    g = quiet_grad(t)
    return None if g is None else g.detach().clone()


def T_(T: Any, v: Any, rg: bool = False) -> Any:
    return T.tensor(np.array(v, dtype=np.float64), requires_grad=rg)


def grad(T: Any, *a: Any, **k: Any) -> Any:
    return (T.autograd.grad if T is torch else T.grad)(*a, **k)


S: dict[str, Any] = {}


def sc(f: Any) -> Any:
    S[f.__name__] = f
    return f


@sc
def hook_on_view_then_inplace(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    v = y[:2]
    seen = []
    v.register_hook(lambda g: seen.append(g.detach().clone()) or g * 3)
    v.mul_(5)
    y.sum().backward()
    return G(x), seen


@sc
def hook_on_base_then_view_inplace(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y[1:].exp_()
    y.sum().backward()
    return G(x)


@sc
def hook_after_inplace_on_view(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    v = y[:2]
    v.mul_(5)
    v.register_hook(lambda g: g * 3)
    (y * T_(T, [1.0, 2, 3])).sum().backward()
    return G(x)


@sc
def retain_grad_view_then_inplace(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    v = y[:2]
    v.retain_grad()
    v.mul_(5)
    (y * T_(T, [1.0, 2, 3])).sum().backward()
    return G(x), G(v), v.grad_fn is not None


@sc
def retain_grad_base_then_view_inplace(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    y.retain_grad()
    y[0].mul_(3)
    (y * T_(T, [1.0, 2, 3])).sum().backward()
    return G(x), G(y)


@sc
def retain_grad_view_base_inplace(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    v = y[1:]
    v.retain_grad()
    y.mul_(3)
    (v * T_(T, [1.0, 2])).sum().backward()
    return G(x), G(v)


@sc
def inputs_nonleaf(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    z = y.exp()
    w = z.sum()
    w.backward(inputs=[y, x], retain_graph=True)
    a = (G(y), G(x), G(z))
    w.backward(inputs=[z])
    return a, G(y), G(x), G(z)


@sc
def inputs_view(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    v = y[:2]
    w = (v * v).sum() + y.sum()
    w.backward(inputs=[v])
    return G(v), G(x), G(y)


@sc
def inputs_view_after_inplace(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    v = y[:2]
    v.mul_(2)
    w = (y * y).sum()
    return outcome(lambda: w.backward(inputs=[v]))[0], G(v), G(x)


@sc
def backward_twice_accumulate(T):
    x = T_(T, [1.0, 2, 3], True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    a = G(x)
    x.grad = None
    y.backward()
    r = outcome(lambda: y.backward())
    return a, G(x), r[0], str(r[1]) if r[0] == "error" else None


@sc
def backward_twice_create_graph_accumulate(T):
    x = T_(T, [1.0, 2, 3], True)
    y = (x**3).sum()
    y.backward(create_graph=True)
    g1 = x.grad
    y.backward(create_graph=True)
    return G(x), x.grad is g1, x.grad.requires_grad, x.grad.grad_fn is not None


@sc
def grad_of_grad_inplace_between(T):
    x = T_(T, [1.0, 2, 3], True)
    y = (x.sin() * x).sum()
    (g,) = grad(T, y, [x], create_graph=True)
    h = g * 1
    h.mul_(2)
    (gg,) = grad(T, h.sum(), [x])
    return g.detach(), gg


@sc
def grad_of_grad_inplace_on_grad(T):
    x = T_(T, [1.0, 2, 3], True)
    y = (x.exp() * x).sum()
    (g,) = grad(T, y, [x], create_graph=True)
    g.mul_(2)
    return outcome(lambda: grad(T, g.sum(), [x]))


@sc
def grad_of_grad_inplace_on_input_path(T):
    x = T_(T, [1.0, 2, 3], True)
    a = x * 1
    y = (a.exp()).sum()
    (g,) = grad(T, y, [x], create_graph=True)
    a.add_(1)
    return outcome(lambda: grad(T, g.sum(), [x]))


@sc
def no_grad_view_inplace(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    with T.no_grad():
        v = y[:2]
    return outcome(lambda: v.mul_(2))


@sc
def detach_inplace_then_backward(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x.exp()
    d = y.detach()
    d.zero_()
    return outcome(lambda: y.sum().backward()), G(x)


@sc
def nan_inf_grad(T):
    x = T_(T, [0.0, float("inf"), float("nan")], True)
    y = (x * x.sqrt()).sum() + x.abs().max()
    return outcome(lambda: y.backward()), G(x)


@sc
def hook_returns_modified_retain(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    (y * 3).sum().backward()
    return G(y), G(x)


@sc
def hook_then_retain(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * 2
    y.register_hook(lambda g: g * 2)
    y.retain_grad()
    (y * 3).sum().backward()
    return G(y), G(x)


@sc
def leaf_hook_accumulate(T):
    x = T_(T, [1.0, 2, 3], True)
    x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    (x * 1).sum().backward()
    return G(x)


@sc
def view_of_view_inplace_grad_(T):
    x = T_(T, [[1.0, 2, 3], [4, 5, 6]], True)
    y = x * 1
    v = y.t()[1:]
    w = v[:, 0]
    w.mul_(T_(T, [2.0, 3]))
    (y * y).sum().backward()
    return G(x), type(y.grad_fn).__name__ if T is torch else y.grad_fn.name


@sc
def unfold_view_grad_fn(T):
    x = T_(T, [1.0, 2, 3, 4, 5], True)
    y = x * 1
    v = y.unfold(0, 2, 1)
    v.add_(1)
    (y * T_(T, [1.0, 2, 3, 4, 5])).sum().backward()
    return G(x), y.detach()


@sc
def inputs_with_create_graph_nonleaf(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x * x
    z = (y * y).sum()
    z.backward(inputs=[y], create_graph=True)
    g = y.grad
    return G(y), g.requires_grad, G(x)


@sc
def retain_graph_false_then_grad(T):
    x = T_(T, [1.0, 2, 3], True)
    y = x.exp()
    z = y.sum()
    z.backward()
    return outcome(lambda: grad(T, y.sum(), [x]))[0], outcome(lambda: z.backward())[0]


@sc
def zero_grad_then_accumulate_create_graph(T):
    x = T_(T, [1.0, 2, 3], True)
    y = (x**2).sum()
    y.backward(create_graph=True)
    x.grad.zero_()
    y.backward()
    return G(x)


@pytest.mark.parametrize("name", sorted(S))
def test_hand_written_program_matches_torch(name: str) -> None:
    assert_values(S[name](E), S[name](torch))
