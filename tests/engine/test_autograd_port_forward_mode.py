"""PyTorch's ``TestAutogradForwardMode`` (``test/test_autograd.py``), cases on the engine's
``forward_ad`` written from upstream's: dual levels, packing and unpacking, size and
dtype checks, views and in-place writes of duals, and the errors (class and message),
each run with torch and with the engine. Not ported: storage/metadata checks on
``as_strided``, inference tensors, subclass and CUDA cases."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.engine.test_autograd_port_eager_transforms import _t
from tests.engine.test_autograd_port_functional import _both, _catch

T = SimpleNamespace


def _fw(t: T) -> Any:
    return t.lib.autograd.forward_ad


def test_forward_level_cleanup(torch: Any) -> None:
    """A dual made in a level has no tangent once the level is gone."""

    def scenario(t: T) -> Any:
        fw = _fw(t)
        x, tx = _t(t, (3,)), _t(t, (3,), 1)
        with fw.dual_level():
            dual = fw.make_dual(x, tx)
            inside = fw.unpack_dual(dual).tangent
        return [inside, fw.unpack_dual(dual).tangent is None, dual]

    _both(torch, scenario)


def test_size_check(torch: Any) -> None:
    def scenario(t: T) -> Any:
        fw = _fw(t)
        x = _t(t, (3,))
        with fw.dual_level():
            return [
                _catch(lambda: fw.make_dual(x, _t(t, (4,)))),
                _catch(lambda: fw.make_dual(x, _t(t, (3,)).double())),
                _catch(lambda: fw.make_dual(x, t.lib.ones(3, dtype=t.int64))),
            ]

    _both(torch, scenario)


def test_nested_level(torch: Any) -> None:
    def scenario(t: T) -> Any:
        fw = _fw(t)
        with fw.dual_level() as lvl:
            first = lvl
            err = _catch(lambda: fw.enter_dual_level())
        return [first, err]

    _both(torch, scenario)


def test_make_dual_outside_level(torch: Any) -> None:
    def scenario(t: T) -> Any:
        fw = _fw(t)
        return [
            _catch(lambda: fw.make_dual(_t(t, (2,)), _t(t, (2,), 1))),
            fw.unpack_dual(_t(t, (2,))).tangent is None,
        ]

    _both(torch, scenario)


def test_basic_packing_unpacking(torch: Any) -> None:
    def scenario(t: T) -> Any:
        fw = _fw(t)
        foo, bar = _t(t, (2,)), _t(t, (2,), 1)
        with fw.dual_level():
            baz = fw.make_dual(foo, bar)
            baz_primal, baz_tangent = fw.unpack_dual(baz)
            unpacked = fw.unpack_dual(baz)
            named = [unpacked.primal, unpacked.tangent]
            # a tensor without a tangent unpacks to (itself, None)
            plain = fw.unpack_dual(foo)
            out = fw.unpack_dual(baz * 2 + foo.sin())
        return [baz_primal, baz_tangent, named, plain.tangent is None, out.primal, out.tangent]

    _both(torch, scenario)


def test_advanced_packing_unpacking(torch: Any) -> None:
    """Views and in-place writes of duals: the tangent follows the view and the write."""

    def scenario(t: T) -> Any:
        fw = _fw(t)
        foo, bar = _t(t, (2, 3)), _t(t, (2, 3), 1)
        with fw.dual_level():
            dual = fw.make_dual(foo.clone(), bar)
            view = dual[0]
            view_tangent = fw.unpack_dual(view).tangent
            dual.mul_(2)
            after_write = fw.unpack_dual(view).tangent
            y = _t(t, (3,), 2)
            y_dual = fw.make_dual(y.clone(), _t(t, (3,), 3))
            base = t.lib.zeros(2, 3)
            base[1] = y_dual  # a write of a dual into a plain tensor gives it a tangent
            base_tangent = fw.unpack_dual(base).tangent
        return [view_tangent, after_write, base_tangent]

    _both(torch, scenario)


def test_grad_cleanup(torch: Any) -> None:
    """Reverse-mode gradients through a dual's primal are unaffected by its tangent."""

    def scenario(t: T) -> Any:
        fw = _fw(t)
        foo = _t(t, (2,), requires_grad=True)
        bar = _t(t, (2,), 1)
        with fw.dual_level():
            dual = fw.make_dual(foo, bar)
            (dual * dual).sum().backward()
            tangent = fw.unpack_dual(dual * dual).tangent
        return [foo.grad, tangent]

    _both(torch, scenario)


def test_detach_view_tracking(torch: Any) -> None:
    def scenario(t: T) -> Any:
        fw = _fw(t)
        with fw.dual_level():
            dual = fw.make_dual(_t(t, (2,)), _t(t, (2,), 1))
            detached = dual.detach()
            return [fw.unpack_dual(detached).tangent is None, detached]

    _both(torch, scenario)


def test_non_differentiable(torch: Any) -> None:
    """Integer and boolean results carry no tangent."""

    def scenario(t: T) -> Any:
        fw = _fw(t)
        with fw.dual_level():
            dual = fw.make_dual(_t(t, (3,)), _t(t, (3,), 1))
            return [
                fw.unpack_dual(dual > 0).tangent is None,
                fw.unpack_dual(dual.argmax()).tangent is None,
                fw.unpack_dual(dual.round()).tangent,
            ]

    _both(torch, scenario)


def test_exit_dual_level_errors(torch: Any) -> None:
    def scenario(t: T) -> Any:
        fw = _fw(t)
        lvl = fw.enter_dual_level()
        wrong = _catch(lambda: fw.exit_dual_level(level=lvl + 1))
        fw.exit_dual_level(level=lvl)
        return [lvl, wrong]

    _both(torch, scenario)
