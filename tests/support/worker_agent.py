"""The agent `thinkgraph worker --agent tests.support.worker_agent:make_agent` serves.

Configured by environment variables, so a test can start worker processes with it:
WORKER_STORE (the PostgreSQL URL), WORKER_LOG (a file each tool call appends to) and
CRASH_AT ("tool:N": SIGKILL this worker inside the N-th tool call it makes, after the
call's side effect started; unset: never).
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.llm.base import Message
from thinkgraph.tools.base import ToolContext

REPLIES = [
    'Thought: first\nAction: record\nAction Input: {"text": "one"}',
    'Thought: second\nAction: record\nAction Input: {"text": "two"}',
    'Thought: publish\nAction: publish\nAction Input: {"text": "three"}',
    "Thought: all recorded\nFinal Answer: recorded one, two, three",
]
"""Two recorded lines, then a call that needs approval, then the answer."""


def make_agent() -> Agent:
    log = Path(os.environ["WORKER_LOG"])
    calls = 0
    counting = threading.Lock()  # sync tools of runs advanced at once run in several threads

    def write(line: str) -> None:
        with log.open("a") as f:
            f.write(line + "\n")

    @tool(side_effects=True)
    def record(text: str, ctx: ToolContext) -> str:
        """Append a line to the log."""
        nonlocal calls
        with counting:
            calls += 1
            number = calls
        write(f"start {text} {ctx.idempotency_key}")
        if os.environ.get("CRASH_AT") == f"tool:{number}":
            os.kill(os.getpid(), signal.SIGKILL)
        write(f"done {text} {ctx.idempotency_key}")
        return f"recorded {text}"

    @tool(requires_approval=True, side_effects=True)
    def publish(text: str, ctx: ToolContext) -> str:
        """Publish a line (a person approves it first)."""
        write(f"published {text} {ctx.idempotency_key}")
        return f"published {text}"

    def model(messages: list[Message]) -> str:
        return REPLIES[sum(1 for m in messages if m["role"] == "assistant")]

    return Agent(
        ScriptedModel(model),
        [record, publish],
        limits=StepLimits(max_steps=6),
        store=os.environ["WORKER_STORE"],
    )
