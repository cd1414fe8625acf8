"""What a measurement produces: one record per timed run or resume, and medians over them."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ConcurrencySample",
    "ResumeSample",
    "RunSample",
    "StartupSample",
    "StorageSize",
    "WorkerSample",
    "median_or_none",
]


@dataclass(frozen=True, slots=True)
class StorageSize:
    """The size of a checkpoint database after a run."""

    file_bytes: int
    """Bytes on disk: the database file plus its WAL, after the WAL is checkpointed."""
    blob_bytes: int
    """Bytes of serialized checkpoints, their metadata and pending writes (no SQLite pages)."""


@dataclass(frozen=True, slots=True)
class RunSample:
    """One timed run of `cycles` reasoning cycles by one system."""

    system: str
    """"thinkgraph", "prebuilt" or "bare"."""
    cycles: int
    """Reasoning cycles in the run (tool calls before the final answer)."""
    seconds: float
    """Wall-clock time of the run, from the call that starts it to its return."""
    nodes: int | None = None
    """Graph nodes (super-steps) executed, read from the checkpoints; None for the bare loop."""
    storage: StorageSize | None = None
    """Checkpoint storage after the run; None when nothing is checkpointed."""

    @property
    def ms_per_cycle(self) -> float:
        return self.seconds * 1000 / self.cycles

    @property
    def ms_per_node(self) -> float | None:
        return None if not self.nodes else self.seconds * 1000 / self.nodes


@dataclass(frozen=True, slots=True)
class ResumeSample:
    """One resume of a long run, each part in a fresh agent with its own connection."""

    system: str
    cycles: int
    """Length of the run that is resumed."""
    load_s: float
    """`get_state` of the checkpoint the run resumes from."""
    load_first_node_s: float
    """`invoke` from that checkpoint, stopped right after its first node (the model call)."""
    result_s: float | None = None
    """thinkgraph only: `Agent.result(thread_id)`, the public read of the latest state."""


@dataclass(frozen=True, slots=True)
class ConcurrencySample:
    """`runs` runs started together by one system against a model with `latency_s` latency."""

    system: str
    """"thinkgraph", "langgraph" (the plain async LangGraph agent) or "litellm" (no agent)."""
    runs: int
    latency_s: float
    """The model server's latency per call; a run makes two calls."""
    seconds: float | None
    """Wall time from starting the runs to the last one's end; None when the process failed."""
    completed: int = 0
    """Runs that finished with the right answer."""
    rss_before_kb: int | None = None
    """Resident memory of the system's process after its warm-up run, before the runs."""
    rss_peak_kb: int | None = None
    """Peak resident memory while the runs went (VmHWM, reset just before them)."""
    error: str | None = None
    """Why runs failed, when some did."""
    round: int = 0
    """Which round of the scenario took it (see `ConcurrencyConfig.rounds`)."""

    @property
    def ideal_s(self) -> float:
        """Two model calls back to back: what a run costs with free orchestration."""
        return 2 * self.latency_s

    @property
    def rss_kb_per_run(self) -> float | None:
        if self.rss_before_kb is None or self.rss_peak_kb is None or not self.runs:
            return None
        return (self.rss_peak_kb - self.rss_before_kb) / self.runs


@dataclass(frozen=True, slots=True)
class WorkerSample:
    """One worker draining `runs` queued runs with `concurrency` at once."""

    concurrency: int
    runs: int
    latency_s: float
    seconds: float | None
    """From `run_worker` called to its return once the queue is empty; None when not run."""
    completed: int = 0
    error: str | None = None
    """Why it did not run or some runs failed."""
    skipped: bool = False
    """Not run because it could not be (no PostgreSQL, no `concurrency` keyword): not a miss."""


@dataclass(frozen=True, slots=True)
class StartupSample:
    """The wall time of one command in a fresh process."""

    command: str
    """What was run, for the report: e.g. "thinkgraph run …", "import litellm"."""
    seconds: float
    ok: bool = True
    error: str | None = None
    """The last line the process wrote to stderr, when it failed."""


def median_or_none(values: Iterable[float | None]) -> float | None:
    """The median of the values that are not None, or None when there are none."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
