"""``torch.func.linearize``: the output of ``func`` at ``primals`` and a function that
gives ``J @ tangents`` there. PyTorch traces the jvp once into a graph; the engine
runs ``jvp`` at the saved primals on each call (the same values, no tracing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import dtypes
from ..tensor import Tensor
from . import pytree
from .transforms import FuncError, jvp


def _check_tangent(i: int, t: Any, p: Tensor) -> None:
    if tuple(t.shape) != tuple(p.shape):
        raise FuncError(
            f"tangent:{i} with shape torch.Size({list(t.shape)}) in flattened pytree doesn't "
            f"match the shape torch.Size({list(p.shape)}) of the corresponding primal."
        )
    if t.dtype != p.dtype:
        raise FuncError(
            f"tangent:{i} with dtype torch.{dtypes.torch_name(t.dtype)} in flattened pytree "
            f"doesn't match the dtype torch.{dtypes.torch_name(p.dtype)} of the corresponding "
            "primal."
        )


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(func(*primals), jvp_fn)``; ``jvp_fn(*tangents)`` is the Jacobian-vector product."""
    flat_p, spec_p = pytree.flatten(primals)
    primals = tuple(pytree.unflatten([p.detach() for p in flat_p], spec_p))
    output = jvp(func, primals, primals)[0]

    def jvp_fn(*tangents: Any) -> Any:
        flat_t, spec_t = pytree.flatten(tangents)
        if spec_t != spec_p:
            raise FuncError(
                f"Expected the tangents {spec_t} to have the same argspec as the primals {spec_p}"
            )
        for i, (t, p) in enumerate(zip(flat_t, flat_p)):
            _check_tangent(i, t, p)
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn
