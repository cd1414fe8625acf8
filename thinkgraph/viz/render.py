"""One entry point for every diagram format, used by `Agent.draw` and `thinkgraph draw`."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

import networkx as nx

from thinkgraph.viz.ascii import to_ascii
from thinkgraph.viz.dot import to_dot, to_png, to_svg
from thinkgraph.viz.mermaid import to_mermaid
from thinkgraph.viz.overlay import RunOverlay

__all__ = ["FORMATS", "DiagramFormat", "render"]

DiagramFormat: TypeAlias = Literal["mermaid", "ascii", "dot", "svg", "png"]

FORMATS: Final[tuple[DiagramFormat, ...]] = ("mermaid", "ascii", "dot", "svg", "png")
"""Every diagram format; svg and png need Graphviz's `dot` program."""


def render(model: nx.DiGraph, fmt: str, overlay: RunOverlay | None = None) -> str | bytes:
    """Render a graph model in a format: text for all of them but png, which is bytes.

    Raises:
        ValueError: an unknown format (the message lists the known ones).
        GraphvizNotFoundError: svg or png without Graphviz installed.
    """
    if fmt == "mermaid":
        return to_mermaid(model, overlay)
    if fmt == "ascii":
        return to_ascii(model, overlay)
    if fmt == "dot":
        return to_dot(model, overlay)
    if fmt == "svg":
        return to_svg(model, overlay)
    if fmt == "png":
        return to_png(model, overlay)
    raise ValueError(f"unknown diagram format {fmt!r}; use one of {', '.join(FORMATS)}")
