"""``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``jacfwd``, ``hessian``, ``jvp``:
torch.func's derivative transforms over the engine's reverse mode.

Each transform differentiates with respect to fresh tensors standing for its
inputs (an alias of the input when an outer transform or the caller is
recording through it), so nothing leaks: no ``.grad`` written, no
``requires_grad`` changed, and grad mode switched on inside even under an outer
``no_grad``. Under ``vmap`` the transform works on the whole batch: inputs and
outputs are taken as full batches of every running level (``lift``), one
backward gives each sample its own gradient (samples never mix), and the
results are one sample's again. Gradients are built with ``create_graph`` when
an outer transform (or the caller) may differentiate them again, which is what
makes ``grad(grad(f))``, ``jacrev(jacrev(f))`` and ``jvp(grad(f), ...)`` work.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import numpy as np

from .. import dtypes, dual
from ..autograd import forward_ad
from ..autograd import grad as autograd_grad
from ..errors import ArgumentValueError, BadArgumentsError, EngineError
from ..grad_mode import enable_grad, is_grad_enabled
from ..primitives import reshape
from ..registry import OPS
from ..tensor import Tensor
from . import pytree
from .batched import BatchedTensor, Level, levels, physical

# how many transforms are running around this call: their results must stay
# differentiable (an outer transform differentiates them again)
depth: ContextVar[int] = ContextVar("func_transform_depth", default=0)
# set when a reverse transform runs inside a forward-mode jvp: backward rules written
# in terms of their saved result (exp, tanh, sqrt) do not carry that result's tangent,
# so such a jvp is recomputed by the double-vjp trick (exact, one more pass)
reverse_in_forward: ContextVar[list[bool] | None] = ContextVar("func_reverse_in_fwd", default=None)


class FuncError(EngineError):
    """A transform given a function or arguments it cannot differentiate."""

    code = "func_error"


# -- batches: one sample's tensors as full batches of every running vmap ---------
def lift(x: Tensor, lvls: tuple[Level, ...]) -> Tensor:
    """``x`` (one sample under ``lvls``) as a plain tensor ``(B1, ..., Bk, *x.shape)``."""
    for level in reversed(lvls):
        x = physical(x, level, tuple(x.shape))
    return x


def lower(x: Tensor, lvls: tuple[Level, ...]) -> Tensor:
    """The inverse of ``lift``: a plain batch as one sample under ``lvls``."""
    for level in lvls:
        x = BatchedTensor(x, level)
    return x


def _differentiable(x: Any, api: str) -> tuple[Tensor, Tensor]:
    """A fresh tensor to differentiate with respect to, standing for ``x``: (the plain
    batch, the sample the function sees)."""
    if not isinstance(x, Tensor):
        raise FuncError(f"{api}: Thing passed to transform API must be Tensor, got {type(x)}")
    lvls = levels.get()
    batch = lift(x, lvls)
    if not dtypes.is_floating(batch.dtype):
        raise FuncError(
            f"{api}: only Tensors of floating point dtype can require gradients, got "
            f"{dtypes.torch_name(batch.dtype)}"
        )
    if batch.requires_grad and is_grad_enabled():
        leaf = reshape(batch, tuple(batch.shape))  # an alias: outer transforms see through
        return leaf, lower(leaf, lvls)
    leaf = batch.detach().requires_grad_(True)
    level = dual.current()
    tangent = None if level is None else dual.tangent(batch, level)
    if tangent is not None:  # inside jvp: the function sees the input's tangent too
        return leaf, lower(forward_ad.make_dual(leaf, tangent), lvls)
    return leaf, lower(leaf, lvls)


def _argnums_check(argnums: Any, n: int) -> tuple[int, ...]:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        items: tuple[Any, ...] = (argnums,)
    elif isinstance(argnums, tuple):
        if not argnums:
            raise FuncError("argnums must be non-empty")
        items = argnums
    else:
        raise FuncError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in items:
        if not isinstance(a, int) or isinstance(a, bool):
            raise FuncError(f"argnum must be int, got: {type(a)}")
        if not -n <= a < n:
            raise FuncError(f"Got argnum={a}, but only {n} positional inputs")
        out.append(a % n)
    if len(set(out)) != len(out):
        raise FuncError(f"argnums elements must be unique, got {tuple(out)}")
    return tuple(out)


class _Pullback:
    """A function run once with fresh inputs; gives vector-Jacobian products after."""

    def __init__(
        self,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        argnums: Any,
        has_aux: bool,
        api: str,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.api = api
        seen = reverse_in_forward.get()
        if seen is not None:
            seen.append(True)
        # the graph an outer differentiation needs: decided again when vjp_fn runs
        self.outer = depth.get() > 0 or any(isinstance(a, Tensor) and a.requires_grad for a in args)
        self.create_graph = is_grad_enabled() and self.outer
        self.levels = levels.get()
        args = tuple(args)
        nums = tuple(range(len(args))) if argnums is None else _argnums_check(argnums, len(args))
        self.int_argnum = isinstance(argnums, int)
        new_args = list(args)
        self.leaves: list[Tensor] = []
        self.diff_specs: list[pytree.Spec] = []
        token = depth.set(depth.get() + 1)
        try:
            with enable_grad():
                for i in nums:
                    flat, spec = pytree.flatten(args[i])
                    pairs = [_differentiable(x, api) for x in flat]
                    self.leaves.extend(p[0] for p in pairs)
                    self.diff_specs.append(spec)
                    new_args[i] = pytree.unflatten([p[1] for p in pairs], spec)
                out = func(*new_args, **(kwargs or {}))
                self.aux: Any = None
                if has_aux:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise FuncError(
                            f"{api}: output of function f should be a tuple: (output, aux) "
                            "if has_aux is True"
                        )
                    out, self.aux = out
                    self.aux = pytree.tree_map(self._aux_sample, self.aux)
                self.out = out
                self.flat_out, self.out_spec = pytree.flatten(out)
                self.out_batches = [lift(o, self.levels) for o in self._check_outputs()]
        finally:
            depth.reset(token)
        self.argnums = nums

    def _check_outputs(self) -> list[Tensor]:
        if not self.flat_out or (len(self.flat_out) == 1 and self.flat_out[0] is None):
            raise FuncError(
                f"{self.api}: Expected f to be a function that has non-empty output "
                f"(got output = {list(self.flat_out)})"
            )
        for o in self.flat_out:
            if not isinstance(o, Tensor):
                raise FuncError(
                    f"{self.api}: expected f(*primals) to return only tensors, got unsupported "
                    f"type {type(o)}"
                )
        return self.flat_out

    def _detach_sample(self, x: Any) -> Any:
        """A result as the caller sees it: cut from the fresh inputs unless an outer
        differentiation needs the graph."""
        if isinstance(x, Tensor) and not self.create_graph:
            return x.detach()
        return x

    def _aux_sample(self, x: Any) -> Any:
        if not isinstance(x, Tensor):
            raise FuncError(f"Expected tensors, got unsupported type {type(x)}")
        return self._detach_sample(x)

    def primal_out(self) -> Any:
        return pytree.tree_map(self._detach_sample, self.out)

    def pull(self, cotangents: list[Tensor], retain_graph: bool = True) -> list[Tensor]:
        """Per differentiated leaf, ``cotangents^T J`` (one sample's, under vmap)."""
        cots = [lift(c, self.levels) for c in cotangents]
        for c, o in zip(cots, self.out_batches):
            if tuple(c.shape) != tuple(o.shape):
                c_sample = tuple(c.shape)[len(self.levels) :]
                o_sample = tuple(o.shape)[len(self.levels) :]
                raise FuncError(
                    f"Mismatch in shape: grad_output[0] has a shape of "
                    f"torch.Size({list(c_sample)}) and output[0] has a shape of "
                    f"torch.Size({list(o_sample)})."
                )
        pairs = [(o, c) for o, c in zip(self.out_batches, cots) if o.requires_grad]
        # PyTorch's vjp_fn differentiates again where grad mode is on when it is called
        # and something outside (an input, a cotangent, an outer transform) asks for it
        create_graph = is_grad_enabled() and (
            self.outer or depth.get() > 0 or any(c.requires_grad for c in cots)
        )
        token = depth.set(depth.get() + 1)
        try:
            with enable_grad():
                if pairs:
                    grads = autograd_grad(
                        [p[0] for p in pairs],
                        self.leaves,
                        [p[1] for p in pairs],
                        retain_graph=retain_graph or create_graph,
                        create_graph=create_graph,
                        allow_unused=True,
                    )
                else:
                    grads = [None] * len(self.leaves)
        finally:
            depth.reset(token)
        out = []
        for g, leaf in zip(grads, self.leaves):
            if g is None:
                g = Tensor._make(np.zeros(leaf.shape, leaf.dtype))
            elif not create_graph:
                g = g.detach()
            out.append(lower(g, self.levels))
        return out

    def structure(self, flat: list[Any]) -> Any:
        """Gradients per leaf back in the argnums' structure."""
        trees = []
        it = 0
        for spec in self.diff_specs:
            n = spec.num_leaves
            trees.append(pytree.unflatten(flat[it : it + n], spec))
            it += n
        return trees[0] if self.int_argnum else tuple(trees)


def grad_and_value(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``torch.func.grad_and_value``: ``(gradient, value)`` of a scalar function."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        api = "grad_and_value(f)(*args)"
        pb = _Pullback(func, args, argnums, has_aux, api, kwargs)
        out = pb.out
        if not isinstance(out, Tensor):
            raise FuncError(f"{api}: Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise FuncError(
                f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
            )
        ones = OPS["ones_like"].fn(out.detach())
        g = pb.structure(pb.pull([ones], retain_graph=False))
        value = pb.primal_out()
        if has_aux:
            return g, (value, pb.aux)
        return g, value

    return wrapper


def grad(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``torch.func.grad``: the gradient of a scalar function w.r.t. ``argnums``."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``torch.func.vjp``: ``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives a
    tuple with one gradient per primal."""
    pb = _Pullback(func, primals, None, has_aux, "vjp(f, *primals)")
    for o in pb.flat_out:
        if not dtypes.is_floating(o.dtype):
            raise FuncError(
                "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                f"got Tensor with dtype torch.{dtypes.torch_name(o.dtype)}"
            )

    def vjp_fn(cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None) -> Any:
        flat, spec = pytree.flatten(cotangents)
        if spec != pb.out_spec:
            raise FuncError(
                "Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function. cotangents: {spec.pprint()}, primal output: "
                f"{pb.out_spec.pprint()}"
            )
        return tuple(pb.structure(pb.pull(flat, retain_graph)))

    if has_aux:
        return pb.primal_out(), vjp_fn, pb.aux
    return pb.primal_out(), vjp_fn


def _onehots(t: Tensor) -> list[Tensor]:
    n = int(np.prod(t.shape, dtype=np.int64))
    eye = np.eye(n, dtype=t.dtype)
    return [Tensor._make(eye[i].reshape(t.shape)) for i in range(n)]


def _stack_rows(rows: list[Tensor], shape: tuple[int, ...], ref: Tensor) -> Tensor:
    if not rows:
        return OPS["zeros"].fn(shape, dtype=ref.dtype)
    return OPS["reshape"].fn(OPS["stack"].fn(rows, 0), shape)


def jacrev(
    func: Callable[..., Any],
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """``torch.func.jacrev``: the Jacobian by reverse mode, one vector-Jacobian product
    per output element (``chunk_size`` is accepted; rows are computed one at a time)."""
    if chunk_size is not None and chunk_size <= 0:
        raise ArgumentValueError("jacrev: `chunk_size` should be greater than 0.")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        pb = _Pullback(func, args, argnums, has_aux, "vjp(f, *primals)", kwargs)
        n_leaves = len(pb.leaves)
        per_output = []
        for j, o in enumerate(pb.flat_out):
            rows: list[list[Tensor]] = [[] for _ in range(n_leaves)]
            for e in _onehots(o):
                cots = [
                    e if k == j else OPS["zeros_like"].fn(q.detach())
                    for k, q in enumerate(pb.flat_out)
                ]
                for r, g in zip(rows, pb.pull(cots)):
                    r.append(g)
            samples = [lower_ref for lower_ref in _leaf_samples(pb)]
            jac = [
                _stack_rows(r, tuple(o.shape) + tuple(s.shape), s) for r, s in zip(rows, samples)
            ]
            per_output.append(pb.structure(jac))
        result = pytree.unflatten(per_output, pb.out_spec)
        if has_aux:
            return result, pb.aux
        return result

    return wrapper


def _leaf_samples(pb: _Pullback) -> list[Tensor]:
    return [lower(leaf, pb.levels) for leaf in pb.leaves]


def jvp(
    func: Callable[..., Any],
    primals: Any,
    tangents: Any,
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> Any:
    """``torch.func.jvp``: ``(func(*primals), J @ tangents)`` by forward-mode AD."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise FuncError(
            f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    flat_p, spec_p = pytree.flatten(primals)
    flat_t, spec_t = pytree.flatten(tangents)
    if spec_p != spec_t:
        raise FuncError(
            f"{api}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {spec_p} and tangents with structure {spec_t}"
        )
    for name, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise FuncError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise FuncError(f"{api}: Expected {name} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat_p, flat_t):
        if tuple(p.shape) != tuple(t.shape):
            raise FuncError(
                f"Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} "
                f"while the given forward gradient is of size {list(t.shape)}."
            )
        if p.dtype != t.dtype:
            raise FuncError(
                "Expected tangent to have the same dtype as primal, but got primal of dtype "
                f"torch.{dtypes.torch_name(p.dtype)} and tangent of dtype "
                f"torch.{dtypes.torch_name(t.dtype)}"
            )
    if dual.current() is None:
        seen: list[bool] = []
        token = reverse_in_forward.set(seen)
        try:
            result = _jvp_forward(func, primals, flat_p, flat_t, spec_p, has_aux, strict)
        finally:
            reverse_in_forward.reset(token)
        if not seen:
            return result
    return _jvp_double_vjp(func, primals, flat_t, has_aux, api)


def _aux_primal(a: Any, lvls: tuple[Level, ...]) -> Tensor:
    """An aux output of a jvp as the caller sees it: its primal; tensors only."""
    if not isinstance(a, Tensor):
        raise FuncError(f"Expected tensors, got unsupported type {type(a)}")
    return lower(forward_ad.unpack_dual(lift(a, lvls))[0].detach(), lvls)


def _jvp_forward(
    func: Callable[..., Any],
    primals: tuple[Any, ...],
    flat_p: list[Tensor],
    flat_t: list[Tensor],
    spec_p: pytree.Spec,
    has_aux: bool,
    strict: bool = False,
) -> Any:
    """The jvp by forward-mode AD: dual tensors (primal batch, tangent batch) in, the
    tangents of the outputs read back. Under vmap the duals are whole batches."""
    api = "jvp(f, primals, tangents)"
    lvls = levels.get()
    outer = is_grad_enabled() and (depth.get() > 0 or any(p.requires_grad for p in flat_p))
    token = depth.set(depth.get() + 1)
    try:
        with forward_ad.dual_level():
            duals = [
                lower(forward_ad.make_dual(lift(p, lvls), lift(t, lvls)), lvls)
                for p, t in zip(flat_p, flat_t)
            ]
            out = func(*pytree.unflatten(duals, spec_p))
            aux: Any = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise FuncError(
                        f"{api}: output of function f should be a tuple: (output, aux) "
                        "if has_aux is True"
                    )
                out, aux = out
            flat_out, out_spec = pytree.flatten(out)
            if not flat_out or (len(flat_out) == 1 and flat_out[0] is None):
                raise FuncError(
                    f"{api}: Expected f to be a function that has non-empty output "
                    f"(got output = {list(flat_out)})"
                )
            primals_out, tangents_out = [], []
            for o in flat_out:
                if not isinstance(o, Tensor):
                    raise FuncError(
                        f"{api}: expected f(*primals) to return only tensors, got unsupported "
                        f"type {type(o)}"
                    )
                primal, tangent = forward_ad.unpack_dual(lift(o, lvls))
                if tangent is None:
                    if strict:
                        raise FuncError(
                            f"{api[:-1]}, strict=True): The output of f is independent of "
                            "the inputs. This is not allowed with strict=True."
                        )
                    tangent = OPS["zeros_like"].fn(primal.detach())
                if not outer:
                    primal, tangent = primal.detach(), tangent.detach()
                primals_out.append(lower(primal, lvls))
                tangents_out.append(lower(tangent, lvls))
            if has_aux:
                aux = pytree.tree_map(lambda a: _aux_primal(a, lvls), aux)
    finally:
        depth.reset(token)
    result = (pytree.unflatten(primals_out, out_spec), pytree.unflatten(tangents_out, out_spec))
    return (*result, aux) if has_aux else result


def _jvp_double_vjp(
    func: Callable[..., Any],
    primals: tuple[Any, ...],
    flat_t: list[Tensor],
    has_aux: bool,
    api: str,
) -> Any:
    """The jvp inside another jvp (one forward-AD level is open): by the double-vjp
    trick (the vjp is linear in its cotangent, so its vjp is the jvp)."""
    flat_p = pytree.flatten(primals)[0]
    token = depth.set(depth.get() + 1)
    try:
        pb = _Pullback(func, primals, None, has_aux, api)
        with enable_grad():
            # u -> J^T u is linear in u: differentiate it w.r.t. u along the tangents
            us = [
                lower(
                    Tensor._make(np.zeros(o.shape, o.dtype), True),
                    pb.levels,
                )
                for o in pb.out_batches
            ]
            pb.create_graph = True
            vjps = pb.pull(us)
            u_leaves = [lift(u, pb.levels) for u in us]
            pairs = [
                (lift(g, pb.levels), lift(t, pb.levels))
                for g, t in zip(vjps, flat_t)
                if lift(g, pb.levels).requires_grad
            ]
            if pairs:
                jv = autograd_grad(
                    [p[0] for p in pairs],
                    u_leaves,
                    [p[1] for p in pairs],
                    create_graph=is_grad_enabled() and depth.get() > 1,
                    allow_unused=True,
                )
            else:
                jv = [None] * len(u_leaves)
    finally:
        depth.reset(token)
    outer = depth.get() > 0 or any(p.requires_grad for p in flat_p)
    tangents_out = []
    for g, u in zip(jv, u_leaves):
        if g is None:
            g = Tensor._make(np.zeros(u.shape, u.dtype))
        elif not outer:
            g = g.detach()
        tangents_out.append(lower(g, pb.levels))
    pb.create_graph = outer
    out = pb.primal_out()
    t_out = pytree.unflatten(tangents_out, pb.out_spec)
    if has_aux:
        return out, t_out, pb.aux
    return out, t_out


def jacfwd(
    func: Callable[..., Any],
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable[..., Any]:
    """``torch.func.jacfwd``: the Jacobian by forward mode, one Jacobian-vector product
    per input element."""

    def wrapper(*args: Any) -> Any:
        nums = _argnums_check(argnums, len(args))
        flat_in: list[Tensor] = []
        specs = []
        for i in nums:
            flat, spec = pytree.flatten(args[i])
            flat_in.extend(flat)
            specs.append(spec)

        def f_of(*xs: Tensor) -> Any:
            new_args = list(args)
            it = 0
            for i, spec in zip(nums, specs):
                n = spec.num_leaves
                new_args[i] = pytree.unflatten(list(xs[it : it + n]), spec)
                it += n
            return func(*new_args)

        columns: list[list[Any]] = [[] for _ in flat_in]
        out: Any = None
        aux: Any = None
        for k, x in enumerate(flat_in):
            for e in _onehots(x):
                tangents = tuple(
                    e if m == k else OPS["zeros_like"].fn(y) for m, y in enumerate(flat_in)
                )
                res = jvp(f_of, tuple(flat_in), tangents, has_aux=has_aux)
                out, jv = res[0], res[1]
                if has_aux:
                    aux = res[2]
                columns[k].append(jv)
        flat_out, out_spec = pytree.flatten(out)
        per_output = []
        for j, o in enumerate(flat_out):
            jacs = []
            for k, x in enumerate(flat_in):
                cols = [pytree.flatten(c)[0][j] for c in columns[k]]
                if cols:
                    stacked = OPS["stack"].fn(cols, -1)
                    jac = OPS["reshape"].fn(stacked, tuple(o.shape) + tuple(x.shape))
                else:
                    jac = OPS["zeros"].fn(tuple(o.shape) + tuple(x.shape), dtype=o.dtype)
                jacs.append(jac)
            trees = []
            it = 0
            for spec in specs:
                n = spec.num_leaves
                trees.append(pytree.unflatten(jacs[it : it + n], spec))
                it += n
            per_output.append(trees[0] if isinstance(argnums, int) else tuple(trees))
        result = pytree.unflatten(per_output, out_spec)
        if has_aux:
            return result, aux
        return result

    return wrapper


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """``torch.func.hessian``: the Jacobian of the Jacobian (reverse over reverse here;
    the values are torch's forward-over-reverse ones)."""
    return jacrev(jacrev(func, argnums), argnums)


__all__ = [
    "BadArgumentsError",
    "FuncError",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "vjp",
]
