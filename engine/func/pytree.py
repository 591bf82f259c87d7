"""A small pytree: nested tuples, lists and dicts with tensors (or anything) at the
leaves, flattened to a list and rebuilt from one. torch.func and JAX walk their
arguments this way; ``namedtuple``s and other containers are leaves here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Spec:
    """The shape of a tree: its container kind, its keys (dicts) and its children."""

    kind: str  # "leaf" | "tuple" | "list" | "dict"
    keys: tuple[Any, ...] = ()
    children: tuple[Spec, ...] = ()

    @property
    def num_leaves(self) -> int:
        return 1 if self.kind == "leaf" else sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        return self._repr(0)

    def pprint(self) -> str:
        """PyTorch's ``treespec_pprint``: ``(*, [*, *], {'a': *})``."""
        if self.kind == "leaf":
            return "*"
        parts = [c.pprint() for c in self.children]
        if self.kind == "dict":
            parts = [f"{k!r}: {p}" for k, p in zip(self.keys, parts)]
        inner = ", ".join(parts)
        if self.kind == "tuple" and len(parts) == 1:
            inner += ","
        return {"tuple": f"({inner})", "list": f"[{inner}]", "dict": f"{{{inner}}}"}[self.kind]

    def _repr(self, indent: int) -> str:
        """PyTorch's ``TreeSpec`` repr (its messages print it)."""
        if self.kind == "leaf":
            return "*"
        sep = ",\n" + " " * (indent + 2)
        context = repr(list(self.keys)) if self.kind == "dict" else "None"
        children = sep.join(c._repr(indent + 2) for c in self.children)
        return f"TreeSpec({self.kind}, {context}, [{children}])"


LEAF = Spec("leaf")


def flatten(tree: Any) -> tuple[list[Any], Spec]:
    """The leaves of ``tree`` in order, and its spec."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree: Any, leaves: list[Any]) -> Spec:
    if type(tree) is tuple or type(tree) is list:
        kind = "tuple" if type(tree) is tuple else "list"
        return Spec(kind, (), tuple(_flatten(c, leaves) for c in tree))
    if type(tree) is dict:
        keys = tuple(tree)
        return Spec("dict", keys, tuple(_flatten(tree[k], leaves) for k in keys))
    leaves.append(tree)
    return LEAF


def unflatten(leaves: list[Any], spec: Spec) -> Any:
    """Rebuild the tree of ``spec`` from its leaves."""
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it: Any, spec: Spec) -> Any:
    if spec.kind == "leaf":
        return next(it)
    children = [_unflatten(it, c) for c in spec.children]
    if spec.kind == "tuple":
        return tuple(children)
    if spec.kind == "list":
        return children
    return dict(zip(spec.keys, children))


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    leaves, spec = flatten(tree)
    return unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, tree: Any, what: str) -> list[Any]:
    """``prefix`` (a tree whose leaves stand for whole subtrees of ``tree``, as vmap's
    ``in_dims``) expanded to one value per leaf of ``tree``; ValueError if it is not a
    prefix."""
    out: list[Any] = []
    _broadcast(prefix, tree, out, what)
    return out


def _broadcast(prefix: Any, tree: Any, out: list[Any], what: str) -> None:
    if type(prefix) not in (tuple, list, dict):
        out.extend([prefix] * len(flatten(tree)[0]))
        return
    if type(prefix) is not type(tree) or len(prefix) != len(tree):
        raise ValueError(what)
    if type(prefix) is dict:
        if set(prefix) != set(tree):
            raise ValueError(what)
        for k in tree:
            _broadcast(prefix[k], tree[k], out, what)
        return
    for p, t in zip(prefix, tree):
        _broadcast(p, t, out, what)
