"""The Tensor: a numpy array plus autograd metadata, with PyTorch's attributes.

Operators and methods are bound by ``engine.methods`` from the op registry, so
this module holds only state and the rules about that state (leaf flags,
``.grad`` access, ``requires_grad_``, in-place version bumps).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes, function, views
from .errors import (
    BadArgumentsError,
    DtypeNotDifferentiableError,
    NoGradFnError,
    NotLeafError,
    ShapeMismatchError,
)
from .grad_mode import _enabled

NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)
REQUIRES_GRAD_CONSTRUCT_MESSAGE = (
    "Only Tensors of floating point and complex dtype can require gradients"
)
REQUIRES_GRAD_DTYPE_MESSAGE = "only Tensors of floating point dtype can require gradients"
NOT_LEAF_MESSAGE = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)


class RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` unregisters the hook."""

    def __init__(self, hooks: list[Any], hook: Any) -> None:
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class Tensor:
    """An n-dimensional array that can record the ops applied to it."""

    __slots__ = (
        "_data",
        "requires_grad_flag",
        "_grad",
        "_grad_fn",
        "_output_nr",
        "_retains_grad",
        "_vc",
        "_hooks",
        "_view",
        "__weakref__",
    )
    __array_priority__ = 1000  # numpy defers to our reflected operators

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        arr = np.asarray(data)
        self._data = arr = arr.astype(
            dtypes.to_dtype(arr.dtype if dtype is None else dtype), copy=False
        )
        self.requires_grad_flag = False
        self._grad: Tensor | None = None
        self._grad_fn: function.Node | None = None
        self._output_nr = 0
        self._retains_grad = False
        self._vc = [0]
        self._hooks: list[Callable[[Tensor], Tensor | None]] | None = None
        self._view: views.ViewInfo | None = None
        if requires_grad:
            if not dtypes.is_floating(arr.dtype):
                raise DtypeNotDifferentiableError(REQUIRES_GRAD_CONSTRUCT_MESSAGE)
            self.requires_grad_flag = True

    @classmethod
    def _make(
        cls,
        data: np.ndarray,
        requires_grad: bool = False,
        grad_fn: function.Node | None = None,
        output_nr: int = 0,
    ) -> Tensor:
        """Fast constructor for op results: no validation, data must be an ndarray."""
        t = object.__new__(cls)
        if type(data) is not np.ndarray:
            data = np.asarray(data)
        t._data = data
        t.requires_grad_flag = requires_grad
        t._grad = None
        t._grad_fn = grad_fn
        t._output_nr = output_nr
        t._retains_grad = False
        t._vc = [0]
        t._hooks = None
        t._view = None
        return t

    # -- autograd flags -----------------------------------------------------
    @property
    def grad_fn(self) -> function.Node | None:
        """The node that made this tensor. A view whose base (or a sibling view) was
        written in place since regenerates it from the base's new history first."""
        info = self._view
        if info is not None and info.attr_version != self._vc[0]:
            views.refresh(self)
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, value: function.Node | None) -> None:
        self._grad_fn = value

    @property
    def _base(self) -> Tensor | None:
        """The tensor this one is a view of (PyTorch's ``_base``), or None."""
        info = self._view
        return None if info is None else info.base

    def _is_view(self) -> bool:
        return self._view is not None

    @property
    def requires_grad(self) -> bool:
        if self._view is not None:
            self.grad_fn  # noqa: B018 - a stale view may now require grad through its base
        return self.requires_grad_flag

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def _version(self) -> int:
        return self._vc[0]

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set requires_grad on a leaf; PyTorch refuses it on non-leaves and integers."""
        requires_grad = bool(requires_grad)
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise NotLeafError(NOT_LEAF_MESSAGE)
        if requires_grad and not dtypes.is_floating(self._data.dtype):
            raise DtypeNotDifferentiableError(REQUIRES_GRAD_DTYPE_MESSAGE)
        self.requires_grad_flag = requires_grad
        return self

    def retain_grad(self) -> None:
        """Populate ``.grad`` for this non-leaf during backward (no-op on leaves)."""
        if not self.requires_grad_flag:
            raise NoGradFnError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self.grad_fn.register_tensor(self._output_nr, self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a
        replacement. Returns a handle whose ``remove()`` unregisters it."""
        if not self.requires_grad_flag:
            raise NoGradFnError("cannot register a hook on a tensor that doesn't require gradient")
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        if self.grad_fn is not None:
            self.grad_fn.register_tensor(self._output_nr, self)
        return RemovableHandle(self._hooks, hook)

    @property
    def grad(self) -> Tensor | None:
        # the node as last set: reading .grad does not regenerate a stale view's (PyTorch)
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            warnings.warn(NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and tuple(value.shape) != tuple(self.shape):
            raise ShapeMismatchError("assigned grad has data of a different size")
        self._grad = value

    # -- plain array facts ---------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def size(self, dim: int | None = None) -> Any:
        return self._data.shape if dim is None else self._data.shape[dim]

    def item(self) -> Any:
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a numpy array sharing this tensor's memory (``force`` skips the
        requires-grad check, as in PyTorch)."""
        if self.requires_grad_flag and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(t)``: the values (a copy only when a dtype or ``copy`` asks)."""
        arr = self._data if dtype is None else self._data.astype(dtype)
        return np.array(arr, copy=True) if copy else arr

    @property
    def data(self) -> Tensor:
        """PyTorch's ``.data``: a tensor sharing this one's memory, without history, with
        a version counter of its own (so ``while y.data.norm() < 1000`` and
        ``w.data -= lr * w.grad.data`` work as in old tutorials, unseen by autograd)."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value: Any) -> None:
        """``x.data = t``: ``x`` now holds ``t``'s values (shape and dtype too); its history,
        flags and version are untouched, as in PyTorch."""
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    if TYPE_CHECKING:
        # Operators and op methods are bound from the registry at import
        # (engine.methods); these declarations tell the type checker.
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __getitem__(self, index: Any) -> Tensor: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __getattr__(self, name: str) -> Any: ...

    def __iter__(self) -> Any:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __repr__(self) -> str:
        from .printing import tensor_repr

        return tensor_repr(self)

    # -- history -------------------------------------------------------------
    def detach(self) -> Tensor:
        """A tensor sharing data (and the version counter) with no history."""
        t = Tensor._make(self._data)
        t._vc = self._vc
        return t

    def _view_of(
        self,
        parent: Tensor,
        cls: type[function.Function],
        params: dict[str, Any],
        nr: int | None,
        grad_on: bool,
    ) -> Tensor:
        """Mark this tensor as a view of ``parent`` made by ``cls``: one memory, one
        version counter, and a way to replay it from the root base."""
        return views.make_view(self, parent, cls, params, nr, grad_on)

    def detach_(self) -> Tensor:
        """Drop the history in place; a node that saved this tensor notices at backward."""
        if self._view is not None:
            raise BadArgumentsError(views.DETACH_VIEW_MESSAGE)
        if self._grad_fn is not None:
            self._output_nr = function.detached_marker()
        self._grad_fn = None
        self.requires_grad_flag = False
        return self

    # -- in-place writes -----------------------------------------------------
    def _check_inplace(self) -> None:
        """PyTorch's refusals before an in-place write (overlapping memory, leaves, views)."""
        views.check_inplace(self, _enabled.get())

    def _write(self, value: np.ndarray) -> Tensor:
        """Write ``value`` into this tensor's memory and bump its version."""
        if not self._data.flags.writeable:
            # a view of a view that repeats elements (a row of an expand) is read-only in
            # numpy; the write reaches the base's memory as in PyTorch (overlapping writes
            # were refused before); anything else read-only gets memory of its own
            alias = _writable_alias(self._data) if self._view is not None else None
            self._data = alias if alias is not None else np.array(self._data)
        np.copyto(self._data, value, casting="unsafe")
        self._vc[0] += 1
        return self

    def _inplace(self, result: Tensor) -> Tensor:
        """Finish an in-place op given its out-of-place result: write, bump, rebase history.
        ``result``'s node read this tensor's pre-write value as its input 0."""
        self._check_inplace()
        if result._data.shape != self._data.shape:
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(result.shape)}"
            )
        fn = result._grad_fn
        info = self._view
        if fn is None:
            self._write(result._data)
            return self
        nr = result._output_nr
        if info is not None:
            views.check_multi_output(self)
            if info.no_grad:
                raise BadArgumentsError(views.NO_GRAD_VIEW_MESSAGE)
            old_edge = views.edge_of(self)
            self._write(result._data)
            views.rebase(self, fn, nr, old_edge)
            self.grad_fn  # noqa: B018 - regenerated now, as PyTorch's rebase_history does
        else:
            self._write(result._data)
            views.set_history(self, fn, nr)
        if fn._result is not None:
            # the op saved its result: that is now this tensor, version-checked as such
            fn._result[nr] = (self._data, self._vc, self._vc[0])
            if info is not None and self._grad_fn is not None:
                held = (weakref.ref(self._grad_fn), self._output_nr)
                fn.result_views = {**(fn.result_views or {}), nr: held}
        return self

    def _records(self, *others: Any) -> bool:
        """Whether an in-place op on this tensor with ``others`` records a node."""
        if not _enabled.get():
            return False
        if self.requires_grad:
            return True
        return any(type(o) is Tensor and o.requires_grad for o in others)

    def zero_(self) -> Tensor:
        self._check_inplace()
        if self._records():
            return self._inplace(views.ZeroBackward0.apply(_snapshot(self)))
        return self._write(np.zeros((), dtype=self._data.dtype))

    def fill_(self, value: Any) -> Tensor:
        self._check_inplace()
        if isinstance(value, Tensor):
            if value._data.ndim:
                raise BadArgumentsError(
                    "fill_ only supports 0-dimension value tensor but got tensor with "
                    f"{value._data.ndim} dimensions."
                )
            if self._records(value):
                source = _snapshot(self) if self.requires_grad_flag else self
                return self._inplace(views.FillBackward3.apply(source, value))
            return self._write(value._data)
        if self._records():
            return self._inplace(views.FillBackward2.apply(_snapshot(self), value=value))
        return self._write(np.asarray(float(value)))

    def copy_(self, src: Tensor | Any) -> Tensor:
        """Write ``src`` (broadcast to this shape, cast to this dtype) into this tensor."""
        s = src if isinstance(src, Tensor) else Tensor._make(np.asarray(src))
        self._check_inplace()
        try:
            np.broadcast_to(s._data, self._data.shape)
        except ValueError:
            raise ShapeMismatchError(_copy_shape_message(self.shape, s.shape)) from None
        if self._records(s):
            source = _snapshot(self) if self.requires_grad_flag else self
            return self._inplace(views.CopyBackwards.apply(source, s))
        return self._write(s._data)


def _copy_shape_message(dst: tuple[int, ...], src: tuple[int, ...]) -> str:
    for i in range(1, max(len(dst), len(src)) + 1):
        a = dst[-i] if i <= len(dst) else 1
        b = src[-i] if i <= len(src) else 1
        if a != b and b != 1:
            return (
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                f"non-singleton dimension {max(len(dst), len(src)) - i}"
            )
    return f"expand: the number of sizes provided ({len(dst)}) must be greater or equal"


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t`` that keeps its history: the input to the op an in-place write replaces."""
    fn = t.grad_fn  # a stale view regenerates first
    return Tensor._make(t._data.copy(), t.requires_grad_flag, fn, t._output_nr)


function._tensor_cls = Tensor


def _writable_alias(a: np.ndarray) -> np.ndarray | None:
    """``a``'s memory as a writable array of its shape and strides, when the memory it
    views is writable and dense; else None."""
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not (root.flags.writeable and root.flags.c_contiguous) or root.dtype != a.dtype:
        return None
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if offset % a.itemsize or offset < 0:
        return None
    flat = root.reshape(-1)[offset // a.itemsize :]
    return np.lib.stride_tricks.as_strided(flat, a.shape, a.strides)
