"""A tool that proves runs advance side by side: each call waits until every run is in it.

Runs advanced one at a time never get there (the first waits alone until it gives up),
so a test asserts every call answered "together" instead of timing anything.
"""

from __future__ import annotations

import asyncio

from thinkgraph import Tool, tool

REPLIES = [
    'Thought: meet\nAction: meet\nAction Input: {"name": "x"}',
    "Thought: met\nFinal Answer: met",
]
"""What a ScriptedModel answers: one call to `meet`, then the answer "met"."""


def meeting(runs: int, wait_s: float = 10.0) -> Tool:
    """A `meet` tool whose calls return "together" once `runs` calls are in it at once."""
    arrived: list[str] = []

    @tool
    async def meet(name: str) -> str:
        """Wait until every run is inside this tool."""
        arrived.append(name)
        for _ in range(int(wait_s / 0.02)):
            if len(arrived) >= runs:
                return "together"
            await asyncio.sleep(0.02)
        return "alone"

    return meet
