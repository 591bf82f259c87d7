"""numpy's floating-point warnings switched off while the engine computes.

inf and NaN are PyTorch's answers (``exp`` overflow, ``log(0)``, ``inf * 0``), never
warnings, so every op's forward and every backward pass run with numpy's errors
ignored. The switch is set once around each forward (``Function.apply``) and once
per backward pass, not per numpy call: ``np.errstate`` costs about 5 us of Python
a use, numpy's own context variable a fraction of one. User code the engine calls
(tensor hooks) gets the user's own numpy state back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

try:  # numpy's own switch behind np.errstate, without its Python
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar,
        _make_extobj,
    )

    _set = _extobj_contextvar.set
    # both C calls, no Python frame: they run around every op
    quiet_on: Callable[[], Any] = functools.partial(_set, _make_extobj(all="ignore"))
    quiet_off: Callable[[Any], None] = _extobj_contextvar.reset

    def current() -> Any:
        """The numpy state in force now (to hand back to user code)."""
        return _extobj_contextvar.get()

    def restore(state: Any) -> Any:
        """Put ``state`` in force; ``quiet_off`` of the result undoes it."""
        return _set(state)

except ImportError:  # pragma: no cover - a numpy without the private switch

    def quiet_on() -> Any:
        """Ignore numpy's floating-point errors; returns what ``quiet_off`` needs."""
        return np.seterr(all="ignore")

    def quiet_off(token: Any) -> None:
        np.seterr(**token)

    def current() -> Any:
        return np.geterr()

    def restore(state: Any) -> Any:
        return np.seterr(**state)


class quiet:  # noqa: N801 - used like np.errstate
    """``np.errstate(all="ignore")`` for numpy work outside a Function's forward or a
    backward pass (helpers called from plain op wrappers)."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = quiet_on()

    def __exit__(self, *exc: object) -> None:
        quiet_off(self.token)
