"""The backward graph of a session as JSON, Graphviz DOT or Mermaid.

Walks ``grad_fn.next_functions`` iteratively from the roots (a 100,000-op
chain is fine) up to ``max_nodes``, labelling nodes with the session names
of the tensors they produced, leaves with their names, and every node with its
output's shape (as torchviz labels them). Names starting with ``_`` are a
client's temporaries: hidden unless asked for. Every drawing (SVG, DOT, Mermaid)
points its arrows the same way: from an input to the node that consumed it.
"""

from __future__ import annotations

from typing import Any

from engine import Tensor

from ..session.state import Session

MAX_NODES = 10_000


def _visible(name: str, temporaries: bool) -> bool:
    return temporaries or not name.startswith("_")


def default_roots(session: Session, temporaries: bool = False) -> list[str]:
    """The bound tensors at the end of a computation: non-leaves whose grad_fn no other
    bound tensor's graph reaches (one iterative walk over the whole graph)."""
    candidates = [
        (n, t)
        for n, t in session.tensors.items()
        if t.grad_fn is not None and _visible(n, temporaries)
    ]
    reached: set[int] = set()
    seen: set[int] = set()
    stack: list[Any] = [t.grad_fn for _, t in candidates]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for child, _ in node.next_functions:
            if child is not None and getattr(child, "variable", None) is None:
                reached.add(id(child))
                stack.append(child)
    return [n for n, t in candidates if id(t.grad_fn) not in reached]


def _shape(obj: Any, leaf: Tensor | None) -> list[int]:
    if leaf is not None:
        return list(leaf.shape)
    meta = getattr(obj, "meta", None)
    return list(meta(0)[0]) if meta is not None else []


def build(
    session: Session,
    roots: list[str] | None,
    max_nodes: int = MAX_NODES,
    *,
    temporaries: bool = False,
    saved: bool = False,
    accumulate_grad: bool = False,
) -> dict[str, Any]:
    """A ``GraphOut``: nodes (grad_fns and leaves, with shapes), edges from a node to
    its inputs. Without ``roots``, the ends of the session's computations."""
    if roots is None:
        roots = default_roots(session, temporaries)
    tensors = [session.lookup(n) for n in roots]
    made: dict[int, list[str]] = {}
    leaf_names: dict[int, list[str]] = {}
    for name, t in session.tensors.items():
        if not _visible(name, temporaries) and name not in roots:
            continue
        if t.grad_fn is not None:
            made.setdefault(id(t.grad_fn), []).append(name)
        else:
            leaf_names.setdefault(id(t), []).append(name)

    ids: dict[int, str] = {}
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    leaves: list[str] = []
    truncated = False

    def visit(obj: Any, leaf: Tensor | None) -> tuple[str, bool]:
        key = id(leaf) if leaf is not None else id(obj)
        if key in ids:
            return ids[key], False
        if leaf is not None:
            ident = f"l{len(ids)}"
            names = leaf_names.get(id(leaf), [])
            nodes.append(
                {
                    "id": ident,
                    "name": "AccumulateGrad",
                    "freed": False,
                    "tensors": names,
                    "shape": _shape(None, leaf),
                }
            )
            leaves.extend(names)
            if accumulate_grad:  # torchviz: the leaf, and its AccumulateGrad consuming it
                ids[key] = f"a{ident}"
                nodes.append(
                    {
                        "id": f"a{ident}",
                        "name": "AccumulateGrad",
                        "freed": False,
                        "tensors": [],
                        "shape": _shape(None, leaf),
                        "accumulator": True,
                    }
                )
                edges.append({"source": f"a{ident}", "target": ident, "input": 0})
                return f"a{ident}", True
        else:
            ident = f"n{len(ids)}"
            nodes.append(
                {
                    "id": ident,
                    "name": obj.name,
                    "freed": bool(getattr(obj, "freed", False)),
                    "tensors": made.get(id(obj), []),
                    "shape": _shape(obj, None),
                    **({"saved": _saved_shapes(obj)} if saved else {}),
                }
            )
        ids[key] = ident
        return ident, True

    stack: list[Any] = []
    for t in tensors:
        if t.grad_fn is not None:
            _, new = visit(t.grad_fn, None)
            if new:
                stack.append(t.grad_fn)
        elif t.requires_grad:
            visit(None, t)
    while stack:
        node = stack.pop()
        source = ids[id(node)]
        for index, (child, _) in enumerate(node.next_functions):
            if child is None:
                continue
            if len(ids) >= max_nodes:
                truncated = True
                break
            variable = getattr(child, "variable", None)
            target, new = visit(child, variable) if variable is not None else visit(child, None)
            edges.append({"source": source, "target": target, "input": index})
            if new and variable is None:
                stack.append(child)
    return {
        "roots": roots,
        "nodes": nodes,
        "edges": edges,
        "leaves": leaves,
        "truncated": truncated,
    }


def _saved_shapes(node: Any) -> list[list[int]]:
    """The shapes of what a grad_fn saved for backward (none once freed), as torchviz's
    ``show_saved`` annotates them."""
    items = getattr(node, "_saved", None) or ()
    return [list(t.shape) for t in items if hasattr(t, "shape")]


def shape_text(node: dict[str, Any]) -> str:
    """A shape as torchviz writes it: ``(2, 3)``; ``()`` for a 0-d tensor."""
    shape = node.get("shape")
    if shape is None:
        return ""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def label_lines(node: dict[str, Any]) -> list[str]:
    """A node's label, line by line: a leaf's names and shape; a grad_fn's name, the
    tensors it made, its output shape, and "freed" if a backward freed it."""
    names = ", ".join(node["tensors"])
    shape = shape_text(node)
    if node.get("accumulator"):
        return ["AccumulateGrad"]
    if node["name"] == "AccumulateGrad":
        return [names or "leaf", shape] if shape else [names or "leaf"]
    lines = [node["name"]]
    detail = " ".join(x for x in (names and f"({names})", shape) if x)
    if detail:
        lines.append(detail)
    if node.get("freed"):
        lines.append("freed")
    if node.get("saved"):
        lines.append("saved " + " ".join(shape_text({"shape": sh}) for sh in node["saved"]))
    return lines


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(graph: dict[str, Any]) -> str:
    """Graphviz DOT, arrows from an input to its consumer (torchviz's direction)."""
    roots = set(graph.get("roots", []))
    lines = [
        "digraph autograd {",
        '  graph [rankdir=TB, fontname="DejaVu Sans"];',
        '  node [fontname="DejaVu Sans", fontsize=11, height=0.3];',
    ]
    for node in graph["nodes"]:
        label = "\\n".join(_dot_escape(line) for line in label_lines(node))
        if node.get("accumulator"):
            attrs = 'shape=box, style=filled, fillcolor="#e5e7eb"'
        elif node["name"] == "AccumulateGrad":
            attrs = 'shape=box, style="rounded,filled", fillcolor="#dbeafe", color="#1d4ed8"'
        elif node["freed"]:
            attrs = 'shape=box, style="dashed", color="#9ca3af", fontcolor="#6b7280"'
        elif roots & set(node["tensors"]):
            attrs = 'shape=box, style=filled, fillcolor="#dcfce7", color="#15803d"'
        else:
            attrs = 'shape=box, style=filled, fillcolor="#f3f4f6"'
        lines.append(f'  {node["id"]} [label="{label}", {attrs}];')
    lines += [f"  {e['target']} -> {e['source']};" for e in graph["edges"]]
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_mermaid(graph: dict[str, Any]) -> str:
    """A Mermaid flowchart, arrows from an input to its consumer."""
    lines = ["flowchart TB"]
    for node in graph["nodes"]:
        label = "<br/>".join(label_lines(node)).replace('"', "#quot;")
        if node["name"] == "AccumulateGrad":
            lines.append(f'  {node["id"]}(["{label}"])')
        else:
            lines.append(f'  {node["id"]}["{label}"]')
    lines += [f"  {e['target']} --> {e['source']}" for e in graph["edges"]]
    freed = [n["id"] for n in graph["nodes"] if n["freed"]]
    if freed:
        lines.append("  classDef freed stroke-dasharray: 5 5")
        lines.append(f"  class {','.join(freed)} freed")
    return "\n".join(lines) + "\n"
