"""Mermaid flowcharts of a graph model, which GitHub renders in Markdown.

Conditional edges are dotted and carry their NextAction or guard label; breakpoints get a
red dashed border and approval gates a hexagon. With a run overlay, visited nodes and
edges are green with their counts, and the node where the run paused (amber) or stopped
(red when it failed, blue when it finished) says why.
"""

from __future__ import annotations

import re

import networkx as nx

from thinkgraph.viz.overlay import RunOverlay, edge_count, node_notes, node_state

__all__ = ["to_mermaid"]

_CLASSES = {
    "first": "fill-opacity:0",
    "last": "fill:#bfb6fc",
    "approval": "fill:#e7f1ff,stroke:#0d6efd",
    "breakpoint": "stroke:#d9534f,stroke-width:2px,stroke-dasharray:4 2",
    "visited": "fill:#d4edda,stroke:#2e7d32,stroke-width:2px",
    "done": "fill:#cfe2ff,stroke:#0d6efd,stroke-width:3px",
    "stopped": "fill:#f8d7da,stroke:#c82333,stroke-width:3px",
    "paused": "fill:#fff3cd,stroke:#e0a800,stroke-width:3px",
}
"""Class styles, in the order they are applied: a later class wins where they overlap."""

_VISITED_EDGE = "stroke:#2e7d32,stroke-width:3px"


def _id(node: str) -> str:
    node_id = re.sub(r"\W", "_", node)
    return f"{node_id}_" if node_id.lower() == "end" else node_id  # "end" is a keyword


def _text(text: str) -> str:
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def _node(node: str, data: dict[str, object], overlay: RunOverlay | None) -> str:
    lines = [str(data.get("label") or node)]
    if data.get("approval"):
        lines.append("approval gate")
    when = [w for w in ("before", "after") if data.get(f"breakpoint_{w}")]
    if when:
        lines.append("breakpoint " + " + ".join(when))
    lines += node_notes(overlay, node)
    label = "<br/>".join(_text(line) for line in lines)
    if data.get("kind") in ("start", "end"):
        return f'{_id(node)}(["{label}"])'
    if data.get("approval"):
        return f'{_id(node)}{{{{"{label}"}}}}'
    return f'{_id(node)}["{label}"]'


def _classes(model: nx.DiGraph, overlay: RunOverlay | None) -> dict[str, list[str]]:
    members: dict[str, list[str]] = {name: [] for name in _CLASSES}
    for node, data in model.nodes(data=True):
        kind = data.get("kind")
        if kind in ("start", "end"):
            members["first" if kind == "start" else "last"].append(node)
        if data.get("approval"):
            members["approval"].append(node)
        if data.get("breakpoint_before") or data.get("breakpoint_after"):
            members["breakpoint"].append(node)
        state = node_state(overlay, node)
        if state:
            members[state].append(node)
    return {name: nodes for name, nodes in members.items() if nodes}


def to_mermaid(model: nx.DiGraph, overlay: RunOverlay | None = None) -> str:
    """Render a graph model (and a run overlay) as a Mermaid flowchart.

    Args:
        model: from `to_graph_model`.
        overlay: from `build_overlay`, to mark what one run did.

    Returns:
        Mermaid source, starting with ``graph TD;``.
    """
    lines = ["graph TD;"]
    lines += [f"\t{_node(n, d, overlay)}" for n, d in model.nodes(data=True)]
    visited: list[int] = []
    for index, (source, target, data) in enumerate(model.edges(data=True)):
        arrow = "-.->" if data.get("conditional") else "-->"
        label = str(data.get("label") or "")
        count = edge_count(overlay, source, target)
        if count:
            visited.append(index)
            label = f"{label} · ×{count}" if label else f"×{count}"
        text = f'|"{_text(label)}"|' if label else ""
        lines.append(f"\t{_id(source)} {arrow}{text} {_id(target)};")
    if visited:
        lines.append(f"\tlinkStyle {','.join(map(str, visited))} {_VISITED_EDGE};")
    for name, nodes in _classes(model, overlay).items():
        lines.append(f"\tclassDef {name} {_CLASSES[name]};")
        lines.append(f"\tclass {','.join(_id(n) for n in nodes)} {name};")
    return "\n".join(lines) + "\n"
