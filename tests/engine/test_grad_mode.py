"""Grad mode against PyTorch: every spelling runs in torch and in the engine, and
the modes seen (inside, between resumptions, after) must agree."""

from __future__ import annotations

import asyncio
import contextvars
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import engine


def _both(torch: Any, scenario: Callable[[Any], Any]) -> None:
    """Run ``scenario`` with torch and with the engine, each from grad mode on."""
    expected = scenario(torch)
    ctx = contextvars.copy_context()  # the engine's mode is context-local: start fresh
    got = ctx.run(scenario, engine)
    assert torch.is_grad_enabled()
    assert got == expected


def test_set_grad_enabled_as_a_plain_call(torch: Any) -> None:
    def scenario(lib: Any) -> list[bool]:
        seen = [lib.is_grad_enabled()]
        lib.set_grad_enabled(False)
        seen.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        seen.append(lib.is_grad_enabled())
        return seen

    _both(torch, scenario)


def test_set_grad_enabled_as_context_manager_and_decorator(torch: Any) -> None:
    def scenario(lib: Any) -> list[Any]:
        seen = []
        with lib.set_grad_enabled(False):
            seen.append(lib.is_grad_enabled())
            with lib.set_grad_enabled(True):
                seen.append(lib.is_grad_enabled())
            seen.append(lib.is_grad_enabled())
        seen.append(lib.is_grad_enabled())

        @lib.set_grad_enabled(False)
        def f(x: Any) -> Any:
            return (lib.is_grad_enabled(), x * 2)

        seen.append(lib.is_grad_enabled())  # the decorator alone leaves the mode alone
        x = lib.ones(2, requires_grad=True)
        mode, y = f(x)
        seen += [mode, y.requires_grad, lib.is_grad_enabled()]
        lib.set_grad_enabled(False)
        g = lib.set_grad_enabled(True)(lambda: lib.is_grad_enabled())
        seen += [lib.is_grad_enabled(), g(), lib.is_grad_enabled()]
        lib.set_grad_enabled(True)
        return seen

    _both(torch, scenario)


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "inference_mode"])
@pytest.mark.parametrize("parens", [True, False])
def test_decorators_with_and_without_parentheses(torch: Any, name: str, parens: bool) -> None:
    def scenario(lib: Any) -> list[Any]:
        manager = getattr(lib, name)
        deco = manager() if parens else manager
        seen = []
        for outer in (True, False):
            lib.set_grad_enabled(outer)

            @deco
            def f(x: Any) -> Any:
                """Doubles."""
                return lib.is_grad_enabled(), (x * 2).requires_grad

            seen += [f(lib.ones(2, requires_grad=True)), f.__doc__, f.__name__]
            seen.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        return seen

    _both(torch, scenario)


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "inference_mode"])
def test_context_managers_restore_the_mode_they_found(torch: Any, name: str) -> None:
    def scenario(lib: Any) -> list[Any]:
        seen = []
        for outer in (True, False):
            lib.set_grad_enabled(outer)
            manager = getattr(lib, name)()
            # no_grad/enable_grad objects may be re-entered; torch's inference_mode object
            # keeps one guard, so it is nested as a fresh one
            inner = getattr(lib, name)() if name == "inference_mode" else manager
            with manager:
                seen.append(lib.is_grad_enabled())
                with inner:
                    seen.append(lib.is_grad_enabled())
            seen.append(lib.is_grad_enabled())
            try:
                with getattr(lib, name)():
                    raise KeyError("inside")
            except KeyError:
                seen.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        return seen

    _both(torch, scenario)


def test_inference_mode_false_enables_grad(torch: Any) -> None:
    def scenario(lib: Any) -> list[bool]:
        seen = []
        with lib.no_grad():
            with lib.inference_mode(False):
                seen.append(lib.is_grad_enabled())
            seen.append(lib.is_grad_enabled())
        with lib.inference_mode():
            seen.append(lib.is_inference_mode_enabled())
            with lib.inference_mode(mode=False):
                seen.append(lib.is_inference_mode_enabled())
        seen.append(lib.is_inference_mode_enabled())
        return seen

    _both(torch, scenario)


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "set_grad_enabled"])
def test_generator_resumptions_run_in_the_mode(torch: Any, name: str) -> None:
    def scenario(lib: Any) -> list[Any]:
        deco = lib.set_grad_enabled(False) if name == "set_grad_enabled" else getattr(lib, name)()
        seen: list[Any] = []

        @deco
        def gen(n: int) -> Any:
            for _ in range(n):
                got = yield lib.is_grad_enabled()
                seen.append(("sent", got, lib.is_grad_enabled()))
            return "done"

        for outer in (True, False):
            lib.set_grad_enabled(outer)
            g = gen(3)
            seen.append(next(g))
            seen.append(lib.is_grad_enabled())  # the caller's mode between resumptions
            seen.append(g.send("a"))
            lib.set_grad_enabled(not outer)
            seen.append(g.send("b"))
            try:
                g.send("c")
            except StopIteration as stop:
                seen.append(stop.value)
            seen.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        return seen

    _both(torch, scenario)


def test_generator_throw_and_close_run_in_the_mode(torch: Any) -> None:
    def scenario(lib: Any) -> list[Any]:
        seen: list[Any] = []

        @lib.no_grad()
        def gen() -> Any:
            while True:
                try:
                    yield lib.is_grad_enabled()
                except ValueError:
                    seen.append(("caught", lib.is_grad_enabled()))
                except GeneratorExit:
                    seen.append(("closing", lib.is_grad_enabled()))
                    raise

        g = gen()
        seen.append(next(g))
        seen.append(g.throw(ValueError("x")))
        seen.append(lib.is_grad_enabled())
        g.close()
        seen.append(lib.is_grad_enabled())
        return seen

    _both(torch, scenario)


@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "inference_mode"])
def test_coroutines_are_wrapped_as_torch_wraps_them(torch: Any, name: str) -> None:
    """PyTorch wraps an ``async def`` like a plain function: the mode holds while the
    coroutine is created, and its body runs in the mode of whoever awaits it."""

    def scenario(lib: Any) -> list[Any]:
        @getattr(lib, name)()
        async def f() -> bool:
            await asyncio.sleep(0)
            return lib.is_grad_enabled()

        seen = [asyncio.iscoroutinefunction(f)]
        for outer in (True, False):
            lib.set_grad_enabled(outer)
            seen.append(asyncio.run(f()))
            seen.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        return seen

    _both(torch, scenario)


def test_no_grad_on_a_class_warns_and_wraps_its_constructor(torch: Any) -> None:
    def scenario(lib: Any) -> list[Any]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")

            @lib.no_grad
            class Model:
                def __init__(self, x: Any) -> None:
                    self.mode = lib.is_grad_enabled()
                    self.y = x * 2

        messages = [(w.category, str(w.message)) for w in caught]
        m = Model(lib.ones(2, requires_grad=True))
        return [messages, isinstance(Model, type), m.mode, m.y.requires_grad]

    _both(torch, scenario)


def test_grad_mode_is_context_local() -> None:
    """Concurrent requests each see their own mode (a ContextVar, unlike torch's
    thread-local state, which is what the service needs)."""
    engine.set_grad_enabled(True)
    ctx = contextvars.copy_context()
    ctx.run(engine.set_grad_enabled, False)
    assert engine.is_grad_enabled()
    assert ctx.run(engine.is_grad_enabled) is False
