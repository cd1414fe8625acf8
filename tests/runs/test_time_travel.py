"""Time travel: list a run's checkpoints, fork a new thread from any of them."""

from __future__ import annotations

from typing import Any

import pytest

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ResumeValueError, ThreadExistsError, ThreadNotFoundError
from thinkgraph.llm.base import Message
from thinkgraph.state import (
    BaseStep,
    HumanStep,
    ObservationStep,
    ThoughtStep,
    ToolCallStep,
    ToolResultStep,
    ValidationStep,
)


@tool
def lookup(name: str) -> str:
    """Look up a person's address."""
    return f"{name}@example.com"


def echo_model(messages: list[Message]) -> str:
    """Look up once, then answer with the last thing it was shown."""
    if not any(m["role"] == "assistant" for m in messages):
        return 'Thought: look\nAction: lookup\nAction Input: {"name": "ann"}'
    return f"Thought: ok\nFinal Answer: {messages[-1]['content']}"


@pytest.fixture
def agent(store_url: str) -> Agent:
    return Agent(ScriptedModel(echo_model), [lookup], store=store_url)


def test_history_lists_one_checkpoint_per_node_in_order(agent: Agent, thread_id: str) -> None:
    agent.run("x", thread_id=thread_id)
    nodes = [h.node for h in agent.history(thread_id)]
    # The input checkpoint, the task applied, then one per node that ran.
    assert nodes == ["start", "start", "think", "act", "observe", "think", "validate", "finalize"]
    steps = [h.step for h in agent.history(thread_id)]
    assert steps == sorted(steps) and steps[-1] == 2


def test_fork_with_an_edited_observation_runs_on_and_leaves_the_original(
    agent: Agent, thread_id: str
) -> None:
    original = agent.run("x", thread_id=thread_id)
    assert original.answer == "Observation: ann@example.com"
    observation = next(s for s in original.chain if isinstance(s, ObservationStep))
    at = next(h for h in agent.history(thread_id) if h.node == "observe")
    forked = agent.fork(
        thread_id,
        at.checkpoint_id,
        edit={observation.number: {"text": "ann@forked.org"}},
        new_thread_id=f"{thread_id}-fork",
    )
    assert (forked.status, forked.answer) == ("done", "Observation: ann@forked.org")
    note = next(s for s in forked.chain if isinstance(s, HumanStep))
    assert note.kind == "fork" and at.checkpoint_id in note.text
    assert agent.result(thread_id).answer == "Observation: ann@example.com"
    assert [s.id for s in agent.chain(thread_id)] == [s.id for s in original.chain]


def test_fork_from_the_first_think_replays_from_there(agent: Agent, thread_id: str) -> None:
    agent.run("x", thread_id=thread_id)
    first_think = next(h for h in agent.history(thread_id) if h.node == "think")
    forked = agent.fork(thread_id, first_think.checkpoint_id)
    assert forked.answer == "Observation: ann@example.com"
    assert forked.thread_id != thread_id


def test_fork_from_the_very_first_checkpoint_runs_the_task_again(
    agent: Agent, thread_id: str
) -> None:
    agent.run("x", thread_id=thread_id)
    first = agent.history(thread_id)[0]  # the run's input, before its first node
    forked = agent.fork(thread_id, first.checkpoint_id)
    assert (forked.status, forked.answer) == ("done", "Observation: ann@example.com")
    assert forked.chain[0].type == "task" and forked.chain[0].text == "x"


def test_fork_errors_name_the_problem(agent: Agent, thread_id: str) -> None:
    agent.run("x", thread_id=thread_id)
    at = agent.history(thread_id)[-1].checkpoint_id
    with pytest.raises(ThreadNotFoundError, match="no checkpoint"):
        agent.fork(thread_id, "1f000000-0000-6000-8000-000000000000")
    with pytest.raises(ResumeValueError, match="cannot edit step 999"):
        agent.fork(thread_id, at, edit={999: {"text": "x"}})
    with pytest.raises(ResumeValueError, match="step 0 is a task step; a fork may edit"):
        agent.fork(thread_id, at, edit={0: {"colour": "red"}})
    with pytest.raises(ThreadExistsError):
        agent.fork(thread_id, at, new_thread_id=thread_id)


def test_history_of_an_unknown_thread_is_a_clear_error(agent: Agent) -> None:
    with pytest.raises(ThreadNotFoundError):
        agent.history("no-such-thread")


# -- what a fork may edit -----------------------------------------------------------------
# A fork changes only what a person may change: the args of a call not yet run, an
# observation's text, the answer of a thought not yet validated. The forked chain then
# records what ran: a tool runs with the args its tool_call step shows, and a call whose
# edited args need a person's approval is asked again.


@tool(requires_approval=lambda args: args["amount"] > 100, side_effects=True)
def pay(to: str, amount: int) -> str:
    """Pay someone (a person approves any amount over 100)."""
    return f"paid {amount} to {to}"


def pay_model(amount: int) -> ScriptedModel:
    """Pay bob `amount` once, then answer with what the payment said."""

    def reply(messages: list[Message]) -> str:
        if not any(m["role"] == "assistant" for m in messages):
            return f'Thought: pay\nAction: pay\nAction Input: {{"to": "bob", "amount": {amount}}}'
        return f"Thought: ok\nFinal Answer: {messages[-1]['content']}"

    return ScriptedModel(reply)


def not_empty(answer: str, state: object) -> bool:
    """A validator, so the chain records a validation step."""
    return bool(answer)


@pytest.fixture
def validated(store_url: str) -> Agent:
    return Agent(ScriptedModel(echo_model), [lookup], store=store_url, validators=[not_empty])


def checkpoint_after(agent: Agent, thread_id: str, node: str) -> str:
    """The id of the first checkpoint written after `node` ran."""
    return next(h.checkpoint_id for h in agent.history(thread_id) if h.node == node)


def call_step(chain: list[BaseStep]) -> ToolCallStep:
    return next(s for s in chain if isinstance(s, ToolCallStep))


def result_step(chain: list[BaseStep]) -> ToolResultStep:
    return next(s for s in chain if isinstance(s, ToolResultStep))


def test_editing_the_args_of_a_call_not_yet_run_runs_the_tool_with_them(
    store_url: str, thread_id: str
) -> None:
    agent = Agent(pay_model(5), [pay], store=store_url)
    original = agent.run("pay bob", thread_id=thread_id)
    number = call_step(original.chain).number
    forked = agent.fork(
        thread_id,
        checkpoint_after(agent, thread_id, "think"),
        edit={number: {"args": {"to": "bob", "amount": 7}}},
    )
    assert forked.status == "done"
    assert call_step(forked.chain).call.args == {"to": "bob", "amount": 7}
    assert result_step(forked.chain).output == "paid 7 to bob"
    assert result_step(agent.chain(thread_id)).output == "paid 5 to bob"


def test_an_edited_call_that_now_needs_approval_is_asked_and_runs_as_approved(
    store_url: str, thread_id: str
) -> None:
    agent = Agent(pay_model(5), [pay], store=store_url)
    original = agent.run("pay bob", thread_id=thread_id)
    number = call_step(original.chain).number
    forked = agent.fork(
        thread_id,
        checkpoint_after(agent, thread_id, "think"),
        edit={number: {"args": {"to": "bob", "amount": 500}}},
    )
    assert forked.status == "paused"
    [waiting] = forked.pending
    assert (waiting.tool, waiting.args) == ("pay", {"to": "bob", "amount": 500})
    done = agent.resume(forked.thread_id, {waiting.call_id: "approve"})
    assert result_step(done.chain).output == "paid 500 to bob"


def test_an_edited_call_that_no_longer_needs_approval_runs_without_asking(
    store_url: str, thread_id: str
) -> None:
    agent = Agent(pay_model(500), [pay], store=store_url)
    paused = agent.run("pay bob", thread_id=thread_id)
    assert paused.status == "paused"
    forked = agent.fork(
        thread_id,
        agent.checkpoint_id(thread_id) or "",
        edit={call_step(paused.chain).number: {"args": {"to": "bob", "amount": 50}}},
    )
    assert forked.status == "done"
    assert result_step(forked.chain).output == "paid 50 to bob"


def test_editing_the_args_of_a_call_a_person_approved_is_refused(
    store_url: str, thread_id: str
) -> None:
    agent = Agent(pay_model(500), [pay], store=store_url)
    paused = agent.run("pay bob", thread_id=thread_id)
    agent.resume(thread_id, {paused.pending[0].call_id: "approve"})
    edit = {call_step(paused.chain).number: {"args": {"to": "eve", "amount": 500}}}
    with pytest.raises(ResumeValueError, match="a person already decided") as refused:
        agent.fork(thread_id, checkpoint_after(agent, thread_id, "approve"), edit=edit)
    assert "fork from the checkpoint after think" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_editing_the_args_of_a_call_that_ran_is_refused(agent: Agent, thread_id: str) -> None:
    original = agent.run("x", thread_id=thread_id)
    number = call_step(original.chain).number
    with pytest.raises(ResumeValueError, match=f"step {number}'s call already ran"):
        agent.fork(
            thread_id,
            checkpoint_after(agent, thread_id, "observe"),
            edit={number: {"args": {"name": "eve"}}},
        )


def test_edited_args_are_checked_against_the_tools_schema(agent: Agent, thread_id: str) -> None:
    original = agent.run("x", thread_id=thread_id)
    number = call_step(original.chain).number
    with pytest.raises(ResumeValueError, match="name: Field required"):
        agent.fork(
            thread_id,
            checkpoint_after(agent, thread_id, "think"),
            edit={number: {"args": {"nom": "eve"}}},
        )


def test_editing_the_answer_of_a_thought_not_yet_validated_makes_it_the_answer(
    validated: Agent, thread_id: str
) -> None:
    agent = validated
    original = agent.run("x", thread_id=thread_id)
    final_thought = [s for s in original.chain if isinstance(s, ThoughtStep)][-1]
    thinks = [h.checkpoint_id for h in agent.history(thread_id) if h.node == "think"]
    forked = agent.fork(thread_id, thinks[-1], edit={final_thought.number: {"answer": "42"}})
    assert (forked.status, forked.answer) == ("done", "42")
    validation = next(s for s in forked.chain if isinstance(s, ValidationStep))
    assert validation.answer == "42"


def test_editing_an_answer_that_was_already_validated_is_refused(
    agent: Agent, thread_id: str
) -> None:
    original = agent.run("x", thread_id=thread_id)
    final_thought = [s for s in original.chain if isinstance(s, ThoughtStep)][-1]
    with pytest.raises(ResumeValueError, match="already validated"):
        agent.fork(
            thread_id,
            checkpoint_after(agent, thread_id, "validate"),
            edit={final_thought.number: {"answer": "42"}},
        )


@pytest.mark.parametrize(
    ("field", "value"),
    [("id", "x"), ("number", 999), ("type", "observation"), ("call_id", "c9"), ("at", "now")],
)
def test_a_field_a_person_may_not_change_is_refused_in_one_line_naming_what_may(
    agent: Agent, thread_id: str, field: str, value: object
) -> None:
    original = agent.run("x", thread_id=thread_id)
    observation = next(s for s in original.chain if isinstance(s, ObservationStep))
    at = checkpoint_after(agent, thread_id, "observe")
    with pytest.raises(ResumeValueError) as refused:
        agent.fork(thread_id, at, edit={observation.number: {field: value}})
    message = str(refused.value)
    assert "\n" not in message
    assert f"step {observation.number} is an observation step" in message
    assert "a fork may edit its text only" in message


@pytest.mark.parametrize("kind", ["task", "llm_call", "tool_result", "validation", "final"])
def test_a_step_a_person_may_not_change_is_refused_naming_what_may_be_edited(
    validated: Agent, thread_id: str, kind: str
) -> None:
    agent = validated
    original = agent.run("x", thread_id=thread_id)
    step = next(s for s in original.chain if getattr(s, "type", "") == kind)
    at = agent.history(thread_id)[-1].checkpoint_id
    with pytest.raises(ResumeValueError) as refused:
        agent.fork(thread_id, at, edit={step.number: {"text": "x"}})
    message = str(refused.value)
    assert "\n" not in message
    assert f"step {step.number} is a" in message
    assert "an observation's text, a thought's answer or a tool call's args" in message


def test_an_invalid_value_is_refused_in_one_line(agent: Agent, thread_id: str) -> None:
    original = agent.run("x", thread_id=thread_id)
    observation = next(s for s in original.chain if isinstance(s, ObservationStep))
    at = checkpoint_after(agent, thread_id, "observe")
    with pytest.raises(ResumeValueError) as refused:
        agent.fork(thread_id, at, edit={observation.number: {"text": ["not", "text"]}})
    assert "\n" not in str(refused.value)
    assert f"step {observation.number}'s text must be a string" in str(refused.value)


@pytest.mark.parametrize(
    "edit",
    [{"3": {"text": "x"}}, {3: "x"}, [(3, {"text": "x"})], {3: {1: "x"}}, {True: {"text": "x"}}],
)
def test_an_edit_of_the_wrong_shape_names_the_right_one(
    agent: Agent, thread_id: str, edit: Any
) -> None:
    agent.run("x", thread_id=thread_id)
    at = agent.history(thread_id)[-1].checkpoint_id
    with pytest.raises(ResumeValueError, match=r"edit maps step numbers to fields") as refused:
        agent.fork(thread_id, at, edit=edit)
    assert '{5: {"text": "the file is empty"}}' in str(refused.value)


def test_a_fork_never_records_args_other_than_those_the_tool_ran_with(
    store_url: str, thread_id: str
) -> None:
    agent = Agent(pay_model(500), [pay], store=store_url)
    paused = agent.run("pay bob", thread_id=thread_id)
    agent.resume(thread_id, {paused.pending[0].call_id: "approve"})
    proposed = call_step(paused.chain)
    swapped = proposed.call.model_copy(update={"args": {"to": "eve", "amount": 500}})
    with pytest.raises(ResumeValueError, match="a fork may edit its args only, not 'call'"):
        agent.fork(
            thread_id,
            checkpoint_after(agent, thread_id, "approve"),
            edit={proposed.number: {"call": swapped.model_dump()}},
        )
