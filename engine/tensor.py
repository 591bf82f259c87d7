"""The Tensor: a numpy array plus autograd metadata, with PyTorch's attributes.

Operators and methods are bound by ``engine.methods`` from the op registry, so
this module holds only state and the rules about that state (leaf flags,
``.grad`` access, ``requires_grad_``, in-place version bumps).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes, function
from .errors import (
    LEAF_INPLACE_MESSAGE,
    DtypeNotDifferentiableError,
    InplaceViewError,
    LeafInplaceError,
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
VIEW_OF_LEAF_INPLACE_MESSAGE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
INPLACE_VIEW_MESSAGE = (
    "this tensor was modified in place through one of its views while recording a graph; "
    "gradserve does not differentiate through such a write (PyTorch's CopySlices). Use the "
    "out-of-place op on the view, or write under no_grad."
)
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
        "data",
        "requires_grad_flag",
        "_grad",
        "grad_fn",
        "_output_nr",
        "_retains_grad",
        "_vc",
        "_hooks",
        "_base",
        "__weakref__",
    )
    __array_priority__ = 1000  # numpy defers to our reflected operators

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        arr = np.asarray(data)
        self.data = arr = arr.astype(
            dtypes.to_dtype(arr.dtype if dtype is None else dtype), copy=False
        )
        self.requires_grad_flag = False
        self._grad: Tensor | None = None
        self.grad_fn: function.Node | None = None
        self._output_nr = 0
        self._retains_grad = False
        self._vc = [0]
        self._hooks: list[Callable[[Tensor], Tensor | None]] | None = None
        self._base: Tensor | None = None
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
        t.data = data
        t.requires_grad_flag = requires_grad
        t._grad = None
        t.grad_fn = grad_fn
        t._output_nr = output_nr
        t._retains_grad = False
        t._vc = [0]
        t._hooks = None
        t._base = None
        return t

    # -- autograd flags -----------------------------------------------------
    @property
    def requires_grad(self) -> bool:
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
        if requires_grad and not dtypes.is_floating(self.data.dtype):
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
        if self._grad is None and self.grad_fn is not None and not self._retains_grad:
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
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return int(self.data.size)

    def size(self, dim: int | None = None) -> Any:
        return self.data.shape if dim is None else self.data.shape[dim]

    def item(self) -> Any:
        if self.data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.data.size} elements cannot be converted to Scalar"
            )
        return self.data.reshape(()).item()

    def tolist(self) -> Any:
        return self.data.tolist()

    def numpy(self) -> np.ndarray:
        if self.requires_grad_flag:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        return self.data

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.data.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.data.dtype.kind not in "iub" or self.data.size != 1:
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
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __getattr__(self, name: str) -> Any: ...

    def __iter__(self) -> Any:
        if self.data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.data.shape[0]))

    def __repr__(self) -> str:
        from .printing import tensor_repr

        return tensor_repr(self)

    # -- history -------------------------------------------------------------
    def detach(self) -> Tensor:
        """A tensor sharing data (and the version counter) with no history."""
        t = Tensor._make(self.data)
        t._vc = self._vc
        return t

    def _view_of(self, base: Tensor) -> Tensor:
        """Mark this tensor as a view of ``base``: one memory, one version counter."""
        self._vc = base._vc
        self._base = base._base if base._base is not None else base
        return self

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self.requires_grad_flag = False
        return self

    # -- in-place writes -----------------------------------------------------
    def _check_inplace(self) -> None:
        """PyTorch's rules for writing in place while grad mode is on."""
        if not _enabled.get():
            return
        if self.requires_grad_flag and self.grad_fn is None:
            raise LeafInplaceError(LEAF_INPLACE_MESSAGE)
        base = self._base
        if base is not None and base.requires_grad_flag and base.grad_fn is None:
            raise LeafInplaceError(VIEW_OF_LEAF_INPLACE_MESSAGE)

    def _write(self, value: np.ndarray) -> Tensor:
        """Write ``value`` into this tensor's memory and bump its version."""
        if not self.data.flags.writeable:
            self.data = np.array(self.data)
        np.copyto(self.data, value, casting="unsafe")
        self._vc[0] += 1
        return self

    def _inplace(self, result: Tensor) -> Tensor:
        """Finish an in-place op given its out-of-place result: write, bump, rebase history."""
        self._check_inplace()
        if result.data.shape != self.data.shape:
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(result.shape)}"
            )
        self._write(result.data)
        if result.grad_fn is not None:
            self.grad_fn = result.grad_fn
            self._output_nr = result._output_nr
            self.requires_grad_flag = True
            if self._hooks:
                result.grad_fn.register_tensor(result._output_nr, self)
            if self._base is not None:
                self._base._history_modified_through_view()
        return self

    def _history_modified_through_view(self) -> None:
        """This tensor was written through one of its views while recording. PyTorch
        rebases its history onto a CopySlices node; we record a CopySlices node that
        refuses to run, so a later backward through this tensor fails loudly instead
        of using the gradient of values it no longer holds."""
        node = function.Node(CopySlices)
        node.next_edges = ()
        node.out_shape, node.out_dtype = self.data.shape, self.data.dtype
        self.grad_fn = node
        self._output_nr = 0
        self.requires_grad_flag = True

    def zero_(self) -> Tensor:
        self._check_inplace()
        return self._write(np.zeros((), dtype=self.data.dtype))

    def fill_(self, value: Any) -> Tensor:
        self._check_inplace()
        return self._write(
            np.asarray(float(value) if not isinstance(value, Tensor) else value.data)
        )

    def copy_(self, src: Tensor | Any) -> Tensor:
        data = src.data if isinstance(src, Tensor) else np.asarray(src)
        self._check_inplace()
        np.broadcast_to(data, self.data.shape)
        return self._write(data)


class CopySlices(function.Function):
    """The history of a tensor written in place through a view (see above)."""

    name = "CopySlices"

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        raise InplaceViewError(INPLACE_VIEW_MESSAGE)


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t`` that keeps its history: the input to the op an in-place write replaces."""
    s = Tensor._make(t.data.copy(), t.requires_grad_flag, t.grad_fn, t._output_nr)
    return s


function._tensor_cls = Tensor
