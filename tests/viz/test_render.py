"""Mermaid, ASCII and DOT renderings against expected files; SVG/PNG through Graphviz."""

from __future__ import annotations

import shutil

import networkx as nx
import pytest

from tests.viz._expect import assert_expected
from tests.viz._graphs import critic_run, with_critic
from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.tools.builtin import calculator
from thinkgraph.viz import (
    GraphvizNotFoundError,
    RunOverlay,
    build_overlay,
    overlay_from_result,
    render,
    to_ascii,
    to_dot,
    to_graph_model,
    to_mermaid,
    to_png,
    to_svg,
)

needs_graphviz = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (apt-get install graphviz)"
)


@pytest.fixture
def critic_model() -> nx.DiGraph:
    """The critic graph with a breakpoint before act."""
    compiled = with_critic().compile(interrupt_before=["act"])
    return to_graph_model(compiled, limits=StepLimits(max_steps=6), name="critic")


@pytest.fixture
def critic_overlay(critic_model: nx.DiGraph) -> RunOverlay:
    return build_overlay(
        critic_run(), status="done", stop_reason="final_answer", model=critic_model
    )


@pytest.fixture(scope="module")
def paused_react() -> tuple[nx.DiGraph, RunOverlay]:
    """The react graph and a real run paused at ask_human after an unparsable reply."""
    model = ScriptedModel(
        ['Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}', "no format"]
    )
    limits = StepLimits(max_consecutive_failures=1, failure_policy="ask_human")
    with Agent(model, [calculator], limits=limits, store="memory://") as agent:
        result = agent.run("What is 2 + 40?", thread_id="p")
        graph = to_graph_model(agent.graph, limits=limits)
    return graph, overlay_from_result(result, graph)


def test_mermaid_of_a_graph_labels_edges_and_marks_breakpoints(critic_model: nx.DiGraph) -> None:
    assert_expected("critic.mmd", to_mermaid(critic_model))


def test_mermaid_overlay_marks_the_path_with_counts(
    critic_model: nx.DiGraph, critic_overlay: RunOverlay
) -> None:
    assert_expected("critic_run.mmd", to_mermaid(critic_model, critic_overlay))


def test_ascii_overlay_lists_nodes_by_layer_with_counts(
    critic_model: nx.DiGraph, critic_overlay: RunOverlay
) -> None:
    text = to_ascii(critic_model, critic_overlay)
    assert text.isascii()
    assert_expected("critic_run.txt", text)


def test_dot_overlay_styles_visited_nodes_and_edges(
    critic_model: nx.DiGraph, critic_overlay: RunOverlay
) -> None:
    assert_expected("critic_run.dot", to_dot(critic_model, critic_overlay))


def test_a_paused_react_run_in_ascii_and_mermaid(
    paused_react: tuple[nx.DiGraph, RunOverlay],
) -> None:
    graph, overlay = paused_react
    assert_expected("react_paused.txt", to_ascii(graph, overlay))
    assert_expected("react_paused.mmd", to_mermaid(graph, overlay))


def test_renderings_are_deterministic(critic_overlay: RunOverlay) -> None:
    first = to_graph_model(with_critic().compile(interrupt_before=["act"]))
    second = to_graph_model(with_critic().compile(interrupt_before=["act"]))
    for fmt in ("mermaid", "ascii", "dot"):
        assert render(first, fmt, critic_overlay) == render(second, fmt, critic_overlay)


def test_an_unknown_format_names_the_known_ones(critic_model: nx.DiGraph) -> None:
    with pytest.raises(ValueError, match="use one of mermaid, ascii, dot, svg, png"):
        render(critic_model, "gif")


@needs_graphviz
def test_svg_through_graphviz_draws_every_node(
    paused_react: tuple[nx.DiGraph, RunOverlay],
) -> None:
    svg = to_svg(*paused_react)
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    for node in ("think", "act", "observe", "ask_human", "paused (ask_human)"):
        assert f">{node}" in svg


@needs_graphviz
def test_png_through_graphviz_is_a_png(critic_model: nx.DiGraph) -> None:
    assert to_png(critic_model).startswith(b"\x89PNG\r\n\x1a\n")


def test_svg_without_graphviz_says_how_to_install_it(
    critic_model: nx.DiGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thinkgraph.viz.dot.shutil.which", lambda name: None)
    with pytest.raises(GraphvizNotFoundError) as info:
        to_svg(critic_model)
    assert str(info.value) == (
        "Graphviz is not installed: apt-get install graphviz (or use --format mermaid|ascii|dot)"
    )
