"""``Session``: a named remote session that reads like the ``torch`` module.

    from client import Session
    s = Session("http://127.0.0.1:8000", name="demo")    # creates it, or attaches
    x = s.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = x ** 2
    y.backward([1.0, 1.0], retain_graph=True)
    x.grad                                               # tensor([2., 4.])

Results of ops get generated names (``_t<hex>_<n>``); a name whose handle was
garbage-collected is reused for the next result, so a loop does not grow the
session. With ``batch=True`` steps are queued and sent as one ``/batch``
(all or nothing) when a value or metadata is read, before any other request,
or when ``flush()`` is called.

Caches: values and grads read once are kept until this client changes them
(a step bound the name, an assign, backward, zero_grad, ...). They assume this
client is the only writer of the session; ``invalidate()`` drops them.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import secrets
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from . import errors, wire
from .tensor import LEAF_INPLACE_MESSAGE, GradRef, Tensor, count_results
from .transport import Transport

_BINARY_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow", "@": "matmul"}


class Session:
    """A gradserve session: leaves, steps, backward, grads, as in a PyTorch notebook."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        name: str | None = None,
        *,
        api_key: str | None = None,
        batch: bool = False,
        create: bool = True,
        timeout: float = 30.0,
        retries: int = 3,
        encoding: str = "base64",
        max_batch: int = 500,
        transport: Transport | None = None,
    ) -> None:
        if encoding not in ("json", "base64"):
            raise ValueError("encoding is 'json' or 'base64'")
        self._t = transport or Transport(url, api_key=api_key, timeout=timeout, retries=retries)
        self.batch = batch
        self.encoding = encoding
        self.max_batch = max_batch
        self._queue: list[dict[str, Any]] = []
        self._pending: list[Tensor] = []  # handles whose steps are queued
        self._zeroes: list[dict[str, Any]] = []  # zero_grad bodies deferred to the next flush
        self._prefix = f"_t{secrets.token_hex(2)}_"
        self._counter = itertools.count()
        self._free: list[str] = []  # generated names whose handles are gone
        self._handles: weakref.WeakValueDictionary[str, Tensor] = weakref.WeakValueDictionary()
        self._grads: dict[str, np.ndarray | None] = {}  # name -> cached .grad values
        self._grad_mode: list[bool] = []
        self._catalogue: dict[str, dict[str, Any]] | None = None
        if name is None:
            self.name = self._t.request("POST", "/v1/sessions", json={})["name"]
        elif create:
            try:
                self._t.request("POST", "/v1/sessions", json={"name": name})
            except errors.SessionExistsError:
                self._t.request("GET", f"/v1/sessions/{name}")
            self.name = name
        else:
            self._t.request("GET", f"/v1/sessions/{name}")
            self.name = name
        self._path = f"/v1/sessions/{self.name}"
        self.ops()  # op names, forms and result rules: read once, before any step is queued

    # --- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None:
                self.flush()
        finally:
            self.close()

    def close(self) -> None:
        """Close the connection (the session stays on the server; ``delete()`` drops it)."""
        self._t.close()

    def delete(self) -> None:
        """Drop the session on the server."""
        self._queue.clear()
        self._pending.clear()
        self._t.request("DELETE", self._path)

    def __repr__(self) -> str:
        return f"Session({self.name!r}, {len(self._queue)} queued)"

    @property
    def requests(self) -> int:
        """HTTP round trips made so far."""
        return self._t.requests

    def info(self) -> dict[str, Any]:
        """``GET /v1/sessions/{s}``: tensors' metadata, bytes, times."""
        self.flush()
        return self._t.request("GET", self._path)

    def invalidate(self) -> None:
        """Forget cached values and grads (after another client wrote this session)."""
        self._grads.clear()
        for h in list(self._handles.values()):
            h._value = None
            h._meta = None

    # --- names -----------------------------------------------------------------------------------

    def _new_name(self) -> str:
        return self._free.pop() if self._free else f"{self._prefix}{next(self._counter)}"

    def _bind(self, name: str, meta: dict[str, Any] | None = None, *, generated: bool) -> Tensor:
        old = self._handles.get(name)
        if old is not None:
            old._stale = True
        self._grads.pop(name, None)
        handle = Tensor(self, name, meta)
        self._handles[name] = handle
        if generated:
            weakref.finalize(handle, self._free.append, name)
        return handle

    def __getitem__(self, name: str) -> Tensor:
        """A handle on a tensor already bound in the session (``s["x"]``)."""
        self.flush()
        handle = self._handles.get(name)
        if handle is not None:
            return handle
        meta = self._get_tensor(name, values=False)
        handle = Tensor(self, name, meta)
        self._handles[name] = handle
        return handle

    # --- requests ----------------------------------------------------------------------------

    def _params(self, values: bool = True) -> dict[str, Any]:
        return {"encoding": self.encoding} if values else {"values": "false"}

    def _decode(self, value: dict[str, Any]) -> np.ndarray:
        return wire.decode(value)

    def _get_tensor(self, name: str, *, values: bool) -> dict[str, Any]:
        return self._t.request("GET", f"{self._path}/tensors/{name}", params=self._params(values))

    def _read_grad(self, name: str) -> tuple[bool, str | None]:
        """Whether ``name`` has a grad (cached in ``_grads``), and PyTorch's warning if any."""
        if self._grads.get(name) is not None:  # queued steps never change a grad
            return True, None
        self.flush()
        body = self._t.request("GET", f"{self._path}/tensors/{name}/grad", params=self._params())
        if body.get("grad") is None:
            return False, body.get("warning")
        self._grads[name] = self._decode(body["grad"])
        return True, body.get("warning")

    def _clear_grad(self, name: str) -> None:
        self.flush()
        self._grads.pop(name, None)
        self._t.request("DELETE", f"{self._path}/tensors/{name}/grad")

    def _patch(self, t: Tensor, body: dict[str, Any]) -> dict[str, Any]:
        t._check()
        self.flush()
        self._grads.pop(t.name, None)
        return self._t.request(
            "PATCH", f"{self._path}/tensors/{t.name}", json=body, params=self._params(False)
        )

    def flush(self) -> None:
        """Send the queued steps as one ``/batch`` (all or nothing), then any deferred
        ``zero_grad``."""
        if self._queue:
            steps, pending = self._queue, self._pending
            self._queue, self._pending = [], []
            try:
                body = self._t.request(
                    "POST", f"{self._path}/batch", json={"steps": steps}, params=self._params(False)
                )
            except errors.GradserveError as exc:
                for h in pending:  # all or nothing: none of these exists on the server
                    h._failed = exc
                while self._zeroes:  # asked for separately: still done
                    self._send_zero_grad(self._zeroes.pop(0))
                raise
            metas = {m["name"]: m for m in body["tensors"]}
            for h in pending:
                if not h._stale and h._name in metas:
                    h._set_meta(metas[h._name])
        while self._zeroes:
            self._send_zero_grad(self._zeroes.pop(0))

    def _submit(self, step: dict[str, Any], outs: list[Tensor]) -> None:
        if not self.is_grad_enabled() and not step.get("assign"):
            step["no_grad"] = True
        if not step.get("assign"):  # a new binding: its grad is the new tensor's (None)
            for name in [step["out"]] if isinstance(step["out"], str) else step["out"]:
                self._grads.pop(name, None)
        if self.batch:
            if self._zeroes and ".grad" in step.get("expr", ""):
                self.flush()  # this step reads a grad that a deferred zero_grad must zero first
            self._queue.append(step)
            self._pending.extend(outs)
            if len(self._queue) >= self.max_batch:
                self.flush()
            return
        self.flush()
        body = self._t.request("POST", f"{self._path}/ops", json=step, params=self._params(False))
        metas = body.get("tensors", [body])
        by_name = {m["name"]: m for m in metas}
        for h in outs:
            if h._name in by_name:
                h._set_meta(by_name[h._name])

    # --- grad mode ---------------------------------------------------------------------------

    def is_grad_enabled(self) -> bool:
        return self._grad_mode[-1] if self._grad_mode else True

    @contextlib.contextmanager
    def no_grad(self) -> Iterator[None]:
        """Steps sent inside run with ``"no_grad": true`` (``with torch.no_grad():``)."""
        self._grad_mode.append(False)
        try:
            yield
        finally:
            self._grad_mode.pop()

    @contextlib.contextmanager
    def enable_grad(self) -> Iterator[None]:
        self._grad_mode.append(True)
        try:
            yield
        finally:
            self._grad_mode.pop()

    # --- leaves ----------------------------------------------------------------------------------

    def tensor(
        self,
        data: Any,
        *,
        requires_grad: bool = False,
        name: str | None = None,
        dtype: str | None = None,
    ) -> Tensor:
        """``torch.tensor(data, requires_grad=...)``: a leaf, bound with PUT."""
        if isinstance(data, Tensor):
            data = data.numpy()
        arr = wire.as_array(data, dtype)
        generated = name is None
        name = name or self._new_name()
        body = {**wire.encode(arr), "requires_grad": requires_grad}
        self.flush()
        meta = self._t.request(
            "PUT", f"{self._path}/tensors/{name}", json=body, params=self._params(False)
        )
        handle = self._bind(name, meta, generated=generated)
        handle._value = arr.copy()
        return handle

    def _assign_value(self, t: Tensor, values: np.ndarray) -> None:
        """``t.data = values``: write into ``t`` in place, under no_grad (an assign step)."""
        values = np.asarray(values, dtype=t.dtype)
        step = {"out": t.name, "op": "clone", "args": [wire.encode(values)], "assign": True}
        t._value = None
        self._submit(step, [t])

    # --- steps -----------------------------------------------------------------------------------

    def _arg(self, value: Any, owned: list[str]) -> Any:
        """A step argument: names for handles, constants for arrays, literals otherwise."""
        if isinstance(value, GradRef):
            return self._materialize(value, owned)
        if isinstance(value, Tensor):
            self._own(value)
            return value.name
        if isinstance(value, np.ndarray):
            return wire.encode(value)
        if isinstance(value, list | tuple):
            return [self._arg(v, owned) for v in value]
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            return wire.encode(np.asarray(value, dtype=np.float32))
        return value

    def _own(self, t: Tensor) -> None:
        if t._session is not self:
            raise ValueError(f"tensor {t.name!r} belongs to session {t._session.name!r}")
        t._check()

    def _materialize(self, ref: GradRef, owned: list[str]) -> str:
        """Bind ``x.grad`` to a temporary name with an expression step (no extra round trip)."""
        self._own(ref._owner)
        tmp = self._new_name()
        owned.append(tmp)
        self._submit({"out": tmp, "expr": f"{ref._name}.grad"}, [])
        return tmp

    def _release(self, owned: list[str]) -> None:
        self._free.extend(owned)

    def _results(self, op: str, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[int, bool]:
        """(results, whether a tuple) by the op's rule in the catalogue; an unknown op
        or arguments the rule cannot read make one result (the server reports them)."""
        spec = self.ops().get(op)
        if spec is None:
            return 1, False
        try:
            return count_results(spec, tuple(args), kwargs)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            return 1, False

    def _apply(self, op: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Run catalogue op ``op`` (one step); a handle, or a tuple for several results."""
        owned: list[str] = []
        n, multi = self._results(op, args, kwargs)
        step = {
            "op": op,
            "args": [self._arg(a, owned) for a in args],
            "kwargs": {k: self._arg(v, owned) for k, v in kwargs.items()},
        }
        if not step["kwargs"]:
            del step["kwargs"]
        return self._emit(step, n, owned, multi=multi)

    def _emit(self, step: dict[str, Any], n: int, owned: list[str], *, multi: bool = False) -> Any:
        names = [self._new_name() for _ in range(n)]
        step = {"out": names if multi else names[0], **step}
        outs = [self._bind(name, generated=True) for name in names]
        try:
            self._submit(step, outs)
        finally:
            self._release(owned)
        return tuple(outs) if multi else outs[0]

    def _operand(self, value: Any) -> str | None:
        """``value`` written in an expression, or None when it cannot be."""
        if isinstance(value, GradRef):
            self._own(value._owner)
            return f"{value._name}.grad"
        if isinstance(value, Tensor):
            self._own(value)
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

    def _binary(self, symbol: str, left: Any, right: Any) -> Tensor:
        """``left <symbol> right`` as an expression step (the server records it as PyTorch's
        operator does), or as an op step when an operand is an array constant."""
        a, b = self._operand(left), self._operand(right)
        if a is not None and b is not None and not isinstance(left, Tensor):
            # a scalar on the left: PyTorch's reflected operators record rsub (RsubBackward1)
            # and reciprocal-then-mul (MulBackward0); spelled as those ops, not as expressions
            if symbol == "-":
                return self._apply("rsub", (right, left), {})
            if symbol == "/":
                return self._apply("mul", (self._apply("reciprocal", (right,), {}), left), {})
        if a is None or b is None:
            if isinstance(left, Tensor) or isinstance(right, Tensor):
                if not isinstance(left, Tensor) and not isinstance(left, np.ndarray):
                    left = wire.as_array(left)
                if not isinstance(right, Tensor) and not isinstance(right, np.ndarray):
                    right = wire.as_array(right)
                return self._apply(_BINARY_OPS[symbol], (left, right), {})
            return NotImplemented
        return self._emit({"expr": f"{a} {symbol} {b}"}, 1, [])

    def _index(self, t: Tensor, index: Any) -> Tensor:
        """``t[index]``: an expression (``x[0, 1:3]``); list/array indices become int64 or bool
        constants bound to temporary names."""
        owned: list[str] = []
        base = self._operand(t)
        parts = []
        for item in index if isinstance(index, tuple) else (index,):
            parts.append(self._index_part(item, owned))
        text = f"{base}[{', '.join(parts) or '()'}]"
        try:
            return self._emit({"expr": text}, 1, [])
        finally:
            self._release(owned)

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
            return self._operand(item) or ""
        if isinstance(item, bool | np.bool_):
            return "True" if item else "False"
        if isinstance(item, int | np.integer):
            return str(int(item)) if item >= 0 else f"-{-int(item)}"
        arr = np.asarray(item)
        if arr.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int, or bool tensors")
        tmp = self._new_name()
        owned.append(tmp)
        self._submit({"out": tmp, "op": "detach", "args": [wire.encode(arr)]}, [])
        return tmp

    def _inplace(self, t: Tensor, op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """``t.<op>_(...)``: an assign step on a leaf (PyTorch's leaf check applied here, since
        an assign always runs under no_grad), or an out-of-place op rebinding a non-leaf's name."""
        t._check()
        if t.is_leaf and t.requires_grad and self.is_grad_enabled():
            raise errors.LeafInplaceError(LEAF_INPLACE_MESSAGE, status=None)
        owned: list[str] = []
        operands = args if op == "clone" else (t, *args)
        step: dict[str, Any] = {
            "out": t.name,
            "op": op,
            "args": [self._arg(a, owned) for a in operands],
        }
        if kwargs:
            step["kwargs"] = {k: self._arg(v, owned) for k, v in kwargs.items()}
        if t.is_leaf or not self.is_grad_enabled():
            step["assign"] = True
        t._value = None
        try:
            self._submit(step, [t])
        finally:
            self._release(owned)

    def _apply_expr(self, t: Tensor, name: str) -> Tensor:
        handle = self._bind(name, generated=False)
        self._submit({"out": name, "expr": self._operand(t)}, [handle])
        return handle

    def expr(self, expression: str, *, name: str | None = None) -> Tensor:
        """A step in the server's expression language, bound to ``name`` (or a generated one):
        ``s.expr("3*a + 2*b*b + log(c)", name="y")``; names in it are session tensors."""
        generated = name is None
        name = name or self._new_name()
        handle = self._bind(name, generated=generated)
        self._submit({"out": name, "expr": expression}, [handle])
        return handle

    def op(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Any catalogue op by name: ``s.op("cross_entropy", logits, target)``."""
        return self._apply(op, args, kwargs)

    def __getattr__(self, op: str) -> Any:
        # torch-style functions: s.log(c), s.cat([a, b]), s.zeros(2, 3) -> catalogue ops
        if op.startswith("_"):
            raise AttributeError(op)
        self._check_op(op)
        return lambda *args, **kwargs: self._apply(op, args, kwargs)

    def ops(self) -> dict[str, dict[str, Any]]:
        """The catalogue (``GET /v1/ops``), by name."""
        if self._catalogue is None:
            body = self._t.request("GET", "/v1/ops")
            self._catalogue = {o["name"]: o for o in body["ops"]}
        return self._catalogue

    def _check_op(self, op: str, form: str = "function") -> None:
        """Refuse an op the catalogue lacks, or a form (function, method, inplace) it
        does not have."""
        spec = self.ops().get(op)
        forms = None if spec is None else spec.get("forms", {"method": spec.get("method")})
        if forms is None or not forms.get(form, form == "function"):
            what = {"function": "op", "method": "method", "inplace": "in-place method"}[form]
            name = op + "_" if form == "inplace" else op
            raise AttributeError(f"gradserve has no {what} {name!r}")

    # --- autograd ----------------------------------------------------------------------------

    def _grad_arg(self, g: Any, out: Tensor | None) -> Any:
        if g is None:
            return None
        if isinstance(g, GradRef):
            g = g.numpy()
        if isinstance(g, Tensor):
            self._own(g)
            return g.name
        arr = np.asarray(g)
        if out is not None and arr.dtype.kind in "fiub":
            arr = arr.astype(out.dtype)  # PyTorch casts a gradient to its output's dtype
        else:
            arr = wire.as_array(g)
        return wire.encode(arr)

    def _roots(self, tensors: Any) -> list[Tensor]:
        items = [tensors] if isinstance(tensors, Tensor) else list(tensors)
        roots = []
        for t in items:
            if isinstance(t, GradRef):
                t = self.expr(f"{t._name}.grad")  # a grad made with create_graph=True
            self._own(t)
            roots.append(t)
        return roots

    @staticmethod
    def _grad_list(grads: Any, n: int) -> list[Any] | None:
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

    def backward(
        self,
        tensors: Any,
        grad_tensors: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """``torch.autograd.backward``: accumulate into the leaves' ``.grad``."""
        roots = self._roots(tensors)
        self.flush()
        body: dict[str, Any] = {"tensors": [t.name for t in roots]}
        grads = self._grad_list(grad_tensors, len(roots))
        if grads is not None:
            body["grad_tensors"] = [
                self._grad_arg(g, roots[i] if i < len(roots) else None) for i, g in enumerate(grads)
            ]
        if retain_graph is not None:
            body["retain_graph"] = retain_graph
        if create_graph:
            body["create_graph"] = True
        if inputs is not None:
            items = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            for t in items:
                self._own(t)
            body["inputs"] = [t.name for t in items]
        result = self._t.request("POST", f"{self._path}/backward", json=body, params=self._params())
        for name, value in result["grads"].items():
            self._grads[name] = self._decode(value)

    def grad(
        self,
        outputs: Any,
        inputs: Any,
        grad_outputs: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        allow_unused: bool = False,
    ) -> tuple[Tensor | None, ...]:
        """``torch.autograd.grad``: one handle per input (None if unused), ``.grad`` untouched.
        The results are bound in the session, so they can be differentiated again."""
        outs = self._roots(outputs)
        self.flush()
        ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        for t in ins:
            self._own(t)
        names = [self._new_name() for _ in ins]
        body: dict[str, Any] = {
            "outputs": [t.name for t in outs],
            "inputs": [t.name for t in ins],
            "out": names,
        }
        grads = self._grad_list(grad_outputs, len(outs))
        if grads is not None:
            body["grad_outputs"] = [
                self._grad_arg(g, outs[i] if i < len(outs) else None) for i, g in enumerate(grads)
            ]
        if retain_graph is not None:
            body["retain_graph"] = retain_graph
        if create_graph:
            body["create_graph"] = True
        if allow_unused:
            body["allow_unused"] = True
        try:
            result = self._t.request("POST", f"{self._path}/grad", json=body, params=self._params())
        except BaseException:
            self._free.extend(names)
            raise
        handles: list[Tensor | None] = []
        for name, value in zip(names, result["grads"]):
            if value is None:
                self._free.append(name)
                handles.append(None)
                continue
            h = self._bind(name, generated=True)
            h._value = self._decode(value)
            handles.append(h)
        return tuple(handles)

    def zero_grad(self, set_to_none: bool = False, tensors: Sequence[Tensor] | None = None) -> None:
        """Zero the grads of ``tensors``, or of every leaf (``optimizer.zero_grad()``)."""
        body: dict[str, Any] = {}
        if tensors is not None:
            for t in tensors:
                self._own(t)
            body["tensors"] = [t.name for t in tensors]
        if set_to_none:
            body["set_to_none"] = True
        names = body.get("tensors")
        for name in list(self._grads) if names is None else names:
            cached = self._grads.get(name)
            if set_to_none or cached is None or names is None:
                self._grads.pop(name, None)
            else:
                self._grads[name] = np.zeros_like(cached)
        if self.batch and self._zeroes and "tensors" in body and "tensors" in self._zeroes[-1]:
            last = self._zeroes[-1]
            if last.get("set_to_none") == body.get("set_to_none"):  # x.grad.zero_(); w.grad.zero_()
                last["tensors"] = list(dict.fromkeys(last["tensors"] + body["tensors"]))
                return
        if self.batch:
            # deferred: queued steps that read grads run first (they are in the batch before it),
            # later steps that read a grad flush it first; so it rides along with the next flush
            self._zeroes.append(body)
            return
        self.flush()
        self._send_zero_grad(body)

    def _send_zero_grad(self, body: dict[str, Any]) -> None:
        self._t.request("POST", f"{self._path}/zero_grad", json=body)

    def graph(self, roots: Sequence[Tensor | str] | None = None, format: str = "json") -> Any:  # noqa: A002
        """The backward graph (``GET .../graph``): a dict, or DOT/Mermaid/SVG text."""
        self.flush()
        params: dict[str, Any] = {"format": format}
        if roots is not None:
            params["roots"] = ",".join(r if isinstance(r, str) else r.name for r in roots)
        return self._t.request("GET", f"{self._path}/graph", params=params, raw=format != "json")
