"""``repr`` like PyTorch's: ``tensor([2., 4.], grad_fn=<PowBackward0>)``.

A port of ``torch/_tensor_str.py`` at PyTorch's default print options (precision
4, threshold 1000, edgeitems 3, linewidth 80): the same choice between integer,
fixed and scientific notation (from the nonzero finite values), the same
padding, line wrapping and summarization with ``...``, and the same suffixes
(``dtype=`` for float64, ``size=`` for empty tensors, then ``grad_fn=`` or
``requires_grad=True``). Users paste these strings next to PyTorch's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .errors import EngineError

if TYPE_CHECKING:
    from .tensor import Tensor


@dataclass(frozen=True)
class PrintOptions:
    """PyTorch's ``torch.set_printoptions`` fields, at their defaults."""

    precision: int = 4
    threshold: int = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


DEFAULT_OPTIONS = PrintOptions()
_DEFAULT_DTYPES = (dtypes.DEFAULT_FLOAT, dtypes.int64, dtypes.bool_)


class _Formatter:
    """Picks the notation and column width from the values, as PyTorch's does."""

    def __init__(self, data: np.ndarray, opts: PrintOptions) -> None:
        self.floating = data.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        self.precision = opts.precision
        flat = data.reshape(-1)
        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(str(value)))
        else:
            self._scan_floats(flat)
        if opts.sci_mode is not None:
            self.sci_mode = opts.sci_mode

    def _scan_floats(self, flat: np.ndarray) -> None:
        nonzero = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero.size == 0:
            return
        magnitude = np.abs(nonzero.astype(np.float64))
        lo, hi = float(magnitude.min()), float(magnitude.max())
        values = nonzero.tolist()
        p = self.precision
        self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                self.max_width = max(len(f"{v:.{p}e}") for v in values)
            else:
                # integers print with a trailing "." to show the dtype is floating
                self.max_width = max(len(f"{v:.0f}") + 1 for v in values)
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            self.max_width = max(len(f"{v:.{p}e}") for v in values)
        else:
            self.max_width = max(len(f"{v:.{p}f}") for v in values)

    def format(self, value: Any) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{self.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{self.precision}f}"
        return " " * (self.max_width - len(text)) + text


def _summarized(data: np.ndarray, opts: PrintOptions) -> np.ndarray:
    """The elements a summarized print shows (the edges of every long axis)."""
    edge = opts.edgeitems
    index = [np.r_[0:edge, n - edge : n] if n > 2 * edge else np.arange(n) for n in data.shape]
    return data[np.ix_(*index)] if data.ndim else data


def _vector(
    data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter, opts: PrintOptions
) -> str:
    per_line = max(1, (opts.linewidth - indent) // (fmt.max_width + 2))
    edge = opts.edgeitems
    if summarize and data.shape[0] > 2 * edge:
        items = (
            [fmt.format(v) for v in data[:edge].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in data[-edge:].tolist()]
        )
    else:
        items = [fmt.format(v) for v in data.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(
    data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter, opts: PrintOptions
) -> str:
    if data.ndim == 0:
        return fmt.format(data.item())
    if data.ndim == 1:
        return _vector(data, indent, summarize, fmt, opts)
    n, edge = data.shape[0], opts.edgeitems
    if summarize and n > 2 * edge:
        rows: list[Any] = [*range(edge), None, *range(n - edge, n)]
    else:
        rows = list(range(n))
    parts = [
        "..." if i is None else _nested(data[i], indent + 1, summarize, fmt, opts) for i in rows
    ]
    sep = "," + "\n" * (data.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _body(data: np.ndarray, indent: int, opts: PrintOptions) -> str:
    if data.size == 0:
        return "[]"
    summarize = data.size > opts.threshold
    fmt = _Formatter(_summarized(data, opts) if summarize else data, opts)
    return _nested(data, indent, summarize, fmt, opts)


def _add_suffixes(text: str, suffixes: list[str], indent: int, opts: PrintOptions) -> str:
    """Append ``, suffix`` items, wrapping to a new line past the line width."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1  # PyTorch's count, quirks included
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > opts.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t: Tensor, opts: PrintOptions = DEFAULT_OPTIONS) -> str:
    """PyTorch's ``repr(tensor)`` for this tensor."""
    prefix = "tensor("
    indent = len(prefix)
    data = t.data
    dtype_suffix = f"dtype=torch.{dtypes.torch_name(data.dtype)}"
    suffixes = []
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if data.dtype != dtypes.DEFAULT_FLOAT:  # nothing shows an empty tensor's dtype
            suffixes.append(dtype_suffix)
    elif data.dtype not in _DEFAULT_DTYPES:
        suffixes.append(dtype_suffix)
    body = _body(data, indent, opts)
    try:
        fn = t.grad_fn
    except EngineError:  # a stale view that may not regenerate (PyTorch prints the same)
        suffixes.append("grad_fn=<Invalid>")
        return _add_suffixes(prefix + body, suffixes, indent, opts)
    if fn is not None:
        suffixes.append(f"grad_fn=<{fn.name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent, opts)
