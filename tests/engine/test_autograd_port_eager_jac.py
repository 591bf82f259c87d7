"""functorch's ``test/functorch/test_eager_transforms.py`` ``TestJac``, ``TestHessian`` and
``TestJvp``, ported to ``torch.func`` on the engine: each case runs with torch and with
the engine (``jacrev`` and ``jacfwd`` both, as upstream's ``jacrev_and_jacfwd``); values
within the shared oracle's tolerance, structures, and errors (class and message) agree.
Not ported: ``_preallocate_and_copy`` (a private knob), CUDA devices, complex inputs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.engine.test_autograd_port_eager_transforms import _flat, _t
from tests.engine.test_autograd_port_functional import _both, _catch

T = SimpleNamespace
JACAPIS = ["jacrev", "jacfwd"]


def _jac(t: T, name: str) -> Any:
    return getattr(t.lib.func, name)


@pytest.mark.parametrize("jacapi", JACAPIS)
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_simple(torch: Any, jacapi: str, shape: tuple[int, ...]) -> None:
    """Also ``test_simple_not_flat``."""
    _both(torch, lambda t: _jac(t, jacapi)(t.lib.sin)(_t(t, shape)))


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_take(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        def func(x: Any) -> Any:
            return t.lib.take(x, t.lib.ones(3, dtype=t.int64))

        x = _t(t, (5,))
        return [_jac(t, jacapi)(func)(x), t.lib.autograd.functional.jacobian(func, x)]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_diff_numel(torch: Any, jacapi: str) -> None:
    _both(torch, lambda t: _jac(t, jacapi)(lambda x: x[0, 1:].unsqueeze(-1))(_t(t, (2, 4))))


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_vmap_on_jac_simple(torch: Any, jacapi: str) -> None:
    _both(torch, lambda t: t.lib.func.vmap(_jac(t, jacapi)(t.lib.sin))(_t(t, (2, 3))))


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_nested_jac_simple(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        j = _jac(t, jacapi)
        return j(j(lambda x: x.sin().sum()))(_t(t, (3,)))

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_multiple_args(torch: Any, jacapi: str) -> None:
    _both(torch, lambda t: _jac(t, jacapi)(t.lib.multiply, argnums=1)(_t(t, (3,)), _t(t, (3,), 1)))


@pytest.mark.parametrize("jacapi", JACAPIS)
@pytest.mark.parametrize("argnums", [(0, 1), 0, (0,)])
def test_multiple_outputs_argnums(torch: Any, jacapi: str, argnums: Any) -> None:
    """``test_multiple_outputs_multiple_argnums``, ``test_multiple_outputs_single_argnums``."""

    def scenario(t: T) -> Any:
        def f(x: Any, y: Any) -> Any:
            return 2 * x + 3 * y, 4 * x + 5 * y

        return _flat(_jac(t, jacapi)(f, argnums=argnums)(_t(t, (3,)), _t(t, (3,), 1)))

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_multiple_outputs_pytree(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        def f(x: Any, y: Any) -> Any:
            return {"left": 2 * x + 3 * y, "right": 4 * x + 5 * y}

        return _flat(_jac(t, jacapi)(f, argnums=(0, 1))(_t(t, (3,)), _t(t, (3,), 1)))

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_multiple_inputs_pytree(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        def f(a: Any, b: Any, c: Any) -> Any:
            a0, a1 = a
            return a0 + a1 * 2 + b * 3 + c * 4

        x = _t(t)
        args = ((x, x), x, x)
        j = _jac(t, jacapi)
        return [_flat(j(f, argnums=n)(*args)) for n in ((0, 1, 2), (0,), 0)]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_dimensionality(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        j = _jac(t, jacapi)(lambda x: x)
        a, b = j(_t(t)), j(_t(t, (1,)))
        return [a.dim(), a, b.dim(), b]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_aux_tensor(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        def f(x: Any) -> Any:
            y = x.clone()
            return y, y.cos()

        return list(_jac(t, jacapi)(f, has_aux=True)(_t(t, (3,))))

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_aux_pytree(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        j = _jac(t, jacapi)

        def f(x: Any) -> Any:
            y = x.clone()
            return y, {"a": y.cos(), "b": [y.tan()]}

        x = _t(t, (3,))
        result, aux = j(f, has_aux=True)(x)
        errors = []
        for bad in [1, 1.0, "abc"]:
            errors.append(_catch(lambda bad=bad: j(lambda x: (x, bad), has_aux=True)(x)))
            errors.append(_catch(lambda bad=bad: j(lambda x: (x, [x, bad]), has_aux=True)(x)))
        return [result, _flat(aux), errors]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_outputs_can_any_pytree(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        j = _jac(t, jacapi)
        x = _t(t, (2, 3))
        errors = [_catch(lambda o=o: j(lambda _: o)(x)) for o in [None, (), 1, True, 12.2, "abc"]]

        def composite(x: Any) -> Any:
            out = x.sum()
            return [(out, {"a": x, "out": [x, out]})]

        outs = [
            j(lambda x: [x, x.sum()])(x),
            j(lambda x: {"x": x, "xsum": x.sum()})(x),
            j(composite)(x),
        ]
        return [errors, [_flat(o) for o in outs]]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
@pytest.mark.parametrize("argnums", [0, (0,), (0, 1)])
def test_multiple_inputs_outputs_pytree(torch: Any, jacapi: str, argnums: Any) -> None:
    def scenario(t: T) -> Any:
        def f(a: Any, b: Any, c: Any) -> Any:
            a0, a1 = a
            return a0 + a1 * 2, {"foo": b * 3 + c * 4}

        x = _t(t)
        return _flat(_jac(t, jacapi)(f, argnums=argnums)((x, x), x, x))

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_multiple_inputs_outputs_pytree_multidim(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        def f(dct: Any) -> Any:
            return {"c": dct["a"].sin(), "d": dct["b"].cos()}

        x = _t(t, (3,))
        return _flat(_jac(t, jacapi)(f)({"a": x, "b": x}))

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_unrelated_input_and_output(torch: Any, jacapi: str) -> None:
    """``test_unrelated_input``, ``test_unrelated_output``, ``test_empty_output``."""

    def scenario(t: T) -> Any:
        j = _jac(t, jacapi)
        x, y = _t(t, (2, 3)), _t(t, (2, 3), 1)
        return [
            j(lambda x, y: x, argnums=(0, 1))(x, y),
            j(lambda x: y)(x),
            _catch(lambda: j(lambda x, y: ())(x, y)),
        ]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_argnums(torch: Any, jacapi: str) -> None:
    """``test_argnums_tuple``, ``test_argnums_effect_on_return``,
    ``test_argnums_defaults_to_zero``, ``test_empty_argnums``,
    ``test_out_of_bounds_argnums``, ``test_negative_argnums``, ``test_repeated_argnums``,
    ``test_float_argnums``."""

    def scenario(t: T) -> Any:
        j = _jac(t, jacapi)
        x, y = _t(t, (3,)), _t(t, (3,), 1)
        mul = t.lib.multiply
        out = [
            j(mul, argnums=(0, 1))(x, y),
            j(mul, argnums=(0,))(x, y),
            j(mul, argnums=0)(x, y),
            j(lambda x, y: x * 2 + y * 3)(x, y),
        ]
        errors = [
            _catch(lambda: j(t.lib.sin, argnums=())(x)),
            _catch(lambda: j(t.lib.sin, argnums=2)(x)),
            _catch(lambda: j(t.lib.sin, argnums=-2)(x)),
            _catch(lambda: j(t.lib.sin, argnums=(0, 0))(x)),
            _catch(lambda: j(t.lib.sin, argnums=0.0)(x)),
            _catch(lambda: j(mul, argnums=(1, 0.0))(x, x)),
        ]
        return out + [errors]

    _both(torch, scenario)


def test_hessian_simple(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.hessian(lambda x: x.sin())(_t(t, (3,))))


def _reference_cases(t: T) -> list[tuple[Any, tuple[Any, ...]]]:
    x53, y35 = _t(t, (5, 3), 2), _t(t, (3, 5), 1)
    x3, y3 = _t(t, (3,), 3), _t(t, (3,), 4)
    return [
        (lambda x: 3 * x**2, (_t(t, (2, 3, 5)),)),  # simple
        (lambda x, y: (x.cos() * x) @ y.sin(), (_t(t, (2, 3)), y35)),  # multi_input
        (lambda x, y: ((x * x) @ y, x @ (x.sum(1) * y), y.sum()), (x53, y35)),
        (lambda x, y: (x, y, x, y), (_t(t, (2,)), _t(t, (3,), 1))),  # unrelated_outputs
        (lambda x, y: (x.sum(), y.sum(), x * y), (x3, y3)),  # zero_dim
        (lambda x: t.lib.stack([x, x, x]), (_t(t),)),
        (lambda x, y: (y.sum(), x * y), (_t(t), _t(t, (1,), 1))),
        (lambda x, y, z=3.0: x * y * z, (x3, y3)),  # default_arg
    ]


@pytest.mark.parametrize("jacapi", JACAPIS)
@pytest.mark.parametrize("case", range(8))
def test_against_reference(torch: Any, jacapi: str, case: int) -> None:
    """``test_against_reference_{simple, multi_input, multi_input_multi_output,
    unrelated_outputs, zero_dim, default_arg}``: ``jacrev``/``jacfwd`` of ``f(*inputs)``
    equal ``torch.autograd.functional.jacobian``."""

    def scenario(t: T) -> Any:
        f, inputs = _reference_cases(t)[case]
        expected = t.lib.autograd.functional.jacobian(f, inputs)
        return [_flat(expected), _flat(_jac(t, jacapi)(lambda inp: f(*inp))(inputs))]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_inplace(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        j = _jac(t, jacapi)

        def f(x: Any, y: Any) -> Any:
            y.copy_(x)
            return y

        def g(x: Any, y: Any, z: Any) -> Any:
            x[:2] = y
            return t.lib.vstack([(x**2).sum(), (z**3).sum()])

        return [
            j(f, argnums=0)(_t(t, (2,)), _t(t, (2,), 1)),
            j(g, argnums=(1, 2))(_t(t, (3,)), _t(t, (2,), 1), _t(t, (2,), 2)),
        ]

    _both(torch, scenario)


def test_chunk_jacrev(torch: Any) -> None:
    def scenario(t: T) -> Any:
        jacrev = t.lib.func.jacrev
        x, y = _t(t, (10, 2)), _t(t, (1, 2), 1)

        def f(x: Any, y: Any) -> Any:
            return (x.sin(), x + y), (x + 2, x.sum())

        out = [_flat(jacrev(f, argnums=(0, 1))(x, y))]
        for chunk_size in (1, 2, 3, 4, 7, 10, 1000):
            out.append(_flat(jacrev(f, argnums=(0, 1), chunk_size=chunk_size)(x, y)))
        for bad in (0, -2):
            out.append(_catch(lambda bad=bad: jacrev(f, argnums=(0,), chunk_size=bad)(x, y)))
        return out

    _both(torch, scenario)


def test_chunk_jacrev_composition(torch: Any) -> None:
    def scenario(t: T) -> Any:
        f_ = t.lib.func
        x = _t(t, (10, 2))

        def f(x: Any) -> Any:
            return (x.sin(), x), (x + 2, x.sum())

        expected = f_.vmap(f_.jacrev(f_.jacrev(f)))(x)
        actual = f_.vmap(f_.jacrev(f_.jacrev(f, chunk_size=3), chunk_size=3))(x)
        return [_flat(expected), _flat(actual)]

    _both(torch, scenario)


@pytest.mark.parametrize("jacapi", JACAPIS)
def test_jac_with_non_tensor_args(torch: Any, jacapi: str) -> None:
    def scenario(t: T) -> Any:
        x = _t(t, (3, 3))
        return [
            _jac(t, jacapi)(lambda t_, int_x: t_ + int_x)(x, 3),
            t.lib.autograd.functional.jacobian(lambda t_: t_ + 3, x),
        ]

    _both(torch, scenario)


# -- TestHessian ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(4))
def test_hessian_vectorize_correctness(torch: Any, case: int) -> None:
    """TestHessian's ``test_hessian_vectorize_correctness_{simple, multi_input,
    unrelated_outputs}``: ``torch.func.hessian`` equals the functional API's."""

    def scenario(t: T) -> Any:
        cases = [
            (lambda x: (3 * x**2).sum(), (_t(t, (2, 3, 5)),)),
            (
                lambda x, y, z: ((x.relu() * x) @ y.sin() @ z).sum(),
                (_t(t, (2, 3)), _t(t, (3, 5), 1), _t(t, (5, 5), 2)),
            ),
            (lambda x, y: (x**2).sum(), (_t(t, (2,)), _t(t, (3,), 1))),
            (lambda x, y: t.lib.ones([]), (_t(t, (2,)), _t(t, (3,), 1))),
        ]
        f, inputs = cases[case]
        expected = t.lib.autograd.functional.hessian(f, inputs)
        return [_flat(expected), _flat(t.lib.func.hessian(lambda inp: f(*inp))(inputs))]

    _both(torch, scenario)


def test_jacfwd_different_levels(torch: Any) -> None:
    def scenario(t: T) -> Any:
        f = t.lib.func
        x1 = _t(t, (4, 10, 2))
        A = 0.1 * _t(t, (4, 2, 2), 1)

        def loss(A: Any, x1: Any, x2: Any) -> Any:
            x2_hat = (A @ (x1.T)).T
            return ((x2 - x2_hat) ** 2).sum()

        return [f.vmap(f.jacrev(f.jacrev(loss)))(A, x1, x1), f.vmap(f.hessian(loss))(A, x1, x1)]

    _both(torch, scenario)


# -- TestJvp -------------------------------------------------------------------------------


def test_jvp_simple(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.jvp(t.lib.sin, (_t(t, (2, 3)),), (_t(t, (2, 3), 1),)))


def test_jvp_multiple_inputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, y, tx, ty = (_t(t, (2, 3), s) for s in range(4))
        return t.lib.func.jvp(lambda x, y: x * y, (x, y), (tx, ty))

    _both(torch, scenario)


def test_jvp_pytree_inputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        one = t.lib.tensor(1.0)

        def f(x: Any, y: Any, z: Any) -> Any:
            a, b = x
            return a + 2 * b + 3 * y + 4 * z

        return t.lib.func.jvp(f, ((one, one), one, one), ((one, one), one, one))

    _both(torch, scenario)


def test_jvp_pytree_inputs_error_cases(torch: Any) -> None:
    def scenario(t: T) -> Any:
        jvp = t.lib.func.jvp
        one = t.lib.tensor(1.0)

        def f(x: Any) -> Any:
            return x

        return [
            _catch(lambda: jvp(f, one, one)),
            _catch(lambda: jvp(f, ((one, one), one), (one, one))),
            _catch(lambda: jvp(f, ((one, one), 1), ((one, one), one))),
            _catch(lambda: jvp(f, ((one, one), 1), ((1, one), one))),
            _catch(lambda: jvp(f, ((),), ((),))),
        ]

    _both(torch, scenario)


def test_jvp_unrelated_input_output_and_strict(torch: Any) -> None:
    """``test_unrelated_input``, ``test_unrelated_output``, ``test_strict_mode``."""

    def scenario(t: T) -> Any:
        jvp = t.lib.func.jvp
        x, y, tx, ty = (_t(t, (2, 3), s) for s in range(4))
        return [
            jvp(lambda x, y: x, (x, y), (tx, ty)),
            jvp(lambda x: y, (x,), (tx,)),
            _catch(lambda: jvp(lambda x: (x, y), (x,), (tx,), strict=True)),
        ]

    _both(torch, scenario)


@pytest.mark.xfail(
    strict=True,
    reason="the engine has no transform levels on tensors: an in-place write of a "
    "differentiated value into a tensor made outside grad() is recorded, as eager "
    "autograd records it, where functorch refuses",
)
def test_inplace_on_captures(torch: Any) -> None:
    """TestGradTransform's and TestJvp's ``test_inplace_on_captures``: writing an input
    into a captured tensor inside ``grad``."""

    def scenario(t: T) -> Any:
        x = t.lib.tensor([1.0, 2.0, 3.0])
        captured = _t(t, (3,))

        def foo(x: Any) -> Any:
            captured.copy_(x)
            return (x * captured).sum()

        return _catch(lambda: t.lib.func.grad(foo)(x))

    _both(torch, scenario)


# -- TestLinearize -------------------------------------------------------------------------


def test_linearize_basic(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, tx = _t(t, (3, 3)), _t(t, (3, 3), 1)

        def fn(x: Any) -> Any:
            return x.cos()

        actual_output, jvp_fn = t.lib.func.linearize(fn, x)
        expected = t.lib.func.jvp(fn, (x,), (tx,))
        return [actual_output, jvp_fn(tx), expected]

    _both(torch, scenario)


def test_linearize_return_and_several_inputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x, y = _t(t, (3,)), _t(t, (3,), 1)
        out, jvp_fn = t.lib.func.linearize(lambda a, b: (a * b, (a + b).sin()), x, y)
        return [out, jvp_fn(t.lib.ones(3), t.lib.zeros(3)), jvp_fn(_t(t, (3,), 2), _t(t, (3,), 3))]

    _both(torch, scenario)


def test_linearize_composition_vmap(torch: Any) -> None:
    def scenario(t: T) -> Any:
        x = _t(t, (3, 3))
        out, jvp_fn = t.lib.func.linearize(lambda x: x.sin(), x)
        return [out, t.lib.func.vmap(jvp_fn)(_t(t, (4, 3, 3), 1))]

    _both(torch, scenario)


def test_linearize_errors(torch: Any) -> None:
    def scenario(t: T) -> Any:
        _, jvp_fn = t.lib.func.linearize(t.lib.sin, _t(t, (2,)))
        return [
            _catch(lambda: jvp_fn(t.lib.ones(3))),
            _catch(lambda: jvp_fn(t.lib.ones(2), t.lib.ones(2))),
            _catch(lambda: jvp_fn(t.lib.ones(2, dtype=t.float64))),
        ]

    _both(torch, scenario)
