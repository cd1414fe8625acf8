"""The run overlay: visits and edges with counts, and where a run paused or stopped."""

from __future__ import annotations

import json

import pytest

from tests.viz._graphs import critic_run, with_critic
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.state import FinalStep, LLMCallStep, TaskStep, ThoughtStep
from thinkgraph.tools.builtin import calculator
from thinkgraph.types import NextAction
from thinkgraph.viz import build_overlay, overlay_from_result, to_graph_model
from thinkgraph.viz.model import END, START

ADD = 'Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}'
ANSWER = "Thought: done\nFinal Answer: 42"


def test_think_retries_are_separate_visits_and_an_act_round_is_one() -> None:
    overlay = build_overlay(critic_run(), status="done", stop_reason="final_answer")
    assert overlay.node_visits["think"] == 3  # parse error, tool calls, answer
    assert overlay.edge_visits["think", "think"] == 1
    assert overlay.node_visits["act"] == 1 and overlay.tool_calls == 2
    assert overlay.edge_visits["think", "act"] == 1
    assert overlay.notes == {"act": "2 calls"}


def test_a_silent_validate_is_filled_in_before_an_accepted_answer() -> None:
    model = to_graph_model(with_critic())
    overlay = build_overlay(critic_run(), status="done", stop_reason="final_answer", model=model)
    assert overlay.path[-5:] == ("think", "validate", "critic", "finalize", END)
    assert overlay.edge_visits["validate", "critic"] == 1
    assert (overlay.stopped_at, overlay.stop_reason) == ("finalize", "final_answer")


def test_a_transition_the_graph_lacks_is_bridged_by_its_shortest_path() -> None:
    chain = [
        TaskStep(node="start", text="x"),
        LLMCallStep(node="think"),
        ThoughtStep(node="think", next_action=NextAction.FINAL_ANSWER, answer="4"),
        FinalStep(node="finalize", answer="4", stop_reason="final_answer"),
    ]
    model = to_graph_model(with_critic())
    overlay = build_overlay(chain, status="done", model=model)
    assert overlay.path == (START, "think", "validate", "critic", "finalize", END)


def test_a_run_whose_process_died_stopped_interrupted_where_it_was() -> None:
    chain = [TaskStep(node="start", text="x"), LLMCallStep(node="think")]
    overlay = build_overlay(chain, status="running")
    assert (overlay.stopped_at, overlay.stop_reason, overlay.paused_at) == (
        "think",
        "interrupted",
        None,
    )


def test_a_finished_run_counts_every_node_and_edge(sqlite_url: str) -> None:
    with Agent(ScriptedModel([ADD, ANSWER]), [calculator], store=sqlite_url) as agent:
        result = agent.run("What is 2 + 40?", thread_id="done")
        model = to_graph_model(agent.graph)
    overlay = overlay_from_result(result, model)
    assert overlay.path == (
        START, "think", "act", "observe", "think", "validate", "finalize", END
    )  # fmt: skip
    assert overlay.node_visits["think"] == 2
    assert overlay.edge_visits == {
        (START, "think"): 1,
        ("think", "act"): 1,
        ("act", "observe"): 1,
        ("observe", "think"): 1,
        ("think", "validate"): 1,
        ("validate", "finalize"): 1,
        ("finalize", END): 1,
    }
    assert (overlay.status, overlay.stopped_at, overlay.stop_reason) == (
        "done",
        "finalize",
        "final_answer",
    )


@pytest.fixture
def paused_agent(sqlite_url: str) -> Agent:
    limits = StepLimits(max_consecutive_failures=1, failure_policy="ask_human")
    model = ScriptedModel([ADD, "I will not use the format", ANSWER])
    return Agent(model, [calculator], limits=limits, store=sqlite_url)


def test_a_paused_run_waits_at_ask_human_for_a_person(paused_agent: Agent) -> None:
    with paused_agent as agent:
        result = agent.run("What is 2 + 40?", thread_id="paused")
        overlay = overlay_from_result(result, to_graph_model(agent.graph))
    assert result.status == "paused"
    assert overlay.path[-3:] == ("observe", "think", "ask_human")
    assert overlay.paused_at == "ask_human"
    assert overlay.paused_for == "ask_human"
    assert overlay.question.startswith("The agent failed 1 times in a row")
    assert overlay.node_visits["ask_human"] == 1
    assert overlay.edge_visits["think", "ask_human"] == 1
    assert overlay.stopped_at is None and END not in overlay.path


def test_a_run_aborted_at_ask_human_stops_at_finalize(paused_agent: Agent) -> None:
    with paused_agent as agent:
        agent.run("What is 2 + 40?", thread_id="aborted")
        result = agent.resume("aborted", decisions="abort")
        overlay = overlay_from_result(result, to_graph_model(agent.graph))
    assert overlay.path[-3:] == ("ask_human", "finalize", END)
    assert overlay.node_visits["ask_human"] == 1  # the pause and its answer: one visit
    assert (overlay.status, overlay.stop_reason) == ("failed", "aborted")


def test_an_approval_pause_waits_at_the_approval_gate(sqlite_url: str) -> None:
    @tool(requires_approval=True)
    def send_email(to: str) -> str:
        """Send an e-mail."""
        return "sent"

    reply = f"Thought: mail\nAction: send_email\nAction Input: {json.dumps({'to': 'a@b.c'})}"
    with Agent(ScriptedModel([reply]), [send_email], store=sqlite_url) as agent:
        result = agent.run("mail a@b.c", thread_id="gate")
        overlay = overlay_from_result(result, to_graph_model(agent.graph))
    assert (overlay.paused_at, overlay.paused_for) == ("approve", "approval: send_email")
    assert overlay.edge_visits["think", "approve"] == 1


def test_a_breakpoint_before_a_node_pauses_there_without_visiting_it(sqlite_url: str) -> None:
    agent = Agent(
        ScriptedModel([ADD, ANSWER]),
        [calculator],
        store=sqlite_url,
        breakpoints={"before": ["act"]},
    )
    with agent:
        result = agent.run("What is 2 + 40?", thread_id="bp")
        model = to_graph_model(build_react_graph(agent.deps), breakpoints=agent.breakpoints)
    overlay = overlay_from_result(result, model)
    assert (overlay.paused_at, overlay.paused_for) == ("act", "breakpoint before act")
    assert "act" not in overlay.node_visits
    assert model.nodes["act"]["breakpoint_before"] is True


def test_a_rejected_call_is_not_counted_as_a_call_act_ran(sqlite_url: str) -> None:
    from thinkgraph.hitl import Reject

    with Agent(
        ScriptedModel([ADD, ANSWER]), [calculator], store=sqlite_url, approve=["calculator"]
    ) as agent:
        paused = agent.run("What is 2 + 40?", thread_id="rejected")
        call_id = paused.pending[0].call_id
        assert call_id is not None
        result = agent.resume("rejected", {call_id: Reject(reason="no")})
        model = to_graph_model(agent.graph)
    overlay = overlay_from_result(result, model)
    assert overlay.tool_calls == 0 and "act" not in overlay.notes
    assert overlay.node_visits.get("act", 0) == 0
    assert overlay.edge_visits["approve", "observe"] == 1
