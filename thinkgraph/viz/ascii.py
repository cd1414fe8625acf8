"""A plain-ASCII rendering of a graph model for the terminal: a layered list of nodes.

Each node is a header line followed by its outgoing edges, one per line, with the label
that takes the edge. Nodes come in order of distance from START, so the listing reads top
to bottom the way a run goes. Only ASCII characters are written, so it survives any
terminal, log file or e-mail. Example (a paused run)::

    think  [x2]
      -.-> act        continue + calls  [x1]
      -.-> ask_human  consecutive failures  [x1]
    ask_human  [x1]  << PAUSED (ask_human)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import networkx as nx

from thinkgraph.viz.model import layered_nodes
from thinkgraph.viz.overlay import RunOverlay, edge_count, node_notes, node_state

__all__ = ["to_ascii"]

_PLAIN = str.maketrans({"≥": ">=", "≤": "<=", "×": "x", "·": "-", "—": "-"})

_MARKED = frozenset({"paused", "stopped", "done"})
"""Node states marked at the end of their line with the run's phrase."""


def _plain(text: str) -> str:
    return text.translate(_PLAIN).encode("ascii", "replace").decode("ascii")


def _name(node: str, data: dict[str, Any]) -> str:
    kind = data.get("kind")
    if kind in ("start", "end"):
        return f"({kind})"
    return node if kind in (node, "custom", None) else f"{node} ({kind})"


def _guards(guards: dict[str, Any] | None) -> str:
    if not guards:
        return ""
    return ", ".join(f"{k}={v}" for k, v in guards.items() if v is not None)


def _header(model: nx.DiGraph, overlay: RunOverlay | None) -> list[str]:
    lines = [f"{model.graph.get('name') or 'graph'}: {model.number_of_nodes()} nodes, "
             f"{model.number_of_edges()} edges"]  # fmt: skip
    guards = _guards(model.graph.get("guards"))
    if guards:
        lines.append(f"guards: {guards}")
    if model.graph.get("approval_tools"):
        lines.append("approval needed for: " + ", ".join(model.graph["approval_tools"]))
    if overlay is not None:
        at = overlay.paused_at or overlay.stopped_at
        run = f"run: {overlay.phrase}" + (f" at {at}" if at is not None else "")
        lines.append(run)
        if overlay.question:
            lines.append(f"question: {overlay.question}")
        if overlay.detail:
            lines.append(f"detail: {overlay.detail}")
    legend = "legend: --> always  -.-> routed, with the label that takes it"
    if overlay is not None:
        legend += "  [xN] taken N times"
    lines += [legend, ""]
    return lines


def _node_line(node: str, data: dict[str, Any], overlay: RunOverlay | None) -> str:
    parts = [_name(node, data)]
    if data.get("approval"):
        parts.append("{approval gate}")
    for when in ("before", "after"):
        if data.get(f"breakpoint_{when}"):
            parts.append(f"{{breakpoint {when}}}")
    notes = node_notes(overlay, node, times="x")
    state = node_state(overlay, node)
    marks = [n for n in notes if overlay is None or n != overlay.phrase]
    if marks:
        parts.append(f"[{', '.join(marks)}]")
    if overlay is not None and state in _MARKED:
        # "<< PAUSED (approval: send_email)": the run's phrase, its first word as the mark.
        word, _, rest = overlay.phrase.partition(" ")
        parts.append(f"<< {word.upper()} {rest}".rstrip())
    return "  ".join(parts)


def to_ascii(model: nx.DiGraph, overlay: RunOverlay | None = None) -> str:
    """Render a graph model (and a run overlay) as deterministic plain-ASCII text.

    Args:
        model: from `to_graph_model`.
        overlay: from `build_overlay`, to mark what one run did.

    Returns:
        The text, ending with a newline.
    """
    lines = _header(model, overlay)
    for node in layered_nodes(model):
        data = model.nodes[node]
        lines.append(_node_line(node, data, overlay))
        lines.extend(_edge_lines(model, node, functools.partial(_taken, overlay)))
    return _plain("\n".join(lines)) + "\n"


def _taken(overlay: RunOverlay | None, node: str, target: str) -> str | None:
    count = edge_count(overlay, node, target)
    return f"[x{count}]" if count else None


def _edge_lines(model: nx.DiGraph, node: str, mark: Callable[[str, str], str | None]) -> list[str]:
    """One line per edge out of `node`, targets aligned, each with its `mark(node, target)`."""
    lines = []
    edges = list(model.out_edges(node, data=True))
    width = max((len(_name(t, model.nodes[t])) for _, t, _ in edges), default=0)
    for _, target, edge in edges:
        arrow = "-.->" if edge.get("conditional") else "-->"
        text = [_name(target, model.nodes[target]).ljust(width)]
        if edge.get("label"):
            text.append(str(edge["label"]))
        if (marked := mark(node, target)) is not None:
            text.append(marked)
        lines.append(f"  {arrow:<4} {'  '.join(text)}".rstrip())
    return lines
