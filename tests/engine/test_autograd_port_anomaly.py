"""PyTorch's anomaly-mode tests from ``test/test_autograd.py`` (``TestAutograd``:
``test_anomaly_detect_nan``, ``test_anomaly_mode_no_check_nan``, the grad-mode-like
state functions), ported: each case runs with torch and with the engine; errors (class
and message), warnings and the values of ``.grad`` must agree. Not ported: the forward
traceback PyTorch attaches to a node (``test_anomaly_assign_parent_cleanup``,
``test_nested_anomaly_printstack_cleanup``): the engine records none."""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any

from tests.engine.test_autograd_port_functional import _both, _catch

T = SimpleNamespace


def _nan_function(t: T) -> Any:
    class MyFunc(t.lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, inp: Any) -> Any:
            return inp.clone()

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g.clone().mul_(float("nan"))

    return MyFunc


def test_anomaly_detect_nan(torch: Any) -> None:
    def scenario(t: T) -> Any:
        MyFunc = _nan_function(t)
        x = t.lib.ones(2, requires_grad=True)
        MyFunc.apply(x).sum().backward()  # off: the NaN reaches .grad
        before = x.grad
        x.grad = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.lib.autograd.detect_anomaly():
                err = _catch(lambda: MyFunc.apply(x).sum().backward())
        return [before, err, x.grad, [str(w.message) for w in caught][:1]]

    _both(torch, scenario)


def test_anomaly_mode_no_check_nan(torch: Any) -> None:
    def scenario(t: T) -> Any:
        MyFunc = _nan_function(t)
        x = t.lib.ones(2, requires_grad=True)
        with t.lib.autograd.set_detect_anomaly(True, check_nan=False):
            state = [t.lib.is_anomaly_enabled(), t.lib.is_anomaly_check_nan_enabled()]
            MyFunc.apply(x).sum().backward()
        return [state, x.grad, t.lib.is_anomaly_enabled(), t.lib.is_anomaly_check_nan_enabled()]

    _both(torch, scenario)


def test_anomaly_names_the_builtin_node(torch: Any) -> None:
    """The first NaN names the node and the output slot: ``0/0`` (DivBackward0's
    gradient for the divisor), ``sqrt(-1)``, ``log(0) * 0``."""

    def scenario(t: T) -> Any:
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with t.lib.autograd.detect_anomaly():
                y = t.lib.tensor([0.0], requires_grad=True)
                out.append(_catch(lambda: (y / y).sum().backward()))
                z = t.lib.tensor([-1.0, 0.0], requires_grad=True)
                out.append(_catch(lambda: (z.sqrt() * 0).sum().backward()))
                w = t.lib.tensor([0.0], requires_grad=True)
                out.append(_catch(lambda: (w.log() * 0).sum().backward()))
                ok = t.lib.tensor([2.0], requires_grad=True)
                (ok * ok).sum().backward()
        return out + [ok.grad, y.grad, z.grad]

    _both(torch, scenario)


def test_set_detect_anomaly_plain_call_and_restore(torch: Any) -> None:
    def scenario(t: T) -> Any:
        ag = t.lib.autograd
        ag.set_detect_anomaly(True)
        seen = [t.lib.is_anomaly_enabled()]
        with ag.set_detect_anomaly(False):
            seen.append(t.lib.is_anomaly_enabled())
        seen.append(t.lib.is_anomaly_enabled())
        ag.set_detect_anomaly(False)
        return seen + [t.lib.is_anomaly_enabled()]

    _both(torch, scenario)


def test_anomaly_under_grad_create_graph(torch: Any) -> None:
    """The check runs for ``autograd.grad`` and with ``create_graph`` too."""

    def scenario(t: T) -> Any:
        y = t.lib.tensor([0.0, 1.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with t.lib.autograd.detect_anomaly():
                first = _catch(lambda: t.lib.autograd.grad((y / y).sum(), y))
                second = _catch(lambda: t.lib.autograd.grad(y.sqrt().sum(), y, create_graph=True))
        return [first, second]

    _both(torch, scenario)
