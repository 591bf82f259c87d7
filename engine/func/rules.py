"""Batching rules, one per op family: how an op runs on a whole batch at once.

A rule gets the op (its registered, dispatching function), the level being
unwrapped and the call's arguments bound to the op's signature; it returns the
batch result with the batch dim first (``batched.wrap`` marks it), or
``FALLBACK`` when this call is outside what the family handles (then vmap runs
the op once per sample). The families: elementwise ops broadcast (pad each
batch so samples line up at their right ends), ops with ``dim`` arguments shift
them past the batch dim, views prepend the batch size, matmul/linear/conv/pool/
norm/loss ops fold the batch into a dim the op already batches over.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..registry import OPS
from ..tensor import Tensor
from .batched import Level, logical_ndim, pad_to, physical, unwrap

FALLBACK = object()

Rule = Callable[[str, Level, inspect.BoundArguments], Any]


def _fn(name: str) -> Callable[..., Any]:
    return OPS[name].fn


def _call(op: Callable[..., Any], bound: inspect.BoundArguments) -> Any:
    return op(*bound.args, **bound.kwargs)


def _norm_dim(d: int, ndim: int) -> int:
    """A sample's dim as the batch's (one more, negatives resolved)."""
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
        )
    return (d % n) + 1


def _reshape(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    return _fn("reshape")(x, tuple(shape))


def _batch_first(level: Level, value: Any, batched: bool, shape: tuple[int, ...]) -> Tensor:
    """``value`` as a batch of ``shape`` samples (expanded when not batched)."""
    if batched:
        return value
    return _fn("expand")(_fn("unsqueeze")(value, 0), (level.size, *shape))


# -- elementwise ------------------------------------------------------------------
def elementwise(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """Pointwise and broadcasting ops: pad every batched tensor argument to the
    samples' common rank; unbatched ones broadcast against the batch as they are."""
    op = _fn(name)
    args = bound.arguments
    ranks = [logical_ndim(v, level) for v in args.values() if isinstance(v, Tensor)]
    ndim = max(ranks, default=0)
    for k, v in args.items():
        value, batched = unwrap(v, level)
        if batched:
            args[k] = pad_to(value, ndim)
        elif isinstance(v, list | tuple) and any(unwrap(e, level)[1] for e in v):
            return FALLBACK
    return _call(op, bound)


# -- dims ---------------------------------------------------------------------------
def _shift(dim: Any, ndim: int) -> Any:
    if isinstance(dim, list | tuple):
        return tuple(_norm_dim(d, ndim) for d in dim)
    return _norm_dim(dim, ndim)


def reduction(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """Ops over ``dim`` (or all dims when it is None/empty): the dims move past the
    batch; "all dims" means all of a sample's."""
    op = _fn(name)
    args = bound.arguments
    first = next(iter(args))
    value, batched = unwrap(args[first], level)
    if not batched or any(unwrap(v, level)[1] for k, v in args.items() if k != first):
        return FALLBACK
    ndim = value.ndim - 1
    if ndim == 0:
        return FALLBACK
    dim = args.get("dim", None)
    args[first] = value
    if dim is None or (isinstance(dim, tuple | list) and not dim):
        if "dim" not in bound.signature.parameters:
            return FALLBACK
        if name in ("sum", "mean", "amax", "amin", "nansum"):
            args["dim"] = tuple(range(1, ndim + 1))
            return _call(op, bound)
        if args.get("keepdim") or name in ("median", "var_mean", "std_mean"):
            return FALLBACK
        flat = _reshape(value, (value.shape[0], -1))
        if name in ("max", "min"):  # all dims: one value, no indices
            return _fn("amax" if name == "max" else "amin")(flat, 1)
        args[first] = flat
        args["dim"] = 1
        return _call(op, bound)
    args["dim"] = _shift(dim, ndim)
    return _call(op, bound)


def dim_op(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """Ops with a required ``dim`` and one batched input (softmax, cumsum, flip, ...):
    the dim moves past the batch."""
    op = _fn(name)
    args = bound.arguments
    first = next(iter(args))
    value, batched = unwrap(args[first], level)
    if not batched or any(unwrap(v, level)[1] for k, v in args.items() if k != first):
        return FALLBACK
    ndim = value.ndim - 1
    if ndim == 0:
        return FALLBACK
    args[first] = value
    for key in ("dim", "dims", "dim0", "dim1", "start_dim", "end_dim"):
        if key in args and args[key] is not None:
            args[key] = _shift(args[key], ndim)
    return _call(op, bound)


def index_dim(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """gather/take_along_dim/index_select: input and index batched alike (an unbatched
    one is expanded for gather), the dim past the batch."""
    op = _fn(name)
    args = bound.arguments
    x, xb = unwrap(args["input"], level)
    idx, ib = unwrap(args["index"], level)
    name = name
    if name == "index_select":
        if ib or not xb:
            return FALLBACK
        return op(x, _norm_dim(args["dim"], x.ndim - 1), idx)
    xs = tuple(x.shape[1:]) if xb else tuple(x.shape)
    ishape = tuple(idx.shape[1:]) if ib else tuple(idx.shape)
    dim = _norm_dim(args["dim"], len(xs))
    return op(_batch_first(level, x, xb, xs), dim, _batch_first(level, idx, ib, ishape))


# -- views --------------------------------------------------------------------------
def view(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """reshape/view/expand: the batch size goes in front of the new shape."""
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    if not batched:
        return FALLBACK
    name = name
    shape = args.get("shape", args.get("sizes", ()))
    if len(shape) == 1 and isinstance(shape[0], list | tuple):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if name == "expand":
        return _fn("expand")(pad_to(value, len(shape)), (value.shape[0], *shape))
    return _fn(name)(value, (value.shape[0], *shape))


def view_as(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """view_as/reshape_as/expand_as: the other tensor gives a sample's shape."""
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    other = args["other"]
    target = tuple(other.shape)
    if not batched:
        value = _fn("unsqueeze")(value, 0)
        value = _fn("expand")(value, (level.size, *value.shape[1:]))
    if name == "expand_as":
        return _fn("expand")(pad_to(value, len(target)), (level.size, *target))
    return _fn("reshape")(value, (value.shape[0], *target))


def permute(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    if not batched:
        return FALLBACK
    dims = args["dims"]
    if len(dims) == 1 and isinstance(dims[0], list | tuple):
        dims = tuple(dims[0])
    ndim = value.ndim - 1
    return _fn("permute")(value, (0, *(_norm_dim(d, ndim) for d in dims)))


def squeeze(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    if not batched:
        return FALLBACK
    dim = args.get("dim")
    ndim = value.ndim - 1
    if dim is None:
        shape = [s for s in value.shape[1:] if s != 1]
        return _fn("reshape")(value, (value.shape[0], *shape))
    if ndim == 0:
        return value
    return _fn("squeeze")(value, _shift(dim, ndim))


def unsqueeze(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    if not batched:
        return FALLBACK
    return _fn("unsqueeze")(value, _norm_dim(args["dim"], value.ndim))


def movedim(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    op = _fn(name)
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    if not batched:
        return FALLBACK
    ndim = value.ndim - 1
    return op(value, _shift(args["source"], ndim), _shift(args["destination"], ndim))


def unflatten(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    op = _fn(name)
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    if not batched:
        return FALLBACK
    return op(value, _norm_dim(args["dim"], value.ndim - 1), args["sizes"])


def getitem(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """Indexing with a batched tensor and an unbatched index: a full slice in front.
    Several advanced indices (numpy moves them to the front) fall back."""
    op = _fn(name)
    args = bound.arguments
    value, batched = unwrap(args["input"], level)
    index = args["index"]
    items = index if isinstance(index, tuple) else (index,)
    if not batched or any(unwrap(i, level)[1] for i in items):
        return FALLBACK
    advanced = [i for i in items if isinstance(i, Tensor | list) or hasattr(i, "__array__")]
    if len(advanced) > 1:
        return FALLBACK
    return op(value, (slice(None), *items))


def joining(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """cat/stack: every tensor a full batch, the dim past the batch."""
    op = _fn(name)
    args = bound.arguments
    tensors = list(args["tensors"])
    ranks = [logical_ndim(t, level) for t in tensors]
    shapes = [tuple(t.shape) for t in tensors]
    values = [physical(t, level, s) for t, s in zip(tensors, shapes)]
    ndim = max(ranks, default=0) + (1 if name == "stack" else 0)
    if name == "cat":
        values = [v for v, s in zip(values, shapes) if s != (0,)]  # PyTorch skips empty 1-D
    return op(values, _norm_dim(args.get("dim", 0), ndim))


# -- products ---------------------------------------------------------------------
def matmul(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """matmul/mm/bmm/mv/dot: vectors become matrices, batches padded to the samples'
    common rank (numpy's matmul broadcasts the rest), the added dims dropped after."""
    names = list(bound.arguments)
    a, ab = unwrap(bound.arguments[names[0]], level)
    b, bb = unwrap(bound.arguments[names[1]], level)
    la = a.ndim - 1 if ab else a.ndim
    lb = b.ndim - 1 if bb else b.ndim
    if la == 0 or lb == 0:
        return FALLBACK
    if name == "bmm" and (la != 3 or lb != 3):
        return FALLBACK
    mm = _fn("matmul")
    unsq = _fn("unsqueeze")
    drop: list[int] = []
    if la == 1:
        a = unsq(a, -2)
        drop.append(-2)
        la = 2
    if lb == 1:
        b = unsq(b, -1)
        drop.append(-1)
        lb = 2
    ndim = max(la, lb)
    if ab:
        a = pad_to(a, ndim)
    if bb:
        b = pad_to(b, ndim)
    if not ab and not bb:
        return FALLBACK
    out = mm(a, b)
    if not ab and la > ndim - 0 and out.ndim < ndim + 1:
        return FALLBACK
    for d in sorted(drop):
        out = _fn("squeeze")(out, d)
    return out


def linear(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """linear: a batched input goes through as it is (linear takes any leading dims);
    a batched weight or bias is a batched matmul and add."""
    op = _fn(name)
    args = bound.arguments
    x, xb = unwrap(args["input"], level)
    w, wb = unwrap(args["weight"], level)
    bias = args.get("bias")
    b, bbat = unwrap(bias, level)
    if not wb and not bbat:
        return op(x, w, b)
    xt = args["input"]
    out = _fn("matmul")(xt, _fn("transpose")(args["weight"], -1, -2))
    if bias is not None:
        out = _fn("add")(out, bias)
    value, batched = unwrap(out, level)
    return value if batched else _batch_first(level, value, False, tuple(value.shape))


def addmm(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """addmm/addmv/baddbmm: ``beta * input + alpha * (mat1 @ mat2)`` from the batched
    matmul and elementwise rules."""
    args = bound.arguments
    names = list(args)
    prod = _fn("matmul")(args[names[1]], args[names[2]])
    beta, alpha = args.get("beta", 1.0), args.get("alpha", 1.0)
    out = _fn("add")(_fn("mul")(args[names[0]], beta), _fn("mul")(prod, alpha))
    value, batched = unwrap(out, level)
    return value if batched else FALLBACK


# -- layers -------------------------------------------------------------------------
def _fold(value: Tensor, spatial: int) -> tuple[Tensor, tuple[int, ...]]:
    """A batch of samples ``(N, C, *spatial)`` or ``(C, *spatial)`` as one batch the
    layer takes: the batch dim folded into N (or standing for it)."""
    lead = tuple(value.shape[: value.ndim - spatial - 1])
    if len(lead) == 1:
        return value, lead
    return _reshape(value, (-1, *value.shape[len(lead) :])), lead


def _unfold(out: Tensor, lead: tuple[int, ...]) -> Tensor:
    if len(lead) == 1:
        return out
    return _reshape(out, (*lead, *out.shape[1:]))


def conv(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """conv1d/conv2d: a batched input folds into N; a batched weight (per-sample
    weights, as per-sample gradients make) is a grouped conv with one group per
    sample (batch moved into channels), as functorch does."""
    op = _fn(name)
    args = bound.arguments
    spatial = 1 if name == "conv1d" else 2
    x, xb = unwrap(args["input"], level)
    w, wb = unwrap(args["weight"], level)
    b, bb = unwrap(args.get("bias"), level)
    rest = {k: args[k] for k in ("stride", "padding", "dilation")}
    groups = args.get("groups", 1)
    if isinstance(rest["padding"], str):
        return FALLBACK
    if not wb and not bb:
        if not xb:
            return FALLBACK
        folded, lead = _fold(x, spatial)
        return _unfold(op(folded, w, b, groups=groups, **rest), lead)
    B = level.size
    xs = tuple(x.shape[1:]) if xb else tuple(x.shape)
    unbatched_sample = len(xs) == spatial + 1
    x = _batch_first(level, x, xb, xs)
    if unbatched_sample:
        x = _fn("unsqueeze")(x, 1)
    n, c = x.shape[1], x.shape[2]
    ws = tuple(w.shape[1:]) if wb else tuple(w.shape)
    w = _batch_first(level, w, wb, ws)
    # (B, N, C, *S) -> (N, B*C, *S); (B, O, C/g, *K) -> (B*O, C/g, *K)
    xg = _reshape(_fn("movedim")(x, 0, 1), (n, B * c, *x.shape[3:]))
    wg = _reshape(w, (B * ws[0], *ws[1:]))
    bg = None
    if b is not None:
        bg = _reshape(_batch_first(level, b, bb, (ws[0],)), (B * ws[0],))
    out = op(xg, wg, bg, groups=B * groups, **rest)
    out = _fn("movedim")(_reshape(out, (n, B, ws[0], *out.shape[2:])), 1, 0)
    if unbatched_sample:
        out = _fn("squeeze")(out, 1)
    return out


def pool(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """Pooling: a batched input folds into N; the window arguments are a sample's."""
    op = _fn(name)
    args = bound.arguments
    x, xb = unwrap(args["input"], level)
    if not xb:
        return FALLBACK
    spatial = 1 if name.endswith("1d") else 2
    folded, lead = _fold(x, spatial)
    args["input"] = folded
    out = _call(op, bound)
    if isinstance(out, tuple):
        return tuple(_unfold(o, lead) for o in out)
    return _unfold(out, lead)


def layer_norm(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """layer_norm normalizes trailing dims: a batched input goes through; batched
    affine parameters are applied after, elementwise."""
    op = _fn(name)
    args = bound.arguments
    x, xb = unwrap(args["input"], level)
    w, b = args.get("weight"), args.get("bias")
    if not xb:
        return FALLBACK
    if not unwrap(w, level)[1] and not unwrap(b, level)[1]:
        return op(x, args["normalized_shape"], w, b, args.get("eps", 1e-5))
    out = op(x, args["normalized_shape"], None, None, args.get("eps", 1e-5))
    return _affine(out, level, w, b)


def _affine(value: Tensor, level: Level, w: Any, b: Any, channel_dim: int | None = None) -> Any:
    """``value * w + b`` for a batch value, w/b over trailing dims or one channel dim."""
    out: Any = value
    for p, fn in ((w, "mul"), (b, "add")):
        if p is None:
            continue
        pv, pb = unwrap(p, level)
        if channel_dim is not None:
            trailing = out.ndim - 1 - channel_dim - 1
            shape = (*pv.shape, *([1] * trailing))
            pv = _reshape(pv, shape)
        pv = pad_to(pv, out.ndim - 1) if pb else pv
        out = _fn(fn)(out, pv)
    return out


def group_norm(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """group_norm of samples ``(N, C, ...)``: the batch folds into N."""
    op = _fn(name)
    args = bound.arguments
    x, xb = unwrap(args["input"], level)
    if not xb or x.ndim < 3:
        return FALLBACK
    w, b = args.get("weight"), args.get("bias")
    affine_batched = unwrap(w, level)[1] or unwrap(b, level)[1]
    folded = _reshape(x, (-1, *x.shape[2:]))
    g, eps = args["num_groups"], args.get("eps", 1e-5)
    if not affine_batched:
        return _reshape(op(folded, g, w, b, eps), tuple(x.shape))
    out = _reshape(op(folded, g, None, None, eps), tuple(x.shape))
    return _affine(out, level, w, b, channel_dim=1)


def batch_norm(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """batch_norm of samples ``(N, C, ...)``: the batch moves into the channels, so
    each sample gets its own statistics (training) or all share the running ones
    (eval). Running stats updated in training would mix samples: falls back."""
    op = _fn(name)
    args = bound.arguments
    x, xb = unwrap(args["input"], level)
    rm, rv = args.get("running_mean"), args.get("running_var")
    training = args.get("training", False)
    if not xb or x.ndim < 3:
        return FALLBACK
    if any(unwrap(t, level)[1] for t in (rm, rv)):
        return FALLBACK
    w, b = args.get("weight"), args.get("bias")
    eps, momentum = args.get("eps", 1e-5), args.get("momentum", 0.1)
    B, n, c = x.shape[0], x.shape[1], x.shape[2]
    if training:
        if rm is not None or rv is not None:
            return FALLBACK
        folded = _reshape(_fn("movedim")(x, 0, 1), (n, B * c, *x.shape[3:]))
        out = op(folded, None, None, None, None, True, momentum, eps)
        out = _fn("movedim")(_reshape(out, (n, B, c, *x.shape[3:])), 1, 0)
    else:
        folded = _reshape(x, (B * n, c, *x.shape[3:]))
        out = _reshape(op(folded, rm, rv, None, None, False, momentum, eps), tuple(x.shape))
    return _affine(out, level, w, b, channel_dim=1)


# -- losses -------------------------------------------------------------------------
def _reduce(loss: Tensor, reduction: str, lead: int = 0) -> Tensor:
    """A batch of unreduced losses reduced per sample."""
    if reduction == "none":
        return loss
    dims = tuple(range(1, loss.ndim))
    if not dims:
        return loss
    return _fn("sum" if reduction == "sum" else "mean")(loss, dims)


def pointwise_loss(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """mse/l1/smooth_l1/huber/bce/bce_with_logits/soft_margin/kl_div: unreduced over
    full batches, then reduced per sample."""
    op = _fn(name)
    args = bound.arguments
    reduction = args.get("reduction", "mean")
    x = args["input"]
    shape = tuple(x.shape)
    for k, v in list(args.items()):
        if isinstance(v, Tensor) and k in ("input", "target"):
            args[k] = physical(v, level, shape)
        elif unwrap(v, level)[1]:
            return FALLBACK
    if reduction == "batchmean":
        args["reduction"] = "sum" if False else "none"
        loss = _call(op, bound)
        return _fn("div")(_reduce(loss, "sum"), shape[0] if shape else 1)
    args["reduction"] = "none"
    return _reduce(_call(op, bound), reduction)


def class_loss(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """cross_entropy/nll_loss with class targets: unreduced over the folded batch, then
    the mean over each sample's non-ignored targets."""
    op = _fn(name)
    args = bound.arguments
    x, xb = unwrap(args["input"], level)
    t, tb = unwrap(args["target"], level)
    reduction = args.get("reduction", "mean")
    if args.get("weight") is not None or args.get("label_smoothing", 0.0):
        return FALLBACK
    xs = tuple(x.shape[1:]) if xb else tuple(x.shape)
    ts = tuple(t.shape[1:]) if tb else tuple(t.shape)
    if len(ts) != len(xs) - 1 or t.dtype.kind not in "iu":
        return FALLBACK  # probabilities as targets
    x = _batch_first(level, x, xb, xs)
    t = _batch_first(level, t, tb, ts)
    B = level.size
    if xs and len(xs) >= 2:  # (N, C, ...) per sample
        fx = _reshape(x, (B * xs[0], *xs[1:]))
        ft = _reshape(t, (B * ts[0], *ts[1:]))
    else:
        fx, ft = x, t
    args["input"], args["target"], args["reduction"] = fx, ft, "none"
    loss = _call(op, bound)
    loss = _reshape(loss, (B, *ts))
    if reduction == "none":
        return loss
    dims = tuple(range(1, loss.ndim))
    total = _fn("sum")(loss, dims) if dims else loss
    if reduction == "sum":
        return total
    kept = _fn("ne")(t, args.get("ignore_index", -100))
    count = _fn("sum")(kept, dims) if dims else kept
    return _fn("div")(total, _fn("to")(count, loss.dtype))


# -- factories and casts ------------------------------------------------------------
def like(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    """zeros_like/ones_like/full_like/... and casts: the op on the batch value."""
    op = _fn(name)
    args = bound.arguments
    first = next(iter(args))
    value, batched = unwrap(args[first], level)
    if not batched or any(unwrap(v, level)[1] for k, v in args.items() if k != first):
        return FALLBACK
    args[first] = value
    return _call(op, bound)


def embedding(name: str, level: Level, bound: inspect.BoundArguments) -> Any:
    op = _fn(name)
    args = bound.arguments
    idx, ib = unwrap(args["input"], level)
    if not ib or unwrap(args["weight"], level)[1]:
        return FALLBACK
    args["input"] = idx
    return _call(op, bound)


ELEMENTWISE = [
    "abs",
    "absolute",
    "acos",
    "acosh",
    "add",
    "addcdiv",
    "addcmul",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "ceil",
    "celu",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "copysign",
    "cos",
    "cosh",
    "deg2rad",
    "digamma",
    "div",
    "divide",
    "elu",
    "eq",
    "erf",
    "erfc",
    "erfinv",
    "exp",
    "exp2",
    "expm1",
    "fix",
    "float_power",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "frac",
    "ge",
    "gelu",
    "greater",
    "greater_equal",
    "gt",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "heaviside",
    "hypot",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "isreal",
    "le",
    "leaky_relu",
    "lerp",
    "less",
    "less_equal",
    "lgamma",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logit",
    "logsigmoid",
    "lt",
    "masked_fill",
    "maximum",
    "minimum",
    "mish",
    "mul",
    "multiply",
    "nan_to_num",
    "ne",
    "neg",
    "negative",
    "not_equal",
    "polygamma",
    "positive",
    "pow",
    "rad2deg",
    "reciprocal",
    "relu",
    "relu6",
    "remainder",
    "round",
    "rsqrt",
    "rsub",
    "selu",
    "sgn",
    "sigmoid",
    "sign",
    "signbit",
    "silu",
    "sin",
    "sinc",
    "sinh",
    "softplus",
    "softshrink",
    "softsign",
    "sqrt",
    "square",
    "sub",
    "subtract",
    "tan",
    "tanh",
    "tanhshrink",
    "threshold",
    "true_divide",
    "trunc",
    "where",
    "xlogy",
    "clone",
    "contiguous",
    "detach",
]

REDUCTIONS = [
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "prod",
    "all",
    "any",
    "var",
    "std",
    "logsumexp",
    "norm",
    "nansum",
    "nanmean",
    "count_nonzero",
    "median",
    "var_mean",
    "std_mean",
]

DIM_OPS = [
    "softmax",
    "log_softmax",
    "softmin",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "flip",
    "transpose",
    "swapaxes",
    "swapdims",
    "select",
    "narrow",
    "flatten",
    "split",
    "chunk",
    "unbind",
    "roll",
    "diff",
]

LIKE = [
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand_like",
    "randn_like",
    "float",
    "double",
    "half",
    "long",
    "int",
    "bool",
    "short",
    "byte",
    "char",
    "to",
    "type_as",
]

RULES: dict[str, Rule] = {
    **{n: elementwise for n in ELEMENTWISE},
    **{n: reduction for n in REDUCTIONS},
    **{n: dim_op for n in DIM_OPS},
    **{n: like for n in LIKE},
    **{n: view for n in ("reshape", "view", "expand")},
    **{n: view_as for n in ("view_as", "reshape_as", "expand_as")},
    "permute": permute,
    "squeeze": squeeze,
    "unsqueeze": unsqueeze,
    "movedim": movedim,
    "moveaxis": movedim,
    "unflatten": unflatten,
    "getitem": getitem,
    "gather": index_dim,
    "take_along_dim": index_dim,
    "index_select": index_dim,
    "cat": joining,
    "concat": joining,
    "concatenate": joining,
    "stack": joining,
    **{n: matmul for n in ("matmul", "mm", "bmm", "mv", "dot")},
    "linear": linear,
    **{n: addmm for n in ("addmm", "addmv", "baddbmm")},
    "conv1d": conv,
    "conv2d": conv,
    **{
        n: pool
        for n in (
            "max_pool1d",
            "max_pool2d",
            "avg_pool1d",
            "avg_pool2d",
            "adaptive_avg_pool1d",
            "adaptive_avg_pool2d",
            "adaptive_max_pool2d",
        )
    },
    "layer_norm": layer_norm,
    "group_norm": group_norm,
    "batch_norm": batch_norm,
    "cross_entropy": class_loss,
    "nll_loss": class_loss,
    **{
        n: pointwise_loss
        for n in (
            "mse_loss",
            "l1_loss",
            "smooth_l1_loss",
            "huber_loss",
            "binary_cross_entropy",
            "binary_cross_entropy_with_logits",
            "soft_margin_loss",
            "kl_div",
        )
    },
    "embedding": embedding,
}
