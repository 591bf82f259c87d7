"""Draw the backward graph (``graph.build``'s JSON) as a standalone SVG.

Drawn the way the autograd tutorials (and torchviz) draw it: leaf tensors at
the top in blue, labelled by name with ``AccumulateGrad`` under it; one grey
box per ``grad_fn`` node, with the session names of the tensors it produced;
the roots in green at the bottom; arrows in the direction of the forward pass
(from an input to the node that consumed it). Nodes whose saved tensors were
freed by a backward without ``retain_graph`` are dashed and grey, tagged
"freed".

With Graphviz's ``dot`` on the PATH (the Docker image installs it), ``render``
lets dot lay out the same DOT text that ``/graph.dot`` serves. Otherwise the
built-in layout draws it: a node's layer is its longest distance from a root
(computed iteratively, so deep chains are fine), so each leaf sits just above the
deepest node that uses it, and a few barycenter sweeps order each layer to reduce
crossings. Pure Python, no dependencies; every label is XML-escaped.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import defaultdict, deque
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from .compute.graph import label_lines, to_dot

log = logging.getLogger("gradserve.graph")

MAX_NODES = 400  # beyond this a picture stops helping; the JSON/DOT formats have them all

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
FONT_SIZE = 13
SMALL_SIZE = 10
CHAR_W = 0.62  # average glyph width in em, a little generous so text never overflows
NODE_H = 42
DUMMY_W = 12.0
H_GAP = 28
V_GAP = 56
MARGIN = 24
HEADER_H = 44

STYLES = {
    # class: (fill, stroke, text, dash)
    "leaf": ("#dbeafe", "#1d4ed8", "#1e3a8a", None),
    "fn": ("#f3f4f6", "#374151", "#111827", None),
    "root": ("#dcfce7", "#15803d", "#14532d", None),
    "freed": ("#f9fafb", "#9ca3af", "#6b7280", "5 3"),
}


def _text_width(text: str, size: int) -> float:
    return len(text) * size * CHAR_W


def _layers(ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest distance from a root along source -> target edges (Kahn's order, no recursion)."""
    indegree = dict.fromkeys(ids, 0)
    children: dict[str, list[str]] = defaultdict(list)
    for source, target in edges:
        children[source].append(target)
        indegree[target] += 1
    level = dict.fromkeys(ids, 0)
    queue = deque(i for i in ids if indegree[i] == 0)
    seen = 0
    while queue:
        node = queue.popleft()
        seen += 1
        for child in children[node]:
            level[child] = max(level[child], level[node] + 1)
            indegree[child] -= 1
            if indegree[child] == 0:
                queue.append(child)
    # a cycle cannot come from autograd; if one did, its nodes simply keep level 0
    return level


def _dfs_order(ids: list[str], edges: list[dict[str, Any]], roots: set[str]) -> dict[str, int]:
    """Depth-first from the roots, inputs in argument order (iterative): a node's first visit
    is its starting place in its row, so chains stay straight and inputs read left to right."""
    inputs: dict[str, list[tuple[int, str]]] = defaultdict(list)
    has_consumer = set()
    for e in edges:
        inputs[e["source"]].append((int(e.get("input", 0)), e["target"]))
        has_consumer.add(e["target"])
    order: dict[str, int] = {}
    starts = [i for i in ids if i in roots] + [i for i in ids if i not in has_consumer]
    for start in starts:
        stack = [start]
        while stack:
            node = stack.pop()
            if node in order:
                continue
            order[node] = len(order)
            stack.extend(t for _, t in sorted(inputs[node], reverse=True) if t not in order)
    for i in ids:  # anything unreachable keeps the server's order, after the rest
        order.setdefault(i, len(order))
    return order


def _order(rows: list[list[str]], ups: dict[str, list[str]], downs: dict[str, list[str]]) -> None:
    """Barycenter heuristic: sort each row by the mean position of its neighbours."""

    def sweep(indices: range, neighbours: dict[str, list[str]], ref_step: int) -> None:
        for r in indices:
            ref = rows[r + ref_step]
            pos = {n: i for i, n in enumerate(ref)}
            current = {n: i for i, n in enumerate(rows[r])}

            def key(n: str, pos: dict[str, int] = pos, current: dict[str, int] = current) -> float:
                near = [pos[m] for m in neighbours.get(n, []) if m in pos]
                return sum(near) / len(near) if near else float(current[n])

            rows[r].sort(key=key)

    last = len(rows) - 1
    for _ in range(4):
        sweep(range(last - 1, -1, -1), downs, +1)  # bottom-up: follow consumers below
        sweep(range(1, last + 1), ups, -1)  # top-down: follow inputs above
    _transpose(rows, ups, downs)


def _transpose(
    rows: list[list[str]], ups: dict[str, list[str]], downs: dict[str, list[str]]
) -> None:
    """Swap neighbours in a row while that removes edge crossings (ties stall barycenters)."""

    def crossings(u: str, v: str, pos: list[dict[str, int]]) -> int:
        total = 0
        for links, where in ((ups, pos[0]), (downs, pos[1])):
            a = [where[m] for m in links.get(u, []) if m in where]
            b = [where[m] for m in links.get(v, []) if m in where]
            total += sum(1 for i in a for j in b if i > j)
        return total

    for _ in range(8):
        improved = False
        for r, row in enumerate(rows):
            if len(row) < 2 or len(row) > 80:  # wide rows: the barycenter order stands
                continue
            above = {n: i for i, n in enumerate(rows[r - 1])} if r > 0 else {}
            below = {n: i for i, n in enumerate(rows[r + 1])} if r + 1 < len(rows) else {}
            for i in range(len(row) - 1):
                u, v = row[i], row[i + 1]
                if crossings(v, u, [above, below]) < crossings(u, v, [above, below]):
                    row[i], row[i + 1] = v, u
                    improved = True
        if not improved:
            return


def render_svg(
    graph: dict[str, Any], *, title: str | None = None, max_nodes: int = MAX_NODES
) -> str:
    """An SVG document for a ``GraphOut`` dict (``roots``, ``nodes``, ``edges``, ``leaves``)."""
    all_nodes = {n["id"]: n for n in graph.get("nodes", [])}
    root_names = set(graph.get("roots", []))
    edges_all = [
        (e["source"], e["target"])
        for e in graph.get("edges", [])
        if e["source"] in all_nodes and e["target"] in all_nodes
    ]
    root_ids = {i for i, n in all_nodes.items() if root_names & set(n.get("tensors", []))}
    level_all = _layers(list(all_nodes), edges_all)

    # keep the nodes nearest the roots when the graph is too large to draw usefully
    first_seen = _dfs_order(list(all_nodes), graph.get("edges", []), root_ids)
    ids = sorted(all_nodes, key=lambda i: (level_all[i], first_seen[i]))
    hidden = max(0, len(ids) - max_nodes)
    ids = ids[:max_nodes]
    keep = set(ids)
    edges = [(s, t) for s, t in edges_all if s in keep and t in keep]
    level = {i: level_all[i] for i in ids}
    depth = max(level.values(), default=0)

    rows: list[list[str]] = [[] for _ in range(depth + 1)]
    row_of: dict[str, int] = {}
    for i in ids:
        row_of[i] = depth - level[i]  # roots at the bottom, leaves towards the top
        rows[row_of[i]].append(i)
    for row in rows:
        row.sort(key=first_seen.__getitem__)  # depth-first order: inputs left to right
    # an edge spanning several rows passes through one small "dummy" slot per row it
    # crosses, so it is routed between the nodes instead of through them
    ups: dict[str, list[str]] = defaultdict(list)  # a slot's neighbours in the row above
    downs: dict[str, list[str]] = defaultdict(list)  # ... and in the row below
    routes: list[tuple[str, str, list[str]]] = []
    for source, target in edges:
        chain = []
        for r in range(row_of[target] + 1, row_of[source]):
            dummy = f"_d{len(routes)}_{r}"
            rows[r].append(dummy)
            chain.append(dummy)
        hops = [target, *chain, source]
        for above, below in zip(hops, hops[1:]):
            ups[below].append(above)
            downs[above].append(below)
        routes.append((source, target, chain))
    _order(rows, ups, downs)

    def kind(node: dict[str, Any]) -> str:
        if node.get("freed"):
            return "freed"
        if node["id"] in root_ids:
            return "root"
        return "leaf" if node["name"] == "AccumulateGrad" else "fn"

    def labels(node: dict[str, Any]) -> tuple[str, str]:
        lines = label_lines({"tensors": [], **node})
        return lines[0], " · ".join(lines[1:])

    widths = {d: DUMMY_W for row in rows for d in row if d not in all_nodes}
    for i in ids:
        main, sub = labels(all_nodes[i])
        widths[i] = max(70.0, _text_width(main, FONT_SIZE) + 20, _text_width(sub, SMALL_SIZE) + 20)

    def gap(a: str, b: str) -> float:
        return H_GAP if a in all_nodes and b in all_nodes else H_GAP / 3

    row_widths = [
        sum(widths[i] for i in row) + sum(gap(a, b) for a, b in zip(row, row[1:])) for row in rows
    ]
    heading = title or "backward graph"
    counts = f"{len(all_nodes)} nodes, {len(graph.get('leaves', []))} leaves" + (
        ", truncated by the server" if graph.get("truncated") else ""
    )
    legend = f"{counts} · blue: leaf tensors · grey: grad_fn · green: roots · dashed: freed"
    header_w = max(_text_width(heading, 15) * 1.1, _text_width(legend, SMALL_SIZE))
    inner_w = max([*row_widths, header_w, 240.0])
    width = inner_w + 2 * MARGIN
    height = HEADER_H + MARGIN + len(rows) * NODE_H + (len(rows) - 1) * V_GAP + MARGIN
    if hidden:
        height += 24

    pos: dict[str, tuple[float, float]] = {}  # centre x, top y
    for r, row in enumerate(rows):
        x = MARGIN + (inner_w - row_widths[r]) / 2
        y = HEADER_H + MARGIN + r * (NODE_H + V_GAP)
        for n, i in enumerate(row):
            if n:
                x += gap(row[n - 1], i)
            pos[i] = (x + widths[i] / 2, y)
            x += widths[i]

    out: list[str] = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family={quoteattr(FONT)} '
        f'class="gradserve-graph">',
        "<defs>",
        '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#374151"/></marker>',
        '<marker id="arrow-freed" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#9ca3af"/></marker>',
        "</defs>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
    ]
    out.append(
        f'<text x="{MARGIN}" y="{MARGIN + 4}" font-size="15" font-weight="bold" '
        f'fill="#111827">{escape(heading)}</text>'
    )
    out.append(
        f'<text x="{MARGIN}" y="{MARGIN + 22}" font-size="{SMALL_SIZE}" fill="#4b5563">'
        f"{escape(legend)}</text>"
    )
    if not ids:
        out.append(
            f'<text x="{MARGIN}" y="{HEADER_H + MARGIN + 16}" font-size="{FONT_SIZE}" '
            f'fill="#6b7280">empty graph: no tensor here requires grad</text>'
        )

    out.append('<g class="edges">')
    for source, target, chain in routes:
        px, py = pos[target]  # input above, consumer below: forward direction, as torchviz
        points = [(px, py + NODE_H)]
        for dummy in chain:
            px, py = pos[dummy]
            points += [(px, py), (px, py + NODE_H)]
        px, py = pos[source]
        points.append((px, py - 1))
        d = [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
        for (x1, y1), (x2, y2) in zip(points, points[1:]):
            if x1 == x2:
                d.append(f"L{x2:.1f},{y2:.1f}")
            else:
                mid = (y1 + y2) / 2
                d.append(f"C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}")
        freed = all_nodes[source].get("freed") or all_nodes[target].get("freed")
        stroke = "#9ca3af" if freed else "#374151"
        dash = ' stroke-dasharray="5 3"' if freed else ""
        marker = "arrow-freed" if freed else "arrow"
        out.append(
            f'<path class="edge" data-source={quoteattr(source)} data-target={quoteattr(target)} '
            f'd="{" ".join(d)}" fill="none" stroke="{stroke}" stroke-width="1.4"{dash} '
            f'marker-end="url(#{marker})"/>'
        )
    out.append("</g>")

    out.append('<g class="nodes">')
    for i in ids:
        node = all_nodes[i]
        k = kind(node)
        fill, stroke, color, dashes = STYLES[k]
        cx, top = pos[i]
        w = widths[i]
        main, sub = labels(node)
        radius = 18 if node["name"] == "AccumulateGrad" else 4
        tip = f"{node['name']} {', '.join(node.get('tensors', []))}".strip()
        dash_attr = f' stroke-dasharray="{dashes}"' if dashes else ""
        out.append(
            f'<g class="node {k}" data-id={quoteattr(i)} data-name={quoteattr(node["name"])}>'
            f"<title>{escape(tip)}</title>"
            f'<rect x="{cx - w / 2:.1f}" y="{top:.1f}" width="{w:.1f}" height="{NODE_H}" '
            f'rx="{radius}" fill="{fill}" stroke="{stroke}" stroke-width="1.5"{dash_attr}/>'
        )
        main_y = top + (17 if sub else 26)
        weight = ' font-weight="bold"' if node["name"] == "AccumulateGrad" else ""
        out.append(
            f'<text x="{cx:.1f}" y="{main_y:.1f}" text-anchor="middle" font-size="{FONT_SIZE}"'
            f'{weight} fill="{color}">{escape(main)}</text>'
        )
        if sub:
            out.append(
                f'<text x="{cx:.1f}" y="{top + 33:.1f}" text-anchor="middle" '
                f'font-size="{SMALL_SIZE}" fill="{color}">{escape(sub)}</text>'
            )
        out.append("</g>")
    out.append("</g>")
    if hidden:
        out.append(
            f'<text x="{MARGIN}" y="{height - MARGIN / 2:.0f}" font-size="{SMALL_SIZE}" '
            f'fill="#b91c1c">{hidden} more nodes not drawn (the {max_nodes} nearest the roots '
            f"are shown; use /graph or /graph.dot for all)</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render(graph: dict[str, Any], *, title: str) -> str:
    """The SVG a person sees: Graphviz's layout when ``dot`` is installed, else ours."""
    dot = shutil.which("dot")
    if dot is not None and len(graph.get("nodes", [])) <= MAX_NODES:
        text = to_dot(graph).replace(
            "digraph autograd {",
            f'digraph autograd {{\n  label="{title.replace(chr(34), "")}"; labelloc=t;',
            1,
        )
        try:
            done = subprocess.run(
                [dot, "-Tsvg"], input=text.encode(), capture_output=True, timeout=20, check=True
            )
            return _annotate(done.stdout.decode(), graph)
        except (OSError, subprocess.SubprocessError, ET.ParseError) as exc:
            log.warning("graphviz dot failed (%s); using the built-in layout", exc)
    return render_svg(graph, title=title)


def _annotate(svg: str, graph: dict[str, Any]) -> str:
    """Graphviz's SVG with the marks of ours: nodes carry ``data-id``/``data-name`` and a
    kind class (leaf, fn, root, freed), edge paths ``class="edge"`` and the JSON edge's
    ``data-source``/``data-target``, so pages and tests read either drawing alike."""
    ET.register_namespace("", "http://www.w3.org/2000/svg")
    ET.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ET.fromstring(svg[svg.index("<svg") :])
    root.set("class", "gradserve-graph")
    nodes = {n["id"]: n for n in graph.get("nodes", [])}
    roots = set(graph.get("roots", []))
    ns = "{http://www.w3.org/2000/svg}"
    for g in root.iter(ns + "g"):
        title = g.find(ns + "title")
        if title is None or title.text is None:
            continue
        if g.get("class") == "node" and title.text in nodes:
            node = nodes[title.text]
            if node.get("freed"):
                kind = "freed"
            elif roots & set(node.get("tensors", [])):
                kind = "root"
            else:
                kind = "leaf" if node["name"] == "AccumulateGrad" else "fn"
            g.set("class", f"node {kind}")
            g.set("data-id", node["id"])
            g.set("data-name", node["name"])
        elif g.get("class") == "edge" and "->" in title.text:
            start, end = title.text.split("->", 1)  # input -> consumer
            for path in g.iter(ns + "path"):
                path.set("class", "edge")
                path.set("data-source", end)
                path.set("data-target", start)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def render_page(graph: dict[str, Any], *, session: str, svg_url: str | None = None) -> str:
    """A small HTML page around the SVG (``/ui/sessions/{s}``): no script, no external assets."""
    svg = render(graph, title=f"session {session}")
    svg = svg[svg.index("<svg") :]  # inline: no XML prolog, doctype or comments
    roots = ", ".join(graph.get("roots", [])) or "none"
    leaves = ", ".join(graph.get("leaves", [])) or "none"
    freed = sum(1 for n in graph.get("nodes", []) if n.get("freed"))
    links = '<a href="/docs">API docs</a>'
    if svg_url:
        links = f"<a href={quoteattr(svg_url)}>SVG</a> · " + links
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>gradserve · {escape(session)}</title>
<style>
 body {{ font-family: {FONT}; margin: 24px; color: #111827; background: #f9fafb; }}
 h1 {{ font-size: 20px; margin: 0 0 4px; }}
 p.meta {{ color: #4b5563; font-size: 13px; margin: 0 0 16px; }}
 .graph {{ background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 8px;
          overflow: auto; max-width: 100%; }}
 a {{ color: #1d4ed8; }}
</style>
</head>
<body>
<h1>Backward graph of session <code>{escape(session)}</code></h1>
<p class="meta">roots: {escape(roots)} · leaves: {escape(leaves)} · {len(graph.get("nodes", []))} nodes,
{freed} freed · {links} · reload the page after a step or a backward</p>
<div class="graph" id="graph">{svg}</div>
</body>
</html>
"""
