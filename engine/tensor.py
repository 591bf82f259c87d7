"""The Tensor: a numpy array plus autograd metadata, with PyTorch's attributes.

The bottom of the engine's core: ``function`` (which records ops and makes
tensors) and ``views`` (in-place writes) import it, never the reverse.
Operators and methods are bound by ``engine.methods`` from the op registry, so
this module holds only state and the rules about that state (leaf flags,
``.grad`` access, ``requires_grad_``, the refusals before an in-place write,
version bumps). A view regenerates its history through its ``ViewInfo``.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .errors import (
    LEAF_INPLACE_MESSAGE,
    ArgumentTypeError,
    BadArgumentsError,
    DtypeMismatchError,
    DtypeNotDifferentiableError,
    InplaceViewError,
    LeafInplaceError,
    NoGradFnError,
    NotLeafError,
    ShapeMismatchError,
)
from .grad_mode import _enabled
from .memory_overlap import INTERNAL_OVERLAP_MESSAGE, has_internal_overlap
from .printing import tensor_repr

if TYPE_CHECKING:
    from .function import Node, ViewInfo
from .hooks import RemovableHandle
from .leafnode import AccumulateGrad, grad_accumulator

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
GRAD_DTYPE_MESSAGE = (
    "attempting to assign a gradient with dtype '{got}' to a tensor with grad_dtype '{want}'. "
    "The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can "
    "set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. "
    "Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break "
    "downstream systems that assume they match."
)
REQUIRES_GRAD_ATTRIBUTE_MESSAGE = (
    "only Tensors of floating point and complex dtype can require gradients"
)
REQUIRES_GRAD_DTYPE_MESSAGE = "only Tensors of floating point dtype can require gradients"
NOT_LEAF_MESSAGE = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)
VIEW_OF_LEAF_INPLACE_MESSAGE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
_NO_GRAD_TAIL = (
    " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block (if "
    "you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)
NO_GRAD_VIEW_MESSAGE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)
DETACH_VIEW_MESSAGE = (
    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
    "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
    "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
    "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
)

# One clock orders graph nodes (``Node.seq``, their creation order) and ``detach_`` marks:
# a node created before a tensor was detached in place saved it while it had history.
clock = itertools.count()


DEEPCOPY_NON_LEAF_MESSAGE = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
    "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
    "because of a torch.nn.utils.weight_norm usage, see "
    "https://github.com/pytorch/pytorch/pull/103001"
)


def _rebuild_tensor(data: np.ndarray, requires_grad: bool) -> Tensor:
    """What unpickling calls: a fresh leaf."""
    return Tensor._make(data, requires_grad)


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
        "_fw",  # (dual level, tangent) in forward mode (engine.dual), else None
        "_grad_acc",  # a leaf's AccumulateGrad node; unset until asked for (read with getattr)
        "__weakref__",
    )
    __array_priority__ = 1000  # numpy defers to our reflected operators
    _grad_acc: AccumulateGrad

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        arr = np.asarray(data)
        self._data = arr = arr.astype(
            dtypes.to_dtype(arr.dtype if dtype is None else dtype), copy=False
        )
        self.requires_grad_flag = False
        self._grad: Tensor | None = None
        self._grad_fn: Node | None = None
        self._output_nr = 0
        self._retains_grad = False
        self._vc = [0]
        self._hooks: list[Callable[[Tensor], Tensor | None]] | None = None
        self._view: ViewInfo | None = None
        self._fw: tuple[Any, Tensor] | None = None
        if requires_grad:
            if not dtypes.is_differentiable(arr.dtype):
                raise DtypeNotDifferentiableError(REQUIRES_GRAD_CONSTRUCT_MESSAGE)
            self.requires_grad_flag = True

    @classmethod
    def _make(
        cls,
        data: np.ndarray,
        requires_grad: bool = False,
        grad_fn: Node | None = None,
        output_nr: int = 0,
    ) -> Tensor:
        """Fast constructor for op results: no validation, data must be an ndarray.
        (``Function._record`` inlines it for its single result: keep the two in step.)"""
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
        t._fw = None
        return t

    # -- autograd flags -----------------------------------------------------
    @property
    def grad_fn(self) -> Node | None:
        """The node that made this tensor. A view whose base (or a sibling view) was
        written in place since regenerates it from the base's new history first."""
        info = self._view
        if info is not None and info.attr_version != self._vc[0]:
            info.refresh(self)
        return self._grad_fn

    @grad_fn.setter
    def grad_fn(self, value: Node | None) -> None:
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
        info = self._view
        if info is not None:
            self.grad_fn  # noqa: B018 - a stale view may now require grad through its base
            if info.no_grad and not self.requires_grad_flag:
                # as in PyTorch: a view made under no_grad requires grad when its base does,
                # though no gradient flows to it (it has no grad_fn and no accumulator)
                return info.base.requires_grad
        return self.requires_grad_flag

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self.grad_fn is None and not dtypes.is_differentiable(self._data.dtype):
            # the attribute's message is not requires_grad_()'s, in PyTorch
            raise DtypeNotDifferentiableError(REQUIRES_GRAD_ATTRIBUTE_MESSAGE)
        self.requires_grad_(value)

    @requires_grad.deleter
    def requires_grad(self) -> None:
        raise BadArgumentsError("requires_grad must be a bool")

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def _version(self) -> int:
        return self._vc[0]

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf)."""
        return self._output_nr if self.grad_fn is not None else 0

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set requires_grad on a leaf; PyTorch refuses it on non-leaves and integers."""
        requires_grad = bool(requires_grad)
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise NotLeafError(NOT_LEAF_MESSAGE)
        if requires_grad and not dtypes.is_differentiable(self._data.dtype):
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

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call ``hook(tensor)`` after a backward accumulated into this leaf's ``.grad``."""
        if not self.requires_grad_flag:
            raise NoGradFnError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise NoGradFnError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        hooks = grad_accumulator(self).post_acc_hooks
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    @property
    def grad(self) -> Tensor | None:
        # the node as last set: reading .grad does not regenerate a stale view's (PyTorch)
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            warnings.warn(NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        """PyTorch's checks on ``x.grad = g``: a Tensor of this tensor's dtype and size."""
        if value is not None:
            if not isinstance(value, Tensor):
                raise ArgumentTypeError(
                    "assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            if value._data.dtype != self._data.dtype:
                raise DtypeMismatchError(
                    GRAD_DTYPE_MESSAGE.format(
                        got=dtypes.cpp_name(value._data.dtype),
                        want=dtypes.type_name(self._data.dtype),
                    )
                )
            if value._data.shape != self._data.shape:
                raise ShapeMismatchError(
                    f"attempting to assign a gradient of size '{_sizes(value.shape)}' to a tensor "
                    f"of size '{_sizes(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size"
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

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
        if self._data.size != 1:  # a RuntimeError, as PyTorch's
            raise BadArgumentsError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """Pickling keeps values, dtype and ``requires_grad``, not history: the copy is a
        leaf, for a non-leaf too, and has no ``.grad`` (as PyTorch's)."""
        return (_rebuild_tensor, (np.array(self._data, copy=True), self.requires_grad))

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A leaf's copy with its ``.grad`` copied; PyTorch refuses a non-leaf."""
        if not self.is_leaf:
            raise BadArgumentsError(DEEPCOPY_NON_LEAF_MESSAGE)
        out = _rebuild_tensor(np.array(self._data, copy=True), self.requires_grad_flag)
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out

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
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(
                f"Variable data has to be a tensor, but got {type(value).__name__}"
            )
        if self.requires_grad and value._data.dtype.kind != "f":
            raise BadArgumentsError(
                "data set to a tensor that requires gradients must be floating point or "
                "complex dtype"
            )
        self._data = value._data

    @data.deleter
    def data(self) -> None:
        raise BadArgumentsError("Deleting tensor data is not allowed. Delete tensor instead!")

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

    def __complex__(self) -> complex:
        return complex(self.item())

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
        return tensor_repr(self)

    # -- history -------------------------------------------------------------
    def detach(self) -> Tensor:
        """A tensor sharing data (and the version counter) with no history."""
        t = Tensor._make(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        """Drop the history in place; a node that saved this tensor notices at backward."""
        if self._view is not None:
            raise BadArgumentsError(DETACH_VIEW_MESSAGE)
        if self._grad_fn is not None:
            # minus the clock's next tick: nodes created before now saved this tensor
            # while it had history, and refuse to use it (``Node.saved_tensors``)
            self._output_nr = -next(clock)
        self._grad_fn = None
        self.requires_grad_flag = False
        return self

    # -- in-place writes -----------------------------------------------------
    def _check_inplace(self, grad_on: bool | None = None) -> None:
        """PyTorch's refusals before an in-place write (leaves, views, overlapping memory);
        the leaf and view checks apply in grad mode (``grad_on`` overrides the mode)."""
        if _enabled.get() if grad_on is None else grad_on:
            if self.requires_grad_flag and self._grad_fn is None and self._view is None:
                raise LeafInplaceError(LEAF_INPLACE_MESSAGE)
            info = self._view
            if info is not None:
                base = info.base
                # how the view was made is judged first (PyTorch's handle_view_on_rebase)
                if info.no_grad and base.requires_grad:
                    raise InplaceViewError(
                        NO_GRAD_CUSTOM_VIEW_MESSAGE
                        if info.custom
                        else no_grad_view_message(self, stale=False)
                    )
                if self.requires_grad_flag or base.requires_grad:
                    check_multi_output(self)
                if base._grad_fn is None and (base.requires_grad_flag or self.requires_grad_flag):
                    # a view that requires grad of a leaf (PyTorch: of any tensor without
                    # history, such as a view made a leaf by requires_grad_())
                    raise LeafInplaceError(VIEW_OF_LEAF_INPLACE_MESSAGE)
                if self._grad_fn is None and base.requires_grad_flag:
                    # PyTorch reads the view's grad_fn here without regenerating it: a view
                    # made before its base required grad, and not read since, is a leaf
                    raise LeafInplaceError(LEAF_INPLACE_MESSAGE)
        data = self._data
        if 0 in data.strides and has_internal_overlap(data):
            raise BadArgumentsError(INTERNAL_OVERLAP_MESSAGE)

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

    def _records(self, *others: Any) -> bool:
        """Whether an in-place op on this tensor with ``others`` records a node."""
        if not _enabled.get():
            return False
        if self.requires_grad:
            return True
        return any(type(o) is Tensor and o.requires_grad for o in others)


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t`` that keeps its history: the input to the op an in-place write replaces."""
    fn = t.grad_fn  # a stale view regenerates first
    out = Tensor._make(t._data.copy(), t.requires_grad_flag, fn, t._output_nr)
    out._fw = t._fw  # and the tangent it had (forward AD reads it too)
    return out


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


def _sizes(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


MULTI_OUTPUT_VIEW_MESSAGE = (
    "Output {nr} of {name} is a view and is being modified inplace. This view is the output of a "
    "function that returns multiple views. Such functions do not allow the output views to be "
    "modified inplace. You should replace the inplace operation by an out-of-place one."
)
_MULTI_TAIL = MULTI_OUTPUT_VIEW_MESSAGE.split("modified inplace. ", 1)[1]
_CUSTOM_VIEW_TAIL = (
    "This view was created inside a custom Function (or because an input was returned as-is) "
    "and the autograd logic to handle view+inplace would override the custom backward "
    "associated with the custom Function, leading to incorrect gradients. This behavior is "
    "forbidden. You can fix this by cloning the output of the custom Function."
)
NO_GRAD_CUSTOM_VIEW_MESSAGE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    + _CUSTOM_VIEW_TAIL
)


def op_name(cls: Any) -> str:
    """An op's name as PyTorch's messages print it (its node name without Backward<n>)."""
    return re.sub(r"Backward\d*$", "", cls.name)


def multi_output_message(t: Tensor, info: ViewInfo, stale: bool) -> str:
    """PyTorch's handle_view_on_rebase text: who made the view (its node, or no_grad mode
    when it has none), then why writing it is refused (multi-output or custom Function)."""
    assert info.multi is not None
    cls, nr = info.multi
    what = "its base or another view of its base has been" if stale else "is being"
    if t._grad_fn is None:
        head = f"A view was created in no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        head = f"Output {nr} of {op_name(cls)} is a view and {what} modified inplace."
    return f"{head} {_CUSTOM_VIEW_TAIL if info.custom else _MULTI_TAIL}"


def no_grad_view_message(t: Tensor, stale: bool) -> str:
    """PyTorch's text for a view made under no_grad (or a view of one, which has a node
    of its own and is named by it) written in place with grad mode on."""
    what = "its base or another view of its base has been" if stale else "is being"
    fn = t._grad_fn
    head = (
        "A view was created in"
        if fn is None
        else f"Output {t._output_nr} of {op_name(fn)} is a view of a view which was created in"
    )
    return f"{head} no_grad mode and {what} modified inplace with grad mode enabled.{_NO_GRAD_TAIL}"


def check_multi_output(t: Tensor) -> None:
    """One of several views an op returned may not be written in place (PyTorch)."""
    info = t._view
    if info is not None and info.multi is not None:
        raise InplaceViewError(multi_output_message(t, info, stale=False))
