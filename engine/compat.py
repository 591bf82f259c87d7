"""PyTorch's call forms every op accepts without writing them itself.

``out=``: the result written into a given tensor (resized when its shape differs,
as PyTorch does, with its deprecation warning when it held elements), refused with
PyTorch's message when autograd would have to record. ``axis=``/``keepdims=``:
numpy's names for ``dim``/``keepdim``, which PyTorch's argument parser accepts for
every op that has a ``dim``. The registry wraps each op's function with ``calls``,
which also asks the vmap hook first (``dispatch``): one wrapper frame per call, and
the common call (no ``out``, no alias) costs one list read and one dict check.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes
from .dispatch import OPEN, ask, hooked
from .errors import ArgumentTypeError, BadArgumentsError, DtypeMismatchError
from .grad_mode import _enabled
from .memory_overlap import (
    assert_no_internal_overlap,
    assert_no_overlap,
    assert_no_partial_overlap,
)
from .tensor import Tensor

_ALIASES = {"axis": "dim", "keepdims": "keepdim"}
_STAR_NAMES = {"size", "shape", "dims", "sizes", "repeats"}


def calls(
    name: str,
    fn: Callable[..., Any],
    sig: inspect.Signature,
    *,
    numpy_names: bool = True,
    sizes_one_by_one: bool = True,
    out_overlap: str = "partial",
    out_dtype: str = "cast",
) -> Callable[..., Any]:
    """``fn`` taking ``out=`` (sharing memory with its inputs as ``out_overlap`` allows)
    and the numpy aliases its signature does not name (unless the registration says
    PyTorch parses none), and sizes one by one (unless it says no)."""
    params = sig.parameters
    aliases = {k: v for k, v in _ALIASES.items() if numpy_names and v in params and k not in params}
    takes_out = "out" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values())
    # ``x.permute(dims=...)``, ``ones(size=...)``: PyTorch names the sizes an op takes as
    # ``*sizes``; Python cannot pass a star parameter by keyword, so it is moved here
    star = next((p.name for p in params.values() if p.kind is p.VAR_POSITIONAL), None)
    star_names = {star, *(_STAR_NAMES - set(params))} if star else set()
    # factories (they take requires_grad) take PyTorch's ``device=``: the CPU only
    takes_device = "requires_grad" in params and "device" not in params
    special = (
        set(aliases)
        | ({"out"} if takes_out else set())
        | star_names
        | ({"device"} if takes_device else set())
    )
    # ``x.flip(0, 1)``, ``x.new_zeros(2, 3)``: sizes given one by one where the op takes a
    # sequence as its second parameter (PyTorch's int[] parameters take both forms)
    positional = [
        p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    packs = (
        star is None
        and len(positional) >= 2
        and positional[1].name in ("dims", "size")
        and sizes_one_by_one
    )
    limit = len(positional) if packs else 1 << 30
    if not special and not packs:
        return hooked(name, fn)

    def plain(*args: Any, **kwargs: Any) -> Any:
        if len(args) > limit or (packs and len(args) == 2 and isinstance(args[1], int)):
            args = (args[0], tuple(args[1:]))
        if not kwargs or special.isdisjoint(kwargs):
            return fn(*args, **kwargs)
        for alias, real in aliases.items():
            if alias in kwargs:
                if real in kwargs:
                    raise ArgumentTypeError(f"{name}() got multiple values for argument '{real}'")
                kwargs[real] = kwargs.pop(alias)
        if takes_device and "device" in kwargs:
            cpu_device(kwargs.pop("device"))
        given = [k for k in kwargs if k in star_names]
        if given:
            value = kwargs.pop(given[0])
            args = (*args, *(value if isinstance(value, (list, tuple)) else (value,)))
        out = kwargs.pop("out", None) if takes_out else None
        if out is None:
            return fn(*args, **kwargs)
        return _into(name, fn, out, args, kwargs, out_overlap, out_dtype)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        # one frame for both jobs: the vmap hook (dispatch.py) and the call forms above,
        # with the commonest call (positional arguments, nothing to pack) straight through
        if OPEN[0]:
            return ask(name, plain, args, kwargs)
        if not kwargs and not packs:
            return fn(*args)
        return plain(*args, **kwargs)

    return call


def cpu_device(device: Any) -> None:
    """Accept PyTorch's ``device=`` when it names the CPU (or is None)."""
    text = str(device)
    if device is not None and text != "cpu" and not text.startswith("cpu:"):
        raise BadArgumentsError(f"the engine runs on the CPU only, not on {text!r}")


def _tensors(values: Any) -> list[Any]:
    found: list[Any] = []
    for v in values:
        if isinstance(v, Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(_tensors(v))
    return found


def _into(
    name: str,
    fn: Callable[..., Any],
    out: Any,
    args: tuple[Any, ...],
    kw: dict,
    overlap: str,
    dtype_rule: str,
) -> Any:
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if not all(isinstance(o, Tensor) for o in outs):
        raise ArgumentTypeError(
            f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}"
        )
    inputs = _tensors(args) + _tensors(kw.values())
    if _enabled.get() and any(t.requires_grad for t in inputs + outs):
        raise BadArgumentsError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    for o in outs:
        assert_no_internal_overlap(o)
    result = fn(*args, **kw)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(results) != len(outs):
        raise ArgumentTypeError(f"{name}(): expected {len(results)} out tensor(s), got {len(outs)}")
    check = assert_no_overlap if overlap == "none" else assert_no_partial_overlap
    for o, r in zip(outs, results):
        _check_dtype(o._data.dtype, r._data.dtype, dtype_rule)
        if overlap == "unchecked":  # the result is whole before it is written
            continue
        target = _Footprint(_resized(o._data, r._data.shape)) if o.shape != r.shape else o
        for t in inputs:
            check(o if t is o else target, t)
    for o, r in zip(outs, results):
        write_out(o, r)
    return out if isinstance(out, (list, tuple)) else outs[0]


def _check_dtype(od: np.dtype, rd: np.dtype, rule: str) -> None:
    """An op whose ``out`` must have the result's very dtype: "exact" (PyTorch's
    structured kernels' message) or the op's own message (``{input}``, ``{out}``)."""
    if rule == "cast" or od == rd:
        return
    if rule == "exact":
        message = (
            f"Expected out tensor to have dtype {dtypes.cpp_name(rd)}, "
            f"but got {dtypes.cpp_name(od)} instead"
        )
    else:
        message = rule.format(input=dtypes.type_name(rd), out=dtypes.type_name(od))
    raise DtypeMismatchError(message)


class _Footprint:
    """The memory ``out`` will occupy once resized to the result's shape (what PyTorch
    checks against the inputs after resizing): an array that is never read nor written."""

    __slots__ = ("_data",)

    def __init__(self, data: np.ndarray) -> None:
        self._data = data


def _resized(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a``'s memory from its first element on, read contiguously in ``shape`` (a resize
    keeps the data pointer): only its address range is looked at."""
    return np.lib.stride_tricks.as_strided(a, shape, _contiguous(shape, a.itemsize))


def _contiguous(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def write_out(out: Any, result: Any) -> None:
    """PyTorch's ``out`` rules: the result's dtype must cast safely by category, a shape
    mismatch resizes (warning when ``out`` held elements)."""
    rd, od = result._data.dtype, out._data.dtype
    if dtypes.category(rd) > dtypes.category(od):
        raise DtypeMismatchError(
            f"result type {dtypes.type_name(rd)} can't be cast to the desired output type "
            f"{dtypes.type_name(od)}"
        )
    if out._data.shape != result._data.shape:
        if out._view is not None:
            raise BadArgumentsError(
                f"Trying to resize storage that is not resizable: out has shape "
                f"{list(out.shape)}, the result {list(result.shape)}"
            )
        if out._data.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=4,
            )
        out._data = np.empty(result._data.shape, dtype=od)
    out._write(result._data)
