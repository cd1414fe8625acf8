"""A graph's state is the user's to extend, LangGraph's way.

``class PlanState(AgentState): plan: Annotated[list[str], operator.add]; score: int`` given
as ``react_graph(deps, state=PlanState)``: the user's keys are checkpointed per node, read
back by any process without the graph's code, and a key the state does not declare is a
one-line error naming the node, the key and the declared keys — never silently dropped.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

import pytest

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import GraphConfigError, StateKeyError
from thinkgraph.graphs import ReasoningGraph, react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import ReActText
from thinkgraph.runs.reader import RunReader
from thinkgraph.state import AgentState
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.tools import ToolRegistry
from thinkgraph.views.json_doc import to_json_dict


class PlanState(AgentState, total=False):
    """A planner keeps a plan (appended by a reducer) and a critic's score."""

    plan: Annotated[list[str], operator.add]
    score: int


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def planner(state: PlanState) -> dict[str, Any]:
    return {"plan": [f"step {len(state.get('plan', [])) + 1}"]}


def critic(state: PlanState) -> dict[str, Any]:
    return {"score": len(state.get("plan", [])) * 10}


def enough(state: PlanState) -> Literal["again", "go"]:
    return "go" if state.get("score", 0) >= 20 else "again"


def build(deps: Deps) -> Any:
    graph = react_graph(deps, state=PlanState)
    graph.add_node("planner", planner)
    graph.add_node("critic", critic)
    graph.set_entry("planner")
    graph.add_edge("planner", "critic")
    graph.add_routes("critic", enough, {"again": "planner", "go": "think"})
    return graph.build()


SCRIPT = ["Thought: done\nFinal Answer: 42"]


def test_a_users_keys_are_kept_per_node_with_their_reducer(sqlite_url: str) -> None:
    with Agent(ScriptedModel(SCRIPT), [add], build_graph=build, store=sqlite_url) as agent:
        result = agent.run("plan it", thread_id="p1")
        assert result.status == "done" and result.answer == "42"
        assert result.state == {"plan": ["step 1", "step 2"], "score": 20}
        # Each checkpoint holds the keys as they stood after its node.
        scores = [
            (c.node, c.state.get("score"))
            for c in agent.history("p1")
            if c.node in ("planner", "critic")
        ]
        assert scores == [("planner", None), ("critic", 10), ("planner", 10), ("critic", 20)]


def test_a_run_with_its_own_keys_is_read_without_its_graph(sqlite_url: str) -> None:
    with Agent(ScriptedModel(SCRIPT), [add], build_graph=build, store=sqlite_url) as agent:
        agent.run("plan it", thread_id="p2")
    store = open_checkpointer(sqlite_url)
    try:
        run = RunReader(store).result("p2")
    finally:
        close_checkpointer(store)
    assert run.state == {"plan": ["step 1", "step 2"], "score": 20}
    assert to_json_dict(run)["state"] == {"plan": ["step 1", "step 2"], "score": 20}


def test_a_key_the_state_does_not_declare_is_one_line_naming_node_key_and_keys(
    sqlite_url: str,
) -> None:
    def sloppy(state: PlanState) -> dict[str, Any]:
        return {"plan": ["x"], "route": "debate"}

    def build_sloppy(deps: Deps) -> Any:
        graph = react_graph(deps, state=PlanState)
        graph.add_node("sloppy", sloppy)
        graph.set_entry("sloppy")
        graph.add_edge("sloppy", "think")
        return graph.build()

    with Agent(ScriptedModel(SCRIPT), build_graph=build_sloppy, store=sqlite_url) as agent:
        with pytest.raises(StateKeyError) as caught:
            agent.run("go", thread_id="s1")
        message = str(caught.value)
        assert "\n" not in message
        assert "node 'sloppy' returned 'route'" in message
        assert "plan" in message and "score" in message  # the user's declared keys
        assert "state=" in message  # the fix: declare it in the graph's state
        # Nothing of the node's update was stored: the run stands before it, to resume.
        assert agent.history("s1")[0].node == "start"


def test_a_state_that_is_not_an_agent_state_is_refused_when_built() -> None:
    from typing import TypedDict

    class Loose(TypedDict, total=False):
        route: str

    deps = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([]))
    with pytest.raises(GraphConfigError, match="AgentState"):
        ReasoningGraph(deps, state=Loose)  # type: ignore[arg-type]
    with pytest.raises(GraphConfigError, match="AgentState"):
        react_graph(deps, state=dict)  # type: ignore[arg-type]


def test_every_view_shows_the_runs_own_keys_masked_like_every_value(sqlite_url: str) -> None:
    from thinkgraph.views import to_markdown
    from thinkgraph.views.html_page import to_html

    class KeyState(AgentState, total=False):
        login: dict[str, str]
        verdict: str

    def keeper(state: KeyState) -> dict[str, Any]:
        return {"login": {"user": "ann", "password": "hunter22-secret"}, "verdict": "<b>ok</b>"}

    def build_keeper(deps: Deps) -> Any:
        graph = react_graph(deps, state=KeyState)
        graph.add_node("keeper", keeper)
        graph.set_entry("keeper")
        graph.add_edge("keeper", "think")
        return graph.build()

    with Agent(ScriptedModel(SCRIPT), build_graph=build_keeper, store=sqlite_url) as agent:
        result = agent.run("keep", thread_id="k1")
    assert result.state["login"]["password"] == "hunter22-secret"  # the run keeps it
    doc = to_json_dict(result)
    assert doc["state"]["login"] == {"user": "ann", "password": "***"}
    markdown, html = to_markdown(result), to_html(result)
    for text in (markdown, html):
        assert "hunter22" not in text and "ann" in text
    assert "verdict = " in markdown
    assert "&lt;b&gt;ok&lt;/b&gt;" in html and "<b>ok</b>" not in html


def test_a_loop_that_never_passes_think_ends_failed_with_recursion_limit(
    sqlite_url: str,
) -> None:
    def never(state: PlanState) -> Literal["again", "go"]:
        return "again"

    def build_endless(deps: Deps) -> Any:
        graph = react_graph(deps, state=PlanState)
        graph.add_node("planner", planner)
        graph.add_node("critic", critic)
        graph.set_entry("planner")
        graph.add_edge("planner", "critic")
        graph.add_routes("critic", never, {"again": "planner", "go": "think"})
        return graph.build()

    with Agent(ScriptedModel(SCRIPT), build_graph=build_endless, store=sqlite_url) as agent:
        result = agent.run("plan forever", thread_id="r1")
        assert (result.status, result.stop_reason) == ("failed", "recursion_limit")
        assert "\n" not in result.detail and "node 'planner'" in result.detail
        assert "recursion limit" in result.detail
        # It is finished: a resume reports it, it does not loop again.
        again = agent.resume("r1")
        assert (again.status, again.stop_reason) == ("failed", "recursion_limit")
        assert len(again.state["plan"]) == len(result.state["plan"])


def test_a_state_whose_types_cannot_be_read_is_one_line_when_built() -> None:
    class Unread(AgentState, total=False):
        verdict: NoSuchType  # type: ignore[name-defined]  # noqa: F821

    deps = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([]))
    with pytest.raises(GraphConfigError) as caught:
        react_graph(deps, state=Unread)
    assert "NoSuchType" in str(caught.value) and "\n" not in str(caught.value)


def test_a_builder_declares_its_validators_and_breakpoints_on_the_graph(
    sqlite_url: str,
) -> None:
    from thinkgraph.state import ValidationStep, Verdict

    def has_digits(answer: str, state: Any) -> Verdict:
        ok = any(c.isdigit() for c in answer)
        return Verdict(passed=ok, reason="answer with a number", validator="has_digits")

    def build_declared(deps: Deps) -> Any:
        graph = react_graph(deps, state=PlanState)
        graph.add_node("planner", planner)
        graph.set_entry("planner")
        graph.add_edge("planner", "think")
        graph.add_validator(has_digits)
        graph.add_breakpoint("after", "planner")
        return graph.build()

    replies = ["Thought: guess\nFinal Answer: many", "Thought: count\nFinal Answer: 42"]
    with Agent(ScriptedModel(replies), build_graph=build_declared, store=sqlite_url) as agent:
        paused = agent.run("count", thread_id="d1")
        assert paused.status == "paused"
        assert [p.kind for p in paused.pending] == ["breakpoint"]
        result = agent.resume("d1")
    assert (result.status, result.answer) == ("done", "42")
    reviews = [s for s in result.chain if isinstance(s, ValidationStep)]
    assert [(r.answer, r.passed) for r in reviews] == [("many", False), ("42", True)]

    def build_wrong(deps: Deps) -> Any:
        return react_graph(deps).add_breakpoint("before", "judge").build()

    with pytest.raises(GraphConfigError, match="breakpoint on 'judge', which is not a node"):
        Agent(ScriptedModel([]), build_graph=build_wrong)
