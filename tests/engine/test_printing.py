"""Tensor ``repr`` is PyTorch's, character for character: notation (integer, fixed,
scientific), padding, wrapping at 80 columns, summarization past 1000 elements,
and the ``dtype=``/``size=``/``grad_fn=``/``requires_grad=`` suffixes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import engine as E

nan, inf = float("nan"), float("inf")

KNOWN = [
    (E.tensor([2.0, 4.0]), "tensor([2., 4.])"),
    (E.tensor(3.5), "tensor(3.5000)"),
    (E.tensor(-0.0), "tensor(-0.)"),
    (E.tensor([1.0, nan]), "tensor([1., nan])"),
    (E.tensor([1.0, 1001.0]), "tensor([1.0000e+00, 1.0010e+03])"),
    (E.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (E.tensor([0.5, 100.5]), "tensor([  0.5000, 100.5000])"),
    (E.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (E.tensor([True, False]), "tensor([ True, False])"),
    (E.tensor([1.0, 2.0], dtype="float64"), "tensor([1., 2.], dtype=torch.float64)"),
    (E.zeros(0), "tensor([])"),
    (E.zeros(2, 0), "tensor([], size=(2, 0))"),
    (E.zeros(0, dtype="int64"), "tensor([], dtype=torch.int64)"),
    (E.zeros(3, 0, dtype="bool"), "tensor([], size=(3, 0), dtype=torch.bool)"),
    (E.tensor([[1.0, 2.0], [3.0, 4.5]]), "tensor([[1.0000, 2.0000],\n        [3.0000, 4.5000]])"),
    (E.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (E.tensor([1.0, 2.0], requires_grad=True) ** 2, "tensor([1., 4.], grad_fn=<PowBackward0>)"),
]


@pytest.mark.parametrize(("t", "text"), KNOWN, ids=[k[1] for k in KNOWN])
def test_known_reprs(t: E.Tensor, text: str) -> None:
    assert repr(t) == text
    assert str(t) == text


def test_summarizes_past_the_threshold() -> None:
    text = repr(E.arange(2000.0))
    assert (
        text
        == "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"
    )


def _cases() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        np.array([1.0, 1000.0]),
        np.array([1e8, 1.0]),
        np.array([1e9]),
        np.array([1e-4, 1.0]),
        np.array([0.0, 0.0]),
        np.array([123456.789]),
        np.array([inf, -inf, nan]),
        np.array([1.5, nan, inf]),
        np.array([1e20, -1e-20]),
        np.array(inf),
        np.array([12345678.5]),
        rng.standard_normal((3, 4)),
        rng.standard_normal((2, 3, 4)),
        rng.standard_normal(30),
        rng.standard_normal(2000),
        rng.standard_normal((50, 50)),
        rng.standard_normal((3, 400)),
        rng.standard_normal((10, 10, 20)),
        rng.standard_normal(1001) * 1e5,
        rng.standard_normal((2, 2)) * 1e-6,
        np.arange(100.0),
        np.arange(12.0).reshape(3, 4) * 1e10,
        rng.standard_normal((1, 1, 1)),
        np.zeros((4, 0)),
        np.zeros((2, 0, 3)),
        np.array([-1000000, 2]),
        np.array(7),
        np.array(True),
        rng.integers(-100, 100, (5, 30)),
        rng.integers(0, 2, 40).astype(bool),
        rng.integers(-5, 5, 3000),
        np.zeros((2, 0), np.int64),
    ]


def _torch_cases() -> list[Any]:
    """Float cases in both float dtypes, plain, requiring grad and with a grad_fn;
    integer and bool cases once (they cannot require grad)."""
    out = []
    for data in _cases():
        label = f"{data.dtype.kind}{list(data.shape)}"
        if data.dtype.kind != "f":
            out.append(pytest.param(data, "plain", id=f"{label}-plain"))
            continue
        for dtype in ("float32", "float64"):
            for mode in ("plain", "requires_grad", "grad_fn"):
                out.append(pytest.param(data.astype(dtype), mode, id=f"{label}-{dtype}-{mode}"))
    return out


@pytest.mark.parametrize(("data", "mode"), _torch_cases())
def test_repr_matches_torch(data: np.ndarray, mode: str, torch: Any) -> None:
    mine, theirs = E.Tensor(data.copy()), torch.from_numpy(data.copy())
    if mode != "plain":
        mine.requires_grad_()
        theirs.requires_grad_()
    if mode == "grad_fn":
        mine, theirs = mine * 2, theirs * 2
    assert repr(mine) == repr(theirs)
