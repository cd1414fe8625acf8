"""to_graph_model: nodes, edges, labels, guards, approval gates and breakpoints."""

from __future__ import annotations

from typing import Any

from tests.viz._graphs import DEPS, with_critic
from thinkgraph import tool
from thinkgraph.graphs import REACT_ROUTES
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.types import StepLimits
from thinkgraph.viz import approval_tools, guarded_router, to_graph_model
from thinkgraph.viz.model import END, START


def test_every_node_of_the_react_graph_has_its_kind() -> None:
    model = to_graph_model(build_react_graph(DEPS))
    kinds = dict(model.nodes(data="kind"))
    assert kinds[START] == "start" and kinds[END] == "end"
    for name in ("think", "approve", "act", "observe", "validate", "reset", "finalize"):
        assert kinds[name] == name
    assert model.nodes["approve"]["approval"] is True
    assert model.nodes["think"]["approval"] is False


def test_conditional_edges_carry_the_next_action_and_guard_labels() -> None:
    model = to_graph_model(build_react_graph(DEPS))
    assert model.edges["think", "act"]["label"] == "continue"
    assert model.edges["think", "validate"]["label"] == "validate"
    assert model.edges["think", "reset"]["label"] == "reset"
    assert model.edges["think", "ask_human"]["label"] == "failures"
    assert model.edges["think", "finalize"]["label"] == "abort / budget / max_steps"
    assert model.edges["think", "think"]["label"] == "min_steps / retry"
    assert model.edges["validate", "finalize"]["label"] == "passed / abort / budget / max_steps"
    assert model.edges["validate", "think"]["label"] == "failed"
    assert model.edges["think", "act"]["conditional"] is True
    assert model.edges["think", "act"]["guarded"] is True


def test_fixed_edges_have_no_label() -> None:
    model = to_graph_model(build_react_graph(DEPS))
    edge = model.edges["act", "observe"]
    assert (edge["conditional"], edge["label"], edge["guarded"]) == (False, None, False)
    assert model.has_edge(START, "think") and model.has_edge("finalize", END)


def test_every_label_in_the_table_is_on_an_edge_of_the_react_graph() -> None:
    model = to_graph_model(build_react_graph(DEPS))
    drawn = [label.split(" / ") for _, _, label in model.edges(data="label") if label]
    labels = {part for parts in drawn for part in parts}
    assert {route.label for routes in REACT_ROUTES.values() for route in routes} == labels


def test_our_routers_routes_label_an_edge_the_user_remapped() -> None:
    model = to_graph_model(with_critic())
    assert model.edges["validate", "critic"]["label"] == "passed / abort / budget / max_steps"
    assert model.edges["validate", "critic"]["keys"] == ["finalize"]
    assert model.nodes["critic"]["kind"] == "custom"
    assert model.nodes["validate"]["router"] == "route_after_validate"
    assert model.nodes["validate"]["guarded"] is True


def test_a_users_router_on_our_node_is_labelled_by_its_own_keys_not_our_routes() -> None:
    def route_reviewed(state: Any) -> str:
        """Never checks a guard: its edge to the critic is no "budget" or "max_steps"."""
        return "finalize" if state.get("answer") is not None else "think"

    graph = with_critic()
    graph.branches.pop("validate")
    graph.add_conditional_edges(
        "validate", guarded_router(route_reviewed), {"finalize": "critic", "think": "think"}
    )
    model = to_graph_model(graph)
    assert model.edges["validate", "critic"]["label"] == "finalize"
    assert model.edges["validate", "think"]["label"] is None
    assert model.nodes["validate"]["router"] == "route_reviewed"


def test_compiled_and_uncompiled_graphs_give_the_same_model() -> None:
    plain = to_graph_model(with_critic())
    compiled = to_graph_model(with_critic().compile())
    assert list(plain.nodes) == list(compiled.nodes)
    assert list(plain.edges(data=True)) == list(compiled.edges(data=True))


def test_breakpoints_come_from_the_compiled_graph_and_from_run_time_settings() -> None:
    compiled = with_critic().compile(interrupt_before=["act"], interrupt_after=["think"])
    model = to_graph_model(compiled, breakpoints={"before": ["finalize"]})
    before = {n for n, on in model.nodes(data="breakpoint_before") if on}
    after = {n for n, on in model.nodes(data="breakpoint_after") if on}
    assert (before, after) == ({"act", "finalize"}, {"think"})


def test_guards_and_approval_tools_are_graph_attributes() -> None:
    @tool(requires_approval=True)
    def send_email(to: str) -> str:
        """Send an e-mail."""
        return "sent"

    @tool(side_effects=True)
    def write_file(path: str) -> str:
        """Write a file."""
        return "written"

    tools = [send_email, write_file]
    assert approval_tools(tools) == ["send_email"]
    assert approval_tools(tools, "side_effects") == ["send_email", "write_file"]
    model = to_graph_model(
        build_react_graph(DEPS),
        limits=StepLimits(max_steps=5),
        approval_tools=approval_tools(tools, ["write_file"]),
    )
    assert model.graph["guards"]["max_steps"] == 5
    assert model.graph["approval_tools"] == ["send_email", "write_file"]
