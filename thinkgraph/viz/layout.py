"""A layered layout of a graph model in pure Python: the geometry the studio's SVG draws.

Sugiyama's method, kept small and deterministic:

1. loops: a depth-first search from START (then from any node it did not reach), in the
   model's order, finds the edges that close a loop (observe → think). Set aside, they
   leave the graph acyclic. An edge from a node to itself is drawn beside the node.
2. layers: a node's layer is its longest path from the start on the acyclic graph; END
   alone at the bottom.
3. ranks: each layer is a rank, with a rank between two layers for edge labels. An edge
   goes through one virtual point per rank it crosses; its label sits at the point next to
   the node the edge leaves, so labels take room like nodes and never overlap.
4. order: barycenter sweeps down and up, keeping the order with the fewest crossings.
5. x: each rank placed as near its neighbours' average as the spacing allows (the least
   squares fit under the order, by pooling adjacent violators), a few sweeps.
6. edges: cubic Béziers through their points. A back edge runs beside the nodes it
   passes and leaves and enters its nodes by the side.

Everything follows the model's order (nodes and edges as inserted), never hashing, so one
model always gives one layout. Text widths are estimated from the characters: no fonts.
"""

from __future__ import annotations

import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from itertools import pairwise
from typing import Final, TypeAlias

import networkx as nx

from thinkgraph.viz.layering import Items, back_edges, initial_ranks, order_ranks, place_ranks
from thinkgraph.viz.model import END, START

__all__ = [
    "EdgeRoute",
    "GraphLayout",
    "NodeBox",
    "Point",
    "layered_layout",
    "shorten",
    "text_width",
]

Point: TypeAlias = tuple[float, float]
Box: TypeAlias = tuple[float, float, float, float]
"""(left, top, right, bottom)."""

NODE_HEIGHT: Final = 32.0
NODE_FONT: Final = 13.0
LABEL_FONT: Final = 11.0
LABEL_HEIGHT: Final = 14.0
NODE_CHARS: Final = 32
"""Longer node labels are shortened with an ellipsis (the SVG's title keeps them whole)."""
LABEL_CHARS: Final = 40
RANK_GAP: Final = 20.0
"""Vertical room between a rank of nodes and the rank of labels next to it."""
SIDE: Final = 14.0
"""How far beside a node a back edge runs."""
MARGIN: Final = 8.0


@dataclass(frozen=True, slots=True)
class NodeBox:
    """Where a node is drawn."""

    name: str
    x: float
    """Left."""
    y: float
    """Top."""
    width: float
    height: float
    layer: int
    """Its longest path from the start (START is 0)."""
    label: str
    """The text drawn in it (shortened when long)."""

    @property
    def cx(self) -> float:
        return self.x + self.width / 2

    @property
    def cy(self) -> float:
        return self.y + self.height / 2


@dataclass(frozen=True, slots=True)
class EdgeRoute:
    """How an edge is drawn: cubic Bézier segments from `start`, and where its label sits."""

    source: str
    target: str
    start: Point
    segments: tuple[tuple[Point, Point, Point], ...]
    """(control 1, control 2, end) of each segment; the last end is `end`."""
    back: bool
    """It closes a loop: drawn upwards, beside the nodes."""
    loop: bool
    """It goes from a node to itself."""
    label: str
    """The text drawn beside it ("" for none; shortened when long)."""
    label_at: Point | None
    """Where the label sits, vertically centred: its middle, or its right end for a loop."""
    label_anchor: str = "middle"
    """How the text sits at `label_at`: "middle", or "end" (to its left)."""
    label_box: Box | None = None

    @property
    def end(self) -> Point:
        return self.segments[-1][2]


@dataclass(frozen=True, slots=True)
class GraphLayout:
    """A whole drawing: nodes and edges in the model's order, in a `width` × `height` box."""

    nodes: dict[str, NodeBox]
    edges: tuple[EdgeRoute, ...]
    width: float
    height: float


def text_width(text: str, size: float) -> float:
    """The width of `text` in a sans-serif font of `size` px, estimated from its characters."""
    total = 0.0
    for char in text:
        if unicodedata.east_asian_width(char) in ("W", "F"):
            total += 1.0
        elif char in "il.,:;'|!() ":
            total += 0.32
        elif char.isupper() or char in "mwMW@%":
            total += 0.72
        else:
            total += 0.56
    return total * size


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# -- the whole layout -----------------------------------------------------------------------


@dataclass(slots=True)
class _Edge:
    source: int
    target: int
    back: bool
    loop: bool
    label: str
    chain: list[int]
    """Items from the upper end to the lower end (a back edge's source is its lower end)."""
    label_item: int | None = None


LAYOUTS_KEPT: Final = 32
"""Layouts kept for the graph shapes drawn last (a server draws the same few graphs)."""

_kept: OrderedDict[tuple[object, ...], GraphLayout] = OrderedDict()
_kept_lock = threading.Lock()


def layered_layout(model: nx.DiGraph) -> GraphLayout:
    """Lay out a graph model (from `to_graph_model` or `from_description`) in layers.

    The layout is a function of the model's shape alone — its nodes and their labels, its
    edges and theirs, in order — so the last `LAYOUTS_KEPT` are kept by that shape: a page
    drawing a run of a graph drawn before pays no layout (a 150-node graph's takes about
    half a second), only its run's classes. A kept layout is shared: read it, never change it.

    Returns:
        Boxes for the nodes and routes for the edges, both in the model's order, in a
        box from (0, 0) to (width, height).
    """
    shape = _shape(model)
    with _kept_lock:
        found = _kept.get(shape)
        if found is not None:
            _kept.move_to_end(shape)
            return found
    made = _lay_out(model)
    with _kept_lock:
        _kept[shape] = made
        while len(_kept) > LAYOUTS_KEPT:
            _kept.popitem(last=False)
    return made


def _shape(model: nx.DiGraph) -> tuple[object, ...]:
    """What `_lay_out` reads of `model`."""
    nodes = tuple((str(n), str(data.get("label") or "")) for n, data in model.nodes(data=True))
    edges = tuple(
        (str(a), str(b), str(data.get("label") or "")) for a, b, data in model.edges(data=True)
    )
    return nodes, edges


def _lay_out(model: nx.DiGraph) -> GraphLayout:
    names = [str(n) for n in model.nodes]
    index = {node: i for i, node in enumerate(model.nodes)}
    n = len(names)
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    pairs = [(index[a], index[b], data) for a, b, data in model.edges(data=True)]
    for e, (a, b, _) in enumerate(pairs):
        if a != b:
            out[a].append((b, e))
    roots = ([index[START]] if START in index else []) + list(range(n))
    back, topo = back_edges(n, out, roots)

    layer = [0] * n
    for node in topo:
        for target, e in out[node]:
            if e not in back:
                layer[target] = max(layer[target], layer[node] + 1)
    if END in index and n > 1:
        end = index[END]
        layer[end] = max(layer[end], max(layer[i] for i in range(n) if i != end) + 1)

    labels = [
        shorten(str(model.nodes[node].get("label") or node), NODE_CHARS) for node in model.nodes
    ]
    widths = [max(56.0, text_width(label, NODE_FONT) + 24.0) for label in labels]
    items = Items()
    for i in range(n):
        items.add(2 * layer[i], widths[i] / 2, widths[i] / 2, True)

    edges: list[_Edge] = []
    for e, (a, b, data) in enumerate(pairs):
        label = shorten(str(data.get("label") or ""), LABEL_CHARS)
        if a == b:
            edges.append(_Edge(a, b, False, True, label, [a]))
            room = 26.0 + (text_width(label, LABEL_FONT) + 4 if label else 0.0)
            # on whichever side no back edge takes, known only once placed: room on both
            items.left[a] = max(items.left[a], widths[a] / 2 + room)
            items.right[a] = max(items.right[a], widths[a] / 2 + room)
            continue
        is_back = e in back
        top, bottom = (b, a) if is_back else (a, b)
        chain = [top]
        for rank in range(2 * layer[top] + 1, 2 * layer[bottom]):
            chain.append(items.add(rank, 1.0, 1.0, False))
        chain.append(bottom)
        edge = _Edge(a, b, is_back, False, label, chain)
        if label:
            # next to the node it leaves: that is where a router's words are read
            edge.label_item = chain[-2] if is_back else chain[1]
            half_label = text_width(label, LABEL_FONT) / 2 + 2.0
            items.left[edge.label_item] = items.right[edge.label_item] = half_label
        for i, (upper, lower) in enumerate(pairwise(chain)):
            offset = 0.0
            if is_back and i == 0:
                offset = widths[upper] / 2 + SIDE
            elif is_back and i == len(chain) - 2:
                offset = -(widths[lower] / 2 + SIDE)
            items.link(upper, lower, 0.5 if is_back else 0.0, offset)
        edges.append(edge)

    ranks = initial_ranks(items, roots)
    ranks = order_ranks(ranks, items)
    x = place_ranks(items, ranks)
    y = _rank_centres(items, ranks, edges)
    return _route(names, labels, layer, widths, items, x, y, edges)


def _rank_centres(items: Items, ranks: list[list[int]], edges: list[_Edge]) -> list[float]:
    """The y of each rank's middle; a rank of labels with none takes no room."""
    labelled = {items.rank[e.label_item] for e in edges if e.label_item is not None}
    centres, at = [], MARGIN
    for r, _ in enumerate(ranks):
        height = NODE_HEIGHT if r % 2 == 0 else (LABEL_HEIGHT if r in labelled else 0.0)
        centres.append(at + height / 2)
        at += height + RANK_GAP
    return centres


def _spread(count: int, length: float, most: float) -> list[float]:
    """Offsets from the middle for `count` ports along a side `length` long."""
    if count < 2:
        return [0.0] * count
    step = min(most, length / (count - 1))
    return [(i - (count - 1) / 2) * step for i in range(count)]


def _route(
    names: list[str],
    labels: list[str],
    layer: list[int],
    widths: list[float],
    items: Items,
    x: list[float],
    y: list[float],
    edges: list[_Edge],
) -> GraphLayout:
    """Ports, Bézier segments and label boxes for every edge, and the nodes' boxes."""

    def at(item: int) -> Point:
        return (x[item], y[items.rank[item]])

    # ports: forward edges leave a node's bottom and enter its top, spread by where they go;
    # back edges leave and enter by the side they run on
    ports: dict[tuple[int, int], Point] = {}  # (edge, which end: 0 source, 1 target)
    bottoms: dict[int, list[tuple[float, int]]] = {}
    tops: dict[int, list[tuple[float, int]]] = {}
    sides: dict[tuple[int, int], list[tuple[float, int, int]]] = {}
    for e, edge in enumerate(edges):
        if edge.loop:
            continue
        upper, lower = edge.chain[0], edge.chain[-1]
        after_upper, before_lower = x[edge.chain[1]], x[edge.chain[-2]]
        if edge.back:
            # nested, not crossed: the edge that runs farther out leaves lower and enters higher
            for node, end, near in ((lower, 0, before_lower), (upper, 1, after_upper)):
                side = -1 if near < x[node] - widths[node] / 2 else 1
                reach = abs(near - x[node])
                sides.setdefault((node, side), []).append((reach if end == 0 else -reach, e, end))
        else:
            bottoms.setdefault(upper, []).append((after_upper, e))
            tops.setdefault(lower, []).append((before_lower, e))
    half = NODE_HEIGHT / 2
    for node, out in bottoms.items():
        out.sort()
        for (_, e), dx in zip(out, _spread(len(out), widths[node] * 0.6, 14.0), strict=True):
            ports[e, 0] = (x[node] + dx, y[items.rank[node]] + half)
    for node, into in tops.items():
        into.sort()
        for (_, e), dx in zip(into, _spread(len(into), widths[node] * 0.6, 14.0), strict=True):
            ports[e, 1] = (x[node] + dx, y[items.rank[node]] - half)
    for (node, side), ends in sides.items():
        ends.sort()
        for (_, e, end), dy in zip(ends, _spread(len(ends), NODE_HEIGHT - 6, 9.0), strict=True):
            ports[e, end] = (x[node] + side * widths[node] / 2, y[items.rank[node]] + dy)

    routes: list[EdgeRoute] = []
    for e, edge in enumerate(edges):
        if edge.loop:
            side = -1 if (edge.source, -1) not in sides or (edge.source, 1) in sides else 1
            routes.append(_loop(names, edge, at(edge.source), widths[edge.source], side))
            continue
        points = [at(i) for i in edge.chain]
        points[0] = ports[e, 1] if edge.back else ports[e, 0]
        points[-1] = ports[e, 0] if edge.back else ports[e, 1]
        # directions along the drawing (downwards; a back edge is drawn upwards)
        heads = [(0.0, 1.0)] * len(points)
        if edge.back:
            points.reverse()
            heads = [(0.0, -1.0)] * len(points)
            heads[0] = (1.0 if points[0][0] > x[edge.source] else -1.0, 0.0)
            heads[-1] = (-1.0 if points[-1][0] > x[edge.target] else 1.0, 0.0)
        segments = []
        for (p, hp), (q, hq) in pairwise(zip(points, heads, strict=True)):
            reach_y = abs(q[1] - p[1]) / 2
            reach_x = max(abs(q[0] - p[0]) * 0.6, 12.0)
            kp = reach_x if hp[0] else reach_y
            kq = reach_x if hq[0] else reach_y
            segments.append(
                ((p[0] + hp[0] * kp, p[1] + hp[1] * kp), (q[0] - hq[0] * kq, q[1] - hq[1] * kq), q)
            )
        label_at, box = None, None
        if edge.label_item is not None:
            label_at = at(edge.label_item)
            half_label = text_width(edge.label, LABEL_FONT) / 2 + 1.0
            box = (
                label_at[0] - half_label,
                label_at[1] - LABEL_HEIGHT / 2,
                label_at[0] + half_label,
                label_at[1] + LABEL_HEIGHT / 2,
            )
        routes.append(
            EdgeRoute(
                names[edge.source],
                names[edge.target],
                points[0],
                tuple(segments),
                edge.back,
                False,
                edge.label,
                label_at,
                "middle",
                box,
            )
        )

    boxes = {
        names[i]: NodeBox(
            names[i],
            x[i] - widths[i] / 2,
            y[items.rank[i]] - half,
            widths[i],
            NODE_HEIGHT,
            layer[i],
            labels[i],
        )
        for i in range(len(names))
    }
    return _normalised(boxes, routes)


def _loop(names: list[str], edge: _Edge, centre: Point, width: float, side: int) -> EdgeRoute:
    """A node's edge to itself: a small loop out of one side (-1 left, 1 right), labelled."""
    cx, cy = centre
    rim = cx + side * width / 2
    start, end = (rim, cy - 6.0), (rim, cy + 6.0)
    segment = ((rim + side * 26.0, cy - 22.0), (rim + side * 26.0, cy + 22.0), end)
    label_at, box = None, None
    if edge.label:
        tx = rim + side * 22.0
        far = tx + side * (text_width(edge.label, LABEL_FONT) + 1.0)
        label_at = (tx, cy)
        box = (min(tx, far), cy - LABEL_HEIGHT / 2, max(tx, far), cy + LABEL_HEIGHT / 2)
    name = names[edge.source]
    anchor = "end" if side < 0 else "start"
    return EdgeRoute(name, name, start, (segment,), False, True, edge.label, label_at, anchor, box)


def _normalised(boxes: dict[str, NodeBox], routes: list[EdgeRoute]) -> GraphLayout:
    """The drawing moved to start at (MARGIN, MARGIN), curves and labels included."""
    xs: list[float] = []
    ys: list[float] = []
    for b in boxes.values():
        xs += [b.x, b.x + b.width]
        ys += [b.y, b.y + b.height]
    for r in routes:
        for px, py in (r.start, *(p for seg in r.segments for p in seg)):
            xs.append(px)
            ys.append(py)
        if r.label_box is not None:
            xs += [r.label_box[0], r.label_box[2]]
            ys += [r.label_box[1], r.label_box[3]]
    if not xs:
        return GraphLayout({}, (), 2 * MARGIN, 2 * MARGIN)
    dx, dy = MARGIN - min(xs), MARGIN - min(ys)

    def move(p: Point) -> Point:
        return (p[0] + dx, p[1] + dy)

    nodes = {
        name: NodeBox(b.name, b.x + dx, b.y + dy, b.width, b.height, b.layer, b.label)
        for name, b in boxes.items()
    }
    moved = tuple(
        EdgeRoute(
            r.source,
            r.target,
            move(r.start),
            tuple((move(a), move(b), move(c)) for a, b, c in r.segments),
            r.back,
            r.loop,
            r.label,
            None if r.label_at is None else move(r.label_at),
            r.label_anchor,
            None
            if r.label_box is None
            else (
                r.label_box[0] + dx,
                r.label_box[1] + dy,
                r.label_box[2] + dx,
                r.label_box[3] + dy,
            ),
        )
        for r in routes
    )
    return GraphLayout(nodes, moved, max(xs) + dx + MARGIN, max(ys) + dy + MARGIN)
