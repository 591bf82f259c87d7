"""``ctc_loss``: Connectionist Temporal Classification, as ATen's CPU kernel computes it:
per sample the negative log-likelihood from the forward (alpha) recursion over the
blank-extended target, and its gradient from alpha and beta with PyTorch's formula
``exp(lp) - exp(log Σ_{s: l'(s)=c} α·β + nll - lp)`` (``CtcLossBackward0``). The
``mean`` reduction divides by the target lengths and averages, as ATen does."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import interrupt
from ..errors import BadArgumentsError, ShapeMismatchError
from ..function import Function
from ..registry import OPS, Const, register, sample
from ..tensor import Tensor
from ._tie import tie
from ._util import as_tensor
from .loss import _reduction


def _op(name: str) -> Any:
    return OPS[name].fn


def _lse(*xs: np.ndarray) -> np.ndarray:
    m = np.maximum.reduce(xs)
    safe = np.where(np.isfinite(m), m, 0.0)
    return np.where(m == -np.inf, -np.inf, safe + np.log(sum(np.exp(x - safe) for x in xs)))


def _one(lp: np.ndarray, ext: np.ndarray, t_len: int) -> tuple[float, np.ndarray]:
    """The NLL of one sample and its gradient ``(T, C)`` (times ``exp`` rules above)."""
    s_len = ext.shape[0]
    ninf = -np.inf
    skip = np.zeros(s_len, dtype=bool)
    if s_len > 2:
        skip[2:] = (ext[2:] != ext[:-2]) & (np.arange(2, s_len) % 2 == 1)
    emit = lp[:, ext]  # (T, S)
    alpha = np.full((t_len, s_len), ninf)
    alpha[0, 0] = emit[0, 0]
    if s_len > 1:
        alpha[0, 1] = emit[0, 1]
    for t in interrupt.checked(range(1, t_len)):
        prev = alpha[t - 1]
        a1 = np.concatenate(([ninf], prev[:-1]))
        a2 = np.where(skip, np.concatenate(([ninf, ninf], prev[:-2]))[:s_len], ninf)
        alpha[t] = _lse(prev, a1, a2) + emit[t]
    beta = np.full((t_len, s_len), ninf)
    beta[-1, -1] = emit[t_len - 1, -1]
    if s_len > 1:
        beta[-1, -2] = emit[t_len - 1, -2]
    skip_next = np.zeros(s_len, dtype=bool)
    skip_next[:-2] = skip[2:]
    for t in interrupt.checked(range(t_len - 2, -1, -1)):
        nxt = beta[t + 1]
        b1 = np.concatenate((nxt[1:], [ninf]))
        b2 = np.where(skip_next, np.concatenate((nxt[2:], [ninf, ninf]))[:s_len], ninf)
        beta[t] = _lse(nxt, b1, b2) + emit[t]
    last = alpha[-1, -1] if s_len == 1 else _lse(alpha[-1, -1], alpha[-1, -2])
    nll = -float(last)
    grad = np.exp(lp[:t_len]).copy()
    ab = alpha + beta
    c = lp.shape[1]
    lcab = np.full((t_len, c), ninf)
    for s in interrupt.checked(range(s_len)):
        lcab[:, ext[s]] = _lse(lcab[:, ext[s]], ab[:, s])
    with np.errstate(over="ignore", invalid="ignore"):
        grad -= np.exp(lcab + nll - lp[:t_len])
    full = np.zeros_like(lp)
    full[:t_len] = grad
    return nll, full


class CtcLossBackward0(Function):
    name = "CtcLossBackward0"

    @staticmethod
    def jvp(ctx: Any, t: Tensor) -> Tensor:
        """Each sample's loss moves by its gradient against the tangent (the backward
        rule cannot be differentiated again: PyTorch's has no derivative)."""
        moved = Tensor._make(ctx.grads) * (t if ctx.batched else _op("unsqueeze")(t, 1))
        per_sample = _op("sum")(moved, (0, 2))
        return per_sample if ctx.batched else _op("reshape")(per_sample, ())

    @staticmethod
    def forward(
        ctx: Any, lp: Tensor, *, targets: list[np.ndarray], lengths: np.ndarray, blank: int,
        zero_inf: bool,
    ) -> np.ndarray:  # fmt: skip
        x = lp._data
        batched = x.ndim == 3
        x3 = x if batched else x[:, None]
        n = x3.shape[1]
        nll = np.zeros(n, dtype=x.dtype)
        grads = np.zeros(x3.shape, dtype=x.dtype)
        for b in range(n):
            tgt = targets[b]
            ext = np.full(2 * tgt.shape[0] + 1, blank, dtype=np.int64)
            ext[1::2] = tgt
            t_len = int(lengths[b])
            if t_len == 0:
                value, g = (0.0 if tgt.shape[0] == 0 else math.inf), np.zeros_like(x3[:, b])
            else:
                value, g = _one(x3[:, b].astype(np.float64), ext, t_len)
            if zero_inf and math.isinf(value):  # the loss is zeroed by a where after
                g = np.zeros_like(g)
            nll[b] = value
            grads[:, b] = np.nan_to_num(g, nan=0.0) if zero_inf else g
        ctx.grads = grads
        ctx.batched = batched
        ctx.save_for_backward(lp)  # PyTorch's node saves log_probs (version-checked)
        return nll if batched else nll.reshape(())

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (lp,) = ctx.saved_tensors
        gb = _op("reshape")(g, (1, -1, 1))
        out = Tensor._make(ctx.grads) * gb
        # PyTorch's _ctc_loss_backward has no derivative: under create_graph the
        # gradient requires grad and a backward through it fails
        out = tie(out, g, lp, name="NotImplemented", refuses="_ctc_loss_backward")
        return out if ctx.batched else _op("squeeze")(out, 1)


def _lengths(value: Any, n: int, what: str) -> np.ndarray:
    arr = np.asarray(value._data if isinstance(value, Tensor) else value, dtype=np.int64)
    arr = arr.reshape(-1)
    if arr.shape[0] != n:
        raise ShapeMismatchError(
            f"Expected {what} to have value at most {n}, but got {arr.shape[0]}"
        )
    return arr


def _samples(rng: np.random.Generator) -> list[Any]:
    t, n, c = 6, 3, 4
    raw = rng.standard_normal((t, n, c))
    lp = raw - np.log(np.exp(raw).sum(-1, keepdims=True))
    tg = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
    # torch's gradient adds exp(lp) (projected away by the log_softmax before it), so it
    # is not the finite-difference derivative of the op alone: compared with torch only
    # (tests/engine/test_ctc.py gradchecks it through log_softmax)
    return [
        sample(lp, Const(tg), [6, 5, 6], [3, 2, 1], note="mean", gradcheck=False),
        sample(
            lp,
            Const(tg),
            [6, 5, 6],
            [3, 2, 1],
            reduction="none",
            zero_infinity=True,
            gradcheck=False,
        ),
        sample(
            lp,
            Const(np.array([1, 2, 2, 3, 1, 2])),
            [6, 6, 4],
            [3, 2, 1],
            reduction="sum",
            gradcheck=False,
        ),
    ]


def _estimate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    x = args[0] if args else kwargs.get("log_probs")
    tg = args[1] if len(args) > 1 else kwargs.get("targets")
    xs, ts = getattr(x, "shape", None), getattr(tg, "shape", None)
    if xs is None or ts is None:
        return None
    return 4 * math.prod(xs) + 8 * xs[0] * (2 * math.prod(ts) + 1)


@register(
    complex_inputs="\"ctc_loss_cpu\" not implemented for '{type}'",
    samples=_samples,
    method=False,
    torch="nn.functional.ctc_loss",
    estimate=_estimate,
)
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Any,
    target_lengths: Any,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """CTC loss of log-probabilities ``(T, N, C)`` against label sequences."""
    red = _reduction(reduction)
    lp, tg = as_tensor(log_probs), as_tensor(targets)
    if lp.ndim not in (2, 3):
        raise ShapeMismatchError("ctc_loss(): log_probs must be 2-D or 3-D")
    n = lp.shape[1] if lp.ndim == 3 else 1
    c = lp.shape[-1]
    if not 0 <= blank < c:
        raise BadArgumentsError("blank must be in label range")
    in_len = _lengths(input_lengths, n, "input_lengths")
    tg_len = _lengths(target_lengths, n, "target_lengths")
    tv = tg._data.astype(np.int64)
    seqs: list[np.ndarray] = []
    pos = 0
    for b in range(n):
        k = int(tg_len[b])
        if tv.ndim == 2 or (lp.ndim == 2 and tv.ndim == 1 and n == 1 and tv.shape[0] >= k):
            row = tv[b] if tv.ndim == 2 else tv
            seqs.append(row[:k])
        else:
            seqs.append(tv[pos : pos + k])
            pos += k
    for b in range(n):
        if in_len[b] > lp.shape[0] or in_len[b] < 0:
            raise ShapeMismatchError(
                f"Expected input_lengths to have value at most {lp.shape[0]}, but got value "
                f"{int(in_len[b])} (while checking arguments for ctc_loss_cpu)"
            )
    nll = CtcLossBackward0.apply(
        lp, targets=seqs, lengths=in_len, blank=int(blank), zero_inf=bool(zero_infinity)
    )
    if zero_infinity:
        nll = _op("where")(Tensor._make(nll._data == np.inf), 0.0, nll)
    if red == "none":
        return nll
    if red == "sum":
        return _op("sum")(nll)
    denom = Tensor._make(np.maximum(tg_len, 1).astype(lp.dtype).reshape(nll.shape))
    return _op("mean")(nll / denom)
