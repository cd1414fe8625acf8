"""What a measurement produces: one record per timed run or resume, and medians over them."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ResumeSample", "RunSample", "StorageSize", "median_or_none"]


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


def median_or_none(values: Iterable[float | None]) -> float | None:
    """The median of the values that are not None, or None when there are none."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
