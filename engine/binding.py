"""PyTorch's Python binding for the parameters it demands be Tensors.

``torch.atan2(x, 2.0)`` is a TypeError in PyTorch (no Scalar overload), while
``torch.eq(x, 2.0)`` is not; ``torch.pow(2, x)`` is, but ``torch.pow(2, 2)`` is not. An
op's registration states this as a ``Binding`` fact; ``checked`` makes the op's public
function refuse what PyTorch refuses, with its message, and ``numbers_as_tensors``
is what a caller that speaks JSON (the service) does instead: a number where a Tensor
is demanded becomes the 0-d tensor ``torch.tensor(number)`` would make.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ArgumentTypeError
from .tensor import Tensor

_MISSING = object()


@dataclass(frozen=True)
class Binding:
    """Where PyTorch's signature demands Tensors. ``tensors``: a Tensor in every
    overload (``atan2``'s both, ``eq``'s ``input``); ``either``: at least one of these is
    a Tensor (``pow(2, x)`` and ``pow(x, 2)``, never ``pow(2, 2)``); ``scalar_forms``:
    PyTorch also lists Scalar overloads, so its complaint names the combination rather
    than one argument."""

    tensors: tuple[str, ...] = ()
    either: tuple[str, ...] = ()
    scalar_forms: bool = False

    def names(self) -> tuple[str, ...]:
        return self.tensors + tuple(p for p in self.either if p not in self.tensors)


def _type_name(value: Any) -> str:
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def _positions(sig: inspect.Signature) -> dict[str, int]:
    return {
        p.name: i
        for i, p in enumerate(sig.parameters.values())
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def checked(
    name: str, fn: Callable[..., Any], sig: inspect.Signature, binding: Binding
) -> Callable[..., Any]:
    """``fn`` refusing, with PyTorch's TypeError, a non-Tensor where ``binding`` demands
    a Tensor."""
    pos = _positions(sig)
    tensors = tuple((p, pos.get(p, -1)) for p in binding.tensors)
    either = tuple((p, pos.get(p, -1)) for p in binding.either)
    combination = binding.scalar_forms or bool(binding.either)
    listed = ", ".join(sig.parameters)

    def refuse(param: str, index: int, value: Any, args: Any, kwargs: dict[str, Any]) -> None:
        if combination:
            got = ", ".join(
                [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
            )
            raise ArgumentTypeError(
                f"{name}() received an invalid combination of arguments - got ({got}), "
                f"but expected one of:\n * ({listed})"
            )
        where = f" (position {index + 1})" if index >= 0 else ""
        raise ArgumentTypeError(
            f"{name}(): argument '{param}'{where} must be Tensor, not {_type_name(value)}"
        )

    def call(*args: Any, **kwargs: Any) -> Any:
        for param, index in tensors:
            value = args[index] if 0 <= index < len(args) else kwargs.get(param, _MISSING)
            if value is not _MISSING and not isinstance(value, Tensor):
                refuse(param, index, value, args, kwargs)
        if either:
            values = [args[i] if 0 <= i < len(args) else kwargs.get(p, _MISSING) for p, i in either]
            if not any(isinstance(v, Tensor) for v in values):
                refuse(either[0][0], either[0][1], values[0], args, kwargs)
        return fn(*args, **kwargs)

    call.__name__ = getattr(fn, "__name__", name)
    call.__qualname__ = getattr(fn, "__qualname__", name)
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


def accepts(sig: inspect.Signature, binding: Binding, args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether PyTorch's binding takes these arguments (a sample's array stands for a
    tensor): an op's test samples keep to what its binding accepts."""
    pos = _positions(sig)

    def given(param: str) -> Any:
        index = pos.get(param, -1)
        return args[index] if 0 <= index < len(args) else kwargs.get(param, _MISSING)

    def tensor_like(value: Any) -> bool:
        return isinstance(value, Tensor | np.ndarray) or hasattr(value, "value")

    if any(not tensor_like(v) for p in binding.tensors if (v := given(p)) is not _MISSING):
        return False
    return not binding.either or any(tensor_like(given(p)) for p in binding.either)


def _as_tensor(value: Any) -> Any:
    """``torch.tensor(number)``: bool, int64 or float32 (PyTorch's default float)."""
    if isinstance(value, bool | np.bool_):
        return Tensor(np.array(value, dtype=np.bool_))
    if isinstance(value, int | np.integer):
        return Tensor(np.array(value, dtype=np.int64))
    if isinstance(value, float | np.floating):
        return Tensor(np.array(value, dtype=np.float32))
    return value


def numbers_as_tensors(
    sig: inspect.Signature, binding: Binding, args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """The arguments with each number where ``binding`` demands a Tensor made a 0-d
    tensor (for ``either``, the first, when none is a Tensor): JSON has no tensor of
    one number, so a service user's ``atan2(x, 2.0)`` means ``atan2(x, tensor(2.0))``."""
    pos = _positions(sig)
    args, kwargs = list(args), dict(kwargs)

    def convert(param: str) -> bool:
        index = pos.get(param, -1)
        if 0 <= index < len(args):
            before = args[index]
            args[index] = _as_tensor(before)
            return args[index] is not before
        if param in kwargs:
            before = kwargs[param]
            kwargs[param] = _as_tensor(before)
            return kwargs[param] is not before
        return False

    for param in binding.tensors:
        convert(param)
    if binding.either:
        values = [
            args[pos[p]] if 0 <= pos.get(p, -1) < len(args) else kwargs.get(p)
            for p in binding.either
        ]
        if not any(isinstance(v, Tensor) for v in values):
            convert(binding.either[0])
    return args, kwargs
