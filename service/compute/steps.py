"""Running one step against a session's bindings: names and values resolved, the op's
arity and size checked before it allocates, expressions evaluated, results bound.

Everything here is synchronous and runs under the session's lock (``offload`` decides
whether on the event loop or in a worker thread); ``programs`` runs steps in order
inside a ``Transaction``.
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import numpy as np

import engine
from engine import OPS, Tensor, interrupt, no_grad
from engine.binding import numbers_as_tensors
from engine.errors import (
    DtypeMismatchError,
    EngineError,
    IndexOutOfRangeError,
    ShapeMismatchError,
)

from .. import codec
from ..errors import BadArgumentsError, LimitExceededError, ServiceError, UnknownOpError, closest
from ..schemas import PlainCall, StepIn, TensorIn
from ..session.limits import check_work, estimate_elements
from ..session.quotas import refuse_bytes
from ..session.state import Session, Transaction, bindings_bytes, grad_of
from ..settings import Settings
from . import expr

log = logging.getLogger("gradserve")

_TENSOR_KEYS = {"data", "b64", "dtype", "shape"}


class Executor:
    """Resolves names and values against ``bindings`` and calls catalogue ops."""

    def __init__(
        self,
        session: Session,
        settings: Settings,
        bindings: dict[str, Tensor] | None = None,
        txn: Transaction | None = None,
        *,
        checked: bool = True,
        trees: Mapping[int, expr.Node] | None = None,
    ) -> None:
        self.session = session
        self.settings = settings
        self.bindings = session.tensors if bindings is None else bindings
        self.txn = txn  # records the generator's state before the first random draw
        self.produced = 0  # elements the steps created (a weight for later backward calls)
        # size limits checked: not when replaying a journal, whose records passed them
        # when they were acknowledged (limits lowered since must not make them fail)
        self.checked = checked
        # a stored program's parsed expressions (id(step) -> tree), compiled when it was stored
        self.trees = trees
        # memory budgets: bytes the ops so far may have added (their estimates, results and
        # saved tensors counted generously) against the room the budgets left at the start;
        # past it, the exact count decides (``reserve``)
        self.spent = 0
        self.room: int | None = None
        self.basis = 0  # the count ``room`` was computed from (``spent`` is beside it)
        self.held = 0  # the session's bytes when the request began: a refusal's ``used``
        self.estimate: int | None = None  # the op's estimate in bytes, check_estimate to invoke
        self.check = interrupt.current()  # the request's deadline, called before each op

    # -- values ------------------------------------------------------------------------------
    def lookup(self, name: str) -> Tensor:
        return self.session.lookup(name, self.bindings)

    def decode(self, value: Any) -> np.ndarray:
        return codec.decode(value, max_elements=self.settings.max_tensor_elements)

    def constant(self, value: Any) -> Tensor:
        arr = self.decode(value)
        self.spent += arr.nbytes  # the bytes it binds, beside what the ops make
        return Tensor(arr)

    def resolve(self, arg: Any) -> Any:
        """A step argument: a name is a tensor, an object a constant, a list its items."""
        if isinstance(arg, str):
            return self.lookup(arg)
        if isinstance(arg, TensorIn):
            return self.constant(arg)
        if isinstance(arg, list):
            return [self.resolve(a) for a in arg]
        return arg

    def resolve_kwarg(self, key: str, value: Any) -> Any:
        """Keyword values are literals, except an object with data/b64 (a constant tensor)."""
        if isinstance(value, dict):
            if not (value.keys() <= _TENSOR_KEYS and ("data" in value or "b64" in value)):
                raise BadArgumentsError(
                    f"keyword {key!r}: an object must be a tensor value with 'data' or 'b64'"
                )
            return self.constant(value)
        if isinstance(value, list):
            return [self.resolve_kwarg(key, v) for v in value]
        return value

    # -- ops -----------------------------------------------------------------------------------
    def call(
        self, op: str, args: list[Any], kwargs: dict[str, Any], *, method: bool = False
    ) -> Any:
        """One catalogue op: arity checked, sizes checked before it allocates."""
        spec = OPS.get(op)
        if spec is None and method and op.endswith("_") and op[:-1] in OPS:
            return self.call_inplace(op, args, kwargs)
        if spec is None:
            raise UnknownOpError(f"unknown op {op!r}", hint_fields={"closest": closest(op, OPS)})
        if method and not spec.method:
            raise BadArgumentsError(f"op {op!r} has no method form; call it as {op}(...)")
        if not method and not spec.function:
            raise BadArgumentsError(f"op {op!r} is a method only; call it as x.{op}(...)")
        why = arity_error(op, len(args), tuple(kwargs))
        if why is not None:
            raise BadArgumentsError(f"{op}(): {why}", hint=f"signature: {op}{spec.signature}")
        if spec.binding is not None:  # JSON numbers where PyTorch demands a Tensor
            args, kwargs = numbers_as_tensors(spec.signature, spec.binding, args, kwargs)
        self.check_estimate(op, args, kwargs)
        if draws(op) and "seed" not in kwargs:  # the session's generator, as torch's default
            if self.txn is not None:
                self.txn.before_random()
            kwargs = {**kwargs, "generator": self.session.generator}
        if spec.writes and self.txn is not None:
            self.before_writes(spec.signature, spec.writes, args, kwargs)
        return self.invoke(op, spec.fn, args, kwargs)

    def call_known(self, op: str, spec: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """``call`` for a call whose form was checked when its program was compiled
        (``plan``: the op known, of this form and arity, neither drawing nor writing its
        arguments): what depends on the values only."""
        if spec.binding is not None:
            args, kwargs = numbers_as_tensors(spec.signature, spec.binding, args, kwargs)
        self.check_estimate(op, args, kwargs)
        return self.invoke(op, spec.fn, args, kwargs)

    def before_writes(
        self,
        signature: inspect.Signature,
        writes: tuple[str, ...],
        args: list[Any],
        kwargs: dict[str, Any],
    ) -> None:
        """Record the tensors an op writes in place besides its result (its ``writes``
        fact: batch_norm's running stats), so a failing batch restores them."""
        assert self.txn is not None
        bound = signature.bind(*args, **kwargs).arguments  # the arity was checked
        for name in writes:
            if isinstance(t := bound.get(name), Tensor):
                self.txn.before_write(t)

    def call_inplace(self, method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """``x.op_(...)``, for an op whose registration has the in-place form: the write is
        journaled first, so a failing batch restores the tensor."""
        op = method[:-1]
        spec = OPS[op]
        if not (spec.inplace or callable(getattr(Tensor, method, None))):
            raise BadArgumentsError(f"op {op!r} has no in-place form {method}()")
        target = args[0]
        if not isinstance(target, Tensor):
            raise BadArgumentsError(f"{method}() needs a tensor, not {type(target).__name__}")
        why = arity_error(op, len(args), tuple(kwargs))
        if why is not None:
            raise BadArgumentsError(f"{method}(): {why}", hint=f"signature: {op}{spec.signature}")
        if spec.binding is not None:
            args, kwargs = numbers_as_tensors(spec.signature, spec.binding, args, kwargs)
        # checked as its out-of-place op: the engine computes that result, then writes it
        self.check_estimate(op, args, kwargs)
        if draws(op) and "seed" not in kwargs:
            if self.txn is not None:
                self.txn.before_random()
            kwargs = {**kwargs, "generator": self.session.generator}
        if self.txn is not None:
            self.txn.before_write(target)
        return self.invoke(method, getattr(target, method), args[1:], kwargs)

    def seed(self, seed: int) -> None:
        """``torch.manual_seed(seed)`` for this session's generator."""
        if self.txn is not None:
            self.txn.before_random()
        try:
            self.session.generator.manual_seed(seed)
        except (EngineError, ServiceError):
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise BadArgumentsError(f"manual_seed(): {exc}") from None

    def check_estimate(self, op: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        if not self.checked:
            return
        if not kwargs and _generic(op):
            # the commonest call: an op with no estimate or work of its own, on tensors and
            # numbers. Its estimate is the broadcast of its tensors (``estimate_elements``),
            # which for tensors of one shape is their size: read here without the walk
            shape: tuple[int, ...] | None = None
            size = tensors = estimate = 0
            for a in args:
                kind = type(a)
                if kind is Tensor:
                    data = a._data
                    if shape is None:
                        shape, estimate = data.shape, data.size
                    elif data.shape != shape:
                        break  # shapes that differ: the general reading
                    tensors += 1
                    if data.itemsize > size:
                        size = data.itemsize
                elif kind is not float and kind is not int and kind is not bool:
                    break
            else:
                if tensors >= 2:
                    if estimate > self.settings.max_tensor_elements:
                        codec.check_elements(
                            estimate, self.settings.max_tensor_elements, f"the result of {op}"
                        )
                    self.estimate = size * estimate
                return  # one tensor and numbers: no larger than its input (no estimate)
        check_work(op, args, kwargs, self.settings)
        found = estimate_elements(op, args, kwargs)
        if found is not None:
            if found > self.settings.max_tensor_elements:
                codec.check_elements(
                    found, self.settings.max_tensor_elements, f"the result of {op}"
                )
            size = 0  # in bytes: at the widest of its tensors' item sizes
            for a in args:
                if type(a) is Tensor and a._data.itemsize > size:
                    size = a._data.itemsize
            self.estimate = (size or 8) * found

    def reserve(self, args: list[Any]) -> None:
        """Refuse (507) before an op allocates when what it makes (its estimate in bytes)
        could take the session, its key or the server past a budget, beside what the ops
        before it made (``spent``: their results, twice for those a graph records, as it
        may save as much again). Cheap while far from every limit: a sum and a
        comparison; near one, the exact count of the bindings (graphs included) decides,
        and the exact count after the steps (``bytes_after_steps``) is the one kept."""
        estimate, self.estimate = self.estimate, None
        need = estimate or 0
        if self.room is None:
            bound = self.session.bytes_bound
            self.held = self.session.nbytes() if bound is None else bound
            self.room, self.basis = self._room(self.held), self.held
        if self.spent + need > self.room:
            exact = bindings_bytes(self.bindings.values())
            # what this request's earlier steps made is requested, not held
            refuse_bytes(
                self.session, self.settings, exact + need, need + max(exact - self.held, 0)
            )
            self.room, self.spent, self.basis = self._room(exact), 0, exact

    def upper_bound(self) -> int | None:
        """An upper bound of the bindings' bytes now, when the ops so far kept one (the
        count they started from and what they made); None when none ran checked."""
        return None if self.room is None else self.basis + self.spent

    def _room(self, held: int | None) -> int:
        """Bytes the budgets leave beside ``held`` (the session's count)."""
        s = self.settings
        held = self.session.nbytes() if held is None else held
        others, same_key = (
            self.session.held_elsewhere() if self.session.held_elsewhere is not None else (0, 0)
        )
        room = min(s.max_session_bytes - held, s.max_total_bytes - others - held)
        if self.session.owner is not None:
            room = min(room, s.key_max_bytes - same_key - held)
        return room

    def invoke(
        self, op: str, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        """``fn`` (op's function, its arguments already checked), errors in the service's
        terms; counts and size-checks what it made."""
        if self.check is not None:
            self.check()
        checked = self.checked
        if checked:
            if self.room is not None and self.estimate is None:
                if self.spent > self.room:  # (``reserve``'s test, for an op without estimate)
                    self.reserve(args)
            else:
                self.reserve(args)
        try:
            result = fn(*args, **kwargs)
        except (ShapeMismatchError, DtypeMismatchError) as exc:
            _operands(exc, args)
            raise
        except (EngineError, ServiceError):
            raise
        except MemoryError:
            raise LimitExceededError(f"{op} ran out of memory", status=507) from None
        except ValueError as exc:
            if "broadcast" not in str(exc):
                raise BadArgumentsError(f"{op}(): {exc}") from None
            log.warning("engine raised a bare ValueError in %s: %s", op, exc)
            raise ShapeMismatchError(f"{op}(): {exc}") from None
        except (
            TypeError,
            IndexError,
            OverflowError,
            ZeroDivisionError,
            AttributeError,  # a string where a tensor is meant: x.type_as('x')
            RuntimeError,  # (EngineError is one, answered above)
            RecursionError,
        ) as exc:
            log.warning("engine raised a bare %s in %s: %s", type(exc).__name__, op, exc)
            spec = OPS.get(op) or OPS.get(op.removesuffix("_"))
            hint = None if spec is None else f"signature: {spec.name}{spec.signature}"
            raise BadArgumentsError(f"{op}(): {exc}", hint=hint) from None
        if type(result) is Tensor:  # the commonest result: the loop below, for one tensor
            data = result._data
            if data.dtype.kind != "c":
                if checked:
                    if data.size > self.settings.max_tensor_elements:
                        codec.check_elements(data.size, self.settings.max_tensor_elements)
                    self.spent += data.nbytes if result._grad_fn is None else 2 * data.nbytes
                self.produced += data.size
                return result
        # a named tuple (eig's, svd's) is a tuple too: each of its tensors is checked
        for t in (
            (result,) if type(result) is Tensor else result if isinstance(result, tuple) else ()
        ):
            if isinstance(t, Tensor):
                if t._data.dtype.kind == "c":
                    raise BadArgumentsError(
                        f"{op}() gives a complex tensor, which the service does not hold or "
                        "send (JSON has no complex numbers)",
                        hint="the engine has complex tensors; over HTTP, only real results",
                    )
                if self.checked:
                    codec.check_elements(t._data.size, self.settings.max_tensor_elements)
                    self.spent += t._data.nbytes if t._grad_fn is None else 2 * t._data.nbytes
                self.produced += t._data.size
        return result

    def compute(self, step: StepIn) -> Any:
        if step.expr is not None:
            trees = self.trees
            node = (
                trees[id(step)]
                if trees is not None
                else parse_expr(step.expr, self.settings.max_expr_length)
            )
            return expr.evaluate(node, _Env(self))
        assert step.op is not None
        bound, resolve = self.bindings, self.resolve
        args = [
            bound[a] if type(a) is str and a in bound else a if type(a) is float else resolve(a)
            for a in step.args
        ]
        kwargs = (
            {k: self.resolve_kwarg(k, v) for k, v in step.kwargs.items()} if step.kwargs else {}
        )
        return self.call(step.op, args, kwargs)

    def run_plain(self, step: StepIn, plain: PlainCall) -> list[str] | None:
        """A ``PlainCall`` step, with what the call's form decides (op known, arity,
        whether a size estimate is needed) looked up once per op and form; returns the
        names it bound, or None, before running anything, when the general path must
        run it (it then reports what is wrong in its own words)."""
        assert step.op is not None and type(step.out) is str
        checked = _plain_op(step.op, len(plain.args), len(plain.names))
        if checked is None:
            return None
        return self.run_resolved(step, plain, *checked)

    def run_resolved(
        self, step: StepIn, plain: PlainCall, fn: Callable[..., Any], may_grow: bool
    ) -> list[str] | None:
        """``run_plain`` with the op's function and estimate need resolved (``plan``)."""
        assert step.op is not None and type(step.out) is str
        bound = self.bindings
        args: list[Any] = list(plain.args)
        for i in plain.names:
            tensor = bound.get(args[i])
            if tensor is None:
                return None  # the general path names the missing tensor
            args[i] = tensor
        if may_grow:
            self.check_estimate(step.op, args, {})
        result = self.invoke(step.op, fn, args, {})
        if type(result) is not Tensor:
            return self.bind(step, result)
        bound[step.out] = result
        return [step.out]

    def run_step(
        self, step: StepIn, txn: Transaction, compiled: Callable[..., Any] | None = None
    ) -> list[str]:
        """Run one step against ``txn``'s bindings; returns the names it bound.
        ``compiled``: the step's expression as ``plan`` compiled it."""
        if compiled is not None:
            env = _Env(self)
            compute: Callable[[], Any] = lambda: compiled(self, env)  # noqa: E731
        else:
            compute = lambda: self.compute(step)  # noqa: E731
        if step.assign:
            assert isinstance(step.out, str)
            target = self.lookup(step.out)
            with no_grad():
                result = as_tensor(compute())
                if (
                    result.shape != target.shape
                    and np.broadcast_shapes(result.shape, target.shape) != target.shape
                ):
                    raise ShapeMismatchError(
                        f"output with shape {list(target.shape)} doesn't match the broadcast "
                        f"shape {list(np.broadcast_shapes(result.shape, target.shape))}"
                    )
                if not _swap(txn, target, result):
                    txn.before_write(target)
                    target.copy_(result)
            return [step.out]
        if step.no_grad:
            with no_grad():
                result = compute()
        else:
            result = compute()
        return self.bind(step, result)

    def bind(self, step: StepIn, result: Any) -> list[str]:
        """Bind a step's result(s) to its ``out`` name(s)."""
        if type(result) is Tensor and type(step.out) is str:  # one result, one name
            self.bindings[step.out] = result
            return [step.out]
        outs = [step.out] if isinstance(step.out, str) else list(step.out or ())
        results = list(result) if _is_multi(result) else [result]
        if len(results) != len(outs):
            raise BadArgumentsError(
                f"the step makes {len(results)} result(s) but 'out' names {len(outs)}",
                hint="give 'out' a list with one name per result",
            )
        for name, value in zip(outs, results):
            self.bindings[name] = as_tensor(value)
        return outs


def _swap(txn: Transaction, target: Tensor, result: Tensor) -> bool:
    """An assign without copies, when nothing can tell: the result is a fresh array that
    no name, grad or view shares (the expression made it), of the target's dtype, shape
    and layout, and the target's own array is held by nothing but the target (no view, no
    other name, no saved node); the target then takes the result's array and the
    transaction keeps the old one for a rollback. Returns False, having done nothing,
    when the ordinary write must run."""
    if result is target or target._view is not None or target._fw is not None:
        return False
    old, new = target._data, result._data
    if (
        result._fw is not None
        or type(old) is not np.ndarray
        or type(new) is not np.ndarray
        or new.base is not None
        or (old.base is not None and not _sole_view(old))
        or new.dtype != old.dtype
        or new.shape != old.shape
        or new.strides != old.strides
        or not new.flags.writeable
        # each array held by its tensor, here and as the argument; the result tensor by
        # run_step, here and as the argument: any more is a name, a grad, a view, a node
        or sys.getrefcount(old) != 3
        or sys.getrefcount(new) != 3
        or sys.getrefcount(result) != 3
    ):
        return False
    target._check_inplace()
    txn.swap_in(target, new)
    return True


def _sole_view(arr: np.ndarray) -> bool:
    """Whether ``arr`` is the one view of an array nothing else holds, covering all of it:
    a decoded upload's (``frombuffer(...).astype(...).reshape(...)``), so the leaf's
    array is as good as owned. Any other view of that memory has the same ``base`` (numpy
    points every view at the owner), so it would show in the base's count."""
    base = arr.base
    return (
        type(base) is np.ndarray
        and base.base is None
        and base.nbytes == arr.nbytes
        # held by ``arr`` and by this frame's ``base`` (and getrefcount's argument)
        and sys.getrefcount(base) == 3
    )


@lru_cache(maxsize=4096)
def arity_error(op: str, positional: int, keywords: tuple[str, ...]) -> str | None:
    """Why ``op`` cannot take this many positional arguments and these keywords, or None.

    Binding depends only on the count and the names, not the values, so the answer is
    cached: ``Signature.bind`` costs more than a small op itself."""
    try:
        OPS[op].signature.bind(*([None] * positional), **dict.fromkeys(keywords))
    except TypeError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=4096)
def _plain_op(op: str, positional: int, tensors: int) -> tuple[Callable[..., Any], bool] | None:
    """For a call of ``op`` on ``positional`` names and numbers (``tensors`` of them
    names): its function and ``_may_grow``'s answer for that form; None when the op is
    unknown or the arity is wrong (the general path reports it), or when it draws random
    numbers or writes arguments in place (the general path records those first)."""
    spec = OPS.get(op)
    if spec is None or arity_error(op, positional, ()) is not None or draws(op) or spec.writes:
        return None
    if spec.binding is not None and tensors < positional:  # numbers where it wants Tensors
        return None
    return spec.fn, spec.estimate is not None or spec.work is not None or tensors >= 2


@lru_cache(maxsize=4096)
def _generic(op: str) -> bool:
    """Whether ``op`` is registered with neither an ``estimate`` nor a ``work`` of its own
    (its estimate is then the broadcast of its tensor arguments)."""
    spec = OPS.get(op)
    return spec is not None and spec.estimate is None and spec.work is None


@lru_cache(maxsize=1024)
def draws(op: str) -> bool:
    """Whether ``op`` draws random numbers: it takes a ``generator`` (randn, rand_like, ...),
    which steps fill with the session's own."""
    return "generator" in OPS[op].signature.parameters


@lru_cache(maxsize=4096)
def parse_expr(text: str, max_length: int) -> expr.Node:
    """Parsed trees are immutable, and a training loop sends the same few expressions."""
    return expr.parse(text, max_length=max_length, ops=OPS)


class _Env:
    """What expressions see: the executor's tensors, grads and ops."""

    def __init__(self, ex: Executor) -> None:
        self.ex = ex

    def tensor(self, name: str, pos: expr.Pos) -> Tensor:
        try:
            return self.ex.lookup(name)
        except ServiceError as exc:
            exc.extra["position"] = {"line": pos.line, "col": pos.col}
            raise

    def grad(self, name: str, pos: expr.Pos) -> Tensor:
        t = self.tensor(name, pos)
        g = grad_of(t)
        if g is None:
            why = (
                "it is not a leaf and retain_grad() was not called"
                if not (t.is_leaf or t.retains_grad)
                else "no backward has reached it yet (or it was zeroed with set_to_none)"
            )
            raise BadArgumentsError(
                f"{name}.grad is None: {why} (line {pos.line}, column {pos.col})",
                position={"line": pos.line, "col": pos.col},
            )
        return g

    def data(self, name: str, pos: expr.Pos) -> Tensor:
        """``name.data``: the same values without history (PyTorch's ``detach()``)."""
        return self.tensor(name, pos).detach()

    def call(
        self, op: str, args: list[Any], kwargs: dict[str, Any], pos: expr.Pos, method: bool
    ) -> Any:
        args = [_index_arg(a) if op == "getitem" and i == 1 else a for i, a in enumerate(args)]
        if op == "getitem" and _is_multi(args[0]):  # ``svd(A)[1]``: Python's tuple index
            return _pick(args[0], args[1], pos)
        try:
            return self.ex.call(op, args, kwargs, method=method)
        except UnknownOpError as exc:
            exc.extra.setdefault("position", {"line": pos.line, "col": pos.col})
            raise


def _operands(exc: EngineError, args: list[Any]) -> None:
    """The tensor operands' shapes and dtypes, for the hint of a mismatch (HINTS)."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) >= 2:
        exc.context.setdefault("shapes", " and ".join(str(tuple(t.shape)) for t in tensors))
        exc.context.setdefault("dtypes", " and ".join(str(t.dtype) for t in tensors))


def _index_arg(index: Any) -> Any:
    """A list inside an index (``x[[0, 2]]``) selects along a dimension: an int64 tensor."""
    if isinstance(index, list) and all(isinstance(i, int) for i in index):
        is_mask = bool(index) and all(isinstance(i, bool) for i in index)
        return Tensor(np.array(index, dtype=np.bool_ if is_mask else np.int64))
    if isinstance(index, tuple):
        return tuple(_index_arg(i) for i in index)
    return index


def _pick(results: tuple[Tensor, ...] | list[Tensor], index: Any, pos: expr.Pos) -> Any:
    """One result of a multi-result call, indexed as PyTorch's tuple (an int, or a slice)."""
    where = f" (line {pos.line}, column {pos.col})"
    if isinstance(index, slice):
        return tuple(results[index])
    if isinstance(index, bool) or not isinstance(index, int):
        raise BadArgumentsError(
            f"tuple indices must be integers or slices, not {type(index).__name__}{where}",
            position={"line": pos.line, "col": pos.col},
        )
    if not -len(results) <= index < len(results):
        raise IndexOutOfRangeError(f"tuple index out of range{where}")
    return results[index]


def _is_multi(result: Any) -> bool:
    return (
        isinstance(result, tuple | list)
        and bool(result)
        and all(isinstance(r, Tensor) for r in result)
    )


def as_tensor(value: Any) -> Tensor:
    """A step's result as a tensor: numbers and number lists become constants."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool | int | float | list | tuple) and not _holds_tensor(value):
        try:
            return engine.tensor(value)
        except EngineError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise BadArgumentsError(f"the result is not a tensor: {exc}") from None
    raise BadArgumentsError(
        f"the step's result is a {type(value).__name__}, not a tensor", hint="check the expression"
    )


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return any(_holds_tensor(v) for v in value)
    return isinstance(value, Tensor)
