"""A child process that runs or resumes an agent and SIGKILLs itself at a chosen moment.

Usage: python -m tests.support.crash_cycles STORE THREAD LOG MODE KILL
MODE is "run" or "resume". KILL is "put:N" (right after the N-th checkpoint this process
writes: between two nodes), "writes:N" (right after the N-th saved task write: a node
finished but its checkpoint is not written yet), "tool:N" (inside the N-th tool call, after
its side effect), or "none".

The tool appends a line keyed by its idempotency key and skips a key it already wrote,
which is how a real side-effecting tool uses the key to act exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.storage import open_checkpointer
from thinkgraph.tools import ToolContext

REPLIES = [
    'Thought: first\nAction: record\nAction Input: {"text": "one"}',
    'Thought: second\nAction: record\nAction Input: {"text": "two"}',
    "Thought: all recorded\nFinal Answer: recorded one and two",
]


def _killer(kind: str, n: int) -> Any:
    count = 0

    def maybe_die(event: str) -> None:
        nonlocal count
        if event == kind:
            count += 1
            if count == n:
                os.kill(os.getpid(), signal.SIGKILL)

    return maybe_die


def build_agent(store: Any, log: Path, on_event: Any = None) -> Agent:
    """The agent the child and the parent both use."""

    @tool(side_effects=True)
    def record(text: str, ctx: ToolContext) -> str:
        """Append a line to the log, once per call."""
        done = log.read_text().splitlines() if log.exists() else []
        if not any(line.startswith(ctx.idempotency_key + " ") for line in done):
            with log.open("a") as f:
                f.write(f"{ctx.idempotency_key} {text}\n")
        if on_event is not None:
            on_event("tool")
        return f"recorded {text}"

    return Agent(ScriptedModel(REPLIES), [record], limits=StepLimits(max_steps=5), store=store)


def main() -> None:
    store, thread, log, mode, kill = sys.argv[1:6]
    kind, _, n = kill.partition(":")
    on_event = _killer(kind, int(n)) if n else None
    saver = open_checkpointer(store)
    if on_event is not None:
        put, put_writes = saver.put, saver.put_writes

        def counted_put(*args: Any, **kwargs: Any) -> Any:
            out = put(*args, **kwargs)
            on_event("put")
            return out

        def counted_writes(*args: Any, **kwargs: Any) -> Any:
            out = put_writes(*args, **kwargs)
            on_event("writes")
            return out

        saver.put = counted_put  # type: ignore[method-assign]
        saver.put_writes = counted_writes  # type: ignore[method-assign]
    agent = build_agent(saver, Path(log), on_event)
    if mode == "run":
        result = agent.run("record two lines", thread_id=thread)
    else:
        result = agent.resume(thread)
    print(json.dumps({"status": result.status}))


if __name__ == "__main__":
    main()
