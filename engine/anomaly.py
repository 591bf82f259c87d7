"""Anomaly detection (``torch.autograd.detect_anomaly``/``set_detect_anomaly``): while
on, a backward whose node returns NaN in a gradient stops with PyTorch's error naming
the node, instead of letting the NaN spread into ``.grad``. Context-local, as grad mode
is. Each node recorded while it is on keeps its forward traceback
(``grad_fn.metadata["traceback_"]``), and a backward that fails in that node warns with
it, as PyTorch does. Node creation is on every op's hot path: it reads the process-wide
count ``OPEN`` (contexts where the mode is on) before any lookup."""

from __future__ import annotations

import os
import traceback
import warnings
from contextvars import ContextVar
from typing import Any

import numpy as np

from .errors import InvalidTensorError

# (enabled, check_nan); PyTorch's check_nan flag reads True while anomaly mode is off
_mode: ContextVar[tuple[bool, bool]] = ContextVar("anomaly_mode", default=(False, True))

OPEN = [0]  # contexts that turned the mode on and have not turned it off
_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__))

ENABLED_WARNING = (
    "Anomaly Detection has been enabled. This mode will increase the runtime and should only "
    "be enabled for debugging."
)


class AnomalyError(InvalidTensorError):
    """A backward node returned NaN while anomaly detection was on."""


def is_anomaly_enabled() -> bool:
    return _mode.get()[0]


def is_anomaly_check_nan_enabled() -> bool:
    return _mode.get()[1]


def checks_nan() -> bool:
    """What the backward loop reads once per pass: whether to look for NaN."""
    enabled, check_nan = _mode.get()
    return enabled and check_nan


def _set(mode: tuple[bool, bool]) -> None:
    was = _mode.get()[0]
    _mode.set(mode)
    if mode[0] and not was:
        OPEN[0] += 1
    elif was and not mode[0]:
        OPEN[0] = max(OPEN[0] - 1, 0)


def record(node: Any) -> None:
    """Keep the forward traceback on a node made while the mode is on (the engine's own
    frames left out, as PyTorch's C++ frames are)."""
    if not _mode.get()[0]:
        return
    frames = traceback.extract_stack()
    while frames and frames[-1].filename.startswith(_ENGINE_DIR):
        frames.pop()
    node.metadata["traceback_"] = traceback.format_list(frames)


def report(node: Any) -> None:
    """PyTorch's warning when a backward fails in a node that kept its traceback."""
    if node is None or not _mode.get()[0]:
        return
    stack = node.metadata.get("traceback_")
    if stack is None:
        return
    warnings.warn(
        f"Error detected in {node.name}. Traceback of forward call that caused the error:\n"
        + "".join(stack),
        UserWarning,
        stacklevel=3,
    )


def check_gradients(name: str, grads: tuple[Any, ...]) -> None:
    """PyTorch's message for the first gradient of ``name`` holding a NaN."""
    for i, g in enumerate(grads):
        if g is None:
            continue
        data = g if isinstance(g, np.ndarray) else g._data
        if data.dtype.kind in "fc" and np.isnan(data).any():
            raise AnomalyError(f"Function '{name}' returned nan values in its {i}th output.")


class detect_anomaly:
    """Context manager: anomaly detection on inside the block (warns that it is on)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn(ENABLED_WARNING, UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._previous = _mode.get()
        _set((True, self.check_nan))

    def __exit__(self, *args: Any) -> None:
        _set(self._previous)


class set_detect_anomaly:
    """Set anomaly detection on or off at once; as a context manager, restore the mode
    it found on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = _mode.get()
        _set((bool(mode), bool(check_nan)))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: Any) -> None:
        _set(self._previous)
