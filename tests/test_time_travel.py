"""Time travel: list a run's checkpoints, fork a new thread from any of them."""

from __future__ import annotations

import pytest

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ResumeValueError, ThreadExistsError, ThreadNotFoundError
from thinkgraph.llm.base import Message
from thinkgraph.state import HumanStep, ObservationStep


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
    with pytest.raises(ResumeValueError, match="has no field 'colour'"):
        agent.fork(thread_id, at, edit={0: {"colour": "red"}})
    with pytest.raises(ThreadExistsError):
        agent.fork(thread_id, at, new_thread_id=thread_id)


def test_history_of_an_unknown_thread_is_a_clear_error(agent: Agent) -> None:
    with pytest.raises(ThreadNotFoundError):
        agent.history("no-such-thread")
