"""Handles on remote tensors that read like ``torch.Tensor``.

A ``Tensor`` is a name in a remote session plus cached metadata. Operators
and methods send steps (``y = x ** 2`` is ``{"out": "_t..", "op": "pow",
"args": ["x", 2]}``); values come back as numpy arrays only when read
(``numpy()``, ``data``, ``item()``, ``repr``). ``x.grad`` is a ``GradRef``,
a handle on ``x.grad`` that reads and zeroes the remote gradient and, used in
an expression (``w - 0.1 * w.grad``), is bound to a temporary name first.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from gradcore.printing import DEFAULT_OPTIONS, elided_repr, tensor_repr
from gradcore.results import evaluate_results

from . import display, errors, wire
from .conversation import Conversation

if TYPE_CHECKING:
    from .steps import Remote


def awaited(conversation: Callable[..., Conversation]) -> Any:
    """A handle method from a conversation, driven by its session (as ``base.awaited``):
    a value from a ``Session``'s handle, an awaitable from an ``AsyncSession``'s."""

    @functools.wraps(conversation)
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return self._session._drive(conversation(self, *args, **kwargs))

    return method


def count_results(
    spec: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[int, bool]:
    """(how many results a call of the op makes, whether it returns a tuple), from its
    ``GET /v1/ops`` entry: the arguments bound by the entry's parameter names and
    defaults, then read by ``gradcore``'s ``evaluate_results``, the engine's own (one
    evaluator, not a copy; the client imports no engine module)."""
    rule = spec.get("results") or {"count": 1}
    bound = dict(spec.get("kwargs") or {})
    bound.update(zip(spec.get("args") or (), args))
    bound.update(kwargs)
    return evaluate_results(rule, bound)


def describe(meta: dict[str, Any], values: np.ndarray | None) -> str:
    """``repr`` by PyTorch's rules (``gradcore.printing``, the engine's too); without
    ``values``, the shape in their place (a large tensor is not downloaded to be shown)."""
    grad_fn, requires_grad = meta.get("grad_fn"), meta.get("requires_grad", False)
    if values is None:
        shape = tuple(meta["shape"])
        return elided_repr(shape, meta["dtype"], grad_fn=grad_fn, requires_grad=requires_grad)
    dtype = wire.dtype_name(values.dtype)
    return tensor_repr(values, dtype, grad_fn=grad_fn, requires_grad=requires_grad)


class TensorData(np.ndarray):
    """``tensor.data``: the values as a numpy array whose in-place tensor methods
    (``zero_``, ``fill_``, ``copy_``, ``add_``, ``sub_``, ``mul_``, ``div_``) also write
    the remote tensor, under no_grad, as ``x.data.zero_()`` does in PyTorch."""

    _owner: Tensor | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self._owner = None  # views and results are plain local arrays

    def _write(self, values: np.ndarray) -> TensorData:
        self[...] = values
        if self._owner is not None:
            self._owner._write_data(np.asarray(self))
        return self

    def zero_(self) -> TensorData:
        if isinstance(self._owner, GradRef):
            self._owner.zero_()
            self[...] = 0
            return self
        return self._write(np.zeros_like(self))

    def numpy(self) -> np.ndarray:
        return np.asarray(self).copy()

    def __repr__(self) -> str:
        values = np.asarray(self)
        return tensor_repr(values, wire.dtype_name(values.dtype))

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:  # as torch.Tensor.__format__: a 0-d tensor formats as its number
            return format(np.asarray(self).item(), spec)
        return format(str(self), spec)

    def norm(self, p: float = 2) -> np.floating[Any]:
        """``y.data.norm()`` of old tutorials (``while y.data.norm() < 1000``)."""
        return np.linalg.norm(np.asarray(self).reshape(-1), ord=p)  # type: ignore[no-any-return]

    def _grad_guard(self) -> None:
        if isinstance(self._owner, GradRef):
            raise NotImplementedError("a remote .grad can only be read and zeroed (zero_())")

    def fill_(self, value: float) -> TensorData:
        self._grad_guard()
        return self._write(np.full_like(self, value))

    def copy_(self, src: Any) -> TensorData:
        self._grad_guard()
        return self._write(np.broadcast_to(np.asarray(src, dtype=self.dtype), self.shape))

    def add_(self, other: Any, *, alpha: float = 1) -> TensorData:
        self._grad_guard()
        return self._write(np.asarray(self) + alpha * np.asarray(other))

    def sub_(self, other: Any, *, alpha: float = 1) -> TensorData:
        self._grad_guard()
        return self._write(np.asarray(self) - alpha * np.asarray(other))

    def mul_(self, other: Any) -> TensorData:
        self._grad_guard()
        return self._write(np.asarray(self) * np.asarray(other))

    def div_(self, other: Any) -> TensorData:
        self._grad_guard()
        return self._write(np.asarray(self) / np.asarray(other))


class Tensor:
    """A tensor bound to ``name`` in a remote session."""

    __array_ufunc__ = None  # numpy defers to our reflected operators: ndarray * t -> t.__rmul__
    __hash__ = object.__hash__

    def __init__(self, session: Remote, name: str, meta: dict[str, Any] | None = None) -> None:
        self._session = session
        self._name = name
        self._meta = meta
        self._value: np.ndarray | None = None  # cached values, dropped when written
        self._stale = False  # the name was rebound to another tensor
        self._failed: errors.GradserveError | None = None  # its batched step failed

    # --- identity and metadata ---------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def session(self) -> Remote:
        return self._session

    def _check(self) -> None:
        if self._failed is not None:
            raise self._failed
        if self._stale:
            raise errors.GradserveError(
                f"tensor {self._name!r} was rebound to another tensor in this session; this "
                "handle no longer names anything (give intermediate results no name, or a new one)",
                code="stale_handle",
            )

    def _read_meta(self) -> Conversation:
        """The metadata, after what is queued (a queued step may change it)."""
        self._check()
        if self._meta is None or self._session._queued():
            yield from self._session._flush()
            self._check()
        if self._meta is None:
            self._set_meta((yield from self._session._fetch(self._name, values=False)))
        assert self._meta is not None
        return self._meta

    meta = awaited(_read_meta)
    meta.__doc__ = "The tensor's metadata (shape, dtype, requires_grad, is_leaf, grad_fn, version)."

    def _metadata(self) -> dict[str, Any]:
        """The metadata behind the attributes (``shape``, ``dtype``, ...), read when unknown."""
        self._check()
        if self._meta is None:
            return self.meta()  # type: ignore[no-any-return]
        return self._meta

    def _set_meta(self, meta: dict[str, Any]) -> None:
        meta = dict(meta)
        data = meta.pop("data", None)
        grad = meta.pop("grad", None)
        if meta:  # (a binary read brings values only)
            self._meta = meta
        if data is not None:
            self._value = wire.decode(data)
        if grad is not None:
            self._session.steps.grads[self._name] = wire.decode(grad)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._metadata()["shape"])

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        return self.shape if dim is None else self.shape[dim]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._metadata()["dtype"])

    @property
    def requires_grad(self) -> bool:
        return bool(self._metadata()["requires_grad"])

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    @property
    def is_leaf(self) -> bool:
        return bool(self._metadata()["is_leaf"])

    @property
    def grad_fn(self) -> str | None:
        """The name of the node that made this tensor (``"PowBackward0"``), or None."""
        return self._metadata()["grad_fn"]

    @property
    def retains_grad(self) -> bool:
        return bool(self._metadata()["retains_grad"])

    @property
    def _version(self) -> int:
        self._check()
        self._meta = self._session.fetch(self._name, values=False)
        return int(self._meta["version"])

    # --- values --------------------------------------------------------------------------------

    def _read_values(self) -> Conversation:
        """The values (cached until written). An async session's read sends what is queued
        first, the value riding in that batch when the server fetches."""
        self._check()
        session = self._session
        if session.deferred and (self._value is None or session._queued()):
            got = yield from session._flush(fetch=[self._name])
            self._check()
            if self._name in got:
                self._value = wire.decode(got[self._name])
        if self._value is None:
            meta = yield from session._fetch(self._name, values=True)
            self._check()
            if self._value is None:
                self._set_meta(meta)
        assert self._value is not None
        return self._value

    def _values(self) -> np.ndarray:
        return self._session._drive(self._read_values())  # type: ignore[no-any-return]

    def _numpy(self) -> Conversation:
        return (yield from self._read_values()).copy()

    numpy = awaited(_numpy)
    numpy.__doc__ = "The values, as a new numpy array (what is queued is sent first)."

    def _tolist(self) -> Conversation:
        return (yield from self._read_values()).tolist()

    tolist = awaited(_tolist)

    def _item(self) -> Conversation:
        values = yield from self._read_values()
        if values.size != 1:
            raise RuntimeError(
                f"a Tensor with {values.size} elements cannot be converted to Scalar"
            )
        return values.reshape(()).item()

    item = awaited(_item)

    def _grad_values(self) -> Conversation:
        """``x.grad`` as a numpy array, or None when it is None."""
        self._check()
        value, _ = yield from self._session._read_grad(self._name)
        return None if value is None else value.copy()

    grad_values = awaited(_grad_values)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        values = self._values()
        return values.astype(dtype) if dtype is not None else values.copy()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __bool__(self) -> bool:
        values = self._values()
        if values.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(values.reshape(()))

    @property
    def data(self) -> TensorData:
        """The values as a numpy array; ``x.data.zero_()`` and ``w.data -= ...`` write back."""
        out = self._values().copy().view(TensorData)
        out._owner = self
        return out

    @data.setter
    def data(self, values: Any) -> None:
        self._write_data(np.asarray(values))

    def _write_data(self, values: np.ndarray) -> None:
        self._check()
        self._session.steps.assign_value(self, values)

    def __repr__(self) -> str:
        if self._failed is not None or self._stale:
            return f"<gradserve.Tensor {self._name!r} (unusable: {'failed' if self._failed else 'rebound'})>"
        meta = self._metadata()
        size = int(np.prod(meta["shape"], dtype=np.int64))
        if self._value is None and size > DEFAULT_OPTIONS.threshold:
            return describe(meta, None)  # summarized, not fetched
        return describe(meta, self._values())

    def _repr_html_(self) -> str:
        meta = None if self._failed is not None or self._stale else self._meta
        return display.tensor_html(repr(self), meta)

    def _repr_markdown_(self) -> str:
        return display.tensor_markdown(repr(self))

    def __format__(self, spec: str) -> str:
        if self._failed is None and not self._stale and self.ndim == 0:
            return format(self.item(), spec)  # as torch.Tensor.__format__
        return format(repr(self), spec)

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    # --- autograd --------------------------------------------------------------------------------

    _grad_ref: type[GradRef]  # the class of ``x.grad`` (set below GradRef)

    @property
    def grad(self) -> GradRef | None:
        """``x.grad``: a handle on the remote gradient, or None (with PyTorch's warning for a
        non-leaf that does not retain its grad). In an async session always a reference:
        in an op (``w - lr * w.grad``) the remote grad, ``await x.grad.numpy()`` reads it."""
        self._check()
        if self._session.grad_pending(self._name):
            return self._grad_ref(self)  # a queued backward sets it: read when used
        value, warning = self._session.read_grad(self._name)
        if warning:
            warnings.warn(warning, UserWarning, stacklevel=2)
        return self._grad_ref(self) if value is not None else None

    @grad.setter
    def grad(self, value: None) -> None:
        if self._session.deferred:
            raise NotImplementedError("in an AsyncSession: s.zero_grad([t], set_to_none=True)")
        if value is not None:
            raise NotImplementedError("a remote .grad can only be set to None")
        self._session.clear_grad(self._name)

    def backward(
        self,
        gradient: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> Any:
        """``y.backward(...)`` (``await y.backward(...)`` in an async session)."""
        return self._session.backward(
            [self],
            None if gradient is None else [gradient],
            retain_graph=retain_graph,
            create_graph=create_graph,
            inputs=inputs,
        )

    def _retain_grad(self) -> Conversation:
        self._check()
        yield from self._session._flush()
        self._set_meta((yield from self._session._patch(self, {"retain_grad": True})))

    retain_grad = awaited(_retain_grad)

    def _requires_grad_(self, requires_grad: bool = True) -> Conversation:
        self._check()
        yield from self._session._flush()
        self._set_meta((yield from self._session._patch(self, {"requires_grad": requires_grad})))
        return self

    requires_grad_ = awaited(_requires_grad_)

    def detach(self) -> Tensor:
        return self._op("detach")

    def zero_(self) -> Tensor:
        return self._inplace("mul", 0)

    def fill_(self, value: float) -> Tensor:
        self._write_data(np.full(self.shape, value, dtype=self.dtype))
        return self

    def copy_(self, src: Any) -> Tensor:
        if isinstance(src, Tensor):
            return self._inplace("clone", src)
        self._write_data(np.broadcast_to(np.asarray(src, dtype=self.dtype), self.shape))
        return self

    # --- ops -------------------------------------------------------------------------------------

    def _op(self, op: str, *args: Any, **kwargs: Any) -> Any:
        return self._session.steps.apply(op, (self, *args), kwargs)

    def bind(self, name: str) -> Tensor:
        """Bind this tensor to another session name too (``y = x ** 2`` then ``y.bind("y")``)."""
        return self._session.steps.bind_as(self, name)

    def __getattr__(self, op: str) -> Any:
        # any catalogue op with a method form (x.cumsum(...)) or an in-place form
        # (x.exp_()), as its GET /v1/ops entry's "forms" say
        if op.startswith("_"):
            raise AttributeError(op)
        if op.endswith("_"):
            self._session.steps.check_op(op[:-1], form="inplace")
            return lambda *args, **kwargs: self._inplace(op[:-1], *args, **kwargs)
        self._session.steps.check_op(op, form="method")
        return lambda *args, **kwargs: self._op(op, *args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return self._op("max", *args, **kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return self._op("min", *args, **kwargs)

    def split(self, *args: Any, **kwargs: Any) -> Any:
        return self._op("split", *args, **kwargs)

    def chunk(self, *args: Any, **kwargs: Any) -> Any:
        return self._op("chunk", *args, **kwargs)

    @property
    def T(self) -> Tensor:  # noqa: N802 - PyTorch's name
        return self._op("permute", *reversed(range(self.ndim)))  # PyTorch: PermuteBackward0

    def __getitem__(self, index: Any) -> Tensor:
        return self._session.steps.index(self, index)

    # arithmetic operators travel as expressions (``_t1 ** 2``, ``2 - x``, ``w - 0.1 * w.grad``):
    # the server's expression parser records them exactly as PyTorch's operators do
    def __add__(self, other: Any) -> Tensor:
        return self._session.steps.binary("+", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return self._session.steps.binary("+", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return self._session.steps.binary("-", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return self._session.steps.binary("-", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return self._session.steps.binary("*", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return self._session.steps.binary("*", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return self._session.steps.binary("/", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._session.steps.binary("/", other, self)

    def __pow__(self, other: Any) -> Tensor:
        return self._session.steps.binary("**", self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return self._session.steps.binary("**", other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return self._session.steps.binary("@", self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return self._session.steps.binary("@", other, self)

    def __neg__(self) -> Tensor:
        return self._op(self._session.steps.operator("__neg__"))

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self._op(self._session.steps.operator("__abs__"))

    def __invert__(self) -> Tensor:
        return self._op(self._session.steps.operator("__invert__"))

    def __and__(self, other: Any) -> Tensor:
        return self._op(self._session.steps.operator("__and__"), other)

    def __or__(self, other: Any) -> Tensor:
        return self._op(self._session.steps.operator("__or__"), other)

    def __lt__(self, other: Any) -> Tensor:
        return self._op(self._session.steps.operator("__lt__"), other)

    def __le__(self, other: Any) -> Tensor:
        return self._op(self._session.steps.operator("__le__"), other)

    def __gt__(self, other: Any) -> Tensor:
        return self._op(self._session.steps.operator("__gt__"), other)

    def __ge__(self, other: Any) -> Tensor:
        return self._op(self._session.steps.operator("__ge__"), other)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._op(self._session.steps.operator("__eq__"), other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._op(self._session.steps.operator("__ne__"), other)

    # in place: under no_grad (or on a non-leaf) as PyTorch allows; `w -= lr * w.grad` included
    def _inplace(self, op: str, *args: Any, **kwargs: Any) -> Tensor:
        self._session.steps.inplace(self, op, args, kwargs)
        return self

    def add_(self, other: Any, *, alpha: float = 1) -> Tensor:
        return self._inplace("add", other, **({"alpha": alpha} if alpha != 1 else {}))

    def sub_(self, other: Any, *, alpha: float = 1) -> Tensor:
        return self._inplace("sub", other, **({"alpha": alpha} if alpha != 1 else {}))

    def mul_(self, other: Any) -> Tensor:
        return self._inplace("mul", other)

    def div_(self, other: Any) -> Tensor:
        return self._inplace("div", other)

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace(self._session.steps.operator("__iadd__"), other)

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace(self._session.steps.operator("__isub__"), other)

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace(self._session.steps.operator("__imul__"), other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace(self._session.steps.operator("__itruediv__"), other)


class GradRef(Tensor):
    """``x.grad``: reads and zeroes the remote gradient of ``x``; in an op it stands for
    the expression ``x.grad`` (bound to a temporary name in the same request)."""

    def __init__(self, owner: Tensor) -> None:
        super().__init__(owner._session, owner._name)
        self._owner = owner

    @property
    def name(self) -> str:
        return f"{self._name}.grad"

    def _read_values(self) -> Conversation:
        self._owner._check()
        value, _ = yield from self._session._read_grad(self._name)
        if value is None:
            raise RuntimeError(f"{self._name}.grad is None")
        return value

    def _numpy(self) -> Conversation:
        """The grad's values; in an async session None when there is none (its ``x.grad``
        is always a reference, so this is where it says so)."""
        self._owner._check()
        value, _ = yield from self._session._read_grad(self._name)
        if value is None and self._session.deferred:
            return None
        if value is None:
            raise RuntimeError(f"{self._name}.grad is None")
        return value.copy()

    numpy = awaited(_numpy)

    def meta(self) -> dict[str, Any]:
        raise TypeError("a .grad has no session metadata; read its values (x.grad.numpy())")

    def _metadata(self) -> dict[str, Any]:
        values = self._values()
        return {
            "name": self.name,
            "shape": list(values.shape),
            "dtype": values.dtype.name if values.dtype.kind != "b" else "bool",
            "requires_grad": False,
            "is_leaf": True,
            "grad_fn": None,
            "retains_grad": False,
            "version": 0,
        }

    @property
    def _version(self) -> int:
        return 0

    @property  # type: ignore[misc]
    def grad(self) -> None:  # type: ignore[override]
        return None

    def zero_(self) -> GradRef:
        self._session.zero_grad(tensors=[self._owner])
        return self

    def _write_data(self, values: np.ndarray) -> None:
        raise NotImplementedError("a remote .grad can only be read and zeroed (zero_())")

    def _inplace(self, op: str, *args: Any, **kwargs: Any) -> Tensor:
        raise NotImplementedError(
            f"in-place {op}_ on a remote .grad is not supported; it can be read and zeroed"
        )

    def backward(self, *args: Any, **kwargs: Any) -> Any:
        """``x.grad.backward()`` (after ``create_graph=True``): through a tensor bound to it."""
        return self._session.steps.expr(f"{self._name}.grad").backward(*args, **kwargs)

    def retain_grad(self) -> None:
        raise RuntimeError("can't retain_grad on a .grad")

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        raise RuntimeError("requires_grad_ on a remote .grad: detach() it into a tensor first")


Tensor._grad_ref = GradRef
