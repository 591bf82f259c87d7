"""Random autograd programs, as plain JSON-able instruction lists.

A program is what a PyTorch user writes in a notebook: leaves (float, some int64
and bool), ops (reductions over dims, scans, matmul shapes, cat/stack, indexing with
tensors, comparisons as masks), views (expand included, then written), in-place
writes (on non-leaves, or on leaves under ``no_grad``), ``retain_grad``, hooks that
scale, add or observe, ``detach``, then ``backward`` / ``autograd.grad`` calls with
random ``grad_tensors``, ``retain_graph``, ``inputs=`` (non-leaves too) and
``create_graph``, and grads zeroed in between. The generator tracks shapes so most programs are valid; the
invalid ones are kept on purpose (their errors are compared too).

Instructions are dicts so a failing program prints as a test case to paste.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import engine
from tests.fuzz import catalogue

ALL_FEATURES = frozenset(
    {
        "views",
        "inplace",
        "inplace_views",
        "hooks",
        "create_graph",
        "grad",
        "nan",
        "no_grad",
        "inputs",
        "retain_grad",
        "ops",  # softmax, pow with tensor exponents, where, cat/stack, max/min(dim), clamp...
        "setitem",  # x[i] = ... through views
        "double",  # grad(create_graph=True) then a backward through the gradient
        "ints",  # int64 and bool leaves mixed into arithmetic (type promotion), comparisons
        "index",  # indexing with int64 / bool tensors, index_select, gather
        "more_ops",  # var/std/logsumexp/norm/cumsum/cumprod/amin over dims, flip, permute,
        # batched matmul, cat of different sizes, expand then write
        "catalogue",  # every registered op, on its samples, fed the program's tensors
    }
)
# what runs over HTTP: everything but Python hooks and `x[i] = v` (the client has no __setitem__)
SERVER_FEATURES = ALL_FEATURES - {"hooks", "setitem", "catalogue"}
# opt-in (``--features ...,overlap``; not in ALL_FEATURES, so the fixed seeds keep their
# programs): views whose elements overlap (``unfold`` with step < size), then written
OPT_IN_FEATURES = frozenset({"overlap"})

UNARY = ["exp", "tanh", "sigmoid", "sin", "cos", "relu", "neg", "abs", "square", "log1p_abs"]
BINARY = ["+", "-", "*", "/"]
COMPARE = [">", "<", "==", ">="]
REDUCTIONS = ["sum", "mean", "amax", "prod"]
INPLACE = ["add_", "mul_", "sub_", "div_", "exp_", "tanh_", "sigmoid_", "relu_", "neg_", "clamp_"]


@dataclass
class Var:
    shape: tuple[int, ...]
    dtype: str
    requires_grad: bool
    leaf: bool
    view: bool = False


@dataclass
class Builder:
    rng: random.Random
    features: frozenset[str]
    vars: dict[str, Var] = field(default_factory=dict)
    prog: list[dict[str, Any]] = field(default_factory=list)
    counter: int = 0

    def name(self) -> str:
        self.counter += 1
        return f"t{self.counter}"

    def pick(self, pred: Any = None, ints: bool = False) -> str | None:
        """A bound name whose Var satisfies ``pred``: a floating one unless ``ints`` (integer
        and bool tensors enter only where a move mixes them in on purpose)."""
        names = [
            n
            for n, v in self.vars.items()
            if (ints or v.dtype.startswith("float")) and (pred is None or pred(v))
        ]
        return self.rng.choice(names) if names else None

    def values(self, shape: tuple[int, ...]) -> list[Any]:
        n = 1
        for d in shape:
            n *= d
        out: list[Any] = [round(self.rng.uniform(-2, 2), 3) for _ in range(n)]
        if "nan" in self.features and n and self.rng.random() < 0.15:
            out[self.rng.randrange(n)] = self.rng.choice(["NaN", "Infinity", "-Infinity", 0.0])
        return out

    def shape(self) -> tuple[int, ...]:
        return self.rng.choice([(), (3,), (2, 3), (3, 2), (2, 1, 3), (4,), (1,)])

    # -- instructions ---------------------------------------------------------------------
    def leaf(self) -> None:
        shape = self.shape()
        dtype = self.rng.choice(["float32", "float32", "float64"])
        if "ints" in self.features and self.rng.random() < 0.15:
            dtype = self.rng.choice(["int64", "bool"])
        rg = dtype.startswith("float") and self.rng.random() < 0.8
        out = self.name()
        values = self.values(shape) if rg or dtype.startswith("float") else self.ints(shape)
        if dtype == "bool":
            values = [bool(v % 2) for v in values]
        self.prog.append(
            {
                "kind": "leaf",
                "out": out,
                "shape": list(shape),
                "dtype": dtype,
                "requires_grad": rg,
                "values": values,
            }
        )
        self.vars[out] = Var(shape, dtype, rg, True)

    def ints(self, shape: tuple[int, ...], lo: int = -3, hi: int = 3) -> list[int]:
        n = 1
        for d in shape:
            n *= d
        return [self.rng.randint(lo, hi) for _ in range(n)]

    def floats(self) -> Any:
        """A predicate: floating tensors (what most ops and every in-place write take)."""
        return lambda v: v.dtype.startswith("float")

    def bind(self, out: str, shape: tuple[int, ...], dtype: str, rg: bool, view: bool) -> None:
        self.vars[out] = Var(shape, dtype, rg, not rg, view)

    def unary(self) -> None:
        src = self.pick()
        if src is None:
            return
        v = self.vars[src]
        fn = self.rng.choice(UNARY)
        out = self.name()
        step = {"kind": "call", "out": out, "fn": fn, "args": [src], "kwargs": {}}
        if "no_grad" in self.features and self.rng.random() < 0.1:
            step["no_grad"] = True
        self.prog.append(step)
        self.bind(out, v.shape, v.dtype, v.requires_grad and not step.get("no_grad"), False)

    def binary(self) -> None:
        a = self.pick()
        if a is None:
            return
        va = self.vars[a]
        if self.rng.random() < 0.3:
            b: Any = round(self.rng.uniform(-3, 3), 2)
            shape, dtype, rg = va.shape, va.dtype, va.requires_grad
        else:
            b = self.pick(
                lambda v: _broadcastable(v.shape, va.shape) or self.rng.random() < 0.05,
                ints="ints" in self.features,
            )
            if b is None:
                return
            vb = self.vars[b]
            shape = _broadcast(va.shape, vb.shape) or va.shape
            floats = [d for d in (va.dtype, vb.dtype) if d.startswith("float")]
            dtype = "float64" if "float64" in floats else "float32"
            rg = va.requires_grad or vb.requires_grad
        out = self.name()
        op = self.rng.choice(BINARY)
        if "ints" in self.features and self.rng.random() < 0.15:  # a mask, for where and *
            op = self.rng.choice(COMPARE)
            dtype, rg = "bool", False
        self.prog.append({"kind": "binop", "out": out, "op": op, "a": a, "b": b})
        self.bind(out, shape, dtype, rg, False)

    def reduction(self) -> None:
        src = self.pick()
        if src is None:
            return
        v = self.vars[src]
        fn = self.rng.choice(REDUCTIONS)
        kwargs: dict[str, Any] = {}
        shape: tuple[int, ...] = ()
        if v.shape and self.rng.random() < 0.6:
            dim = self.rng.randrange(-len(v.shape), len(v.shape))
            keep = self.rng.random() < 0.4
            kwargs = {"dim": dim, "keepdim": keep}
            d = dim % len(v.shape)
            shape = tuple(1 if i == d else s for i, s in enumerate(v.shape) if keep or i != d)
        out = self.name()
        self.prog.append({"kind": "call", "out": out, "fn": fn, "args": [src], "kwargs": kwargs})
        self.bind(out, shape, v.dtype, v.requires_grad, False)

    def matmul(self) -> None:
        """``a @ b`` in PyTorch's shape cases: n-d @ 2-d, 1-d @ 2-d, n-d @ 1-d, 1-d @ 1-d
        (same dtype: mixing is an error, kept rare)."""
        a = self.pick(lambda v: 1 <= len(v.shape) <= 3)
        if a is None:
            return
        va = self.vars[a]
        k = va.shape[-1]
        b = self.pick(
            lambda v: (
                1 <= len(v.shape) <= 2
                and v.shape[0] == k
                and (v.dtype == va.dtype or self.rng.random() < 0.1)
            )
        )
        if b is None:
            return
        vb = self.vars[b]
        out = self.name()
        shape = va.shape[:-1] + vb.shape[1:]
        if "more_ops" in self.features and len(va.shape) == 3 and self.rng.random() < 0.5:
            # batched: (b, n, k) @ (b, k, m), the right operand a transposed copy of the left
            b, vb = a, va
            self.prog.append({"kind": "bmm_self", "out": out, "a": a})
            shape = (va.shape[0], va.shape[1], va.shape[1])
            self.bind(out, shape, va.dtype, va.requires_grad, False)
            return
        self.prog.append({"kind": "binop", "out": out, "op": "@", "a": a, "b": b})
        dtype = "float64" if "float64" in (va.dtype, vb.dtype) else "float32"
        self.bind(out, shape, dtype, va.requires_grad or vb.requires_grad, False)

    def catalogue(self, op: str | None = None) -> None:
        """One registered op (any of them, uniformly) on one of its samples, with some of
        its tensor arguments taken from the program (tests/fuzz/catalogue.py)."""

        def pick(shape: tuple[int, ...], dtype: str) -> str | None:
            return self.pick(lambda v: v.shape == shape and v.dtype == dtype)

        step = catalogue.draw(self.rng, pick, op)
        sample = catalogue.samples(step["op"])[step["sample"]]
        subs = {
            k: engine.Tensor(
                np.array(a, dtype=step["dtype"]),
                requires_grad=self.vars[step["subs"][k]].requires_grad,
            )
            for k, a in catalogue.arrays(sample).items()
            if k in step["subs"]
        }

        class _Engine:
            ns, kind = engine, "engine"

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                named = {**step, "subs": {k: k for k in subs}}
                leaves, result = catalogue.call(_Engine, named, subs)
        except Exception:  # noqa: BLE001 - the error is part of the program
            self.prog.append(step)
            return
        for t in leaves:
            name = self.name()
            step["leaves"].append(name)
            self.vars[name] = Var(tuple(t.shape), str(t.dtype), True, True)
        for t in catalogue.tensors_of(result, lambda r: isinstance(r, engine.Tensor)):
            name = self.name()
            step["out"].append(name)
            self.bind(name, tuple(t.shape), str(t.dtype), t.requires_grad, t._base is not None)
        self.prog.append(step)

    def op(self) -> None:
        """The wider op set: softmax, log_softmax, pow with a tensor exponent, where,
        cat/stack, max/min over a dim, clamp, mean over dims."""
        src = self.pick(lambda v: len(v.shape) >= 1)
        if src is None:
            return
        v = self.vars[src]
        nd = len(v.shape)
        out = self.name()
        choices = ["softmax", "log_softmax", "pow", "where", "cat", "stack", "max", "min", "clamp"]
        choices += ["mean_dims", "sum_keepdim"]
        if "more_ops" in self.features:
            choices += ["var", "std", "logsumexp", "norm", "cumsum", "cumprod", "amin", "flip"]
            choices += ["permute", "cat_sizes", "squeeze"]
        if "ints" in self.features:
            choices += ["where_mask"]
        choice = self.rng.choice(choices)
        dim = self.rng.randrange(-nd, nd)
        shape, dtype, rg = v.shape, v.dtype, v.requires_grad
        step: dict[str, Any]
        if choice in ("softmax", "log_softmax"):
            step = {"kind": "call", "out": out, "fn": choice, "args": [src, dim], "kwargs": {}}
        elif choice in ("pow", "where"):
            other = self.pick(lambda w: w.shape == v.shape)
            assert other is not None  # src itself
            w = self.vars[other]
            dtype = "float64" if "float64" in (v.dtype, w.dtype) else "float32"
            rg = v.requires_grad or w.requires_grad
            if choice == "pow":  # a positive base keeps most values finite
                step = {"kind": "pow", "out": out, "a": src, "b": other}
            else:
                step = {"kind": "where", "out": out, "cond": src, "a": src, "b": other}
        elif choice in ("cat", "stack"):
            other = self.pick(lambda w: w.shape == v.shape and w.dtype == v.dtype)
            assert other is not None
            rg = v.requires_grad or self.vars[other].requires_grad
            d = dim % nd if choice == "cat" else self.rng.randrange(nd + 1)
            step = {"kind": "fn", "out": out, "fn": choice, "list": [src, other], "dim": d}
            if choice == "cat":
                shape = tuple(2 * s if i == d else s for i, s in enumerate(v.shape))
            else:
                shape = v.shape[:d] + (2,) + v.shape[d:]
        elif choice in ("max", "min"):
            if 0 in v.shape:
                return
            keep = self.rng.random() < 0.3
            step = {
                "kind": "call",
                "out": out,
                "fn": choice,
                "args": [src],
                "kwargs": {"dim": dim, "keepdim": keep},
                "first": True,
            }
            d = dim % nd
            shape = tuple(1 if i == d else s for i, s in enumerate(v.shape) if keep or i != d)
        elif choice in ("var", "std", "logsumexp", "amin") or choice == "norm":
            if choice == "amin" and 0 in v.shape:
                return
            keep = self.rng.random() < 0.4
            kwargs: dict[str, Any] = {"dim": dim, "keepdim": keep}
            if choice in ("var", "std") and self.rng.random() < 0.5:
                kwargs["correction"] = self.rng.choice([0, 1, 2])
            if choice == "norm" and self.rng.random() < 0.3:
                kwargs = {}  # the 2-norm of everything
            step = {"kind": "call", "out": out, "fn": choice, "args": [src], "kwargs": kwargs}
            if kwargs:
                d = dim % nd
                shape = tuple(1 if i == d else s for i, s in enumerate(v.shape) if keep or i != d)
            else:
                shape = ()
        elif choice in ("cumsum", "cumprod"):
            step = {"kind": "call", "out": out, "fn": choice, "args": [src, dim], "kwargs": {}}
        elif choice == "flip":
            step = {"kind": "call", "out": out, "fn": "flip", "args": [src, [dim]], "kwargs": {}}
        elif choice == "permute":
            order = list(range(nd))
            self.rng.shuffle(order)
            step = {
                "kind": "call",
                "out": out,
                "fn": "permute",
                "args": [src, *order],
                "kwargs": {},
            }
            shape = tuple(v.shape[i] for i in order)
            self.prog.append(step)
            self.bind(out, shape, dtype, rg, True)
            return
        elif choice == "squeeze":
            step = {"kind": "call", "out": out, "fn": "squeeze", "args": [src, dim], "kwargs": {}}
            d = dim % nd
            shape = tuple(s for i, s in enumerate(v.shape) if i != d or s != 1)
            self.prog.append(step)
            self.bind(out, shape, dtype, rg, True)
            return
        elif choice == "cat_sizes":  # along dim, with another tensor of another size there
            d = dim % nd
            other = self.pick(
                lambda w: (
                    len(w.shape) == nd
                    and all(a == b for i, (a, b) in enumerate(zip(w.shape, v.shape)) if i != d)
                )
            )
            assert other is not None  # src itself
            w = self.vars[other]
            dtype = "float64" if "float64" in (v.dtype, w.dtype) else "float32"
            rg = v.requires_grad or w.requires_grad
            step = {"kind": "fn", "out": out, "fn": "cat", "list": [src, other], "dim": d}
            shape = tuple(s + w.shape[d] if i == d else s for i, s in enumerate(v.shape))
        elif choice == "where_mask":  # a bool tensor from a comparison, broadcast
            mask = self.pick(lambda w: w.dtype == "bool" and _broadcastable(w.shape, v.shape), True)
            if mask is None:
                return
            shape = _broadcast(self.vars[mask].shape, v.shape) or v.shape
            step = {"kind": "where", "out": out, "cond": mask, "a": src, "b": 0.5, "mask": True}
        elif choice == "clamp":
            lo = round(self.rng.uniform(-1.5, 0.5), 2)
            kwargs = {"min": lo, "max": lo + 1.0} if self.rng.random() < 0.7 else {"min": lo}
            step = {"kind": "call", "out": out, "fn": "clamp", "args": [src], "kwargs": kwargs}
        else:
            keep = choice == "sum_keepdim" or self.rng.random() < 0.3
            dims = sorted(self.rng.sample(range(nd), self.rng.randint(1, nd)))
            fn = "sum" if choice == "sum_keepdim" else "mean"
            step = {
                "kind": "call",
                "out": out,
                "fn": fn,
                "args": [src],
                "kwargs": {"dim": dims, "keepdim": keep},
            }
            shape = tuple(
                1 if i in dims else n for i, n in enumerate(v.shape) if keep or i not in dims
            )
        self.prog.append(step)
        self.bind(out, shape, dtype, rg, False)

    def index(self) -> None:
        """Indexing with tensors: ``x[int64 tensor]`` (repeats and negative indices),
        ``x[bool mask]``, ``index_select`` and ``gather``."""
        src = self.pick(lambda v: len(v.shape) >= 1 and v.shape[0] > 0)
        if src is None:
            return
        v = self.vars[src]
        out = self.name()
        choice = self.rng.choice(["ints", "mask", "index_select", "gather"])
        n0 = v.shape[0]
        if choice == "ints":
            idx = [self.rng.randrange(-n0, n0) for _ in range(self.rng.randint(1, 4))]
            step: dict[str, Any] = {"kind": "getitem", "out": out, "src": src}
            step["key"] = [["tensor", idx]]
            shape = (len(idx), *v.shape[1:])
        elif choice == "mask":
            mask = [self.rng.random() < 0.5 for _ in range(n0)]
            step = {"kind": "getitem", "out": out, "src": src, "key": [["mask", mask]]}
            shape = (sum(mask), *v.shape[1:])
        elif choice == "index_select":
            d = self.rng.randrange(len(v.shape))
            if v.shape[d] == 0:
                return
            idx = [self.rng.randrange(v.shape[d]) for _ in range(self.rng.randint(1, 3))]
            step = {"kind": "index_fn", "out": out, "fn": "index_select", "src": src}
            step |= {"dim": d, "index": idx, "index_shape": [len(idx)]}
            shape = tuple(len(idx) if i == d else s for i, s in enumerate(v.shape))
        else:
            d = self.rng.randrange(len(v.shape))
            if v.shape[d] == 0:
                return
            ishape = list(v.shape)
            ishape[d] = self.rng.randint(1, 3)
            n = 1
            for k in ishape:
                n *= k
            idx = [self.rng.randrange(v.shape[d]) for _ in range(n)]
            step = {"kind": "index_fn", "out": out, "fn": "gather", "src": src}
            step |= {"dim": d, "index": idx, "index_shape": ishape}
            shape = tuple(ishape)
        self.prog.append(step)
        self.bind(out, shape, v.dtype, v.requires_grad, False)

    def setitem(self) -> None:
        """``x[i] = value`` (a number or a tensor of the row's shape), on a non-leaf, a
        view of one, or a leaf under no_grad."""
        target = self.pick(lambda v: len(v.shape) >= 1 and v.shape[0] > 0)
        if target is None:
            return
        v = self.vars[target]
        i = self.rng.randrange(v.shape[0])
        value: Any = round(self.rng.uniform(-2, 2), 2)
        if self.rng.random() < 0.6:
            other = self.pick(lambda w: _broadcast(v.shape[1:], w.shape) == v.shape[1:])
            value = other if other is not None else value
        step: dict[str, Any] = {"kind": "setitem", "target": target, "key": [["int", i]]}
        step["value"] = value
        if v.leaf and v.requires_grad:
            step["no_grad"] = self.rng.random() < 0.8
        self.prog.append(step)

    def double(self) -> None:
        """A second-order derivative: gradients with create_graph, then a backward
        through their sum."""
        root = self.pick(lambda v: v.requires_grad and not v.leaf)
        leaves = [k for k, w in self.vars.items() if w.requires_grad and w.leaf]
        if root is None or not leaves:
            return
        v = self.vars[root]
        x = self.rng.choice(leaves)
        outs = [self.name(), self.name()]
        self.prog.append(
            {
                "kind": "grad",
                "outputs": [root],
                "inputs": [x],
                "grad_outputs": [self.values(v.shape)],
                "retain_graph": True,
                "create_graph": True,
                "allow_unused": True,
                "out": outs[:1],
            }
        )
        self.prog.append(
            {"kind": "call", "out": outs[1], "fn": "sum", "args": [outs[0]], "kwargs": {}}
        )
        self.prog.append(
            {
                "kind": "backward",
                "root": outs[1],
                "gradient": None,
                "retain_graph": self.rng.random() < 0.5,
            }
        )
        w = self.vars[x]
        self.bind(outs[0], w.shape, w.dtype, True, False)
        self.bind(outs[1], (), w.dtype, True, False)

    def view(self) -> None:
        src = self.pick(lambda v: len(v.shape) >= 1)
        if src is None:
            return
        v = self.vars[src]
        out = self.name()
        choices = ["slice", "index", "transpose", "unsqueeze", "reshape", "expand"]
        if "more_ops" in self.features:
            choices += ["expand_new"]
        if "overlap" in self.features:
            choices += ["unfold", "unfold"]
        choice = self.rng.choice(choices)
        if choice == "unfold" and v.shape[-1] >= 2:  # step < size: elements seen twice
            size = self.rng.randint(2, v.shape[-1])
            step = self.rng.randint(1, size - 1) if size > 2 else 1
            step_ = {"kind": "call", "out": out, "fn": "unfold", "args": [src, -1, size, step]}
            self.prog.append({**step_, "kwargs": {}})
            n = (v.shape[-1] - size) // step + 1
            self.bind(out, v.shape[:-1] + (n, size), v.dtype, v.requires_grad, True)
            return
        if choice == "slice":
            stop = self.rng.randint(1, max(v.shape[0], 1))
            step = {"kind": "getitem", "out": out, "src": src, "key": [["slice", 0, stop, 1]]}
            shape = (min(stop, v.shape[0]),) + v.shape[1:]
        elif choice == "index":
            i = self.rng.randrange(v.shape[0]) if v.shape[0] else 0
            step = {"kind": "getitem", "out": out, "src": src, "key": [["int", i]]}
            shape = v.shape[1:]
        elif choice == "transpose" and len(v.shape) >= 2:
            step = {
                "kind": "call",
                "out": out,
                "fn": "transpose",
                "args": [src, 0, 1],
                "kwargs": {},
            }
            shape = (v.shape[1], v.shape[0]) + v.shape[2:]
        elif choice == "unsqueeze":
            step = {"kind": "call", "out": out, "fn": "unsqueeze", "args": [src, 0], "kwargs": {}}
            shape = (1,) + v.shape
        elif choice == "expand_new":  # a new leading dim: every element seen twice
            new = (2, *v.shape)
            step = {"kind": "call", "out": out, "fn": "expand", "args": [src, *new], "kwargs": {}}
            shape = new
        elif choice == "expand" and v.shape[0] == 1:
            new = (3,) + v.shape[1:]
            step = {"kind": "call", "out": out, "fn": "expand", "args": [src, *new], "kwargs": {}}
            shape = new
        else:
            n = 1
            for d in v.shape:
                n *= d
            step = {"kind": "call", "out": out, "fn": "reshape", "args": [src, -1], "kwargs": {}}
            shape = (n,)
        self.prog.append(step)
        self.bind(out, shape, v.dtype, v.requires_grad, True)

    def inplace(self) -> None:
        allow_views = "inplace_views" in self.features
        target = self.pick(lambda v: not v.view or allow_views)
        if target is None:
            return
        v = self.vars[target]
        fn = self.rng.choice(INPLACE)
        args: list[Any] = []
        if fn in ("add_", "mul_", "sub_", "div_"):
            other = self.pick(lambda w: _broadcast(v.shape, w.shape) == v.shape)
            args = [other if other is not None and self.rng.random() < 0.5 else 1.5]
        elif fn == "clamp_":
            args = [-0.5, 0.5]
        step: dict[str, Any] = {"kind": "inplace", "target": target, "fn": fn, "args": args}
        if v.leaf and v.requires_grad or self.rng.random() < 0.15:
            step["no_grad"] = self.rng.random() < 0.8  # else: the leaf error
        self.prog.append(step)

    def retain_grad(self) -> None:
        target = self.pick(lambda v: v.requires_grad and not v.leaf)
        if target is not None:
            self.prog.append({"kind": "retain_grad", "target": target})

    def hook(self) -> None:
        # not on views: PyTorch 2.13 segfaults in register_hook on a view of a leaf
        # written in place under no_grad (x.unsqueeze(0), then x.add_ under no_grad)
        target = self.pick(lambda v: v.requires_grad and not v.view)
        if target is not None:
            scale = self.rng.choice([2.0, -1.0, 0.5])
            mode = self.rng.choice(["scale", "scale", "observe", "add"])
            self.prog.append({"kind": "hook", "target": target, "scale": scale, "mode": mode})

    def detach(self) -> None:
        src = self.pick()
        if src is not None:
            out = self.name()
            v = self.vars[src]
            self.prog.append(
                {"kind": "call", "out": out, "fn": "detach", "args": [src], "kwargs": {}}
            )
            self.bind(out, v.shape, v.dtype, False, True)
            self.vars[out].leaf = True

    def backward(self) -> None:
        root = self.pick(lambda v: v.requires_grad)
        if root is None:
            return
        v = self.vars[root]
        n = 1
        for d in v.shape:
            n *= d
        gradient = None if n == 1 and self.rng.random() < 0.7 else self.values(v.shape)
        step: dict[str, Any] = {
            "kind": "backward",
            "root": root,
            "gradient": gradient,
            "retain_graph": self.rng.random() < 0.5,
        }
        if "create_graph" in self.features and self.rng.random() < 0.15:
            step["create_graph"] = True
        if "inputs" in self.features and self.rng.random() < 0.2:
            leaves = [k for k, w in self.vars.items() if w.requires_grad and w.leaf]
            if "more_ops" in self.features and self.rng.random() < 0.4:
                leaves = [k for k, w in self.vars.items() if w.requires_grad]  # views too
            if leaves:
                k = self.rng.randint(1, min(3, len(leaves)))
                step["inputs"] = self.rng.sample(leaves, k)
        self.prog.append(step)

    def grad(self) -> None:
        root = self.pick(lambda v: v.requires_grad)
        leaves = [k for k, w in self.vars.items() if w.requires_grad]
        if root is None or not leaves:
            return
        v = self.vars[root]
        inputs = self.rng.sample(leaves, self.rng.randint(1, min(3, len(leaves))))
        step: dict[str, Any] = {
            "kind": "grad",
            "outputs": [root],
            "inputs": inputs,
            "grad_outputs": [self.values(v.shape)],
            "retain_graph": self.rng.random() < 0.6,
            "allow_unused": self.rng.random() < 0.7,
            "out": [self.name() for _ in inputs],
        }
        if "create_graph" in self.features and self.rng.random() < 0.3:
            step["create_graph"] = True
        self.prog.append(step)
        for name, src in zip(step["out"], inputs):
            w = self.vars[src]
            self.bind(name, w.shape, w.dtype, bool(step.get("create_graph")), False)

    def zero_grad(self) -> None:
        target = self.pick(lambda v: v.leaf and v.requires_grad)
        if target is not None:
            self.prog.append(
                {"kind": "zero_grad", "target": target, "set_to_none": self.rng.random() < 0.3}
            )


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da != db and 1 not in (da, db):
            return None
        out.append(max(da, db) if 0 not in (da, db) else 0)
    return tuple(reversed(out))


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return _broadcast(a, b) is not None


def generate(
    seed: int, features: frozenset[str] = ALL_FEATURES, length: int = 14, op: str | None = None
) -> list[dict[str, Any]]:
    """One random program: a few leaves, then ``length`` weighted random instructions
    (the first of them the catalogue op ``op`` when given)."""
    b = Builder(random.Random(seed), features)
    for _ in range(b.rng.randint(1, 3)):
        b.leaf()
    if op is not None:
        b.catalogue(op)
    moves = [(b.unary, 4), (b.binary, 5), (b.reduction, 2), (b.matmul, 1), (b.backward, 2)]
    moves += [(b.leaf, 1), (b.detach, 1), (b.zero_grad, 1)]
    if "retain_grad" in features:
        moves.append((b.retain_grad, 1))
    if "views" in features:
        moves.append((b.view, 3))
    if "inplace" in features:
        moves.append((b.inplace, 2))
    if "hooks" in features:
        moves.append((b.hook, 1))
    if "grad" in features:
        moves.append((b.grad, 1))
    if "ops" in features:
        moves.append((b.op, 4))
    if "setitem" in features:
        moves.append((b.setitem, 1))
    if "double" in features:
        moves.append((b.double, 1))
    if "index" in features:
        moves.append((b.index, 2))
    if "catalogue" in features:
        moves.append((b.catalogue, 4))
    fns = [f for f, w in moves for _ in range(w)]
    for _ in range(length):
        b.rng.choice(fns)()
    b.backward()
    return b.prog
