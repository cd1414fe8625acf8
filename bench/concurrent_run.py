"""One system's side of the concurrency scenario, in a process of its own.

``python -m bench.concurrent_run SYSTEM --runs N --url URL --db PATH`` starts N runs at once
against the model server at URL and prints one JSON line: the wall time of the N runs,
how many finished with the right answer, and the process's resident memory before the
runs and at its peak during them. A process per system keeps memory figures clean (no
other system's objects or allocator arenas) and keeps each system's CPU its own.

Systems:
    thinkgraph  `Agent(LiteLLMModel(...)).arun` on a SQLite store, `asyncio.gather`ed
    langgraph   the plain async LangGraph agent of `bench.async_langgraph`
    litellm     no agent: the run's two `litellm.acompletion` calls back to back, nothing
                checkpointed; the floor every litellm-based agent stands on
    worker      thinkgraph's worker: N runs submitted to a PostgreSQL queue, then one
                `run_worker(concurrency=C, wait=False)` that returns when the queue is empty

Every system does one untimed run first, so imports (litellm takes seconds), client
set-up and the SQLite schema are not charged to the measured runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import inspect
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench.model_server import FINAL_ANSWER
from bench.workload import add

__all__ = ["MODEL", "SYSTEMS", "TASK", "main"]

MODEL = "openai/bench-model"
API_KEY = "bench"
TASK = "What is 1 + 1? Use the add tool."
HEARTBEAT_S = 0.5
"""The worker's heartbeat: well under the 1.5 s after which the test suite's workers prune one."""
MODEL_TIMEOUT_S = 300.0
"""Per model call: generous, a thousand calls queue in one client; the run's timeout bounds it."""


# -- memory -------------------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0), so the peak is the runs' own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_kb() -> int | None:
    peak = _status_kb("VmHWM")
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux
    return peak


# -- the measured part --------------------------------------------------------------------


async def _measure(
    runs: int, one: Callable[[str], Awaitable[bool]], timeout_s: float
) -> dict[str, Any]:
    """Warm up with one run, then time `runs` runs started together."""
    if not await asyncio.wait_for(one("warm-up"), timeout_s):
        raise RuntimeError("the warm-up run did not finish with the expected answer")
    gc.collect()
    peak_reset = _reset_peak()
    rss_before = _status_kb("VmRSS")
    started = time.perf_counter()
    outcomes = await asyncio.wait_for(
        asyncio.gather(*(one(f"r{i}") for i in range(runs)), return_exceptions=True), timeout_s
    )
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "completed": sum(1 for o in outcomes if o is True),
        "errors": _errors(outcomes),
        "rss_before_kb": rss_before,
        "rss_peak_kb": _peak_kb(),
        "rss_after_kb": _status_kb("VmRSS"),
        "peak_reset": peak_reset,
    }


def _errors(outcomes: Sequence[object]) -> list[str]:
    """The first few distinct failures, as text."""
    seen: list[str] = []
    for outcome in outcomes:
        if outcome is True:
            continue
        text = (
            f"{type(outcome).__name__}: {outcome}"
            if isinstance(outcome, BaseException)
            else "wrong answer"
        )
        if text not in seen:
            seen.append(text[:300])
        if len(seen) == 3:
            break
    return seen


async def _thinkgraph(args: argparse.Namespace) -> dict[str, Any]:
    from thinkgraph import Agent
    from thinkgraph.llm.litellm import LiteLLMModel

    model = LiteLLMModel(
        MODEL, api_base=f"{args.url}/v1", api_key=API_KEY, num_retries=0, timeout=MODEL_TIMEOUT_S
    )
    agent = Agent(model, tools=[add], store=f"sqlite:///{args.db}")

    async def one(thread_id: str) -> bool:
        result = await agent.arun(TASK, thread_id)
        return result.status == "done" and result.answer == FINAL_ANSWER

    try:
        return await _measure(args.runs, one, args.timeout)
    finally:
        agent.close()


async def _langgraph(args: argparse.Namespace) -> dict[str, Any]:
    from bench.async_langgraph import open_agent, run_one

    async with open_agent(
        args.db, model=MODEL, api_base=f"{args.url}/v1", api_key=API_KEY, timeout_s=MODEL_TIMEOUT_S
    ) as graph:

        async def one(thread_id: str) -> bool:
            return await run_one(graph, TASK, thread_id) == FINAL_ANSWER

        return await _measure(args.runs, one, args.timeout)


async def _litellm(args: argparse.Namespace) -> dict[str, Any]:
    import litellm

    from bench.async_langgraph import SYSTEM_PROMPT

    litellm.suppress_debug_info = True

    async def call(messages: list[dict[str, str]]) -> str:
        response = await litellm.acompletion(
            model=MODEL,
            messages=messages,
            api_base=f"{args.url}/v1",
            api_key=API_KEY,
            timeout=MODEL_TIMEOUT_S,
            num_retries=0,
            max_retries=0,
        )
        return str(response.choices[0].message.content or "")

    async def one(thread_id: str) -> bool:
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": TASK},
        ]
        first = await call(messages)
        messages += [
            {"role": "assistant", "content": first},
            {"role": "user", "content": f"Observation: {add(1, 1)}"},
        ]
        return (await call(messages)).endswith(f"Final Answer: {FINAL_ANSWER}")

    return await _measure(args.runs, one, args.timeout)


# -- the worker ---------------------------------------------------------------------------


def _worker(args: argparse.Namespace) -> dict[str, Any]:
    """Submit `runs` runs to a fresh queue, then time one worker draining it."""
    from thinkgraph import Agent
    from thinkgraph.llm.litellm import LiteLLMModel
    from thinkgraph.worker import RunQueue, run_worker

    if "concurrency" not in inspect.signature(run_worker).parameters:
        return {"skipped": "thinkgraph.worker.run_worker has no `concurrency` keyword yet"}
    model = LiteLLMModel(
        MODEL, api_base=f"{args.url}/v1", api_key=API_KEY, num_retries=0, timeout=MODEL_TIMEOUT_S
    )
    agent = Agent(model, tools=[add], store=args.store)
    # A queue and thread ids of its own, so a shared database (the tests') is not disturbed.
    tag = f"bench-{uuid.uuid4().hex[:8]}"
    threads = [f"{tag}-r{i}" for i in range(args.runs)]
    try:
        # Warm-up: imports litellm and opens the store outside the timed part.
        warm = agent.run(TASK, thread_id=f"{tag}-warm-up")
        if warm.answer != FINAL_ANSWER:
            raise RuntimeError(f"the warm-up run answered {warm.answer!r} ({warm.stop_reason})")
        with RunQueue(agent, queue=tag) as queue:
            for thread_id in threads:
                queue.submit(TASK, thread_id)
        started = time.perf_counter()
        run_worker(
            agent,
            queue=tag,
            wait=False,
            install_signal_handlers=False,
            concurrency=args.concurrency,
            # Any worker on the database prunes workers silent for longer than its own
            # stalled_after (the test suite's are 1.5 s), and a pruned worker's next job
            # fails; a frequent heartbeat keeps this one alive on a shared database.
            heartbeat_s=HEARTBEAT_S,
        )
        seconds = time.perf_counter() - started
        results = [agent.result(t) for t in threads]
        completed = sum(1 for r in results if r.status == "done" and r.answer == FINAL_ANSWER)
        statuses = sorted({r.status for r in results})
        return {"seconds": seconds, "completed": completed, "statuses": statuses}
    finally:
        _clean_up(agent, tag, [f"{tag}-warm-up", *threads])
        agent.close()


def _clean_up(agent: Any, queue: str, threads: list[str]) -> None:
    """Delete the scenario's runs and jobs from the shared database (best effort)."""
    saver = agent.graph.checkpointer
    # Cleaning up must never hide the figures: failures here are ignored.
    for thread_id in threads:
        with contextlib.suppress(Exception):
            saver.delete_thread(thread_id)
    with contextlib.suppress(Exception):
        import psycopg

        with psycopg.connect(agent.store_url, autocommit=True) as conn:
            conn.execute("DELETE FROM kept_snapshots WHERE thread_id LIKE %s", (queue + "-%",))
            conn.execute("DELETE FROM procrastinate_jobs WHERE queue_name = %s", (queue,))


# -- the command line ---------------------------------------------------------------------

SYSTEMS: dict[str, Callable[[argparse.Namespace], Awaitable[dict[str, Any]]]] = {
    "thinkgraph": _thinkgraph,
    "langgraph": _langgraph,
    "litellm": _litellm,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrent_run", description=__doc__)
    parser.add_argument("system", choices=[*SYSTEMS, "worker"])
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--url", required=True, help="the model server, http://127.0.0.1:PORT")
    parser.add_argument("--db", type=Path, help="a fresh SQLite file (thinkgraph, langgraph)")
    parser.add_argument("--store", help="the PostgreSQL URL (worker)")
    parser.add_argument("--concurrency", type=int, default=1, help="the worker's (worker)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for the runs")
    args = parser.parse_args(argv)
    out = _worker(args) if args.system == "worker" else asyncio.run(SYSTEMS[args.system](args))
    print(json.dumps({"system": args.system, "runs": args.runs, **out}), flush=True)


if __name__ == "__main__":
    main()
