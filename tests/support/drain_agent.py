"""The agent `thinkgraph worker --agent tests.support.drain_agent:make_agent` serves in the
drain tests: one async tool call that takes a while, then the answer.

Configured by environment variables, per worker process: WORKER_STORE (the PostgreSQL
URL), WORKER_LOG (a file each tool call appends "start|done KEY PID" to) and
DRAIN_TOOL_S (the seconds this worker's tool call waits; 20 unless set).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.llm.base import Message
from thinkgraph.tools.base import ToolContext

REPLIES = [
    'Thought: this takes a while\nAction: slow_write\nAction Input: {"text": "one"}',
    "Thought: written\nFinal Answer: wrote one",
]


def make_agent() -> Agent:
    log = Path(os.environ["WORKER_LOG"])

    def write(line: str) -> None:
        with log.open("a") as f:
            f.write(f"{line} {os.getpid()}\n")

    @tool(side_effects=True, timeout_s=300)  # longer than any drain a test waits for
    async def slow_write(text: str, ctx: ToolContext) -> str:
        """Write a line, slowly."""
        write(f"start {ctx.idempotency_key}")
        await asyncio.sleep(float(os.environ.get("DRAIN_TOOL_S", "20")))
        write(f"done {ctx.idempotency_key}")
        return f"wrote {text}"

    def model(messages: list[Message]) -> str:
        return REPLIES[sum(1 for m in messages if m["role"] == "assistant")]

    return Agent(
        ScriptedModel(model),
        [slow_write],
        limits=StepLimits(max_steps=4),
        store=os.environ["WORKER_STORE"],
    )
