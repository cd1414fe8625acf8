"""The shared workload: N reasoning cycles of one `add` call each, then a final answer.

Every system sees the same task and the same replies: reply i proposes ``add(i, 1)``, and
reply N gives the final answer. The model is scripted and the tool is instant, so what is
measured is orchestration (routing, state handling, checkpoints), not a model or a tool.
"""

from __future__ import annotations

import json

__all__ = [
    "TASK",
    "add",
    "final_answer",
    "payload_bytes_per_cycle",
    "react_replies",
    "tool_args",
]

TASK = "Add one to each number in turn, using the add tool, then report how many you did."
"""The task every system is given."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def tool_args(cycle: int) -> dict[str, int]:
    """The arguments of the call proposed in `cycle` (from 0)."""
    return {"a": cycle, "b": 1}


def final_answer(cycles: int) -> str:
    """The answer given after `cycles` cycles; each system's run is checked against it."""
    return str(cycles)


def react_replies(cycles: int) -> list[str]:
    """The ReAct-text replies for thinkgraph's `ScriptedModel`: one per cycle, then the end."""
    replies = [
        f"Thought: add one to {i}\nAction: add\nAction Input: {json.dumps(tool_args(i))}"
        for i in range(cycles)
    ]
    replies.append(f"Thought: all done\nFinal Answer: {final_answer(cycles)}")
    return replies


def payload_bytes_per_cycle(cycles: int) -> float:
    """What the model and the tool themselves said per cycle, in UTF-8 bytes.

    DESIGN.md §10 allows 8 KB of checkpoint storage per cycle *plus payload*: the reply
    text and the tool's output, which any store must keep whatever its overhead.
    """
    replies = react_replies(cycles)
    outputs = [str(add(**tool_args(i))) for i in range(cycles)]
    total = sum(len(r.encode()) for r in replies) + sum(len(o.encode()) for o in outputs)
    return total / cycles
