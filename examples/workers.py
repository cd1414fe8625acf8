"""Runs handed to workers: queue a task, a worker runs it to its pause, approve through
the queue, a worker finishes it.

In production the workers are other processes (`thinkgraph worker`), on any machines that
reach the PostgreSQL store, and the approval comes from a person, maybe days later. Here
one program plays every part so it runs unattended: it queues, then works the queue
until it is empty, approves, and works it again.

    python examples/workers.py postgresql://postgres@127.0.0.1:5432/test
    python examples/workers.py postgresql://… --model openai/gpt-4o-mini

Needs PostgreSQL and the worker extra: pip install 'thinkgraph[worker]'.
"""

from __future__ import annotations

import argparse
import uuid

from thinkgraph import Agent, Approve, ScriptedModel, StepLimits, tool
from thinkgraph.views import format_step
from thinkgraph.worker import RunQueue, run_worker


@tool
def word_count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: the text.
    """
    return len(text.split())


@tool(requires_approval=True)
def post_summary(summary: str) -> str:
    """Post a summary to the team channel (a person approves each post).

    Args:
        summary: what to post.
    """
    return f"posted: {summary}"


TOOLS = [word_count, post_summary]
TASK = "Count the words of 'the quick brown fox jumps' and post the count to the team."
SCRIPT = [
    "Thought: count first.\nAction: word_count\n"
    'Action Input: {"text": "the quick brown fox jumps"}',
    'Thought: post it.\nAction: post_summary\nAction Input: {"summary": "5 words"}',
    "Thought: posted.\nFinal Answer: The text has 5 words; the count is posted.",
]
"""What the ScriptedModel answers, in turn, when no --model is given."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", help="the PostgreSQL store: postgresql://user@host/db")
    parser.add_argument("--model", help="a litellm model string; default: a ScriptedModel")
    args = parser.parse_args()

    model = args.model or ScriptedModel(SCRIPT)
    agent = Agent(model, TOOLS, limits=StepLimits(max_steps=6), store=args.store)
    queue, thread = f"example-{uuid.uuid4().hex[:6]}", f"words-{uuid.uuid4().hex[:6]}"
    with agent, RunQueue(agent, queue) as runs:
        job = runs.submit(TASK, thread)
        print(f"queued job {job.job_id} for thread {thread}")
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)

        paused = agent.result(thread)
        for request in paused.pending:
            print(f">>> {paused.status}, waits for approval: {request.tool}({request.args})")
        job = runs.resume(thread, {p.call_id: Approve() for p in paused.pending})
        print(f"queued job {job.job_id}: the approval")
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)

        result = agent.result(thread)
        for step in result.chain:
            print(format_step(step))
        print(f"\nanswer: {result.answer}  ({result.status}, {result.stop_reason})")


if __name__ == "__main__":
    main()
