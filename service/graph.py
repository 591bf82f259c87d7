"""The backward graph of a session as JSON, Graphviz DOT or Mermaid.

Walks ``grad_fn.next_functions`` iteratively from the roots (a 100,000-op
chain is fine) up to ``max_nodes``, labelling nodes with the session names
of the tensors they produced and leaves with their names.
"""

from __future__ import annotations

from typing import Any

from engine import Tensor

from .sessions import Session

MAX_NODES = 10_000


def build(session: Session, roots: list[str] | None, max_nodes: int = MAX_NODES) -> dict[str, Any]:
    """A ``GraphOut``: nodes (grad_fns and leaves), edges from a node to its inputs."""
    if roots is None:
        roots = [n for n, t in session.tensors.items() if t.grad_fn is not None]
    tensors = [session.lookup(n) for n in roots]
    made: dict[int, list[str]] = {}
    leaf_names: dict[int, list[str]] = {}
    for name, t in session.tensors.items():
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
            nodes.append({"id": ident, "name": "AccumulateGrad", "freed": False, "tensors": names})
            leaves.extend(names)
        else:
            ident = f"n{len(ids)}"
            nodes.append(
                {
                    "id": ident,
                    "name": obj.name,
                    "freed": bool(getattr(obj, "freed", False)),
                    "tensors": made.get(id(obj), []),
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


def _label(node: dict[str, Any]) -> str:
    names = ", ".join(node["tensors"])
    if node["name"] == "AccumulateGrad":
        return names or "leaf"
    return f"{node['name']}\\n({names})" if names else node["name"]


def to_dot(graph: dict[str, Any]) -> str:
    lines = ["digraph autograd {", "  node [fontname=Helvetica];"]
    for node in graph["nodes"]:
        if node["name"] == "AccumulateGrad":
            attrs = 'shape=ellipse, style=filled, fillcolor="#dbeafe"'
        else:
            attrs = "shape=box" + (", style=dashed" if node["freed"] else "")
        lines.append(f'  {node["id"]} [label="{_label(node)}", {attrs}];')
    lines += [f"  {e['source']} -> {e['target']};" for e in graph["edges"]]
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_mermaid(graph: dict[str, Any]) -> str:
    lines = ["flowchart TD"]
    for node in graph["nodes"]:
        label = _label(node).replace("\\n", " ")
        if node["name"] == "AccumulateGrad":
            lines.append(f'  {node["id"]}(["{label}"])')
        else:
            lines.append(f'  {node["id"]}["{label}"]')
    lines += [f"  {e['source']} --> {e['target']}" for e in graph["edges"]]
    freed = [n["id"] for n in graph["nodes"] if n["freed"]]
    if freed:
        lines.append("  classDef freed stroke-dasharray: 5 5")
        lines.append(f"  class {','.join(freed)} freed")
    return "\n".join(lines) + "\n"
