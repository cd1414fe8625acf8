"""Replay of a long run: record a run of N cycles on SQLite, then time `Agent.replay` of it.

The replay serves every model reply, tool result and decision from the record (no model
call, no tool run), writes its own thread, and compares it with its source (the step
alignment of `thinkgraph diff` and the request digests). Run: ``python -m bench.replay_run``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.workload import TASK, add, final_answer, react_replies
from thinkgraph import Agent, ScriptedModel, StepLimits, tool

__all__ = ["replay_seconds"]

ADD = tool(add)


def replay_seconds(cycles: int, workdir: Path, repeat: int = 3) -> tuple[float, int, str]:
    """Seconds per replay of a `cycles`-cycle run (median), its chain length, the outcome."""
    url = f"sqlite:///{(workdir / 'replay.db').resolve()}"
    limits = StepLimits(max_steps=cycles + 1)
    with Agent(ScriptedModel(react_replies(cycles)), [ADD], limits=limits, store=url) as agent:
        source = agent.run(TASK, thread_id="source")
    if source.answer != final_answer(cycles):
        raise RuntimeError(f"the recorded run answered {source.answer!r}")
    times: list[float] = []
    outcome = ""
    for attempt in range(repeat):
        with Agent(ScriptedModel([]), [ADD], limits=limits, store=url) as agent:
            _ = agent.graph  # the store opened and the graph compiled outside the timing
            started = time.perf_counter()
            report = agent.replay("source", new_thread_id=f"replay-{attempt}")
            times.append(time.perf_counter() - started)
        outcome = report.outcome
        if report.model_calls or report.tool_runs:
            raise RuntimeError("a replay called the model or ran a tool")
    return statistics.median(times), len(source.chain), outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=200, help="the run's length (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="timed replays (median shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        seconds, steps, outcome = replay_seconds(args.cycles, Path(folder), args.repeat)
    print(
        f"replay of a {args.cycles}-cycle run ({steps} steps): {seconds:.3f} s "
        f"({seconds / steps * 1000:.2f} ms/step), {outcome}"
    )


if __name__ == "__main__":
    main()
