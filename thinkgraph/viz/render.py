"""One entry point for every diagram format, used by `Agent.draw` and `thinkgraph draw`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias

import networkx as nx

from thinkgraph.graphs.routes import approval_tools
from thinkgraph.state import TaskStep
from thinkgraph.viz.ascii import to_ascii
from thinkgraph.viz.dot import to_dot, to_png, to_svg
from thinkgraph.viz.mermaid import to_mermaid
from thinkgraph.viz.model import from_description, to_graph_model
from thinkgraph.viz.overlay import RunOverlay, overlay_from_result

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot

    from thinkgraph.result import RunResult
    from thinkgraph.types import Breakpoints, StepLimits

__all__ = ["FORMATS", "DiagramFormat", "Gated", "draw_run", "render", "run_model"]

DiagramFormat: TypeAlias = Literal["mermaid", "ascii", "dot", "svg", "png"]

FORMATS: Final[tuple[DiagramFormat, ...]] = ("mermaid", "ascii", "dot", "svg", "png")
"""Every diagram format; svg and png need Graphviz's `dot` program."""


class Gated(Protocol):
    """What a diagram reads of an agent's parts: which tools wait for a person.

    An agent's `Deps` is one; a protocol so drawing never imports the node bodies.
    """

    @property
    def tools(self) -> Iterable[Any]:
        """The agent's tools (each may have `requires_approval` and `side_effects`)."""
        ...

    @property
    def approve(self) -> Iterable[str] | str | None:
        """The agent's ``approve`` setting: tool names, "side_effects" or None."""
        ...


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


def draw_run(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    deps: Gated,
    fmt: str,
    *,
    limits: StepLimits,
    breakpoints: Breakpoints,
    run: tuple[StateSnapshot, RunResult] | None = None,
) -> str | bytes:
    """An agent's graph as a diagram (`Agent.draw`); with `run`, that run's path on it.

    A run draws with its own stored limits and breakpoints, and a run of a custom graph
    draws the graph it ran (stored with its task step), whatever `graph` is.

    Args:
        graph: the agent's compiled graph.
        deps: the agent's parts (which tools need approval).
        fmt: a format of `FORMATS`.
        limits: the agent's limits, drawn when no run is given.
        breakpoints: the agent's breakpoints, likewise.
        run: a run's latest snapshot and its result, both from one read of the store.
    """
    model, overlay = run_model(graph, deps, limits=limits, breakpoints=breakpoints, run=run)
    return render(model, fmt, overlay)


def run_model(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    deps: Gated,
    *,
    limits: StepLimits,
    breakpoints: Breakpoints,
    run: tuple[StateSnapshot, RunResult] | None = None,
) -> tuple[nx.DiGraph, RunOverlay | None]:
    """The diagram model an agent's graph (or `run`'s) is drawn on, and the run's overlay
    (None without a run): what `draw_run` renders, for a renderer of its own (the studio's
    `to_svg_layout`)."""
    approvals = approval_tools(deps.tools, deps.approve)
    ran: dict[str, Any] | None = None
    if run is not None:
        values = run[0].values
        limits = values.get("limits") or limits
        breakpoints = values.get("breakpoints") or breakpoints
        chain = run[1].chain
        ran = chain[0].graph if chain and isinstance(chain[0], TaskStep) else None
    if ran is not None:
        model = from_description(
            ran, limits=limits, breakpoints=breakpoints, approval_tools=approvals
        )
    else:
        model = to_graph_model(
            graph, limits=limits, breakpoints=breakpoints, approval_tools=approvals
        )
    overlay = None
    if run is not None:
        overlay = overlay_from_result(run[1], model, waiting_at=tuple(run[0].next))
    return model, overlay
