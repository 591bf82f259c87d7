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
# How many results a call makes, from its arguments (tensors as they are): e.g. ``split``.
ResultsFn = Callable[[tuple[Any, ...], dict[str, Any]], int]
# An upper bound of the elements the call will allocate, read from its arguments before
# it runs (tensors expose ``.shape``); None when there is nothing to fear.
EstimateFn = Callable[[tuple[Any, ...], dict[str, Any]], "int | None"]


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
    operators: tuple[str, ...] = ()  # dunders bound to it (``"__add__"``)
    results: int | ResultsFn = 1  # results per call (a function when arguments decide)
    estimate: EstimateFn | None = None  # size estimate before allocation

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
    results: int | ResultsFn = 1,
    estimate: EstimateFn | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add a public op to the catalogue with every fact about it: its forms (function,
    Tensor ``method``, ``inplace`` method, ``operators``), how many ``results`` it makes,
    how its result size is ``estimate``d before allocation, whether it is
    ``differentiable``, and its ``samples`` for the op database. The docstring's first
    line is its doc. Everything else (Tensor methods, the service, the client through
    ``GET /v1/ops``) reads these facts: adding an op touches its own module only."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = name or fn.__name__.rstrip("_")
        if key in OPS:
            raise RuntimeError(f"op {key!r} registered twice")
        OPS[key] = OpSpec(
            name=key,
            fn=fn,
            signature=inspect.signature(fn),
            doc=(inspect.getdoc(fn) or "").splitlines()[0] if fn.__doc__ else "",
            differentiable=differentiable,
            method=method,
            samples=samples,
            torch=torch,
            function=function,
            inplace=inplace,
            operators=tuple(operators),
            results=results,
            estimate=estimate,
        )
        return fn

    return deco
