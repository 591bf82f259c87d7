"""as_strided and Tensor.unfold are views: writes through them reach the base, the
base's history is rebased as PyTorch's (CopySlices), and as_strided never reads
outside the storage (PyTorch's setStorage check). resize_ reshapes memory in place."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine
from engine.errors import BadArgumentsError

pytestmark = pytest.mark.torch


def _pair(torch: Any, data: np.ndarray) -> tuple[Any, Any]:
    return torch.tensor(data, requires_grad=True), engine.tensor(data, requires_grad=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda m, y: m.as_strided(y, (2, 2), (1, 2), 1),
        lambda m, y: y.unfold(1, 2, 2),  # non-overlapping windows
    ],
    ids=["as_strided", "unfold"],
)
def test_write_through_view_rebases_base(make: Any, torch: Any) -> None:
    data = np.arange(9.0).reshape(3, 3)
    tx, ex = _pair(torch, data)
    ty, ey = tx * 2, ex * 2
    tv, ev = make(torch, ty), make(engine, ey)
    assert ev._base is ey and tv._base is ty
    tv.mul_(3)
    ev.mul_(3)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy())
    assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__ == "CopySlices"
    g = np.linspace(-1, 1, 9).reshape(3, 3)
    (tg,) = torch.autograd.grad(ty, tx, torch.tensor(g))
    (eg,) = engine.grad(ey, ex, engine.tensor(g))
    np.testing.assert_allclose(eg.numpy(), tg.numpy())


def test_as_strided_reads_only_its_storage(torch: Any) -> None:
    x = engine.tensor(np.arange(9.0))
    with pytest.raises(BadArgumentsError, match="out of bounds for storage of size 72"):
        engine.as_strided(x, (2, 2), (1, 2), 10)
    with pytest.raises(BadArgumentsError, match="Negative strides"):
        engine.as_strided(x, (2,), (-1,))
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.as_strided(torch.arange(9.0), (2, 2), (1, 2), 10)
    # a view's storage is its base's: reading before the view is allowed, as in PyTorch
    t = torch.arange(9.0)[4:].as_strided((3,), (1,), 0)
    e = engine.as_strided(engine.tensor(np.arange(9.0))[4:], (3,), (1,), 0)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_as_strided_gradient_drops_storage_outside_the_input(torch: Any) -> None:
    tb, eb = _pair(torch, np.arange(6.0))
    tv, ev = tb[2:] * 1, eb[2:] * 1  # not views: their storage is their own
    np.testing.assert_array_equal(
        engine.as_strided(ev, (2, 2), (1, 1)).detach().numpy(),
        torch.as_strided(tv, (2, 2), (1, 1)).detach().numpy(),
    )
    tw, ew = tb[1:], eb[1:]  # views: as_strided reaches the base before them
    (tg,) = torch.autograd.grad(torch.as_strided(tw, (3,), (2,), 0).sum(), tb)
    (eg,) = engine.grad(engine.as_strided(ew, (3,), (2,), 0).sum(), eb)
    np.testing.assert_array_equal(eg.numpy(), tg.numpy())


def test_resize_keeps_leading_memory(torch: Any) -> None:
    data = np.arange(6.0).reshape(2, 3)
    t, e = torch.tensor(data), engine.tensor(data)
    for shape in [(3, 2), (4,), (1, 1)]:
        np.testing.assert_array_equal(
            e.clone().resize_(shape).numpy(), t.clone().resize_(shape).numpy()
        )
    with pytest.raises(BadArgumentsError, match="cannot resize variables that require grad"):
        engine.tensor(data, requires_grad=True).resize_(3)
