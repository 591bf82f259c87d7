"""Convolution, pooling, padding and resampling against PyTorch beyond the op
database's samples: PyTorch's errors (class and message), non-contiguous inputs,
random shapes and arguments in float32 and float64, double backward."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine as E
from engine.errors import EngineError
from tests.engine.torch_oracle import assert_same, compare, from_torch, to_torch

pytestmark = pytest.mark.torch


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _both(
    torch: Any, fn: Callable[[Any], Any], *arrays: np.ndarray
) -> tuple[BaseException | None, BaseException | None]:
    """Run ``fn(ns, *tensors)`` with torch.nn.functional and with the engine; the two
    exceptions raised (or None)."""
    caught: list[BaseException | None] = []
    for ns, make in ((torch.nn.functional, torch.tensor), (E, E.tensor)):
        try:
            fn(ns, *[make(a) for a in arrays])
        except Exception as exc:  # noqa: BLE001 - compared below
            caught.append(exc)
        else:
            caught.append(None)
    return caught[0], caught[1]


F32 = np.float32
ERRORS: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "conv2d 3-d input, wrong channels": (
        lambda F, x, w: F.conv2d(x, w),
        (randn(2, 3, 8), randn(4, 3, 3, 3)),
    ),
    "conv2d 2-d input": (lambda F, x, w: F.conv2d(x, w), (randn(3, 8), randn(4, 3, 3, 3))),
    "conv2d 5-d input": (lambda F, x, w: F.conv2d(x, w), (randn(1, 2, 3, 8, 8), randn(4, 3, 3, 3))),
    "conv2d channels": (lambda F, x, w: F.conv2d(x, w), (randn(2, 5, 8, 8), randn(4, 3, 3, 3))),
    "conv2d 3-d weight": (lambda F, x, w: F.conv2d(x, w), (randn(2, 3, 8, 8), randn(4, 3, 3))),
    "conv2d kernel too big": (
        lambda F, x, w: F.conv2d(x, w),
        (randn(2, 3, 2, 2), randn(4, 3, 3, 3)),
    ),
    "conv2d groups do not divide": (
        lambda F, x, w: F.conv2d(x, w, groups=2),
        (randn(2, 4, 8, 8), randn(3, 2, 3, 3)),
    ),
    "conv2d groups 0": (
        lambda F, x, w: F.conv2d(x, w, groups=0),
        (randn(2, 4, 8, 8), randn(4, 2, 3, 3)),
    ),
    "conv2d stride 0": (
        lambda F, x, w: F.conv2d(x, w, stride=0),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3)),
    ),
    "conv2d negative padding": (
        lambda F, x, w: F.conv2d(x, w, padding=-1),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3)),
    ),
    "conv2d dilation 0": (
        lambda F, x, w: F.conv2d(x, w, dilation=0),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3)),
    ),
    "conv2d bias size": (
        lambda F, x, w, b: F.conv2d(x, w, b),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3), randn(3)),
    ),
    "conv2d same with stride": (
        lambda F, x, w: F.conv2d(x, w, padding="same", stride=2),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3)),
    ),
    "conv2d bad padding string": (
        lambda F, x, w: F.conv2d(x, w, padding="foo"),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3)),
    ),
    "conv2d stride of 3 values": (
        lambda F, x, w: F.conv2d(x, w, stride=(1, 1, 1)),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3)),
    ),
    "conv2d dtypes differ": (
        lambda F, x, w: F.conv2d(x, w),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3).astype(np.float64)),
    ),
    "conv_transpose2d channels": (
        lambda F, x, w: F.conv_transpose2d(x, w),
        (randn(2, 3, 8, 8), randn(4, 3, 3, 3)),
    ),
    "conv_transpose2d output_padding too big": (
        lambda F, x, w: F.conv_transpose2d(x, w, output_padding=1),
        (randn(2, 3, 8, 8), randn(3, 4, 3, 3)),
    ),
    "conv_transpose2d padding string": (
        lambda F, x, w: F.conv_transpose2d(x, w, padding="same"),
        (randn(2, 3, 8, 8), randn(3, 4, 3, 3)),
    ),
    "max_pool2d padding over half the kernel": (
        lambda F, x: F.max_pool2d(x, 2, padding=2),
        (randn(2, 3, 8, 8),),
    ),
    "max_pool2d 2-d input": (lambda F, x: F.max_pool2d(x, 2), (randn(8, 8),)),
    "max_pool2d output too small": (lambda F, x: F.max_pool2d(x, 3), (randn(1, 1, 2, 2),)),
    "max_pool2d stride 0": (lambda F, x: F.max_pool2d(x, 2, stride=0), (randn(1, 1, 4, 4),)),
    "max_pool2d dilation 0": (lambda F, x: F.max_pool2d(x, 2, dilation=0), (randn(1, 1, 4, 4),)),
    "max_pool1d 1-d input": (lambda F, x: F.max_pool1d(x, 2), (randn(8),)),
    "avg_pool2d padding over half the kernel": (
        lambda F, x: F.avg_pool2d(x, 2, padding=2),
        (randn(2, 3, 8, 8),),
    ),
    "avg_pool2d output too small": (lambda F, x: F.avg_pool2d(x, 3), (randn(1, 1, 2, 2),)),
    "avg_pool2d divisor 0": (
        lambda F, x: F.avg_pool2d(x, 2, divisor_override=0),
        (randn(1, 1, 4, 4),),
    ),
    "avg_pool2d 2-d input": (lambda F, x: F.avg_pool2d(x, 2), (randn(8, 8),)),
    "avg_pool1d 1-d input": (lambda F, x: F.avg_pool1d(x, 2), (randn(8),)),
    "adaptive_avg_pool2d 1-d input": (lambda F, x: F.adaptive_avg_pool2d(x, 2), (randn(8),)),
    "adaptive_avg_pool2d 3 sizes": (
        lambda F, x: F.adaptive_avg_pool2d(x, (2, 2, 2)),
        (randn(1, 2, 4, 4),),
    ),
    "adaptive_avg_pool2d negative size": (
        lambda F, x: F.adaptive_avg_pool2d(x, -1),
        (randn(1, 2, 4, 4),),
    ),
    "adaptive_avg_pool1d 1-d input": (lambda F, x: F.adaptive_avg_pool1d(x, 2), (randn(4),)),
    "adaptive_avg_pool1d 2 sizes": (
        lambda F, x: F.adaptive_avg_pool1d(x, (2, 2)),
        (randn(1, 1, 4),),
    ),
    "adaptive_max_pool2d 1-d input": (lambda F, x: F.adaptive_max_pool2d(x, 2), (randn(8),)),
    "unfold 2-d input": (lambda F, x: F.unfold(x, 2), (randn(3, 8),)),
    "unfold kernel too big": (lambda F, x: F.unfold(x, 3), (randn(1, 1, 2, 2),)),
    "fold wrong block count": (lambda F, x: F.fold(x, (3, 3), 2), (randn(1, 4, 5),)),
    "fold channels not divisible": (lambda F, x: F.fold(x, (3, 3), 2), (randn(1, 5, 4),)),
    "pad odd length": (lambda F, x: F.pad(x, (1,)), (randn(2, 3),)),
    "pad too long": (lambda F, x: F.pad(x, (1, 1, 1, 1, 1, 1)), (randn(2, 3),)),
    "pad negative below zero": (lambda F, x: F.pad(x, (-2, -2)), (randn(2, 3),)),
    "pad reflect too big": (lambda F, x: F.pad(x, (3, 3), mode="reflect"), (randn(1, 2, 3),)),
    "pad reflect 2-d height too big": (
        lambda F, x: F.pad(x, (1, 1, 3, 3), mode="reflect"),
        (randn(1, 2, 3, 3),),
    ),
    "pad reflect 2-d width too big": (
        lambda F, x: F.pad(x, (3, 3, 1, 1), mode="reflect"),
        (randn(1, 2, 3, 3),),
    ),
    "pad reflect 3-d depth too big": (
        lambda F, x: F.pad(x, (1, 1, 1, 1, 3, 3), mode="reflect"),
        (randn(1, 2, 3, 3, 3),),
    ),
    "pad reflect 1-d input": (lambda F, x: F.pad(x, (1, 1), mode="reflect"), (randn(3),)),
    "pad replicate 2-d input, 4 pads": (
        lambda F, x: F.pad(x, (1, 2, 1, 1), mode="replicate"),
        (randn(5, 4),),
    ),
    "pad replicate empty dim": (
        lambda F, x: F.pad(x, (1, 1), mode="replicate"),
        (randn(1, 0, 3),),
    ),
    "pad circular wraps twice": (
        lambda F, x: F.pad(x, (4, 4), mode="circular"),
        (randn(1, 2, 3),),
    ),
    "pad unknown mode": (lambda F, x: F.pad(x, (1, 1), mode="foo"), (randn(1, 2, 3),)),
    "interpolate size and scale": (
        lambda F, x: F.interpolate(x, size=3, scale_factor=2),
        (randn(1, 1, 4),),
    ),
    "interpolate neither": (lambda F, x: F.interpolate(x), (randn(1, 1, 4),)),
    "interpolate bilinear on 3-d": (
        lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        (randn(1, 1, 4),),
    ),
    "interpolate linear on 4-d": (
        lambda F, x: F.interpolate(x, scale_factor=2, mode="linear"),
        (randn(1, 1, 4, 4),),
    ),
    "interpolate nearest with align_corners": (
        lambda F, x: F.interpolate(x, scale_factor=2, align_corners=True),
        (randn(1, 1, 4),),
    ),
    "interpolate unknown mode": (
        lambda F, x: F.interpolate(x, scale_factor=2, mode="foo"),
        (randn(1, 1, 4),),
    ),
    "interpolate size of 3 for 2 dims": (
        lambda F, x: F.interpolate(x, size=(2, 2, 2)),
        (randn(1, 1, 4, 4),),
    ),
    "interpolate scales of 3 for 2 dims": (
        lambda F, x: F.interpolate(x, scale_factor=(2, 2, 2)),
        (randn(1, 1, 4, 4),),
    ),
    "interpolate 2-d input": (lambda F, x: F.interpolate(x, size=2), (randn(4, 4),)),
    "interpolate size 0": (lambda F, x: F.interpolate(x, size=0), (randn(1, 1, 4),)),
    "interpolate antialias with nearest": (
        lambda F, x: F.interpolate(x, scale_factor=2, antialias=True),
        (randn(1, 1, 4, 4),),
    ),
    "max_pool1d on int64": (lambda F, x: F.max_pool1d(x, 2), (np.arange(8).reshape(1, 8),)),
    "max_pool2d on bool": (lambda F, x: F.max_pool2d(x, 2), (np.ones((1, 4, 4), bool),)),
    "avg_pool2d on bool": (lambda F, x: F.avg_pool2d(x, 2), (np.ones((1, 4, 4), bool),)),
    "adaptive_avg_pool2d on int64": (
        lambda F, x: F.adaptive_avg_pool2d(x, 2),
        (np.arange(16).reshape(1, 4, 4),),
    ),
    "adaptive_max_pool2d on int64": (
        lambda F, x: F.adaptive_max_pool2d(x, 2),
        (np.arange(16).reshape(1, 4, 4),),
    ),
    "unfold on int64": (lambda F, x: F.unfold(x, 2), (np.arange(16).reshape(1, 4, 4),)),
    "interpolate nearest 1-d on int64": (
        lambda F, x: F.interpolate(x, scale_factor=2),
        (np.arange(8).reshape(1, 2, 4),),
    ),
    "interpolate bilinear on int64": (
        lambda F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
        (np.arange(16).reshape(1, 1, 4, 4),),
    ),
    "conv2d on bool": (
        lambda F, x, w: F.conv2d(x, w),
        (np.ones((1, 1, 4, 4), bool), np.ones((1, 1, 2, 2), bool)),
    ),
    "conv_transpose1d on bool": (
        lambda F, x, w: F.conv_transpose1d(x, w),
        (np.ones((1, 1, 4), bool), np.ones((1, 1, 2), bool)),
    ),
    "pad replicate on bool": (
        lambda F, x: F.pad(x, (1, 1), mode="replicate"),
        (np.ones((1, 4), bool),),
    ),
}

_CLASSES = (IndexError, ValueError, TypeError, NotImplementedError, RuntimeError)


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case: str, torch: Any) -> None:
    fn, arrays = ERRORS[case]
    theirs, mine = _both(torch, fn, *arrays)
    assert theirs is not None, f"torch accepts {case}"
    assert mine is not None, f"the engine accepts {case}; torch raised {theirs!r}"
    assert isinstance(mine, EngineError), repr(mine)
    expected = next(c for c in _CLASSES if isinstance(theirs, c))
    assert isinstance(mine, expected), f"{type(mine).__mro__} is not a {expected.__name__}"
    assert str(mine) == str(theirs)


# -- random shapes and arguments ---------------------------------------------------------------


def _compare(
    torch: Any,
    fn: Callable[..., Any],
    arrays: list[np.ndarray],
    dtype: str,
    *,
    transpose: bool = False,
    seed: int = 0,
) -> None:
    """The oracle's ``compare`` over ``arrays`` in ``dtype``, laid out non-contiguously
    with ``transpose``; an invalid draw must be refused alike."""
    arrays = [a.astype(dtype) for a in arrays]
    if transpose:  # the same values, laid out non-contiguously (last two dims swapped)
        arrays = [
            np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2) if a.ndim > 1 else a
            for a in arrays
        ]
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        compare(
            lambda *x: fn(E, *x), lambda *x: fn(torch.nn.functional, *x), *arrays, seed=seed, **tol
        )


def _conv_case(rng: np.random.Generator, dims: int, transposed: bool) -> tuple[Any, list[Any]]:
    groups = int(rng.choice([1, 2]))
    cin, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    kernel = tuple(int(k) for k in rng.integers(1, 4, dims))
    stride = tuple(int(s) for s in rng.integers(1, 3, dims))
    dilation = tuple(int(d) for d in rng.integers(1, 3, dims))
    padding = tuple(int(p) for p in rng.integers(0, 2, dims))
    size = tuple(int(d * (k - 1) + 1 + rng.integers(0, 4)) for k, d in zip(kernel, dilation))
    batch = int(rng.integers(1, 3))
    x = rng.standard_normal((batch, cin, *size))
    b = rng.standard_normal(cout)
    name = f"conv_transpose{dims}d" if transposed else f"conv{dims}d"
    if transposed:
        w = rng.standard_normal((cin, cout // groups, *kernel))
        outpad = tuple(int(rng.integers(0, max(s, d))) for s, d in zip(stride, dilation))
        # an empty output: float32 grouped PyTorch returns it, float64 refuses; not drawn
        padding = tuple(
            p if (i - 1) * s - 2 * p + d * (k - 1) + o + 1 > 0 else 0
            for i, s, p, d, k, o in zip(size, stride, padding, dilation, kernel, outpad)
        )
        kw = dict(
            stride=stride, padding=padding, output_padding=outpad, groups=groups, dilation=dilation
        )
    else:
        w = rng.standard_normal((cout, cin // groups, *kernel))
        pad: Any = "same" if rng.random() < 0.25 and stride == (1,) * dims else padding
        kw = dict(
            stride=1 if pad == "same" else stride, padding=pad, dilation=dilation, groups=groups
        )

    def fn(F: Any, x: Any, w: Any, b: Any) -> Any:
        return getattr(F, name)(x, w, b, **kw)

    return fn, [x, w, b]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name", ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d"]
)
def test_random_convolutions_match_torch(name: str, dtype: str, torch: Any) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    dims = int(name[-2])
    for i in range(12):
        fn, arrays = _conv_case(rng, dims, "transpose" in name)
        _compare(torch, fn, arrays, dtype, transpose=i % 3 == 0, seed=i)


def _pool_case(rng: np.random.Generator, name: str) -> tuple[Any, list[Any]]:
    k = int(rng.integers(1, 4))
    s = int(rng.integers(1, 4))
    p = int(rng.integers(0, k // 2 + 1))
    d = int(rng.integers(1, 3))
    ceil = bool(rng.random() < 0.5)
    size = int(d * (k - 1) + 1 + rng.integers(0, 5))
    shape = (int(rng.integers(1, 3)), 2, size, size + int(rng.integers(0, 3)))
    # distinct values: the max of each window is unique, as gradients need
    x = rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0
    if name == "max_pool2d":
        return (
            lambda F, x: F.max_pool2d(x, k, s, p, d, ceil, return_indices=True),
            [x],
        )
    if name == "max_pool1d":
        return (lambda F, x: F.max_pool1d(x[:, :, 0], k, s, p, d, ceil, True), [x])
    if name == "avg_pool2d":
        include = bool(rng.random() < 0.5)
        div = int(rng.integers(1, 5)) if rng.random() < 0.3 else None
        return (lambda F, x: F.avg_pool2d(x, k, s, p, ceil, include, div), [x])
    if name == "avg_pool1d":
        include = bool(rng.random() < 0.5)
        return (lambda F, x: F.avg_pool1d(x[:, :, 0], k, s, p, ceil, include), [x])
    out = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    if name == "adaptive_avg_pool2d":
        return (lambda F, x: F.adaptive_avg_pool2d(x, out), [x])
    if name == "adaptive_max_pool2d":
        return (lambda F, x: F.adaptive_max_pool2d(x, out, True), [x])
    return (lambda F, x: F.adaptive_avg_pool1d(x[:, :, 0], out[0]), [x])


POOLS = [
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", POOLS)
def test_random_pooling_matches_torch(name: str, dtype: str, torch: Any) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    for i in range(12):
        fn, arrays = _pool_case(rng, name)
        _compare(torch, fn, arrays, dtype, transpose=i % 3 == 0, seed=i)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_random_padding_matches_torch(mode: str, dtype: str, torch: Any) -> None:
    rng = np.random.default_rng(sum(map(ord, mode)))
    for i in range(12):
        n = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(2, 5, n + 1 + int(rng.random() < 0.5)))
        pads = []
        for size in reversed(shape[-n:]):
            if mode in ("reflect", "circular"):  # a crop of one, a pad inside the rest
                crop = int(rng.integers(-1, 1)) if size > 2 else 0
                most = size - 1 + crop - (mode == "reflect")
                pair = [crop, int(rng.integers(0, most + 1))]
                pads += pair if rng.random() < 0.5 else pair[::-1]
                continue
            lo = -1 if mode == "replicate" else -(size // 2)
            pads += [int(rng.integers(lo, size + 1)), int(rng.integers(lo, size + 1))]
        if mode == "replicate":
            pads = [max(p, 0) for p in pads]
        value = float(rng.standard_normal()) if mode == "constant" else None
        x = rng.standard_normal(shape)

        def fn(F: Any, x: Any, pads: Any = tuple(pads), value: Any = value) -> Any:
            return F.pad(x, pads, mode=mode, value=value)

        _compare(torch, fn, [x], dtype, transpose=i % 3 == 0, seed=i)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear", "bilinear", "trilinear"])
def test_random_interpolation_matches_torch(mode: str, dtype: str, torch: Any) -> None:
    rng = np.random.default_rng(sum(map(ord, mode)))
    dims = {"linear": 1, "bilinear": 2, "trilinear": 3}.get(mode, int(rng.integers(1, 4)))
    for i in range(12):
        shape = (int(rng.integers(1, 3)), 2, *(int(s) for s in rng.integers(1, 6, dims)))
        kw: dict[str, Any] = {"mode": mode}
        if rng.random() < 0.5:
            kw["size"] = tuple(int(s) for s in rng.integers(1, 9, dims))
        else:
            kw["scale_factor"] = tuple(
                float(s) for s in rng.choice([0.5, 0.7, 1.3, 1.7, 2.0, 3.0], dims)
            )
            kw["recompute_scale_factor"] = bool(rng.random() < 0.3)
        if mode in ("linear", "bilinear", "trilinear"):
            kw["align_corners"] = bool(rng.random() < 0.5)
        x = rng.standard_normal(shape)
        _compare(torch, lambda F, x, kw=kw: F.interpolate(x, **kw), [x], dtype, seed=i)


# -- double backward, warnings, edge cases ------------------------------------------------------


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
def test_double_backward_matches_torch(transposed: bool, torch: Any) -> None:
    """d/d(x, w) of ||grad_x||² + ||grad_w||², through create_graph, equals torch's."""
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2, 4, 5, 6))
    w0 = rng.standard_normal((4, 2, 3, 2))
    name = "conv_transpose2d" if transposed else "conv2d"
    results = []
    for mod, ns, make in ((torch, torch.nn.functional, to_torch), (E, E, E.Tensor)):
        x = make(x0, requires_grad=True)
        w = make(w0, requires_grad=True)
        y = getattr(ns, name)(x, w, stride=2, padding=1, groups=2)
        gx, gw = (
            mod.autograd.grad((y * y).sum(), (x, w), create_graph=True)
            if mod is torch
            else (E.grad((y * y).sum(), (x, w), create_graph=True))
        )
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        results.append((x.grad, w.grad))
    (tgx, tgw), (egx, egw) = results
    assert_same(egx, tgx, graph=False)
    assert_same(egw, tgw, graph=False)


def test_same_padding_warns_as_torch(torch: Any) -> None:
    x, w = randn(1, 1, 6, 6), randn(1, 1, 4, 4)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding="same")
    with warnings.catch_warnings(record=True) as mine:
        warnings.simplefilter("always")
        E.conv2d(E.tensor(x), E.tensor(w), padding="same")
    assert [str(m.message) for m in mine] == [
        str(t.message).split(" (Triggered internally")[0] for t in theirs
    ]


def test_max_pool_ties_nan_and_infinity_as_torch(torch: Any) -> None:
    """Ties pick the first maximum, NaN wins (the last one), an all -inf window reports
    its first in-bounds position: PyTorch's CPU kernel, index for index."""
    x = np.full((1, 2, 5, 5), -np.inf, dtype=np.float32)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = np.nan
    x[0, 1] = 1.0
    x[0, 1, 3, 3] = 2.0
    for kw in (
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 2, "stride": 1, "padding": 1, "dilation": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    ):
        theirs = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        mine = E.max_pool2d(E.tensor(x), return_indices=True, **kw)
        np.testing.assert_array_equal(mine[1].numpy(), theirs[1].numpy())
        np.testing.assert_array_equal(mine[0].numpy(), theirs[0].numpy())


def test_adaptive_max_pool_nan_and_infinity_as_torch(torch: Any) -> None:
    x = randn(1, 2, 5, 5)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = np.nan
    x[0, 1, 3:, 3:] = -np.inf
    theirs = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), (2, 3), True)
    mine = E.adaptive_max_pool2d(E.tensor(x), (2, 3), True)
    np.testing.assert_array_equal(mine[1].numpy(), theirs[1].numpy())
    np.testing.assert_array_equal(mine[0].numpy(), theirs[0].numpy())


def test_unbatched_conv_records_torch_graph(torch: Any) -> None:
    """An unbatched input is unsqueezed, convolved and squeezed, as PyTorch does."""
    x, w = randn(3, 6, 6), randn(2, 3, 3, 3)
    mine = E.conv2d(E.tensor(x, requires_grad=True), E.tensor(w))
    theirs = torch.nn.functional.conv2d(to_torch(x, requires_grad=True), torch.tensor(w))
    assert_same(mine, theirs)
    assert mine.grad_fn.name == "SqueezeBackward1"
    assert mine.grad_fn.next_functions[0][0].name == "ConvolutionBackward0"


def test_integer_inputs_pass_through(torch: Any) -> None:
    """Integer tensors convolve and pad as in PyTorch (no grad, same dtype)."""
    x = np.arange(16, dtype=np.int64).reshape(1, 1, 16)
    w = np.ones((1, 1, 3), dtype=np.int64)
    assert_same(
        E.conv1d(E.tensor(x), E.tensor(w)),
        torch.nn.functional.conv1d(torch.tensor(x), torch.tensor(w)),
    )
    assert_same(
        E.pad(E.tensor(x), (2, 1), mode="reflect"),
        torch.nn.functional.pad(torch.tensor(x), (2, 1), mode="reflect"),
    )


@pytest.mark.parametrize(
    "op",
    ["max_pool2d", "avg_pool2d", "avg_pool1d", "conv3d", "conv_transpose2d", "pad circular"],
)
def test_integer_results_match_torch(op: str, torch: Any) -> None:
    """Integer inputs where PyTorch's kernels take them: values and dtype (average
    pooling divides truncating toward zero, as C++ integer division does)."""
    x = np.arange(-40, 40, dtype=np.int64).reshape(1, 2, 2, 4, 5)
    calls = {
        "max_pool2d": lambda F, t: F.max_pool2d(t[0, :, 0], 3, 2, 1, return_indices=True),
        "avg_pool2d": lambda F, t: F.avg_pool2d(t[0], (2, 3), 2, 1, True, False),
        "avg_pool1d": lambda F, t: F.avg_pool1d(t[0, 0], 3, 2, 1),
        "conv3d": lambda F, t: F.conv3d(t, t[:, :, :1, :2, :2], padding=1),
        "conv_transpose2d": lambda F, t: F.conv_transpose2d(t[0], t[0, :, :, :2, :2], stride=2),
        "pad circular": lambda F, t: F.pad(t[0], (1, 2, 2, 1), mode="circular"),
    }
    assert_same(calls[op](E, E.tensor(x)), calls[op](torch.nn.functional, torch.tensor(x)))


def test_fold_inverts_unfold_count(torch: Any) -> None:
    """fold(unfold(x)) is x times how many blocks cover each pixel, as in torch."""
    x = randn(2, 3, 5, 6)
    kw = {"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1, "stride": (1, 2)}
    mine = E.fold(E.unfold(from_torch(torch.tensor(x)), **kw), (5, 6), **kw)
    F = torch.nn.functional
    theirs = F.fold(F.unfold(torch.tensor(x), **kw), (5, 6), **kw)
    assert_same(mine, theirs)
