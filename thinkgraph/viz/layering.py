"""Sugiyama's steps on a layered graph's items, with no geometry of nodes or labels.

The items are a graph's nodes and the virtual points of its edges, each in a rank, linked
to the items above and below. `layout.py` makes them from a graph model and draws the
result; here they are put in order and placed:

- `back_edges`: which edges close a loop, by a depth-first search in the given order;
- `initial_ranks`: each rank in the order a depth-first walk from the start meets it;
- `order_ranks`: barycenter sweeps down and up with transposition of neighbours, keeping
  the order with the fewest crossings;
- `place_ranks`: x for every item, each rank as near its neighbours' weighted average as
  the spacing allows (`fit`: least squares under the order, pooling adjacent violators).

Every step is a function of the items' order alone (lists, never hashing), so the same
items always give the same result.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Final

__all__ = ["Items", "back_edges", "fit", "initial_ranks", "order_ranks", "place_ranks"]

NODE_GAP: Final = 28.0
EDGE_GAP: Final = 12.0
"""Horizontal room between two nodes, and between an edge and what is next to it."""
_SWEEPS: Final = 8
_PLACEMENTS: Final = 4


class Items:
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
        """A new item in `rank`, taking `left` and `right` room from its x; its index."""
        self.rank.append(rank)
        self.left.append(left)
        self.right.append(right)
        self.real.append(real)
        for links in (self.up, self.down, self.pull_up, self.pull_down):
            links.append([])
        return len(self.rank) - 1

    def link(self, upper: int, lower: int, bias: float, offset: float) -> None:
        """Link two items of an edge's chain; `lower` wants to be at `upper`'s x + `offset`.

        Links between virtual points pull harder than links to nodes, so long edges run
        straight (Graphviz weighs them 1, 2, 8 alike).
        """
        weight = 8.0 if not (self.real[upper] or self.real[lower]) else 2.0
        self.down[upper].append((lower, bias))
        self.up[lower].append((upper, bias))
        self.pull_up[lower].append((upper, weight, offset))
        self.pull_down[upper].append((lower, weight, -offset))

    def gap(self, a: int, b: int) -> float:
        """The least distance between the x of `a` and of `b` next to it on its right."""
        room = NODE_GAP if self.real[a] and self.real[b] else EDGE_GAP
        return self.right[a] + self.left[b] + room


# -- loops ---------------------------------------------------------------------------------


def back_edges(
    n: int, out: list[list[tuple[int, int]]], roots: list[int]
) -> tuple[set[int], list[int]]:
    """The edges that close a loop, and the nodes in reverse postorder (a topological order).

    Args:
        n: how many nodes (0..n-1).
        out: each node's edges as (target, edge index), in the order to follow them.
        roots: where searches start, in order (START first); a node already seen is skipped.
    """
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


def initial_ranks(items: Items, roots: list[int]) -> list[list[int]]:
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


# -- order ---------------------------------------------------------------------------------


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


def order_ranks(ranks: list[list[int]], items: Items) -> list[list[int]]:
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


# -- x -------------------------------------------------------------------------------------


def fit(targets: list[float], gaps: list[float]) -> list[float]:
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


def place_ranks(items: Items, ranks: list[list[int]]) -> list[float]:
    x = [0.0] * len(items.rank)
    gaps = [[items.gap(a, b) for a, b in pairwise(rank)] for rank in ranks]
    for rank, rank_gaps in zip(ranks, gaps, strict=True):
        at = 0.0
        for node, gap in zip(rank, [0.0, *rank_gaps], strict=False):
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
            for node, at in zip(rank, fit(targets, gaps[r]), strict=True):
                x[node] = at
    return x
