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

import unicodedata
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final, TypeAlias

import networkx as nx

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
NODE_GAP: Final = 28.0
EDGE_GAP: Final = 12.0
"""Horizontal room between two nodes, and between an edge and what is next to it."""
SIDE: Final = 14.0
"""How far beside a node a back edge runs."""
MARGIN: Final = 8.0
_SWEEPS: Final = 8
_PLACEMENTS: Final = 4


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


# -- 1 and 2: loops and layers --------------------------------------------------------------


def _back_edges(
    n: int, out: list[list[tuple[int, int]]], roots: list[int]
) -> tuple[set[int], list[int]]:
    """The edges that close a loop, and the nodes in reverse postorder (a topological order)."""
    state = [0] * n  # 0 unseen, 1 on the stack, 2 done
    back: set[int] = set()
    post: list[int] = []
    for root in roots:
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(out[root]))]
        while stack:
            node, todo = stack[-1]
            for target, edge in todo:
                if state[target] == 1:
                    back.add(edge)
                elif state[target] == 0:
                    state[target] = 1
                    stack.append((target, iter(out[target])))
                    break
            else:
                state[node] = 2
                post.append(node)
                stack.pop()
    post.reverse()
    return back, post


# -- 4: order -------------------------------------------------------------------------------


def _crossings(ranks: list[list[int]], pos: list[int], down: list[list[int]]) -> int:
    total = 0
    for rank in ranks[:-1]:
        below = sorted((pos[a], pos[b]) for a in rank for b in down[a])
        if len(below) < 2:
            continue
        size = max(p for _, p in below) + 2
        tree = [0] * (size + 1)  # a Fenwick tree of the lower ends seen so far
        for seen, (_, lower) in enumerate(below):
            i, before = lower + 1, 0
            while i > 0:
                before += tree[i]
                i -= i & -i
            total += seen - before
            i = lower + 1
            while i <= size:
                tree[i] += 1
                i += i & -i
    return total


def _sweep(
    ranks: list[list[int]], pos: list[int], near: list[list[tuple[int, float]]], order: range
) -> None:
    for r in order:
        rank = ranks[r]
        keys = []
        for node in rank:
            key = float(pos[node])  # a node with no neighbour there keeps its place
            if links := near[node]:
                key = 0.0
                for other, bias in links:
                    key += pos[other] + bias
                key /= len(links)
            keys.append((key, pos[node], node))
        keys.sort()
        ranks[r] = [node for _, _, node in keys]
        for i, node in enumerate(ranks[r]):
            pos[node] = i


def _transpose(
    ranks: list[list[int]], pos: list[int], up: list[list[int]], down: list[list[int]]
) -> None:
    """Swap neighbours in a rank while that removes crossings (a few rounds at most)."""
    for _ in range(4):
        swapped = False
        for rank in ranks:
            for i in range(len(rank) - 1):
                a, b = rank[i], rank[i + 1]
                now = then = 0  # crossings between a's edges and b's, as they are and swapped
                for near in (up, down):
                    for u in near[a]:
                        pu = pos[u]
                        for v in near[b]:
                            if pu > pos[v]:
                                now += 1
                            elif pu < pos[v]:
                                then += 1
                if then < now:
                    rank[i], rank[i + 1] = b, a
                    pos[a], pos[b] = i + 1, i
                    swapped = True
        if not swapped:
            return


def _order(ranks: list[list[int]], items: _Items) -> list[list[int]]:
    up, down = items.up, items.down
    pos = [0] * len(up)
    up_ids = [[u for u, _ in links] for links in up]
    down_ids = [[d for d, _ in links] for links in down]
    for rank in ranks:
        for i, node in enumerate(rank):
            pos[node] = i
    best, fewest, stale = [list(r) for r in ranks], _crossings(ranks, pos, down_ids), 0
    for _ in range(_SWEEPS):
        if fewest == 0 or stale >= 2:
            break
        _sweep(ranks, pos, up, range(1, len(ranks)))
        _sweep(ranks, pos, down, range(len(ranks) - 2, -1, -1))
        _transpose(ranks, pos, up_ids, down_ids)
        count = _crossings(ranks, pos, down_ids)
        if count < fewest:
            best, fewest, stale = [list(r) for r in ranks], count, 0
        else:
            stale += 1
    return best


# -- 5: x -----------------------------------------------------------------------------------


def _fit(targets: list[float], gaps: list[float]) -> list[float]:
    """x nearest `targets` (least squares) with x[i+1] - x[i] >= gaps[i], keeping the order."""
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    means: list[float] = []  # blocks of adjacent items that sit together: mean and size
    sizes: list[int] = []
    for target, offset in zip(targets, offsets, strict=True):
        mean, size = target - offset, 1
        while means and means[-1] >= mean:
            before, count = means.pop(), sizes.pop()
            mean = (before * count + mean * size) / (count + size)
            size += count
        means.append(mean)
        sizes.append(size)
    xs: list[float] = []
    for mean, size in zip(means, sizes, strict=True):
        xs.extend([mean] * size)
    return [x + offset for x, offset in zip(xs, offsets, strict=True)]


class _Items:
    """The layout's items: real nodes first (0..n-1), then the edges' virtual points."""

    def __init__(self) -> None:
        self.rank: list[int] = []
        self.left: list[float] = []
        self.right: list[float] = []
        self.real: list[bool] = []
        self.up: list[list[tuple[int, float]]] = []
        """(item above, order bias) per item; the bias puts back edges to the right."""
        self.down: list[list[tuple[int, float]]] = []
        self.pull_up: list[list[tuple[int, float, float]]] = []
        """(item above, weight, x offset from it) per item."""
        self.pull_down: list[list[tuple[int, float, float]]] = []

    def add(self, rank: int, left: float, right: float, real: bool) -> int:
        self.rank.append(rank)
        self.left.append(left)
        self.right.append(right)
        self.real.append(real)
        for links in (self.up, self.down, self.pull_up, self.pull_down):
            links.append([])
        return len(self.rank) - 1

    def link(self, upper: int, lower: int, bias: float, offset: float) -> None:
        """`offset`: where `lower` wants to be from `upper` (beside it, for a back edge)."""
        weight = 8.0 if not (self.real[upper] or self.real[lower]) else 2.0
        self.down[upper].append((lower, bias))
        self.up[lower].append((upper, bias))
        self.pull_up[lower].append((upper, weight, offset))
        self.pull_down[upper].append((lower, weight, -offset))

    def gap(self, a: int, b: int) -> float:
        room = NODE_GAP if self.real[a] and self.real[b] else EDGE_GAP
        return self.right[a] + self.left[b] + room


def _place(items: _Items, ranks: list[list[int]]) -> list[float]:
    x = [0.0] * len(items.rank)
    gaps = [[items.gap(a, b) for a, b in pairwise(rank)] for rank in ranks]
    for rank, rank_gaps in zip(ranks, gaps, strict=True):
        at = 0.0
        for node, gap in zip(rank, [0.0, *rank_gaps], strict=True):
            at += gap
            x[node] = at
    passes = [(r, items.pull_up) for r in range(1, len(ranks))]
    passes += [(r, items.pull_down) for r in range(len(ranks) - 2, -1, -1)]
    for _ in range(_PLACEMENTS):
        for r, pulls in passes:
            rank = ranks[r]
            targets = []
            for node in rank:
                total = weights = 0.0
                for other, weight, offset in pulls[node]:
                    total += (x[other] + offset) * weight
                    weights += weight
                targets.append(total / weights if weights else x[node])
            for node, at in zip(rank, _fit(targets, gaps[r]), strict=True):
                x[node] = at
    return x


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


def layered_layout(model: nx.DiGraph) -> GraphLayout:
    """Lay out a graph model (from `to_graph_model` or `from_description`) in layers.

    Returns:
        Boxes for the nodes and routes for the edges, both in the model's order, in a
        box from (0, 0) to (width, height).
    """
    names = [str(n) for n in model.nodes]
    index = {node: i for i, node in enumerate(model.nodes)}
    n = len(names)
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    pairs = [(index[a], index[b], data) for a, b, data in model.edges(data=True)]
    for e, (a, b, _) in enumerate(pairs):
        if a != b:
            out[a].append((b, e))
    roots = ([index[START]] if START in index else []) + list(range(n))
    back, topo = _back_edges(n, out, roots)

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
    items = _Items()
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

    ranks = _initial_ranks(items, roots)
    ranks = _order(ranks, items)
    x = _place(items, ranks)
    y = _rank_centres(items, ranks, edges)
    return _route(model, names, labels, layer, widths, items, x, y, edges)


def _initial_ranks(items: _Items, roots: list[int]) -> list[list[int]]:
    """Ranks in the order a depth-first walk from the start meets their items."""
    ranks: list[list[int]] = [[] for _ in range(max(items.rank, default=0) + 1)]
    seen = [False] * len(items.rank)
    for root in roots:
        if seen[root]:
            continue
        seen[root] = True
        stack = [root]
        while stack:
            item = stack.pop()
            ranks[items.rank[item]].append(item)
            for lower, _ in reversed(items.down[item]):
                if not seen[lower]:
                    seen[lower] = True
                    stack.append(lower)
    return ranks


def _rank_centres(items: _Items, ranks: list[list[int]], edges: list[_Edge]) -> list[float]:
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
    model: nx.DiGraph,
    names: list[str],
    labels: list[str],
    layer: list[int],
    widths: list[float],
    items: _Items,
    x: list[float],
    y: list[float],
    edges: list[_Edge],
) -> GraphLayout:
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
    return _normalised(list(model.nodes), boxes, routes)


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


def _normalised(
    order: list[Any], boxes: dict[str, NodeBox], routes: list[EdgeRoute]
) -> GraphLayout:
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
