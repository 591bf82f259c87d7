"""A pure program as a function, and the derivatives PyTorch offers of one.

``Function`` maps the tensors the program reads (``wrt``) to the tensors it binds
(``of``), evaluated on a copy of the session's bindings (``compiled.evaluate``), so no
``.grad`` is written, no graph kept and no version bumped. The derivatives are
``engine.func``'s (PyTorch's ``torch.func``: its values, shapes and errors); every kind
is a few lines over it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine import Tensor, func
from engine.errors import NotScalarError

from .. import codec
from ..errors import BadArgumentsError, LimitExceededError, ProgramNotPureError
from ..schemas import TensorIn
from ..session.state import Session
from ..settings import Settings
from . import compiled
from .compiled import Program

Grid = dict[str, dict[str, Tensor]]


class Function:
    """``program`` as ``f(*wrt) -> tuple(of)`` at the session's current values."""

    def __init__(
        self,
        session: Session,
        program: Program,
        settings: Settings,
        wrt: Sequence[str],
        of: Sequence[str],
    ) -> None:
        if not program.pure:
            raise ProgramNotPureError(
                f"program {program.name!r} writes to the session (an assign, backward, grad, "
                "zero_grad, in-place or random step), so it is not a function to differentiate",
                hint="store the forward computation alone as its own program",
            )
        for name in wrt:
            if name not in program.reads:
                raise BadArgumentsError(
                    f"{name!r} is not an input of program {program.name!r}",
                    hint=f"it reads {', '.join(program.reads) or 'nothing'}",
                )
        for name in of:
            if name not in program.binds:
                raise BadArgumentsError(
                    f"{name!r} is not bound by program {program.name!r}",
                    hint=f"it binds {', '.join(program.binds)}",
                )
        self.session, self.program, self.settings = session, program, settings
        self.wrt, self.of = list(wrt), list(of)
        self.inputs = tuple(Tensor(session.lookup(n)._data) for n in self.wrt)
        self.argnums = tuple(range(len(self.wrt)))

    def __call__(self, *xs: Tensor) -> tuple[Tensor, ...]:
        return self.at(dict(zip(self.wrt, xs)))

    def scalar(self, *xs: Tensor) -> Tensor:
        """The one output, for the transforms of a scalar function."""
        (out,) = self(*xs)
        _scalar(out, self.of[0])
        return out

    def at(self, inputs: Mapping[str, Tensor]) -> tuple[Tensor, ...]:
        return compiled.evaluate(self.session, self.program, self.settings, inputs, self.of)

    def measure(self) -> tuple[tuple[Tensor, ...], int]:
        """One checked evaluation: the outputs, and the elements its ops made."""
        produced: list[int] = []
        outs = compiled.evaluate(
            self.session, self.program, self.settings, dict(zip(self.wrt, self.inputs)),
            self.of, produced,
        )  # fmt: skip
        return outs, produced[0]

    def bound(self, batch: int, blocks: Sequence[tuple[str, int]], produced: int) -> None:
        """Refuse (413) before a transform allocates: each result block (``of`` x ``wrt``
        elements: a Jacobian is n^2 for n inputs) within the tensor limit, and the batch
        the transform vmaps over (``batch`` rows of a basis) times what one evaluation
        makes (``produced``) within the session's bytes: the batched intermediates, which
        no op estimate sees."""
        limit = self.settings.max_tensor_elements
        for what, count in blocks:
            codec.check_elements(count, limit, what)
        itemsize = max((t._data.itemsize for t in self.inputs), default=8)
        need = (batch * produced + sum(count for _, count in blocks)) * itemsize
        if need > self.settings.max_session_bytes:
            raise LimitExceededError(
                f"this derivative would hold about {need} bytes ({batch} rows of a basis "
                f"times the {produced} elements one evaluation makes); a session may hold "
                f"{self.settings.max_session_bytes} (GRADSERVE_MAX_SESSION_BYTES)",
                status=413,
                hint="ask for fewer outputs or inputs at once, or a vjp/jvp/hvp instead",
            )

    def values(self, given: Mapping[str, TensorIn], like: Sequence[Tensor], names: Sequence[str],
               what: str) -> tuple[Tensor, ...]:  # fmt: skip
        """Wire values for ``names`` (one each; cast to the dtype of ``like``'s tensor unless
        the value says its own)."""
        missing = [n for n in names if n not in given]
        extra = [n for n in given if n not in names]
        if missing or extra:
            raise BadArgumentsError(
                f"{what} needs one value for each of {', '.join(names)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; not expected {', '.join(extra)}" if extra else "")
            )
        out = []
        for name, ref in zip(names, like):
            value: Any = given[name]
            explicit = value.dtype is not None
            if not explicit:  # read as the tensor's dtype (data), or cast to it (b64)
                value = value.model_dump(exclude_unset=True)
                if "data" in value:
                    value["dtype"] = codec.dtype_name(ref.dtype)
            arr = codec.decode(value, max_elements=self.settings.max_tensor_elements)
            if not explicit:
                arr = arr.astype(ref.dtype, copy=False)
            out.append(Tensor(arr))
        return tuple(out)


def jacobian(f: Function, mode: str) -> Grid:
    """``jacrev`` / ``jacfwd``: ``{of: {wrt: of.shape + wrt.shape}}``."""
    outs, produced = f.measure()
    rows = sum(o.numel() for o in outs) if mode == "rev" else sum(x.numel() for x in f.inputs)
    blocks = [(f"the Jacobian of {o!r} by {w!r}", t.numel() * x.numel())
              for o, t in zip(f.of, outs) for w, x in zip(f.wrt, f.inputs)]  # fmt: skip
    f.bound(rows, blocks, produced)
    transform = func.jacrev if mode == "rev" else func.jacfwd
    table = transform(f, argnums=f.argnums)(*f.inputs)
    return {o: {w: table[i][j] for j, w in enumerate(f.wrt)} for i, o in enumerate(f.of)}


def hessian(f: Function) -> Grid:
    """``{wrt_i: {wrt_j: wrt_i.shape + wrt_j.shape}}`` of the one scalar ``of``."""
    sizes = [(w, x.numel()) for w, x in zip(f.wrt, f.inputs)]
    blocks = [(f"the Hessian block of {a!r} by {b!r}", m * n) for a, m in sizes for b, n in sizes]
    f.bound(sum(n for _, n in sizes), blocks, f.measure()[1])
    table = func.hessian(f.scalar, argnums=f.argnums)(*f.inputs)
    return {a: {b: table[i][j] for j, b in enumerate(f.wrt)} for i, a in enumerate(f.wrt)}


def vjp(f: Function, cotangents: Mapping[str, TensorIn]) -> dict[str, Tensor]:
    outs, pull = func.vjp(f, *f.inputs)
    grads = pull(f.values(cotangents, outs, f.of, "cotangents"))
    return dict(zip(f.wrt, grads))


def jvp(
    f: Function, tangents: Mapping[str, TensorIn]
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    v = f.values(tangents, f.inputs, f.wrt, "tangents")
    outs, jv = func.jvp(f, f.inputs, v)
    return dict(zip(f.of, outs)), dict(zip(f.of, jv))


def hvp(f: Function, v: Mapping[str, TensorIn]) -> dict[str, Tensor]:
    """The Hessian of the scalar ``of`` times ``v``: forward mode over the gradient
    (``jvp(grad(f), primals, v)``, as torch.func's recipe)."""
    vs = f.values(v, f.inputs, f.wrt, "v")
    _, product = func.jvp(func.grad(f.scalar, argnums=f.argnums), f.inputs, vs)
    return dict(zip(f.wrt, product))


def per_sample_grad(f: Function, batch: Mapping[str, int]) -> dict[str, Tensor]:
    """``vmap(grad(f, argnums), in_dims)(*wrt, *batched)``: for each sample (the batched
    tensors indexed along their dim), the gradient of the scalar ``of``, stacked."""
    for name in batch:
        if name not in f.program.reads:
            raise BadArgumentsError(f"{name!r} is not an input of program {f.program.name!r}")
    others = [n for n in batch if n not in f.wrt]
    names = [*f.wrt, *others]
    args = (*f.inputs, *(f.session.lookup(n) for n in others))
    in_dims = tuple(batch.get(n) for n in names)
    samples = max((_dim_size(t, d) for t, d in zip(args, in_dims) if d is not None), default=1)
    # a batched input's gradient is per sample already; an unbatched one's, once per sample
    blocks = [(f"the per-sample gradients of {w!r}", x.numel() * (1 if w in batch else samples))
              for w, x in zip(f.wrt, f.inputs)]  # fmt: skip
    f.bound(1, blocks, 0)

    def scalar(*xs: Tensor) -> Tensor:
        return f.at(dict(zip(names, xs)))[0]

    grads = func.vmap(func.grad(scalar, argnums=f.argnums), in_dims=in_dims)(*args)
    return dict(zip(f.wrt, grads))


def _scalar(out: Tensor, name: str) -> None:
    if out.dim() != 0:
        raise NotScalarError(
            f"{name!r} has shape {list(out.shape)}: a Hessian or a per-sample gradient is of "
            "one scalar output (reduce it in the program with sum() or mean())"
        )


def _dim_size(t: Tensor, dim: int) -> int:
    """The size of ``dim`` (0 when out of range: vmap reports that in PyTorch's words)."""
    return t.shape[dim] if -t.dim() <= dim < t.dim() else 0
