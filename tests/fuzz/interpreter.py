"""Run a program (see ``programs``) on a backend and record everything a user sees.

One interpreter, three backends that share PyTorch's spelling: ``torch``, the
engine, and the Python client over HTTP. After each instruction the trace gets
what it produced (values, dtype, shape, requires_grad, is_leaf, grad_fn name) or
the error it raised (its builtin class and first line); after each ``backward``
or ``grad`` call, every bound tensor's ``.grad``. A backward or grad that fails
ends the program: PyTorch may have accumulated part of it (our documented
difference: a failed backward changes nothing), so later grads are incomparable.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np

from tests.engine.torch_oracle import values_differ
from tests.fuzz import catalogue

Event = dict[str, Any]
_OPS = {"+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "@": "__matmul__"}
_OPS |= {">": "__gt__", "<": "__lt__", "==": "__eq__", ">=": "__ge__"}


class Backend:
    """What differs between torch, the engine and the client: building leaves,
    reading values and naming things. Everything else is the same spelling."""

    def __init__(self, ns: Any, kind: str) -> None:
        self.ns = ns
        self.kind = kind

    def leaf(self, values: list[Any], shape: list[int], dtype: str, requires_grad: bool) -> Any:
        arr = np.array([float(v) for v in values], dtype=dtype).reshape(shape)
        if self.kind == "torch":
            return self.ns.tensor(arr, requires_grad=requires_grad)
        return self.ns.tensor(arr, dtype=dtype, requires_grad=requires_grad)

    def const(self, values: list[Any], shape: list[int], dtype: str) -> Any:
        return self.leaf(values, shape, dtype, False)

    def graph(self, t: Any) -> list[Any] | None:
        """grad_fn's name and its next functions' names: what ``create_graph`` recorded
        one level down (compared by ``compare(deep=True)``)."""
        fn = t.grad_fn
        if fn is None or isinstance(fn, str):
            return None
        return [self._node_name(fn), [self._node_name(n) for n, _ in fn.next_functions]]

    def _node_name(self, fn: Any) -> str | None:
        if fn is None:
            return None
        name = getattr(fn, "name", None)
        return name if isinstance(name, str) else type(fn).__name__

    def numpy(self, t: Any) -> np.ndarray:
        """A copy: later in-place writes and accumulation must not change the trace."""
        if self.kind == "torch":
            return t.detach().numpy(force=True).copy()
        return np.array(t.numpy() if self.kind == "client" else t.data, copy=True)

    def dtype(self, t: Any) -> str:
        return str(t.dtype).removeprefix("torch.")

    def grad_fn(self, t: Any) -> str | None:
        fn = t.grad_fn
        if fn is None:
            return None
        if self.kind == "torch":
            return type(fn).__name__
        return fn if isinstance(fn, str) else fn.name

    def no_grad(self) -> Any:
        return self.ns.no_grad()

    def autograd_grad(self, outputs: Any, inputs: Any, **kwargs: Any) -> Any:
        if self.kind == "torch":
            return self.ns.autograd.grad(outputs, inputs, **kwargs)
        return self.ns.grad(outputs, inputs, **kwargs)


def error_kind(exc: BaseException) -> str:
    """The builtin class a user would catch (engine errors subclass several)."""
    for cls in (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError):
        if isinstance(exc, cls):
            return cls.__name__
    return type(exc).__name__


def _first_line(exc: BaseException) -> str:
    """The message a user compares: its first line, without the client's ``(hint: ...)``."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    return re.sub(r" \(hint: .*\)$", "", line)


def _key(items: list[list[Any]], be: Backend) -> Any:
    out: list[Any] = []
    for item in items:
        if item[0] == "slice":
            out.append(slice(item[1], item[2], item[3]))
        elif item[0] == "tensor":
            out.append(be.const(item[1], [len(item[1])], "int64"))
        elif item[0] == "mask":
            out.append(be.const(item[1], [len(item[1])], "bool"))
        else:
            out.append(item[1])
    return tuple(out) if len(out) > 1 else out[0]


def run(program: list[Event], be: Backend) -> list[Event]:
    env: dict[str, Any] = {}
    trace: list[Event] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, step in enumerate(program):
            try:
                produced = _execute(step, env, be)
            except Exception as exc:  # noqa: BLE001 - errors are observations here
                trace.append({"i": i, "error": error_kind(exc), "message": _first_line(exc)})
                if step["kind"] in ("backward", "grad"):
                    break
                continue
            event: Event = {"i": i}
            try:  # torch refuses even to read a multi-output view written in place
                for name in produced:
                    event[name] = _describe(env[name], be)
            except Exception as exc:  # noqa: BLE001 - errors are observations here
                trace.append({"i": i, "error": error_kind(exc), "message": _first_line(exc)})
                continue
            if step["kind"] in ("backward", "grad", "zero_grad", "inplace", "setitem"):
                event["grads"] = {n: _grad(t, be) for n, t in env.items()}
            trace.append(event)
    return trace


def _arg(value: Any, env: dict[str, Any]) -> Any:
    return env[value] if isinstance(value, str) else value


def _execute(step: Event, env: dict[str, Any], be: Backend) -> list[str]:
    kind = step["kind"]
    if kind == "leaf":
        env[step["out"]] = be.leaf(
            step["values"], step["shape"], step["dtype"], step["requires_grad"]
        )
        return [step["out"]]
    if kind == "call":
        args = [_arg(a, env) for a in step["args"]]
        fn = step["fn"]
        if fn == "log1p_abs":  # a log that stays finite: log1p(|x|)
            call = lambda: args[0].abs().log1p()  # noqa: E731
        else:
            call = lambda: getattr(args[0], fn)(*args[1:], **step["kwargs"])  # noqa: E731
        if step.get("no_grad"):
            with be.no_grad():
                env[step["out"]] = call()
        else:
            env[step["out"]] = call()
        if step.get("first"):  # max/min over a dim: (values, indices)
            env[step["out"]] = env[step["out"]][0]
        return [step["out"]]
    if kind == "catalogue":  # one registered op on one of its samples (catalogue.py)
        leaves, result = catalogue.call(be, step, env)
        for name, t in zip(step["leaves"], leaves):
            env[name] = t
        outs = catalogue.tensors_of(result, lambda r: hasattr(r, "grad_fn"))
        for name, t in zip(step["out"], outs):
            env[name] = t
        return [*step["leaves"][: len(leaves)], *step["out"][: len(outs)]]
    if kind == "pow":  # a positive base (tensor exponents of negative bases are NaN)
        a, b = env[step["a"]], env[step["b"]]
        env[step["out"]] = (a.sigmoid() + 0.25) ** b
        return [step["out"]]
    if kind == "where":
        c, a, b = env[step["cond"]], env[step["a"]], _arg(step["b"], env)
        env[step["out"]] = be.ns.where(c if step.get("mask") else c > 0, a, b)
        return [step["out"]]
    if kind == "bmm_self":  # a @ a.transpose(-1, -2), batched
        a = env[step["a"]]
        env[step["out"]] = a @ a.transpose(-1, -2)
        return [step["out"]]
    if kind == "index_fn":  # index_select / gather with an int64 index tensor
        index = be.const(step["index"], step["index_shape"], "int64")
        env[step["out"]] = getattr(env[step["src"]], step["fn"])(step["dim"], index)
        return [step["out"]]
    if kind == "fn":  # a module function of a list of tensors: cat, stack
        tensors = [env[n] for n in step["list"]]
        env[step["out"]] = getattr(be.ns, step["fn"])(tensors, step["dim"])
        return [step["out"]]
    if kind == "setitem":
        target = env[step["target"]]
        value = _arg(step["value"], env)
        if step.get("no_grad"):
            with be.no_grad():
                target[_key(step["key"], be)] = value
        else:
            target[_key(step["key"], be)] = value
        return [step["target"]]
    if kind == "binop":
        a, b = env[step["a"]], _arg(step["b"], env)
        env[step["out"]] = getattr(a, _OPS[step["op"]])(b)
        return [step["out"]]
    if kind == "getitem":
        env[step["out"]] = env[step["src"]][_key(step["key"], be)]
        return [step["out"]]
    if kind == "inplace":
        target = env[step["target"]]
        args = [_arg(a, env) for a in step["args"]]
        if step.get("no_grad"):
            with be.no_grad():
                getattr(target, step["fn"])(*args)
        else:
            getattr(target, step["fn"])(*args)
        return [step["target"]]
    if kind == "retain_grad":
        env[step["target"]].retain_grad()
        return []
    if kind == "hook":
        scale, mode = step["scale"], step.get("mode", "scale")
        if mode == "observe":  # returns None: the gradient flows on unchanged
            env[step["target"]].register_hook(lambda g: None)
        elif mode == "add":
            env[step["target"]].register_hook(lambda g: g + scale)
        else:
            env[step["target"]].register_hook(lambda g: g * scale)
        return []
    if kind == "backward":
        root = env[step["root"]]
        gradient = None
        if step["gradient"] is not None:
            gradient = be.const(step["gradient"], list(root.shape), be.dtype(root))
        kwargs: dict[str, Any] = {"retain_graph": step["retain_graph"]}
        if step.get("create_graph"):
            kwargs["create_graph"] = True
        if step.get("inputs"):
            kwargs["inputs"] = [env[n] for n in step["inputs"]]
        root.backward(gradient, **kwargs)
        return []
    if kind == "grad":
        outputs = [env[n] for n in step["outputs"]]
        inputs = [env[n] for n in step["inputs"]]
        grad_outputs = [
            be.const(v, list(o.shape), be.dtype(o)) for v, o in zip(step["grad_outputs"], outputs)
        ]
        grads = be.autograd_grad(
            outputs,
            inputs,
            grad_outputs=grad_outputs,
            retain_graph=step["retain_graph"],
            create_graph=bool(step.get("create_graph")),
            allow_unused=step["allow_unused"],
        )
        bound = []
        for name, g in zip(step["out"], grads):
            if g is not None:
                env[name] = g
                bound.append(name)
        return bound
    if kind == "zero_grad":
        t = env[step["target"]]
        if step["set_to_none"]:
            t.grad = None
        elif t.grad is not None:
            t.grad.zero_()
        return []
    raise ValueError(f"unknown instruction {kind!r}")


def _describe(t: Any, be: Backend) -> Event:
    return {
        "values": be.numpy(t),
        "dtype": be.dtype(t),
        "shape": tuple(t.shape),
        "requires_grad": bool(t.requires_grad),
        "is_leaf": bool(t.is_leaf),
        "grad_fn": be.grad_fn(t),
        "graph": be.graph(t) if be.kind != "client" else None,
    }


def _grad(t: Any, be: Backend) -> Any:
    g = t.grad
    return None if g is None else be.numpy(g)


# -- comparison --------------------------------------------------------------------------------


def _close(a: np.ndarray, b: np.ndarray, dtype: str) -> bool:
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        return values_differ(a, b, 0, 0) is None
    rtol, atol = 1e-4, 1e-4  # float64 results may come from float32 inputs
    if "float16" in (dtype, str(a.dtype), str(b.dtype)):
        rtol, atol = 2e-3, 2e-3  # a few half ulps: torch computes half ops in float32
    return values_differ(a, b, rtol, atol) is None


def compare(ours: list[Event], theirs: list[Event], deep: bool = False) -> str | None:
    """The first difference between two traces, described, or None; with ``deep``, also
    the names one level below each grad_fn (what create_graph recorded)."""
    for mine, ref in zip(ours, theirs):
        if mine.get("i") != ref.get("i"):
            return f"instruction {ref.get('i')}: engine ran {mine.get('i')} (an error on one side)"
        i = ref["i"]
        if "error" in ref or "error" in mine:
            if ("error" in ref) != ("error" in mine):
                side = "torch" if "error" in ref else "engine"
                other = ref if "error" in ref else mine
                return f"instruction {i}: only {side} raised {other['error']}: {other['message']}"
            if (mine["error"], mine["message"]) != (ref["error"], ref["message"]):
                return (
                    f"instruction {i}: errors differ: engine {mine['error']}: {mine['message']!r}"
                    f" / torch {ref['error']}: {ref['message']!r}"
                )
            continue
        for name, desc in ref.items():
            if name in ("i", "grads"):
                continue
            got = mine.get(name)
            if got is None:
                return f"instruction {i}: engine did not produce {name}"
            fields = ("dtype", "shape", "requires_grad", "is_leaf", "grad_fn")
            for field in fields + (("graph",) if deep else ()):
                if got[field] != desc[field]:
                    return (
                        f"instruction {i}: {name}.{field} {got[field]!r} != torch {desc[field]!r}"
                    )
            if not _close(got["values"], desc["values"], desc["dtype"]):
                return f"instruction {i}: {name} values {got['values']} != torch {desc['values']}"
        for name, g in ref.get("grads", {}).items():
            mg = mine.get("grads", {}).get(name)
            if (g is None) != (mg is None):
                return f"instruction {i}: {name}.grad {mg} != torch {g}"
            if g is not None and not _close(mg, g, str(g.dtype)):
                return f"instruction {i}: {name}.grad {mg} != torch {g}"
    if len(ours) != len(theirs):
        return f"the traces have {len(ours)} and {len(theirs)} events"
    return None
