"""An agent run in a child process that kills itself (SIGKILL) at a chosen point.

Usage: python -m tests.support.crash_agent STORE THREAD LOG KILL_AT
KILL_AT is "think:N" (inside the N-th model call), "tool:N" (inside the N-th tool call,
after its side effect started) or "none". A marker file next to LOG makes each kill happen
once, so the parent can resume the run in-process with the same agent.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.llm.base import Message

REPLIES = [
    'Thought: first\nAction: record\nAction Input: {"text": "one"}',
    'Thought: second\nAction: record\nAction Input: {"text": "two"}',
    'Thought: third\nAction: record\nAction Input: {"text": "three"}',
    "Thought: all recorded\nFinal Answer: recorded one, two, three",
]


def _die_once(log: Path, point: str) -> None:
    marker = log.with_suffix(f".killed-{point.replace(':', '-')}")
    if os.environ.get("CRASH_AT") == point and not marker.exists():
        marker.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)


def build_agent(store: str, log: Path) -> Agent:
    """The agent both the child and the parent use."""
    tool_calls = 0

    @tool(side_effects=True)
    def record(text: str) -> str:
        """Append a line to the log."""
        nonlocal tool_calls
        tool_calls += 1
        with log.open("a") as f:
            f.write(f"start {text}\n")
        _die_once(log, f"tool:{tool_calls}")
        with log.open("a") as f:
            f.write(f"done {text}\n")
        return f"recorded {text}"

    def model(messages: list[Message]) -> str:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        _die_once(log, f"think:{turn + 1}")
        return REPLIES[turn]

    limits = StepLimits(max_steps=6)
    return Agent(ScriptedModel(model), [record], limits=limits, store=store)


def main() -> None:
    store, thread, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    os.environ["CRASH_AT"] = sys.argv[4]
    with build_agent(store, log) as agent:
        result = agent.run("record three lines", thread_id=thread)
    print(json.dumps({"status": result.status, "answer": result.answer}))


if __name__ == "__main__":
    main()
