"""The graph drawing on its own (no browser): valid SVG, the tutorial's shapes, escaping,
freed nodes, deep chains without recursion, and the size cap."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

from service.compute.graph import label_lines, to_dot, to_mermaid
from service.graph_svg import render, render_page, render_svg

SVG = "{http://www.w3.org/2000/svg}"

# z = y ** 3, y = x ** 2 (freed after a backward without retain_graph), out = z + w * x
GRAPH = {
    "roots": ["out"],
    "nodes": [
        {"id": "n0", "name": "AddBackward0", "freed": False, "tensors": ["out"]},
        {"id": "n1", "name": "PowBackward0", "freed": True, "tensors": ["z"]},
        {"id": "n2", "name": "MulBackward0", "freed": True, "tensors": []},
        {"id": "n3", "name": "PowBackward0", "freed": True, "tensors": ["y"]},
        {"id": "l4", "name": "AccumulateGrad", "freed": False, "tensors": ["x"]},
        {"id": "l5", "name": "AccumulateGrad", "freed": False, "tensors": ["w"]},
    ],
    "edges": [
        {"source": "n0", "target": "n1", "input": 0},
        {"source": "n0", "target": "n2", "input": 1},
        {"source": "n1", "target": "n3", "input": 0},
        {"source": "n3", "target": "l4", "input": 0},
        {"source": "n2", "target": "l5", "input": 0},
        {"source": "n2", "target": "l4", "input": 1},
    ],
    "leaves": ["x", "w"],
}


def _nodes(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    return {g.get("data-id"): g for g in root.iter(SVG + "g") if g.get("data-id")}


def _top(g: ET.Element) -> float:
    return float(g.find(SVG + "rect").get("y"))


def test_draws_leaves_on_top_roots_at_the_bottom_freed_dashed() -> None:
    nodes = _nodes(render_svg(GRAPH, title="session demo"))
    assert set(nodes) == {"n0", "n1", "n2", "n3", "l4", "l5"}
    assert "root" in nodes["n0"].get("class")
    assert all("leaf" in nodes[i].get("class") for i in ("l4", "l5"))
    for i in ("n1", "n2", "n3"):
        assert "freed" in nodes[i].get("class")
        assert nodes[i].find(SVG + "rect").get("stroke-dasharray")
        assert "freed" in "".join(nodes[i].itertext())
    # each leaf sits just above the deepest node that uses it, not all in the top row
    assert _top(nodes["l4"]) < _top(nodes["n3"]) < _top(nodes["n1"]) < _top(nodes["n0"])
    assert _top(nodes["l5"]) == _top(nodes["n3"]) < _top(nodes["n2"])
    texts = "".join(nodes["l4"].itertext())
    assert "x" in texts and "AccumulateGrad" in texts


def test_every_edge_is_drawn_once() -> None:
    root = ET.fromstring(render_svg(GRAPH))
    edges = [(p.get("data-source"), p.get("data-target")) for p in root.iter(SVG + "path")]
    edges = [e for e in edges if e[0]]
    assert sorted(edges) == sorted((e["source"], e["target"]) for e in GRAPH["edges"])


def test_labels_are_escaped() -> None:
    graph = {
        "roots": [],
        "nodes": [{"id": "a<b", "name": "Weird<&>Backward", "freed": False, "tensors": ["t&"]}],
        "edges": [],
        "leaves": [],
    }
    svg = render_svg(graph, title='<script>alert("x")</script>')
    ET.fromstring(svg)  # well-formed
    assert "<script>" not in svg and "Weird&lt;&amp;&gt;Backward" in svg


def test_empty_graph_and_page() -> None:
    ET.fromstring(render_svg({"roots": [], "nodes": [], "edges": [], "leaves": []}))
    page = render_page(GRAPH, session="demo", svg_url="/v1/sessions/demo/graph?format=svg")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<?xml" not in page
    namespaces = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")
    for ns in namespaces:
        page = page.replace(ns, "")
    assert "http://" not in page and "https://" not in page  # no outside assets


def test_deep_chain_is_capped_without_recursion() -> None:
    n = 20_000
    nodes = [{"id": f"n{i}", "name": "MulBackward0", "tensors": []} for i in range(n)]
    nodes.append({"id": "leaf", "name": "AccumulateGrad", "tensors": ["x"]})
    edges = [{"source": f"n{i}", "target": f"n{i + 1}", "input": 0} for i in range(n - 1)]
    edges.append({"source": f"n{n - 1}", "target": "leaf", "input": 0})
    svg = render_svg(
        {"roots": ["y"], "nodes": nodes, "edges": edges, "leaves": ["x"]}, max_nodes=300
    )
    drawn = _nodes(svg)
    assert len(drawn) == 300 and "n0" in drawn  # the nearest the root are kept
    assert "more nodes not drawn" in svg


def test_labels_carry_shapes_as_torchviz_writes_them() -> None:
    leaf = {"id": "l", "name": "AccumulateGrad", "freed": False, "tensors": ["w"], "shape": [2, 3]}
    fn = {"id": "n", "name": "MulBackward0", "freed": True, "tensors": ["y"], "shape": [4]}
    scalar = {"id": "s", "name": "SumBackward0", "freed": False, "tensors": [], "shape": []}
    assert label_lines(leaf) == ["w", "(2, 3)"]
    assert label_lines(fn) == ["MulBackward0", "(y) (4,)", "freed"]
    assert label_lines(scalar) == ["SumBackward0", "()"]
    graph = {"roots": ["y"], "nodes": [leaf, fn], "edges": [], "leaves": ["w"]}
    svg = render_svg(graph)
    assert "(2, 3)" in svg and "(y) (4,) · freed" in svg


def test_dot_and_mermaid_point_from_input_to_consumer() -> None:
    dot = to_dot(GRAPH)
    mermaid = to_mermaid(GRAPH)
    for e in GRAPH["edges"]:  # the JSON edge goes from a consumer to its input
        assert f"{e['target']} -> {e['source']};" in dot
        assert f"{e['target']} --> {e['source']}" in mermaid
    assert "x\\n(" not in dot and 'label="x"' in dot  # no shape given: none drawn


def test_graphviz_draws_when_installed() -> None:
    import os

    import pytest

    if shutil.which("dot") is None:
        if os.environ.get("CI_BROWSER"):
            pytest.fail("CI_BROWSER is set but graphviz (dot) is not installed")
        pytest.skip("graphviz's dot is not installed (make browser-deps installs it)")
    svg = render(GRAPH, title="session demo")
    root = ET.fromstring(svg[svg.index("<svg") :])
    assert root.tag == SVG + "svg"
    text = "".join(root.itertext())
    assert "PowBackward0" in text and "session demo" in text
