"""The studio's SVG of a graph: drawn in pure Python on `layered_layout`, a run as classes.

`to_svg_layout` needs no Graphviz and gives the same bytes for the same model. What a run
did (its path, visits, where it is, a pause) and how two runs differ are written only as
CSS classes and ``data-visits`` attributes, never as geometry, so a page can draw the graph
once and apply live events by swapping classes.

The drawing, for a page's script and style sheet:

- ``<svg class="tg-graph">`` with one arrowhead ``<marker class="tg-arrow">`` in its defs;
- a node: ``<g class="node …" id="node-<safe id>" data-node="<name>">`` holding a
  ``<title>`` (its whole name), a ``<rect>`` and a ``<text>``; with `node_href`, those
  inside an ``<a href="…" aria-label="steps of <name>">`` (then the ``<svg>`` is a
  ``group``, not an ``img``, whose children a screen reader would not see);
- an edge: ``<g class="edge …" data-from="<name>" data-to="<name>">`` holding a
  ``<title>``, a ``<path>`` and, when the model labels it, a ``<text class="edge-label">``.

Classes from the model: ``kind-<kind>`` (think, act, observe, validate, reset, approve,
finalize, ask_human, start, end, custom), ``user`` (a node of the user's), ``approval``,
``guarded`` (its router keeps the step guards), ``breakpoint`` with ``breakpoint-before``
/ ``breakpoint-after``; on edges ``conditional``, ``guarded``, ``back`` (closes a loop)
and ``loop`` (to itself). From a `RunOverlay`: ``visited`` with ``data-visits="N"`` on
nodes, ``taken`` with ``data-visits="N"`` on edges, ``current`` where the run is,
``paused`` where it waits (a person, an approval or a breakpoint), ``done`` or
``stopped`` where it ended. From a `PathDiff`: ``only-a``, ``only-b`` or ``both`` on
every node and edge either run took, ``shared`` on the path both took before they
parted, and ``diverge`` on the node where they part. `SVG_CSS` styles them all.

Example:
    >>> svg = to_svg_layout(to_graph_model(graph), overlay)  # doctest: +SKIP
    >>> page = f"<style>{SVG_CSS}</style>{svg}"  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from typing import Any, Final

import networkx as nx

from thinkgraph.viz.diff import PathDiff
from thinkgraph.viz.layout import EdgeRoute, NodeBox, Point, layered_layout
from thinkgraph.viz.overlay import RunOverlay, node_state

__all__ = ["OVERLAY_NODE_CLASSES", "SVG_CSS", "overlay_classes", "to_svg_layout"]

_INVALID_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_UNSAFE_ID: Final = re.compile(r"[^A-Za-z0-9_-]")
_CLASS: Final = re.compile(r"[a-z][a-z0-9_]*")
_ESCAPES: Final = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&#39;",
    "\t": "&#9;",
    "\n": "&#10;",
    "\r": "&#13;",
}
_ESCAPE: Final = re.compile("[&<>\"'\t\n\r]")

_DIFF: Final[dict[str, tuple[str, ...]]] = {
    "shared": ("both", "shared"),
    "diverge": ("both", "diverge"),
    "both": ("both",),
    "a": ("only-a",),
    "b": ("only-b",),
}
"""A `PathDiff` class as the SVG's classes: `both` wherever both runs went."""

SVG_CSS: Final = """\
.tg-graph { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
.tg-graph .node rect { fill: #f4f2ff; stroke: #6f63b6; stroke-width: 1.2; }
.tg-graph .node text { fill: #1f1d2b; font-size: 13px; }
.tg-graph .node.kind-start rect { fill: #ffffff; }
.tg-graph .node.kind-end rect { fill: #d9d4fd; }
.tg-graph .node.user rect { fill: #fff8e6; stroke: #b7791f; }
.tg-graph .node.approval rect { fill: #e7f1ff; stroke: #0d6efd; }
.tg-graph .node.breakpoint rect { stroke: #d9534f; stroke-width: 2; stroke-dasharray: 4 2; }
.tg-graph a { cursor: pointer; }
.tg-graph .edge path { fill: none; stroke: #8a879c; stroke-width: 1.3; }
.tg-graph .edge.conditional path { stroke-dasharray: 5 3; }
.tg-graph .edge.back path { stroke: #a09cb8; }
.tg-graph .edge-label { fill: #55526a; font-size: 11px; stroke: #ffffff; stroke-width: 4px;
  stroke-linejoin: round; paint-order: stroke; }
.tg-graph .tg-arrow path { fill: #8a879c; fill: context-stroke; }
.tg-graph .node.visited rect { fill: #d4edda; stroke: #2e7d32; stroke-width: 2; }
.tg-graph .edge.taken path { stroke: #2e7d32; stroke-width: 2.5; stroke-dasharray: none; }
.tg-graph .edge.taken .edge-label { fill: #1e5b22; }
.tg-graph .node.done rect { fill: #cfe2ff; stroke: #0d6efd; stroke-width: 3; }
.tg-graph .node.stopped rect { fill: #f8d7da; stroke: #c82333; stroke-width: 3; }
.tg-graph .node.paused rect { fill: #fff3cd; stroke: #e0a800; stroke-width: 3; }
.tg-graph .node.fork-point rect { stroke: #6f42c1; stroke-width: 3; stroke-dasharray: 3 2; }
.tg-graph .node.current rect { stroke-width: 3.5; filter: drop-shadow(0 0 3px #e0a800); }
.tg-graph .node.shared rect { fill: #e9ecef; stroke: #495057; stroke-width: 2; }
.tg-graph .node.both rect { fill: #e2d9f3; stroke: #6f42c1; stroke-width: 2; }
.tg-graph .node.only-a rect { fill: #cfe2ff; stroke: #0d6efd; stroke-width: 2; }
.tg-graph .node.only-b rect { fill: #ffe5d0; stroke: #fd7e14; stroke-width: 2;
  stroke-dasharray: 5 3; }
.tg-graph .node.diverge rect { fill: #f8d7da; stroke: #c82333; stroke-width: 4; }
.tg-graph .edge.shared path { stroke: #495057; stroke-width: 2.5; }
.tg-graph .edge.both path { stroke: #6f42c1; stroke-width: 2.5; }
.tg-graph .edge.only-a path { stroke: #0d6efd; stroke-width: 2.5; stroke-dasharray: none; }
.tg-graph .edge.only-b path { stroke: #fd7e14; stroke-width: 2.5; stroke-dasharray: 5 3; }
.tg-graph .node a:focus-visible rect { stroke: #2a5bd7; stroke-width: 4; }
"""
"""Default styles for every class `to_svg_layout` writes: a page includes it in its own
style sheet (the SVG carries none, so the page's rules are the only ones)."""


def _clean(text: object) -> str:
    """`text` as XML can hold it: characters XML 1.0 forbids become U+FFFD."""
    return _INVALID_XML.sub("\ufffd", str(text))


def _esc(text: object) -> str:
    """Escaped for an XML attribute or text node; tabs and newlines survive attributes."""
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group()], _clean(text))


def _num(value: float) -> str:
    return f"{value:.1f}"


def _pt(point: Point) -> str:
    return f"{point[0]:.1f},{point[1]:.1f}"


def _ids(names: Iterable[str], prefix: str) -> dict[str, str]:
    """A safe id per node (letters, digits, _ and -), unique even where names look alike."""
    ids: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = f"{prefix}node-{_UNSAFE_ID.sub('_', name)}"
        candidate, n = base, 1
        while candidate in used:
            n += 1
            candidate = f"{base}-{n}"
        used.add(candidate)
        ids[name] = candidate
    return ids


def _attr_classes(words: Iterable[str]) -> str:
    return " ".join(dict.fromkeys(words))


def _node_classes(
    name: str, data: dict[str, Any], overlay: RunOverlay | None, diff: PathDiff | None
) -> list[str]:
    words = ["node"]
    kind = str(data.get("kind") or "")
    if _CLASS.fullmatch(kind):
        words.append(f"kind-{kind}")
    if kind == "custom":
        words.append("user")
    if data.get("approval"):
        words.append("approval")
    if data.get("guarded"):
        words.append("guarded")
    when = [w for w in ("before", "after") if data.get(f"breakpoint_{w}")]
    if when:
        words += ["breakpoint", *(f"breakpoint-{w}" for w in when)]
    if overlay is not None:
        if overlay.node_visits.get(name):
            words.append("visited")
        state = node_state(overlay, name)
        if state and state != "visited":
            words.append(state)
        if name == (overlay.paused_at or overlay.stopped_at):
            words.append("current")
    if diff is not None and name in diff.nodes:
        words += _DIFF[diff.nodes[name]]
    return words


def _edge_classes(
    route: EdgeRoute, data: dict[str, Any], overlay: RunOverlay | None, diff: PathDiff | None
) -> list[str]:
    words = ["edge"]
    if data.get("conditional"):
        words.append("conditional")
    if data.get("guarded"):
        words.append("guarded")
    if route.back:
        words.append("back")
    if route.loop:
        words.append("loop")
    pair = (route.source, route.target)
    if overlay is not None and overlay.edge_visits.get(pair):
        words.append("taken")
    if diff is not None and pair in diff.edges:
        words += _DIFF[diff.edges[pair]]
    return words


def _href(href: str | None, name: str) -> str | None:
    """A node's link as the caller gave it, once it is a path of the page's own site."""
    if href is None:
        return None
    if not href.startswith(("/", "?", "#")) or href.startswith("//"):
        raise ValueError(
            f"node_href gave {href!r} for node {name!r}: give a path of this site "
            "('/…', '?…' or '#…'), never a scheme or another host"
        )
    return href


def _node(
    box: NodeBox,
    node_id: str,
    data: dict[str, Any],
    classes: list[str],
    visits: int,
    href: str | None = None,
) -> str:
    rx = box.height / 2 if data.get("kind") in ("start", "end") else 6.0
    count = f' data-visits="{visits}"' if visits else ""
    opened, closed = "", ""
    if href is not None:
        opened = f'<a href="{_esc(href)}" aria-label="steps of {_esc(box.name)}">'
        closed = "</a>"
    return (
        f'<g class="{_attr_classes(classes)}" id="{node_id}" data-node="{_esc(box.name)}"{count}>'
        f"{opened}<title>{_esc(box.name)}</title>"
        f'<rect x="{_num(box.x)}" y="{_num(box.y)}" width="{_num(box.width)}"'
        f' height="{_num(box.height)}" rx="{_num(rx)}" fill="#f4f2ff" stroke="#6f63b6"/>'
        f'<text x="{_num(box.cx)}" y="{_num(box.cy)}" text-anchor="middle"'
        f' dominant-baseline="central">{_esc(box.label)}</text>{closed}</g>'
    )


def _edge(
    route: EdgeRoute, data: dict[str, Any], classes: list[str], visits: int, arrow: str
) -> str:
    d = f"M{_pt(route.start)}" + "".join(
        f"C{_pt(a)} {_pt(b)} {_pt(c)}" for a, b, c in route.segments
    )
    full = str(data.get("label") or "")
    title = f"{route.source} → {route.target}" + (f": {full}" if full else "")
    count = f' data-visits="{visits}"' if visits else ""
    parts = [
        f'<g class="{_attr_classes(classes)}" data-from="{_esc(route.source)}"'
        f' data-to="{_esc(route.target)}"{count}>',
        f"<title>{_esc(title)}</title>",
        f'<path d="{d}" fill="none" stroke="#8a879c" marker-end="url(#{arrow})"/>',
    ]
    if route.label and route.label_at is not None:
        parts.append(
            f'<text class="edge-label" x="{_num(route.label_at[0])}" y="{_num(route.label_at[1])}"'
            f' text-anchor="{route.label_anchor}" dominant-baseline="central"'
            f' font-size="11" stroke="#fff" stroke-width="4" stroke-linejoin="round"'
            f' paint-order="stroke">{_esc(route.label)}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def to_svg_layout(
    model: nx.DiGraph,
    overlay: RunOverlay | None = None,
    *,
    diff: PathDiff | None = None,
    id_prefix: str = "",
    node_href: Callable[[str], str | None] | None = None,
    fork_points: Collection[str] = (),
) -> str:
    """Draw a graph model as SVG with our own layered layout (no Graphviz).

    The same model always gives the same bytes, and an overlay or a diff changes only
    ``class`` and ``data-visits`` attributes: the geometry is the model's alone.

    Args:
        model: from `to_graph_model`, or `from_description` for a run's recorded shape.
        overlay: from `build_overlay`, to mark what one run did (see the module docstring).
        diff: from `compare_paths`, to mark how two runs' paths differ.
        id_prefix: put before every id, for two drawings in one page (letters, digits,
            ``_`` and ``-`` only).
        node_href: a node's name → the link its box is (a path of the page's site), or
            None for a node that links nowhere. Links add elements, never geometry.
        fork_points: the nodes other runs were forked from (at a checkpoint each wrote):
            class ``fork-point``.

    Returns:
        An ``<svg>`` element, with no ``<style>``: style it with `SVG_CSS`.

    Raises:
        ValueError: `id_prefix` holds another character, or `node_href` gave a link
            with a scheme or a host.
    """
    if _UNSAFE_ID.search(id_prefix):
        raise ValueError(f"id_prefix may hold letters, digits, _ and - only, not {id_prefix!r}")
    layout = layered_layout(model)
    name = str(model.graph.get("name") or "graph")
    arrow = f"{id_prefix}tg-arrow"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tg-graph"'
        f' viewBox="0 0 {_num(layout.width)} {_num(layout.height)}"'
        f' width="{_num(layout.width)}" height="{_num(layout.height)}"'
        f' role="{"img" if node_href is None else "group"}" aria-label="{_esc(name)}"'
        ' font-family="system-ui, sans-serif"'
        f' font-size="13">',
        f"<title>{_esc(name)}</title>",
        f'<defs><marker id="{arrow}" class="tg-arrow" viewBox="0 0 10 10" refX="10" refY="5"'
        ' markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse"'
        ' orient="auto"><path d="M0,0L10,5L0,10z" fill="#8a879c"/></marker></defs>',
        '<g class="edges">',
    ]
    graph_edges = list(model.edges(data=True))
    for route, (_, _, data) in zip(layout.edges, graph_edges, strict=True):
        pair = (route.source, route.target)
        visits = overlay.edge_visits.get(pair, 0) if overlay is not None else 0
        out.append(_edge(route, data, _edge_classes(route, data, overlay, diff), visits, arrow))
    out += ["</g>", '<g class="nodes">']
    ids = _ids(layout.nodes, id_prefix)
    for node, data in model.nodes(data=True):
        box = layout.nodes[str(node)]
        visits = overlay.node_visits.get(box.name, 0) if overlay is not None else 0
        classes = _node_classes(box.name, data, overlay, diff)
        if box.name in fork_points:
            classes.append("fork-point")
        href = _href(node_href(box.name), box.name) if node_href is not None else None
        out.append(_node(box, ids[box.name], data, classes, visits, href))
    out += ["</g>", "</svg>"]
    return "\n".join(out) + "\n"


OVERLAY_NODE_CLASSES = ("visited", "current", "paused", "done", "stopped")
"""The node classes an overlay may set (`overlay_classes`); the others are the model's."""


def overlay_classes(model: nx.DiGraph, overlay: RunOverlay) -> dict[str, Any]:
    """What an overlay marks on a drawing of `model`, without laying it out again: per node
    (by name) its overlay classes (of `OVERLAY_NODE_CLASSES`) and visits, per edge (by its
    ends) whether it was taken and how often. A page applies these to the SVG drawn once
    (`to_svg_layout`), matching ``data-node`` and ``data-from``/``data-to``."""
    nodes = {}
    for name, data in model.nodes(data=True):
        words = _node_classes(str(name), data, overlay, None)
        nodes[str(name)] = {
            "classes": [w for w in words if w in OVERLAY_NODE_CLASSES],
            "visits": overlay.node_visits.get(str(name), 0),
        }
    edges = [
        {
            "from": str(source),
            "to": str(target),
            "taken": bool(overlay.edge_visits.get((str(source), str(target)))),
            "visits": overlay.edge_visits.get((str(source), str(target)), 0),
        }
        for source, target in model.edges()
    ]
    return {"nodes": nodes, "edges": edges}
