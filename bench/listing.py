"""``python -m bench.listing DB N``: N stored runs, then how long listing them takes.

Issue 12's goal: ``thinkgraph runs`` and ``GET /runs`` list 1,000 stored runs in under
0.5 s without rebuilding any chain. The runs are made here (one tool cycle each, many at
once with a `ScriptedModel`), then `Agent.runs()` is timed in this process; the caller
times ``thinkgraph runs`` in fresh processes. Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from bench.workload import TASK, add, react_replies
from thinkgraph import Agent, ScriptedModel, StepLimits, tool

REPEAT = 3


async def _make(agent: Agent, runs: int) -> None:
    batch = 100
    for start in range(0, runs, batch):
        ids = range(start, min(start + batch, runs))
        await asyncio.gather(*(agent.arun(TASK, thread_id=f"listed-{i}") for i in ids))


def main(db: str, runs: int) -> None:
    agent = Agent(
        ScriptedModel(react_replies(1)),
        [tool(add)],
        limits=StepLimits(max_steps=2),
        store=f"sqlite:///{db}",
    )
    with agent:
        started = time.perf_counter()
        asyncio.run(_make(agent, runs))
        made_s = time.perf_counter() - started
        times = []
        for _ in range(REPEAT):
            started = time.perf_counter()
            listed = agent.runs()
            times.append(time.perf_counter() - started)
    if len(listed) != runs:
        raise SystemExit(f"listed {len(listed)} runs, stored {runs}")
    print(json.dumps({"made_s": made_s, "list_s": times}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
