"""``python -m bench.svg_layout``: how long the studio's SVG takes to lay out and draw.

Issue 28's goal: the page of a 150-node graph loads in well under a second, so the SVG of
a 150-node graph with ~300 edges is laid out and drawn in well under 100 ms. Graphs of 20,
150 and 500 nodes (`synthetic_model`: layers of about a dozen nodes, edges mostly to the
next layer, some skipping one, some going back up) are drawn ``--repeat`` times each; the
median is printed in ms, with the layout's share, and one JSON line at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import networkx as nx

from thinkgraph.viz.layout import layered_layout
from thinkgraph.viz.model import END, START
from thinkgraph.viz.svg import to_svg_layout

SIZES = ((20, 40), (150, 300), (500, 1000))
"""(nodes, edges) of each graph drawn."""


def synthetic_model(nodes: int, edges: int, seed: int = 7, width: int = 12) -> nx.DiGraph:
    """A graph model like a big agent's: `nodes` nodes in layers of about `width`.

    Every node has an edge from the layer above (START above the first); the last layer
    goes to END. The other edges go mostly to the next layer, some skip a layer and some
    go back up (loops). The same arguments always give the same model.
    """
    rng = random.Random(seed)
    model = nx.DiGraph(name="synthetic")
    layers = [
        [f"n{i:03d}" for i in range(k, min(k + width, nodes))] for k in range(0, nodes, width)
    ]
    model.add_node(START, kind="start", label="start")
    for layer in layers:
        for name in layer:
            model.add_node(name, kind="custom", label=name)
    model.add_node(END, kind="end", label="end")
    for above, layer in pairwise([[START], *layers]):
        for name in layer:
            model.add_edge(rng.choice(above), name, conditional=False, label=None)
    for name in layers[-1]:
        model.add_edge(name, END, conditional=False, label=None)
    while model.number_of_edges() < edges:
        i = rng.randrange(len(layers) - 1)
        step = rng.choices([1, 2, -1, -3], weights=[14, 3, 2, 1])[0]
        j = min(max(i + step, 0), len(layers) - 1)
        a, b = rng.choice(layers[i]), rng.choice(layers[j])
        if a != b and not model.has_edge(a, b):
            model.add_edge(a, b, conditional=True, label=rng.choice([None, "next", "retry"]))
    return model


def _median_ms(fn: Callable[[nx.DiGraph], Any], model: nx.DiGraph, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn(model)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.svg_layout", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7, help="draws per graph (median shown)")
    args = parser.parse_args(argv)
    results = []
    for nodes, edges in SIZES:
        model = synthetic_model(nodes, edges)
        to_svg_layout(model)  # warm up
        layout_ms = _median_ms(layered_layout, model, args.repeat)
        total_ms = _median_ms(to_svg_layout, model, args.repeat)
        layers = max(box.layer for box in layered_layout(model).nodes.values()) + 1
        print(
            f"{nodes:4d} nodes {model.number_of_edges():5d} edges {layers:3d} layers: "
            f"{total_ms:7.1f} ms (layout {layout_ms:6.1f} ms)"
        )
        results.append(
            {
                "nodes": nodes,
                "edges": model.number_of_edges(),
                "ms": total_ms,
                "layout_ms": layout_ms,
            }
        )
    print(json.dumps({"svg_layout": results}))


if __name__ == "__main__":
    main()
