"""PyTorch as the oracle: the one place tests compare the engine with torch
(tinygrad's ``helper_test_op``): run the same function on both, compare values,
dtypes, shapes, the graph (requires_grad, is_leaf, grad_fn name), gradients, second
order where asked, and errors (class and message).

    from tests.engine.torch_oracle import check, compare, assert_same, assert_same_error
    check(lambda T, x, y: T.matmul(x, y), a, b, second=True)  # T is engine, then torch

A missing torch skips, except with ``REQUIRE_TORCH=1`` (set by CI), where it
fails the run. A ``Sample`` becomes arguments the same way on both sides:
a float (or complex) ``np.ndarray`` is a leaf that requires grad, a ``Const`` a tensor
that does not (float constants take the run's dtype, bool/int keep theirs), a list
or tuple holding arrays a list/tuple of tensors; anything else passes as is
(on the torch side a dtype name such as ``"float32"`` becomes ``torch.float32``).

Tolerances are per dtype (``TOLERANCES``) and fit CPU kernel differences: torch
(``ATEN_CPU_CAPABILITY``) and numpy (its SIMD loops) both pick kernels by CPU, so an
AVX2 and an AVX-512 machine may round the same formula differently by a few ulp;
no comparison here is bit-exact except for integer and bool results.
``assert_kernel_close`` compares in ulps where a test wants that bound stated.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

import engine
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
# value tolerances (rtol, atol) for engine vs PyTorch, by result dtype: a few ulp of
# the dtype times the error growth of short formulas (float16: torch computes in
# float32 and rounds once, numpy may round each step)
TOLERANCES = {
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(np.float32): (1e-5, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
}


def tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for results of ``dtype`` (a complex dtype: its parts')."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        dt = np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    return TOLERANCES.get(dt, (1e-3, 1e-3))


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
        return np.asarray(t.detach().numpy())
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
        return const(arr.astype(dtype) if arr.dtype.kind in "fc" else arr)
    if isinstance(value, np.floating):  # a 0-d sample that numpy arithmetic unwrapped
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":  # a complex array: a sample made complex (the sweep)
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


def _is_torch_tensor(x: Any) -> bool:
    return _torch is not None and isinstance(x, _torch.Tensor)


def values_differ(
    mine: np.ndarray,
    theirs: np.ndarray,
    rtol: float | None = None,
    atol: float | None = None,
    path: str = "result",
) -> str | None:
    """What differs between two arrays of values (None when they agree): floats and
    complex within the dtype's tolerance (NaN equals NaN, an infinity its own sign),
    everything else exactly. The drivers that report rather than assert (the opdb
    harness, the fuzz interpreter) call this; ``assert_same`` does too."""
    mine, theirs = np.asarray(mine), np.asarray(theirs)
    if mine.shape != theirs.shape:
        return f"{path}: shape {mine.shape} != torch {theirs.shape}"
    if mine.dtype.kind not in "fc" and theirs.dtype.kind not in "fc":
        return None if np.array_equal(mine, theirs) else f"{path}: values differ"
    default_rtol, default_atol = tolerance(
        theirs.dtype if theirs.dtype.kind in "fc" else mine.dtype
    )
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(mine, theirs, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    bad = ~close
    return (
        f"{path}: values differ at {int(bad.sum())} of {bad.size} (rtol {rtol}, atol {atol}): "
        f"{mine[bad][:4]} vs torch {theirs[bad][:4]}"
    )


def _messages_agree(mine: BaseException, theirs: BaseException) -> bool:
    """The engine keeps torch's wording; torch's argument parser may add lines below."""
    m, t = str(mine), str(theirs)
    return m == t or m == t.split("\n")[0] or (bool(m) and t.startswith(m))


def assert_same(
    engine_result: Any,
    torch_result: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    graph: bool = True,
    path: str = "result",
    zero_signs: bool = False,
) -> None:
    """Engine and torch results agree: values (NaN/inf aware, tolerance by dtype),
    dtype, shape and, with ``graph``, requires_grad, is_leaf and the grad_fn name.
    Tuples/lists and dicts compare element by element, an exception by class and
    message, numpy arrays (what the client and the service decode) by dtype, shape
    and values; other values compare equal. With ``zero_signs``, a zero result has
    torch's sign (-0.0 stays -0.0)."""
    e, t = engine_result, torch_result
    kw = {"rtol": rtol, "atol": atol, "graph": graph, "zero_signs": zero_signs}
    if isinstance(e, Tensor) or _is_torch_tensor(t):
        if isinstance(e, np.ndarray) and _is_torch_tensor(t):  # a decoded wire tensor
            _assert_arrays(e, t.detach().numpy(force=True), rtol, atol, path, zero_signs)
            return
        assert isinstance(e, Tensor), f"{path}: engine gave {type(e).__name__}, torch {type(t)}"
        assert _is_torch_tensor(t), f"{path}: engine gave a Tensor, torch {type(t).__name__}"
        if graph:
            pairs = {
                "requires_grad": (e.requires_grad, t.requires_grad),
                "is_leaf": (e.is_leaf, t.is_leaf),
                "grad_fn": (grad_fn_name(e), grad_fn_name(t)),
            }
            for what, (mine, theirs) in pairs.items():
                assert mine == theirs, f"{path}: {what} {mine!r} != torch {theirs!r}"
        _assert_arrays(to_numpy(e), t.detach().numpy(force=True), rtol, atol, path, zero_signs)
        return
    if isinstance(t, BaseException) or isinstance(e, BaseException):
        assert isinstance(t, BaseException), f"{path}: engine raised {e!r}, torch gave {t!r}"
        assert isinstance(e, BaseException), f"{path}: torch raised {t!r}, engine gave {e!r}"
        assert isinstance(e, type(t)), f"{path}: engine raised {e!r}, torch {t!r}"
        assert _messages_agree(e, t), f"{path}: message {str(e)!r} != torch {str(t)!r}"
        return
    if isinstance(t, np.ndarray):
        assert isinstance(e, np.ndarray), f"{path}: engine gave {type(e).__name__}, torch an array"
        _assert_arrays(e, t, rtol, atol, path, zero_signs)
        return
    if isinstance(t, dict):
        assert isinstance(e, dict), f"{path}: engine gave {type(e).__name__}, torch a dict"
        assert list(e) == list(t), f"{path}: keys {list(e)} != torch {list(t)}"
        for k in t:
            assert_same(e[k], t[k], path=f"{path}.{k}", **kw)
        return
    torch_size = _torch is not None and isinstance(t, _torch.Size)
    if _is_seq(e) or _is_seq(t) or torch_size:
        assert _is_seq(e) and (_is_seq(t) or torch_size), (
            f"{path}: engine gave {type(e).__name__}, torch {type(t).__name__}"
        )
        assert len(e) == len(t), f"{path}: {len(e)} results != torch {len(t)}"
        for k, (a, b) in enumerate(zip(e, t)):
            assert_same(a, b, path=f"{path}[{k}]", **kw)
        return
    if isinstance(e, float) or isinstance(t, float):
        msg = values_differ(np.asarray(e, float), np.asarray(t, float), rtol, atol, path)
        assert msg is None, msg
        return
    assert e == t, f"{path}: {e!r} != torch {t!r}"


def assert_values(
    engine_result: Any,
    torch_result: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    path: str = "result",
    zero_signs: bool = False,
) -> None:
    """``assert_same`` without the graph: values, dtypes and shapes only (a gradient,
    a result computed under no_grad, anything whose history is not the point)."""
    kw = {"rtol": rtol, "atol": atol, "path": path, "zero_signs": zero_signs}
    assert_same(engine_result, torch_result, graph=False, **kw)


def _assert_arrays(
    mine: np.ndarray,
    theirs: np.ndarray,
    rtol: float | None,
    atol: float | None,
    path: str,
    zero_signs: bool = False,
) -> None:
    assert mine.dtype == theirs.dtype, f"{path}: dtype {mine.dtype} != torch {theirs.dtype}"
    msg = values_differ(mine, theirs, rtol, atol, path)
    assert msg is None, msg
    if zero_signs and mine.dtype.kind == "f":
        zeros = (mine == 0) & (theirs == 0)
        signs = np.signbit(mine[zeros]) == np.signbit(theirs[zeros])
        assert signs.all(), f"{path}: the sign of a zero differs from torch's"


def assert_same_error(
    fn_e: Callable[[], Any], fn_t: Callable[[], Any], *, message: bool = True
) -> BaseException:
    """Torch raises and the engine raises an instance of the same class (the engine's
    errors subclass the builtin torch raises) with torch's message (its first line:
    torch's argument parser lists overloads below); returns the engine's error."""
    with pytest.raises(Exception) as theirs:
        fn_t()
    with pytest.raises(Exception) as mine:
        fn_e()
    e, t = mine.value, theirs.value
    assert isinstance(e, type(t)), f"engine raised {type(e).__name__}: {e}, torch {t!r}"
    if message:
        assert _messages_agree(e, t), f"message {str(e)!r} != torch {str(t)!r}"
    return e


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


def _draws_exact(dtype: np.dtype) -> bool:
    """Whether this process's dispatch makes ``dtype`` normals bit-exact: torch's AVX2
    float32 normal kernel is the one the engine reproduces; numpy's AVX-512 float64
    log/sin/cos differ from glibc's (torch's) by an ulp now and then."""
    if dtype == np.float32:
        return torch_runs_avx2_kernels()
    if dtype == np.float64:
        return not numpy_runs_avx512_loops()
    return True


# off the exact dispatch: torch's scalar float32 normal (libm logf/sinf) against the
# AVX2 polynomials differs by ~1e-6 times the deviation (measured under
# ATEN_CPU_CAPABILITY=default: 3e-6 at std 3, 40 ulp near 0.25); numpy's AVX-512
# float64 log/sin/cos against glibc by 1 ulp
_DRAW_ULPS = {np.dtype(np.float32): (64, 1e-5), np.dtype(np.float64): (2, 0.0)}


def assert_same_draws(ours: list[Any], theirs: list[Any]) -> None:
    """Random draws (one per call) agree: bit-exact where this process's dispatch makes
    them so (``_draws_exact``), else within ``_DRAW_ULPS`` of what the kernels differ by."""
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = to_numpy(a), to_numpy(b)
        assert a.dtype == b.dtype, f"call {i}: dtype {a.dtype} != torch {b.dtype}"
        if _draws_exact(a.dtype):
            np.testing.assert_array_equal(a, b, err_msg=f"call {i}")
        else:
            ulps, atol = _DRAW_ULPS[a.dtype]
            assert_kernel_close(a, b, ulps=ulps, atol=atol, err_msg=f"call {i}")


def differentiable_outputs(result: Any) -> list[Any]:
    """The tensors in a result (nested tuples/lists too) that require grad."""
    if _is_seq(result):
        return [t for r in result for t in differentiable_outputs(r)]
    return [result] if getattr(result, "requires_grad", False) else []


# -- comparing a function of several leaves ---------------------------------------------


def _requiring_grad(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [r for r in result if getattr(r, "requires_grad", False)]
    return [result] if getattr(result, "requires_grad", False) else []


def _flags(requires_grad: bool | tuple[bool, ...], n: int) -> tuple[bool, ...]:
    return (requires_grad,) * n if isinstance(requires_grad, bool) else tuple(requires_grad)


def compare(
    fn_e: Callable[..., Any],
    fn_t: Callable[..., Any],
    *arrays: Any,
    dtype: Any = None,
    requires_grad: bool | tuple[bool, ...] = True,
    second: bool = False,
    graph: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 3,
) -> Any:
    """The oracle: ``fn_e`` on engine leaves and ``fn_t`` on torch leaves holding the
    same ``arrays`` (float ones cast to ``dtype`` and requiring grad as
    ``requires_grad`` says, per array or for all; anything not an array passes as is). Where torch raises, the engine
    raises the same class and message. Otherwise the results agree (``assert_same``),
    then the gradients of every float input for a seeded random cotangent, and, with
    ``second``, a vector-Hessian product (the gradient of <grads, v> for a random v).
    Returns the engine's result for further checks."""
    torch = require_torch()
    flags = _flags(requires_grad, len(arrays))
    xs: list[Any] = []
    ts: list[Any] = []
    for a, flag in zip(arrays, flags):
        if not isinstance(a, np.ndarray):  # None, a Python number: passed as is
            xs.append(a)
            ts.append(a)
            continue
        arr = a.astype(dtype) if dtype is not None and a.dtype.kind == "f" else a
        grad = flag and arr.dtype.kind in "fc"
        xs.append(Tensor(arr.copy(), requires_grad=grad))
        ts.append(torch.from_numpy(arr.copy()).requires_grad_(grad))
    try:
        out_t = fn_t(*ts)
    except Exception:  # noqa: BLE001 - the engine must refuse alike
        assert_same_error(lambda: fn_e(*xs), lambda: fn_t(*ts))
        return None
    out_e = fn_e(*xs)
    assert_same(out_e, out_t, rtol=rtol, atol=atol, graph=graph)
    outs_e, outs_t = _requiring_grad(out_e), _requiring_grad(out_t)
    assert len(outs_e) == len(outs_t), f"{len(outs_e)} results require grad, torch {len(outs_t)}"
    pairs = [(x, t) for x, t in zip(xs, ts) if getattr(t, "requires_grad", False)]
    if not outs_t or not pairs:
        return out_e
    rng = np.random.default_rng(seed)
    gs = [rng.uniform(-1, 1, tuple(o.shape)).astype(numpy_dtype(o.dtype)) for o in outs_t]
    ge = engine_grad(
        outs_e,
        [x for x, _ in pairs],
        [Tensor(g) for g in gs],
        create_graph=second,
        allow_unused=True,
    )
    gt = torch.autograd.grad(
        outs_t,
        [t for _, t in pairs],
        [torch.from_numpy(g) for g in gs],
        create_graph=second,
        allow_unused=True,
    )
    for k, (a, b) in enumerate(zip(ge, gt)):
        assert (a is None) == (b is None), f"grad {k}: engine {a!r}, torch {b!r}"
        if a is not None:
            assert_same(a, b, rtol=rtol, atol=atol, graph=False, path=f"grad {k}")
    if second:
        _second_order(ge, gt, pairs, rng, rtol, atol)
    return out_e


def _second_order(
    ge: Any, gt: Any, pairs: list[tuple[Any, Any]], rng: np.random.Generator, rtol: Any, atol: Any
) -> None:
    torch = require_torch()
    firsts = [(a, b) for a, b in zip(ge, gt) if a is not None and b is not None and b.requires_grad]
    if not firsts:
        return
    vs = [rng.uniform(-1, 1, a.shape).astype(a.data.dtype) for a, _ in firsts]
    se = engine_grad(
        [a for a, _ in firsts], [x for x, _ in pairs], [Tensor(v) for v in vs], allow_unused=True
    )
    st = torch.autograd.grad(
        [b for _, b in firsts],
        [t for _, t in pairs],
        [torch.from_numpy(v) for v in vs],
        allow_unused=True,
    )
    for k, (a, b) in enumerate(zip(se, st)):
        if b is not None and b._is_zerotensor():  # torch's symbolic zero (sign's derivative)
            b = torch.zeros(b.shape, dtype=b.dtype)
        if b is None:
            assert a is None or not np.any(a._data), f"second order {k}: torch None"
        else:
            assert a is not None, f"second order {k}: engine None"
            assert_same(a, b, rtol=rtol, atol=atol, graph=False, path=f"second order {k}")


def check(fn: Callable[..., Any], *arrays: Any, **kw: Any) -> Any:
    """``compare`` for a function written once for both libraries: ``fn(T, *leaves)``
    with ``T`` the engine module, then the ``torch`` module (tinygrad's one helper)."""
    torch = require_torch()
    return compare(lambda *x: fn(engine, *x), lambda *x: fn(torch, *x), *arrays, **kw)


def compare_functions(fn_e: Any, fn_t: Any, *arrays: np.ndarray, second: bool = True) -> None:
    """``compare`` in float64 with second order on: a function of several leaves."""
    compare(fn_e, fn_t, *arrays, second=second)
