"""Batched tensors and vmap levels: what a function under ``vmap`` sees.

A ``BatchedTensor`` is a Tensor that stands for one sample of a batch: it holds
the whole batch as ``value`` (an ordinary tensor, or a BatchedTensor of an outer
vmap) with the batch dim first, and answers ``shape``/``dim()``/``size()`` with
one sample's. Each vmap pushes a ``Level`` (its batch size and randomness); an
op on batched tensors is dispatched (``engine.dispatch``) to the batching rule
of the innermost level among its arguments, which runs the op on the ``value``s
and wraps the result at that level. Autograd records on the values, so
gradients flow through a vmap as through any op.
"""

from __future__ import annotations

import itertools
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BadArgumentsError
from ..registry import OPS
from ..shape_inplace import SHAPE_INPLACE_METHODS, become
from ..tensor import Tensor

ITEM_MESSAGE = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
    "calling .item() on a Tensor, please try to rewrite what you're doing with other "
    "operations. If error is occurring somewhere inside PyTorch internals, please file a "
    "bug report."
)
DATA_DEPENDENT_MESSAGE = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
    "flow. We don't support that yet, please file an issue at "
    "https://github.com/pytorch/pytorch/issues ."
)


@dataclass(frozen=True)
class Level:
    """One running vmap: its identity (inner vmaps have higher ids), batch size and
    randomness mode."""

    id: int
    size: int
    randomness: str


_ids = itertools.count(1)
levels: ContextVar[tuple[Level, ...]] = ContextVar("vmap_levels", default=())


def new_level(size: int, randomness: str) -> Level:
    return Level(next(_ids), size, randomness)


class BatchedTensor(Tensor):
    """One sample's view of a batch held in ``value`` (batch dim first) at ``level``."""

    __slots__ = ("value", "level")
    value: Tensor
    level: Level

    def __init__(self, value: Tensor, level: Level) -> None:  # noqa: D107
        self.value = value
        self.level = level
        self._grad = None
        self._grad_fn = None
        self._output_nr = 0
        self._retains_grad = False
        self._vc = value._vc
        self._hooks = None
        self._view = None
        self.requires_grad_flag = False

    # -- one sample's metadata ---------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return tuple(self.value.shape[1:])

    @property
    def dtype(self) -> np.dtype:  # type: ignore[override]
        return self.value.dtype

    @property
    def ndim(self) -> int:  # type: ignore[override]
        return self.value.ndim - 1

    def dim(self) -> int:
        return self.value.ndim - 1

    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def size(self, dim: int | None = None) -> Any:
        shape = self.shape
        if dim is None:
            return shape
        return shape[dim]

    def __len__(self) -> int:
        if not self.shape:
            raise BadArgumentsError("len() of a 0-d tensor")
        return self.shape[0]

    @property  # type: ignore[override, misc]
    def requires_grad(self) -> bool:
        return self.value.requires_grad

    @property  # type: ignore[override, misc]
    def grad_fn(self) -> Any:
        return self.value.grad_fn

    @property
    def is_leaf(self) -> bool:  # type: ignore[override]
        return self.value.is_leaf

    # -- what cannot be asked of one sample --------------------------------
    def item(self) -> Any:
        raise BadArgumentsError(ITEM_MESSAGE)

    def __bool__(self) -> bool:
        raise BadArgumentsError(DATA_DEPENDENT_MESSAGE)

    def tolist(self) -> Any:
        raise BadArgumentsError(ITEM_MESSAGE)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        raise BadArgumentsError(
            "vmap: numpy() of a batched tensor is not supported: return the tensor from "
            "the vmapped function instead"
        )

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self.numpy()

    def __float__(self) -> float:
        raise BadArgumentsError(ITEM_MESSAGE)

    def __int__(self) -> int:
        raise BadArgumentsError(ITEM_MESSAGE)

    def __iter__(self) -> Any:
        return iter(OPS["unbind"].fn(self, 0))

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self.level.id}, bdim=0, value=\n{self.value!r}\n)"

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise BadArgumentsError(
            "vmap: backward() inside vmap is not supported: use engine.func.grad or vjp "
            "inside the vmapped function instead"
        )

    def detach(self) -> Tensor:
        return BatchedTensor(self.value.detach(), self.level)

    # -- in-place writes on the batch ----------------------------------------
    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        self.value.copy_(physical(src, self.level, self.shape))
        return self

    def zero_(self) -> Tensor:
        self.value.zero_()
        return self

    def fill_(self, value: Any) -> Tensor:
        if isinstance(value, BatchedTensor):
            return self.copy_(value)
        self.value.fill_(value)
        return self


def _batched_shape_inplace(name: str) -> Any:
    """``squeeze_`` and friends on one sample: the batch value becomes the rule's view."""
    op = name[:-1]

    def method(self: BatchedTensor, *args: Any, **kwargs: Any) -> BatchedTensor:
        self.value._check_inplace()
        out = OPS[op].fn(self, *args, **kwargs)
        become(self.value, out.value)
        return self

    method.__name__ = name
    return method


for _name in SHAPE_INPLACE_METHODS:
    setattr(BatchedTensor, _name, _batched_shape_inplace(_name))


def physical(x: Any, level: Level, shape: tuple[int, ...]) -> Tensor:
    """``x`` as a full batch of ``shape`` samples at ``level``: its value when batched
    there (broadcast to ``shape``), else expanded along a new batch dim."""
    if isinstance(x, BatchedTensor) and x.level is level:
        v = x.value
        if tuple(v.shape[1:]) != shape:
            v = OPS["expand"].fn(pad_to(v, len(shape)), (level.size, *shape))
        return v
    if not isinstance(x, Tensor):
        x = OPS["tensor"].fn(x) if "tensor" in OPS else Tensor(np.asarray(x))
    return OPS["expand"].fn(OPS["unsqueeze"].fn(x, 0), (level.size, *shape))


def pad_to(value: Tensor, ndim: int) -> Tensor:
    """A batch value (batch first) with size-1 dims after the batch so each sample has
    ``ndim`` dims (how broadcasting lines samples up with their right ends)."""
    missing = ndim - (value.ndim - 1)
    if missing <= 0:
        return value
    shape = tuple(value.shape)
    return OPS["reshape"].fn(value, (shape[0], *([1] * missing), *shape[1:]))


def wrap(value: Any, level: Level) -> Any:
    """Results of a rule (a tensor, or a tuple/list of them) wrapped at ``level``."""
    if isinstance(value, Tensor):
        return BatchedTensor(value, level)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # max's (values, indices)
        return type(value)(*(wrap(v, level) for v in value))
    if isinstance(value, tuple | list):
        return type(value)(wrap(v, level) for v in value)
    return value


def unwrap(x: Any, level: Level) -> tuple[Any, bool]:
    """(the batch value, True) for a tensor batched at ``level``, else (x, False)."""
    if isinstance(x, BatchedTensor) and x.level is level:
        return x.value, True
    return x, False


def top_level(args: Any) -> Level | None:
    """The innermost level of the batched tensors in ``args`` (nested lists and tuples
    and dict values looked into), None when there is none."""
    best: Level | None = None
    stack = [args]
    while stack:
        a = stack.pop()
        if isinstance(a, BatchedTensor):
            if best is None or a.level.id > best.id:
                best = a.level
        elif isinstance(a, tuple | list):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
    return best


def logical_ndim(x: Any, level: Level) -> int:
    value, batched = unwrap(x, level)
    if not isinstance(value, Tensor):
        return 0
    return value.ndim - 1 if batched else value.ndim


def _reflected(fn: Any) -> Any:
    return lambda self, other: fn(other, self)


def _bind_operators() -> None:
    """Python operators on a batched tensor go through the dispatching ops (the Tensor
    binds them to the ops' own functions, which would read the batch as one array)."""
    for spec in OPS.values():
        for dunder in spec.operators:
            if not (dunder.startswith("__i") and "__" + dunder[3:] in spec.operators):
                setattr(BatchedTensor, dunder, spec.fn)
        for dunder in spec.reflected:
            setattr(BatchedTensor, dunder, _reflected(spec.fn))
    div, mul, recip = OPS["div"].fn, OPS["mul"].fn, OPS["reciprocal"].fn
    BatchedTensor.__truediv__ = div  # type: ignore[method-assign]
    BatchedTensor.__rtruediv__ = lambda self, other: mul(recip(self), other)  # type: ignore[method-assign]
    BatchedTensor.__hash__ = object.__hash__  # type: ignore[method-assign, assignment]


_bind_operators()
