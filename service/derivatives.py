"""A pure program as a function, and the derivatives PyTorch offers of one.

``Function`` maps the tensors the program reads (``wrt``) to the tensors it binds
(``of``), evaluated on a copy of the session's bindings (``compiled.evaluate``), so no
``.grad`` is written, no graph kept and no version bumped. The derivatives are the
engine's (``engine.functional``: PyTorch's ``torch.autograd.functional``, whose values
are ``torch.func``'s): every kind is a few lines over it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import engine
from engine import Tensor, functional

from . import codec, compiled
from .compiled import Program
from .errors import BadArgumentsError, ProgramNotPureError
from .schemas import TensorIn
from .session.state import Session
from .settings import Settings

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

    def __call__(self, *xs: Tensor) -> tuple[Tensor, ...]:
        return self.at(dict(zip(self.wrt, xs)))

    def at(self, inputs: Mapping[str, Tensor]) -> tuple[Tensor, ...]:
        return compiled.evaluate(self.session, self.program, self.settings, inputs, self.of)

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
    if mode == "rev":
        table = functional.jacobian(f, f.inputs)
        return {o: {w: table[i][j] for j, w in enumerate(f.wrt)} for i, o in enumerate(f.of)}
    return _jacobian_forward(f)


def _jacobian_forward(f: Function) -> Grid:
    """Forward mode, one Jacobian-vector product per input element (a column each)."""
    outs = f(*f.inputs)
    grid: Grid = {o: {} for o in f.of}
    for j, (w, x) in enumerate(zip(f.wrt, f.inputs)):
        columns: list[list[np.ndarray]] = [[] for _ in f.of]
        for k in range(x._data.size):
            basis = np.zeros(x._data.size, x.dtype)
            basis[k] = 1
            tangents = tuple(
                Tensor(basis.reshape(x.shape)) if i == j else Tensor(np.zeros(y.shape, y.dtype))
                for i, y in enumerate(f.inputs)
            )
            _, jv = functional.jvp(f, f.inputs, tangents)
            for i, col in enumerate(jv):
                columns[i].append(col._data)
        for i, (o, y) in enumerate(zip(f.of, outs)):
            stacked = np.stack(columns[i], axis=-1) if columns[i] else np.zeros((*y.shape, 0))
            grid[o][w] = Tensor(stacked.reshape(y.shape + x.shape).astype(y.dtype, copy=False))
    return grid


def hessian(f: Function) -> Grid:
    """``{wrt_i: {wrt_j: wrt_i.shape + wrt_j.shape}}`` of the one scalar ``of``."""
    table = functional.hessian(lambda *xs: f(*xs)[0], f.inputs)
    return {a: {b: table[i][j] for j, b in enumerate(f.wrt)} for i, a in enumerate(f.wrt)}


def vjp(f: Function, cotangents: Mapping[str, TensorIn]) -> dict[str, Tensor]:
    outs = f(*f.inputs)
    v = f.values(cotangents, outs, f.of, "cotangents")
    _, grads = functional.vjp(f, f.inputs, v)
    return dict(zip(f.wrt, grads))


def jvp(
    f: Function, tangents: Mapping[str, TensorIn]
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    v = f.values(tangents, f.inputs, f.wrt, "tangents")
    outs, jv = functional.jvp(f, f.inputs, v)
    return dict(zip(f.of, outs)), dict(zip(f.of, jv))


def hvp(f: Function, v: Mapping[str, TensorIn]) -> dict[str, Tensor]:
    """The Hessian of the scalar ``of`` times ``v``: a VJP of its gradient (symmetric H)."""
    vs = f.values(v, f.inputs, f.wrt, "v")

    def gradient(*xs: Tensor) -> tuple[Tensor, ...]:
        (out,) = f(*xs)
        _scalar(out, f.of[0])
        return tuple(engine.grad([out], list(xs), create_graph=True, allow_unused=True,
                                 materialize_grads=True))  # fmt: skip

    _, product = functional.vjp(gradient, f.inputs, vs)
    return dict(zip(f.wrt, product))


def per_sample_grad(f: Function, batch: Mapping[str, int]) -> dict[str, Tensor]:
    """``vmap(grad(f), in_dims)``: for each sample (the batched tensors indexed along their
    dim, that dim removed), the gradient of the scalar ``of``; stacked along dim 0."""
    sizes = set()
    full = {}
    for name, dim in batch.items():
        if name not in f.program.reads:
            raise BadArgumentsError(f"{name!r} is not an input of program {f.program.name!r}")
        t = f.session.lookup(name)
        if not -t.dim() <= dim < max(t.dim(), 1) or t.dim() == 0:
            raise BadArgumentsError(
                f"batch dim {dim} is out of range for {name!r} of shape {list(t.shape)}"
            )
        full[name] = (t, dim % t.dim())
        sizes.add(t.shape[dim])
    if len(sizes) != 1:
        raise BadArgumentsError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            + ", ".join(f"{n}: {t.shape[d]}" for n, (t, d) in full.items())
        )
    (n,) = sizes
    rows: dict[str, list[np.ndarray]] = {w: [] for w in f.wrt}
    for b in range(n):
        sample = {name: Tensor(np.take(t._data, b, axis=d)) for name, (t, d) in full.items()}
        xs = tuple(sample.get(w, x) for w, x in zip(f.wrt, f.inputs))
        xs = tuple(Tensor(x._data, requires_grad=True) for x in xs)
        (out,) = f.at({**sample, **dict(zip(f.wrt, xs))})
        _scalar(out, f.of[0])
        grads = engine.grad([out], list(xs), allow_unused=True, materialize_grads=True)
        for w, g in zip(f.wrt, grads):
            rows[w].append(g._data)
    return {w: Tensor(np.stack(r) if r else np.zeros((0,))) for w, r in rows.items()}


def _scalar(out: Tensor, name: str) -> None:
    if out._data.size != 1:
        raise BadArgumentsError(
            f"{name!r} has shape {list(out.shape)}: the gradient of one output needs a scalar",
            hint="reduce it in the program (sum() or mean())",
        )
