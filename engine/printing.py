"""``repr`` like PyTorch's: ``tensor([2., 4.], grad_fn=<PowBackward0>)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import dtypes

if TYPE_CHECKING:
    from .tensor import Tensor


def _float_formatter(values: np.ndarray) -> tuple[str, int]:
    finite = values[np.isfinite(values)]
    if finite.size == 0 or np.all(finite == np.round(finite)):
        nonzero = np.abs(finite[finite != 0])
        if nonzero.size and nonzero.max() >= 1e8:
            return "sci", 4
        return "int", 0
    nonzero = np.abs(finite[finite != 0])
    if nonzero.size and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8):
        return "sci", 4
    return "fixed", 4


def _format(value: float, mode: str, precision: int) -> str:
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    if mode == "int":
        return f"{value:.0f}."
    if mode == "sci":
        return f"{value:.{precision}e}"
    return f"{value:.{precision}f}"


def _elements(data: np.ndarray) -> list[str]:
    flat = data.reshape(-1)
    if data.dtype.kind == "f":
        mode, precision = _float_formatter(flat)
        return [_format(float(v), mode, precision) for v in flat]
    if data.dtype.kind == "b":
        return ["True" if v else "False" for v in flat]
    return [str(int(v)) for v in flat]


def _nest(items: list[str], shape: tuple[int, ...], indent: int) -> str:
    if not shape:
        return items[0]
    if len(shape) == 1:
        return "[" + ", ".join(items) + "]"
    step = len(items) // shape[0] if shape[0] else 0
    rows = [_nest(items[i * step : (i + 1) * step], shape[1:], indent + 1) for i in range(shape[0])]
    sep = "," + "\n" * (len(shape) - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def tensor_repr(t: Tensor) -> str:
    data = t.data
    if data.size > 1000:
        body = "[...]"
    else:
        items = _elements(data)
        width = max((len(s) for s in items), default=0)
        items = [s.rjust(width) for s in items]
        body = _nest(items, data.shape, len("tensor("))
    if data.size == 0:
        body = "[]"
    extras = []
    if data.size == 0 and data.ndim != 1:
        extras.append(f"size=({', '.join(map(str, data.shape))}{',' if data.ndim == 1 else ''})")
    default = dtypes.DEFAULT_FLOAT if data.dtype.kind == "f" else None
    if data.dtype.kind == "f" and data.dtype != default:
        extras.append(f"dtype=torch.{dtypes.torch_name(data.dtype)}")
    if data.dtype.kind == "b" and data.size == 0:
        extras.append("dtype=torch.bool")
    if data.dtype.kind == "i" and data.size == 0:
        extras.append("dtype=torch.int64")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body, *extras]) + ")"
