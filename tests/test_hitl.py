"""Human in the loop: approvals, breakpoints, and errors that leave a paused run as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.errors import ConfigError, NotPausedError, ResumeValueError
from thinkgraph.hitl import Approve, Edit, Reject, Respond
from thinkgraph.state import HumanStep, ObservationStep, ToolResultStep


@tool(requires_approval=True, side_effects=True)
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool
def lookup(name: str) -> str:
    """Look up a person's address."""
    return f"{name}@example.com"


@tool(side_effects=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool(requires_approval=lambda args: args.get("amount", 0) > 100)
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


def calls(*items: tuple[str, dict[str, Any]]) -> str:
    return "Thought: do it\n" + "".join(
        f"Action: {name}\nAction Input: {json.dumps(args)}\n" for name, args in items
    )


def done(text: str = "done") -> str:
    return f"Thought: finished\nFinal Answer: {text}"


def email_agent(store: str, *, replies: list[str] | None = None, **kw: Any) -> Agent:
    replies = replies or [calls(("send_email", {"to": "ceo@x.com", "body": "hi"})), done()]
    return Agent(ScriptedModel(replies), [send_email, lookup], store=store, **kw)


def test_a_call_needing_approval_pauses_with_what_to_decide(store_url: str, thread_id: str) -> None:
    with email_agent(store_url) as agent:
        paused = agent.run("email the ceo", thread_id=thread_id)
    assert paused.status == "paused"
    (request,) = paused.pending
    assert request.kind == "approval" and request.tool == "send_email"
    assert request.args == {"to": "ceo@x.com", "body": "hi"}
    assert request.thought == "do it" and request.step == 1
    assert not any(isinstance(s, ToolResultStep) for s in paused.chain)


def test_approve_runs_the_call(store_url: str, thread_id: str) -> None:
    with email_agent(store_url) as agent:
        call_id = agent.run("x", thread_id=thread_id).pending[0].call_id
        assert call_id is not None
        result = agent.resume(thread_id, decisions={call_id: Approve()})
    assert (result.status, result.answer) == ("done", "done")
    outputs = [s.output for s in result.chain if isinstance(s, ToolResultStep)]
    assert outputs == ["sent to ceo@x.com"]
    assert [s.kind for s in result.chain if isinstance(s, HumanStep)] == ["approve"]


def test_edit_runs_the_call_with_the_new_arguments(store_url: str, thread_id: str) -> None:
    with email_agent(store_url) as agent:
        call_id = agent.run("x", thread_id=thread_id).pending[0].call_id
        edit = Edit(args={"to": "ops@x.com", "body": "hi"})
        result = agent.resume(thread_id, decisions={call_id: edit})
    outputs = [s.output for s in result.chain if isinstance(s, ToolResultStep)]
    assert outputs == ["sent to ops@x.com"]


def test_an_invalid_edit_is_refused_and_the_run_stays_paused(
    store_url: str, thread_id: str
) -> None:
    with email_agent(store_url) as agent:
        before = agent.run("x", thread_id=thread_id)
        call_id = before.pending[0].call_id
        with pytest.raises(ResumeValueError, match="body: Field required"):
            agent.resume(thread_id, decisions={call_id: Edit(args={"to": "a@b.c"})})
        after = agent.result(thread_id)
    assert after.status == "paused" and after.pending == before.pending
    assert [s.id for s in after.chain] == [s.id for s in before.chain]


def test_reject_gives_the_model_the_reason_and_runs_nothing(store_url: str, thread_id: str) -> None:
    seen: list[str] = []

    def model(messages: list[dict[str, str]]) -> str:
        seen.append(json.dumps(messages))
        return calls(("send_email", {"to": "ceo", "body": "b"})) if len(seen) == 1 else done()

    with Agent(ScriptedModel(model), [send_email], store=store_url) as agent:
        call_id = agent.run("x", thread_id=thread_id).pending[0].call_id
        result = agent.resume(thread_id, decisions={call_id: Reject(reason="never email the ceo")})
    (observation,) = [s for s in result.chain if isinstance(s, ObservationStep)]
    assert observation.is_error and "never email the ceo" in observation.text
    assert "never email the ceo" in seen[-1]
    assert result.counters.consecutive_failures == 0  # a person's no is not a model failure
    assert not any(isinstance(s, ToolResultStep) and s.ok for s in result.chain)


def test_respond_supplies_the_observation(store_url: str, thread_id: str) -> None:
    with email_agent(store_url) as agent:
        call_id = agent.run("x", thread_id=thread_id).pending[0].call_id
        result = agent.resume(thread_id, decisions={call_id: Respond(text="I sent it myself")})
    (observation,) = [s for s in result.chain if isinstance(s, ObservationStep)]
    assert observation.text == "I sent it myself" and not observation.is_error


def test_several_calls_in_one_reply_share_one_pause(sqlite_url: str) -> None:
    @tool(requires_approval=True)
    def a(x: int) -> int:
        """A."""
        return x

    @tool(requires_approval=True)
    def b(x: int) -> int:
        """B."""
        return x

    @tool
    def free(x: int) -> int:
        """Runs without approval."""
        return x

    agent = Agent(ScriptedModel([done()]), [a, b, free], store=sqlite_url)
    graph = agent.graph
    from thinkgraph.state import ThoughtStep, ToolCall, ToolCallStep
    from thinkgraph.types import NextAction

    # Write a think step with three calls directly, as a multi-call policy would.
    state = agent._start("x")
    three = [ToolCall(name=n, args={"x": i}) for i, n in enumerate(["a", "b", "free"])]
    state["chain"] += [
        ThoughtStep(node="think", text="three", next_action=NextAction.CONTINUE),
        *[ToolCallStep(node="think", call=c, think_step=1) for c in three],
    ]
    state.update(
        pending_calls=three,
        needs_approval=[three[0].id, three[1].id],
        counters=state["counters"].model_copy(update={"steps": 1}),
    )
    config = agent._config("multi")
    graph.update_state(config, state, as_node="think")
    graph.invoke(None, config, durability="sync")
    paused = agent.result("multi")
    assert sorted(p.tool or "" for p in paused.pending) == ["a", "b"]
    with pytest.raises(ResumeValueError, match="missing"):
        agent.resume("multi", decisions={three[0].id: Approve()})
    with pytest.raises(ResumeValueError, match="no call 'nope'"):
        agent.resume("multi", decisions={"nope": Approve(), three[0].id: Approve()})
    assert agent.result("multi").status == "paused"
    result = agent.resume(
        "multi", decisions={three[0].id: Approve(), three[1].id: Reject(reason="no")}
    )
    ran = sorted(s.tool for s in result.chain if isinstance(s, ToolResultStep) and s.ok)
    assert ran == ["a", "free"]


def test_approve_side_effects_pauses_only_for_tools_with_side_effects() -> None:
    replies = [calls(("lookup", {"name": "ann"})), calls(("delete_file", {"path": "x"})), done()]
    agent = Agent(
        ScriptedModel(replies), [lookup, delete_file], approve="side_effects", store="memory://"
    )
    paused = agent.run("x", thread_id="se")
    assert [p.tool for p in paused.pending] == ["delete_file"]


def test_approve_by_name_and_by_predicate_on_the_arguments() -> None:
    replies = [calls(("pay", {"amount": 50})), calls(("pay", {"amount": 500})), done()]
    agent = Agent(ScriptedModel(replies), [pay, lookup], store="memory://")
    paused = agent.run("x", thread_id="p")
    assert [p.args for p in paused.pending] == [{"amount": 500}]
    by_name = Agent(
        ScriptedModel([calls(("lookup", {"name": "a"})), done()]),
        [lookup],
        approve=["lookup"],
        store="memory://",
    )
    assert by_name.run("x", thread_id="n").pending[0].tool == "lookup"


def test_decisions_for_a_run_that_is_not_paused_are_refused() -> None:
    agent = Agent(ScriptedModel([done()]), store="memory://")
    agent.run("x", thread_id="d")
    with pytest.raises(NotPausedError):
        agent.resume("d", decisions={"c": Approve()})


def test_resuming_an_approval_pause_without_decisions_says_what_it_waits_for() -> None:
    agent = email_agent("memory://")
    agent.run("x", thread_id="w")
    with pytest.raises(ResumeValueError, match="waits for a person: approval"):
        agent.resume("w")


def test_breakpoints_pause_before_and_after_nodes(store_url: str, thread_id: str) -> None:
    replies = [calls(("lookup", {"name": "ann"})), done()]
    points = {"before": ["observe"], "after": ["think"]}
    with Agent(ScriptedModel(replies), [lookup], breakpoints=points, store=store_url) as agent:
        stops = [agent.run("x", thread_id=thread_id)]
        while stops[-1].status == "paused":
            stops.append(agent.resume(thread_id))
    where = [(r.pending[0].when, r.pending[0].node) for r in stops[:-1]]
    assert where == [("after", "think"), ("before", "observe"), ("after", "think")]
    # Stopped before observe: the tool ran, its observation is not written yet.
    assert any(isinstance(s, ToolResultStep) for s in stops[1].chain)
    assert not any(isinstance(s, ObservationStep) for s in stops[1].chain)
    assert (stops[-1].status, stops[-1].answer) == ("done", "done")


def test_a_boundary_named_twice_pauses_once() -> None:
    replies = [calls(("lookup", {"name": "ann"})), done()]
    points = {"before": ["act"], "after": ["think"]}
    agent = Agent(ScriptedModel(replies), [lookup], breakpoints=points, store="memory://")
    first = agent.run("x", thread_id="twice")
    assert (first.pending[0].when, first.pending[0].node) == ("after", "think")
    second = agent.resume("twice")
    assert any(isinstance(s, ToolResultStep) for s in second.chain)


def test_breakpoints_on_unknown_nodes_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown node 'thnik'"):
        Agent(ScriptedModel([]), breakpoints={"before": ["thnik"]})
    with pytest.raises(ConfigError, match="'before' and 'after'"):
        Agent(ScriptedModel([]), breakpoints={"around": ["think"]})


def test_paused_time_does_not_count_against_the_timeout(tmp_path: Path) -> None:
    import time

    url = f"sqlite:///{tmp_path / 'r.db'}"
    limits = StepLimits(timeout_s=0.5)
    with email_agent(url, limits=limits) as agent:
        call_id = agent.run("x", thread_id="slow").pending[0].call_id
    time.sleep(0.7)  # a person thinks longer than the whole budget
    with email_agent(url, limits=StepLimits(timeout_s=100)) as again:
        result = again.resume("slow", decisions={call_id: Approve()})
    assert result.stop_reason == "final_answer"
    assert result.counters.elapsed_s < 0.5


def test_limits_stored_with_the_run_survive_resume_by_another_agent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    # The forced answer at max_steps=2 is the third reply; with max_steps=50 it would be
    # another call.
    replies = (
        [calls(("send_email", {"to": "a", "body": "b"}))] * 2
        + [done()]
        + [calls(("send_email", {"to": "a", "body": "b"}))] * 5
    )
    with email_agent(url, replies=replies, limits=StepLimits(max_steps=2)) as agent:
        call_id = agent.run("x", thread_id="lim").pending[0].call_id
    with email_agent(url, replies=replies, limits=StepLimits(max_steps=50)) as again:
        result = again.resume("lim", decisions={call_id: Approve()})
    # Step 2 proposed another email; the stored max_steps=2 finalized instead of pausing.
    assert (result.status, result.stop_reason) == ("done", "max_steps")
    assert result.counters.steps == 2 and not result.pending
