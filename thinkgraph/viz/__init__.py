"""Diagrams of thinkgraph graphs and of the path one run took through them.

A graph is read once into a networkx model (`to_graph_model`), checked (`check_graph`) and
rendered offline by pure functions: `to_mermaid`, `to_ascii`, `to_dot`, `to_svg_layout`
(SVG from our own layered layout, a run's overlay as CSS classes styled by `SVG_CSS`), and
`to_svg` / `to_png` through Graphviz when it is installed. A run overlay (`build_overlay`)
marks the visited nodes and edges with counts, and where the run paused or stopped.

Example:
    >>> from thinkgraph.viz import to_graph_model, to_ascii
    >>> print(to_ascii(to_graph_model(graph)))  # doctest: +SKIP
"""

from __future__ import annotations

from thinkgraph.graphs.checks import check_graph
from thinkgraph.graphs.routes import approval_tools, guarded_router, is_guarded_router
from thinkgraph.viz.ascii import to_ascii
from thinkgraph.viz.diff import render_diff, to_ascii_diff, to_mermaid_diff
from thinkgraph.viz.dot import GraphvizNotFoundError, to_dot, to_png, to_svg
from thinkgraph.viz.mermaid import to_mermaid
from thinkgraph.viz.model import from_description, graph_description, to_graph_model
from thinkgraph.viz.overlay import RunOverlay, build_overlay, overlay_from_result
from thinkgraph.viz.render import FORMATS, DiagramFormat, render
from thinkgraph.viz.svg import OVERLAY_NODE_CLASSES, SVG_CSS, overlay_classes, to_svg_layout

__all__ = [
    "FORMATS",
    "OVERLAY_NODE_CLASSES",
    "SVG_CSS",
    "DiagramFormat",
    "GraphvizNotFoundError",
    "RunOverlay",
    "approval_tools",
    "build_overlay",
    "check_graph",
    "from_description",
    "graph_description",
    "guarded_router",
    "is_guarded_router",
    "overlay_classes",
    "overlay_from_result",
    "render",
    "render_diff",
    "to_ascii",
    "to_ascii_diff",
    "to_dot",
    "to_graph_model",
    "to_mermaid",
    "to_mermaid_diff",
    "to_png",
    "to_svg",
    "to_svg_layout",
]
