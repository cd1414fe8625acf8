"""The latency-bound scenarios: many runs waiting on a slow model, a worker, the CLI's start.

Orchestration cost (the rest of the benchmark) uses a model that answers at once. Here the
model takes L seconds per call, as a real one does, and what counts is how many runs one
process keeps waiting side by side:

- N runs started together (``asyncio.gather``), thinkgraph against a plain async LangGraph
  agent on `AsyncSqliteSaver` and against bare litellm calls, all through real HTTP to
  `bench.model_server`; wall time, ratios, memory per run.
- One thinkgraph worker on PostgreSQL draining queued runs with concurrency C against
  concurrency 1.
- The wall time of ``thinkgraph run …`` in a fresh process (issue 12: start-up).

Each system runs in a child process (`bench.concurrent_run`) with a fresh SQLite file, and
the model server runs in another, so no process is charged for another's CPU or memory.
Every child is bounded by a timeout; everything listens and connects on 127.0.0.1 only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.concurrent_run import MODEL, TASK
from bench.model_server import serve_model
from bench.samples import ConcurrencySample, StartupSample, WorkerSample

__all__ = ["ConcurrencyConfig", "ConcurrencyResults", "run_scenarios"]

ROOT = Path(__file__).resolve().parent.parent
"""The tree whose `bench` and `thinkgraph` are measured (put first on the children's path)."""
POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
CLI_TOOL = "bench.thinkgraph_run:ADD"
"""`add` as a thinkgraph `Tool` (the CLI's progress display needs tools, not functions)."""
STARTUP_TIMEOUT_S = 180.0
ROUNDS_UP_TO = 200
"""The largest count run `ConcurrencyConfig.rounds` times; above it, one round."""


@dataclass(frozen=True, slots=True)
class ConcurrencyConfig:
    """What the latency-bound scenarios measure."""

    runs: tuple[int, ...] = (200, 1000)
    """How many runs are started together, one measurement per count and system."""
    latency_s: float = 0.5
    """The model server's latency per call."""
    systems: tuple[str, ...] = ("thinkgraph", "langgraph", "litellm")
    """Systems of `bench.concurrent_run`, run in this order for every count."""
    rounds: int = 3
    """Rounds of each count up to `ROUNDS_UP_TO` runs: every system once per round, the order
    reversed every other round; the report takes each system's median. One sample of a
    200-run cell varies by ±15 % from one process to the next on a shared machine, as much
    as the ratios being judged. Larger counts run once (a 1,000-run cell takes minutes)."""
    worker_runs: int = 50
    """Runs queued for the worker scenario; 0 skips it."""
    worker_concurrency: tuple[int, ...] = (1, 50)
    """The worker's concurrency, one measurement each (the first is the reference)."""
    postgres_url: str = POSTGRES_URL
    startup_repeat: int = 3
    """Fresh processes per start-up figure (the median is shown); 0 skips them."""


@dataclass(slots=True)
class ConcurrencyResults:
    """Every sample the scenarios took, plus notes for the report."""

    config: ConcurrencyConfig
    samples: list[ConcurrencySample] = field(default_factory=list)
    worker: list[WorkerSample] = field(default_factory=list)
    startup: list[StartupSample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_scenarios(config: ConcurrencyConfig, log: Callable[[str], None]) -> ConcurrencyResults:
    """Run the scenarios: concurrent runs, the worker, the CLI's start-up."""
    results = ConcurrencyResults(config)
    results.notes.append(f"Concurrency scenario started at load average {_load()}.")
    root = Path(tempfile.mkdtemp(prefix="thinkgraph-bench-concurrency-"))
    env = child_env()
    try:
        with serve_model(config.latency_s, env=env) as url:
            for runs in config.runs:
                rounds = config.rounds if runs <= ROUNDS_UP_TO else 1
                for round_ in range(rounds):
                    order = config.systems if round_ % 2 == 0 else config.systems[::-1]
                    for system in order:
                        sample = _concurrent(system, runs, config.latency_s, url, root, env)
                        sample = dataclasses.replace(sample, round=round_)
                        results.samples.append(sample)
                        log(_describe(sample))
            if config.worker_runs:
                for concurrency in config.worker_concurrency:
                    worker = _worker(config, concurrency, url, env)
                    results.worker.append(worker)
                    log(_describe_worker(worker))
        if config.startup_repeat:
            with serve_model(0.0, env=env) as url:
                results.startup = _startup(config.startup_repeat, url, root, env, log)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results.notes.append(f"Concurrency scenario ended at load average {_load()}.")
    return results


def child_env() -> dict[str, str]:
    """The environment of every child: this tree first, and litellm kept off the network."""
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # Without it, importing litellm fetches its cost map from GitHub (with retries).
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.setdefault("OPENAI_API_KEY", "bench")  # the CLI has no --api-key; litellm reads it
    return env


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# -- the children -------------------------------------------------------------------------


def _child(
    args: list[str], env: dict[str, str], timeout_s: float
) -> tuple[dict[str, Any] | None, str]:
    """Run `python -m bench.concurrent_run ARGS`; its JSON line, or None and why not."""
    command = [sys.executable, "-m", "bench.concurrent_run", *args]
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:.0f} s"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None, _failure(done.stderr) or f"exit code {done.returncode}"
    return json.loads(lines[-1]), ""


_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*: ")


def _failure(stderr: str) -> str:
    """What a child's traceback says went wrong: its exception lines, most telling first.

    A wrapped database error ends with "ConnectorException: Database error."; the psycopg
    error that caused it is the line worth reading, so every exception line is kept.
    """
    found = [
        line.strip()
        for line in stderr.splitlines()
        if _EXCEPTION_LINE.match(line) and not line.startswith(("Traceback", "The above", "During"))
    ]
    if not found:
        found = stderr.strip().splitlines()[-1:]
    return " ← ".join(reversed(list(dict.fromkeys(found))))[:400]


def _runs_timeout(runs: int, latency_s: float) -> float:
    """Generous: 60 s plus 0.3 s of orchestration per run, plus the model's own time."""
    return 60 + runs * 0.3 + 2 * latency_s


def _concurrent(
    system: str, runs: int, latency_s: float, url: str, root: Path, env: dict[str, str]
) -> ConcurrencySample:
    workdir = root / f"{system}-{runs}"
    workdir.mkdir()
    db = workdir / "runs.db"
    timeout_s = _runs_timeout(runs, latency_s)
    args = [system, "--runs", str(runs), "--url", url, "--db", str(db), "--timeout", str(timeout_s)]
    # The child also imports, warms up and closes: allow two minutes beyond its own bound.
    out, why = _child(args, env, timeout_s + 120)
    shutil.rmtree(workdir, ignore_errors=True)
    if out is None:
        return ConcurrencySample(system, runs, latency_s, None, error=why)
    errors = out.get("errors") or []
    return ConcurrencySample(
        system=system,
        runs=runs,
        latency_s=latency_s,
        seconds=out["seconds"],
        completed=out["completed"],
        rss_before_kb=out.get("rss_before_kb"),
        rss_peak_kb=out.get("rss_peak_kb"),
        error="; ".join(errors) or None,
    )


def _describe(s: ConcurrencySample) -> str:
    if s.seconds is None:
        return f"  {s.system:10} {s.runs:5} runs at once  failed: {s.error}"
    per_run = s.rss_kb_per_run
    rss = f"{per_run:7.1f} KB/run" if per_run is not None else "RSS unknown"
    return (
        f"  {s.system:10} {s.runs:5} runs at once  {s.seconds:7.2f} s  "
        f"({s.seconds / s.ideal_s:.1f}× 2·L)  {rss}  {s.completed}/{s.runs} done"
    )


def _postgres_error(url: str) -> str | None:
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure means "not measured", and says why
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"PostgreSQL not reachable at {url}: {first}"
    return None


def _worker(
    config: ConcurrencyConfig, concurrency: int, url: str, env: dict[str, str]
) -> WorkerSample:
    runs, latency_s = config.worker_runs, config.latency_s
    unreachable = _postgres_error(config.postgres_url)
    if unreachable:
        return WorkerSample(concurrency, runs, latency_s, None, error=unreachable, skipped=True)
    # Concurrency 1 runs one after the other: allow three times the model's time of each.
    timeout_s = 120 + runs * 2 * latency_s * 3 / concurrency + runs * 0.5
    args = ["worker", "--runs", str(runs), "--concurrency", str(concurrency), "--url", url]
    out, why = _child([*args, "--store", config.postgres_url], env, timeout_s)
    if out is None:
        return WorkerSample(concurrency, runs, latency_s, None, error=why)
    if "skipped" in out:
        return WorkerSample(concurrency, runs, latency_s, None, error=out["skipped"], skipped=True)
    bad = out["completed"] < runs
    return WorkerSample(
        concurrency,
        runs,
        latency_s,
        out["seconds"],
        out["completed"],
        error=f"run statuses: {', '.join(out.get('statuses', []))}" if bad else None,
    )


def _describe_worker(w: WorkerSample) -> str:
    if w.seconds is None:
        return f"  worker concurrency {w.concurrency:3}: not measured ({w.error})"
    return (
        f"  worker concurrency {w.concurrency:3}: {w.runs} runs in {w.seconds:7.2f} s  "
        f"{w.completed}/{w.runs} done"
    )


# -- start-up -----------------------------------------------------------------------------


def _thinkgraph_command() -> list[str]:
    script = Path(sys.executable).with_name("thinkgraph")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from thinkgraph.cli import main; sys.exit(main())"]


def _startup(
    repeat: int, url: str, root: Path, env: dict[str, str], log: Callable[[str], None]
) -> list[StartupSample]:
    """Fresh-process wall times: `thinkgraph run` end to end, and the imports it pays for."""
    commands: dict[str, Callable[[int], list[str]]] = {
        "thinkgraph run (2 model calls, 0 latency)": lambda i: [
            *_thinkgraph_command(),
            "run",
            "--model",
            MODEL,
            "--api-base",
            f"{url}/v1",
            "--store",
            f"sqlite:///{root / f'startup-{i}.db'}",
            "--tools",
            CLI_TOOL,
            "--quiet",
            "--no-input",
            TASK,
        ],
        "python -c 'import thinkgraph.cli'": lambda i: [
            sys.executable,
            "-c",
            "import thinkgraph.cli",
        ],
        "python -c 'import litellm'": lambda i: [sys.executable, "-c", "import litellm"],
        "python -c 'pass'": lambda i: [sys.executable, "-c", "pass"],
    }
    samples = []
    for name, command in commands.items():
        for i in range(repeat):
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    command(i),
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=STARTUP_TIMEOUT_S,
                )
                ok = done.returncode == 0
                error = None if ok else _failure(done.stderr) or f"exit code {done.returncode}"
            except subprocess.TimeoutExpired:
                ok, error = False, f"timed out after {STARTUP_TIMEOUT_S:.0f} s"
            samples.append(StartupSample(name, time.perf_counter() - started, ok, error))
            if error:
                log(f"  start-up {name}: failed: {error}")
        times = [s.seconds for s in samples if s.command == name and s.ok]
        if times:
            log(f"  start-up {name}: median {statistics.median(times):.2f} s of {len(times)}")
    samples.extend(_listing(repeat, root, env, log))
    return samples


LISTED_RUNS = 1000
"""Stored runs for the listing figures (issue 12: listed in under 0.5 s)."""


def _listing(
    repeat: int, root: Path, env: dict[str, str], log: Callable[[str], None]
) -> list[StartupSample]:
    """`Agent.runs()` over 1,000 stored runs in process, and `thinkgraph runs` fresh."""
    db = root / "listing.db"
    try:
        made = subprocess.run(
            [sys.executable, "-m", "bench.listing", str(db), str(LISTED_RUNS)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        log("  listing: making the runs timed out")
        return []
    if made.returncode != 0:
        log(f"  listing: failed: {_failure(made.stderr)}")
        return []
    figures = json.loads(made.stdout.strip().splitlines()[-1])
    name = f"Agent.runs() over {LISTED_RUNS:,} stored runs (in process)"
    samples = [StartupSample(name, t) for t in figures["list_s"]]
    log(f"  {name}: median {statistics.median(figures['list_s']) * 1000:.0f} ms")
    command = [*_thinkgraph_command(), "runs", "--store", f"sqlite:///{db}"]
    name = f"thinkgraph runs over {LISTED_RUNS:,} stored runs (fresh process)"
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=STARTUP_TIMEOUT_S,
        )  # fmt: skip
        ok = done.returncode == 0
        error = None if ok else _failure(done.stderr) or f"exit code {done.returncode}"
        samples.append(StartupSample(name, time.perf_counter() - started, ok, error))
    times = [s.seconds for s in samples if s.command == name and s.ok]
    if times:
        log(f"  {name}: median {statistics.median(times):.2f} s")
    return samples
