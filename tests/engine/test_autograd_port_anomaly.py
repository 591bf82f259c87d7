"""PyTorch's anomaly-mode tests from ``test/test_autograd.py`` (``TestAutograd``:
``test_anomaly_detect_nan``, ``test_anomaly_mode_no_check_nan``, the grad-mode-like
state functions), ported: each case runs with torch and with the engine; errors (class
and message), warnings and the values of ``.grad`` must agree. The forward traceback a
node keeps (``metadata["traceback_"]``) and the "Error detected in" warning are compared
on the frames of this file (PyTorch's list also holds its own Python frames). Not ported:
the "Previous calculation was induced by" chain of a double backward
(``test_anomaly_assign_parent_cleanup``, ``test_nested_anomaly_printstack_cleanup``)."""

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


def _own_frames(text: str) -> list[str]:
    """The first line of a warning or traceback and the frames of this test file."""
    lines = text.split("\n")
    kept = [lines[0]]
    for i, line in enumerate(lines):
        if __file__ in line:
            kept.append(line.split(", in ")[-1] + " | " + lines[i + 1].strip())
    return kept


def _warned(caught: Any) -> list[list[str]]:
    return [_own_frames(str(w.message)) for w in caught]


def test_anomaly_keeps_the_forward_traceback(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.ones(2, requires_grad=True)
        outside = x * 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with t.lib.autograd.detect_anomaly():
                inside = x * 3
                made = _nan_function(t).apply(x)
        stacks = [_own_frames("".join(y.grad_fn.metadata["traceback_"])) for y in (inside, made)]
        return [sorted(outside.grad_fn.metadata), stacks]

    _both(torch, scenario)


def test_anomaly_grad_warnings(torch: Any) -> None:
    """A backward failing in a node warns with the node's forward traceback."""

    def scenario(t: T) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.lib.autograd.detect_anomaly():
                a = t.lib.ones(5, requires_grad=True)
                d1 = a + 1
                d2 = d1**2
                d1 += 1
                err = _catch(lambda: t.lib.autograd.grad(d2.sum(), a))
        return [err, _warned(caught)]

    _both(torch, scenario)


def test_anomaly_warns_for_an_error_in_a_custom_backward(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class Boom(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 1

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                raise ValueError("boom in backward")

        x = t.lib.ones(2, requires_grad=True)
        out = []
        for on in (False, True):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with t.lib.autograd.set_detect_anomaly(on):
                    y = Boom.apply(x)
                    try:
                        y.sum().backward()
                    except ValueError as exc:
                        out.append([str(exc), _warned(caught)])
        return out

    _both(torch, scenario)


def test_anomaly_nan_error_warns_with_the_traceback(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = t.lib.tensor([0.0, 1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.lib.autograd.detect_anomaly():
                z = x / x
                err = _catch(lambda: z.sum().backward())
        return [err, _warned(caught), x.grad]

    _both(torch, scenario)


def test_anomaly_traceback_read_when_the_mode_is_on_at_backward(torch: Any) -> None:
    """Nodes made with the mode on, backward run with it off: no warning."""

    def scenario(t: T) -> Any:
        x = t.lib.tensor([0.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with t.lib.autograd.detect_anomaly():
                a = x + 1
                d = a**2
            a += 1
            err = _catch(lambda: d.sum().backward())
        return [err, _warned(caught)]

    _both(torch, scenario)
