"""``torch``'s non-op helpers a ported model calls (``is_tensor``, ``numel``,
``from_numpy``, ``result_type`` ...) and its dtype names (``torch.float`` is float32,
``torch.long`` int64), so ``import engine as torch`` reads the same."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import dtypes
from .complex_guard import ComplexKernelError
from .creation import tensor
from .errors import ArgumentTypeError, BadArgumentsError
from .ops._util import broadcast_shape, normalize_dim
from .registry import OPS
from .tensor import Tensor

# PyTorch's dtype objects and their other spellings
float16 = half = dtypes.float16
float32 = float = dtypes.float32  # noqa: A001 - torch.float is a dtype
float64 = double = dtypes.float64
uint8 = dtypes.uint8
int8 = dtypes.int8
int16 = short = dtypes.int16
int32 = int = dtypes.int32  # noqa: A001 - torch.int is a dtype
int64 = long = dtypes.int64
bool = dtypes.bool_  # noqa: A001 - torch.bool is a dtype
complex64 = cfloat = dtypes.complex64
complex128 = cdouble = dtypes.complex128


def is_tensor(obj: Any) -> builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> builtins.bool:
    return input._data.dtype.kind == "f"


def is_complex(input: Tensor) -> builtins.bool:
    return input._data.dtype.kind == "c"


def numel(input: Tensor) -> builtins.int:
    if not isinstance(input, Tensor):
        raise ArgumentTypeError(
            f"numel(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return builtins.int(input._data.size)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor over ``ndarray``'s memory (writes show on both sides, as in PyTorch)."""
    if not isinstance(ndarray, np.ndarray):
        raise ArgumentTypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = dtypes.to_dtype(ndarray.dtype)
    return Tensor._make(ndarray if ndarray.dtype == dt else ndarray.astype(dt))


def as_tensor(data: Any, dtype: Any = None) -> Tensor:
    """``data`` itself when it is a tensor of that dtype, else a new tensor."""
    if isinstance(data, Tensor) and (dtype is None or dtypes.to_dtype(dtype) == data.dtype):
        return data
    if isinstance(data, Tensor):
        return data.to(dtypes.torch_name(dtypes.to_dtype(dtype)))
    return tensor(data, dtype=dtype)


asarray = as_tensor


def get_default_dtype() -> np.dtype:
    return dtypes.DEFAULT_FLOAT


def result_type(tensor: Any, other: Any) -> np.dtype:
    return dtypes.result_type(tensor, other)


def promote_types(type1: Any, type2: Any) -> np.dtype:
    out = dtypes.promote(dtypes.to_dtype(type1), dtypes.to_dtype(type2))
    assert out is not None
    return out


def can_cast(from_: Any, to: Any) -> builtins.bool:
    """PyTorch's ``canCast``: never down a category (float to int, int to bool)."""
    a, b = dtypes.to_dtype(from_), dtypes.to_dtype(to)
    return dtypes.category(a) <= dtypes.category(b)


def is_nonzero(input: Tensor) -> builtins.bool:
    """Whether a one-element tensor is not zero (PyTorch's refusals otherwise)."""
    if input._data.size == 0:
        raise BadArgumentsError("Boolean value of Tensor with no values is ambiguous")
    if input._data.size > 1:
        raise BadArgumentsError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input._data.reshape(()) != 0)


def _where_method(self: Tensor, condition: Any, other: Any) -> Tensor:
    """``x.where(condition, y)``: ``torch.where(condition, x, y)``."""
    result: Tensor = OPS["where"].fn(condition, self, other)
    return result


Tensor.where = _where_method  # type: ignore[attr-defined]


class device:  # noqa: N801 - PyTorch's name
    """``torch.device``: the engine has one, the CPU."""

    def __init__(self, type: str = "cpu", index: builtins.int | None = None) -> None:
        kind = str(type).split(":")[0]
        if kind != "cpu":
            raise BadArgumentsError(f"the engine runs on the CPU only, not on {type!r}")
        self.type, self.index = "cpu", index

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"

    def __eq__(self, other: object) -> builtins.bool:
        return str(other) == "cpu"

    def __hash__(self) -> builtins.int:
        return hash("cpu")


_CPU = device("cpu")


def _layout(self: Tensor) -> Any:
    return self._data


def _stride(self: Tensor, dim: builtins.int | None = None) -> Any:
    """Strides in elements, as PyTorch counts them (0 along a broadcast dim)."""
    size = self._data.itemsize
    strides = tuple(s // size for s in self._data.strides)
    return strides if dim is None else strides[dim]


def _is_contiguous(self: Tensor, memory_format: Any = None) -> builtins.bool:
    return builtins.bool(self._data.flags.c_contiguous)


_TENSOR_HELPERS: dict[str, Any] = {
    "is_contiguous": _is_contiguous,
    "stride": _stride,
    "cpu": lambda self, memory_format=None: self,
    "element_size": lambda self: self._data.itemsize,
    "ndimension": lambda self: self._data.ndim,
    "nelement": lambda self: self._data.size,
    "is_floating_point": is_floating_point,
    "is_complex": is_complex,
    "storage_offset": lambda self: 0,
    "data_ptr": lambda self: self._data.__array_interface__["data"][0],
}
for _name, _fn in _TENSOR_HELPERS.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
for _name, _value in {
    "device": property(lambda self: _CPU),
    "is_cuda": property(lambda self: False),
    "nbytes": property(lambda self: self._data.nbytes),
    "itemsize": property(lambda self: self._data.itemsize),
    "H": property(lambda self: self.T),
    "mH": property(lambda self: self.mT),
}.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _value)


def broadcast_tensors(*tensors: Any) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (views, gradients flow)."""

    ts = [t if isinstance(t, Tensor) else tensor(t) for t in tensors]
    shape = broadcast_shape(*(t.shape for t in ts))
    return tuple(OPS["expand"].fn(t, *shape) for t in ts)


def broadcast_shapes(*shapes: Any) -> tuple[builtins.int, ...]:

    return broadcast_shape(*(tuple(s) if isinstance(s, (list, tuple)) else (s,) for s in shapes))


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (``indexing="xy"`` swaps the first two dims)."""

    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise BadArgumentsError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    ts = list(tensors)
    for t in ts:
        if t.ndim > 1:
            raise BadArgumentsError(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: " + repr(t)
            )
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [max(t.numel(), 1) if t.ndim else 1 for t in ts]
    grids = []
    for k, t in enumerate(ts):
        shape = [1] * len(ts)
        shape[k] = sizes[k]
        grids.append(OPS["expand"].fn(OPS["reshape"].fn(t, *shape), *sizes))
    if swap:  # the grids of the swapped inputs, handed back in the callers' order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def unique(
    input: Tensor,
    sorted: builtins.bool = True,  # noqa: A002 - PyTorch's name
    return_inverse: builtins.bool = False,
    return_counts: builtins.bool = False,
    dim: builtins.int | None = None,
) -> Any:
    """The distinct elements (or slices along ``dim``), sorted; with the index of each input
    element among them and how often each occurs when asked. No gradient (as PyTorch)."""

    x = input._data
    if x.dtype.kind == "c":  # numpy sorts complex values; torch refuses them
        raise ComplexKernelError(f"\"unique\" not implemented for '{dtypes.type_name(x.dtype)}'")
    if dim is None:
        values, inverse, counts = np.unique(x.reshape(-1), return_inverse=True, return_counts=True)
        inverse = inverse.reshape(x.shape)
    else:
        d = normalize_dim(dim, x.ndim)
        values, inverse, counts = np.unique(x, axis=d, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
    out: list[Tensor] = [Tensor._make(np.ascontiguousarray(values))]
    if return_inverse:
        out.append(Tensor._make(inverse.astype(np.int64)))
    if return_counts:
        out.append(Tensor._make(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


if not hasattr(Tensor, "unique"):
    Tensor.unique = unique  # type: ignore[attr-defined]


def _tensor_arg(op: str, value: Any, position: builtins.int, name: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(
            f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
            f"{type(value).__name__}"
        )
    return value


def equal(input: Tensor, other: Tensor) -> builtins.bool:
    """True when both have the same shape and the same values (NaN equals nothing)."""
    a = _tensor_arg("equal", input, 1, "input")
    b = _tensor_arg("equal", other, 2, "other")
    return a.shape == b.shape and builtins.bool(np.array_equal(a._data, b._data))


def allclose(
    input: Tensor,
    other: Tensor,
    rtol: builtins.float = 1e-05,
    atol: builtins.float = 1e-08,
    equal_nan: builtins.bool = False,
) -> builtins.bool:
    """True when ``isclose`` holds everywhere (same dtype, broadcast shapes)."""
    a = _tensor_arg("allclose", input, 1, "input")
    b = _tensor_arg("allclose", other, 2, "other")
    return builtins.bool(OPS["isclose"].fn(a, b, rtol, atol, equal_nan).all().item())


__all__ = [
    "allclose",
    "equal",
    "broadcast_shapes",
    "broadcast_tensors",
    "device",
    "meshgrid",
    "unique",
    "as_tensor",
    "asarray",
    "bool",
    "can_cast",
    "cdouble",
    "cfloat",
    "complex128",
    "complex64",
    "double",
    "float",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "get_default_dtype",
    "half",
    "int",
    "int16",
    "int32",
    "int64",
    "int8",
    "is_complex",
    "is_floating_point",
    "is_nonzero",
    "is_tensor",
    "long",
    "numel",
    "promote_types",
    "result_type",
    "short",
    "uint8",
]
