"""More of PyTorch's ``TestAutograd`` (test/test_autograd.py), ported as in
``test_autograd_port``: each case written once against a namespace, run with torch
and with the engine (``_both``); values, gradients and error class + message agree.
Issue 15 listed these as still differing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.engine.test_autograd_api import _both

T = SimpleNamespace


@pytest.mark.parametrize("reads", [1, 2])
def test_clear_saved_tensors_on_access(torch: Any, reads: int) -> None:
    """With ``clear_saved_tensors_on_access`` the node drops its saved tensors when
    backward reads them: a second read (in the same backward, or a second backward
    with ``retain_graph``) is torch's RuntimeError."""

    def scenario(t: T) -> Any:
        class Mul2(t.lib.autograd.Function):
            clear_saved_tensors_on_access = True

            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                for _ in range(reads):
                    (x,) = ctx.saved_tensors
                return 2 * g * x

        x = t.lib.tensor([1.0, 3.0], requires_grad=True)
        y = Mul2.apply(x).sum()
        y.backward(retain_graph=True)
        first = x.grad.clone()
        y.backward()  # the saved tensor is gone: torch refuses
        return [first, x.grad]

    _both(torch, scenario)


def test_clear_saved_tensors_on_access_off_by_default(torch: Any) -> None:
    def scenario(t: T) -> Any:
        class Mul2(t.lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                (x2,) = ctx.saved_tensors
                return g * (x + x2)

        x = t.lib.tensor([1.0, 3.0], requires_grad=True)
        y = Mul2.apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return [Mul2.clear_saved_tensors_on_access, x.grad]

    _both(torch, scenario)
