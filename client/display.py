"""Rich display in Jupyter: a tensor as its PyTorch repr with its metadata, a problem as
a card (title, code, status, detail, the hint that names the fix), a backward graph as
the server's SVG drawing. IPython calls ``_repr_html_``/``_repr_markdown_``/
``_repr_svg_``; nothing here imports IPython."""

from __future__ import annotations

import html
from typing import Any

_BOX = (
    "border:1px solid {c};border-left:4px solid {c};border-radius:4px;padding:6px 10px;margin:4px 0"
)


def tensor_html(text: str, meta: dict[str, Any] | None) -> str:
    """``repr(t)`` in a ``<pre>``, and shape, dtype, grad_fn below it."""
    caption = ""
    if meta is not None:
        facts = [
            f"shape {tuple(meta.get('shape', ()))}",
            str(meta.get("dtype", "")),
            f"grad_fn {meta['grad_fn']}" if meta.get("grad_fn") else "leaf",
        ]
        if meta.get("requires_grad"):
            facts.append("requires_grad")
        caption = f'<div style="color:#6b7280;font-size:85%">{html.escape(" · ".join(facts))}</div>'
    return f'<pre style="margin:0">{html.escape(text)}</pre>{caption}'


def tensor_markdown(text: str) -> str:
    return f"```\n{text}\n```"


def problem_html(title: str, code: str, status: int | None, detail: str, hint: str | None) -> str:
    """A problem as a card: red for the error, the hint in green below."""
    head = f"<b>{html.escape(title)}</b> <code>{html.escape(code)}</code>"
    if status is not None:
        head += f" <span style='color:#6b7280'>HTTP {status}</span>"
    body = f"<div>{html.escape(detail)}</div>"
    if hint:
        body += f"<div style='color:#15803d'><b>hint:</b> {html.escape(hint)}</div>"
    return f'<div style="{_BOX.format(c="#dc2626")}">{head}{body}</div>'


def problem_markdown(
    title: str, code: str, status: int | None, detail: str, hint: str | None
) -> str:
    status_text = f" (HTTP {status})" if status is not None else ""
    text = f"**{title}** `{code}`{status_text}\n\n{detail}"
    if hint:
        text += f"\n\n*hint:* {hint}"
    return text


class Graph(dict):  # type: ignore[type-arg]
    """``s.graph()``: the JSON graph (a dict, as before), drawn as SVG in a notebook.

    The drawing is the server's (``GET .../graph.svg`` with the same roots and options),
    fetched when displayed."""

    def __init__(self, body: dict[str, Any], fetch_svg: Any) -> None:
        super().__init__(body)
        self._fetch_svg = fetch_svg

    def svg(self) -> str:
        """The SVG drawing, as text."""
        return str(self._fetch_svg())

    def _repr_svg_(self) -> str:
        return self.svg()
