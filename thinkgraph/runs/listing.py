"""What a listing of runs says: the words for where runs stand, a page of them, its filters.

The vocabulary every door lists runs in (`thinkgraph runs`, ``GET /runs``, the studio), kept
apart from how runs are read (`thinkgraph.runs.reader`): a run's status as its checkpoints
and its latest job tell it together (`with_job`), the filters of a page (`RunFilter`:
status, graph, search by thread or task) and the page itself (`RunPage`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from thinkgraph.result import JobState, RunSummary
from thinkgraph.types import RunStatus

__all__ = [
    "EVERY_RUN",
    "RUN_STATUSES",
    "ListedRun",
    "RunCount",
    "RunFilter",
    "RunPage",
    "newest_first",
    "with_job",
]


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a listing shows: all of them unless narrowed.

    Args:
        status: only runs with this status.
        graph: only runs of the graph at this address ('' for thinkgraph's own).
        search: only runs whose thread id or task (masked, as listings show it) holds this
            text, either case.
    """

    status: RunStatus | None = None
    graph: str | None = None
    search: str = ""

    def matches(self, summary: RunSummary, task_of: Callable[[str], str]) -> bool:
        """Whether `summary` passes; `task_of` gives a run's masked task, asked only when
        the search text is not in its thread id."""
        if self.status is not None and summary.status != self.status:
            return False
        if self.graph is not None and (summary.graph or "") != self.graph:
            return False
        if not self.search:
            return True
        wanted = self.search.casefold()
        thread = summary.thread_id
        return wanted in thread.casefold() or wanted in task_of(thread).casefold()


EVERY_RUN = RunFilter()
"""The filter that lets every run through."""


@dataclass(frozen=True, slots=True)
class ListedRun:
    """One run of a page: its summary and its task, masked as listings show it."""

    summary: RunSummary
    task: str


@dataclass(frozen=True, slots=True)
class RunPage:
    """A page of runs, newest first, and whether more follow it."""

    runs: list[ListedRun]
    has_next: bool


RUN_STATUSES: tuple[RunStatus, ...] = ("done", "paused", "running", "queued", "failed")
"""Where a run can stand, in the order counts are shown."""

_JOB_STATUS: dict[str, RunStatus] = {
    "queued": "queued",
    "retrying": "queued",
    "running": "running",
    "stalled": "running",
    "failed": "failed",
}
"""A run's status while its latest job has not ended well: it waits for a worker (or for
its next attempt), a worker has it (or had it, and went silent), or it failed for good."""


def with_job(summary: RunSummary | None, thread_id: str, job: JobState | None) -> RunSummary | None:
    """A run as every door lists it: what its checkpoints say (`summary`, None when it has
    none yet), unless its latest job in the worker queue says more (`job`).

    The one place a run's checkpoints and its job meet. A finished run's own record wins
    (a late duplicate job does nothing to it), as does a checkpoint written after the job
    failed (the run was continued since, by hand); otherwise the job's state is the run's:
    queued and retrying runs wait (``queued``), running and stalled ones are ``running``,
    and a failed job makes a ``failed`` run, its error in the job — it can be continued
    from its last checkpoint (`thinkgraph resume`, or a new answer to its pause).
    """
    if job is None:
        return summary
    status = _JOB_STATUS[job.state]
    if summary is None:
        return RunSummary(thread_id=thread_id, status=status, job=job, updated_at=job.at)
    if summary.status in ("done", "failed") or summary.replay is not None:
        return summary
    later = summary.updated_at is not None and job.at is not None and summary.updated_at > job.at
    if job.state == "failed" and later:
        return summary
    return summary.model_copy(update={"status": status, "job": job})


def newest_first(summary: RunSummary) -> float:
    """A sort key of runs, the most recently updated first (unknown times last)."""
    at = summary.updated_at
    return -at.timestamp() if at is not None else 0.0


@dataclass(frozen=True, slots=True)
class RunCount:
    """How many runs a store holds in each state (`RunReader.count`)."""

    by_status: dict[RunStatus, int]
    """Runs read, by status (every status present, 0 when none)."""
    unread: int
    """Threads past the bound of the count, not read (so not counted by status)."""

    @property
    def read(self) -> int:
        return sum(self.by_status.values())
