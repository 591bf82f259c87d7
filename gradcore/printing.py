"""``repr`` like PyTorch's: ``tensor([2., 4.], grad_fn=<PowBackward0>)``, for the engine's
tensors and the client's handles alike.

A port of ``torch/_tensor_str.py`` at PyTorch's default print options (precision
4, threshold 1000, edgeitems 3, linewidth 80): the same choice between integer,
fixed and scientific notation (from the nonzero finite values), the same
padding, line wrapping and summarization with ``...``, and the same suffixes
(``dtype=`` beyond float32/int64/bool, ``size=`` for empty tensors, then
``grad_fn=`` or ``requires_grad=True``). Users paste these strings next to
PyTorch's.

Dependency-free, as all of ``gradcore``: ``data`` is any array-like with ``shape``,
``ndim``, ``size``, slicing and ``tolist()`` (a numpy array), read only where shown,
so a summarized print of a large tensor converts a few dozen elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_DTYPES = ("float32", "int64", "bool")  # the dtypes a repr does not name


@dataclass(frozen=True)
class PrintOptions:
    """PyTorch's ``torch.set_printoptions`` fields, at their defaults."""

    precision: int = 4
    threshold: int = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


DEFAULT_OPTIONS = PrintOptions()


class _Formatter:
    """Picks the notation and column width from the values shown, as PyTorch's does."""

    def __init__(self, values: list[Any], floating: bool, opts: PrintOptions) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        self.precision = opts.precision
        if not floating:
            for value in values:
                self.max_width = max(self.max_width, len(str(value)))
        else:
            self._scan_floats(values)
        if opts.sci_mode is not None:
            self.sci_mode = opts.sci_mode

    def _scan_floats(self, values: list[float]) -> None:
        nonzero = [v for v in values if math.isfinite(v) and v != 0]
        if not nonzero:
            return
        magnitude = [abs(v) for v in nonzero]
        lo, hi = min(magnitude), max(magnitude)
        p = self.precision
        self.int_mode = all(v == math.ceil(v) for v in nonzero)
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                self.max_width = max(len(f"{v:.{p}e}") for v in nonzero)
            else:
                # integers print with a trailing "." to show the dtype is floating
                self.max_width = max(len(f"{v:.0f}") + 1 for v in nonzero)
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            self.max_width = max(len(f"{v:.{p}e}") for v in nonzero)
        else:
            self.max_width = max(len(f"{v:.{p}f}") for v in nonzero)

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


def _flat(nested: Any) -> list[Any]:
    if not isinstance(nested, list):
        return [nested]
    return [v for item in nested for v in _flat(item)]


def _shown(data: Any, summarize: bool, edge: int) -> list[Any]:
    """The elements a print shows, flat (the edges of every long axis when summarized)."""
    if data.ndim == 0 or not summarize:
        return _flat(data.tolist())
    n = data.shape[0]
    if data.ndim == 1:
        return data[:edge].tolist() + data[n - edge :].tolist() if n > 2 * edge else data.tolist()
    rows = [*range(edge), *range(n - edge, n)] if n > 2 * edge else range(n)
    return [v for i in rows for v in _shown(data[i], summarize, edge)]


def _vector(data: Any, indent: int, summarize: bool, fmt: _Formatter, opts: PrintOptions) -> str:
    per_line = max(1, (opts.linewidth - indent) // (fmt.max_width + 2))
    edge, n = opts.edgeitems, data.shape[0]
    if summarize and n > 2 * edge:
        items = (
            [fmt.format(v) for v in data[:edge].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in data[n - edge :].tolist()]
        )
    else:
        items = [fmt.format(v) for v in data.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(data: Any, indent: int, summarize: bool, fmt: _Formatter, opts: PrintOptions) -> str:
    if data.ndim == 0:
        return fmt.format(data.tolist())
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


def _body(data: Any, floating: bool, indent: int, opts: PrintOptions) -> str:
    if data.size == 0:
        return "[]"
    summarize = data.size > opts.threshold
    fmt = _Formatter(_shown(data, summarize, opts.edgeitems), floating, opts)
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


def _autograd(grad_fn: str | None, requires_grad: bool) -> list[str]:
    if grad_fn is not None:
        return [f"grad_fn=<{grad_fn}>"]
    return ["requires_grad=True"] if requires_grad else []


def tensor_repr(
    data: Any,
    dtype: str,
    *,
    grad_fn: str | None = None,
    requires_grad: bool = False,
    opts: PrintOptions = DEFAULT_OPTIONS,
) -> str:
    """PyTorch's ``repr(tensor)`` for values ``data`` of dtype ``dtype`` (PyTorch's name:
    ``"float32"``); ``grad_fn`` is the node's name (``"PowBackward0"``, ``"Invalid"``)."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if dtype != "float32":  # nothing shows an empty tensor's dtype
            suffixes.append(f"dtype=torch.{dtype}")
    elif dtype not in DEFAULT_DTYPES:
        suffixes.append(f"dtype=torch.{dtype}")
    body = _body(data, dtype.startswith("float"), indent, opts)
    suffixes += _autograd(grad_fn, requires_grad)
    return _add_suffixes(prefix + body, suffixes, indent, opts)


def elided_repr(
    shape: tuple[int, ...],
    dtype: str,
    *,
    grad_fn: str | None = None,
    requires_grad: bool = False,
    opts: PrintOptions = DEFAULT_OPTIONS,
) -> str:
    """A large tensor's repr without its values (``tensor([...], size=(100, 50))``): what
    a client prints rather than download a tensor to show it."""
    suffixes = [f"size={tuple(shape)}"]
    if dtype not in DEFAULT_DTYPES:
        suffixes.append(f"dtype=torch.{dtype}")
    suffixes += _autograd(grad_fn, requires_grad)
    return _add_suffixes("tensor([...]", suffixes, len("tensor("), opts)
