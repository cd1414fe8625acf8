"""``python -m bench.prune DB N``: N finished runs, then how long pruning them takes.

Issue 20: ``thinkgraph prune`` of 1,000 finished runs, timed. The runs are made first
(three tool cycles each, many at once, with a `ScriptedModel`; not timed), then, as the
command does it, in this process:

- ``status``: every run's status read once (`Agent.runs`, no chain rebuilt);
- ``dry_run``: what ``--keep-last 2`` would delete, counted;
- ``trim``: ``--keep-last 2`` done: each run's chain stored whole in its oldest kept
  checkpoint, the older checkpoints and writes deleted;
- ``delete``: every run deleted whole (``--older-than 0s``);
- ``vacuum``: the file given back to the disk.

Prints one JSON line: seconds per phase, rows deleted, the file's size before and after.
`measure` runs it in a child process, so the suite's own heap is not charged.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

__all__ = ["RUNS", "PruneSample", "measure"]

RUNS = 1000
"""Finished runs pruned."""
CYCLES = 3
"""Tool cycles per run: enough checkpoints that keeping two deletes most of them."""
TIMEOUT_S = 600.0
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class PruneSample:
    """Seconds each phase took, and what it did."""

    runs: int
    seconds: dict[str, float]
    """status, dry_run, trim, delete, vacuum."""
    checkpoints_trimmed: int
    checkpoints_deleted: int
    file_bytes: dict[str, int]
    """The database file: made, after the trim and VACUUM, after the delete and VACUUM."""


def measure(runs: int, log: Callable[[str], None]) -> PruneSample | None:
    """Time a prune of `runs` runs in a child process; None (and a log line) if it fails."""
    with tempfile.TemporaryDirectory(prefix="thinkgraph-prune-") as folder:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "bench.prune", str(Path(folder) / "runs.db"), str(runs)],
                cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            log(f"  prune: timed out after {TIMEOUT_S:.0f} s")
            return None
    if done.returncode != 0:
        log(f"  prune: failed: {done.stderr.strip().splitlines()[-1:]}")
        return None
    sample = PruneSample(**json.loads(done.stdout.strip().splitlines()[-1]))
    log(
        "  prune: "
        + ", ".join(f"{phase} {seconds:.2f} s" for phase, seconds in sample.seconds.items())
    )
    return sample


def _size(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())


def main(db: Path, runs: int) -> None:
    from bench.workload import TASK, add, react_replies
    from thinkgraph import Agent, ScriptedModel, StepLimits, tool
    from thinkgraph.storage import Store
    from thinkgraph.storage.prune import vacuum

    agent = Agent(
        ScriptedModel(react_replies(CYCLES)),
        [tool(add)],
        limits=StepLimits(max_steps=CYCLES + 1),
        store=f"sqlite:///{db}",
    )

    async def make() -> None:
        for start in range(0, runs, 100):
            ids = range(start, min(start + 100, runs))
            await asyncio.gather(*(agent.arun(TASK, thread_id=f"pruned-{i}") for i in ids))

    seconds: dict[str, float] = {}
    with agent:
        asyncio.run(make())
        store = Store(agent.graph.checkpointer)  # type: ignore[arg-type]
        vacuum(store.saver)
        made = _size(db)
        started = time.perf_counter()
        statuses = {run.thread_id: run.status for run in agent.runs()}
        seconds["status"] = time.perf_counter() - started
        if sorted(set(statuses.values())) != ["done"] or len(statuses) != runs:
            raise SystemExit(f"expected {runs} done runs, found {len(statuses)}")
        started = time.perf_counter()
        store.prune(status=statuses.get, keep_last=2, dry_run=True)
        seconds["dry_run"] = time.perf_counter() - started
        started = time.perf_counter()
        trimmed = store.prune(status=statuses.get, keep_last=2)
        seconds["trim"] = time.perf_counter() - started
        started = time.perf_counter()
        vacuum(store.saver)
        seconds["vacuum"] = time.perf_counter() - started
        after_trim = _size(db)
        started = time.perf_counter()
        deleted = store.prune(status=statuses.get, older_than=timedelta(0))
        seconds["delete"] = time.perf_counter() - started
        vacuum(store.saver)
        empty = _size(db)
    if len(trimmed.touched) != runs or len(deleted.touched) != runs:
        raise SystemExit(f"pruned {len(trimmed.touched)} and {len(deleted.touched)} of {runs}")
    print(
        json.dumps(
            {
                "runs": runs,
                "seconds": seconds,
                "checkpoints_trimmed": trimmed.checkpoints,
                "checkpoints_deleted": deleted.checkpoints,
                "file_bytes": {"made": made, "trimmed": after_trim, "deleted": empty},
            }
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
