"""functorch's ``test/functorch/test_eager_transforms.py`` (``TestGradTransform``), ported
to ``torch.func`` on the engine: each case is written once against a namespace and run
with torch and with the engine; values (the shared oracle's tolerance), result
structures and the class and message of errors must agree. Test names keep upstream's.
Not ported: functorch internals (dynamic layer stack, dead wrappers, GradTrackingTensor
reprs, dispatch modes), sparse layouts, CUDA, ``make_functional`` (functorch's
deprecated API)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.engine.test_autograd_port_functional import _both, _catch

T = SimpleNamespace


def _t(t: T, shape: tuple[int, ...] = (), seed: int = 0, requires_grad: bool = False) -> Any:
    """``torch.randn``-like values, the same on both sides (float32, as upstream)."""
    vals = np.random.default_rng(seed).standard_normal(shape).round(4)
    return t.lib.tensor(vals, dtype=t.float32, requires_grad=requires_grad)


def _flat(x: Any) -> Any:
    """A pytree's leaves in order, with its containers' kinds (dict keys sorted)."""
    if isinstance(x, dict):
        return ["dict", [(k, _flat(x[k])) for k in sorted(x)]]
    if isinstance(x, list | tuple):
        return [type(x).__name__, [_flat(el) for el in x]]
    return x


def test_primitive(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.grad(t.lib.sin)(_t(t)))


def test_composite_simple(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.grad(lambda x: t.lib.flatten(x).sum())(_t(t, (2, 3, 4))))


def test_fn_with_kwargs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        def foo(x: Any, y: Any) -> Any:
            return (x * y).sum()

        x, y = _t(t, (3,)), _t(t, (3,), 1)
        return [t.lib.func.grad(foo)(x, y), t.lib.func.grad(foo)(x, y=y)]

    _both(torch, scenario)


def test_composite_complicated(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, y = _t(t, (3,)), _t(t, (3, 5), 1)
        result = t.lib.func.grad(lambda x, y: (x @ y).sum())(x, y)
        x.requires_grad_()
        (expected,) = t.lib.autograd.grad((x @ y).sum(), x)
        return [result, expected]

    _both(torch, scenario)


def test_composite_two_ops(torch: Any) -> None:
    def scenario(t: T) -> Any:
        y = _t(t, (2, 5))
        targets = t.lib.tensor([1, 4])
        return t.lib.func.grad(lambda y, tg: t.lib.nn.functional.cross_entropy(y, tg))(y, targets)

    _both(torch, scenario)


@pytest.mark.parametrize("attr", ["shape", "dtype", "numel", "is_cuda"])
def test_attributes(torch: Any, attr: str) -> None:
    """``test_shape``, ``test_dtype``, ``test_numel``, ``test_is_cuda``: a tensor inside
    ``grad`` reports what the tensor outside does."""

    def scenario(t: T) -> Any:
        def read(x: Any) -> Any:
            value = getattr(x, attr)
            if attr == "shape":  # the engine's shape is a tuple, torch's a tuple subclass
                return tuple(value)
            return str(value() if attr == "numel" else value).removeprefix("torch.")

        x = _t(t, (2, 3, 5)).double()
        seen = []

        def foo(x: Any) -> Any:
            seen.append(read(x))
            return x.sum()

        t.lib.func.grad(foo)(x)
        return [read(x), seen]

    _both(torch, scenario)


def test_inplace(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.grad(lambda x: x.clone().sin_())(_t(t)))


@pytest.mark.parametrize("where", ["view", "view_base"])
def test_inplace_on_view(torch: Any, where: str) -> None:
    """Also ``test_inplace_on_view_base``."""

    def scenario(t: T) -> Any:
        def foo(x: Any) -> Any:
            y = x.clone()
            y0 = y[0]
            if where == "view":
                y0.sin_()
                return y.sum()
            y.sin_()
            return y0

        x = _t(t, (3,))
        result = t.lib.func.grad(foo)(x)
        x.requires_grad_()
        (expected,) = t.lib.autograd.grad(foo(x), x)
        return [result, expected]

    _both(torch, scenario)


def test_nesting_simple(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.grad(t.lib.func.grad(t.lib.sin))(_t(t)))


def test_vjp(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, v = _t(t), _t(t, seed=1)
        out, vjp_fn = t.lib.func.vjp(t.lib.sin, x)
        return [out, vjp_fn(v)]

    _both(torch, scenario)


def test_vjp_two_outputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        result, vjp_fn = t.lib.func.vjp(lambda x: (x, x), t.lib.tensor(1.0))
        return [result, vjp_fn(result)]

    _both(torch, scenario)


def test_composed_with_autograd(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _t(t, requires_grad=True)
        y = t.lib.func.grad(t.lib.sin)(x)
        return [y, t.lib.autograd.grad(y, x)]

    _both(torch, scenario)


def test_grad_of_vjp_composition(torch: Any) -> None:
    def scenario(t: T) -> Any:
        f = t.lib.func
        x, y = _t(t), _t(t, seed=1)
        _, vjp_fn = f.vjp(t.lib.sin, x)
        return f.grad(lambda y: vjp_fn(y)[0])(y)

    _both(torch, scenario)


def test_vjp_of_grad_composition(torch: Any) -> None:
    def scenario(t: T) -> Any:
        f = t.lib.func
        x, y = _t(t), _t(t, seed=1)
        _, vjp_fn = f.vjp(f.grad(t.lib.sin), x)
        return vjp_fn(y)[0]

    _both(torch, scenario)


def test_grad_of_vjp_of_grad_composition(torch: Any) -> None:
    def scenario(t: T) -> Any:
        f = t.lib.func
        x, y = _t(t), _t(t, seed=1)
        _, vjp_fn = f.vjp(f.grad(lambda x: -t.lib.cos(x)), x)
        return f.grad(lambda y: vjp_fn(y)[0])(y)

    _both(torch, scenario)


def test_views(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, y = _t(t, requires_grad=True), _t(t, seed=1, requires_grad=True)
        z1 = t.lib.func.grad(lambda x: x.view([]).sin())(x)
        result = z1 + t.lib.cos(y)
        return [result, t.lib.autograd.grad(result, [x, y])]

    _both(torch, scenario)


def test_view_inplace_simple(torch: Any) -> None:
    def scenario(t: T) -> Any:
        def foo(x: Any) -> Any:
            x = x.clone()
            x.view([]).sin_()
            return x

        return t.lib.func.grad(foo)(_t(t, requires_grad=True))

    _both(torch, scenario)


def test_invalid_argnums(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, y = _t(t), _t(t, seed=1)
        return [
            _catch(lambda a=a: t.lib.func.grad(t.lib.mul, argnums=a)(x, y))
            for a in (-3, 2, [0], ("0",), (0, 0), (0, -2))
        ]

    _both(torch, scenario)


@pytest.mark.parametrize("argnums", [0, 1, (0,), (0, 1), (1, 0), -2, -1, (-2,), (-2, -1)])
def test_argnums(torch: Any, argnums: Any) -> None:
    """Also ``test_out_of_order_argnums``, ``test_negative_argnums``."""

    def scenario(t: T) -> Any:
        return t.lib.func.grad(t.lib.mul, argnums=argnums)(_t(t), _t(t, seed=1))

    _both(torch, scenario)


def test_grad_pytree_inputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _t(t)

        def f(a: Any, b: Any) -> Any:
            x, y = a
            return 1 * x + 2 * y + 3 * b["foo"]

        args = ((x, x), {"foo": x})
        g = t.lib.func.grad
        return [
            _flat(g(f)(*args)),
            _flat(g(f, argnums=(0,))(*args)),
            _flat(g(f, argnums=(0, 1))(*args)),
        ]

    _both(torch, scenario)


def test_grad_aux_tensor(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _t(t, (3,))
        g = t.lib.func.grad
        errors = [
            _catch(lambda: g(lambda v: [v, v], has_aux=True)(x)),
            _catch(lambda: g(lambda v: (v, v + 2, v + 3), has_aux=True)(x)),
        ]
        out, aux = g(lambda v: (v.sin().sum(), v.cos()), has_aux=True)(x)
        return errors + [out, aux]

    _both(torch, scenario)


def test_grad_aux_pytree(torch: Any) -> None:
    def scenario(t: T) -> Any:
        g = t.lib.func.grad
        x = _t(t, (3,))
        out, aux = g(lambda x: (x.sin().sum(), {"a": x.cos(), "b": [x.tan()]}), has_aux=True)(x)
        errors = []
        for bad in [1, 1.0, "abc"]:
            errors.append(_catch(lambda bad=bad: g(lambda x: (x.sum(), bad), has_aux=True)(x)))
            errors.append(_catch(lambda bad=bad: g(lambda x: (x.sum(), [x, bad]), has_aux=True)(x)))
        return [out, _flat(aux), errors]

    _both(torch, scenario)


def test_zero_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        inps = {"a": _t(t, (10,)) + 3, "b": _t(t, (10,), 1)}
        return _flat(t.lib.func.grad(lambda x: (x["a"] ** 2.0).sum())(inps))

    _both(torch, scenario)


def test_unrelated_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        y = t.lib.tensor(2.0)
        return t.lib.func.grad(lambda x: y)(t.lib.tensor(1.0))

    _both(torch, scenario)


def test_unrelated_vjp(torch: Any) -> None:
    def scenario(t: T) -> Any:
        y = t.lib.tensor(2.0)
        _, vjp_fn = t.lib.func.vjp(lambda x: y, t.lib.tensor(1.0))
        return vjp_fn(t.lib.tensor(1.0))

    _both(torch, scenario)


def test_unrelated_vjp_multiple_inputs_outputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        y, v = t.lib.tensor(2.0), t.lib.tensor(1.0)
        _, vjp_fn = t.lib.func.vjp(lambda w, x: (y, y, x), t.lib.tensor(3.0), t.lib.tensor(4.0))
        return vjp_fn((v, v, v))

    _both(torch, scenario)


def test_unrelated_hessian(torch: Any) -> None:
    def scenario(t: T) -> Any:
        W = _t(t, (5, 3))
        jacrev = t.lib.func.jacrev
        return jacrev(jacrev(lambda x: W @ x))(_t(t, (3,), 1))

    _both(torch, scenario)


def test_vjp_pytree_input(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, v = _t(t), _t(t, seed=1)
        out, vjp_fn = t.lib.func.vjp(lambda x: x[0] * x[1][0], (x, (x, x)))
        return [out, _flat(vjp_fn(v))]

    _both(torch, scenario)


def test_vjp_pytree_output(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, v1, v2, v3 = (_t(t, seed=s) for s in range(4))
        _, vjp_fn = t.lib.func.vjp(lambda x: (x, (x, x)), x)
        return vjp_fn((v1, (v2, v3)))

    _both(torch, scenario)


def test_vjp_outputs_can_any_pytree(torch: Any) -> None:
    def scenario(t: T) -> Any:
        vjp = t.lib.func.vjp
        x, v = _t(t, (2, 3)), _t(t, (2, 3), 1)

        def run(output: Any) -> Any:
            _, vjp_fn = vjp(lambda _: output, x)
            return vjp_fn(v)

        errors = [_catch(lambda o=o: run(o)) for o in [None, (), 1, True, 12.2, "abc"]]
        out_list, fn = vjp(lambda x: [x, x.sum()], x)
        grad_list = fn([v, v.sum()])
        out_dict, fn = vjp(lambda x: {"x": x, "xsum": x.sum()}, x)
        grad_dict = fn({"x": v, "xsum": v.sum()})

        def composite(x: Any) -> Any:
            out = x.sum()
            return [(out, {"a": x, "out": [x, out]})]

        out_c, fn = vjp(composite, x)
        grad_c = fn([(v.sum(), {"a": v, "out": [v, v.sum()]})])
        results = [out_list, grad_list, out_dict, grad_dict, out_c, grad_c]
        return [errors, [_flat(r) for r in results]]

    _both(torch, scenario)


def test_vjp_pytree_error(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, v1, v2, v3 = (_t(t, seed=s) for s in range(4))
        _, vjp_fn = t.lib.func.vjp(lambda x: (x, (x, x)), x)
        return _catch(lambda: vjp_fn(((v1, (v2, v3)),)))

    _both(torch, scenario)


def test_vjp_aux_tensor(torch: Any) -> None:
    def scenario(t: T) -> Any:
        vjp = t.lib.func.vjp
        x, v = _t(t, (3,)), _t(t, (3,), 1)
        errors = [
            _catch(lambda: vjp(lambda u: [u, u], x, has_aux=True)),
            _catch(lambda: vjp(lambda u: (u, u + 2, u + 3), x, has_aux=True)),
        ]
        out, vjp_fn, aux = vjp(lambda u: (u.sin(), u.cos()), x, has_aux=True)
        return errors + [out, aux, vjp_fn(v)]

    _both(torch, scenario)


def test_vjp_aux_pytree(torch: Any) -> None:
    def scenario(t: T) -> Any:
        vjp = t.lib.func.vjp
        x, v = _t(t, (3,)), _t(t, (3,), 1)
        out, vjp_fn, aux = vjp(lambda x: (x.sin(), {"a": x.cos(), "b": [x.tan()]}), x, has_aux=True)
        errors = []
        for bad in [1, 1.0, "abc"]:
            errors.append(_catch(lambda bad=bad: vjp(lambda x: (x, bad), x, has_aux=True)))
            errors.append(_catch(lambda bad=bad: vjp(lambda x: (x, [x, bad]), x, has_aux=True)))
        return [out, _flat(aux), vjp_fn(v), errors]

    _both(torch, scenario)


def test_advanced_indexing(torch: Any) -> None:
    def scenario(t: T) -> Any:
        def f(value: Any) -> Any:
            log_prob = t.lib.ones(())
            val = t.lib.zeros(()) > 0
            log_prob[val] = 0
            return value

        def f2(value: Any) -> Any:
            value = value.clone()
            value[value > 0] = 0
            return value.sum()

        g = t.lib.func.grad
        return [g(f)(_t(t)), g(f2)(_t(t, (100,), 1))]

    _both(torch, scenario)


def test_tensor_ctor_inside_grad(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.grad(lambda x: x * t.lib.tensor(2.0))(t.lib.tensor(3.14)))


def _f_no_grad_shift(t: T) -> Any:
    def f(x: Any) -> Any:
        with t.lib.no_grad():
            shift = x**2
        return x**2 - shift

    return f


def test_no_grad_outside(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _t(t, requires_grad=True)
        with t.lib.no_grad():
            y = t.lib.func.grad(t.lib.sin)(x)
        return [y, y.requires_grad]

    _both(torch, scenario)


def test_no_grad_inside(torch: Any) -> None:
    def scenario(t: T) -> Any:
        g, f = t.lib.func.grad, _f_no_grad_shift(t)
        out = [g(f)(_t(t)), g(g(f))(_t(t))]
        x = _t(t, requires_grad=True)
        y = g(f)(x)
        return out + [y, t.lib.autograd.grad(y, x)]

    _both(torch, scenario)


def test_no_grad_mixed(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _t(t, requires_grad=True)
        with t.lib.no_grad():
            y = t.lib.func.grad(_f_no_grad_shift(t))(x)
        return [y, y.requires_grad]

    _both(torch, scenario)


def test_no_grad_nested_simple(torch: Any) -> None:
    def scenario(t: T) -> Any:
        g = t.lib.func.grad

        def h(x: Any) -> Any:
            with t.lib.no_grad():
                shift = g(lambda x: 0.25 * x**4)(x)
            return x**3 - shift

        x = t.lib.tensor(1.5, requires_grad=True)
        y = g(h)(x)
        return [y, t.lib.autograd.grad(y, x)]

    _both(torch, scenario)


def test_no_grad_nested_complicated(torch: Any) -> None:
    def scenario(t: T) -> Any:
        g = t.lib.func.grad

        def f(x: Any) -> Any:
            with t.lib.no_grad():
                shift = x**3
            return x**3 - shift

        def gg(x: Any) -> Any:
            r1 = g(f)(x)
            with t.lib.no_grad():
                shift = g(f)(x)
            return r1 - shift

        x = _t(t, requires_grad=True)
        y = g(gg)(x)
        return [y, t.lib.autograd.grad(y, x)]

    _both(torch, scenario)


def test_no_grad_value(torch: Any) -> None:
    def scenario(t: T) -> Any:
        def h(x: Any) -> Any:
            with t.lib.no_grad():
                _, value = t.lib.func.grad_and_value(lambda x: x**3)(x)
            return x**3 - value

        x = t.lib.tensor(1.6, requires_grad=True)
        y = t.lib.func.grad(h)(x)
        return [y, t.lib.autograd.grad(y, x)]

    _both(torch, scenario)


@pytest.mark.parametrize("where", ["vjp", "vjp_fn", "vjp_only"])
def test_no_grad_outside_vjp(torch: Any, where: str) -> None:
    """Also ``test_no_grad_outside_vjp_fn``, ``test_no_grad_outside_vjp_only``."""

    def scenario(t: T) -> Any:
        x = t.lib.tensor(3.14, requires_grad=True)
        one = t.lib.tensor(1.0)
        if where == "vjp":
            with t.lib.no_grad():
                out, vjp_fn = t.lib.func.vjp(lambda x: x**2, x)
                (y,) = vjp_fn(one)
        elif where == "vjp_fn":
            out, vjp_fn = t.lib.func.vjp(lambda x: x**2, x)
            with t.lib.no_grad():
                (y,) = vjp_fn(one)
        else:
            with t.lib.no_grad():
                out, vjp_fn = t.lib.func.vjp(lambda x: x**2, x)
            (y,) = vjp_fn(one)
        res = [y, y.requires_grad, out.requires_grad]
        if y.requires_grad:
            res.append(t.lib.autograd.grad(y, x))
        if out.requires_grad:
            res.append(t.lib.autograd.grad(out, x))
        return res

    _both(torch, scenario)


@pytest.mark.parametrize(
    "case",
    [
        "grad",
        "nograd_grad",
        "vjp",
        "jvp",
        "jacrev",
        "vmap_grad",
        "grad_vmap",
        "nested",
        "jacrev_grad",
    ],
)
def test_inference_mode_outside(torch: Any, case: str) -> None:
    """``test_inference_mode_outside_{grad, vjp, jvp, jacrev, vmap_grad, grad_vmap}``,
    ``test_inference_mode_nograd_outside_grad``, ``test_inference_mode_nested_grad``,
    ``test_inference_mode_jacrev_grad``: transforms still differentiate inside
    ``inference_mode``."""

    def scenario(t: T) -> Any:
        f = t.lib.func
        x = _t(t, (3,))
        with t.lib.inference_mode():
            if case == "grad":
                return f.grad(lambda x: (x**2).sum())(x)
            if case == "nograd_grad":
                with t.lib.no_grad():
                    return f.grad(lambda x: (x**2).sum())(x)
            if case == "vjp":
                _, vjp_fn = f.vjp(lambda x: (x**2).sum(), x)
                return vjp_fn(t.lib.tensor(1.0))
            if case == "jvp":
                return f.jvp(lambda x: (x**2).sum(), (x,), (t.lib.ones(3),))
            if case == "jacrev":
                return f.jacrev(lambda x: x**2)(x)
            if case == "vmap_grad":
                return f.vmap(f.grad(lambda x: (x**2).sum()))(_t(t, (5, 3), 1))
            if case == "grad_vmap":
                return f.grad(lambda x: f.vmap(lambda x: (x**2).sum())(x).sum())(x)
            if case == "nested":
                return f.grad(f.grad(lambda x: x**3))(_t(t))
            return f.jacrev(f.grad(lambda x: (x**3).sum()))(x)

    _both(torch, scenario)


def test_inference_mode_inside_grad(torch: Any) -> None:
    def scenario(t: T) -> Any:
        def f(x: Any) -> Any:
            with t.lib.inference_mode():
                c = x**2
            return x - c

        with t.lib.inference_mode():
            return t.lib.func.grad(lambda x: f(x).sum())(_t(t, (3,)))

    _both(torch, scenario)


def test_inference_mode_restored(torch: Any) -> None:
    def scenario(t: T) -> Any:
        seen = [t.lib.is_inference_mode_enabled()]
        with t.lib.inference_mode():
            seen.append(t.lib.is_inference_mode_enabled())
            t.lib.func.grad(lambda x: (x**2).sum())(_t(t, (3,)))
            seen.append(t.lib.is_inference_mode_enabled())
        return seen + [t.lib.is_inference_mode_enabled()]

    _both(torch, scenario)
