"""Two runs' paths on one diagram: the shared path, where they part, and each one's branch.

`compare_paths` reads two node paths (each run's nodes in order, e.g. `RunOverlay.path`)
and classes every node and edge they took:

- ``shared``: on the path both runs took, up to where they part;
- ``diverge``: the node where they part (or where the first divergence is, when the
  routes are the same but a call, its arguments or the answer differ);
- ``a`` / ``b``: taken after that by run A only / run B only;
- ``both``: taken after that by both runs (their branches meet again).

`to_mermaid_diff` draws that with classDef styles and `to_ascii_diff` with markers; both
are pure functions of the graph model and the two paths.

Example:
    >>> model = to_graph_model(build_react_graph(deps))  # doctest: +SKIP
    >>> print(to_mermaid_diff(model, path_a, path_b, names=("a", "b")))  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final, Literal, TypeAlias, TypedDict, Unpack

import networkx as nx

from thinkgraph.viz.ascii import _edge_lines, _name, _plain
from thinkgraph.viz.dot import _attrs, _q, _run_dot
from thinkgraph.viz.mermaid import _CLASSES, _id, _text
from thinkgraph.viz.model import from_description, layered_nodes, to_graph_model

__all__ = [
    "DIFF_CLASSES",
    "DIFF_FORMATS",
    "DiffOptions",
    "PathClass",
    "PathDiff",
    "compare_paths",
    "render_diff",
    "run_graph_model",
    "to_ascii_diff",
    "to_dot_diff",
    "to_mermaid_diff",
    "to_svg_diff",
]

DIFF_FORMATS: Final = ("mermaid", "ascii", "dot", "svg", "png")
"""Every format a diff diagram is drawn in; svg and png need Graphviz's `dot` program."""

PathClass: TypeAlias = Literal["shared", "diverge", "a", "b", "both"]

DIFF_CLASSES: Final[dict[str, str]] = {
    "shared": "fill:#e9ecef,stroke:#495057,stroke-width:2px",
    "both": "fill:#e2d9f3,stroke:#6f42c1,stroke-width:2px",
    "a": "fill:#cfe2ff,stroke:#0d6efd,stroke-width:2px",
    "b": "fill:#ffe5d0,stroke:#fd7e14,stroke-width:2px,stroke-dasharray:5 3",
    "diverge": "fill:#f8d7da,stroke:#c82333,stroke-width:4px",
}
"""Node styles of a diff diagram, in the order they are applied (a later class wins)."""

_EDGE_STYLES: Final[dict[str, str]] = {
    "shared": "stroke:#495057,stroke-width:3px",
    "both": "stroke:#6f42c1,stroke-width:3px",
    "a": "stroke:#0d6efd,stroke-width:3px",
    "b": "stroke:#fd7e14,stroke-width:3px,stroke-dasharray:5 3",
}

_TAGS: Final[dict[str, str]] = {"shared": "shared", "a": "A", "b": "B", "both": "A+B"}


@dataclass(frozen=True, slots=True)
class PathDiff:
    """How two runs' paths share and part (see the module docstring)."""

    shared: tuple[str, ...]
    """The nodes both runs went through, in order, up to where they part."""
    split: str | None
    """The node where they part (the first divergence's node); None when they do not."""
    nodes: dict[str, PathClass]
    """Each node either run took, by class."""
    edges: dict[tuple[str, str], PathClass]
    """Each edge either run took, by class (`diverge` is for nodes only)."""


def compare_paths(
    path_a: Sequence[str], path_b: Sequence[str], divergence: str | None = None
) -> PathDiff:
    """Class the nodes and edges of two runs' paths.

    Args:
        path_a: the nodes run A went through, in order.
        path_b: the nodes run B went through.
        divergence: the node of the first divergence, when it is known (see
            `thinkgraph.views.diff`); else the last node both paths share before they
            part, if they do.
    """
    common = 0
    while common < min(len(path_a), len(path_b)) and path_a[common] == path_b[common]:
        common += 1
    parted = common < max(len(path_a), len(path_b))
    split = divergence
    if split is None and parted and common:
        split = path_a[common - 1]
    # The branches start at the last shared node, so their first edges leave it.
    start = max(common - 1, 0) if parted else len(path_a)
    rest_a, rest_b = list(path_a[start:]), list(path_b[start:])
    shared_edges = set(pairwise(path_a[:common]))
    edges_a, edges_b = set(pairwise(rest_a)) - shared_edges, set(pairwise(rest_b)) - shared_edges
    edges: dict[tuple[str, str], PathClass] = dict.fromkeys(shared_edges, "shared")
    edges |= {e: "both" if e in edges_b else "a" for e in edges_a}
    edges |= {e: "b" for e in edges_b - edges_a}
    shared_nodes = set(path_a[:common])
    nodes: dict[str, PathClass] = dict.fromkeys(shared_nodes, "shared")
    after_a, after_b = set(rest_a) - shared_nodes, set(rest_b) - shared_nodes
    nodes |= {n: "both" if n in after_b else "a" for n in after_a}
    nodes |= {n: "b" for n in after_b - after_a}
    if split is not None:
        nodes[split] = "diverge"
    return PathDiff(tuple(path_a[:common]), split, nodes, edges)


class DiffOptions(TypedDict, total=False):
    """The options every diff renderer takes (all keyword-only)."""

    divergence: str | None
    """The first divergence's node, if known (see `compare_paths`)."""
    kind: str | None
    """The first divergence's kind (route, tool, args, answer), for its label."""
    names: tuple[str, str]
    """The runs' names, to say which is A and which is B (default ``("A", "B")``)."""


def _compare(
    path_a: Sequence[str], path_b: Sequence[str], options: DiffOptions
) -> tuple[PathDiff, str | None, tuple[str, str]]:
    diff = compare_paths(path_a, path_b, options.get("divergence"))
    return diff, options.get("kind"), options.get("names", ("A", "B"))


def _edge_label(data: dict[str, Any], taken: PathClass | None) -> str:
    """An edge's own label, with the run that took it after the split (`A`, `B`, `A+B`)."""
    label = str(data.get("label") or "")
    if taken is None or taken == "shared":
        return label
    return f"{label} · {_TAGS[taken]}" if label else _TAGS[taken]


def _counts(path: Sequence[str], node: str) -> int:
    return sum(1 for n in path if n == node)


def _label(
    node: str,
    data: dict[str, Any],
    paths: tuple[Sequence[str], Sequence[str]],
    diff: PathDiff,
    kind: str | None,
) -> list[str]:
    lines = [str(data.get("label") or node)]
    if data.get("approval"):
        lines.append("approval gate")
    if data.get("kind") not in ("start", "end"):
        visits = [
            f"{run}×{n}" for run, p in zip("AB", paths, strict=True) if (n := _counts(p, node))
        ]
        if visits:
            lines.append(" ".join(visits))
    if node == diff.split:
        lines.append("first divergence" + (f": {kind}" if kind else ""))
    return lines


def to_mermaid_diff(
    model: nx.DiGraph, path_a: Sequence[str], path_b: Sequence[str], **options: Unpack[DiffOptions]
) -> str:
    """Render two runs' paths on a graph model as a Mermaid flowchart.

    Nodes carry each run's visit counts (`A×1 B×2`); the divergence node says so; edges
    after the split are labelled with the run that took them (`A`, `B`, `A+B`).

    Args:
        model: from `to_graph_model`.
        path_a: run A's nodes in order (e.g. `build_overlay(...).path`).
        path_b: run B's nodes in order.
        **options: see `DiffOptions`.

    Returns:
        Mermaid source, starting with ``graph TD;``.
    """
    diff, kind, names = _compare(path_a, path_b, options)
    paths = (path_a, path_b)
    lines = ["graph TD;", f"\t%% A: {_text(names[0])} · B: {_text(names[1])}"]
    for node, data in model.nodes(data=True):
        label = "<br/>".join(_text(line) for line in _label(node, data, paths, diff, kind))
        if data.get("kind") in ("start", "end"):
            lines.append(f'\t{_id(node)}(["{label}"])')
        elif data.get("approval"):
            lines.append(f'\t{_id(node)}{{{{"{label}"}}}}')
        else:
            lines.append(f'\t{_id(node)}["{label}"]')
    styled: dict[str, list[int]] = {name: [] for name in _EDGE_STYLES}
    for index, (source, target, data) in enumerate(model.edges(data=True)):
        arrow = "-.->" if data.get("conditional") else "-->"
        taken = diff.edges.get((source, target))
        if taken is not None:
            styled[taken].append(index)
        label = _edge_label(data, taken)
        text = f'|"{_text(label)}"|' if label else ""
        lines.append(f"\t{_id(source)} {arrow}{text} {_id(target)};")
    for edge_cls, indexes in styled.items():
        if indexes:
            lines.append(f"\tlinkStyle {','.join(map(str, indexes))} {_EDGE_STYLES[edge_cls]};")
    members: dict[str, list[str]] = {"first": [], "last": [], "approval": []}
    for node, data in model.nodes(data=True):
        if data.get("kind") in ("start", "end"):
            members["first" if data["kind"] == "start" else "last"].append(node)
        if data.get("approval"):
            members["approval"].append(node)
    for name in DIFF_CLASSES:
        members[name] = [n for n in model.nodes if diff.nodes.get(n) == name]
    for name, nodes in members.items():
        if nodes:
            style = DIFF_CLASSES.get(name) or _CLASSES[name]
            lines.append(f"\tclassDef {name} {style};")
            lines.append(f"\tclass {','.join(_id(n) for n in nodes)} {name};")
    return "\n".join(lines) + "\n"


_NODE_MARKS: Final[dict[str, str]] = {
    "shared": "[shared]",
    "a": "[A only]",
    "b": "[B only]",
    "both": "[A and B]",
}


def to_ascii_diff(
    model: nx.DiGraph, path_a: Sequence[str], path_b: Sequence[str], **options: Unpack[DiffOptions]
) -> str:
    """Render two runs' paths on a graph model as plain ASCII, with markers.

    Each node line says whether both runs went there before they parted (`[shared]`),
    only one after (`[A only]`, `[B only]`) or both after (`[A and B]`), with each run's
    visit counts; the node where they part is marked `<< FIRST DIVERGENCE`. Each edge
    says which run took it. Arguments as for `to_mermaid_diff`.
    """
    diff, kind, names = _compare(path_a, path_b, options)
    lines = [
        f"diff of two runs on {model.graph.get('name') or 'graph'}: A = {names[0]}, B = {names[1]}",
        "legend: [shared] both runs, before they part  [A] / [B] one run only after"
        "  [A+B] both after  << FIRST DIVERGENCE where they part",
        "",
    ]
    for node in layered_nodes(model):
        data = model.nodes[node]
        parts = [_name(node, data)]
        cls = diff.nodes.get(node)
        counts = [
            f"{run}x{n}" for run, p in zip("AB", (path_a, path_b), strict=True)
            if (n := _counts(p, node))
        ]  # fmt: skip
        if cls is not None and cls != "diverge":
            parts.append(_NODE_MARKS[cls])
        if counts and data.get("kind") not in ("start", "end"):
            parts.append(f"[{' '.join(counts)}]")
        if cls == "diverge":
            parts.append("<< FIRST DIVERGENCE" + (f": {kind}" if kind else ""))
        lines.append("  ".join(parts))
        lines.extend(_edge_lines(model, node, functools.partial(_tag, diff)))
    return _plain("\n".join(lines)) + "\n"


def _tag(diff: PathDiff, node: str, target: str) -> str | None:
    taken = diff.edges.get((node, target))
    return None if taken is None else f"[{_TAGS[taken]}]"


_DOT_STYLES: Final[dict[str, dict[str, str]]] = {
    "shared": {"fillcolor": "#e9ecef", "color": "#495057", "penwidth": "2"},
    "both": {"fillcolor": "#e2d9f3", "color": "#6f42c1", "penwidth": "2"},
    "a": {"fillcolor": "#cfe2ff", "color": "#0d6efd", "penwidth": "2"},
    "b": {
        "fillcolor": "#ffe5d0",
        "color": "#fd7e14",
        "penwidth": "2",
        "style": "rounded,filled,dashed",
    },
    "diverge": {"fillcolor": "#f8d7da", "color": "#c82333", "penwidth": "4"},
}
_DOT_EDGES: Final[dict[str, dict[str, str]]] = {
    "shared": {"color": "#495057", "penwidth": "2.5"},
    "both": {"color": "#6f42c1", "penwidth": "2.5"},
    "a": {"color": "#0d6efd", "penwidth": "2.5"},
    "b": {"color": "#fd7e14", "penwidth": "2.5", "style": "dashed"},
}


def to_dot_diff(
    model: nx.DiGraph, path_a: Sequence[str], path_b: Sequence[str], **options: Unpack[DiffOptions]
) -> str:
    """Render two runs' paths on a graph model as Graphviz DOT, in the Mermaid styles.

    Arguments as for `to_mermaid_diff`; the graph's label says which run is A and B.
    """
    diff, kind, names = _compare(path_a, path_b, options)
    paths = (path_a, path_b)
    title = f"A: {names[0]} · B: {names[1]}"
    lines = [
        f"digraph {_q(str(model.graph.get('name') or 'graph'))} {{",
        f"  rankdir=TB; labelloc=t; label={_q(title)};",
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for node, data in model.nodes(data=True):
        attrs: dict[str, Any] = {"label": "\n".join(_label(node, data, paths, diff, kind))}
        if data.get("kind") in ("start", "end"):
            attrs["shape"] = "oval"
        if data.get("approval"):
            attrs["shape"] = "hexagon"
        attrs.update(_DOT_STYLES.get(diff.nodes.get(node) or "", {}))
        lines.append(f"  {_q(node)} {_attrs(attrs)};")
    for source, target, data in model.edges(data=True):
        edge: dict[str, Any] = {}
        taken = diff.edges.get((source, target))
        if label := _edge_label(data, taken):
            edge["label"] = label
        if data.get("conditional"):
            edge["style"] = "dashed"
        edge.update(_DOT_EDGES.get(taken or "", {}))
        suffix = f" {_attrs(edge)}" if edge else ""
        lines.append(f"  {_q(source)} -> {_q(target)}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg_diff(
    model: nx.DiGraph, path_a: Sequence[str], path_b: Sequence[str], **options: Any
) -> str:
    """`to_dot_diff` through Graphviz, as SVG text.

    Raises:
        GraphvizNotFoundError: the `dot` program is not installed.
    """
    return _run_dot(to_dot_diff(model, path_a, path_b, **options), "svg").decode()


def render_diff(
    model: nx.DiGraph,
    path_a: Sequence[str],
    path_b: Sequence[str],
    fmt: str,
    **options: Unpack[DiffOptions],
) -> str | bytes:
    """Two runs' paths in one of `DIFF_FORMATS`: text for all but png, which is bytes.

    Raises:
        ValueError: an unknown format (the message lists the known ones).
        GraphvizNotFoundError: svg or png without Graphviz installed.
    """
    if fmt == "mermaid":
        return to_mermaid_diff(model, path_a, path_b, **options)
    if fmt == "ascii":
        return to_ascii_diff(model, path_a, path_b, **options)
    if fmt in ("dot", "svg", "png"):
        dot = to_dot_diff(model, path_a, path_b, **options)
        if fmt == "dot":
            return dot
        drawn = _run_dot(dot, fmt)
        return drawn.decode() if fmt == "svg" else drawn
    raise ValueError(f"unknown diagram format {fmt!r}; use one of {', '.join(DIFF_FORMATS)}")


def run_graph_model(
    graph: Any, chain: Sequence[Any], *, approval_tools: Sequence[str] = ()
) -> nx.DiGraph:
    """The diagram model a run is drawn on: the graph it recorded, else `graph`'s.

    A run of a custom graph stores that graph's description with its task step; a run of
    the prebuilt graph stores none and is drawn on the agent's graph.
    """
    recorded = getattr(chain[0], "graph", None) if chain else None
    if isinstance(recorded, dict):
        return from_description(recorded, approval_tools=approval_tools)
    return to_graph_model(graph, approval_tools=approval_tools)
