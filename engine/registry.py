"""The op catalogue: every public op, its signature, doc and test samples.

Filled once at import by the ``ops`` modules (``@register``) and never changed
after. The service lists and dispatches ops from here; the test suite runs
gradcheck and a PyTorch comparison over every entry's samples.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradcore.results import evaluate_results as evaluate_results  # Results.evaluate; tests

from .binding import Binding, accepts, checked
from .compat import calls
from .complex_guard import ComplexRefusal, refusing_complex


@dataclass(frozen=True)
class Const:
    """A sample argument that is a tensor but must not require grad (targets, masks)."""

    value: np.ndarray


@dataclass(frozen=True)
class Sample:
    """One call of an op for tests. ``np.ndarray`` float args become tensors that
    require grad; ``Const`` args become plain tensors; other values pass as they are."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    gradcheck: bool = True  # False where finite differences are meaningless (kinks, ties)


def sample(*args: Any, note: str = "", gradcheck: bool = True, **kwargs: Any) -> Sample:
    return Sample(tuple(args), kwargs, note, gradcheck)


SampleFn = Callable[[np.random.Generator], list[Sample]]


@dataclass(frozen=True)
class Results:
    """How many results a call makes when its arguments decide, as data a client can
    evaluate too (``GET /v1/ops`` serves ``rule()``): arguments are read by parameter
    name, positional or keyword, defaults applied.

    ``given``: ``count`` results (a tuple) when argument ``arg`` is given and is not a
    tensor, else one (``max(x)`` and ``max(x, other)`` one, ``max(x, dim)`` two).
    ``dim_size``: one per index of ``input`` along ``dim`` (``unbind``).
    ``split``: pieces of ``arg`` elements (or one per listed size) along ``dim``.
    ``chunk``: PyTorch's ``chunk`` count for ``arg`` chunks along ``dim``.
    ``flag``: ``count`` results (a tuple) when argument ``arg`` is true, else one
    (``max_pool2d(..., return_indices=True)``).
    ``flag_ndim``: one result per dim of ``input`` (at least one, a tuple) when ``arg``
    is true, else one (``nonzero(x, as_tuple=True)``).
    ``sections``: ``arg`` results when it is a number (or a 0-d tensor), one more than
    its length when it lists indices (``tensor_split``).
    ``dims``: one per dim ``arg`` lists, every dim of ``input`` when None (a tuple).
    ``flags``: one, and one more per true flag among ``arg``'s comma-separated names."""

    kind: str  # "given" | "dim_size" | "split" | "chunk" | "flag" | "flag_ndim" | "sections"
    # | "dims" | "flags"
    arg: str = ""
    dim: str = "dim"
    count: int = 2

    def rule(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.kind, "dim": self.dim}
        if self.kind in ("given", "flag"):
            return {"rule": self.kind, "arg": self.arg, "count": self.count}
        if self.kind in ("flag_ndim", "sections", "dims", "flags"):
            return {"rule": self.kind, "arg": self.arg}
        if self.arg:
            out["arg"] = self.arg
        return out

    def evaluate(self, bound: dict[str, Any]) -> tuple[int, bool]:
        """(result count, whether the call returns a tuple) from the bound arguments."""
        return evaluate_results(self.rule(), bound)


# An upper bound of the elements the call will allocate, read from its arguments before
# it runs (tensors expose ``.shape``); None when there is nothing to fear.
EstimateFn = Callable[[tuple[Any, ...], dict[str, Any]], "int | None"]


@dataclass(frozen=True)
class Domain:
    """Where an op's float input is defined and smooth, for tests that draw their own
    values (the database sweeps, Hypothesis, the fuzzer): [low, high], or ±[low, high]
    when ``signed`` (away from a pole or kink at zero). Called, it draws such values,
    so a registration can build its samples from it and state the domain once."""

    low: float = -2.0
    high: float = 2.0
    signed: bool = False

    def __call__(self, rng: np.random.Generator, *shape: int) -> np.ndarray:
        values = rng.uniform(self.low, self.high, size=shape).astype(np.float64)
        return values * rng.choice([-1.0, 1.0], size=shape) if self.signed else values


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: Callable[..., Any]
    signature: inspect.Signature
    doc: str
    differentiable: bool
    method: bool
    samples: SampleFn | None
    torch: Callable[..., Any] | str | None  # how PyTorch spells the same call
    # the op's forms, as PyTorch's native_functions.yaml lists them
    function: bool = True  # ``engine.name(...)`` / ``torch.name(...)``
    inplace: bool = False  # ``x.name_(...)``: writes the result into ``x``
    operators: tuple[str, ...] = ()  # dunders bound to it, self first (``"__add__"``)
    reflected: tuple[str, ...] = ()  # dunders bound with self second (``2 ** x``)
    results: int | Results = 1  # results per call (a rule when arguments decide)
    estimate: EstimateFn | None = None  # size estimate before allocation
    # multiply-adds estimated before it runs, for an op whose one numpy call may outlast
    # a deadline (LAPACK's cubic factorizations): nothing can stop it once called
    work: EstimateFn | None = None
    # arguments the call writes in place besides its result (batch_norm's running stats):
    # a caller that must undo a failed call saves them first
    writes: tuple[str, ...] = ()
    # the op's own function, without ``fn``'s call forms (out=, axis=): what the Python
    # operators bind, since ``x * y`` can carry neither (one call less on the hot path)
    operator_fn: Callable[..., Any] | None = None
    # the parameters PyTorch's Python binding demands be Tensors (binding.py)
    binding: Binding | None = None
    # per float input, in order, where it is defined and smooth (the rest: ``Domain()``)
    domain: tuple[Domain, ...] = ()

    def domain_of(self, k: int) -> Domain:
        """Input ``k``'s domain (``Domain()``, [-2, 2], unless the registration says)."""
        return self.domain[k] if k < len(self.domain) else Domain()

    def results_rule(self) -> dict[str, Any]:
        """The results fact as data (``{"count": n}`` or a ``Results`` rule)."""
        if isinstance(self.results, Results):
            return self.results.rule()
        return {"count": self.results}

    def count_results(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, bool]:
        """(how many results this call makes, whether it returns a tuple)."""
        if not isinstance(self.results, Results):
            return self.results, self.results != 1
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return self.results.evaluate(dict(bound.arguments))

    @property
    def args(self) -> list[str]:
        return [
            p.name
            for p in self.signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]

    @property
    def kwargs(self) -> dict[str, Any]:
        return {
            p.name: (None if p.default is p.empty else p.default)
            for p in self.signature.parameters.values()
            if p.kind is p.KEYWORD_ONLY
        }


OPS: dict[str, OpSpec] = {}


def _kept(samples: SampleFn, sig: inspect.Signature, binding: Binding) -> SampleFn:
    """The samples PyTorch's binding accepts (a number where it demands a Tensor is an
    error, checked by the binding's own tests, not a sample)."""
    return lambda rng: [s for s in samples(rng) if accepts(sig, binding, s.args, s.kwargs)]


def register(
    name: str | None = None,
    *,
    samples: SampleFn | None = None,
    differentiable: bool = True,
    method: bool = True,
    torch: Callable[..., Any] | str | None = None,
    function: bool = True,
    inplace: bool = False,
    operators: tuple[str, ...] = (),
    reflected: tuple[str, ...] = (),
    results: int | Results = 1,
    estimate: EstimateFn | None = None,
    work: EstimateFn | None = None,
    writes: tuple[str, ...] = (),
    numpy_names: bool = True,
    sizes_one_by_one: bool = True,
    binding: Binding | None = None,
    out_overlap: str = "partial",
    out_dtype: str = "cast",
    domain: tuple[Domain, ...] = (),
    complex_inputs: ComplexRefusal | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add a public op to the catalogue with every fact about it: its forms (function,
    Tensor ``method``, ``inplace`` method ``name_``, ``operators`` called as
    ``fn(self, other)`` and ``reflected`` ones called as ``fn(other, self)``; an in-place
    dunder such as ``__iadd__`` binds the in-place method), how many ``results`` it makes,
    how its result size is ``estimate``d before allocation (and its ``work``, for an op
    one numpy call of which may outlast a deadline), which arguments it ``writes``
    in place besides its result, whether PyTorch's argument parser gives it
    ``numpy_names`` (``axis=``; not for ops PyTorch writes in Python) and sizes given
    ``sizes_one_by_one``, whether an ``out=`` tensor may share memory with an input
    (``out_overlap``: "partial" lets it be an input itself, "none" refuses any,
    "unchecked" lets any be: PyTorch's reductions and matrix products check none) and
    must have the result's dtype (``out_dtype``: "cast" by category, "exact", or the
    op's own message with ``{input}``/``{out}``), which parameters its ``binding``
    demands be Tensors, whether it is ``differentiable``, its float inputs' ``domain``,
    the error PyTorch raises for ``complex_inputs`` where its kernels take real dtypes
    only (``complex_guard.py``) and its ``samples`` for the op database. The docstring's first
    line is its doc. Everything else (Tensor methods, the service, the client through
    ``GET /v1/ops``) reads these facts: adding an op touches its own module only."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = name or fn.__name__.rstrip("_")
        if key in OPS:
            raise RuntimeError(f"op {key!r} registered twice")
        if out_overlap not in ("partial", "none", "unchecked"):
            raise TypeError(f"op {key!r}: out_overlap= is 'partial', 'none' or 'unchecked'")
        if isinstance(results, bool) or not isinstance(results, int | Results):
            # a client evaluates the rule from GET /v1/ops: it must be data, not code
            raise TypeError(f"op {key!r}: results= takes an int or a Results rule")
        sig = inspect.signature(fn)
        unknown = [w for w in writes if w not in sig.parameters]
        if unknown:
            raise TypeError(f"op {key!r}: writes= names no parameter {unknown}")
        own = fn if complex_inputs is None else refusing_complex(fn, complex_inputs)
        public = own if binding is None else checked(key, own, sig, binding)
        kept = samples if binding is None or samples is None else _kept(samples, sig, binding)
        OPS[key] = OpSpec(
            name=key,
            # with ``out=``, the ``axis=`` alias and sizes one by one (compat.py)
            # and asking vmap first while one runs (dispatch.py)
            fn=calls(
                key,
                public,
                sig,
                numpy_names=numpy_names,
                sizes_one_by_one=sizes_one_by_one,
                out_overlap=out_overlap,
                out_dtype=out_dtype,
            ),
            signature=sig,
            doc=(inspect.getdoc(fn) or "").splitlines()[0] if fn.__doc__ else "",
            differentiable=differentiable,
            method=method,
            samples=kept,
            torch=torch,
            function=function,
            inplace=inplace,
            operators=tuple(operators),
            reflected=tuple(reflected),
            results=results,
            estimate=estimate,
            work=work,
            writes=tuple(writes),
            operator_fn=own,
            binding=binding,
            domain=tuple(domain),
        )
        return fn

    return deco
