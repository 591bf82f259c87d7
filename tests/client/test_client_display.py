"""Rich display in notebooks: tensors and problems as HTML/Markdown, graphs as SVG."""

from __future__ import annotations

import pytest

from client import Session, errors


def test_tensor_html_and_markdown(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert y._repr_markdown_() == "```\ntensor([2., 4.], grad_fn=<MulBackward0>)\n```"
    page = y._repr_html_()
    assert "<pre" in page and "tensor([2., 4.], grad_fn=&lt;MulBackward0&gt;)" in page
    assert "shape (2,)" in page and "grad_fn MulBackward0" in page


def test_a_problem_renders_with_its_hint(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True)
    y = (x**2).sum()
    y.backward()
    with pytest.raises(errors.GradserveError) as info:
        y.backward()
    err = info.value
    page = err._repr_html_()
    assert "graph_freed" in page and "HTTP 409" in page and "retain_graph=true" in page
    text = err._repr_markdown_()
    assert text.startswith("**Graph already freed** `graph_freed` (HTTP 409)")
    assert "*hint:*" in text


def test_a_graph_draws_itself_as_svg(session: Session) -> None:
    x = session.tensor([1.0, 2.0], requires_grad=True)
    z = (x * 3).sum()
    g = session.graph([z])
    assert {n["name"] for n in g["nodes"]} == {"SumBackward0", "MulBackward0", "AccumulateGrad"}
    svg = g._repr_svg_()
    assert svg.lstrip().startswith(("<svg", "<?xml")) and "SumBackward0" in svg
