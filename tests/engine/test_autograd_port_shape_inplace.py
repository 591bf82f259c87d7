"""In-place shape ops (``t_``, ``transpose_``, ``swapdims_``, ``swapaxes_``, ``squeeze_``,
``unsqueeze_``, ``as_strided_``) against PyTorch: the tensor itself changes shape and
history, its version is bumped, a leaf that requires grad refuses, and gradients flow
through the new node. Each scenario is written once and run with torch and the engine."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.engine.test_autograd_api import _both

T = SimpleNamespace


def _name(t: Any) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _leaf(t: T, *shape: int) -> Any:
    """A leaf (not a view: a view made a leaf refuses in-place writes differently)."""
    n = 1
    for s in shape:
        n *= s
    return t.lib.arange(float(n), dtype=t.float64).reshape(shape).clone().requires_grad_()


def test_view_made_a_leaf_refuses_inplace(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.arange(6.0).reshape(2, 3).requires_grad_()
        x.mul_(2)

    _both(torch, scenario)


@pytest.mark.parametrize(
    ("shape", "call"),
    [
        ((2, 3), "t_()"),
        ((2, 3), "transpose_(0, 1)"),
        ((2, 3, 1), "transpose_(-1, 0)"),
        ((2, 3), "swapdims_(0, 1)"),
        ((2, 3), "swapaxes_(1, 0)"),
        ((1, 3, 1), "squeeze_()"),
        ((1, 3, 1), "squeeze_(0)"),
        ((1, 3, 1), "squeeze_(-1)"),
        ((1, 3, 1), "squeeze_((0, 2))"),
        ((2, 3), "unsqueeze_(1)"),
        ((2, 3), "unsqueeze_(-1)"),
        ((2, 3), "as_strided_((3,), (2,))"),
        ((2, 3), "as_strided_((2, 2), (1, 2), 1)"),
    ],
)
def test_inplace_view_op_on_a_non_leaf(torch: Any, shape: tuple[int, ...], call: str) -> None:
    def scenario(t: T) -> Any:
        x = _leaf(t, *shape)
        a = x * 2
        r = eval("a." + call)  # noqa: S307 - a fixed table of calls
        weights = t.lib.arange(float(a.numel()), dtype=t.float64).reshape(a.shape)
        (a * weights).sum().backward()
        return [r is a, _name(a), tuple(a.shape), a._version, a.is_leaf, x.grad]

    _both(torch, scenario)


def test_inplace_view_ops_chained(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _leaf(t, 2, 3)
        a = x * 2
        names = []
        for call in ("t_()", "unsqueeze_(0)", "squeeze_()", "transpose_(0, 1)"):
            eval("a." + call)  # noqa: S307
            names.append([_name(a), tuple(a.shape), a._version])
        (a * t.lib.tensor([[1.0, 2.0, 3.0]], dtype=t.float64).t()).sum().backward()
        return [names, x.grad]

    _both(torch, scenario)


def test_inplace_view_op_on_a_leaf(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _leaf(t, 2, 3)
        out = []
        for call in ("t_()", "squeeze_()", "unsqueeze_(0)"):
            try:
                eval("x." + call)  # noqa: S307
            except RuntimeError as exc:
                out.append(str(exc))
        with t.lib.no_grad():
            x.t_()
        out.append([tuple(x.shape), x._version, x.is_leaf, x.requires_grad])
        plain = t.lib.ones(2, 3)
        plain.unsqueeze_(0)
        out.append([tuple(plain.shape), plain._version, plain.requires_grad])
        return out

    _both(torch, scenario)


def test_inplace_view_op_on_a_view(torch: Any) -> None:
    """The view stays a view of its base; a later write through it reaches the base."""

    def scenario(t: T) -> Any:
        x = _leaf(t, 2, 3)
        b = x * 2
        v = b[0]
        v.unsqueeze_(0)
        facts = [_name(v), v._base is b, tuple(v.shape), b._version]
        v.mul_(3)
        facts += [_name(v), _name(b)]
        b.sum().backward()
        return [facts, x.grad, b]

    _both(torch, scenario)


def test_inplace_view_op_bumps_version_of_saved(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _leaf(t, 2, 3)
        z = x * 1
        w = z * z
        z.t_()
        w.sum().backward()

    _both(torch, scenario)


def test_inplace_view_op_keeps_hooks_with_the_old_node(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _leaf(t, 1, 3)
        a = x * 2
        seen: list[Any] = []
        a.register_hook(lambda g: seen.append(tuple(g.shape)))
        a.squeeze_(0)
        (a * t.lib.tensor([1.0, 2.0, 3.0], dtype=t.float64)).sum().backward()
        return [seen, x.grad]

    _both(torch, scenario)


@pytest.mark.xfail(
    strict=True,
    reason="known difference: PyTorch leaves retain_grad and the tensor's hook dict with "
    "the node before an in-place view op (a.grad keeps the old shape (1, 3) after "
    "a.squeeze_(0), and a hook registered after it sees (1, 3)); the engine's retained "
    "grad and later hooks follow the tensor, as for every other in-place op",
)
def test_inplace_view_op_retain_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _leaf(t, 1, 3)
        a = x * 2
        a.retain_grad()
        seen: list[Any] = []
        a.register_hook(lambda g: seen.append(tuple(g.shape)))
        a.squeeze_(0)
        a.register_hook(lambda g: seen.append(tuple(g.shape)))
        (a * t.lib.tensor([1.0, 2.0, 3.0], dtype=t.float64)).sum().backward()
        return [seen, a.grad, x.grad]

    _both(torch, scenario)


def test_inplace_view_op_under_vmap_of_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        f = t.lib.func

        def loss(w: Any, x: Any) -> Any:
            return x.mm(w).squeeze_(0).sum()

        w = t.lib.arange(6.0, dtype=t.float64).reshape(3, 2)
        xs = t.lib.arange(12.0, dtype=t.float64).reshape(4, 1, 3)
        return f.vmap(f.grad(loss), in_dims=(None, 0))(w, xs)

    _both(torch, scenario)
