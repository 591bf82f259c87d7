"""PyTorch as the oracle: one place that imports torch, turns op samples into
engine and torch calls, and compares the results.

    from tests.engine.torch_oracle import require_torch, call_engine, call_torch, assert_same
    torch = require_torch()  # module level, or use the session fixture ``torch`` (conftest)

A missing torch skips, except with ``REQUIRE_TORCH=1`` (set by CI), where it
fails the run. A ``Sample`` becomes arguments the same way on both sides:
a float ``np.ndarray`` is a leaf that requires grad, a ``Const`` a tensor that
does not (float constants take the run's dtype, bool/int keep theirs), a list
or tuple holding arrays a list/tuple of tensors; anything else passes as is
(on the torch side a dtype name such as ``"float32"`` becomes ``torch.float32``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

from engine import Tensor
from engine import grad as engine_grad
from engine.registry import Const, OpSpec, Sample

try:
    import torch as _torch
except ImportError:  # pragma: no cover - exercised only without the test extra
    _torch = None

DTYPE_NAMES = (
    "float16",
    "float32",
    "float64",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "bool",
)
# value tolerances (rtol, atol) for engine vs PyTorch, by result dtype
TOLERANCES = {np.dtype(np.float32): (1e-5, 1e-5), np.dtype(np.float64): (1e-7, 1e-7)}


def require_torch() -> Any:
    """The ``torch`` module. Missing: fail under REQUIRE_TORCH=1, skip otherwise."""
    if _torch is None:
        msg = "PyTorch is not installed (the `test` extra pins torch==2.13.0)"
        if os.environ.get("REQUIRE_TORCH") == "1":
            pytest.fail(msg + "; REQUIRE_TORCH=1 makes that a failure", pytrace=False)
        pytest.skip(msg, allow_module_level=True)
    return _torch


# -- conversions ---------------------------------------------------------------------------


def torch_dtype(dtype: Any) -> Any:
    return getattr(require_torch(), np.dtype(dtype).name)


def numpy_dtype(tdtype: Any) -> np.dtype:
    return np.dtype(str(tdtype).removeprefix("torch."))


def to_torch(t: Tensor | np.ndarray, requires_grad: bool | None = None) -> Any:
    """A torch leaf with the same values and dtype (requires_grad copied unless given)."""
    torch = require_torch()
    data = t.data if isinstance(t, Tensor) else np.asarray(t)
    out = torch.from_numpy(np.array(data, copy=True))
    if requires_grad is None:
        requires_grad = isinstance(t, Tensor) and t.requires_grad
    return out.requires_grad_(bool(requires_grad))


def from_torch(t: Any, requires_grad: bool | None = None) -> Tensor:
    """An engine leaf with the torch tensor's values and dtype."""
    out = Tensor(t.detach().numpy().copy())
    if requires_grad if requires_grad is not None else t.requires_grad:
        out.requires_grad_(True)
    return out


def to_numpy(t: Any) -> np.ndarray:
    if isinstance(t, Tensor):
        return t.data
    if _torch is not None and isinstance(t, _torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t)


# -- samples to calls ----------------------------------------------------------------------


class Call(NamedTuple):
    """What ``call_engine``/``call_torch`` return: the op's result and the leaves
    that require grad (in argument order), for backward and grad comparisons."""

    result: Any
    leaves: list[Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _holds_arrays(value: Any) -> bool:
    return any(isinstance(v, (np.ndarray, Const)) for v in value)


def _convert(
    value: Any,
    dtype: np.dtype,
    leaf: Callable[[np.ndarray], Any],
    const: Callable[[np.ndarray], Any],
    other: Callable[[Any], Any],
) -> Any:
    if isinstance(value, Const):
        arr = np.asarray(value.value)
        return const(arr.astype(dtype) if arr.dtype.kind == "f" else arr)
    if isinstance(value, np.floating):  # a 0-d sample that numpy arithmetic unwrapped
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return leaf(value.astype(dtype))
        return const(value)
    if isinstance(value, (list, tuple)) and _holds_arrays(value):
        return type(value)(_convert(v, dtype, leaf, const, other) for v in value)
    return other(value)


def _build(
    sample: Sample, dtype: Any, make: Callable[[np.ndarray, bool], Any], other: Callable[[Any], Any]
) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
    dt = np.dtype(dtype)
    leaves: list[Any] = []

    def leaf(arr: np.ndarray) -> Any:
        t = make(arr, True)
        leaves.append(t)
        return t

    def const(arr: np.ndarray) -> Any:
        return make(arr, False)

    args = tuple(_convert(a, dt, leaf, const, other) for a in sample.args)
    kwargs = {k: _convert(v, dt, leaf, const, other) for k, v in sample.kwargs.items()}
    return args, kwargs, leaves


def engine_inputs(
    sample: Sample, dtype: Any
) -> tuple[tuple[Any, ...], dict[str, Any], list[Tensor]]:
    """Engine arguments for a sample in ``dtype``: (args, kwargs, leaves requiring grad)."""
    return _build(
        sample,
        dtype,
        lambda arr, grad: Tensor(np.array(arr, copy=True), requires_grad=grad),
        lambda v: v,
    )


def torch_inputs(sample: Sample, dtype: Any) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
    """Torch arguments for a sample in ``dtype``, built exactly like ``engine_inputs``."""
    torch = require_torch()

    def other(v: Any) -> Any:
        if isinstance(v, str) and v.removeprefix("torch.") in DTYPE_NAMES:
            return getattr(torch, v.removeprefix("torch."))
        return v

    return _build(
        sample,
        dtype,
        lambda arr, grad: torch.from_numpy(np.array(arr, copy=True)).requires_grad_(grad),
        other,
    )


def torch_function(spec: OpSpec, first: Any = None) -> Callable[..., Any]:
    """PyTorch's spelling of ``spec``: ``spec.torch(torch, *a, **k)`` when callable, a
    (dotted) attribute path of ``torch`` when a string. Otherwise, for an op that is
    also a Tensor method called on a tensor (``first``), the ``torch.Tensor`` method
    (it takes sizes as separate ints, like the engine: ``reshape(x, 2, 3)``), else
    ``torch.<name>``, then ``torch.nn.functional.<name>``."""
    torch = require_torch()
    how = spec.torch
    if callable(how):
        return lambda *a, **k: how(torch, *a, **k)
    name = how if isinstance(how, str) else spec.name
    if "." in name:
        obj: Any = torch
        for part in name.removeprefix("torch.").split("."):
            obj = getattr(obj, part)
        return obj
    namespaces = [torch, torch.nn.functional]
    if how is None and spec.method and isinstance(first, torch.Tensor):
        namespaces.insert(0, torch.Tensor)
    for namespace in namespaces:
        fn = getattr(namespace, name, None)
        if fn is not None:
            return fn
    raise AttributeError(f"PyTorch has no {name!r}; give the op a torch= spelling in @register")


def call_engine(spec: OpSpec, sample: Sample, dtype: Any) -> Call:
    args, kwargs, leaves = engine_inputs(sample, dtype)
    return Call(spec.fn(*args, **kwargs), leaves, args, kwargs)


def call_torch(spec: OpSpec, sample: Sample, dtype: Any) -> Call:
    """Run the sample through PyTorch (see ``torch_function`` for the spelling)."""
    args, kwargs, leaves = torch_inputs(sample, dtype)
    fn = torch_function(spec, args[0] if args else None)
    return Call(fn(*args, **kwargs), leaves, args, kwargs)


# -- comparison ----------------------------------------------------------------------------


def grad_fn_name(t: Any) -> str | None:
    fn = t.grad_fn
    if fn is None:
        return None
    return fn.name if isinstance(t, Tensor) else type(fn).__name__


def _is_seq(x: Any) -> bool:
    return isinstance(x, (list, tuple))


def assert_same(
    engine_result: Any,
    torch_result: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    graph: bool = True,
    path: str = "result",
) -> None:
    """Engine and torch results agree: values (NaN/inf aware, tolerance by dtype),
    dtype, shape and, with ``graph``, requires_grad, is_leaf and the grad_fn name.
    Tuples/lists compare element by element; other values compare equal."""
    torch = require_torch()
    e, t = engine_result, torch_result
    if isinstance(e, Tensor) or isinstance(t, torch.Tensor):
        assert isinstance(e, Tensor), f"{path}: engine gave {type(e).__name__}, torch a Tensor"
        assert isinstance(t, torch.Tensor), f"{path}: engine gave a Tensor, torch {type(t)}"
        ed, td = e.data.dtype, numpy_dtype(t.dtype)
        assert ed == td, f"{path}: dtype {ed} != torch {td}"
        assert tuple(e.shape) == tuple(t.shape), f"{path}: shape {e.shape} != {tuple(t.shape)}"
        if graph:
            pairs = {
                "requires_grad": (e.requires_grad, t.requires_grad),
                "is_leaf": (e.is_leaf, t.is_leaf),
                "grad_fn": (grad_fn_name(e), grad_fn_name(t)),
            }
            for what, (mine, theirs) in pairs.items():
                assert mine == theirs, f"{path}: {what} {mine!r} != torch {theirs!r}"
        _assert_values(e.data, t.detach().numpy(force=True), rtol, atol, path)
        return
    if _is_seq(e) or _is_seq(t) or isinstance(t, torch.Size):
        assert _is_seq(e) and (_is_seq(t) or isinstance(t, torch.Size)), (
            f"{path}: engine gave {type(e).__name__}, torch {type(t).__name__}"
        )
        assert len(e) == len(t), f"{path}: {len(e)} results != torch {len(t)}"
        for k, (a, b) in enumerate(zip(e, t)):
            assert_same(a, b, rtol=rtol, atol=atol, graph=graph, path=f"{path}[{k}]")
        return
    if isinstance(e, float) or isinstance(t, float):
        _assert_values(np.asarray(e), np.asarray(t), rtol, atol, path)
        return
    assert e == t, f"{path}: {e!r} != torch {t!r}"


def _assert_values(
    mine: np.ndarray, theirs: np.ndarray, rtol: float | None, atol: float | None, path: str
) -> None:
    if mine.dtype.kind not in "fc":
        np.testing.assert_array_equal(mine, theirs, err_msg=f"{path}: values differ")
        return
    # a complex result: the tolerance of its parts' dtype, on the complex difference
    part = np.dtype(np.float32) if mine.dtype == np.complex64 else mine.dtype
    if mine.dtype == np.complex128:
        part = np.dtype(np.float64)
    default_rtol, default_atol = TOLERANCES.get(part, (1e-5, 1e-5))
    np.testing.assert_allclose(
        mine,
        theirs,
        rtol=default_rtol if rtol is None else rtol,
        atol=default_atol if atol is None else atol,
        equal_nan=True,
        err_msg=f"{path}: values differ",
    )


# -- what CPU kernels may differ by --------------------------------------------------------

# Both sides pick kernels by CPU: torch by ATEN_CPU_CAPABILITY (default/avx2/avx512),
# numpy its SIMD loops for exp/log/sin/cos (NPY_DISABLE_CPU_FEATURES). Where both
# compute the same formula, the kernels differ by rounding (a vectorized log is not
# glibc's log, a compiler contracts a*b+c into one fma): a few units in the last place.
KERNEL_ULPS = 4
# numpy's AVX-512 loop names (numpy 2.0-2.3 and 2.4+): in a subprocess's environment as
# NPY_DISABLE_CPU_FEATURES they turn numpy's AVX-512 loops off (unknown names are ignored)
NUMPY_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL X86_V4 AVX512_ICL AVX512_SPR"


def torch_runs_avx2_kernels() -> bool:
    """Whether torch dispatches its AVX2 (or AVX-512) kernels in this process; both
    builds run the same AVX2 float32 normal kernel the engine reproduces."""
    return str(require_torch().backends.cpu.get_cpu_capability()) in ("AVX2", "AVX512")


def numpy_runs_avx512_loops() -> bool:
    """Whether numpy runs its AVX-512 loops here (float64 log/sin/cos among them, which
    differ from glibc's, the ones torch calls, by an ulp now and then)."""
    features = np._core._multiarray_umath.__cpu_features__  # type: ignore[attr-defined]
    key = "X86_V4" if "X86_V4" in features else "AVX512F"
    return bool(features.get(key))


def assert_kernel_close(
    mine: Any,
    theirs: Any,
    *,
    ulps: int = KERNEL_ULPS,
    atol: float = 0.0,
    kernel_dependent: Any = None,
    err_msg: str = "",
) -> None:
    """Engine and PyTorch values agree within what CPU kernels can differ by: finite
    values within ``ulps`` units in the last place of the larger (or ``atol``), NaN
    where the other is NaN, an infinity where the other has the same one. At
    ``kernel_dependent`` positions (a boolean mask) the answer itself depends on the
    kernel PyTorch picks (the caller says why: torch's AVX-512 ``gelu(+inf)`` is NaN
    where its AVX2 one is inf; the sign of an infinite or zero result): there either
    side may be NaN, else the magnitudes agree."""
    a, b = np.asarray(to_numpy(mine)), np.asarray(to_numpy(theirs))
    assert a.shape == b.shape, f"{err_msg}: shape {a.shape} != torch {b.shape}"
    assert a.dtype == b.dtype, f"{err_msg}: dtype {a.dtype} != torch {b.dtype}"
    if a.dtype.kind != "f":
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    free = np.zeros(a.shape, bool) if kernel_dependent is None else np.asarray(kernel_dependent)
    free = np.broadcast_to(free, a.shape)
    fa, fb = a[free], b[free]
    either_nan = np.isnan(fa) | np.isnan(fb)
    _assert_ulps(np.abs(fa[~either_nan]), np.abs(fb[~either_nan]), ulps, atol, err_msg)
    _assert_ulps(a[~free], b[~free], ulps, atol, err_msg)


def _assert_ulps(a: np.ndarray, b: np.ndarray, ulps: int, atol: float, err_msg: str) -> None:
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    assert np.array_equal(nan_a, nan_b), f"{err_msg}: NaN at {np.flatnonzero(nan_a != nan_b)}"
    a, b = a[~nan_a], b[~nan_a]
    inf = np.isinf(a) | np.isinf(b)
    assert np.array_equal(a[inf], b[inf]), f"{err_msg}: infinities {a[inf]} vs torch {b[inf]}"
    a, b = a[~inf], b[~inf]
    with np.errstate(over="ignore"):
        room = np.maximum(ulps * np.spacing(np.maximum(np.abs(a), np.abs(b))), atol)
    off = np.abs(a.astype(np.float64) - b.astype(np.float64)) > room
    assert not off.any(), (
        f"{err_msg}: {int(off.sum())} values differ by more than {ulps} ulp (atol {atol}): "
        f"{a[off][:5]} vs torch {b[off][:5]}"
    )


def differentiable_outputs(result: Any) -> list[Any]:
    """The tensors in a result (nested tuples/lists too) that require grad."""
    if _is_seq(result):
        return [t for r in result for t in differentiable_outputs(r)]
    return [result] if getattr(result, "requires_grad", False) else []


# -- comparing a function of several leaves ---------------------------------------------


def _leaves(arrays: list[np.ndarray]) -> tuple[list[Any], list[Any]]:
    torch = require_torch()
    mine = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    return mine, theirs


def _requiring_grad(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [r for r in result if r.requires_grad]
    return [result]


def compare_functions(fn_e: Any, fn_t: Any, *arrays: np.ndarray, second: bool = True) -> None:
    """Values, grad_fn names, first-order gradients and (``second``) a second-order
    vector-Hessian product, engine against torch, in float64: the one helper for
    tests that compare a function of several leaves (not a registered op's sample)."""
    torch = require_torch()
    xs, ts = _leaves(list(arrays))
    out_e, out_t = fn_e(*xs), fn_t(*ts)
    assert_same(out_e, out_t)
    outs_e, outs_t = _requiring_grad(out_e), _requiring_grad(out_t)
    rng = np.random.default_rng(3)
    gs = [rng.uniform(-1, 1, o.shape) for o in outs_e]
    ge = engine_grad(outs_e, xs, [Tensor(g) for g in gs], create_graph=second, allow_unused=True)
    gt = torch.autograd.grad(
        outs_t, ts, [torch.from_numpy(g) for g in gs], create_graph=second, allow_unused=True
    )
    for k, (a, b) in enumerate(zip(ge, gt)):
        assert (a is None) == (b is None), f"input {k}"
        if a is not None:
            assert_same(a, b, graph=False, path=f"grad {k}")
    if not second:
        return
    pairs = [(a, b) for a, b in zip(ge, gt) if a is not None and b is not None and b.requires_grad]
    if not pairs:
        return
    vs = [rng.uniform(-1, 1, a.shape) for a, _ in pairs]
    se = engine_grad([a for a, _ in pairs], xs, [Tensor(v) for v in vs], allow_unused=True)
    st = torch.autograd.grad(
        [b for _, b in pairs], ts, [torch.from_numpy(v) for v in vs], allow_unused=True
    )
    for k, (a, b) in enumerate(zip(se, st)):
        if b is not None and b._is_zerotensor():  # torch's symbolic zero (sign's derivative)
            b = torch.zeros(b.shape, dtype=b.dtype)
        if b is None:
            assert a is None or not np.any(a._data), f"second order {k}: torch None"
        else:
            assert a is not None, f"second order {k}: engine None"
            assert_same(a, b, graph=False, path=f"second order {k}")
