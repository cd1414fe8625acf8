"""An agent whose runs finish on their own: one tool call, then the answer.

For worker tests that count finished runs (a database restart, many runs at once).
Configured by environment variables: WORKER_STORE (the PostgreSQL URL) and QUICK_SLEEP
(seconds the tool waits, default 0), so a batch can be caught in flight.

    thinkgraph worker --agent tests.support.quick_agent:make_agent
"""

from __future__ import annotations

import asyncio
import os

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.llm.base import Message

REPLIES = [
    'Thought: wait\nAction: pause_a_bit\nAction Input: {"text": "x"}',
    "Thought: done\nFinal Answer: waited",
]


@tool
async def pause_a_bit(text: str) -> str:
    """Wait QUICK_SLEEP seconds, then echo the text."""
    await asyncio.sleep(float(os.environ.get("QUICK_SLEEP", "0")))
    return text


def make_agent() -> Agent:
    def model(messages: list[Message]) -> str:
        return REPLIES[sum(1 for m in messages if m["role"] == "assistant")]

    return Agent(
        ScriptedModel(model),
        [pause_a_bit],
        limits=StepLimits(max_steps=4),
        store=os.environ["WORKER_STORE"],
    )
