"""The report of the latency-bound scenarios: tables, goals of DESIGN.md §10, JSON."""

from __future__ import annotations

import os
import statistics
from dataclasses import asdict
from typing import Any

from bench.concurrency import ConcurrencyResults
from bench.goals import Goal, judge
from bench.samples import ConcurrencySample, WorkerSample

__all__ = [
    "concurrency_goals",
    "concurrency_json",
    "concurrency_markdown",
    "concurrency_notes",
]

BASELINE = "langgraph"
GOAL_WORKER_CONCURRENCY = 50
NAMES = {
    "thinkgraph": "thinkgraph (`Agent.arun`)",
    "langgraph": "async LangGraph agent (`AsyncSqliteSaver`)",
    "litellm": "bare litellm, no agent",
}


def _samples(c: ConcurrencyResults, system: str, runs: int) -> list[ConcurrencySample]:
    return [s for s in c.samples if s.system == system and s.runs == runs]


def _sample(c: ConcurrencyResults | None, system: str, runs: int) -> ConcurrencySample | None:
    """The sample a cell shows: the median round (the lower one of an even count), or a
    failed round if any failed — a failure is never hidden behind a median."""
    if c is None:
        return None
    taken = _samples(c, system, runs)
    failed = [s for s in taken if s.seconds is None or s.completed < s.runs]
    if failed or not taken:
        return failed[0] if failed else None
    ordered = sorted(taken, key=lambda s: s.seconds or 0.0)
    return ordered[(len(ordered) - 1) // 2]


def _spread(c: ConcurrencyResults, s: ConcurrencySample) -> str:
    """ " (min–max of K rounds)" after a median of several rounds, else nothing."""
    times = [x.seconds for x in _samples(c, s.system, s.runs) if x.seconds is not None]
    if len(times) < 2:
        return ""
    return f" ({min(times):.2f}–{max(times):.2f}, {len(times)} rounds)"


def _ratio(c: ConcurrencyResults, s: ConcurrencySample) -> float | None:
    """Wall time over the async LangGraph agent's, same N and L."""
    base = _sample(c, BASELINE, s.runs)
    if s.seconds is None or base is None or not base.seconds or base.latency_s != s.latency_s:
        return None
    return s.seconds / base.seconds


# -- goals --------------------------------------------------------------------------------


def concurrency_goals(c: ConcurrencyResults | None) -> list[Goal]:
    """DESIGN.md §10's latency-bound goals; n/a for what this run did not measure."""
    return [
        _versus_goal(c, 200, 1.5, "200 runs at once vs async LangGraph"),
        _versus_goal(c, 200, 1.0, "200 runs at once vs async LangGraph, then"),
        _thousand_goal(c),
        _worker_goal(c),
    ]


def _versus_text(c: ConcurrencyResults, s: ConcurrencySample, ratio: float) -> str:
    base = _sample(c, BASELINE, s.runs)
    assert base is not None and base.seconds is not None and s.seconds is not None
    return (
        f"{ratio:.2f}× ({s.seconds:.2f} s vs {base.seconds:.2f} s at L = {s.latency_s:g} s; "
        f"ideal 2·L = {s.ideal_s:g} s)"
    )


def _versus_goal(c: ConcurrencyResults | None, runs: int, limit: float, name: str) -> Goal:
    s = _sample(c, "thinkgraph", runs)
    target = f"thinkgraph ≤ {limit:.1f}× its wall time"
    if s is not None and s.seconds is None:
        return Goal(name, target, f"thinkgraph failed: {s.error}", "MISS")
    ratio = _ratio(c, s) if c is not None and s is not None else None
    done = s is not None and s.completed == s.runs
    text = _versus_text(c, s, ratio) if c and s and ratio is not None else ""
    if ratio is not None and not done and s is not None:
        text += f"; only {s.completed}/{s.runs} runs done"
    return judge(
        name,
        f"thinkgraph ≤ {limit:.1f}× its wall time",
        ratio,
        text,
        done and (ratio or 0) <= limit,
    )


def _thousand_goal(c: ConcurrencyResults | None) -> Goal:
    s = _sample(c, "thinkgraph", 1000)
    ratio = _ratio(c, s) if c is not None and s is not None else None
    measured = None if s is None else s.completed
    if s is not None and s.seconds is None:
        text = f"failed: {s.error}"
    elif c is not None and s is not None:
        text = f"{s.completed}/{s.runs} done; " + (
            _versus_text(c, s, ratio) if ratio is not None else "async LangGraph not measured"
        )
    else:
        text = ""
    ok = s is not None and s.completed == s.runs and ratio is not None and ratio <= 2.0
    return judge(
        "1,000 runs at once", "all complete, within 2× async LangGraph", measured, text, ok
    )


def _worker_reference(c: ConcurrencyResults) -> WorkerSample | None:
    """Concurrency 1: its wall time per run is one run's latency on the same worker."""
    return next((w for w in c.worker if w.concurrency == 1 and w.seconds), None)


def _worker_goal(c: ConcurrencyResults | None) -> Goal:
    name = "one worker, concurrency 50"
    target = "50 runs within 3× one run's latency"
    if c is None or not c.worker:
        return judge(name, target, None, "", False)
    wide = max(c.worker, key=lambda w: w.concurrency)
    reference = _worker_reference(c)
    crashed = next((w for w in c.worker if w.seconds is None and not w.skipped), None)
    if crashed is not None:
        return Goal(
            name, target, f"concurrency {crashed.concurrency} failed: {crashed.error}", "MISS"
        )
    if wide.seconds is None or reference is None or reference.seconds is None:
        why = wide.error or (reference.error if reference else None) or "no concurrency-1 run"
        return Goal(name, target, f"not measured: {why}", "n/a")
    one_run = reference.seconds / reference.runs
    times = wide.seconds / one_run
    ideal = wide.seconds / (2 * wide.latency_s)
    text = (
        f"{wide.runs} runs with concurrency {wide.concurrency}: {wide.seconds:.2f} s = "
        f"{times:.2f}× one run's latency ({one_run:.2f} s, from concurrency 1: "
        f"{reference.seconds:.1f} s for {reference.runs}); {ideal:.1f}× 2·L"
    )
    if wide.completed < wide.runs:
        text += f"; only {wide.completed}/{wide.runs} done"
    if wide.concurrency < GOAL_WORKER_CONCURRENCY or wide.runs < GOAL_WORKER_CONCURRENCY:
        return Goal(name, target, f"not judged, smaller run: {text}", "n/a")
    return judge(name, target, times, text, times <= 3.0 and wide.completed == wide.runs)


# -- markdown -----------------------------------------------------------------------------


def _cell(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _times(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt) + "×"


def concurrency_markdown(c: ConcurrencyResults | None) -> list[str]:
    """The tables of the scenarios (nothing when they were skipped)."""
    if c is None:
        return []
    lines = [
        "Latency-bound: N runs started together, two model calls each through litellm and "
        "real HTTP to a loopback model with latency L.",
        "",
        "| system | runs at once | L (s) | wall (s) | ÷ async LangGraph | ÷ ideal 2·L | "
        "RSS growth per run (KB) | done |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cells = dict.fromkeys((s.system, s.runs) for s in c.samples)
    for system, runs in cells:
        s = _sample(c, system, runs)
        assert s is not None
        ratio = _ratio(c, s)
        wall = (
            _cell(s.seconds, ".2f") + _spread(c, s)
            if s.seconds is not None
            else f"failed: {s.error}"
        )
        lines.append(
            f"| {NAMES.get(s.system, s.system)} | {s.runs:,} | {s.latency_s:g} | {wall} | "
            f"{_times(ratio, '.2f')} | "
            f"{_times(None if s.seconds is None else s.seconds / s.ideal_s, '.1f')} | "
            f"{_cell(s.rss_kb_per_run, ',.1f')} | {s.completed}/{s.runs} |"
        )
    lines += _worker_table(c) + _startup_table(c)
    return lines


def _worker_table(c: ConcurrencyResults) -> list[str]:
    if not c.worker:
        return []
    reference = _worker_reference(c)
    one_run = reference.seconds / reference.runs if reference and reference.seconds else None
    lines = [
        "",
        "| thinkgraph worker (PostgreSQL) | runs queued | wall (s) | ÷ one run's latency | "
        "÷ 2·L (one run's model time) | done |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for w in c.worker:
        if w.seconds is None:
            why = "not measured" if w.skipped else "failed"
            lines.append(
                f"| concurrency {w.concurrency} | {w.runs} | {why}: {w.error} | — | — | — |"
            )
            continue
        times = w.seconds / one_run if one_run else None
        lines.append(
            f"| concurrency {w.concurrency} | {w.runs} | {w.seconds:.2f} | "
            f"{_times(times, '.2f')} | {w.seconds / (2 * w.latency_s):.1f}× | "
            f"{w.completed}/{w.runs} |"
        )
    return lines


def _startup_table(c: ConcurrencyResults) -> list[str]:
    if not c.startup:
        return []
    lines = [
        "",
        "| fresh process (issue 12) | median wall (s) | min (s) | runs |",
        "|---|---:|---:|---:|",
    ]
    for command in dict.fromkeys(s.command for s in c.startup):
        samples = [s for s in c.startup if s.command == command]
        times = [s.seconds for s in samples if s.ok]
        failed = [s for s in samples if not s.ok]
        note = f" ({len(failed)} failed: {failed[0].error})" if failed else ""
        if not times:
            lines.append(f"| `{command}` | failed | — | 0{note} |")
            continue
        lines.append(
            f"| `{command}` | {statistics.median(times):.2f} | {min(times):.2f} | "
            f"{len(times)}{note} |"
        )
    return lines


def concurrency_notes(c: ConcurrencyResults | None) -> list[str]:
    """How the latency-bound figures were taken, and what shares the machine."""
    if c is None:
        return ["Latency-bound scenarios skipped (--skip-concurrency)."]
    return [
        "Latency-bound: each system in its own process with a fresh SQLite file, after one "
        "untimed warm-up run; the N runs are one `asyncio.gather`. The model server "
        "(uvicorn + Starlette, `asyncio.sleep(L)` per call) is another process on 127.0.0.1; "
        "a run makes two calls, so the ideal wall time is 2·L. Up to 200 runs at once, "
        f"{c.config.rounds} rounds (every system once per round, the order reversed every "
        "other round); a cell shows the median round and the spread, and the ratios are "
        "of medians. Larger counts: one round.",
        "RSS growth per run: (peak VmHWM during the runs, reset just before them − VmRSS "
        "before them) / N, in KB (1 KB = 1024 B).",
        "Worker: runs submitted with `RunQueue.submit`, then one `run_worker(wait=False, "
        "concurrency=C)` timed until the queue is empty; one run's latency is the "
        "concurrency-1 wall time per run on the same worker.",
        "Start-up: `thinkgraph run --model openai/bench-model --api-base … --tools "
        "bench.thinkgraph_run:ADD --quiet --no-input TASK` against the same server with "
        "L = 0, wall time of the whole process; the import rows show what it pays for.",
        f"All of it shares {os.cpu_count()} CPUs with the model server and with any other "
        "work on the machine: with many runs at once the systems are CPU-bound (litellm's "
        "per-call cost above all; see the bare litellm row), so contention shows in these "
        "figures.",
        *c.notes,
    ]


# -- JSON ---------------------------------------------------------------------------------


def concurrency_json(c: ConcurrencyResults | None) -> dict[str, Any] | None:
    """Every sample, with the derived figures, JSON-ready."""
    if c is None:
        return None
    return {
        "config": asdict(c.config),
        "samples": [
            {
                **asdict(s),
                "ideal_s": s.ideal_s,
                "ratio_to_langgraph": _ratio(c, s),
                "median_of_cell": s is _sample(c, s.system, s.runs),
                "ratio_to_ideal": None if s.seconds is None else s.seconds / s.ideal_s,
                "rss_kb_per_run": s.rss_kb_per_run,
            }
            for s in c.samples
        ],
        "worker": [asdict(w) for w in c.worker],
        "startup": [asdict(s) for s in c.startup],
        "notes": c.notes,
    }
