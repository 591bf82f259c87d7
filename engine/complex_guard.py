"""PyTorch's refusal of complex inputs, for the ops whose kernels take real dtypes only
(comparisons, clamps, sorts, rounding, special functions, random fills ...).

numpy computes most of them for complex arrays without a word (``<`` compares
lexicographically, ``maximum`` picks by real part, a cast to float drops the imaginary
part), so each such op says in its registration which error PyTorch raises
(``register(complex_inputs=...)``) and the registry wraps it with ``refusing_complex``:
a complex tensor (or Python complex number) among its arguments raises that error
before anything runs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from . import dtypes
from .errors import DtypeMismatchError
from .tensor import Tensor

# torch's message, "{type}" standing for the scalar type ('ComplexFloat'); a bare string
# is a NotImplementedError as torch's dtype dispatch raises, a (RuntimeError, message)
# pair a RuntimeError (torch's TORCH_CHECKs: "argmax(): does not support complex input")
ComplexRefusal = str | tuple[type[Exception], str]


class ComplexKernelError(DtypeMismatchError, NotImplementedError):
    """``"<kernel>" not implemented for 'ComplexFloat'``: PyTorch's NotImplementedError."""


class ComplexInputError(DtypeMismatchError):
    """A complex input an op refuses with PyTorch's RuntimeError."""


def _complex_dtype(value: Any) -> Any:
    """The complex dtype ``value`` carries (a tensor, a Python complex, a list of them)."""
    if isinstance(value, Tensor):
        dt = value._data.dtype
        return dt if dt.kind == "c" else None
    if isinstance(value, complex):
        return dtypes.complex64
    if isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, Tensor) and v._data.dtype.kind == "c":
                return v._data.dtype
    return None


def refusing_complex(fn: Callable[..., Any], refusal: ComplexRefusal) -> Callable[..., Any]:
    """``fn`` raising PyTorch's error when any argument is complex."""
    kind, message = (NotImplementedError, refusal) if isinstance(refusal, str) else refusal
    error = ComplexKernelError if kind is NotImplementedError else ComplexInputError

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            dt = _complex_dtype(value)
            if dt is not None:
                raise error(message.replace("{type}", dtypes.type_name(dt)))
        return fn(*args, **kwargs)

    return call


def not_in_engine(op: str, dtype: Any) -> ComplexKernelError:
    """The engine's refusal of a complex input PyTorch computes (a job left undone here,
    never a silent cast): a NotImplementedError naming the op and the dtype."""
    return ComplexKernelError(
        f"{op} is not implemented for '{dtypes.type_name(dtype)}' in this engine"
    )
