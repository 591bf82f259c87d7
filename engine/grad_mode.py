"""Grad mode: whether ops record a graph. Context-local (a ContextVar), so
concurrent requests in one process never see each other's mode.

The classes follow ``torch.autograd.grad_mode`` call for call:
``set_grad_enabled(False)`` sets the mode at once (a plain call), and restores
the mode it found when used as a context manager or decorator; ``no_grad``,
``enable_grad`` and ``inference_mode`` are context managers and decorators,
with or without parentheses. A decorated generator function runs each
resumption in the mode (the mode does not leak to its caller between
``yield``s); a decorated coroutine function, as in PyTorch, only creates its
coroutine in the mode (the body runs in the mode of whoever awaits it).
Decorating a class warns and wraps its constructor, as PyTorch does.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Generator
from contextvars import ContextVar
from typing import Any, TypeVar

_enabled: ContextVar[bool] = ContextVar("grad_enabled", default=True)
_inference: ContextVar[bool] = ContextVar("inference_mode", default=False)

F = TypeVar("F", bound=Callable[..., Any])

CLASS_DECORATION_WARNING = (
    "Decorating classes is deprecated and will be disabled in future versions. You should "
    "only decorate functions or methods. To preserve the current behavior of class "
    "decoration, you can directly decorate the `__init__` method and nothing else."
)


def is_grad_enabled() -> bool:
    return _enabled.get()


def is_inference_mode_enabled() -> bool:
    return _inference.get()


def _wrap_generator(factory: Callable[[], Any], func: Callable[..., Any]) -> Callable[..., Any]:
    """Each resumption of the generator runs inside a fresh context from ``factory``;
    between ``yield``s the caller's mode is back (PyTorch's ``_wrap_generator``)."""

    @functools.wraps(func)
    def generator_context(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        gen = func(*args, **kwargs)
        try:
            with factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with factory():
                        gen.close()
                    raise
                except BaseException as exc:
                    with factory():
                        response = gen.throw(exc)
                else:
                    with factory():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_context


class _DecoratorContextManager:
    """A context manager that is also a decorator; each call of the decorated
    function enters a fresh ``clone()``."""

    def __call__(self, orig_func: F) -> F:
        if inspect.isclass(orig_func):
            warnings.warn(CLASS_DECORATION_WARNING, FutureWarning, stacklevel=2)
            cls = orig_func
            func: Callable[..., Any] = lambda *args, **kwargs: cls(*args, **kwargs)  # noqa: E731
        else:
            func = orig_func
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)  # type: ignore[return-value]
        factory = self.clone

        @functools.wraps(func)
        def decorate_context(*args: Any, **kwargs: Any) -> Any:
            with factory():
                return func(*args, **kwargs)

        return decorate_context  # type: ignore[return-value]

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError

    def clone(self) -> _DecoratorContextManager:
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func: Any = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class set_grad_enabled(_DecoratorContextManager):
    """``set_grad_enabled(mode)``: sets grad mode now; as a context manager or decorator,
    the mode found at construction comes back on exit."""

    def __init__(self, mode: bool) -> None:
        self.prev = _enabled.get()
        self.mode = bool(mode)
        _enabled.set(self.mode)

    def __call__(self, orig_func: F) -> F:
        _enabled.set(self.prev)  # as a decorator it only applies inside the function
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        _enabled.set(self.mode)

    def __exit__(self, *exc: object) -> None:
        _enabled.set(self.prev)

    def __repr__(self) -> str:
        return f"engine.set_grad_enabled(mode={self.mode})"

    def clone(self) -> set_grad_enabled:
        return self.__class__(self.mode)


class no_grad(_NoParamDecoratorContextManager):
    """``with no_grad():`` builds no graph (``torch.no_grad``)."""

    def __init__(self, orig_func: Any = None) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _enabled.get()
        _enabled.set(False)

    def __exit__(self, *exc: object) -> None:
        _enabled.set(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """``with enable_grad():`` records again inside a ``no_grad`` block."""

    def __init__(self, orig_func: Any = None) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _enabled.get()
        _enabled.set(True)

    def __exit__(self, *exc: object) -> None:
        _enabled.set(self.prev)


class inference_mode(_DecoratorContextManager):
    """``inference_mode(mode=True)``: grad mode off (and back on with ``mode=False``),
    as PyTorch's InferenceMode guard sets it. The engine has no separate inference
    tensors: results made under it are plain tensors without history."""

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self._prev: list[tuple[bool, bool]] = []

    def __enter__(self) -> None:
        self._prev.append((_enabled.get(), _inference.get()))
        _enabled.set(not self.mode)
        _inference.set(self.mode)

    def __exit__(self, *exc: object) -> None:
        grad, inference = self._prev.pop()
        _enabled.set(grad)
        _inference.set(inference)

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)
