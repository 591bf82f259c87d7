"""``vmap``: a function of one sample run on a batch, batched op by op.

Entering a vmap pushes a level and sets the dispatcher (``engine.dispatch``);
inputs become ``BatchedTensor``s (batch dim moved first), each op on them runs
its family's batching rule (``rules.RULES``), and an op without one runs once
per sample and is stacked (correct, slower; a warning names it). Random ops
follow ``randomness``; an in-place write of a batch into an unbatched tensor is
refused as torch.func refuses it.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..dispatch import CUSTOM_FUNCTION, batching
from ..errors import BadArgumentsError, EngineError
from ..registry import OPS
from ..tensor import Tensor
from . import pytree
from .batched import BatchedTensor, Level, levels, new_level, physical, top_level, unwrap, wrap
from .custom_vmap import apply_batched
from .rules import FALLBACK, RULES


class VmapError(EngineError, ValueError):
    """A vmap given arguments it cannot map over (PyTorch raises ValueError)."""

    code = "vmap_error"


class RandomnessError(EngineError):
    code = "vmap_randomness"


class InplaceBatchError(EngineError):
    """An in-place write of a batch into a tensor that holds one sample."""

    code = "vmap_inplace"


RANDOM_OPS = frozenset(
    [
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "bernoulli",
        "normal",
        "dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
        "bernoulli_",
        "normal_",
        "uniform_",
    ]
)
FACTORIES = frozenset(["rand", "randn", "randint"])
RANDOMNESS_MESSAGE = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation "
    "out of vmap"
)
INPLACE_MESSAGE = (
    "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
    "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
    "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
    "use out-of-place operators instead of inplace arithmetic. If said operator is being "
    "called inside the PyTorch framework, please file a bug report instead."
)
FALLBACK_WARNING = (
    "There is a performance drop because we have not yet implemented the batching rule for "
    "{name}. vmap runs it once per sample and stacks the results."
)


def _name(func: Any) -> str:
    if hasattr(func, "__name__"):
        return str(func.__name__)
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _bind(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    """The call bound to the op's signature, with PyTorch's spellings normalized
    (``axis=``, sizes one by one)."""
    sig = OPS[name].signature
    kwargs = dict(kwargs)
    for alias, real in (("axis", "dim"), ("keepdims", "keepdim")):
        if alias in kwargs and alias not in sig.parameters:
            kwargs[real] = kwargs.pop(alias)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        bound = sig.bind(args[0], tuple(args[1:]), **kwargs)
    bound.apply_defaults()
    for alias in ("axis", "keepdims"):  # numpy-named parameters the op declares itself
        if alias in bound.arguments and bound.arguments[alias] is None:
            del bound.arguments[alias]
    return bound


def dispatch(name: str, call: Callable[..., Any], args: tuple[Any, ...], kw: dict) -> Any:
    """Run op ``name`` on possibly batched arguments (the vmap dispatcher)."""
    level = top_level((args, kw))
    if name in RANDOM_OPS:
        return _random(name, call, args, kw, level)
    if level is None:
        return call(*args, **kw)
    if name == CUSTOM_FUNCTION:
        return apply_batched(args[0], args[1:], kw, level)
    if name.endswith("_") and name not in OPS and name[:-1] in OPS:
        return _inplace(name[:-1], call, args, kw, level)
    rule = RULES.get(name)
    if rule is not None:
        out = rule(name, level, _bind(name, args, kw))
        if out is not FALLBACK:
            return wrap(out, level)
    return _loop(name, call, args, kw, level)


def _loop(
    name: str, call: Callable[..., Any], args: tuple[Any, ...], kw: dict, level: Level
) -> Any:
    """The op once per sample, the results stacked: the fallback for ops (or calls)
    no rule batches."""
    warnings.warn(FALLBACK_WARNING.format(name=name), UserWarning, stacklevel=3)
    leaves, spec = pytree.flatten((args, kw))
    select = OPS["select"].fn
    results = []
    for i in range(level.size):
        sample = [select(x.value, 0, i) if unwrap(x, level)[1] else x for x in leaves]
        a, k = pytree.unflatten(sample, spec)
        # a sample still batched by an outer vmap goes through the op again (its level
        # then batches it); the plain call would see a BatchedTensor
        outer = name in OPS and any(isinstance(x, BatchedTensor) for x in sample)
        results.append((OPS[name].fn if outer else call)(*a, **k))
    return _stack_results(results, level)


def _stack_results(results: list[Any], level: Level) -> Any:
    first = results[0]
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # sort's (values, indices)
        return type(first)(*_stack_results([tuple(r) for r in results], level))
    flat = [pytree.flatten(r) for r in results]
    out = []
    for j, first in enumerate(flat[0][0]):
        column = [f[0][j] for f in flat]
        if isinstance(first, Tensor):
            out.append(BatchedTensor(OPS["stack"].fn(column, 0), level))
        else:
            out.append(first)
    return pytree.unflatten(out, flat[0][1])


def _random(name: str, call: Callable[..., Any], args: Any, kw: dict, level: Level | None) -> Any:
    """Random ops under vmap: refused ('error'), one draw for the whole batch
    ('different', each sample its own values) or one sample's draw shared ('same')."""
    current = levels.get()
    if not current:
        return call(*args, **kw)
    inner = current[-1]
    if name.startswith("dropout") and not _bind(name, args, kw).arguments.get("training", True):
        return call(*args, **kw) if level is None else dispatch_plain(name, args, kw, level)
    if inner.randomness == "error":
        raise RandomnessError(RANDOMNESS_MESSAGE)
    if inner.randomness == "same":
        if level is None:
            return call(*args, **kw)
        if name.startswith("dropout") or name.endswith("_like"):
            sample_shape = tuple(args[0].shape)
            ones = OPS["ones"].fn(sample_shape, dtype=args[0].dtype)
            if name.endswith("_like"):
                return call(ones, *args[1:], **kw)
            mask = call(ones, *args[1:], **kw)
            return OPS["mul"].fn(args[0], mask)
        return _loop(name, call, args, kw, level)
    # different
    if level is None and name in FACTORIES:
        bound = _bind(name, args, kw)
        size = bound.arguments.get("size", ())
        if len(size) == 1 and isinstance(size[0], list | tuple):
            size = tuple(size[0])
        extra = {k: v for k, v in bound.arguments.items() if k != "size"}
        return BatchedTensor(call((inner.size, *size), **extra), inner)
    if level is None:
        return call(*args, **kw)
    if name.endswith("_like") or name.startswith("dropout") or name == "bernoulli":
        value, _ = unwrap(args[0], level)
        return BatchedTensor(call(value, *args[1:], **kw), level)
    return _loop(name, call, args, kw, level)


def dispatch_plain(name: str, args: Any, kw: dict, level: Level) -> Any:
    """An op that is the identity on values here (dropout in eval): run on the value."""
    value, _ = unwrap(args[0], level)
    return BatchedTensor(OPS[name].fn(value, *args[1:], **kw), level)


def _inplace(
    name: str, call: Callable[..., Any], args: tuple[Any, ...], kw: dict, level: Level
) -> Any:
    """``x.op_(...)`` under vmap: the batched result written into x's batch; refused when
    x is not batched here but an argument is (its samples cannot all fit in x)."""
    self = args[0]
    if not unwrap(self, level)[1]:
        if name == "add":  # PyTorch writes add_ physically: its broadcast message
            shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
            want = [level.size, *np.broadcast_shapes(*shapes)]
            raise InplaceBatchError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape {want}"
            )
        raise InplaceBatchError(INPLACE_MESSAGE)
    result = OPS[name].fn(*args, **kw)
    self.value.copy_(physical(result, level, tuple(self.shape)))
    return self


def _check_in_dim(func: Callable[..., Any], in_dims: Any, arg: Any, in_dim: Any) -> None:
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
    if in_dim is None:
        return
    if not isinstance(in_dim, int):
        raise VmapError(
            where + f"Got in_dim={in_dim} for an input but in_dim must be either "
            "an integer dimension or None."
        )
    if not isinstance(arg, Tensor):
        raise VmapError(
            where + f"Got in_dim={in_dim} for an input but the input is of type "
            f"{type(arg)}. We cannot vmap over non-Tensor arguments, please use None as "
            "the respective in_dim"
        )
    n = arg.dim()
    if not -n <= in_dim < n:
        raise VmapError(
            where + f"Got in_dim={in_dim} for some input, but that input is a Tensor of "
            f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}."
        )


def _batch_inputs(
    func: Callable[..., Any], in_dims: Any, args: tuple[Any, ...]
) -> tuple[list[Any], list[Any], pytree.Spec, int]:
    if not isinstance(in_dims, int | tuple) and in_dims is not None:
        raise VmapError(
            f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to "
            "be int or a (potentially nested) tuple matching the structure of inputs, got: "
            f"{type(in_dims)}."
        )
    if not args:
        raise VmapError(
            f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, "
            "or you are trying to vmap over a function with no inputs. The latter is "
            "unsupported."
        )
    flat, spec = pytree.flatten(args)
    try:
        dims = pytree.broadcast_prefix(in_dims, args, "")
    except ValueError:
        _, dspec = pytree.flatten(in_dims)
        raise VmapError(
            f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
            "compatible with the structure of `inputs`. in_dims has structure "
            f"{dspec} but inputs has structure {spec}."
        ) from None
    for arg, d in zip(flat, dims):
        _check_in_dim(func, in_dims, arg, d)
    sizes = [arg.shape[d] for arg, d in zip(flat, dims) if d is not None]
    if not sizes:
        raise VmapError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise VmapError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, "
            f"got sizes {sizes} for the mapped dimension"
        )
    return flat, dims, spec, sizes[0]


def _unbatch(func: Callable[..., Any], out: Any, level: Level, out_dim: Any) -> Any:
    name = _name(func)
    if out_dim is None and not isinstance(out, Tensor):
        return out  # PyTorch passes a non-tensor output through where out_dim is None
    if not isinstance(out, Tensor):
        raise VmapError(
            f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}. "
            "Did you mean to set out_dims= to None for output?"
        )
    value, batched = unwrap(out, level)
    if out_dim is None:
        if batched:
            raise VmapError(
                f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None"
            )
        return out
    if not batched:
        value = OPS["expand"].fn(OPS["unsqueeze"].fn(out, 0), (level.size, *out.shape))
    n = value.ndim
    if not isinstance(out_dim, int) or not -n <= out_dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
            f"{out_dim})"
        )
    return OPS["movedim"].fn(value, 0, out_dim) if out_dim % n else value


def _run(
    func: Callable[..., Any],
    in_dims: Any,
    out_dims: Any,
    randomness: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    chunk: tuple[int, int] | None = None,
) -> Any:
    flat, dims, spec, size = _batch_inputs(func, in_dims, args)
    movedim, narrow = OPS["movedim"].fn, OPS["narrow"].fn
    if chunk is not None:
        start, length = chunk
        flat = [narrow(x, d, start, length) if d is not None else x for x, d in zip(flat, dims)]
        size = length
    level = new_level(size, randomness)
    token_levels = levels.set((*levels.get(), level))
    token_hook = batching.set(dispatch)
    try:
        batched = [
            x if d is None else BatchedTensor(movedim(x, d, 0) if d % x.dim() else x, level)
            for x, d in zip(flat, dims)
        ]
        out = func(*pytree.unflatten(batched, spec), **kwargs)
        leaves, ospec = pytree.flatten(out)
        try:
            try:
                odims = pytree.broadcast_prefix(out_dims, out, "")
            except ValueError:
                # out_dims=(d,) for a function returning one Tensor: PyTorch reads it as d
                if not (
                    isinstance(out, Tensor) and isinstance(out_dims, tuple) and len(out_dims) == 1
                ):
                    raise
                odims = pytree.broadcast_prefix(out_dims[0], out, "")
        except ValueError:
            raise VmapError(
                f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                "compatible with the structure of `outputs`. out_dims has structure "
                f"{pytree.flatten(out_dims)[1]} but outputs has structure {ospec}."
            ) from None
        results = [_unbatch(func, o, level, d) for o, d in zip(leaves, odims)]
    finally:
        batching.reset(token_hook)
        levels.reset(token_levels)
    return pytree.unflatten(results, ospec), odims


def _check_out_dims(func: Callable[..., Any], out_dims: Any) -> None:
    """PyTorch's check before the function runs: every out_dim an int or None."""
    if all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in _leaves(out_dims)
    ):
        return
    raise VmapError(
        f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
        "python collection of ints representing where in the outputs the vmapped dimension "
        "should appear."
    )


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, tuple | list):
        return [leaf for el in tree for leaf in _leaves(el)]
    if isinstance(tree, dict):
        return [leaf for el in tree.values() for leaf in _leaves(el)]
    return [tree]


def vmap(
    func: Callable[..., Any],
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """``torch.func.vmap``: ``func`` of one sample mapped over the ``in_dims`` of its
    inputs, results stacked along ``out_dims``; ``chunk_size`` samples at a time."""
    if randomness not in ("error", "different", "same"):
        raise BadArgumentsError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )
    if chunk_size is not None and chunk_size <= 0:
        raise VmapError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _check_out_dims(func, out_dims)
        if chunk_size is None:
            return _run(func, in_dims, out_dims, randomness, args, kwargs)[0]
        size = _batch_inputs(func, in_dims, args)[3]
        parts = []
        odims: list[Any] = []
        for start in range(0, size, chunk_size):
            part = (start, min(chunk_size, size - start))
            out, odims = _run(func, in_dims, out_dims, randomness, args, kwargs, part)
            parts.append(out)
        if len(parts) == 1:
            return parts[0]
        flat = [pytree.flatten(p) for p in parts]
        cat = OPS["cat"].fn
        joined = [
            cat([f[0][j] for f in flat], d) if d is not None else flat[0][0][j]
            for j, d in enumerate(odims)
        ]
        return pytree.unflatten(joined, flat[0][1])

    return wrapped
