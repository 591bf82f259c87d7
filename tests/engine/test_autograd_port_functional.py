"""PyTorch's ``test/autograd/test_functional.py`` (``TestAutogradFunctional``), ported:
``torch.autograd.functional`` (vjp, jvp, vhp, hvp, jacobian, hessian). Each case is
written once against a namespace and run with torch and with the engine (``_both``, comparing through the shared oracle);
values, result structures, ``grad_fn`` presence, and the class and message of every
error must agree. Test names keep PyTorch's; the ``vectorize`` and ``strategy`` variants
are parameters, as upstream. (The LoggingTensor variants are torch's subclass machinery,
which the engine does not have: not ported.)"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import engine
from tests.engine.test_autograd_api import _ns
from tests.engine.torch_oracle import assert_same

T = SimpleNamespace


def _rand(t: T, *shape: int, seed: int = 0, dtype: Any = None, requires_grad: bool = False) -> Any:
    """``torch.rand``-like values, the same on both sides."""
    vals = np.random.default_rng(seed).uniform(0.05, 1.0, shape).round(4)
    return t.lib.tensor(vals, dtype=dtype or t.float32, requires_grad=requires_grad)


def _randn(t: T, *shape: int, seed: int = 0, dtype: Any = None) -> Any:
    vals = np.random.default_rng(seed).standard_normal(shape).round(4)
    return t.lib.tensor(vals, dtype=dtype or t.float32)


def _catch(fn: Callable[[], Any]) -> Any:
    """An error as (class, message), so one scenario can check several in turn."""
    try:
        fn()
    except (TypeError, ValueError, RuntimeError, IndexError) as exc:
        kinds = (NotImplementedError, IndexError, TypeError, ValueError, RuntimeError)
        return (next(k for k in kinds if isinstance(exc, k)).__name__, str(exc))
    return "no error"


def _both(torch: Any, scenario: Callable[[T], Any]) -> None:
    """The scenario on torch and on the engine: the same error (class, message), or
    results the shared oracle finds the same (values within the dtype's tolerance)."""
    outcomes = []
    for lib in (torch, engine):
        try:
            outcomes.append(("ok", scenario(_ns(lib))))
        except (TypeError, ValueError, RuntimeError) as exc:
            outcomes.append(("error", _catch(lambda exc=exc: (_ for _ in ()).throw(exc))))
    (kind_t, theirs), (kind_e, mine) = outcomes
    assert kind_e == kind_t, (mine, theirs)
    assert_same(mine, theirs, graph=False)


def _struct(x: Any) -> Any:
    """The structure PyTorch's ``_assert_same_struct`` reads: shapes, nested as given."""
    if isinstance(x, tuple):
        return tuple(_struct(el) for el in x)
    return ("tensor", tuple(x.shape))


def _has_fn(x: Any) -> Any:
    """``grad_fn is not None``, element-wise over nested tuples."""
    if isinstance(x, tuple):
        return [_has_fn(el) for el in x]
    return x.grad_fn is not None


def _F(t: T) -> Any:
    return t.lib.autograd.functional


def _narrow3(a: Any) -> Any:
    return 3 * a.narrow(0, 0, 3)


# -- vjp -----------------------------------------------------------------------------------


def test_vjp_err_check(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        inp, v = _rand(t, 4), t.lib.ones(3)
        return [
            _catch(lambda: F.vjp(_narrow3, (inp, 2), v)),
            _catch(lambda: F.vjp(lambda a: (_narrow3(a), "bar"), inp, v)),
            _catch(lambda: F.vjp(_narrow3, inp)),
            _catch(lambda: F.vjp(_narrow3, inp, (t.lib.ones_like(inp), t.lib.ones_like(inp)))),
            _catch(lambda: F.vjp(_narrow3, inp, v[:2])),
            _struct(F.vjp(_narrow3, inp, v)[1]),
        ]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_err_check_strict(torch: Any, api: str) -> None:
    """Also ``test_jvp_err_check_strict``: the same cases through ``jvp``."""

    def scenario(t: T) -> Any:
        fn = getattr(_F(t), api)
        inp, v = _rand(t, 4), _rand(t, 4, seed=1)

        def detached(a: Any) -> Any:
            return a.detach()

        def unconnected(a: Any) -> Any:
            return a.long().float().requires_grad_().clone()

        out: list[Any] = []
        for f in (detached, unconnected):
            out.append(_catch(lambda f=f: fn(f, inp, v, strict=True)))
            res = fn(f, inp, v, strict=False)
            out += [_struct(res[1]), res[1].abs().sum()]
        inp.requires_grad_()
        out.append(_catch(lambda: fn(lambda a: a.clone(), inp, v, create_graph=True, strict=True)))
        res = fn(lambda a: a.clone(), inp, v, create_graph=True, strict=False)
        return out + [res[1], _has_fn(res[1])]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_no_grad(torch: Any, api: str) -> None:
    """Also ``test_jvp_no_grad``."""

    def scenario(t: T) -> Any:
        fn = getattr(_F(t), api)
        inputs = _rand(t, 4, 4)
        v = t.lib.ones(4) if api == "vjp" else t.lib.ones(4, 4)
        with t.lib.no_grad():
            res = fn(lambda x: x.sum(dim=1), inputs, v)
        out = [_has_fn(res), res[1]]
        inputs.requires_grad_()
        v.requires_grad_()
        with t.lib.no_grad():
            res = fn(lambda x: x.sum(dim=1), inputs, v, create_graph=True)
        return out + [_has_fn(res), res[1]]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_output(torch: Any, api: str) -> None:
    """Also ``test_jvp_output``."""

    def scenario(t: T) -> Any:
        fn = getattr(_F(t), api)
        inputs = _rand(t, 4, 4)
        v = t.lib.ones(4) if api == "vjp" else t.lib.ones(4, 4)
        res = fn(lambda x: x.sum(dim=1), inputs, v)
        out = [_struct(res), _has_fn(res), res]
        inputs = (_rand(t, 2), _rand(t, 2, seed=1))
        v1 = t.lib.ones(2) if api == "vjp" else (t.lib.ones(2), t.lib.ones(2))
        res = fn(lambda x, y: 2 * x + 3 * y, inputs, v1)
        out += [_struct(res), _has_fn(res), res]
        v2 = (t.lib.tensor([1.0, 0.0]), t.lib.tensor([1.0, 0.0]))
        res = fn(lambda x, y: (2 * x + 3 * y, x + y), inputs, v2)
        return out + [_struct(res), _has_fn(res), res]

    _both(torch, scenario)


def test_vjp_scalar(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        inputs = _rand(t, 4, 4)
        out = [F.vjp(lambda x: x.sum(), inputs, t.lib.ones([])), F.vjp(lambda x: x.sum(), inputs)]
        scalar = _rand(t)
        out.append(F.vjp(lambda x: x.unsqueeze(0).repeat(4), scalar, t.lib.ones(4)))
        return [_struct(r) for r in out] + out

    _both(torch, scenario)


def test_jvp_scalar(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        res = [F.jvp(lambda x: x.sum(), _rand(t, 4, 4), t.lib.ones(4, 4))]
        scalar = _rand(t)
        res.append(F.jvp(lambda x: x.unsqueeze(0).repeat(4), scalar, t.lib.ones([])))
        res.append(F.jvp(lambda x: x.unsqueeze(0).repeat(4), scalar))
        return [_struct(r) for r in res] + res

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_create_graph(torch: Any, api: str) -> None:
    """Also ``test_jvp_create_graph``: results carry a graph; gradcheck and gradgradcheck
    pass through them, the nested use included."""

    def scenario(t: T) -> Any:
        F, ag = _F(t), t.lib.autograd
        fn = getattr(F, api)

        def reducer(x: Any) -> Any:
            return x.sum(dim=1)

        inputs = _rand(t, 2, 2, dtype=t.float64, requires_grad=True)
        v_shape = (2,) if api == "vjp" else (2, 2)
        v = t.lib.ones(*v_shape, dtype=t.float64, requires_grad=True)
        res = fn(reducer, inputs, v, create_graph=True)
        out = [_struct(res), _has_fn(res)]
        checks = [
            ag.gradcheck(lambda i, w: fn(reducer, i, w, create_graph=True), (inputs, v)),
            ag.gradgradcheck(lambda i, w: fn(reducer, i, w, create_graph=True), (inputs, v)),
        ]

        def adder(x: Any, y: Any) -> Any:
            return 2 * x + 3 * y, x * y

        ins = (
            _rand(t, 2, seed=1, dtype=t.float64, requires_grad=True),
            _rand(t, 2, seed=2, dtype=t.float64, requires_grad=True),
        )
        vs = (
            t.lib.tensor([1.0, 0.0], dtype=t.float64, requires_grad=True),
            t.lib.tensor([1.0, 0.0], dtype=t.float64, requires_grad=True),
        )

        def second(*args: Any) -> Any:
            return fn(adder, args[:2], args[2:], create_graph=True)[1]

        def nested(*args: Any) -> Any:
            x, y = args[:2]
            x = x.cos()
            val, g = fn(adder, (x, y), args[2:], create_graph=True)
            return val[0].exp() + val[1].exp() + g[0].exp() + g[1].exp() + x.exp() + y.exp()

        for f in (second, nested):
            checks += [ag.gradcheck(f, ins + vs), ag.gradgradcheck(f, ins + vs)]
        return out + [checks, second(*ins, *vs), nested(*ins, *vs)]

    _both(torch, scenario)


def test_jvp_err_check(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        inp, v = _rand(t, 4), _rand(t, 4, seed=1)
        return [
            _catch(lambda: F.jvp(_narrow3, (inp, 2), v)),
            _catch(lambda: F.jvp(lambda a: (_narrow3(a), "bar"), inp, v)),
            _catch(lambda: F.jvp(_narrow3, inp)),
            _catch(lambda: F.jvp(_narrow3, inp, (v, v))),
            _catch(lambda: F.jvp(_narrow3, inp, v[:2])),
            _struct(F.jvp(_narrow3, inp, v)[1]),
        ]

    _both(torch, scenario)


# -- jacobian --------------------------------------------------------------------------------


@pytest.mark.parametrize("vectorize", [True, False])
def test_jacobian_err_check(torch: Any, vectorize: bool) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        inp = _rand(t, 4)
        out = [
            _catch(lambda: F.jacobian(_narrow3, (inp, 2), vectorize=vectorize)),
            _catch(lambda: F.jacobian(lambda a: (_narrow3(a), "bar"), inp, vectorize=vectorize)),
        ]
        res = F.jacobian(_narrow3, inp, vectorize=vectorize)
        pair = (_rand(t, 4), _rand(t, 5, seed=1))
        res2 = F.jacobian(lambda a, b: (b, _narrow3(a)), pair, vectorize=vectorize)
        return out + [_struct(res), res, _struct(res2), res2]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_jacobian_err_check_strict(torch: Any, api: str) -> None:
    """Also ``test_hessian_err_check_strict`` (its functions are the same, summed)."""

    def scenario(t: T) -> Any:
        fn = getattr(_F(t), api)
        wrap = (lambda y: y) if api == "jacobian" else (lambda y: y.sum())
        inp = _rand(t, 4)
        fns = [
            lambda a: wrap(a.detach()),
            lambda a: wrap(a.long().float().requires_grad_().clone()),
        ]
        if api == "hessian":
            fns.append(lambda a: (3 * a).sum())
        out: list[Any] = []
        for f in fns:
            out.append(_catch(lambda f=f: fn(f, inp, strict=True)))
            res = fn(f, inp, strict=False)
            out += [_struct(res), res.abs().sum()]
        if api == "jacobian":
            inp.requires_grad_()
            clone = lambda a: a.clone()  # noqa: E731 - upstream's case
            out.append(_catch(lambda: fn(clone, inp, create_graph=True, strict=True)))
            out.append(fn(clone, inp, create_graph=True, strict=False))
        return out

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_jacobian_err_check_strict_vectorize(torch: Any, api: str) -> None:
    """Also ``test_hessian_err_check_strict_vectorize``."""

    def scenario(t: T) -> Any:
        fn = getattr(_F(t), api)
        return _catch(lambda: fn(lambda x: (x**3).sum(), _rand(t, 4), strict=True, vectorize=True))

    _both(torch, scenario)


def test_jacobian_no_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        inputs = _rand(t, 4, 4)

        def exp_reducer(x: Any) -> Any:
            return x.exp().sum(dim=1)

        with t.lib.no_grad():
            res = F.jacobian(exp_reducer, inputs)
            res2 = F.jacobian(exp_reducer, inputs, create_graph=True)
        return [_has_fn(res), res, _has_fn(res2), res2]

    _both(torch, scenario)


@pytest.mark.parametrize("vectorize", [True, False])
def test_jacobian_output(torch: Any, vectorize: bool) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        out = []
        for f, inputs in [
            (lambda x: x.exp().sum(dim=1), _rand(t, 4, 4)),
            (lambda x: x.clone(), _rand(t, 4)),
            (lambda x, y: (x + y.exp()).sum(dim=1), (_rand(t, 4, 4), _rand(t, 4, 4, seed=1))),
        ]:
            res = F.jacobian(f, inputs, vectorize=vectorize)
            out += [_struct(res), _has_fn(res), res]
        return out

    _both(torch, scenario)


@pytest.mark.parametrize("vectorize", [True, False])
def test_jacobian_scalar(torch: Any, vectorize: bool) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        a = F.jacobian(lambda x: x.sum(), _rand(t, 4, 4), vectorize=vectorize)
        b = F.jacobian(lambda x: x.unsqueeze(0).repeat(4), _rand(t), vectorize=vectorize)
        return [_struct(a), _struct(b), a, b]

    _both(torch, scenario)


@pytest.mark.parametrize("vectorize", [True, False])
def test_jacobian_create_graph(torch: Any, vectorize: bool) -> None:
    def scenario(t: T) -> Any:
        F, ag = _F(t), t.lib.autograd

        def exp_reducer(x: Any) -> Any:
            return x.exp().sum(dim=1)

        def add_exp_reducer(x: Any, y: Any) -> Any:
            return (x + y).exp().sum(dim=1)

        def jac(f: Any) -> Any:
            return lambda *inp: F.jacobian(f, inp, create_graph=True, vectorize=vectorize)

        x = _rand(t, 4, 4, dtype=t.float64, requires_grad=True)
        res = F.jacobian(exp_reducer, x, create_graph=True, vectorize=vectorize)
        out = [_struct(res), _has_fn(res)]
        one = lambda i: F.jacobian(exp_reducer, i, create_graph=True, vectorize=vectorize)  # noqa: E731
        out += [ag.gradcheck(one, x), ag.gradgradcheck(one, x)]
        ins = (
            _rand(t, 4, 4, seed=1, dtype=t.float64, requires_grad=True),
            _rand(t, 4, 4, seed=2, dtype=t.float64, requires_grad=True),
        )
        res = jac(add_exp_reducer)(*ins)
        out += [_struct(res), _has_fn(res)]
        out += [ag.gradcheck(jac(add_exp_reducer), ins)]

        def foo(x: Any, y: Any) -> Any:
            x = x.cos()
            val, j = F.jacobian(add_exp_reducer, (x, y), create_graph=True, vectorize=vectorize)
            r = val[0].exp().sum() + val[1].exp().sum() + j[0].exp().sum()
            return r + j[1].exp().sum() + x.exp().sum() + y.exp().sum()

        small = (ins[0][:2, :2].detach().requires_grad_(), ins[1][:2, :2].detach().requires_grad_())
        out += [ag.gradcheck(foo, small), foo(*small)]
        return out

    _both(torch, scenario)


def _jacobian_vectorize_cases(t: T) -> list[tuple[Any, Any, bool]]:
    x23, y35 = _randn(t, 2, 3), _randn(t, 3, 5, seed=1)
    x53 = _randn(t, 5, 3, seed=2)
    x3, y3 = _randn(t, 3, seed=3), _randn(t, 3, seed=4)
    return [
        (lambda x: 3 * x**2, _randn(t, 2, 3, 5), True),  # simple
        (lambda x, y: (x.cos() * x) @ y.sin(), (x23, y35), True),  # multi_input
        (  # multi_input_multi_output
            lambda x, y: ((x * x) @ y, x @ (x.sum(1) * y), y.sum()),
            (x53, y35),
            True,
        ),
        (lambda x, y: (x, y, x, y), (_randn(t, 2), _randn(t, 3)), True),  # unrelated_outputs
        (lambda x, y: (x.sum(), y.sum(), x * y), (x3, y3), True),  # zero_dim output
        (lambda x: t.lib.stack([x, x, x]), _randn(t), True),  # zero_dim input
        (lambda x, y: (y.sum(), x * y), (_randn(t), _randn(t, 1)), True),  # mixed zero-dim
        # different_dtype: forward mode gives the output's dtype, reverse the input's
        (lambda x, y: ((x * y).float(), (x * y).double()), (x3, y3), False),
    ]


@pytest.mark.parametrize("case", range(8))
def test_jacobian_vectorize_correctness(torch: Any, case: int) -> None:
    """``test_jacobian_vectorize_correctness_{simple, multi_input, multi_input_multi_output,
    unrelated_outputs, zero_dim, different_dtype}``: vectorized, looped and forward-mode
    Jacobians agree, and agree with torch's."""

    def scenario(t: T) -> Any:
        F = _F(t)
        f, inputs, forward = _jacobian_vectorize_cases(t)[case]
        expected = F.jacobian(f, inputs, vectorize=False)
        out = [expected, F.jacobian(f, inputs, vectorize=True)]
        if forward:
            out.append(F.jacobian(f, inputs, strategy="forward-mode", vectorize=True))
        return out

    _both(torch, scenario)


def test_jacobian_forward_mode_needs_vectorize(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        x = _randn(t, 3)
        return [
            _catch(lambda: F.jacobian(lambda a: a * 2, x, strategy="forward-mode")),
            _catch(
                lambda: F.hessian(lambda a: (a**3).sum(), x, outer_jacobian_strategy="forward-mode")
            ),
            _catch(
                lambda: F.jacobian(
                    lambda a: a * 2, x, strategy="forward-mode", vectorize=True, create_graph=True
                )
            ),
        ]

    _both(torch, scenario)


# -- hessian -------------------------------------------------------------------------------


def _hessian_vectorize_cases(t: T) -> list[tuple[Any, Any]]:
    return [
        (lambda x: (3 * x**2).sum(), _randn(t, 2, 3, 5)),
        (
            lambda x, y, z: ((x.relu() * x) @ y.sin() @ z).sum(),
            (_randn(t, 2, 3), _randn(t, 3, 5, seed=1), _randn(t, 5, 5, seed=2)),
        ),
        (lambda x, y: (x**2).sum(), (_randn(t, 2), _randn(t, 3, seed=1))),
        (lambda x, y: t.lib.ones([]), (_randn(t, 2), _randn(t, 3, seed=1))),
    ]


@pytest.mark.parametrize("case", range(4))
def test_hessian_vectorize_correctness(torch: Any, case: int) -> None:
    """``test_hessian_vectorize_correctness_{simple, multi_input, unrelated_outputs}``."""

    def scenario(t: T) -> Any:
        F = _F(t)
        f, inputs = _hessian_vectorize_cases(t)[case]
        return [
            F.hessian(f, inputs, vectorize=False),
            F.hessian(f, inputs, vectorize=True),
            F.hessian(f, inputs, outer_jacobian_strategy="forward-mode", vectorize=True),
        ]

    _both(torch, scenario)


@pytest.mark.parametrize(
    ("api", "vectorize"), [("hessian", True), ("hessian", False), ("vhp", False), ("hvp", False)]
)
def test_hessian_err_check(torch: Any, api: str, vectorize: bool) -> None:
    """Also ``test_vhp_err_check`` and ``test_hvp_err_check`` (``vectorize`` is
    hessian's alone)."""

    def scenario(t: T) -> Any:
        F = _F(t)

        def call(f: Any, inp: Any, *v: Any) -> Any:
            if api == "hessian":
                return F.hessian(f, inp, vectorize=vectorize)
            return getattr(F, api)(f, inp, *v)

        def foo(a: Any) -> Any:
            return _narrow3(a).exp().sum()

        inp, v = _rand(t, 4), _rand(t, 4, seed=1)
        out = [
            _catch(lambda: call(foo, (inp, 2), v)),
            _catch(lambda: call(lambda a: (_narrow3(a), "bar"), inp, v)),
            _catch(lambda: call(_narrow3, inp, v)),
        ]
        if api == "hessian":
            out.append(_catch(lambda: call(lambda a: (_narrow3(a), _narrow3(a)), inp)))
        else:
            out.append(_catch(lambda: call(foo, inp, _rand(t, 5))))
            out.append(_catch(lambda: call(foo, inp, (v, 2))))
        res = call(foo, inp, v)
        pair = (_rand(t, 4), _rand(t, 5, seed=1))
        vs = (_rand(t, 4, seed=2), _rand(t, 5, seed=3))
        res2 = call(lambda a, b: (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum(), pair, vs)
        return out + [_struct(res), res, _struct(res2), res2]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["vhp", "hvp"])
def test_vhp_err_check_strict(torch: Any, api: str) -> None:
    """Also ``test_hvp_err_check_strict``."""

    def scenario(t: T) -> Any:
        fn = getattr(_F(t), api)
        inp, v = _rand(t, 4), _rand(t, 4, seed=1)
        out: list[Any] = []
        for f in (
            lambda a: a.detach().sum(),
            lambda a: a.long().float().requires_grad_().clone().sum(),
            lambda a: (3 * a).sum(),
        ):
            out.append(_catch(lambda f=f: fn(f, inp, v, strict=True)))
            res = fn(f, inp, v, strict=False)
            out += [_struct(res[1]), res[1].abs().sum()]
        return out

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["hessian", "vhp", "hvp"])
def test_hessian_no_grad(torch: Any, api: str) -> None:
    """Also ``test_vhp_no_grad``, ``test_hvp_no_grad``."""

    def scenario(t: T) -> Any:
        F = _F(t)
        inputs = _rand(t, 2, 2)
        v = t.lib.ones(2, 2)

        def call(**kw: Any) -> Any:
            if api == "hessian":
                return F.hessian(lambda x: x.pow(3).sum(), inputs, **kw)
            return getattr(F, api)(lambda x: x.exp().sum(), inputs, v, **kw)

        with t.lib.no_grad():
            res = call()
            res2 = call(create_graph=True)
        if api == "hessian":  # upstream indexes the Hessian tensor: views carry a grad_fn
            return [
                [res[i][j].grad_fn is None for i in (0, 1) for j in (0, 1)],
                res,
                res2.grad_fn is None,
            ]
        return [_has_fn(res), res, _has_fn(res2), res2]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["hessian", "vhp", "hvp"])
def test_hessian_output(torch: Any, api: str) -> None:
    """Also ``test_vhp_output``, ``test_hvp_output``."""

    def scenario(t: T) -> Any:
        F = _F(t)
        out = []
        if api == "hessian":
            for vectorize in (True, False):
                res = F.hessian(lambda x: x.pow(3).sum(), _rand(t, 2, 2), vectorize=vectorize)
                res2 = F.hessian(
                    lambda x, y: (x + y).pow(3).sum(),
                    (_rand(t, 2, 2), _rand(t, 2, 2, seed=1)),
                    vectorize=vectorize,
                )
                out += [_struct(res), _has_fn(res), res, _struct(res2), _has_fn(res2), res2]
            return out
        fn = getattr(F, api)
        res = fn(lambda a: _narrow3(a).exp().sum(), _rand(t, 4, 4), t.lib.ones(4, 4))
        res2 = fn(
            lambda a, b: (a + 3 * b.narrow(0, 0, 3)).exp().sum(),
            (_rand(t, 3), _rand(t, 4, seed=1)),
            (t.lib.ones(3), t.lib.ones(4)),
        )
        return [_struct(res), _has_fn(res), res, _struct(res2), _has_fn(res2), res2]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["hessian", "vhp", "hvp"])
def test_hessian_scalar(torch: Any, api: str) -> None:
    """Also ``test_vhp_scalar``, ``test_hvp_scalar``."""

    def scenario(t: T) -> Any:
        F = _F(t)
        if api == "hessian":
            out = []
            for vectorize in (True, False):
                out += [
                    F.hessian(lambda x: x.sum(), _rand(t, 4, 4), vectorize=vectorize),
                    F.hessian(lambda x: x.sum(), _rand(t), vectorize=vectorize),
                    F.hessian(lambda x: x.sum().view(1, 1, 1), _rand(t, 2, 2), vectorize=vectorize),
                ]
            return [_struct(r) for r in out] + out
        fn = getattr(F, api)
        red = (lambda x: x.sum()) if api == "vhp" else (lambda x: x.exp().sum())
        res = [
            fn(red, _rand(t, 4, 4), t.lib.ones(4, 4)),
            fn(red, _rand(t), _rand(t, seed=1)),
            fn(red, _rand(t)),
            fn(lambda x: red(x).view(1, 1, 1), _rand(t, 4, 4), _rand(t, 4, 4, seed=1)),
        ]
        return [_struct(r) for r in res] + res

    _both(torch, scenario)


@pytest.mark.parametrize("vectorize", [True, False])
def test_hessian_create_graph(torch: Any, vectorize: bool) -> None:
    def scenario(t: T) -> Any:
        F, ag = _F(t), t.lib.autograd

        def pow_reducer(x: Any) -> Any:
            return x.pow(3).sum()

        def add_pow_reducer(x: Any, y: Any) -> Any:
            return (x + y).pow(3).sum()

        x = _rand(t, 2, 2, dtype=t.float64, requires_grad=True)
        res = F.hessian(pow_reducer, x, create_graph=True, vectorize=vectorize)
        one = lambda i: F.hessian(pow_reducer, i, create_graph=True, vectorize=vectorize)  # noqa: E731
        out = [_struct(res), _has_fn(res), ag.gradcheck(one, x), ag.gradgradcheck(one, x)]
        ins = (
            _rand(t, 2, 2, seed=1, dtype=t.float64, requires_grad=True),
            _rand(t, 2, 2, seed=2, dtype=t.float64, requires_grad=True),
        )
        res = F.hessian(add_pow_reducer, ins, create_graph=True, vectorize=vectorize)
        out += [_struct(res), _has_fn(res)]

        def flat(*inp: Any) -> Any:
            h = F.hessian(add_pow_reducer, inp, create_graph=True, vectorize=vectorize)
            return tuple(el2 for el1 in h for el2 in el1)

        def foo(x: Any, y: Any) -> Any:
            x = x.cos()
            val, h = F.hessian(add_pow_reducer, (x, y), create_graph=True, vectorize=vectorize)
            r = val[0].cos().sum() + val[1].cos().sum() + h[0].cos().sum()
            return r + h[1].cos().sum() + x.cos().sum() + y.cos().sum()

        return out + [ag.gradcheck(flat, ins), ag.gradcheck(foo, ins), foo(*ins)]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["vhp", "hvp"])
def test_vhp_create_graph(torch: Any, api: str) -> None:
    """Also ``test_hvp_create_graph``."""

    def scenario(t: T) -> Any:
        F, ag = _F(t), t.lib.autograd
        fn = getattr(F, api)

        def foo(a: Any) -> Any:
            return _narrow3(a).exp().sum()

        x = _rand(t, 4, 4, dtype=t.float64, requires_grad=True)
        v = t.lib.ones(4, 4, dtype=t.float64, requires_grad=True)
        res = fn(foo, x, v, create_graph=True)
        one = lambda i, w: fn(foo, i, w, create_graph=True)  # noqa: E731
        out = [_struct(res), _has_fn(res), ag.gradcheck(one, (x, v)), ag.gradgradcheck(one, (x, v))]

        def bar(a: Any, b: Any) -> Any:
            return (a + 3 * b.narrow(0, 0, 3)).exp().sum()

        ins = (
            _rand(t, 3, seed=1, dtype=t.float64, requires_grad=True),
            _rand(t, 4, seed=2, dtype=t.float64, requires_grad=True),
        )
        vs = (
            t.lib.ones(3, dtype=t.float64, requires_grad=True),
            t.lib.ones(4, dtype=t.float64, requires_grad=True),
        )
        res = fn(bar, ins, vs, create_graph=True)
        out += [_struct(res), _has_fn(res)]

        def second(*args: Any) -> Any:
            return fn(bar, args[:2], args[2:], create_graph=True)[1]

        def nested(*args: Any) -> Any:
            x, y = args[:2]
            x = x.cos()
            val, g = fn(bar, (x, y), args[2:], create_graph=True)
            return val.cos() + g[0].cos().sum() + g[1].cos() + x.cos().sum() + y.cos()

        for f in (second, nested):
            out += [ag.gradcheck(f, ins + vs), ag.gradgradcheck(f, ins + vs)]
        return out + [second(*ins, *vs), nested(*ins, *vs)]

    _both(torch, scenario)


def test_jacobian_match_vjp_jvp(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        inputs, v = _rand(t, 4), _rand(t, 4, seed=1)

        def foo(x: Any) -> Any:
            return x**3 + x.sum()

        jac = F.jacobian(foo, inputs)
        jvp = F.jvp(foo, inputs, v)[1]
        vjp = F.vjp(foo, inputs, v)[1]
        return [
            jac,
            jvp,
            vjp,
            t.lib.allclose(jvp, t.lib.mm(jac, v.unsqueeze(1)).squeeze(1)),
            t.lib.allclose(vjp, t.lib.mm(v.unsqueeze(0), jac).squeeze(0)),
        ]

    _both(torch, scenario)


def test_hessian_match_vhp_hvp(torch: Any) -> None:
    def scenario(t: T) -> Any:
        F = _F(t)
        inputs, v = _rand(t, 4), _rand(t, 4, seed=1)

        def foo(a: Any) -> Any:
            return _narrow3(a).exp().sum()

        hes = F.hessian(foo, inputs)
        hvp = F.hvp(foo, inputs, v)[1]
        vhp = F.vhp(foo, inputs, v)[1]
        return [
            hes,
            hvp,
            vhp,
            t.lib.allclose(hvp, t.lib.mm(hes, v.unsqueeze(1)).squeeze(1)),
            t.lib.allclose(vhp, t.lib.mm(v.unsqueeze(0), hes).squeeze(0)),
        ]

    _both(torch, scenario)


@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_jacobian_vectorize_raises_no_warnings(torch: Any, api: str) -> None:
    """Also ``test_hessian_vectorize_raises_no_warnings``."""

    def scenario(t: T) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = getattr(_F(t), api)(lambda a: (a**2).sum(), _randn(t, 3), vectorize=True)
        return [len(caught), res]

    _both(torch, scenario)
