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
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add a public op to the catalogue. The docstring's first line is its doc."""

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
        )
        return fn

    return deco
