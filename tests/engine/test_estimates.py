"""Every op's size estimate, checked by calling it with hostile sizes: each registered
op, through each of its forms, with one integer argument made huge at a time (sizes,
steps, padding, output sizes), and a set of tiny inputs that expand (a 6000 x 1 column
whose ``svd`` is 6000 x 6000). A call whose estimate is over the limit is refused
before it runs (the service's check, ``estimate_elements``); any other call runs under
``tracemalloc`` and must allocate no more than a few times the limit. An op registered
without an estimate that fits fails here, whichever branch added it.

Address space is capped while a call runs, so an op that would allocate gigabytes
fails with MemoryError instead of taking the machine."""

from __future__ import annotations

import os
import resource
import tracemalloc
import warnings
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import engine
from engine import OPS, Tensor
from engine.registry import OpSpec
from service.session.limits import estimate_elements
from tests.engine.torch_oracle import engine_inputs

LIMIT = 10_000  # elements the service would allow in this test
HOSTILE = 10**6  # an integer argument made huge
ALLOWED = 64 * LIMIT * 8 + (1 << 20)  # bytes a call under its estimate may allocate
CAP = 1 << 30  # address space a call may add before MemoryError

# Integer arguments that set work, not memory: bounded by the request deadline instead.
NOT_SIZES: dict[str, str] = {
    "polygamma": "n is the derivative's order: time, not memory (GRADSERVE_REQUEST_SECONDS)",
}


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


@contextmanager
def _capped() -> Iterator[Callable[[], int]]:
    """Address space capped and allocations traced; yields the traced peak (counted from
    ``start``, so no collection first: in a full test run one costs seconds)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + CAP, hard))
    tracemalloc.start()
    try:
        yield lambda: tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _int_paths(v: Any, path: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    if isinstance(v, bool):
        return
    if isinstance(v, int):
        yield path
    elif isinstance(v, list | tuple):
        for i, x in enumerate(v):
            yield from _int_paths(x, (*path, i))


def _replace(v: Any, path: tuple[int, ...], new: Any) -> Any:
    if not path:
        return new
    items = list(v)
    items[path[0]] = _replace(items[path[0]], path[1:], new)
    return tuple(items) if isinstance(v, tuple) else items


def _hostile(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[tuple[tuple, dict, str]]:
    """The call with one integer (or one integer of a size list) made huge."""
    for i, a in enumerate(args):
        for p in _int_paths(a):
            new = list(args)
            new[i] = _replace(a, p, HOSTILE)
            yield tuple(new), kwargs, f"arg {i}{list(p) if p else ''}"
    for k, v in kwargs.items():
        for p in _int_paths(v):
            yield args, {**kwargs, k: _replace(v, p, HOSTILE)}, f"{k}{list(p) if p else ''}"


def _forms(spec: OpSpec) -> list[tuple[str, str, bool]]:
    """(form, the name the service checks, whether called as a method) per form."""
    forms = []
    if spec.function:
        forms.append(("function", spec.name, False))
    if spec.method:
        forms.append(("method", spec.name, True))
    if spec.inplace:
        forms.append(("in-place", spec.name + "_", True))
    return forms


# `make test` walks each op's first sample in its first form; `make fuzz` (ESTIMATES=all)
# every form on the first sample and the first form on the second
EVERY = os.environ.get("GRADSERVE_ESTIMATES") == "all"


def _cases() -> list[Any]:
    out = []
    for name in sorted(OPS):
        spec = OPS[name]
        if spec.samples is None or name in NOT_SIZES:
            continue
        samples = spec.samples(np.random.default_rng(zlib.crc32(name.encode())))
        for i, s in enumerate(samples[: 2 if EVERY else 1]):
            out.append(pytest.param(spec, s, EVERY and i == 0, id=f"{name}-{i}"))
    return out


def _run(spec: OpSpec, form: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if form == "function":
        spec.fn(*args, **kwargs)
    elif form == "method":
        getattr(args[0], spec.name)(*args[1:], **kwargs)
    else:
        getattr(args[0], spec.name + "_")(*args[1:], **kwargs)


def _check(spec: OpSpec, form: str, op: str, args: tuple, kwargs: dict, label: str) -> None:
    """Refused by its estimate, or allocates no more than ``ALLOWED``."""
    estimate = estimate_elements(op if form != "in-place" else spec.name, list(args), kwargs)
    if estimate is not None and estimate > LIMIT:
        return  # refused before it runs
    if form != "function" and not isinstance(args[0] if args else None, Tensor):
        return
    with _capped() as peak, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _run(spec, form, args, kwargs)
        except MemoryError:
            pytest.fail(f"{op} ({form}, {label} = {HOSTILE}): MemoryError, estimate {estimate}")
        except Exception:
            pass  # refused by the op itself; what it allocated first is still measured
        used = peak()
    assert used <= ALLOWED, (
        f"{op} ({form}, {label} = {HOSTILE}) allocated {used >> 20} MB with an estimate of "
        f"{estimate} elements (limit {LIMIT}): declare estimate= in its registration"
    )


@pytest.mark.parametrize(("spec", "sample", "every_form"), _cases())
def test_hostile_integers_are_refused_before_allocation(
    spec: OpSpec, sample: Any, every_form: bool
) -> None:
    """Every form on an op's first sample (the service estimates each by the op's name),
    the first form on its second."""
    forms = _forms(spec)
    for form, op, _method in forms if every_form else forms[:1]:
        args, kwargs, _ = engine_inputs(sample, np.float64)
        for a, k, label in _hostile(args, kwargs):
            _check(spec, form, op, a, k, label)


def _t(*shape: int) -> Tensor:
    return Tensor(np.ones(shape))


def _idx(n: int) -> Tensor:
    return Tensor(np.zeros(n, np.int64))


# Tiny (or within-limit) inputs whose result is far larger: (op, args, kwargs).
EXPANDING: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("svd", (_t(6000, 1),), {}),
    ("qr", (_t(6000, 1),), {"mode": "complete"}),
    ("index_select", (_t(1, 6000), 0, _idx(6000)), {}),
    ("linear", (_t(6000, 1), _t(6000, 1)), {}),
    ("inner", (_t(6000, 1), _t(6000, 1)), {}),
    ("matmul", (_t(6000, 1), _t(1, 6000)), {}),
    ("matmul", (_t(3000, 1, 2, 1), _t(3000, 1, 2)), {}),
    ("outer", (_t(6000), _t(6000)), {}),
    ("hstack", ([_t(6000)] * 3000,), {}),
    ("cat", ([_t(6000)] * 3000,), {}),
    ("conv2d", (_t(1, 1, 2, 2), _t(1, 1, 1, 1)), {"padding": 3000}),
    ("conv1d", (_t(1, 1, 2), _t(1, 1, 1)), {"padding": 10**7}),
    ("adaptive_avg_pool1d", (_t(1, 1, 2), 10**7), {}),
    ("adaptive_avg_pool2d", (_t(1, 1, 6000, 2), (6000, 1)), {}),
    ("expand", (_t(1, 1), 6000, 6000), {}),
    ("kron", (_t(6000), _t(6000)), {}),
    ("add", (_t(6000, 1), _t(1, 6000)), {}),
    ("mul", (_t(6000, 1), _t(1, 6000)), {}),
    ("where", (Tensor(np.ones((6000, 1), bool)), _t(1, 6000), 0.0), {}),
    ("pad", (_t(2, 2), (3000, 3000, 3000, 3000)), {}),
    ("interpolate", (_t(1, 1, 2, 2),), {"size": (6000, 6000)}),
    ("repeat_interleave", (_t(2), 10**7), {}),
    ("one_hot", (_idx(6000), 6000), {}),
    ("embedding", (_idx(6000), _t(2, 6000)), {}),
    ("cdist", (_t(6000, 1), _t(6000, 1)), {}),
    ("tensordot", (_t(6000), _t(6000)), {"dims": 0}),
    ("einsum", ("i,j->ij", _t(6000), _t(6000)), {}),
    ("diag_embed", (_t(6000),), {}),
    ("diag", (_t(6000),), {}),
    ("unfold", (_t(1, 1, 2, 2), 1), {"padding": 3000}),
    ("tril_indices", (6000, 6000), {}),
    ("logspace", (0, 1, 10**8), {}),
]


@pytest.mark.parametrize(("op", "args", "kwargs"), EXPANDING, ids=[c[0] for c in EXPANDING])
def test_expanding_inputs_are_refused_before_allocation(
    op: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    estimate = estimate_elements(op, list(args), kwargs)
    limit = 6000 * 6000 // 4  # what each call makes is more than this
    assert estimate is not None and estimate > limit, (op, estimate)


@pytest.mark.parametrize(("op", "args", "kwargs"), EXPANDING, ids=[c[0] for c in EXPANDING])
def test_expanding_estimates_bound_what_small_calls_allocate(
    op: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """The same calls scaled down until they fit: the estimate bounds the allocation."""
    small = _shrink(args), _shrink(kwargs)
    estimate = estimate_elements(op, list(small[0]), small[1])
    assert estimate is not None
    with _capped() as peak, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        OPS[op].fn(*small[0], **small[1])
        used = peak()
    assert used <= 4 * 8 * estimate + (1 << 20), (op, estimate, used)


def _shrink(v: Any) -> Any:
    """Sizes of 3000 and more divided by 100 (tensors rebuilt at the smaller shape)."""
    if isinstance(v, Tensor):
        shape = tuple(d // 100 if d >= 3000 else d for d in v.shape)
        return Tensor(np.zeros(shape, v._data.dtype) + (1 if v._data.dtype.kind == "f" else 0))
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v // 100 if v >= 3000 else v
    if isinstance(v, list):
        return [_shrink(x) for x in v[:30]] if len(v) >= 3000 else [_shrink(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_shrink(x) for x in v)
    if isinstance(v, dict):
        return {k: _shrink(x) for k, x in v.items()}
    return v


def test_every_registered_op_is_walked() -> None:
    """The walk reads the registry: an op added anywhere is in it (or named above)."""
    walked = {c.values[0].name for c in _cases()}  # type: ignore[union-attr]
    assert walked | set(NOT_SIZES) == {n for n, s in OPS.items() if s.samples is not None}
    assert engine.estimates.default((_t(2, 1), _t(1, 3)), {}) == 6
