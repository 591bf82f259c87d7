"""``repr`` of remote tensors in PyTorch's style: ``tensor([2., 4.], grad_fn=<PowBackward0>)``."""

from __future__ import annotations

import numpy as np

MAX_ELEMENTS = 1000  # beyond this PyTorch summarizes; we print "[...]" and the shape


def _mode(values: np.ndarray) -> str:
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    if finite.size == 0 or np.all(finite == np.round(finite)):
        return "sci" if nonzero.size and nonzero.max() >= 1e8 else "int"
    if nonzero.size and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8):
        return "sci"
    return "fixed"


def _fmt(value: float, mode: str) -> str:
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    if mode == "int":
        return f"{value:.0f}."
    if mode == "sci":
        return f"{value:.4e}"
    return f"{value:.4f}"


def _items(data: np.ndarray) -> list[str]:
    flat = data.reshape(-1)
    if data.dtype.kind == "f":
        mode = _mode(flat)
        return [_fmt(float(v), mode) for v in flat]
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
    return "[" + ("," + "\n" * (len(shape) - 1) + " " * (indent + 1)).join(rows) + "]"


def tensor_repr(
    data: np.ndarray, *, grad_fn: str | None = None, requires_grad: bool = False
) -> str:
    if data.size == 0:
        body = "[]"
    elif data.size > MAX_ELEMENTS:
        body = "[...]"
    else:
        items = _items(data)
        width = max(len(s) for s in items)
        body = _nest([s.rjust(width) for s in items], data.shape, len("tensor("))
    extras = []
    if data.size > MAX_ELEMENTS or (data.size == 0 and data.ndim != 1):
        extras.append(f"size=({', '.join(map(str, data.shape))}{',' if data.ndim == 1 else ''})")
    if data.dtype == np.float64:
        extras.append("dtype=torch.float64")
    elif data.dtype.kind == "b" and data.size == 0:
        extras.append("dtype=torch.bool")
    elif data.dtype.kind == "i" and data.size == 0:
        extras.append("dtype=torch.int64")
    if grad_fn is not None:
        extras.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body, *extras]) + ")"
