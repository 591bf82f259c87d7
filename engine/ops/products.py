"""Products: einsum, tensordot, kron, cross, the fused multiply-adds (addmm,
baddbmm, addmv) and the triangles (tril, triu) that masks are made of.

``einsum`` is one node whose backward is einsum again (with identity matrices
for repeated subscripts and ones for subscripts summed away), so any equation
differentiates to any order. Its node carries the name PyTorch's own
decomposition ends in (``ViewBackward0`` after a contraction of several
operands, ``MulBackward0`` without one, ``SumBackward1``/``PermuteBackward0``
for one operand).
"""

from __future__ import annotations

import math
import re
import string
from typing import Any

import numpy as np

from .. import dtypes
from ..dual import LINEAR, MULTILINEAR
from ..errors import BadArgumentsError, DtypeMismatchError, EngineError, ShapeMismatchError
from ..function import Function
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from . import samples as S
from ._composite import composite, intermediates_only
from ._util import as_tensor, broadcast_shape, normalize_dim
from .indexing import index_select
from .shape import expand, reshape

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # PyTorch's order for implicit output


def _cpp(dt: np.dtype) -> str:
    return {"Float": "float", "Double": "double"}.get(_type(dt), _type(dt).lower())


def _type(dt: np.dtype) -> str:
    return {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}.get(
        dtypes.torch_name(dt), str(dt)
    )


# -- einsum --------------------------------------------------------------------------------


def _err(msg: str) -> BadArgumentsError:
    return BadArgumentsError(f"einsum(): {msg}")


def _parse_term(term: str, offset: int) -> list[str]:
    """A term as a list of subscripts, ``...`` kept as one item."""
    out: list[str] = []
    i = 0
    while i < len(term):
        if term.startswith("...", i):
            if "..." in out:
                raise _err("found '.' for operand that is not part of any ellipsis")
            out.append("...")
            i += 3
            continue
        ch = term[i]
        if ch == ".":
            raise _err(f"found '.' for operand {offset} that is not part of any ellipsis")
        if ch not in _LETTERS:
            raise _err(
                f"invalid subscript given at index {i} in the equation string, subscripts "
                "must be in [a-zA-Z]"
            )
        out.append(ch)
        i += 1
    return out


def _canonical(equation: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """The equation with each ellipsis spelled out in fresh letters and an explicit
    output: (input terms, output term), every term a plain string of letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise _err("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _err("more operands were provided than specified in the equation")
    parsed = [_parse_term(t, k) for k, t in enumerate(terms)]
    used = {c for p in parsed for c in p if c != "..."} | set(rhs.replace(".", ""))
    fresh = [c for c in _LETTERS if c not in used]
    n_ell = 0
    for k, (p, shape) in enumerate(zip(parsed, shapes)):
        letters = len(p) - ("..." in p)
        if "..." in p:
            if letters > len(shape):
                raise _err(
                    f"the number of subscripts in the equation ({letters}) is more than the "
                    f"number of dimensions ({len(shape)}) for operand {k}"
                )
            n_ell = max(n_ell, len(shape) - letters)
        elif letters != len(shape):
            raise _err(
                f"the number of subscripts in the equation ({letters}) does not match the number "
                f"of dimensions ({len(shape)}) for operand {k} and no ellipsis was given"
            )
    ell = "".join(fresh[:n_ell])
    ins = []
    for p, shape in zip(parsed, shapes):
        e = len(shape) - (len(p) - ("..." in p))
        ins.append("".join(ell[n_ell - e :] if c == "..." else c for c in p))
    if arrow:
        out_terms = _parse_term(rhs, 0)
        for c in out_terms:
            if c != "..." and not any(c in t for t in ins):
                raise _err(
                    f"output subscript {c} does not appear in the equation for any input operand"
                )
            if c != "..." and out_terms.count(c) > 1:
                raise _err(f"output subscript {c} appears more than once in the output")
        out = "".join(ell if c == "..." else c for c in out_terms)
    else:
        counts = {c: sum(t.count(c) for t in ins) for c in set("".join(ins)) - set(ell)}
        out = ell + "".join(c for c in _LETTERS if counts.get(c) == 1)
    return ins, out


def _einsum_name(ins: list[str], out: str) -> str:
    contracted = any(c not in out for t in ins for c in t)
    if len(ins) == 1:
        return "SumBackward1" if contracted else "PermuteBackward0"
    return "ViewBackward0" if contracted else "MulBackward0"


class _Einsum(Function):
    """One einsum node; subclasses per PyTorch name (see ``_einsum_name``)."""

    name = "EinsumBackward"
    jvp = MULTILINEAR  # a product of its operands

    @staticmethod
    def forward(ctx: Any, *ops: Tensor, ins: list[str], out: str) -> np.ndarray:
        # operand j is read only by the other operands' gradients (torch saves no more):
        # the rest are kept as their shape, so writing them in place later is allowed, and
        # one operand alone (a trace, a permutation) saves nothing, as torch's views
        need = ctx.needs_input_grad
        n = len(ops)
        ctx.kept = tuple(any(need[k] for k in range(n) if k != j) for j in range(n))
        ctx.layouts = tuple((o._data.shape, o._data.dtype) for o in ops)
        if any(ctx.kept):
            ctx.save_for_backward(*(o for o, keep in zip(ops, ctx.kept) if keep))
        ctx.ins, ctx.out = ins, out
        arrays = [o._data for o in ops]
        spec = ",".join(ins) + "->" + out
        res = np.einsum(spec, *arrays, optimize=len(arrays) > 1)
        return np.asarray(res, dtype=arrays[0].dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor | None, ...]:
        saved = iter(ctx.saved_tensors if any(ctx.kept) else ())
        ops = tuple(
            next(saved) if keep else Tensor._make(np.broadcast_to(np.zeros((), dtype), shape))
            for keep, (shape, dtype) in zip(ctx.kept, ctx.layouts)
        )
        return tuple(
            _einsum_grad(g, ops, ctx.ins, ctx.out, k) if need else None
            for k, need in enumerate(ctx.needs_input_grad)
        )


def _einsum_grad(g: Tensor, ops: tuple[Tensor, ...], ins: list[str], out: str, k: int) -> Tensor:
    """d/d(operand k): einsum of the gradient with the other operands into operand k's
    term; a repeated subscript becomes a fresh one tied by an identity matrix (only the
    diagonal gets gradient), a subscript found nowhere else is broadcast with ones."""
    term = ins[k]
    sizes = {c: n for t, o in zip(ins, ops) for c, n in zip(t, o._data.shape)}
    terms = [out] + [t for j, t in enumerate(ins) if j != k]
    operands: list[Tensor] = [g] + [o for j, o in enumerate(ops) if j != k]
    used = set("".join(ins) + out)
    fresh = iter(c for c in _LETTERS if c not in used)
    dt = g._data.dtype
    target = []
    seen: set[str] = set()
    for c in term:
        if c in seen:
            d = next(fresh)
            terms.append(c + d)
            operands.append(Tensor._make(np.eye(sizes[c], dtype=dt)))
            target.append(d)
        else:
            seen.add(c)
            target.append(c)
    present = set("".join(terms))
    for c in seen - present:
        terms.append(c)
        operands.append(Tensor._make(np.ones(sizes[c], dtype=dt)))
    cls = _einsum_class(_einsum_name(terms, "".join(target)))
    return cls.apply(*operands, ins=terms, out="".join(target))


_EINSUM_CLASSES: dict[str, type[_Einsum]] = {}


def _einsum_class(name: str) -> type[_Einsum]:
    cls = _EINSUM_CLASSES.get(name)
    if cls is None:
        cls = _EINSUM_CLASSES[name] = type(name, (_Einsum,), {"name": name})
    return cls


def _einsum_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample("ij,jk->ik", r(rng, 2, 3), r(rng, 3, 4), note="matmul"),
        sample("bij,bjk->bik", r(rng, 2, 2, 3), r(rng, 2, 3, 2), note="batched"),
        sample("ii->", r(rng, 3, 3), note="trace"),
        sample("ii->i", r(rng, 3, 3), note="diagonal"),
        sample("ij->ji", r(rng, 2, 3), note="transpose"),
        sample("ij->j", r(rng, 2, 3), note="column sums"),
        sample("i,j->ij", r(rng, 3), r(rng, 2), note="outer"),
        sample("i,i->", r(rng, 3), r(rng, 3), note="dot"),
        sample("...ij,...jk->...ik", r(rng, 2, 2, 3), r(rng, 3, 2), note="ellipsis broadcast"),
        sample("b...,b...->b", r(rng, 2, 3, 2), r(rng, 2, 3, 2), note="ellipsis inside"),
        sample("ij,jk,kl->il", r(rng, 2, 3), r(rng, 3, 2), r(rng, 2, 2), note="three operands"),
        sample("iij,jk->ik", r(rng, 2, 2, 3), r(rng, 3, 2), note="repeated and contracted"),
        sample("ij,kj", r(rng, 2, 3), r(rng, 4, 3), note="implicit output"),
        sample("ij,j->i", r(rng, 2, 3), r(rng, 1), note="size-1 broadcast"),
        sample("ij,jk", [r(rng, 2, 3), r(rng, 3, 2)], note="operands as a list"),
        sample(r(rng, 2, 3), r(rng, 3), equation="ij,j->i", note="equation as a keyword"),
    ]


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(getattr(value, "shape", np.shape(value)))


def _einsum_estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The output's size: every subscript's largest extent, over the output's subscripts
    (an upper bound even for an implicit output: all subscripts)."""
    eq = kwargs.get("equation")
    ops = list(args)
    if eq is None and ops and isinstance(ops[0], str):
        eq, ops = ops[0], ops[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = list(ops[0])
    if not isinstance(eq, str):
        return None
    try:
        ins, out = _canonical(eq, [_shape(o) for o in ops])
    except EngineError:
        return None
    sizes: dict[str, int] = {}
    for t, o in zip(ins, ops):
        for c, n in zip(t, _shape(o)):
            sizes[c] = max(sizes.get(c, 1), n)
    return math.prod(sizes.get(c, 1) for c in out)


def _einsum_work(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """Multiply-adds of numpy's contraction order (its own count, read from
    ``einsum_path`` on stand-ins of the operands' shapes): ``"ij,kl->"`` of two 4000 x
    4000 matrices is one numpy call of 2.6·10¹⁴."""
    eq = kwargs.get("equation")
    ops = list(args)
    if eq is None and ops and isinstance(ops[0], str):
        eq, ops = ops[0], ops[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = list(ops[0])
    if not isinstance(eq, str) or not ops:
        return None
    shapes = [_shape(o) for o in ops]
    try:
        ins, out = _canonical(eq, shapes)
        sizes: dict[str, int] = {}
        for t, shape in zip(ins, shapes):
            for c, n in zip(t, shape):
                sizes[c] = max(sizes.get(c, 1), n)
        stand_ins = [
            np.lib.stride_tricks.as_strided(np.zeros(1), [sizes[c] for c in t], [0] * len(t))
            for t in ins
        ]
        spec = ",".join(ins) + "->" + out
        report = np.einsum_path(spec, *stand_ins, optimize=len(ops) > 1)[1]
    except (EngineError, ValueError, KeyError):
        return None
    found = re.search(r"Optimized FLOP count:\s*([0-9.e+]+)", report)
    return int(float(found.group(1)) / 2) if found else None


def _pair_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """|a| * |b|: the most a product of two tensors can hold (kron, tensordot dims=0)."""
    shapes = [_shape(v) for v in list(args[:2]) + list(kwargs.values())[:2] if hasattr(v, "shape")]
    return math.prod(math.prod(s) for s in shapes[:2]) if len(shapes) >= 2 else None


def _torch_einsum(torch: Any, *operands: Any, equation: str | None = None) -> Any:
    return torch.einsum(*operands) if equation is None else torch.einsum(equation, *operands)


@register(
    samples=_einsum_samples,
    method=False,
    torch=_torch_einsum,
    estimate=_einsum_estimate,
    work=_einsum_work,
)
def einsum(*operands: Any, equation: str | None = None) -> Tensor:
    """Sum of products over subscripts (``"bij,bjk->bik"``), with ``...`` and repeated subscripts.

    Called as PyTorch calls it, ``einsum("ij,jk", a, b)``, or with ``equation=`` as a keyword
    (an HTTP step's positional strings name tensors)."""
    if equation is None:
        if not operands or not isinstance(operands[0], str):
            raise BadArgumentsError("einsum(): equation must be a string")
        equation, operands = operands[0], operands[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ops = [as_tensor(o) for o in operands]
    ins, out = _canonical(equation, [o.shape for o in ops])
    if ops and any(o.dtype != ops[0].dtype for o in ops):
        raise DtypeMismatchError(
            f"expected scalar type {_type(ops[0].dtype)} but found "
            f"{_type(next(o.dtype for o in ops if o.dtype != ops[0].dtype))}"
        )
    # subscript sizes: repeated ones must agree, across operands size 1 broadcasts
    sizes: dict[str, int] = {}
    for k, (t, o) in enumerate(zip(ins, ops)):
        local: dict[str, int] = {}
        for c, n in zip(t, o.shape):
            if c in local and local[c] != n:
                raise _err(
                    f"subscript {c} is repeated for operand {k} but the sizes don't match, "
                    f"{n} != {local[c]}"
                )
            local[c] = n
        for c, n in local.items():
            prev = sizes.get(c)
            if prev is not None and n != prev and 1 not in (n, prev):
                raise _err(
                    f"subscript {c} has size {n} for operand {k} which does not broadcast with "
                    f"previously seen size {prev}"
                )
            if prev is None or prev == 1:
                sizes[c] = n
    ops = [
        expand(o, tuple(sizes[c] for c in t))
        if any(n != sizes[c] for c, n in zip(t, o.shape))
        else o
        for t, o in zip(ins, ops)
    ]
    return _einsum_class(_einsum_name(ins, out)).apply(*ops, ins=ins, out=out)


# -- tensordot and kron ------------------------------------------------------------------


def _tensordot_dims(dims: Any, na: int, nb: int) -> tuple[list[int], list[int]]:
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise BadArgumentsError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(na, nb):
            raise BadArgumentsError(
                f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}"
            )
        return list(range(na - dims, na)), list(range(dims))
    if isinstance(dims, (list, tuple)) and len(dims) == 2:
        da, db = dims
        da = [da] if isinstance(da, (int, np.integer)) else list(da)
        db = [db] if isinstance(db, (int, np.integer)) else list(db)
        if len(da) != len(db):
            raise BadArgumentsError("both dimension lists should have same length")
        return [normalize_dim(d, na) for d in da], [normalize_dim(d, nb) for d in db]
    raise BadArgumentsError(f"tensordot expects dims to be an int or a pair of lists, got {dims!r}")


def _tensordot_body(a: Tensor, b: Tensor, *, spec: str) -> Tensor:
    ins, out = spec.split("->")
    ta, tb = ins.split(",")
    return _Einsum.apply(a, b, ins=[ta, tb], out=out)


def _tensordot_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3, 4), r(rng, 3, 4, 2), note="dims 2 (default)"),
        sample(r(rng, 2, 3), r(rng, 3, 2), dims=1, note="dims 1"),
        sample(r(rng, 2, 3), r(rng, 4), dims=0, note="dims 0 (outer)"),
        sample(r(rng, 2, 3, 4), r(rng, 4, 3), dims=([1, 2], [1, 0]), note="pairs"),
        sample(r(rng, 3, 2), r(rng, 3, 5), dims=([0], [0]), note="pair of single dims"),
        sample(r(rng, 1, 1, 1), r(rng, 2, 1, 2), dims=([0, 1], [2, 0]), note="size-1 dims summed"),
    ]


@register(out_overlap="unchecked", samples=_tensordot_samples, method=False, estimate=_pair_size)
def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contract ``dims`` (a count of trailing/leading dims, or two lists) of ``a`` and ``b``."""
    x, y = as_tensor(a), as_tensor(b)
    if x.dtype != y.dtype:
        raise DtypeMismatchError("both inputs should have same dtype")
    da, db = _tensordot_dims(dims, x.ndim, y.ndim)
    for i, j in zip(da, db):
        if y.shape[j] == 1 and x.shape[i] != 1:  # a broadcast dim is summed right away (ATen)
            x = OPS["sum"].fn(x, i, keepdim=True)
        elif x.shape[i] == 1 and y.shape[j] != 1:
            y = OPS["sum"].fn(y, j, keepdim=True)
        elif x.shape[i] != y.shape[j]:
            raise ShapeMismatchError(
                f"contracted dimensions need to match, but first has size {x.shape[i]} in dim "
                f"{i - x.ndim if isinstance(dims, int) else i} and second has size "
                f"{y.shape[j]} in dim {j}"
            )
    letters = iter(_LETTERS)
    ta = [next(letters) for _ in range(x.ndim)]
    tb = [next(letters) for _ in range(y.ndim)]
    for i, j in zip(da, db):
        tb[j] = ta[i]
    out = [c for i, c in enumerate(ta) if i not in da] + [
        c for j, c in enumerate(tb) if j not in db
    ]
    spec = f"{''.join(ta)},{''.join(tb)}->{''.join(out)}"
    return composite("ViewBackward0", _tensordot_body, x, y, spec=spec)


def _kron_body(a: Tensor, b: Tensor, *, n: int) -> Tensor:
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    ea = reshape(a, tuple(v for s in sa for v in (s, 1)))
    eb = reshape(b, tuple(v for s in sb for v in (1, s)))
    return reshape(ea * eb, tuple(p * q for p, q in zip(sa, sb)))


def _kron_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 2), r(rng, 2, 3), note="matrices"),
        sample(r(rng, 2, 3), r(rng, 4), note="different ranks"),
        sample(r(rng, 3), r(rng, 2), note="vectors"),
        sample(r(rng, 2, 1, 2), r(rng, 2, 2), note="3-d and 2-d"),
    ]


@register(samples=_kron_samples, estimate=_pair_size)
def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: each entry of ``input`` scales a copy of ``other``."""
    a, b = as_tensor(input), as_tensor(other)
    # torch multiplies reshaped copies (_unsafe_view): writing an input leaves it valid
    return composite(
        "UnsafeViewBackward0", _kron_body, a, b, saves=intermediates_only, n=max(a.ndim, b.ndim)
    )


# -- cross -----------------------------------------------------------------------------------


def _cross_body(a: Tensor, b: Tensor, *, dim: int) -> Tensor:
    one = Tensor._make(np.array([1, 2, 0]))
    two = Tensor._make(np.array([2, 0, 1]))
    return index_select(a, dim, one) * index_select(b, dim, two) - index_select(
        a, dim, two
    ) * index_select(b, dim, one)


def _cross_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3), r(rng, 3), dim=0, note="vectors"),
        sample(r(rng, 2, 3), r(rng, 2, 3), dim=1, note="rows"),
        sample(r(rng, 3, 2), r(rng, 3, 2), dim=0, note="columns"),
        sample(r(rng, 2, 3), r(rng, 1, 3), dim=-1, note="broadcast"),
    ]


@register(out_overlap="unchecked", samples=_cross_samples)
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (``torch.linalg.cross``; inputs broadcast)."""
    a, b = as_tensor(input), as_tensor(other)
    if a.ndim != b.ndim:
        raise ShapeMismatchError("linalg.cross: inputs must have the same number of dimensions.")
    if a.dtype != b.dtype:
        raise DtypeMismatchError(
            f"expected scalar type {_type(a.dtype)} but found {_type(b.dtype)}"
        )
    shape = broadcast_shape(a.shape, b.shape)
    if dim is None:
        d = next((i for i, n in enumerate(shape) if n == 3), None)
        if d is None:
            raise BadArgumentsError("no dimension of size 3 in input")
    else:
        d = normalize_dim(dim, len(shape))
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise ShapeMismatchError(
            f"linalg.cross: inputs dimension {dim if dim is not None else d} must have length 3. "
            f"Got {a.shape[d]} and {b.shape[d]}"
        )
    return composite("LinalgCrossBackward0", _cross_body, a, b, dim=d)


# -- tril, triu ------------------------------------------------------------------------------


class TrilBackward0(Function):
    name = "TrilBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, k: int) -> np.ndarray:
        ctx.k = k
        return np.tril(a._data, k)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return TrilBackward0.apply(g, k=ctx.k)


class TriuBackward0(Function):
    name = "TriuBackward0"
    jvp = LINEAR

    @staticmethod
    def forward(ctx: Any, a: Tensor, *, k: int) -> np.ndarray:
        ctx.k = k
        return np.triu(a._data, k)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        return TriuBackward0.apply(g, k=ctx.k)


def _tri_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 3, 3), note="square"),
        sample(r(rng, 3, 4), 1, note="above the diagonal"),
        sample(r(rng, 4, 3), -1, note="below the diagonal"),
        sample(r(rng, 2, 3, 3), diagonal=-5, note="batched, all cut"),
        sample(Const(np.ones((3, 3), dtype=bool)), note="bool"),
        sample(r(rng, 0, 3), note="empty"),
    ]


def _tri(name: str, fn: type[Function], input: Any, diagonal: int) -> Tensor:
    a = as_tensor(input)
    if a.ndim < 2:
        raise ShapeMismatchError(f"{name}: input tensor must have at least 2 dimensions")
    return fn.apply(a, k=int(diagonal))


@register(out_overlap="unchecked", samples=_tri_samples, inplace=True)
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (on and below ``diagonal``) of the last two dims; the rest zeros."""
    return _tri("tril", TrilBackward0, input, diagonal)


@register(out_overlap="unchecked", samples=_tri_samples, inplace=True)
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above ``diagonal``) of the last two dims; the rest zeros."""
    return _tri("triu", TriuBackward0, input, diagonal)


# -- addmm, baddbmm, addmv -------------------------------------------------------------------


def _scaled(x: Tensor, s: float) -> Tensor:
    return x if s == 1 else x * s


def _addmm_body(
    bias: Tensor, a: Tensor, b: Tensor, *, beta: float, alpha: float, mul: str
) -> Tensor:
    if a.dtype.kind in "iu":  # integer tensors take the scalars as integers (truncated)
        beta, alpha = int(beta), int(alpha)
    prod = _scaled(OPS[mul].fn(a, b), alpha)
    if beta == 0:  # the input is ignored, NaN included (PyTorch's rule)
        return prod
    return _scaled(bias, beta) + prod


def _check_expand(bias: Tensor, target: tuple[int, ...]) -> None:
    bs = bias.shape
    if len(bs) > len(target) or any(n not in (1, m) for n, m in zip(bs[::-1], target[::-1])):
        i = (
            next((k for k in range(1, len(bs) + 1) if bs[-k] not in (1, target[-k])), len(bs))
            if len(bs) <= len(target)
            else 1
        )
        raise ShapeMismatchError(
            f"The expanded size of the tensor ({target[-i]}) must match the existing size "
            f"({bs[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
            f"[{', '.join(map(str, target))}].  Tensor sizes: [{', '.join(map(str, bs))}]"
        )


def _matrix(name: str, t: Tensor, nd: int, what: str = "matrix") -> None:
    if t.ndim != nd:
        raise ShapeMismatchError(f"{name} must be a {what}, got {t.ndim}-D tensor")


def _addmm_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 3), r(rng, 2, 4), r(rng, 4, 3), note="plain"),
        sample(
            r(rng, 3), r(rng, 2, 4), r(rng, 4, 3), beta=0.5, alpha=2.0, note="broadcast, scaled"
        ),
        sample(r(rng, 2, 3), r(rng, 2, 4), r(rng, 4, 3), beta=0.0, note="beta 0"),
        sample(r(rng, 1, 1), r(rng, 0, 2), r(rng, 2, 3), note="empty"),
    ]


@register(samples=_addmm_samples)
def addmm(
    input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0, alpha: float = 1.0
) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``, the input broadcast to the product."""
    bias, a, b = as_tensor(input), as_tensor(mat1), as_tensor(mat2)
    _matrix("mat1", a, 2)
    _matrix("mat2", b, 2)
    if a.shape[1] != b.shape[0]:
        raise ShapeMismatchError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})"
        )
    _check_expand(bias, (a.shape[0], b.shape[1]))
    if bias.dtype != b.dtype:
        raise DtypeMismatchError(
            f"self and mat2 must have the same dtype, but got {_type(bias.dtype)} and "
            f"{_type(b.dtype)}"
        )
    if a.dtype != b.dtype:
        raise DtypeMismatchError(
            f"expected m1 and m2 to have the same dtype, but got: {_cpp(a.dtype)} != "
            f"{_cpp(b.dtype)}"
        )
    return composite(
        "AddmmBackward0", _addmm_body, bias, a, b, beta=beta, alpha=alpha, mul="mm", saves=_mm_saves
    )


def _mm_saves(need: Any) -> tuple[bool, ...]:
    """What torch's addmm/baddbmm/addmv nodes save: each factor for the other's gradient,
    never the added input."""
    return (False, need[2], need[1])


def _baddbmm_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2, 2, 3), r(rng, 2, 2, 4), r(rng, 2, 4, 3), note="plain"),
        sample(r(rng, 3), r(rng, 2, 2, 4), r(rng, 2, 4, 3), beta=2.0, alpha=-1.0, note="broadcast"),
        sample(r(rng, 2, 2, 3), r(rng, 2, 2, 4), r(rng, 2, 4, 3), beta=0, note="beta 0"),
    ]


@register(samples=_baddbmm_samples)
def baddbmm(
    input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1.0, alpha: float = 1.0
) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` over a batch of matrices."""
    bias, a, b = as_tensor(input), as_tensor(batch1), as_tensor(batch2)
    _matrix("batch1", a, 3, "3D tensor")
    _matrix("batch2", b, 3, "3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise ShapeMismatchError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )
    _check_expand(bias, (a.shape[0], a.shape[1], b.shape[2]))
    if bias.dtype != a.dtype or bias.dtype != b.dtype:
        if bias.dtype != a.dtype and bias.dtype != b.dtype or a.dtype == b.dtype:
            raise DtypeMismatchError(
                f"Input dtypes must be the same, got: input {_cpp(bias.dtype)}, batch1: "
                f"{_cpp(a.dtype)}, batch2: {_cpp(b.dtype)}"
            )
        raise DtypeMismatchError(
            f"expected scalar type {_type(a.dtype)} but found {_type(b.dtype)}"
        )
    return composite(
        "BaddbmmBackward0",
        _addmm_body,
        bias,
        a,
        b,
        beta=beta,
        alpha=alpha,
        mul="bmm",
        saves=_mm_saves,
    )


def _addmv_samples(rng: np.random.Generator) -> list[Any]:
    r = S.rand
    return [
        sample(r(rng, 2), r(rng, 2, 3), r(rng, 3), note="plain"),
        sample(r(rng, 1), r(rng, 2, 3), r(rng, 3), beta=0.5, alpha=3.0, note="broadcast"),
        sample(r(rng, 2), r(rng, 2, 3), r(rng, 3), beta=0.0, note="beta 0"),
    ]


@register(samples=_addmv_samples)
def addmv(
    input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1.0, alpha: float = 1.0
) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    bias, m, v = as_tensor(input), as_tensor(mat), as_tensor(vec)
    if (
        m.ndim != 2
        or v.ndim != 1
        or m.shape[1] != v.shape[0]
        or bias.shape
        not in (
            (m.shape[0],),
            (1,),
            (),
        )
    ):
        raise ShapeMismatchError(
            f"size mismatch, got input ({', '.join(map(str, bias.shape))}), mat "
            f"({'x'.join(map(str, m.shape))}), vec ({', '.join(map(str, v.shape))})"
        )
    if not bias.dtype == m.dtype == v.dtype:
        raise DtypeMismatchError(
            "addmv input tensors must have the same dtype, but got "
            f"{_type(bias.dtype)}, {_type(m.dtype)}, and {_type(v.dtype)}"
        )
    return composite(
        "AddmvBackward0",
        _addmm_body,
        bias,
        m,
        v,
        beta=beta,
        alpha=alpha,
        mul="mv",
        saves=_mm_saves,
    )
