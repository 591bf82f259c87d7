"""functorch's ``test/functorch/test_vmap.py`` ``TestVmapAPI``, ported: ``torch.func.vmap``
on the engine against torch, in_dims/out_dims (nested, negative, None, pytrees), the
errors (class and message) it raises, run once per library. Not ported: ``data_ptr``
identity (the engine's results are its own arrays), 64-dim tensors, torch's fallback
warnings and ``torch.equal`` batching rules."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.engine.test_autograd_port_eager_transforms import _flat, _t
from tests.engine.test_autograd_port_functional import _both, _catch

T = SimpleNamespace


def test_func_with_no_inputs_or_tensors(torch: Any) -> None:
    """``test_func_with_no_inputs``, ``test_func_with_no_tensors``."""

    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        return [
            _catch(lambda: vmap(lambda: t.lib.ones(3))()),
            _catch(lambda: vmap(lambda x: t.lib.ones(3))()),
            _catch(lambda: vmap(lambda x: t.lib.ones(3), (None,))(1)),
        ]

    _both(torch, scenario)


def test_constant_function(torch: Any) -> None:
    _both(torch, lambda t: t.lib.func.vmap(lambda x: t.lib.tensor(3.14))(t.lib.ones(3)))


def test_inputs_and_outputs(torch: Any) -> None:
    """``test_single_input``, ``test_multiple_inputs``, ``test_multiple_outputs``,
    ``test_multiple_outputs2``."""

    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        x, y = _t(t, (2, 3)), _t(t, (2, 3), 1)
        v = _t(t, (3,), 2)
        return [
            vmap(lambda x: x * x)(x),
            vmap(t.lib.mul)(x, y),
            vmap(lambda x: (x * x, x * x * x))(v),
            _flat(vmap(lambda x: (x, x))(v)),
            _flat(vmap(lambda x: [x, x])(v)),
            _flat(vmap(lambda x: [x])(v)),
        ]

    _both(torch, scenario)


def test_nested(torch: Any) -> None:
    """``test_nested_with_same_map_dim``, ``test_nested_with_different_map_dim``,
    ``test_noop_in_inner_vmap``, ``test_nested_with_diag_embed``."""

    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        x, y = _t(t, (2, 3, 5)), _t(t, (2, 3, 5), 1)
        a, b, c = _t(t, (2, 3)), _t(t, (5, 3), 1), _t(t, (7, 3), 2)
        return [
            vmap(vmap(t.lib.mul))(x, y),
            vmap(vmap(vmap(t.lib.mul)))(x, y),
            vmap(lambda x: vmap(lambda y: x * y)(b))(a),
            vmap(lambda x: vmap(lambda y: vmap(lambda z: x * y * z)(c))(b))(a),
            vmap(lambda x: vmap(lambda y: x)(_t(t, (5,))))(_t(t, (3,), 1)),
            vmap(vmap(t.lib.diag_embed))(_t(t, (3, 3, 5))),
        ]

    _both(torch, scenario)


def test_out_dims(torch: Any) -> None:
    """``test_nonzero_out_dims``, ``test_multiple_out_dims``, ``test_nested_out_dims``,
    ``test_out_dims_edge_case`` (values and shapes; not data_ptr)."""

    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        t4, o4 = _t(t, (2, 3, 5, 7)), _t(t, (2, 3, 5, 7), 1)
        x, y = _t(t, (2, 3, 5)), _t(t, (2, 3, 5), 1)
        a, b = _t(t, (2, 3)), _t(t, (5, 3), 1)
        return [
            vmap(lambda x: x, out_dims=1)(a),
            vmap(lambda x: x, out_dims=2)(t4),
            vmap(lambda x: x, out_dims=-1)(t4),
            vmap(lambda x, y: (x, y), out_dims=2)(t4, o4),
            vmap(lambda x, y: (x, x * y, x * y * y), out_dims=1)(x, y),
            vmap(lambda x: (x, x), out_dims=(0, 1))(x),
            vmap(lambda x, y: (x, x, x, x * y), out_dims=(-1, 0, 1, 2))(x, y),
            vmap(lambda y: vmap(lambda x: x, out_dims=1)(y))(t4),
            vmap(lambda y: vmap(lambda x: x, out_dims=1)(y), out_dims=1)(t4),
            vmap(lambda y: vmap(lambda x: x, out_dims=-1)(y), out_dims=-1)(t4),
            vmap(lambda y: vmap(lambda x: x * y, out_dims=1)(a), out_dims=-1)(b),
            vmap(lambda x: x, out_dims=(1,))(a),
        ]

    _both(torch, scenario)


def test_out_dims_none(torch: Any) -> None:
    """``test_out_dims_none_tuple``, ``test_out_dims_none``, ``test_out_dims_normal_tensor``."""

    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        tensor = _t(t, (2, 3))

        def adds(x: Any) -> Any:
            x.add_(1)
            return None, "hello world"

        def adds_str(x: Any) -> Any:
            x.add_(1)
            return "hello world"

        return [
            _flat(vmap(lambda x: (x, "hello world"), out_dims=(0, None))(tensor)),
            _flat(vmap(adds, out_dims=(None, None))(tensor.clone())),
            _catch(lambda: vmap(lambda x: x, out_dims=None)(tensor)),
            vmap(adds_str, out_dims=None)(tensor.clone()),
            vmap(lambda x: t.lib.arange(3))(tensor),
            vmap(lambda x: t.lib.arange(3), out_dims=None)(tensor),
        ]

    _both(torch, scenario)


def test_pytree_returns(torch: Any) -> None:
    """``test_pytree_returns``, ``test_pytree_returns_outdims``,
    ``test_pytree_returns_broadcast_simple``, ``test_pytree_returns_broadcast_nested``."""

    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        x = _t(t, (2, 3))

        def f(x: Any) -> Any:
            y = x.sin()
            return y, (y, y), [y, (y, y)]

        def g(x: Any) -> Any:
            y = x.sin()
            return y, (y, y)

        return [
            _flat(vmap(f)(x)),
            _flat(vmap(g, out_dims=(0, (0, 1)))(x)),
            _flat(vmap(g, out_dims=1)(x)),
            _flat(vmap(g, out_dims=(0, 1))(x)),
        ]

    _both(torch, scenario)


def test_out_dims_errors(torch: Any) -> None:
    """``test_out_dims_must_be_int_or_collection_of_int_err_msg``,
    ``test_out_dims_and_num_outputs_mismatch_err_msg``,
    ``test_out_dim_out_of_bounds_err_msg``."""

    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        x = _t(t, (2, 3, 5))
        return [
            _catch(lambda: vmap(lambda x: x, out_dims="lol")(x)),
            _catch(lambda: vmap(lambda x: x, out_dims=("lol",))(x)),
            _catch(lambda: vmap(lambda x: x, out_dims=(0, 0))(x)),
            _catch(lambda: vmap(lambda x: (x, x, x), out_dims=(0, 0, 0, 0))(x)),
            _catch(lambda: vmap(lambda x: (x, x), out_dims=(0,))(x)),
            _catch(lambda: vmap(lambda x: (x, x, x), out_dims=(0, 0))(x)),
            _catch(lambda: vmap(lambda x: x, out_dims=3)(x)),
            _catch(lambda: vmap(lambda x: x, out_dims=-4)(x)),
        ]

    _both(torch, scenario)


def test_in_dims(torch: Any) -> None:
    """``test_non_zero_in_dims``, ``test_none_in_dims``, ``test_nested_non_default_in_dims``,
    ``test_nested_negative_in_dims``, ``test_non_default_in_dims_out_dims``."""

    def scenario(t: T) -> Any:
        vmap, mul = t.lib.func.vmap, t.lib.mul
        t3 = _t(t, (2, 3, 5))
        x, y, yt = _t(t, (2, 3)), _t(t, (2, 3), 1), _t(t, (3, 2), 2)
        a, b = _t(t, (5, 2, 3), 3), _t(t, (3, 5, 2), 4)
        return [
            vmap(lambda x: x, (1,))(t3),
            vmap(mul, (0, 1))(x, yt),
            vmap(mul, (1, 0))(x, yt),
            vmap(mul, (0, None))(x, y),
            vmap(mul, (0, None))(x, 2),
            vmap(vmap(vmap(mul), (1, 0)), (1, 2))(a, b),
            vmap(mul, (-1, -1))(x, y),
            vmap(lambda x: x, in_dims=1, out_dims=1)(t3),
            vmap(lambda x: x, in_dims=2, out_dims=1)(t3),
            vmap(lambda x: x * 2, in_dims=1, out_dims=1)(t3),
            vmap(lambda x: x * 2, in_dims=2, out_dims=1)(t3),
            vmap(vmap(lambda x: x * 2, 1, 1), 1, 1)(t3),
        ]

    _both(torch, scenario)


@pytest.mark.parametrize("what", ["item", "control_flow"])
def test_data_dependent_throws(torch: Any, what: str) -> None:
    """``test_item_throws``, ``test_data_dependent_control_flow_throws``."""

    def scenario(t: T) -> Any:
        def f(x: Any) -> Any:
            if what == "item":
                return x.item()
            if x:
                return x
            return 0

        return _catch(lambda: t.lib.func.vmap(f)(_t(t, (3,))))

    _both(torch, scenario)


def test_accepts_nested_inputs(torch: Any) -> None:
    def scenario(t: T) -> Any:
        vmap = t.lib.func.vmap
        x, y = _t(t, (2, 3)), _t(t, (2, 3), 1)
        return [
            vmap(lambda z: z[0] + z[1])((x, y)),
            vmap(lambda z: z[0] + z[1], in_dims=(0,))((x, y)),
            vmap(lambda z: z[0] + z[1], in_dims=((0, 1),))((x, y.t())),
            vmap(lambda z: z[0] + z[1])([x, y]),
            vmap(lambda z: z["x"] + z["y"])({"x": x, "y": y}),
            vmap(lambda z: z["x"] + z["y"], in_dims=({"x": 0, "y": 1},))({"x": x, "y": y.t()}),
        ]

    _both(torch, scenario)
