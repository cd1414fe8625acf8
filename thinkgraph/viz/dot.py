"""Graphviz DOT of a graph model, and SVG/PNG through the `dot` program when installed.

The DOT text is produced here, offline and without Graphviz; only `to_svg` and `to_png`
need the `dot` binary (Debian's ``graphviz`` package). The styling follows the Mermaid
renderer: dashed conditional edges with labels, a red dashed border for breakpoints, a
hexagon for approval gates, and with a run overlay green visited nodes and edges with
their counts, amber for a pause, red for a failed stop, blue for a finished run.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import networkx as nx

from thinkgraph.errors import ConfigError
from thinkgraph.viz.overlay import RunOverlay, edge_count, node_notes, node_state

__all__ = ["GraphvizNotFoundError", "to_dot", "to_png", "to_svg"]


class GraphvizNotFoundError(ConfigError):
    """SVG or PNG was asked for but Graphviz's `dot` program is not installed."""


_FILL = {
    "visited": ("#d4edda", "#2e7d32"),
    "done": ("#cfe2ff", "#0d6efd"),
    "stopped": ("#f8d7da", "#c82333"),
    "paused": ("#fff3cd", "#e0a800"),
}
"""(fill, border) per overlay state."""


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: dict[str, Any]) -> str:
    return "[" + ", ".join(f"{k}={_q(str(v))}" for k, v in attrs.items()) + "]"


def _node(node: str, data: dict[str, Any], overlay: RunOverlay | None) -> dict[str, Any]:
    kind = data.get("kind")
    lines = [str(data.get("label") or node)]
    attrs: dict[str, Any] = {}
    if kind in ("start", "end"):
        attrs.update(shape="oval", fillcolor="#bfb6fc" if kind == "end" else "white")
    if data.get("approval"):
        attrs["shape"] = "hexagon"
        lines.append("approval gate")
    when = [w for w in ("before", "after") if data.get(f"breakpoint_{w}")]
    if when:
        lines.append("breakpoint " + " + ".join(when))
        attrs.update(color="#d9534f", style="rounded,filled,dashed", penwidth="2")
    lines += node_notes(overlay, node)
    state = node_state(overlay, node)
    if state:
        fill, border = _FILL[state]
        attrs.update(fillcolor=fill, color=border, penwidth="3" if state != "visited" else "2")
    return {"label": "\n".join(lines), **attrs}


def to_dot(model: nx.DiGraph, overlay: RunOverlay | None = None) -> str:
    """Render a graph model (and a run overlay) as Graphviz DOT.

    Args:
        model: from `to_graph_model`.
        overlay: from `build_overlay`, to mark what one run did.

    Returns:
        DOT source for ``dot -Tsvg``.
    """
    name = str(model.graph.get("name") or "graph")
    lines = [
        f"digraph {_q(name)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor="#f2f0ff", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for node, data in model.nodes(data=True):
        lines.append(f"  {_q(node)} {_attrs(_node(node, data, overlay))};")
    for source, target, data in model.edges(data=True):
        attrs: dict[str, Any] = {}
        label = str(data.get("label") or "")
        count = edge_count(overlay, source, target)
        if count:
            label = f"{label} ×{count}" if label else f"×{count}"
            attrs.update(color="#2e7d32", penwidth="2.5")
        if label:
            attrs["label"] = label
        if data.get("conditional"):
            attrs["style"] = "dashed"
        suffix = f" {_attrs(attrs)}" if attrs else ""
        lines.append(f"  {_q(source)} -> {_q(target)}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _run_dot(dot: str, fmt: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(
            "Graphviz is not installed: apt-get install graphviz "
            "(or use --format mermaid|ascii|dot)"
        )
    done = subprocess.run(
        [exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=60, check=False
    )
    if done.returncode != 0:
        # our DOT is generated, so a failure here is a bug worth the full message
        raise RuntimeError(f"dot -T{fmt} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def to_svg(model: nx.DiGraph, overlay: RunOverlay | None = None) -> str:
    """Render through Graphviz as SVG text.

    Raises:
        GraphvizNotFoundError: the `dot` program is not installed.
    """
    return _run_dot(to_dot(model, overlay), "svg").decode()


def to_png(model: nx.DiGraph, overlay: RunOverlay | None = None) -> bytes:
    """Render through Graphviz as PNG bytes.

    Raises:
        GraphvizNotFoundError: the `dot` program is not installed.
    """
    return _run_dot(to_dot(model, overlay), "png")
