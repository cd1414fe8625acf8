"""check_graph: a graph that cannot work is refused when it is built, naming the fix."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from tests.viz._graphs import DEPS, custom, to_critic_or_end, with_critic
from thinkgraph.errors import GraphConfigError
from thinkgraph.graphs import parts
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.state import AgentState
from thinkgraph.types import StepLimits
from thinkgraph.viz import check_graph, guarded_router, is_guarded_router


def test_the_react_graph_passes_and_is_checked_when_built() -> None:
    model = check_graph(build_react_graph(DEPS), limits=StepLimits(failure_policy="ask_human"))
    assert "think" in model and "ask_human" in model


def test_a_users_graph_built_from_our_nodes_passes() -> None:
    check_graph(with_critic())


def test_a_node_that_cannot_reach_end_is_named_with_the_fix() -> None:
    graph = with_critic()
    graph.add_node("audit", custom)
    graph.add_edge("critic", "audit")
    with pytest.raises(GraphConfigError) as info:
        check_graph(graph)
    assert str(info.value) == (
        "node 'audit' cannot reach END; add an edge from 'audit' to 'finalize', "
        "or give it a router whose targets include 'finalize'"
    )


def test_a_node_unreachable_from_start_is_named_with_the_fix() -> None:
    graph = with_critic()
    graph.add_node("orphan", custom)
    graph.add_edge("orphan", "finalize")
    with pytest.raises(GraphConfigError, match=r"^node 'orphan' is unreachable from START; add"):
        check_graph(graph)


def test_a_cycle_without_a_guarded_router_is_refused() -> None:
    graph = with_critic()
    graph.add_node("editor", custom)
    graph.add_edge("critic", "editor")
    graph.add_conditional_edges("editor", to_critic_or_end)
    with pytest.raises(GraphConfigError) as info:
        check_graph(graph)
    assert str(info.value).startswith(
        "cycle critic -> editor -> critic passes through no guarded router, so max_steps "
        "cannot stop it;"
    )
    assert "@guarded_router" in str(info.value)


def test_marking_the_users_router_as_guarded_accepts_the_cycle() -> None:
    def route_editor(state: Any) -> str:
        return "critic"

    graph = with_critic()
    graph.add_node("editor", custom)
    graph.add_edge("critic", "editor")
    marked = guarded_router(route_editor)
    graph.add_conditional_edges("editor", marked, ["critic", END])
    assert is_guarded_router(marked)
    check_graph(graph)


def test_marking_a_router_guarded_leaves_the_function_as_it_was() -> None:
    def route_editor(state: Any) -> str:
        return "critic"

    marked = guarded_router(route_editor)
    assert is_guarded_router(marked) and not is_guarded_router(route_editor)
    assert marked({}) == "critic"
    # The same function wired unmarked elsewhere is refused: the mark was not set on it.
    graph = with_critic()
    graph.add_node("editor", custom)
    graph.add_edge("critic", "editor")
    graph.add_conditional_edges("editor", route_editor, ["critic", END])
    with pytest.raises(GraphConfigError, match="passes through no guarded router"):
        check_graph(graph)


def test_a_marked_routers_literal_return_type_still_declares_its_targets() -> None:
    graph = with_critic()
    graph.add_node("editor", custom)
    graph.add_edge("critic", "editor")
    graph.add_conditional_edges("editor", guarded_router(to_critic_or_end))  # no path map
    model = check_graph(graph)
    assert model.has_edge("editor", "critic") and model.has_edge("editor", END)
    assert model.nodes["editor"]["router"] == "to_critic_or_end"


def test_our_act_renamed_in_a_graph_wired_by_hand_is_refused_naming_the_fix() -> None:
    graph: Any = StateGraph(AgentState)
    for name in ("think", "observe", "validate", "reset", "finalize"):
        graph.add_node(name, getattr(parts, f"{name}_node")(DEPS))
    graph.add_node("execute", parts.act_node(DEPS, name="execute"))
    graph.add_edge(START, "think")
    # think's router sends its act tasks to "act", whatever the path map says
    targets = {"think": "think", "act": "execute", "validate": "validate", "reset": "reset",
               "finalize": "finalize"}  # fmt: skip
    graph.add_conditional_edges("think", parts.think_router(DEPS), targets)
    graph.add_edge("execute", "observe")
    graph.add_edge("observe", "think")
    graph.add_conditional_edges("validate", parts.validate_router(DEPS), ["think", "finalize"])
    graph.add_edge("reset", "think")
    graph.add_edge("finalize", END)
    with pytest.raises(GraphConfigError) as info:
        check_graph(graph)
    assert str(info.value) == (
        "node 'execute' is our act node, but route_think on 'think' sends act tasks to 'act'; "
        "build the graph with react_graph(deps, names={'act': 'execute'}) or name the node 'act'"
    )


def test_a_next_action_without_a_route_out_of_think_is_named() -> None:
    graph = with_critic(think_keys=["think", "act", "validate", "finalize"])
    with pytest.raises(GraphConfigError) as info:
        check_graph(graph)
    # reset, now unreachable, is reported too
    assert (
        "- node 'think' has no route for NextAction.RESET; add 'reset' to the targets of "
        "route_think on 'think'"
    ) in str(info.value).splitlines()


def test_ask_human_is_required_only_when_the_failure_policy_asks_a_human() -> None:
    check_graph(with_critic(), limits=StepLimits(failure_policy="abort"))
    with pytest.raises(GraphConfigError, match="no route to 'ask_human'"):
        check_graph(with_critic(), limits=StepLimits(failure_policy="ask_human"))


def test_a_think_node_without_a_router_is_refused() -> None:
    graph = with_critic()
    graph.branches.pop("think")
    graph.add_edge("think", "act")
    with pytest.raises(GraphConfigError, match="think node without a router, so NextAction"):
        check_graph(graph)


def test_a_router_without_declared_targets_is_refused() -> None:
    def route_anywhere(state: Any) -> str:
        return "think"

    graph = with_critic()
    graph.add_node("editor", custom)
    graph.add_edge("critic", "editor")
    graph.add_conditional_edges("editor", route_anywhere)
    with pytest.raises(GraphConfigError, match="'route_anywhere' on node 'editor' declares no"):
        check_graph(graph)


def test_several_problems_are_reported_together_one_per_line() -> None:
    graph = with_critic(think_keys=["think", "act", "validate", "reset"])
    graph.add_node("orphan", custom)
    graph.add_edge("orphan", "finalize")
    with pytest.raises(GraphConfigError) as info:
        check_graph(graph)
    lines = str(info.value).splitlines()
    assert lines[0] == "2 problems in the graph:"
    assert lines[1].startswith("- node 'orphan' is unreachable from START")
    assert lines[2].startswith("- node 'think' has no route to 'finalize'")
