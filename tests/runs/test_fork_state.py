"""A fork sets keys of the graph's own state: checked against their declared types, taken as
given (a reducer does not fold them in), and a router that reads one takes another route.

The graph: a planner appends to its plan (a reducer), a critic scores it, and the critic's
router goes round again until the score is 20. A refused value is one line naming the key
and the fix, and the fork writes nothing.
"""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, Literal

import pytest
from typer.testing import CliRunner

from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.errors import ResumeValueError, ThreadNotFoundError
from thinkgraph.graphs import react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, HumanStep


def keep_lowest(current: int, new: int) -> int:
    return min(current, new)


class PlanState(AgentState, total=False):
    plan: Annotated[list[str], operator.add]
    score: int
    lowest: Annotated[int, keep_lowest]


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


@pytest.fixture
def agent(sqlite_url: str) -> Agent:
    return Agent(ScriptedModel(["Thought: done\nFinal Answer: 42"] * 4), build_graph=build,
                 store=sqlite_url)  # fmt: skip


def after(agent: Agent, thread: str, node: str) -> str:
    """The checkpoint written when `node` first completed."""
    return next(c.checkpoint_id for c in agent.history(thread) if c.node == node)


def ran(agent: Agent, thread: str) -> list[str]:
    return [c.node for c in agent.history(thread) if c.node in ("planner", "critic", "think")]


def test_a_set_key_changes_the_route_its_router_reads(agent: Agent) -> None:
    original = agent.run("plan it", thread_id="t1")
    assert ran(agent, "t1") == ["planner", "critic", "planner", "critic", "think"]
    # At the first critic's checkpoint the score is 10: its router sent the run round again.
    forked = agent.fork("t1", after(agent, "t1", "critic"), state={"score": 20},
                        new_thread_id="f1")  # fmt: skip
    assert forked.status == "done" and forked.answer == "42"
    # The fork's first checkpoint stands for that critic; then think, not the planner.
    assert ran(agent, "f1") == ["critic", "think"]
    assert forked.state == {**original.state, "plan": ["step 1"], "score": 20}
    # Stored: the keys the source held by then, the one set; `lowest`, never written by a
    # node, holds its reducer's start (0), stored when the run started.
    assert agent.history("f1")[-1].state == {"plan": ["step 1"], "score": 20, "lowest": 0}
    note = next(s for s in forked.chain if isinstance(s, HumanStep) and s.kind == "fork")
    assert note.text.endswith("; set score")
    assert agent.result("t1") == original


def test_a_key_with_a_reducer_takes_the_value_as_given(agent: Agent) -> None:
    agent.run("plan it", thread_id="t1")
    at = after(agent, "t1", "planner")
    forked = agent.fork("t1", at, state={"plan": ["draft", "check"], "lowest": 7},
                        new_thread_id="f1")  # fmt: skip
    # Folded by their reducers, the plan would be ["step 1", "draft", "check"] and the
    # lowest min(0, 7): the critic then scores the plan as set, enough to go on.
    assert forked.state == {"plan": ["draft", "check"], "score": 20, "lowest": 7}
    assert ran(agent, "f1") == ["planner", "critic", "think"]


def test_a_value_is_stored_as_its_declared_type(agent: Agent) -> None:
    agent.run("plan it", thread_id="t1")
    forked = agent.fork("t1", after(agent, "t1", "critic"), state={"score": "30"},
                        new_thread_id="f1")  # fmt: skip
    assert forked.state["score"] == 30


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (
            {"chain": []},
            "cannot set 'chain': it is one of AgentState's keys, which the run's steps "
            "decide; a fork sets the graph's own keys (its own keys: lowest, plan, score), "
            "and changes a step by editing it",
        ),
        (
            {"verdict": "ok"},
            "cannot set 'verdict': the graph's state does not declare it (its own keys: "
            "lowest, plan, score); set a declared key, or declare it in the graph's state "
            "class, class MyState(AgentState): verdict: ..., built with state=MyState",
        ),
        (
            {"score": "high"},
            "cannot set 'score' to 'high': the graph's state declares it int (Input should "
            "be a valid integer, unable to parse string as an integer); give a value of "
            "that type",
        ),
        (
            {"plan": ["a", 2]},
            "cannot set 'plan' to ['a', 2]: the graph's state declares it list[str] (1: "
            "Input should be a valid string); give a value of that type",
        ),
        (
            {"score": 2**70},
            "cannot set 'score': the value of 'score' is 1180591620717411303424, an integer "
            "wider than 64 bits; send a number from -9223372036854775808 to "
            "18446744073709551615, or send it as a string",
        ),
        ([("score", 20)], "state maps keys of the graph's own state to values"),
    ],
)
def test_a_refused_value_is_one_line_and_the_fork_writes_nothing(
    agent: Agent, state: Any, message: str
) -> None:
    agent.run("plan it", thread_id="t1")
    with pytest.raises(ResumeValueError) as refused:
        agent.fork("t1", after(agent, "t1", "critic"), state=state, new_thread_id="f1")
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    with pytest.raises(ThreadNotFoundError):
        agent.result("f1")
    assert [r.thread_id for r in agent.runs()] == ["t1"]


def test_a_graph_without_keys_of_its_own_says_so(sqlite_url: str) -> None:
    with Agent(ScriptedModel(["Thought: done\nFinal Answer: 42"]), store=sqlite_url) as agent:
        agent.run("x", thread_id="t1")
        with pytest.raises(ResumeValueError, match=r"does not declare it \(none of its own\)"):
            agent.fork("t1", after(agent, "t1", "think"), state={"score": 20})


def test_a_key_no_node_wrote_reads_the_same_in_every_view(agent: Agent, sqlite_url: str) -> None:
    """A reducer key starts from its type's empty value on the graph (as LangGraph shows it);
    the run stores that start, so the views that read the checkpoints alone agree."""
    result = agent.run("plan it", thread_id="t1")
    assert result.state["lowest"] == 0
    history = agent.history("t1")
    assert all(c.state.get("lowest") == 0 for c in history if c.node != "start" or c.state)
    assert history[-1].state == result.state
    shown = CliRunner().invoke(app, ["show", "t1", "--store", sqlite_url, "--format", "json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["state"] == result.state
