"""The claims of answers to pauses, on every store: the first wins, the same answer holds
it again, another is refused naming the first, a claim given back frees the pause."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.server.support import add
from thinkgraph import Agent, Approve, Reject, ScriptedModel
from thinkgraph.errors import AnsweredError
from thinkgraph.hitl import describe_answer
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.answers import Answer, answer_of, claim, latest_answer, release


def test_the_first_claim_of_a_pause_wins_on_every_store(any_store_url: str) -> None:
    saver = open_checkpointer(any_store_url)
    thread = f"a-{uuid.uuid4().hex[:10]}"
    try:
        first = Answer(thread, "cp1", "approved", "job 1 on queue 'q'")
        second = Answer(thread, "cp1", "rejected", "process 2 on here")
        assert claim(saver, first).answer_id == first.answer_id
        assert claim(saver, first).answer_id == first.answer_id  # the same answer, again
        won = claim(saver, second)
        assert won.answer_id == first.answer_id and won.what == "approved"
        assert "already answered: approved by job 1 on queue 'q' at " in won.refusal()
        release(saver, second)  # not its claim: nothing happens
        assert answer_of(saver, thread, "cp1") == won
        release(saver, first)
        assert answer_of(saver, thread, "cp1") is None
        assert claim(saver, second).answer_id == second.answer_id
        assert latest_answer(saver, thread) == answer_of(saver, thread, "cp1")
    finally:
        close_checkpointer(saver)


def test_two_resumes_of_one_pause_at_once_apply_one_answer(any_store_url: str) -> None:
    replies = [
        'Thought: add\nAction: add\nAction Input: {"a": 1, "b": 2}',
        "Thought: done\nFinal Answer: 3",
    ]
    agent = Agent(ScriptedModel(replies), [add], store=any_store_url, approve=["add"])
    thread = f"r-{uuid.uuid4().hex[:10]}"
    with agent:
        call = agent.run("add", thread_id=thread).pending[0].call_id or ""

        async def both() -> list[object]:
            answers = [{call: Approve()}, {call: Reject(reason="no")}]
            tried = [agent.aresume(thread, a) for a in answers]
            return await asyncio.gather(*tried, return_exceptions=True)

        results = asyncio.run(both())
        refused = [r for r in results if isinstance(r, Exception)]
        assert len(refused) == 1 and isinstance(refused[0], AnsweredError), results
        assert agent.result(thread).status == "done"
        with pytest.raises(AnsweredError, match="already answered"):
            agent.check_resume(thread, {call: Approve()}, at=refused[0].answer.checkpoint_id)


@pytest.mark.parametrize(
    ("decisions", "said"),
    [
        ({"c1": Approve(), "c2": {"action": "approve"}}, "approved"),
        ({"c1": Reject(reason="x")}, "rejected"),
        ({"c1": Approve(), "c2": Reject(reason="x")}, "answered: approved c1, rejected c2"),
        ({"decisions": [{"type": "edit"}]}, "edited"),
        ("retry", "answered retry"),
        ("the password is hunter2", "answered with guidance"),
        (None, "continued"),
    ],
)
def test_an_answer_is_described_in_a_few_words_never_its_text(decisions: object, said: str) -> None:
    assert describe_answer(decisions) == said


def test_a_continue_at_a_checkpoint_yields_to_the_answer_of_the_next_pause_there(
    any_store_url: str,
) -> None:
    # A breakpoint after think and the approval asked for next are both at the checkpoint
    # think wrote: the Continue's claim must not hold the approval's pause.
    saver = open_checkpointer(any_store_url)
    thread = f"c-{uuid.uuid4().hex[:10]}"
    try:
        go_on = Answer(thread, "cp1", describe_answer(None), "a request to the server")
        again = Answer(thread, "cp1", describe_answer(None), "another request")
        assert claim(saver, go_on).answer_id == go_on.answer_id
        assert claim(saver, again).answer_id == go_on.answer_id  # a double Continue: refused
        approve = Answer(thread, "cp1", "approved", "a request to the server")
        reject = Answer(thread, "cp1", "rejected", "another request")
        assert claim(saver, approve).answer_id == approve.answer_id
        assert claim(saver, reject).answer_id == approve.answer_id  # one answer per pause
        assert claim(saver, again).answer_id == approve.answer_id  # a stale Continue too
        assert answer_of(saver, thread, "cp1") == claim(saver, approve)
    finally:
        close_checkpointer(saver)
