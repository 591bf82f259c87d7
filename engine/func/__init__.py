"""``torch.func`` on the engine: composable derivative transforms and ``vmap``.

grad(f)(x), vjp(f, x), jvp(f, (x,), (v,)), jacrev(f)(x), jacfwd(f)(x),
hessian(f)(x), vmap(f, in_dims, out_dims)(xs), composable as torch.func's are:
``vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)`` gives per-sample gradients.
"""

from .linearize import linearize
from .transforms import FuncError, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from .vmap import InplaceBatchError, RandomnessError, VmapError, vmap

__all__ = [
    "FuncError",
    "InplaceBatchError",
    "RandomnessError",
    "VmapError",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "vjp",
    "vmap",
]
