"""In-place writes through views and on saved results, from PyTorch's ``TestAutograd``
(test/test_autograd.py: ``test_inplace_on_view_*``, ``test_setitem``,
``test_inplace_view_saved_output`` and kin), ported: CopySlices and regenerated view
nodes, no-grad and multi-output views, saved results modified in place, hooks and
``retain_grad`` around in-place ops, overlapping writes. Each case is written once
against a library and run with torch and the engine."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tests.engine.test_autograd_api import _both


def c1(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = x * 1
    v = y[1:]
    v.mul_(2)
    r = [type(y.grad_fn).__name__, type(v.grad_fn).__name__, y._version, v._version]
    y.sum().backward()
    return r + [x.grad.tolist()]


def c2(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = x * 1
    v = y[1:]
    y.mul_(2)
    r = [type(v.grad_fn).__name__, v._version]
    v.sum().backward()
    return r + [x.grad.tolist()]


def c3(lib: Any) -> Any:
    x = lib.ones(2, 2, requires_grad=True)
    with lib.no_grad():
        v = x[0]
    try:
        v.mul_(2)
    except Exception as e:
        return str(e)


def c4(lib: Any) -> Any:
    x = lib.ones(4, requires_grad=True)
    a, b = (x * 1).split(2)
    try:
        a.mul_(2)
    except Exception as e:
        return str(e)


def c5(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = x.clone()
    y[0] = 5
    y[1:] *= 3
    y.sum().backward()
    return [type(y.grad_fn).__name__, x.grad.tolist(), y._version]


def c6(lib: Any) -> Any:
    x = lib.ones(3, dtype=lib.float64, requires_grad=True)  # exp: exact on every CPU
    y = x * 2
    y.add_(1)
    y.exp_()
    y.sum().backward()
    return [type(y.grad_fn).__name__, x.grad.tolist()]


def c7(lib: Any) -> Any:
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.add_(1)  # exp saved result modified
    try:
        y.sum().backward()
    except Exception as e:
        return str(e)


def c8(lib: Any) -> Any:
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = y.sigmoid()
    w = z * 2
    z.mul_(3)
    try:
        w.sum().backward()
    except Exception as e:
        return str(e)
    return x.grad.tolist()


def c9(lib: Any) -> Any:
    a = lib.ones(2, requires_grad=True)
    b = a.view(2)
    try:
        b.add_(1)
    except Exception as e:
        return str(e)


def c10(lib: Any) -> Any:
    x = lib.ones(2, 3, requires_grad=True)
    y = x * 1
    y.t().mul_(2)
    y.sum().backward()
    return [type(y.grad_fn).__name__, x.grad.tolist()]


def c11(lib: Any) -> Any:
    x = lib.ones(4, requires_grad=True)
    y = x * 1
    v = y.view(2, 2)
    v.detach().zero_()
    r = [y.tolist(), y._version]
    y.sum().backward()
    return r + [x.grad.tolist()]


def c12(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = x * 1
    y.register_hook(lambda g: g * 2)
    y.mul_(3)
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    return x.grad.tolist()


def c13(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = x * 1
    y.retain_grad()
    y.mul_(3)
    y.sum().backward()
    return [y.grad.tolist(), x.grad.tolist()]


def c14(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = x[:2]
    z = y * 2
    z.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [x.grad.tolist(), y.grad]


def c15(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        x.mul_(2)
        x[0] = 7
    return [x.tolist(), x._version, x.is_leaf, x.grad_fn]


def c16(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = x.unsqueeze(0).expand(2, 3)
    try:
        y.mul_(2)
    except Exception as e:
        return str(e)


def c17(lib: Any) -> Any:
    x = lib.ones(3, requires_grad=True)
    y = (x * 1).unsqueeze(0).expand(2, 3)
    try:
        y.mul_(2)
    except Exception as e:
        return str(e)


CASES = {
    "copyslices": c1,
    "base_write_view_regen": c2,
    "nograd_view_of_leaf": c3,
    "split_inplace": c4,
    "setitem": c5,
    "chain_inplace": c6,
    "saved_result_modified": c7,
    "sigmoid_result_inplace": c8,
    "view_of_leaf_inplace": c9,
    "inplace_on_t_view": c10,
    "detach_view_write": c11,
    "hooks_around_inplace": c12,
    "retain_inplace": c13,
    "leaf_view_grad": c14,
    "nograd_leaf_inplace": c15,
    "expand_leafview": c16,
    "expand_overlap": c17,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_inplace_through_views_case(torch: Any, case: str) -> None:
    _both(torch, lambda t: CASES[case](t.lib))
