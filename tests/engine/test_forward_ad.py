"""Forward-mode AD behaviour, written once against a namespace ``T`` (``torch`` or
``engine``) and run with both: every observation goes into a record, and the
engine's record must equal PyTorch's (values within float tolerance; dtypes, shapes,
identities, ``None``s, error classes and messages exactly).

Covers ``make_dual``/``unpack_dual``/``dual_level``, chains of common ops, views and
in-place writes, ``detach``/``no_grad``, dtype rules, composition with reverse mode,
and the error cases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine
from engine import Tensor
from tests.engine.torch_oracle import assert_values


class Record:
    """An ordered log of observations, comparable across the two namespaces."""

    def __init__(self, T: Any) -> None:
        self.T = T
        self.items: list[tuple[str, Any]] = []

    def __setitem__(self, key: str, value: Any) -> None:
        self.items.append((key, self._plain(value)))

    def _plain(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (tuple, list)):
            return tuple(self._plain(x) for x in v)
        if isinstance(v, Tensor) or type(v).__module__.startswith("torch"):
            return np.array(v.detach().numpy() if hasattr(v, "detach") else v)
        return repr(v)

    def error(self, key: str, fn: Callable[[], Any]) -> None:
        """Record the class family and message of the error ``fn`` raises."""
        try:
            fn()
        except (RuntimeError, ValueError, TypeError) as exc:
            kind = next(
                k.__name__ for k in (ValueError, TypeError, RuntimeError) if isinstance(exc, k)
            )
            self[key] = (kind, str(exc))
        else:
            self[key] = "no error"


BEHAVIOURS: list[Callable[[Any, Record], None]] = []


def behaviour(fn: Callable[[Any, Record], None]) -> Callable[[Any, Record], None]:
    BEHAVIOURS.append(fn)
    return fn


def _x(T: Any, *shape: int, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return T.tensor(rng.uniform(-1.0, 1.0, shape), dtype=T.float64)


# -- make_dual / unpack_dual / dual_level ---------------------------------------------------


@behaviour
def dual_basics(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x, t = _x(T, 3), _x(T, 3, seed=1)
    rec["outside"] = fwAD.unpack_dual(x).tangent
    with fwAD.dual_level() as level:
        rec["level"] = level
        d = fwAD.make_dual(x, t)
        p, tangent = fwAD.unpack_dual(d)
        rec["type"] = type(fwAD.unpack_dual(d)).__name__
        rec["fields"] = fwAD.unpack_dual(d)._fields
        rec["primal"] = p
        rec["tangent is t"] = tangent is t
        rec["primal is d"] = p is d
        rec["d aliases x"] = d._base is x
        rec["primal aliases x"] = p._base is x
        rec["plain has none"] = fwAD.unpack_dual(x).tangent
        rec["level kwarg"] = fwAD.unpack_dual(d, level=0).tangent
        out = d * 2
    rec["after exit"] = fwAD.unpack_dual(out).tangent
    rec["d after exit"] = fwAD.unpack_dual(d).tangent
    with fwAD.dual_level() as again:
        rec["level again"] = again
        rec["old dual in new level"] = fwAD.unpack_dual(d).tangent


@behaviour
def enter_and_exit(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    rec["enter"] = fwAD.enter_dual_level()
    d = fwAD.make_dual(_x(T, 2), _x(T, 2, seed=3))
    rec["tangent"] = fwAD.unpack_dual(d.exp()).tangent
    fwAD.exit_dual_level()
    rec["gone"] = fwAD.unpack_dual(d).tangent


# -- chains of common ops ------------------------------------------------------------------


@behaviour
def elementwise_chain(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x, t = _x(T, 2, 3), _x(T, 2, 3, seed=1)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        y = (d.sin() * d.exp() + d**2 - d / (d.abs() + 1)).tanh()
        rec["y"] = fwAD.unpack_dual(y)
        z = T.sigmoid(d).log() + T.relu(d) * 3.0 - d.sqrt().nan_to_num(0.0)
        rec["z"] = fwAD.unpack_dual(z)
        rec["pow"] = fwAD.unpack_dual(2.0**d + d.pow(3) + T.clamp(d, -0.5, 0.5))


@behaviour
def reductions_chain(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x, t = _x(T, 3, 4), _x(T, 3, 4, seed=1)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        rec["sum"] = fwAD.unpack_dual(d.sum())
        rec["mean dim"] = fwAD.unpack_dual(d.mean(1))
        rec["max"] = fwAD.unpack_dual(d.max())
        values, indices = d.max(dim=0)
        rec["max dim"] = (fwAD.unpack_dual(values), fwAD.unpack_dual(indices).tangent)
        rec["norm"] = fwAD.unpack_dual(d.norm())
        rec["var"] = fwAD.unpack_dual(d.var(0))
        rec["logsumexp"] = fwAD.unpack_dual(T.logsumexp(d, 1))
        rec["softmax"] = fwAD.unpack_dual(T.softmax(d, 1))
        rec["log_softmax"] = fwAD.unpack_dual(T.log_softmax(d, 0))
        rec["argmax"] = fwAD.unpack_dual(d.argmax()).tangent


@behaviour
def matmul_and_layers(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    F = T.nn.functional
    x, w, b = _x(T, 4, 3), _x(T, 2, 3, seed=1), _x(T, 2, seed=2)
    with fwAD.dual_level():
        dw = fwAD.make_dual(w, _x(T, 2, 3, seed=3))
        db = fwAD.make_dual(b, _x(T, 2, seed=4))
        rec["linear"] = fwAD.unpack_dual(F.linear(x, dw, db))
        rec["matmul"] = fwAD.unpack_dual(x @ dw.t())
        target = T.tensor([0, 1, 1, 0])
        rec["cross_entropy"] = fwAD.unpack_dual(F.cross_entropy(F.linear(x, dw, db), target))
        rec["mse"] = fwAD.unpack_dual(F.mse_loss(F.linear(x, dw), x[:, :2]))
        img = _x(T, 1, 2, 5, 5, seed=5)
        k = fwAD.make_dual(_x(T, 3, 2, 3, 3, seed=6), _x(T, 3, 2, 3, 3, seed=7))
        y = F.max_pool2d(F.relu(F.conv2d(img, k, padding=1)), 2)
        rec["conv pool"] = fwAD.unpack_dual(y)


# -- views, in-place, detach, no_grad, dtypes ----------------------------------------------


@behaviour
def views_of_duals(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x, t = _x(T, 2, 3), _x(T, 2, 3, seed=1)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        for name, v in {
            "row": d[0],
            "t": d.t(),
            "reshape": d.reshape(3, 2),
            "expand": d[:1].expand(4, 3),
            "slice": d[:, 1:],
            "unsqueeze": d.unsqueeze(0),
        }.items():
            p, vt = fwAD.unpack_dual(v)
            rec[name] = (p, vt)
        rec["view tangent is a view of t"] = fwAD.unpack_dual(d[0]).tangent._base is t
        parts = d.split(1, dim=1)
        rec["split"] = [fwAD.unpack_dual(q).tangent for q in parts]
        rec["cat"] = fwAD.unpack_dual(T.cat([d, x], 0)).tangent


@behaviour
def inplace_writes(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x, t = _x(T, 3), _x(T, 3, seed=1)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        z = d.clone()
        z.mul_(3)
        rec["mul_"] = fwAD.unpack_dual(z).tangent
        y = d * 1
        v = y[1:]
        v.mul_(2)
        rec["view write reaches base"] = fwAD.unpack_dual(y).tangent
        rec["view"] = fwAD.unpack_dual(v).tangent
        y.add_(d)
        rec["base write reaches view"] = fwAD.unpack_dual(v).tangent
        plain = T.zeros(3, dtype=T.float64)
        src = fwAD.make_dual(T.ones(2, dtype=T.float64), T.full((2,), 5.0, dtype=T.float64))
        plain[1:].copy_(src)
        rec["copy into plain"] = fwAD.unpack_dual(plain).tangent
        c = T.zeros(3, dtype=T.float64)
        c[1] = d[0] * 2
        rec["setitem"] = fwAD.unpack_dual(c).tangent
        w = d * 1
        w.zero_()
        rec["zero_"] = fwAD.unpack_dual(w).tangent
        w = d * 1
        w += 1.0
        rec["iadd number"] = fwAD.unpack_dual(w).tangent
        w = d * 1
        w.copy_(x)
        rec["copy_ plain over dual"] = fwAD.unpack_dual(w).tangent


@behaviour
def detach_no_grad_dtypes(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x, t = _x(T, 3), _x(T, 3, seed=1)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        rec["detach"] = fwAD.unpack_dual(d.detach()).tangent
        with T.no_grad():
            rec["no_grad"] = fwAD.unpack_dual(d * 2).tangent
        rec["float"] = fwAD.unpack_dual(d.float()).tangent
        rec["to int"] = fwAD.unpack_dual(d.to(T.int64)).tangent
        f32 = fwAD.make_dual(x.float(), t.float())
        rec["promoted"] = fwAD.unpack_dual(f32 + x).tangent
        rec["requires_grad"] = (d * 2).requires_grad


@behaviour
def with_reverse_mode(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x = _x(T, 3).requires_grad_()
    t = _x(T, 3, seed=1).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        out = (d.sin() * d).sum()
        p, tangent = fwAD.unpack_dual(out)
        rec["primal requires grad"] = p.requires_grad
        rec["tangent requires grad"] = tangent.requires_grad
        gx, gt = T.autograd.grad(tangent, [x, t], retain_graph=True)
        rec["d tangent / d x"] = gx
        rec["d tangent / d t"] = gt
        (gp,) = T.autograd.grad(p, [x])
        rec["d primal / d x"] = gp


# -- errors --------------------------------------------------------------------------------


@behaviour
def errors(T: Any, rec: Record) -> None:
    fwAD = T.autograd.forward_ad
    x, t = _x(T, 3), _x(T, 3, seed=1)
    rec.error("make_dual outside a level", lambda: fwAD.make_dual(x, t))
    rec.error("exit outside a level", lambda: fwAD.exit_dual_level())
    with fwAD.dual_level():
        rec.error("nested level", lambda: fwAD.enter_dual_level())
        rec.error("nested context", lambda: fwAD.dual_level().__enter__())
        rec.error("tangent of wrong shape", lambda: fwAD.make_dual(x, _x(T, 4)))
        rec.error("tangent of wrong rank", lambda: fwAD.make_dual(x, _x(T, 3, 1)))
        rec.error("integer primal", lambda: fwAD.make_dual(T.arange(3), t))
        rec.error("integer tangent", lambda: fwAD.make_dual(x, T.arange(3)))
        d = fwAD.make_dual(x, t)
        rec.error("dual of a dual", lambda: fwAD.make_dual(d, t))
        rec.error("another level's number", lambda: fwAD.make_dual(x, t, level=3))
        rec.error("exit another level", lambda: fwAD.exit_dual_level(level=5))
        rec.error("shape mismatch in an op", lambda: d + _x(T, 4))


# -- running ---------------------------------------------------------------------------------


@pytest.mark.parametrize("example", BEHAVIOURS, ids=lambda f: f.__name__)
def test_forward_ad_matches_torch(example: Callable[[Any, Record], None], torch: Any) -> None:
    mine, theirs = Record(engine), Record(torch)
    example(engine, mine)
    example(torch, theirs)
    assert [k for k, _ in mine.items] == [k for k, _ in theirs.items]
    for (key, a), (_, b) in zip(mine.items, theirs.items):
        assert_values(a, b, rtol=1e-6, atol=1e-6, path=key)
