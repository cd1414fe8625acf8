"""A long run that pauses for approval, resumed in a child process that SIGKILLs itself.

Usage: python -m tests.support.long_pause STORE THREAD LOG KILL
The child approves the waiting call and resumes; KILL is "put:N" (right after the N-th
checkpoint it writes), "tool:N" (inside its N-th tool call, after the side effect) or
"none". The paused run is long enough that its chain was kept whole at the pause, so the
resumes after the kill load it from that snapshot plus the writes since.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from thinkgraph import Agent, Approve, ScriptedModel, StepLimits, tool
from thinkgraph.llm.base import Message
from thinkgraph.storage import open_checkpointer
from thinkgraph.tools import ToolContext

BEFORE, AFTER = 55, 3
"""Record calls before the call that needs approval, and after it."""


def _reply(turn: int) -> str:
    if turn < BEFORE:
        return f'Thought: {turn}\nAction: record\nAction Input: {{"text": "r{turn}"}}'
    if turn == BEFORE:
        return 'Thought: publish\nAction: publish\nAction Input: {"text": "report"}'
    if turn <= BEFORE + AFTER:
        return f'Thought: {turn}\nAction: record\nAction Input: {{"text": "r{turn}"}}'
    return "Thought: done\nFinal Answer: all recorded"


def build_agent(store: Any, log: Path, on_event: Any = None) -> Agent:
    """The agent the child and the parent both use."""

    def effect(ctx: ToolContext, text: str) -> None:
        done = log.read_text().splitlines() if log.exists() else []
        if not any(line.startswith(ctx.idempotency_key + " ") for line in done):
            with log.open("a") as f:
                f.write(f"{ctx.idempotency_key} {text}\n")
        if on_event is not None:
            on_event("tool")

    @tool(side_effects=True)
    def record(text: str, ctx: ToolContext) -> str:
        """Append a line to the log, once per call."""
        effect(ctx, text)
        return f"recorded {text}"

    @tool(side_effects=True, requires_approval=True)
    def publish(text: str, ctx: ToolContext) -> str:
        """Publish (a person approves it first)."""
        effect(ctx, f"published {text}")
        return f"published {text}"

    def model(messages: list[Message]) -> str:
        return _reply(sum(1 for m in messages if m["role"] == "assistant"))

    limits = StepLimits(max_steps=BEFORE + AFTER + 3)
    return Agent(ScriptedModel(model), [record, publish], limits=limits, store=store)


def main() -> None:
    store, thread, log, kill = sys.argv[1:5]
    kind, _, n = kill.partition(":")
    count = 0

    def on_event(event: str) -> None:
        nonlocal count
        if event == kind:
            count += 1
            if count == int(n):
                os.kill(os.getpid(), signal.SIGKILL)

    saver = open_checkpointer(store)
    put = saver.put

    def counted_put(*args: Any, **kwargs: Any) -> Any:
        out = put(*args, **kwargs)
        on_event("put")
        return out

    saver.put = counted_put  # type: ignore[method-assign]
    agent = build_agent(saver, Path(log), on_event if n else None)
    pending = agent.result(thread).pending
    result = agent.resume(thread, {p.call_id: Approve() for p in pending})
    print(json.dumps({"status": result.status}))


if __name__ == "__main__":
    main()
