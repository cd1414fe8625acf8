"""Your own graph from our parts: node and router factories, and an Agent that runs it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ConfigError, GraphConfigError
from thinkgraph.graphs import THINK_TARGETS, build_react_graph, parts
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import ReActText
from thinkgraph.state import AgentState, HumanStep, ThoughtStep
from thinkgraph.tools import ToolRegistry
from thinkgraph.viz import check_graph, is_guarded_router, to_graph_model

Graph = StateGraph[AgentState, Any, AgentState, AgentState]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


REPLIES = [
    'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 40}',
    "Thought: done\nFinal Answer: 42",
]


def note(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """A user's node: leaves a note for the model before each think."""
    return {"chain": [HumanStep(node="note", kind="guidance", text="be brief")]}


def with_note(deps: Deps, note_node: Any = None) -> Graph:
    """START → note → think …: a user's node in front of our loop, no approve/ask_human."""
    graph: Graph = StateGraph(AgentState)
    graph.add_node("note", note_node or parts.node("note", note, deps))
    for name in ("think", "observe", "validate", "reset", "finalize"):
        graph.add_node(name, getattr(parts, f"{name}_node")(deps))
    graph.add_node("act", parts.act_node(deps))
    graph.add_edge(START, "note")
    graph.add_edge("note", "think")
    targets = ["think", "act", "validate", "reset", "finalize"]
    graph.add_conditional_edges("think", parts.think_router(deps), targets)
    graph.add_edge("act", "observe")
    graph.add_conditional_edges("observe", parts.observe_router(deps), ["think", "finalize"])
    graph.add_conditional_edges(
        "validate", parts.validate_router(deps), ["think", "reset", "finalize"]
    )
    graph.add_edge("reset", "think")
    graph.add_edge("finalize", END)
    return graph


def test_the_react_graph_is_built_from_the_public_factories() -> None:
    deps = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([]))
    model = to_graph_model(build_react_graph(deps))
    kinds = {n: model.nodes[n]["kind"] for n in model.nodes}
    assert kinds == {
        "__start__": "start", "think": "think", "approve": "approve", "observe": "observe",
        "validate": "validate", "reset": "reset", "finalize": "finalize",
        "ask_human": "ask_human", "act": "act", "__end__": "end",
    }  # fmt: skip
    assert model.nodes["think"]["router"] == "route_think"
    assert model.nodes["approve"]["router"] == "route_approved"
    assert set(THINK_TARGETS) <= set(model.nodes)


def _wired_by_hand(graph: Graph, deps: Deps) -> None:
    """Our nodes and every edge between them, wired as a LangGraph user would, with our
    routers (which return node names) and their target lists."""
    graph.add_node("think", parts.think_node(deps))
    graph.add_node("approve", parts.approve_node(deps))
    graph.add_node("observe", parts.observe_node(deps))
    graph.add_node("validate", parts.validate_node(deps))
    graph.add_node("reset", parts.reset_node(deps))
    graph.add_node("finalize", parts.finalize_node(deps))
    graph.add_node("ask_human", parts.ask_human_node(deps))
    graph.add_node("act", parts.act_node(deps))
    graph.add_conditional_edges("think", parts.think_router(deps), parts.THINK_TARGETS)
    graph.add_conditional_edges("approve", parts.approved_router(deps), parts.APPROVE_TARGETS)
    graph.add_edge("act", "observe")
    graph.add_conditional_edges("observe", parts.observe_router(deps), parts.OBSERVE_TARGETS)
    graph.add_conditional_edges("validate", parts.validate_router(deps), parts.VALIDATE_TARGETS)
    graph.add_edge("reset", "think")
    graph.add_conditional_edges("ask_human", parts.human_router(deps), parts.HUMAN_TARGETS)
    graph.add_edge("finalize", END)
    graph.add_edge(START, "think")


def test_our_nodes_wired_by_hand_draw_as_the_table_built() -> None:
    deps = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([]))
    graph: Graph = StateGraph(AgentState)
    _wired_by_hand(graph, deps)
    by_hand, built = to_graph_model(graph), to_graph_model(build_react_graph(deps))
    assert dict(by_hand.nodes(data="kind")) == dict(built.nodes(data="kind"))
    assert sorted(by_hand.edges(data="label")) == sorted(built.edges(data="label"))
    assert sorted(by_hand.edges(data="guarded")) == sorted(built.edges(data="guarded"))


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (parts.think_router, "route_think"),
        (parts.observe_router, "route_after_observe"),
        (parts.validate_router, "route_after_validate"),
        (parts.human_router, "route_after_human"),
    ],
)
def test_the_guarding_routers_keep_their_names_and_their_guard_mark(make: Any, name: str) -> None:
    deps = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([]))
    router = make(deps)
    # LangGraph and the diagrams name the branch by the routing function it runs.
    assert router.__name__ == name
    assert is_guarded_router(router)


def test_a_custom_graph_runs_checkpoints_and_draws_through_the_agent(sqlite_url: str) -> None:
    with Agent(ScriptedModel(REPLIES), [add], store=sqlite_url, build_graph=with_note) as agent:
        result = agent.run("2 + 40?", thread_id="c1")
        diagram = agent.draw("mermaid", thread_id="c1")
        history = agent.history("c1")
    assert (result.status, result.answer) == ("done", "42")
    assert [s.number for s in result.chain] == list(range(len(result.chain)))
    assert result.chain[1] == HumanStep(
        node="note", kind="guidance", text="be brief", number=1, id=result.chain[1].id,
        at=result.chain[1].at,
    )  # fmt: skip
    assert 'note["note<br/>×1"]' in diagram and '__start__ -->|"×1"| note;' in diagram
    assert "note" in [h.node for h in history]  # type: ignore[attr-defined]


def test_a_custom_graphs_run_is_drawn_as_that_graph_by_any_agent_and_the_cli(
    sqlite_url: str, tmp_path: Any
) -> None:
    from typer.testing import CliRunner

    from thinkgraph.cli import app

    with Agent(ScriptedModel(REPLIES), [add], store=sqlite_url, build_graph=with_note) as agent:
        agent.run("2 + 40?", thread_id="c2")
    # A plain agent (the prebuilt graph), as `thinkgraph draw` and `show -f html` make.
    with Agent(ScriptedModel([]), store=sqlite_url) as plain:
        diagram = plain.draw("mermaid", thread_id="c2")
    assert 'note["note<br/>×1"]' in diagram and '__start__ -->|"×1"| note;' in diagram
    assert "approve" not in diagram  # the custom graph has no approval gate
    drawn = CliRunner().invoke(app, ["draw", "--thread", "c2", "--store", sqlite_url])
    assert drawn.exit_code == 0 and '__start__ -->|"×1"| note;' in drawn.output
    page = tmp_path / "run.html"
    shown = CliRunner().invoke(app, ["show", "c2", "--store", sqlite_url, "-f", "html",
                                     "-o", str(page)])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "note" in page.read_text()


def test_the_model_sees_what_a_users_node_wrote() -> None:
    seen: list[str] = []

    def model(messages: list[dict[str, Any]]) -> str:
        seen.append(json.dumps(messages))
        return "Thought: ok\nFinal Answer: 1"

    agent = Agent(ScriptedModel(model), store="memory://", build_graph=with_note)
    assert agent.run("x", thread_id="seen").answer == "1"
    assert "be brief" in seen[0]


def test_a_broken_custom_graph_is_refused_when_the_agent_is_made_naming_the_node() -> None:
    def dead_end(deps: Deps) -> Graph:
        graph = with_note(deps)
        graph.add_node("audit", parts.node("audit", note, deps))
        graph.add_edge("note", "audit")
        return graph

    with pytest.raises(GraphConfigError, match="node 'audit' cannot reach END; add an edge"):
        Agent(ScriptedModel([]), store="memory://", build_graph=dead_end)


def test_a_compiled_graph_is_refused_with_what_to_return_instead() -> None:
    def compiled(deps: Deps) -> Any:
        return with_note(deps).compile()

    with pytest.raises(ConfigError, match="return the uncompiled StateGraph"):
        Agent(ScriptedModel([]), store="memory://", build_graph=compiled)


def test_breakpoints_may_name_a_custom_node_and_unknown_names_are_refused() -> None:
    agent = Agent(
        ScriptedModel(REPLIES), [add], store="memory://", build_graph=with_note,
        breakpoints={"after": ["note"]},
    )  # fmt: skip
    paused = agent.run("2 + 40?", thread_id="bp")
    assert paused.status == "paused" and paused.chain[-1].node == "note"
    assert agent.resume("bp").answer == "42"
    with pytest.raises(ConfigError, match="unknown node 'critic'"):
        Agent(ScriptedModel([]), store="memory://", build_graph=with_note,
              breakpoints={"before": ["critic"]})  # fmt: skip


def test_a_node_wrapped_without_deps_gets_the_state_only_and_leaves_numbers_to_the_chain() -> None:
    def stamp(state: AgentState) -> dict[str, Any]:
        return {"chain": [ThoughtStep(node="stamp", text=f"{len(state['chain'])} steps so far")]}

    run = parts.node("stamp", stamp)
    update = run.invoke({"chain": [ThoughtStep(node="think")] * 3})
    # The node emits its step unnumbered: the chain's reducer numbers it when appended.
    assert update["node"] == "stamp" and update["chain"][0].number == -1
    assert update["chain"][0].text == "3 steps so far"


def test_a_step_names_the_node_it_was_made_in_sync_or_async() -> None:
    def plain(state: AgentState) -> dict[str, Any]:
        return {"chain": [HumanStep(kind="review", text="ok"), ThoughtStep(node="other")]}

    async def awaited(state: AgentState) -> dict[str, Any]:
        return plain(state)

    for fn in (plain, awaited):
        # Added under another name than the factory's: the graph's name is recorded.
        graph: Graph = StateGraph(AgentState)
        graph.add_node("critic", parts.node("review", fn))
        graph.add_edge(START, "critic")
        graph.add_edge("critic", END)
        chain = graph.compile().invoke({"chain": [ThoughtStep(text="t")]})["chain"]
        assert [(s.node, s.number) for s in chain[1:]] == [("critic", 1), ("other", 2)]


def test_a_users_unwrapped_node_streams_its_steps_with_their_stored_numbers() -> None:
    def bare(deps: Deps) -> Graph:
        # a plain function: it neither numbers its steps nor records its name
        return with_note(deps, note_node=lambda state: note(state, deps=deps))

    agent = Agent(ScriptedModel(REPLIES), [add], store="memory://", build_graph=bare)
    streamed = list(agent.stream("2 + 40?", "bare"))
    assert [(s.number, s.id) for s in streamed] == [(s.number, s.id) for s in agent.chain("bare")]


def test_check_graph_accepts_a_graph_built_from_the_factories() -> None:
    deps = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([add]))
    model = check_graph(with_note(deps))
    assert model.nodes["note"]["kind"] == "custom" and model.nodes["think"]["kind"] == "think"
