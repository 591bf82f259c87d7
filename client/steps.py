"""``Steps``: turns torch-style calls on handles into gradserve steps, without I/O.

The sync ``Session`` and the ``AsyncSession`` share it: it names results
(``_t<hex>_<n>``, a name reused once its handle is garbage-collected), keeps
the grad mode (``no_grad``), reads op names, forms and result counts from the
catalogue (``GET /v1/ops``, fetched once per session), and writes each step
as the JSON the server takes. What happens to a step is the session's
business: ``submit(step, outs)`` sends it now or queues it.

A handle talks to its session through a small interface (``Remote``): this
builder as ``steps``, plus reads and autograd calls.
"""

from __future__ import annotations

import contextlib
import difflib
import itertools
import math
import secrets
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from gradcore.messages import LEAF_INPLACE_MESSAGE

from . import errors, wire
from .tensor import GradRef, Tensor, count_results

# Python's own table: the dunder each operator symbol calls; which op a dunder is comes
# from the catalogue (an op's "operators" form)
DUNDERS = {
    "+": "__add__",
    "-": "__sub__",
    "*": "__mul__",
    "/": "__truediv__",
    "**": "__pow__",
    "@": "__matmul__",
}
FORMS = {"function": "op", "method": "method", "inplace": "in-place method"}

Submit = Callable[[dict[str, Any], list[Tensor]], None]


class Remote(Protocol):
    """What a handle needs from its session (the sync and the async one alike)."""

    steps: Steps
    name: str
    deferred: bool  # an async session: reads are awaited, building only queues

    # the conversations a handle's reads are written with (``tensor.awaited``), and the
    # session's driver that runs them (a value) or makes them awaitable
    def _drive(self, conversation: Any) -> Any: ...
    def _queued(self) -> bool: ...
    def _flush(self, fetch: Sequence[str] = ()) -> Any: ...
    def _fetch(self, name: str, *, values: bool) -> Any: ...
    def _read_grad(self, name: str) -> Any: ...
    def _patch(self, t: Tensor, body: dict[str, Any]) -> Any: ...

    def flush(self, fetch: Sequence[str] = ()) -> Any: ...
    def fetch(self, name: str, *, values: bool) -> Any: ...
    def read_grad(self, name: str) -> Any: ...
    def grad_pending(self, name: str) -> bool: ...
    def clear_grad(self, name: str) -> Any: ...
    def patch(self, t: Tensor, body: dict[str, Any]) -> Any: ...
    def backward(self, tensors: Any, grad_tensors: Any = None, **options: Any) -> Any: ...
    def zero_grad(self, set_to_none: bool = False, tensors: Any = None) -> Any: ...


class Steps:
    """Step building for one session: names, grad mode, catalogue, and the step JSON."""

    def __init__(
        self,
        session: Any,
        catalogue: dict[str, dict[str, Any]],
        submit: Submit,
        handle: type[Tensor] = Tensor,
    ) -> None:
        self.session = session
        self.catalogue = catalogue
        self._operators: dict[str, str] | None = None
        self.submit_raw = submit
        self.handle = handle
        self.lazy = False  # True for an async session: metadata is known only once awaited
        self.prefix = f"_t{secrets.token_hex(2)}_"
        self._counter = itertools.count()
        self.made = 0  # generated names handed out so far: _t<hex>_0 .. _t<hex>_<made-1>
        self.free: list[str] = []  # generated names whose handles are gone
        self.handles: weakref.WeakValueDictionary[str, Tensor] = weakref.WeakValueDictionary()
        self.grads: dict[str, np.ndarray | None] = {}  # name -> cached .grad values
        self._grad_mode: list[bool] = []

    # --- names -----------------------------------------------------------------------------------

    def new_name(self) -> str:
        if self.free:
            return self.free.pop()
        self.made += 1
        return f"{self.prefix}{next(self._counter)}"

    def temporaries(self) -> list[str]:
        """Every generated name this builder handed out (bound on the server or not)."""
        return [f"{self.prefix}{i}" for i in range(self.made)]

    def bind(self, name: str, meta: dict[str, Any] | None = None, *, generated: bool) -> Tensor:
        """A new handle for ``name``; an older handle on it becomes stale."""
        old = self.handles.get(name)
        if old is not None:
            old._stale = True
        self.grads.pop(name, None)
        handle = self.handle(self.session, name, meta)
        self.handles[name] = handle
        if generated:
            weakref.finalize(handle, self.free.append, name)
        return handle

    def attach(self, name: str, meta: dict[str, Any]) -> Tensor:
        """The handle on a name already bound in the session (``s["x"]``)."""
        handle = self.handles.get(name)
        if handle is None:
            handle = self.handle(self.session, name, meta)
            self.handles[name] = handle
        return handle

    def release(self, owned: list[str]) -> None:
        self.free.extend(owned)

    def forget(self) -> None:
        """Drop cached values and grads."""
        self.grads.clear()
        for h in list(self.handles.values()):
            h._value = None
            h._meta = None

    # --- grad mode ---------------------------------------------------------------------------

    def is_grad_enabled(self) -> bool:
        return self._grad_mode[-1] if self._grad_mode else True

    @contextlib.contextmanager
    def grad_mode(self, enabled: bool) -> Iterator[None]:
        self._grad_mode.append(enabled)
        try:
            yield
        finally:
            self._grad_mode.pop()

    def submit(self, step: dict[str, Any], outs: list[Tensor]) -> None:
        if not self.is_grad_enabled() and not step.get("assign"):
            step["no_grad"] = True
        if not step.get("assign"):  # a new binding: its grad is the new tensor's (None)
            for name in [step["out"]] if isinstance(step["out"], str) else step["out"]:
                self.grads.pop(name, None)
        self.submit_raw(step, outs)

    # --- the catalogue -------------------------------------------------------------------------

    def check_op(self, op: str, form: str = "function") -> None:
        """Refuse an op the catalogue lacks, or a form (function, method, inplace) it
        does not have."""
        if not self._has_form(op, form):
            name = op + "_" if form == "inplace" else op
            known = [n for n in self.catalogue if self._has_form(n, form)]
            if form == "method":  # the handle's own attributes too (x.gard -> 'grad')
                known += [n for n in dir(Tensor) if not n.startswith("_")]
            near = difflib.get_close_matches(op, known, n=1, cutoff=0.6)
            suffix = "_" if form == "inplace" else ""
            hint = f"; did you mean {near[0] + suffix!r}?" if near else ""
            raise AttributeError(f"gradserve has no {FORMS[form]} {name!r}{hint}")

    def _has_form(self, op: str, form: str) -> bool:
        spec = self.catalogue.get(op)
        forms = None if spec is None else spec.get("forms", {"method": spec.get("method")})
        return forms is not None and bool(forms.get(form, form == "function"))

    def operator(self, dunder: str) -> str:
        """The op a Python operator records (``__lt__`` -> ``lt``), by the catalogue's forms."""
        if self._operators is None:
            self._operators = {
                d: name
                for name, spec in self.catalogue.items()
                for d in (spec.get("forms") or {}).get("operators") or ()
            }
        op = self._operators.get(dunder)
        if op is None:
            raise TypeError(f"gradserve has no op for the operator {dunder}")
        return op

    def results(self, op: str, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[int, bool]:
        """(results, whether a tuple) by the op's rule in the catalogue; an unknown op
        or arguments the rule cannot read make one result (the server reports them)."""
        spec = self.catalogue.get(op)
        if spec is None:
            return 1, False
        try:
            return count_results(spec, tuple(args), kwargs)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            return 1, False

    # --- arguments -------------------------------------------------------------------------------

    def own(self, t: Tensor) -> None:
        if t._session is not self.session:
            raise ValueError(f"tensor {t.name!r} belongs to session {t._session.name!r}")
        t._check()

    def arg(self, value: Any, owned: list[str]) -> Any:
        """A step argument: names for handles, constants for arrays, literals otherwise."""
        if isinstance(value, GradRef):
            return self.materialize(value, owned)
        if isinstance(value, Tensor):
            self.own(value)
            return value.name
        if isinstance(value, np.ndarray):
            return wire.encode(value)
        if isinstance(value, list | tuple):
            return [self.arg(v, owned) for v in value]
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            return wire.encode(np.asarray(value, dtype=np.float32))
        return value

    def materialize(self, ref: GradRef, owned: list[str]) -> str:
        """Bind ``x.grad`` to a temporary name with an expression step (no extra round trip)."""
        self.own(ref._owner)
        tmp = self.new_name()
        owned.append(tmp)
        self.submit({"out": tmp, "expr": f"{ref._name}.grad"}, [])
        return tmp

    def operand(self, value: Any) -> str | None:
        """``value`` written in an expression, or None when it cannot be."""
        if isinstance(value, GradRef):
            self.own(value._owner)
            return f"{value._name}.grad"
        if isinstance(value, Tensor):
            self.own(value)
            return value.name
        if isinstance(value, np.generic) and value.ndim == 0:
            value = value.item()
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return str(value) if value >= 0 else f"({value})"
        if isinstance(value, float) and math.isfinite(value):
            text = repr(value)
            return text if value >= 0 and not text.startswith("-") else f"({text})"
        return None

    # --- steps -----------------------------------------------------------------------------------

    def emit(self, step: dict[str, Any], n: int, owned: list[str], *, multi: bool = False) -> Any:
        names = [self.new_name() for _ in range(n)]
        step = {"out": names if multi else names[0], **step}
        outs = [self.bind(name, generated=True) for name in names]
        try:
            self.submit(step, outs)
        finally:
            self.release(owned)
        return tuple(outs) if multi else outs[0]

    def apply(self, op: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Run catalogue op ``op`` (one step); a handle, or a tuple for several results."""
        owned: list[str] = []
        n, multi = self.results(op, args, kwargs)
        step: dict[str, Any] = {"op": op, "args": [self.arg(a, owned) for a in args]}
        if kwargs:
            step["kwargs"] = {k: self.arg(v, owned) for k, v in kwargs.items()}
        return self.emit(step, n, owned, multi=multi)

    def binary(self, symbol: str, left: Any, right: Any) -> Tensor:
        """``left <symbol> right`` as an expression step (the server records it as PyTorch's
        operator does), or as an op step when an operand is an array constant."""
        a, b = self.operand(left), self.operand(right)
        if a is not None and b is not None and not isinstance(left, Tensor):
            # a scalar on the left: PyTorch's reflected operators record rsub (RsubBackward1)
            # and reciprocal-then-mul (MulBackward0); spelled as those ops, not as expressions
            if symbol == "-":
                return self.apply(self.operator("__rsub__"), (right, left), {})  # type: ignore[no-any-return]
            if symbol == "/":
                recip = self.apply("reciprocal", (right,), {})
                return self.apply("mul", (recip, left), {})  # type: ignore[no-any-return]
        if a is None or b is None:
            if isinstance(left, Tensor) or isinstance(right, Tensor):
                if not isinstance(left, Tensor | np.ndarray):
                    left = wire.as_array(left)
                if not isinstance(right, Tensor | np.ndarray):
                    right = wire.as_array(right)
                return self.apply(self.operator(DUNDERS[symbol]), (left, right), {})  # type: ignore[no-any-return]
            return NotImplemented  # type: ignore[no-any-return]
        return self.emit({"expr": f"{a} {symbol} {b}"}, 1, [])  # type: ignore[no-any-return]

    def index(self, t: Tensor, index: Any) -> Tensor:
        """``t[index]``: an expression (``x[0, 1:3]``); list/array indices become int64 or bool
        constants bound to temporary names."""
        owned: list[str] = []
        base = self.operand(t)
        parts = [
            self._index_part(item, owned)
            for item in (index if isinstance(index, tuple) else (index,))
        ]
        text = f"{base}[{', '.join(parts) or '()'}]"
        try:
            return self.emit({"expr": text}, 1, [])  # type: ignore[no-any-return]
        finally:
            self.release(owned)

    def _index_part(self, item: Any, owned: list[str]) -> str:
        if item is None:
            return "None"
        if item is Ellipsis:
            return "..."
        if isinstance(item, slice):
            start, stop, step = (
                "" if v is None else self._index_part(int(v), owned)
                for v in (item.start, item.stop, item.step)
            )
            return f"{start}:{stop}" + (f":{step}" if step else "")
        if isinstance(item, Tensor):
            return self.operand(item) or ""
        if isinstance(item, bool | np.bool_):
            return "True" if item else "False"
        if isinstance(item, int | np.integer):
            return str(int(item)) if item >= 0 else f"-{-int(item)}"
        arr = np.asarray(item)
        if arr.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int, or bool tensors")
        tmp = self.new_name()
        owned.append(tmp)
        self.submit({"out": tmp, "op": "detach", "args": [wire.encode(arr)]}, [])
        return tmp

    def inplace(self, t: Tensor, op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """``t.<op>_(...)``: an assign step on a leaf (PyTorch's leaf check applied here, since
        an assign always runs under no_grad), or an out-of-place op rebinding a non-leaf's name."""
        t._check()
        # a queued result of an async session has no metadata yet: it is no leaf that
        # requires grad (only s.tensor(..., requires_grad=True) makes one, and that one is known)
        is_leaf = t.is_leaf if t._meta is not None or not self.lazy else False
        if is_leaf and t.requires_grad and self.is_grad_enabled():
            raise errors.LeafInplaceError(LEAF_INPLACE_MESSAGE, status=None)
        owned: list[str] = []
        operands = args if op == "clone" else (t, *args)
        step: dict[str, Any] = {
            "out": t.name,
            "op": op,
            "args": [self.arg(a, owned) for a in operands],
        }
        if kwargs:
            step["kwargs"] = {k: self.arg(v, owned) for k, v in kwargs.items()}
        if is_leaf or not self.is_grad_enabled():
            step["assign"] = True
        else:
            text = self._inplace_expr(t, op, args, kwargs)
            if text is not None:  # the engine's own in-place method: a write, as in PyTorch
                step = {"out": t.name, "expr": text}
        t._value = None
        try:
            self.submit(step, [t])
        finally:
            self.release(owned)

    def _inplace_expr(
        self, t: Tensor, op: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> str | None:
        """``t.op_(args)`` as an expression, so the server writes into ``t`` (its views see
        the write, saved tensors see the new version), or None when an argument cannot be
        written in one (the step then rebinds ``t`` to the out-of-place result)."""
        if op == "clone":  # copy_: no catalogue op of that name
            return None
        parts = [self.operand(a) for a in args]
        parts += [
            None if (text := self.operand(v)) is None else f"{k}={text}" for k, v in kwargs.items()
        ]
        if any(p is None for p in parts):
            return None
        return f"{self.operand(t)}.{op}_({', '.join(p for p in parts if p is not None)})"

    def assign_value(self, t: Tensor, values: np.ndarray) -> None:
        """``t.data = values``: write into ``t`` in place, under no_grad (an assign step)."""
        t._check()
        values = np.asarray(values, dtype=t.dtype)
        step = {"out": t.name, "op": "clone", "args": [wire.encode(values)], "assign": True}
        t._value = None
        self.submit(step, [t])

    def expr(self, expression: str, name: str | None = None) -> Tensor:
        """A step in the server's expression language, bound to ``name`` (or a generated one)."""
        generated = name is None
        name = name or self.new_name()
        handle = self.bind(name, generated=generated)
        self.submit({"out": name, "expr": expression}, [handle])
        return handle

    def bind_as(self, t: Tensor, name: str) -> Tensor:
        """Bind what ``t`` names to ``name`` too."""
        expression = self.operand(t)
        assert expression is not None
        return self.expr(expression, name)

    # --- autograd bodies ---------------------------------------------------------------------

    def grad_arg(self, g: Any, out: Tensor | None) -> Any:
        if g is None:
            return None
        if isinstance(g, GradRef):
            g = g.numpy()
        if isinstance(g, Tensor):
            self.own(g)
            return g.name
        arr = np.asarray(g)
        if out is not None and arr.dtype.kind in "fiub":
            arr = arr.astype(out.dtype)  # PyTorch casts a gradient to its output's dtype
        else:
            arr = wire.as_array(g)
        return wire.encode(arr)

    def roots(self, tensors: Any) -> list[Tensor]:
        items = [tensors] if isinstance(tensors, Tensor) else list(tensors)
        roots = []
        for t in items:
            if isinstance(t, GradRef):
                t = self.expr(f"{t._name}.grad")  # a grad made with create_graph=True
            self.own(t)
            roots.append(t)
        return roots

    @staticmethod
    def grad_list(grads: Any, n: int) -> list[Any] | None:
        """One gradient per output; ``y.backward([1.0, 1.0])`` is one gradient given as data."""
        if grads is None:
            return None
        if not isinstance(grads, list | tuple):
            return [grads]
        if n == 1 and (
            len(grads) != 1
            or not isinstance(grads[0], Tensor | np.ndarray | list | tuple | type(None))
        ):
            return [grads]
        return list(grads)

    def backward_body(
        self,
        tensors: Any,
        grad_tensors: Any,
        retain_graph: bool | None,
        create_graph: bool,
        inputs: Any,
    ) -> dict[str, Any]:
        """The body of ``/backward`` (and of a ``{"backward": ...}`` batch item)."""
        roots = self.roots(tensors)
        body: dict[str, Any] = {"tensors": [t.name for t in roots]}
        grads = self.grad_list(grad_tensors, len(roots))
        if grads is not None:
            body["grad_tensors"] = [
                self.grad_arg(g, roots[i] if i < len(roots) else None) for i, g in enumerate(grads)
            ]
        if retain_graph is not None:
            body["retain_graph"] = retain_graph
        if create_graph:
            body["create_graph"] = True
        if inputs is not None:
            items = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            for t in items:
                self.own(t)
            body["inputs"] = [t.name for t in items]
        return body

    def grad_body(
        self,
        outputs: Any,
        inputs: Any,
        grad_outputs: Any,
        retain_graph: bool | None,
        create_graph: bool,
        allow_unused: bool,
    ) -> tuple[dict[str, Any], list[str]]:
        """The body of ``/grad`` with fresh ``out`` names, and those names."""
        outs = self.roots(outputs)
        ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        for t in ins:
            self.own(t)
        names = [self.new_name() for _ in ins]
        body: dict[str, Any] = {
            "outputs": [t.name for t in outs],
            "inputs": [t.name for t in ins],
            "out": names,
        }
        grads = self.grad_list(grad_outputs, len(outs))
        if grads is not None:
            body["grad_outputs"] = [
                self.grad_arg(g, outs[i] if i < len(outs) else None) for i, g in enumerate(grads)
            ]
        if retain_graph is not None:
            body["retain_graph"] = retain_graph
        if create_graph:
            body["create_graph"] = True
        if allow_unused:
            body["allow_unused"] = True
        return body, names

    def grad_handles(
        self, names: list[str], values: list[Any], decode: Callable[[Any], np.ndarray]
    ) -> tuple[Tensor | None, ...]:
        handles: list[Tensor | None] = []
        for name, value in zip(names, values):
            if value is None:
                self.free.append(name)
                handles.append(None)
                continue
            h = self.bind(name, generated=True)
            h._value = decode(value)
            handles.append(h)
        return tuple(handles)

    def zero_grad_body(self, set_to_none: bool, tensors: Sequence[Tensor] | None) -> dict[str, Any]:
        """The body of ``/zero_grad``; the cached grads it zeroes are zeroed here too."""
        body: dict[str, Any] = {}
        if tensors is not None:
            for t in tensors:
                self.own(t)
            body["tensors"] = [t.name for t in tensors]
        if set_to_none:
            body["set_to_none"] = True
        names = body.get("tensors")
        for name in list(self.grads) if names is None else names:
            cached = self.grads.get(name)
            if set_to_none or cached is None or names is None:
                self.grads.pop(name, None)
            else:
                self.grads[name] = np.zeros_like(cached)
        return body
