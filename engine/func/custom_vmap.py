"""A custom ``autograd.Function`` under vmap, as ``torch.func`` runs one: its own
``vmap`` staticmethod (called with the batch values and their batch dims), or with
``generate_vmap_rule=True`` its forward run on the batched inputs, each op batched.

Known differences from PyTorch: the batch dims a ``vmap`` staticmethod sees are 0 (the
engine keeps every batch dim first), and the generated rule differentiates through
the forward's ops rather than the Function's backward (the same gradient where the
backward is right)."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..custom_function import CustomFunctionError, Function
from ..registry import OPS
from ..tensor import Tensor
from . import pytree
from .batched import BatchedTensor, Level, unwrap

DOCS = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


class VmapInfo(NamedTuple):
    """What a ``vmap`` staticmethod learns of the running vmap."""

    batch_size: int
    randomness: str


def apply_batched(cls: type[Function], args: tuple[Any, ...], kw: dict, level: Level) -> Any:
    """``cls.apply(*args)`` with some arguments batched at ``level``."""
    if cls.setup_context is Function.setup_context:
        raise CustomFunctionError(
            "In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
            "jacrev, ...), it must override the setup_context staticmethod. " + DOCS
        )
    has_rule = cls.vmap is not Function.vmap
    if cls.generate_vmap_rule and has_rule:
        raise CustomFunctionError(
            f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True "
            "and an overridden vmap staticmethod. Please set generate_vmap_rule=False or "
            "delete the overridden vmap staticmethod to avoid ambiguity. " + DOCS
        )
    if cls.generate_vmap_rule:
        output = cls.forward(*args, **kw)
        cls.setup_context(cls._node_class()._node_type(cls._node_class()), args, output)
        return output
    if not has_rule:
        raise CustomFunctionError(
            f"You tried to vmap over {cls.__name__}, but it does not have vmap support. "
            "Please override and implement the vmap staticmethod or set "
            "generate_vmap_rule=True. " + DOCS
        )
    values, in_dims = [], []
    for a in args:
        value, batched = unwrap(a, level)
        values.append(value)
        in_dims.append(0 if batched else None)
    result = cls.vmap(VmapInfo(level.size, level.randomness), tuple(in_dims), *values, **kw)
    if not isinstance(result, tuple) or len(result) != 2:
        got = f"{len(result)} returns" if isinstance(result, tuple) else f"a {_torch_type(result)}"
        raise CustomFunctionError(
            "Expected the vmap staticmethod to have two returns, an output and out_dims with "
            f"pytree structure compatible with the output. Got {got} instead"
        )
    out, out_dims = result
    leaves, spec = pytree.flatten(out)
    dims = pytree.broadcast_prefix(out_dims, out, "out_dims")
    wrapped = [
        x
        if d is None or not isinstance(x, Tensor)
        else BatchedTensor(OPS["movedim"].fn(x, d, 0) if d % x.ndim else x, level)
        for x, d in zip(leaves, dims)
    ]
    return pytree.unflatten(wrapped, spec)


def _torch_type(value: Any) -> str:
    return "<class 'torch.Tensor'>" if isinstance(value, Tensor) else str(type(value))
