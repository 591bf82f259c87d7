"""PyTorch's OpInfo database (``op_db``) run against the engine: our code, their cases.

For every real-valued CPU entry of ``torch.testing._internal.common_methods_invocations
.op_db``, each ``SampleInput`` runs on torch and, converted, on the engine; the two
must agree in values, dtypes and shapes, in the gradients of a backward with the same
random cotangent, and (where the OpInfo says ``supports_gradgrad``) in second-order
gradients. Each ``ErrorInput`` must raise torch's exception class with a message that
matches torch's ``error_regex``. ``run_entry`` gives one entry's figures; the tests
and ``python -m tests.opdb`` add them up.

A sample whose inputs the engine cannot hold (complex, bfloat16, a ``Generator``) is
left out and counted as such; a lambda entry runs its own code with ``torch`` swapped
for the engine, so ``lambda x: x.T`` needs no table row.
"""

from __future__ import annotations

import contextlib
import re
import types
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import engine
from tests.engine.torch_oracle import require_torch, values_differ

torch = require_torch()

FLOATS = (torch.float32, torch.float64)
OTHERS = (torch.int64, torch.bool)
# values and gradients: (rtol, atol) by dtype, loose enough for two kernels (AVX2 and
# AVX-512 on either side, LAPACK builds) and tight enough to catch a wrong formula
TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-6, 1e-7)}
GRAD_TOL = {torch.float32: (1e-3, 1e-4), torch.float64: (1e-6, 1e-7)}


# results of uninitialized memory: only their shape and dtype mean anything
UNINITIALIZED = {
    "empty",
    "empty_like",
    "new_empty",
    "empty_strided",
    "new_empty_strided",
    "empty_permuted",
}

# ops whose indices among equal values torch leaves unspecified (stable=False): the
# position of ``dim`` among the positional arguments after the input, and which result
# holds the indices (None: the result is the indices)
TIES_ARBITRARY = {"sort": (0, 1), "argsort": (0, None), "topk": (1, 1)}


def _ties_settled(op: Any, s: Any, t_out: Any, e_out: Any) -> Any:
    """The engine's result with torch's indices where both index the same values, so
    an index that differs only among ties is no difference (torch documents the order
    of equal elements as unspecified unless ``stable=True``)."""
    rule = TIES_ARBITRARY.get(op.name)
    if rule is None or s.kwargs.get("stable") or not isinstance(s.input, torch.Tensor):
        return e_out
    pos, which = rule
    dim = s.kwargs.get("dim", s.args[pos] if len(s.args) > pos else -1)
    t_idx = t_out if which is None else t_out[which]
    e_idx = e_out if which is None else e_out[which]
    x = s.input.detach().numpy()
    if x.ndim == 0 or not isinstance(dim, int) or tuple(e_idx.shape) != tuple(t_idx.shape):
        return e_out
    a = np.take_along_axis(x, t_idx.numpy(), axis=dim)
    b = np.take_along_axis(x, np.asarray(e_idx.numpy(), dtype=np.int64), axis=dim)
    if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
        return e_out
    idx = engine.tensor(t_idx.numpy())
    return idx if which is None else (*e_out[:which], idx, *e_out[which + 1 :])


class Unsupported(Exception):
    """The sample holds something the engine has no counterpart for (complex data)."""


@dataclass
class EntryResult:
    """One op_db entry's figures."""

    name: str
    mapped: bool = True
    samples: int = 0
    passed: int = 0
    skipped: int = 0
    silent: int = 0  # both succeed, the answers differ
    loud: int = 0  # torch succeeds, the engine raises
    errors_total: int = 0
    errors_matched: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def full_pass(self) -> bool:
        return self.mapped and self.samples > 0 and self.passed == self.samples


def entry_name(op: Any) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def real_entries() -> list[Any]:
    """The op_db entries with a float32 or float64 CPU kernel, in op_db's order."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [op for op in op_db if set(FLOATS) & set(op.supported_dtypes("cpu"))]


# -- the engine's counterpart of an entry ----------------------------------------------------


def _engine_wrapper_set_seed(op: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    engine.manual_seed(42)
    return op(*args, **kwargs)


def _method(name: str) -> Callable[..., Any] | None:
    """``torch.Tensor.name`` called unbound, as op_db does: its ``self`` must be a tensor
    (PyTorch's method descriptor refuses anything else with a TypeError)."""
    if not hasattr(engine.Tensor, name):
        return None

    def call(x: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(x, engine.Tensor):
            raise TypeError(
                f"descriptor '{name}' for 'Tensor' objects doesn't apply to a "
                f"'{type(x).__name__}' object"
            )
        return getattr(x, name)(*args, **kwargs)

    return call


class _Aten:
    """``torch.ops.aten.NAME.default`` in an op_db function: the engine's op ``NAME``."""

    def __getattr__(self, name: str) -> Any:
        return types.SimpleNamespace(default=getattr(engine, name))


class _EngineTorch:
    """The engine as ``torch`` for op_db's named functions that wrap an aten call
    (``max_pool2d_backward``), with ``torch.ops.aten`` added."""

    ops = types.SimpleNamespace(aten=_Aten())

    def __getattr__(self, name: str) -> Any:
        return getattr(engine, name)


def resolve(op: Any) -> Callable[..., Any] | None:
    """The engine callable for ``op``: the same dotted name (``linalg.det``,
    ``nn.functional.relu``), else the Tensor method, else the entry's own lambda run
    with the engine as its ``torch``."""
    fn = op.op
    if getattr(fn, "__name__", "") == "<lambda>":
        if fn.__closure__:
            return None
        scope = dict(fn.__globals__)
        scope["torch"] = engine
        scope["wrapper_set_seed"] = _engine_wrapper_set_seed
        return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__)
    if (
        isinstance(fn, types.FunctionType)
        and fn.__module__.endswith("common_methods_invocations")
        and not fn.__closure__
    ):
        scope = dict(fn.__globals__)
        scope["torch"] = _EngineTorch()
        wrapped = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__)
        wrapped.__kwdefaults__ = fn.__kwdefaults__
        return wrapped
    if op.name.startswith("__"):
        return _method(op.name)
    obj: Any = engine
    # ``torch.ops.aten.NAME.default`` entries: the engine's op of that name
    for part in op.name.removeprefix("torch.ops.aten.").removesuffix(".default").split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if callable(obj):
        return obj
    if op.method_variant is not None:
        return _method(op.name)
    return None


# -- conversions -----------------------------------------------------------------------------


def _engine_dtype(dtype: Any) -> Any:
    name = str(dtype).removeprefix("torch.")
    if name.startswith(("complex", "bfloat", "quint", "qint", "float8", "bits")) or name in (
        "chalf",
        "cfloat",
        "cdouble",
    ):
        raise Unsupported(name)
    return getattr(engine, name)


def _shared(value: Any, storages: dict[Any, np.ndarray]) -> np.ndarray:
    """``value``'s elements as a numpy view into one copy of its storage, shared by every
    tensor of the sample on that storage: an ``expand``ed tensor keeps its repeated
    elements and a slice of another argument keeps sharing its memory, as in torch."""
    storage = value.untyped_storage()
    key = (storage.data_ptr(), value.dtype)
    buf = storages.get(key)
    if buf is None:
        n = storage.nbytes() // value.element_size()
        flat = torch.empty(0, dtype=value.dtype).set_(storage, 0, (n,), (1,))
        buf = storages[key] = flat.numpy().copy()
    return np.lib.stride_tricks.as_strided(
        buf[value.storage_offset() :],
        tuple(value.shape),
        tuple(st * buf.itemsize for st in value.stride()),
    )


def to_engine(
    value: Any, memo: dict[int, Any], storages: dict[Any, np.ndarray] | None = None
) -> Any:
    """The engine twin of a sample argument (tensors become leaves that keep
    ``requires_grad``; a tensor passed twice stays one tensor). With ``storages``
    (error inputs, where torch's aliasing is what is tested) tensors sharing memory in
    torch share it in the engine too."""
    if isinstance(value, torch.Tensor):
        if id(value) in memo:
            return memo[id(value)]
        if value.is_complex() or value.dtype == torch.bfloat16 or value.layout != torch.strided:
            raise Unsupported(str(value.dtype))
        try:
            if storages is None:
                out = engine.Tensor(value.detach().numpy(force=True).copy())
            else:
                out = engine.Tensor(_shared(value.detach(), storages))
        except Exception as exc:  # beyond numpy (more than 64 dims), meta tensors
            raise Unsupported(str(exc)) from exc
        if value.requires_grad:
            out.requires_grad_(True)
        memo[id(value)] = out
        return out
    if isinstance(value, torch.dtype):
        return _engine_dtype(value)
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, torch.Generator | torch.memory_format | torch.layout):
        raise Unsupported(type(value).__name__)
    if isinstance(value, complex):
        raise Unsupported("complex")
    if isinstance(value, list | tuple):
        return type(value)(to_engine(v, memo, storages) for v in value)
    if isinstance(value, dict):
        return {k: to_engine(v, memo, storages) for k, v in value.items()}
    if callable(value) and not isinstance(value, type):
        raise Unsupported("callable")
    return value


def to_torch(value: Any, memo: dict[int, Any]) -> Any:
    """A fresh copy of a sample argument: leaves again, so both sides start equal."""
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            memo[id(value)] = value.detach().clone().requires_grad_(value.requires_grad)
        return memo[id(value)]
    if isinstance(value, list | tuple) and not isinstance(value, torch.Size):
        return type(value)(to_torch(v, memo) for v in value)
    if isinstance(value, dict):
        return {k: to_torch(v, memo) for k, v in value.items()}
    return value


def leaves(value: Any) -> list[Any]:
    """Tensors and scalars of a (nested) result, in order."""
    if isinstance(value, list | tuple) and not isinstance(value, torch.Size):
        return [x for v in value for x in leaves(v)]
    return [value]


def tensors_requiring_grad(args: Any) -> list[Any]:
    return [
        v
        for v in leaves(args)
        if isinstance(v, torch.Tensor | engine.Tensor) and v.requires_grad and v.is_leaf
    ]


# -- comparison ------------------------------------------------------------------------------


def _close(t: Any, e: Any, tol: dict[Any, tuple[float, float]], what: str) -> str | None:
    """None when engine value ``e`` matches torch value ``t``, else what differs."""
    if isinstance(t, torch.Tensor):
        if not isinstance(e, engine.Tensor):
            return f"{what}: torch gives a Tensor, the engine {type(e).__name__}"
        if tuple(t.shape) != tuple(e.shape):
            return f"{what}: shape {tuple(e.shape)} != torch {tuple(t.shape)}"
        if str(t.dtype).removeprefix("torch.") != np.dtype(e.dtype).name:
            return f"{what}: dtype {np.dtype(e.dtype).name} != torch {t.dtype}"
        a = t.detach().numpy(force=True)
        b = np.asarray(e.detach().numpy())
        rtol, atol = None, None
        if t.dtype.is_floating_point or t.dtype.is_complex:  # complex: by its parts' dtype
            rtol, atol = tol.get(t.dtype.to_real(), (1e-3, 1e-3))
        return values_differ(b, a, rtol, atol, what)
    if isinstance(e, engine.Tensor):
        return f"{what}: torch gives {type(t).__name__}, the engine a Tensor"
    if isinstance(t, float) and isinstance(e, float | int):
        return values_differ(np.asarray(float(e)), np.asarray(t), 1e-6, 1e-7, what)
    if isinstance(t, torch.dtype):
        return None if str(t).removeprefix("torch.") == np.dtype(e).name else f"{what}: {e} != {t}"
    if t != e:
        return f"{what}: {e!r} != torch {t!r}"
    return None


def compare(t_out: Any, e_out: Any, tol: dict[Any, tuple[float, float]], what: str) -> str | None:
    if isinstance(t_out, torch.Size):  # the engine's sizes are tuples (as to_engine makes them)
        ok = isinstance(e_out, tuple) and tuple(t_out) == e_out
        return None if ok else f"{what}: {e_out!r} != torch {tuple(t_out)!r}"
    tl, el = leaves(t_out), leaves(e_out)
    if len(tl) != len(el):
        return f"{what}: {len(el)} results, torch {len(tl)}"
    for k, (t, e) in enumerate(zip(tl, el)):
        msg = _close(t, e, tol, f"{what}[{k}]")
        if msg:
            return msg
    return None


def _cotangents(outs: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    """Random cotangents; a complex output's has random real and imaginary parts."""
    cots = []
    for o in outs:
        c = rng.standard_normal(tuple(o.shape))
        if o.dtype.is_complex:
            c = c + 1j * rng.standard_normal(tuple(o.shape))
        cots.append(c.astype(str(o.dtype).removeprefix("torch.")))
    return cots


def _fill(grads: Any, ins: list[Any], zeros: Callable[[Any], Any]) -> list[Any]:
    return [zeros(x) if g is None else g for g, x in zip(grads, ins)]


def _differentiable(outs: list[Any]) -> list[int]:
    return [
        k
        for k, o in enumerate(outs)
        if isinstance(o, torch.Tensor)
        and o.requires_grad
        and (o.dtype.is_floating_point or o.dtype.is_complex)
    ]


def check_grads(
    t_out: Any,
    e_out: Any,
    t_args: Any,
    e_args: Any,
    gradgrad: bool,
    rng: np.random.Generator,
    tdtype: Any,
) -> str | None:
    t_leaves, e_leaves = leaves(t_out), leaves(e_out)
    picked = _differentiable(t_leaves)
    t_ins, e_ins = tensors_requiring_grad(t_args), tensors_requiring_grad(e_args)
    if not picked or not t_ins:
        return None
    for k in picked:
        if not (isinstance(e_leaves[k], engine.Tensor) and e_leaves[k].requires_grad):
            return f"result[{k}] does not require grad (torch's does)"
    t_outs = [t_leaves[k] for k in picked]
    e_outs = [e_leaves[k] for k in picked]
    try:
        cots = _cotangents(t_outs, rng)
        t_g = torch.autograd.grad(
            t_outs,
            t_ins,
            [torch.from_numpy(c) for c in cots],
            allow_unused=True,
            create_graph=gradgrad,
        )
    except Exception:  # torch has no backward for this sample (e.g. a derivative not implemented)
        return None
    try:
        e_g = engine.grad(
            e_outs,
            e_ins,
            [engine.tensor(c) for c in cots],
            allow_unused=True,
            create_graph=gradgrad,
        )
    except Exception as exc:
        return f"backward raised {type(exc).__name__}: {exc}"
    t_full = _fill(t_g, t_ins, torch.zeros_like)
    e_full = _fill(e_g, e_ins, lambda x: engine.zeros_like(x))
    msg = compare(list(t_full), list(e_full), GRAD_TOL, "grad")
    if msg or not gradgrad:
        return msg
    # second order: differentiate <grad, w> again w.r.t. the inputs
    t_sel = [k for k, g in enumerate(t_g) if g is not None and g.requires_grad]
    if not t_sel:
        return None
    t_gs = [t_g[k] for k in t_sel]
    try:
        cots2 = _cotangents(t_gs, rng)
        t_gg = torch.autograd.grad(
            t_gs, t_ins, [torch.from_numpy(c) for c in cots2], allow_unused=True
        )
    except Exception:
        return None
    e_gs = [e_g[k] for k in t_sel]
    if any(g is None or not g.requires_grad for g in e_gs):
        return "gradient does not require grad under create_graph (torch's does)"
    try:
        e_gg = engine.grad(e_gs, e_ins, [engine.tensor(c) for c in cots2], allow_unused=True)
    except Exception as exc:
        return f"double backward raised {type(exc).__name__}: {exc}"
    return compare(
        _fill(t_gg, t_ins, torch.zeros_like),
        _fill(e_gg, e_ins, lambda x: engine.zeros_like(x)),
        GRAD_TOL,
        "gradgrad",
    )


# -- one entry --------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield


def _samples(op: Any, dtype: Any, limit: int | None) -> Iterator[Any]:
    grad = op.supports_autograd and dtype in FLOATS and dtype in op.supported_backward_dtypes("cpu")
    torch.manual_seed(zlib.crc32(f"{entry_name(op)} {dtype}".encode()))  # op_db draws with torch
    it = op.sample_inputs("cpu", dtype, requires_grad=grad)
    for k, s in enumerate(it):
        if limit is not None and k >= limit:
            return
        yield s


def run_sample(op: Any, fn: Callable[..., Any], s: Any, dtype: Any, seed: int) -> tuple[str, str]:
    """("pass" | "skip" | "silent" | "loud", detail) for one sample."""
    t_memo: dict[int, Any] = {}
    t_args = to_torch([s.input, *s.args], t_memo)
    t_kwargs = to_torch(dict(s.kwargs), t_memo)
    try:
        memo: dict[int, Any] = {}
        e_args = [to_engine(s.input, memo), *to_engine(list(s.args), memo)]
        e_kwargs = to_engine(dict(s.kwargs), memo)
    except Unsupported as exc:
        return "skip", f"unsupported input: {exc}"
    with _quiet():
        torch.manual_seed(seed)
        try:
            t_out = op.op(*t_args, **t_kwargs)
        except Exception as exc:
            t_err: Exception | None = exc
        else:
            t_err = None
        engine.manual_seed(seed)
        try:
            e_out = fn(*e_args, **e_kwargs)
        except Exception as exc:
            if t_err is not None:
                return "pass", "both raise"
            return "loud", f"engine raised {type(exc).__name__}: {str(exc)[:200]}"
        if t_err is not None:
            return (
                "silent",
                f"torch raises {type(t_err).__name__}: {str(t_err)[:120]}; the engine does not",
            )
        if s.output_process_fn_grad is not None:
            try:
                t_out = s.output_process_fn_grad(t_out)
                e_out = s.output_process_fn_grad(e_out)
            except Exception as exc:
                return "loud", f"output_process_fn_grad on the engine's result: {exc}"
        if op.name in UNINITIALIZED:
            t_out = torch.zeros_like(t_out) if isinstance(t_out, torch.Tensor) else t_out
            e_out = engine.zeros_like(e_out) if isinstance(e_out, engine.Tensor) else e_out
        msg = compare(t_out, _ties_settled(op, s, t_out, e_out), TOL, "result")
        if msg:
            return "silent", msg
        if dtype in FLOATS and op.supports_autograd and torch.is_grad_enabled():
            rng = np.random.default_rng(seed)
            t_in_all = [*t_args, *t_kwargs.values()]
            e_in_all = [*e_args, *e_kwargs.values()]
            try:
                msg = check_grads(
                    t_out,
                    e_out,
                    t_in_all,
                    e_in_all,
                    op.supports_gradgrad and dtype == torch.float64,
                    rng,
                    dtype,
                )
            except Exception as exc:
                return "loud", f"gradient check raised {type(exc).__name__}: {str(exc)[:200]}"
            if msg:
                kind = "loud" if "raised" in msg else "silent"
                return kind, msg
    return "pass", ""


def dtypes_for(op: Any) -> list[Any]:
    supported = op.supported_dtypes("cpu")
    return [d for d in (*FLOATS, *OTHERS) if d in supported]


def run_errors(op: Any, fn: Callable[..., Any] | None, result: EntryResult) -> None:
    torch.manual_seed(zlib.crc32(entry_name(op).encode()))
    try:
        cases = list(op.error_inputs("cpu"))
    except Exception:
        return
    for k, ei in enumerate(cases):
        result.errors_total += 1
        if fn is None:
            continue
        s = ei.sample_input
        try:
            memo: dict[int, Any] = {}
            storages: dict[Any, np.ndarray] = {}
            args = [to_engine(s.input, memo, storages), *to_engine(list(s.args), memo, storages)]
            kwargs = to_engine(dict(s.kwargs), memo, storages)
        except Unsupported:
            continue
        with _quiet():
            try:
                fn(*args, **kwargs)
            except Exception as exc:
                if isinstance(exc, ei.error_type) and re.search(ei.error_regex, str(exc)):
                    result.errors_matched.append(k)
                else:
                    result.failures.append(
                        f"error_inputs[{k}]: {type(exc).__name__}: {str(exc)[:120]!r}; torch "
                        f"{ei.error_type.__name__}: {ei.error_regex!r}"
                    )
                continue
        result.failures.append(
            f"error_inputs[{k}]: no error; torch {ei.error_type.__name__}: {ei.error_regex!r}"
        )


def run_entry(op: Any, limit: int | None = None) -> EntryResult:
    """Every sample (the first ``limit`` per dtype when given) and every error input."""
    result = EntryResult(entry_name(op))
    fn = resolve(op)
    result.mapped = fn is not None
    run_errors(op, fn, result)
    if fn is None:
        result.failures.append("no engine op")
        return result
    for dtype in dtypes_for(op):
        try:
            samples = list(_samples(op, dtype, limit))
        except Exception as exc:  # the entry's own sample generator fails (torch's problem)
            result.failures.append(f"{dtype}: sample_inputs raised {exc}")
            continue
        for k, s in enumerate(samples):
            kind, detail = run_sample(op, fn, s, dtype, seed=k)
            if kind == "skip":
                result.skipped += 1
                continue
            result.samples += 1
            if kind == "pass":
                result.passed += 1
                continue
            setattr(result, kind, getattr(result, kind) + 1)
            result.failures.append(
                f"{str(dtype).removeprefix('torch.')} sample {k} ({kind}): {detail}"
            )
    return result
