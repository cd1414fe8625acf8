"""Prune old checkpoints of finished runs, on SQLite and PostgreSQL, without breaking any.

LangGraph's savers leave `prune` unimplemented for graphs with a `DeltaChannel`, and the
obvious "keep the latest checkpoints" breaks them: our chain is delta-stored, so a
checkpoint's chain is its nearest snapshot plus every chain write of its ancestors since.
Deleting those ancestors would make the kept checkpoints load an empty or truncated chain,
silently. Here, before any ancestor goes, the oldest checkpoint kept on each line stores
its delta channels whole (a snapshot, written the way the store writes its own) and
becomes the root of what is kept; only then are the older checkpoints, their writes,
their blobs and their snapshot listings deleted, in one transaction.

What is never touched:

- a run that is not finished (paused, running, interrupted, or anything the caller's
  `status` does not call done or failed): prune works only where nothing will continue;
- a run someone holds the lease of (`storage.lease`): a real prune takes each run's lease
  for its own work, and skips a run whose lease is held;
- a run that moved on between being read and being pruned (its latest checkpoint
  changed): skipped, to be looked at again next time.

The worker queue's finished jobs (PostgreSQL, in the store's database) go with the run
they advanced when it is deleted whole, and by age with ``jobs_older_than``; a job that
waits or runs, or one of a run that is not finished, is never deleted.

This module reads a run's status from no driver: the caller passes `status` (thread id ->
"done", "failed", "paused", ...), as the run reader decides it.

Example:
    >>> from thinkgraph.storage import open_checkpointer
    >>> parse_duration("30d").days
    30
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from thinkgraph._langgraph import DeltaSnapshot
from thinkgraph.errors import StorageError, ThinkgraphError, ThreadBusyError
from thinkgraph.state import append_steps
from thinkgraph.storage.lease import is_held, thread_lease
from thinkgraph.storage.sqlite import CompactSqliteSaver
from thinkgraph.storage.tables import Counts, Tables, Trim, tables_of

__all__ = [
    "DURATION_HELP",
    "FINISHED",
    "MAX_AGE",
    "PruneError",
    "PruneReport",
    "Retention",
    "RunPruned",
    "parse_duration",
    "prune",
    "run_sizes",
    "vacuum",
]

FINISHED = frozenset({"done", "failed"})
"""The statuses of a run nothing will continue: the only runs prune touches."""

DURATION_HELP = "takes a number and a unit, e.g. 30d or 12h"
"""What a duration looks like, for the one-line error of a bad one."""

MAX_AGE = timedelta(days=36500)
"""The longest duration prune counts back (100 years): no run is older, and a longer one
could not be counted back from today (a date before the year 1 cannot be written)."""
_TOO_LONG = "is too long: the longest accepted is 36500d (100 years)"

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.IGNORECASE)


class PruneError(ThinkgraphError, ValueError):
    """Prune was asked for something it cannot do (no option, a bad duration)."""


def parse_duration(text: str, *, name: str = "a duration") -> timedelta:
    """A duration written as a number and a unit: s, m, h, d or w (``30d``, ``12h``).

    Args:
        text: the duration as written.
        name: what the error calls it ("--older-than", say).

    Raises:
        PruneError: `text` is not such a duration, or one longer than `MAX_AGE`.
    """
    found = _DURATION.fullmatch(text)
    if found is None:
        raise PruneError(f"{name} {DURATION_HELP}, not {text!r}")
    seconds = float(found[1]) * _UNITS[found[2].lower()]
    # Checked before a timedelta is made of it: a longer one overflows (or is infinite).
    if not seconds <= MAX_AGE.total_seconds():
        raise PruneError(f"{name} {text.strip()} {_TOO_LONG}")
    return timedelta(seconds=seconds)


def _check_age(age: timedelta) -> timedelta:
    """`age` itself, when prune can count it back from today.

    Raises:
        PruneError: `age` is negative or longer than `MAX_AGE`.
    """
    if age < timedelta(0):
        raise PruneError(f"a duration cannot be negative, not {age}")
    if age > MAX_AGE:
        raise PruneError(f"a duration of {age} {_TOO_LONG}")
    return age


Action = Literal["delete", "trim", "skip"]


@dataclass(frozen=True)
class RunPruned:
    """What prune did (or, in a dry run, would do) to one run."""

    thread_id: str
    action: Action
    """delete: the whole run; trim: its older checkpoints; skip: nothing (see `reason`)."""
    reason: str = ""
    """Why a run was skipped: its status, "leased", "moved on"."""
    checkpoints: int = 0
    writes: int = 0
    blobs: int = 0
    """PostgreSQL's per-version values (SQLite keeps them inside the checkpoint)."""
    size: int = 0
    """Bytes of stored values deleted (the rows' payloads; indexes not counted)."""
    kept: int = 0
    """Checkpoints left to the run."""
    jobs: int = 0
    """Its finished jobs in the worker queue, deleted with a run deleted whole."""


@dataclass
class PruneReport:
    """The runs prune touched or skipped, and what it deleted (would delete, if dry)."""

    dry_run: bool
    runs: list[RunPruned] = field(default_factory=list)
    old_jobs: int | None = None
    """Finished jobs deleted for their age (`jobs_older_than`); None when not asked, or
    when the store's database holds no job queue."""

    @property
    def touched(self) -> list[RunPruned]:
        """The runs deleted or trimmed."""
        return [r for r in self.runs if r.action != "skip"]

    @property
    def skipped(self) -> list[RunPruned]:
        """The runs left alone, each with its reason."""
        return [r for r in self.runs if r.action == "skip"]

    @property
    def checkpoints(self) -> int:
        """Checkpoints deleted in all."""
        return sum(r.checkpoints for r in self.runs)

    @property
    def writes(self) -> int:
        """Writes deleted in all."""
        return sum(r.writes for r in self.runs)

    @property
    def blobs(self) -> int:
        """Blobs deleted in all (PostgreSQL)."""
        return sum(r.blobs for r in self.runs)

    @property
    def size(self) -> int:
        """Bytes of stored values deleted in all."""
        return sum(r.size for r in self.runs)

    @property
    def jobs(self) -> int:
        """Jobs of the worker queue deleted in all: those of the runs deleted, and those
        deleted for their age."""
        return sum(r.jobs for r in self.runs) + (self.old_jobs or 0)


class Retention(BaseModel):
    """How much of its finished runs an `Agent` keeps, applied each time a run ends.

    Example:
        >>> Retention(keep_last=20, older_than="30d").older_than.days
        30
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    keep_last: int | None = Field(default=None, ge=1)
    """Trim each run that ends done or failed to its N newest checkpoints (they still
    read, fork, resume and replay)."""
    older_than: timedelta | str | None = None
    """Delete whole finished runs last updated longer ago than this ("30d", "12h" or a
    timedelta), looked for at most once per `sweep_every` in a store."""
    sweep_every: timedelta = timedelta(minutes=10)
    """How often the store is looked through for runs `older_than`."""

    def __init__(self, **data: Any) -> None:
        # One line naming the option, as every other mistake in setting up an agent is, not
        # pydantic's report of several lines.
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise PruneError(f"Retention: {_first_error(exc)}") from None

    @field_validator("older_than", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("older_than", mode="after")
    @classmethod
    def _in_range(cls, value: Any) -> Any:
        # Here, not when a run ends: a duration that cannot be counted back from today
        # would fail every run as it ended, after storing it as done.
        return value if value is None else _check_age(value)

    @model_validator(mode="after")
    def _something(self) -> Retention:
        if self.keep_last is None and self.older_than is None:
            raise ValueError("Retention keeps everything: pass keep_last=N or older_than='30d'")
        return self

    def apply(
        self,
        saver: BaseCheckpointSaver[Any],
        thread_id: str,
        status: Callable[[str], str | None],
        *,
        now: datetime | None = None,
    ) -> PruneReport:
        """Prune after the run on `thread_id` ended: trim it, and now and then sweep the
        store for old finished runs. A store that cannot be pruned (memory://) is left.

        Args:
            saver: the store the run is in.
            thread_id: the run that just ended.
            status: a run's status by thread id, as the run reader decides it.
            now: the time `older_than` counts back from (default: now).
        """
        report = PruneReport(dry_run=False)
        try:
            tables_of(saver)
        except StorageError:
            return report
        if self.keep_last is not None:
            report.runs += prune(
                saver, status=status, keep_last=self.keep_last, threads=[thread_id]
            ).runs
        age = self.older_than
        if isinstance(age, str):  # never, once validated: kept for the type checker
            age = parse_duration(age)
        if age is not None and _sweep_due(saver, self.sweep_every):
            report.runs += prune(saver, status=status, older_than=age, now=now).runs
        return report


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


_SWEPT: weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], float] = weakref.WeakKeyDictionary()
_SWEEPING = threading.Lock()


def _sweep_due(saver: BaseCheckpointSaver[Any], every: timedelta) -> bool:
    """Whether the store behind `saver` is due a look for old runs (and note that it had
    one): one listing query per `every`, not one per run that ends."""
    with _SWEEPING:
        last = _SWEPT.get(saver)
        at = time.monotonic()
        if last is not None and at - last < every.total_seconds():
            return False
        _SWEPT[saver] = at
        return True


def default_delta_channels() -> dict[str, DeltaChannel[Any]]:
    """The delta channels of a thinkgraph run: the chain (see `state.AgentState`)."""
    return {"chain": DeltaChannel(append_steps)}


def prune(
    saver: BaseCheckpointSaver[Any],
    *,
    status: Callable[[str], str | None],
    keep_last: int | None = None,
    older_than: timedelta | None = None,
    thread: str | None = None,
    threads: Iterable[str] | None = None,
    dry_run: bool = False,
    delta_channels: Mapping[str, DeltaChannel[Any]] | None = None,
    now: datetime | None = None,
    jobs_older_than: timedelta | None = None,
) -> PruneReport:
    """Delete old checkpoints, writes and blobs of finished runs, and finished jobs.

    A run deleted whole takes its finished jobs in the worker queue along (Procrastinate's
    rows, with their events, in the store's database) and thinkgraph's row of it.

    Args:
        saver: a SQLite or PostgreSQL store from `open_checkpointer`.
        status: a run's status by thread id, as the run reader decides it; only "done"
            and "failed" runs are touched.
        keep_last: keep this many of each run's newest checkpoints (at least 1); the
            oldest kept one then stores the chain whole, so every kept checkpoint still
            reads, resumes, forks and replays. Without it, whole runs are deleted.
        older_than: only runs last updated longer ago than this.
        thread: this one run, deleted whole (every row of it, in every table).
        threads: look only at these runs (default: every run in the store).
        dry_run: count what would be deleted; delete nothing, take no lease.
        delta_channels: the graph's delta channels by name (default: the chain); a run
            that has another one is never trimmed, only deleted whole.
        now: the time `older_than` and `jobs_older_than` count back from (default: now).
        jobs_older_than: also delete the worker queue's finished jobs (succeeded, failed,
            cancelled, aborted) last touched longer ago than this, as Procrastinate's own
            cleanup ages them (their latest event), and thinkgraph's rows of the runs left
            with no job; never a job that waits or runs, nor one of a run whose `status`
            is not finished (paused, running). Of `thread` or `threads` only, if given.

    Returns:
        The report: each run deleted, trimmed or skipped (with why), the jobs deleted,
        and the totals.

    Raises:
        PruneError: no option says what to prune, `keep_last` is below 1, or `older_than`
            or `jobs_older_than` is negative or longer than `MAX_AGE`.
        StorageError: the store is not SQLite or PostgreSQL, or cannot be written.
    """
    runs = keep_last is not None or older_than is not None or thread is not None
    if not runs and jobs_older_than is None:
        raise PruneError("nothing to prune: pass keep_last, older_than, thread or jobs_older_than")
    if keep_last is not None and keep_last < 1:
        raise PruneError(
            f"keep_last must be at least 1, not {keep_last}; to delete whole runs, leave it out"
        )
    if older_than is not None:
        _check_age(older_than)
    if jobs_older_than is not None:
        _check_age(jobs_older_than)
    tables = tables_of(saver)
    scope = [thread] if thread is not None else None if threads is None else list(threads)
    report = PruneReport(dry_run=dry_run)
    if runs:
        _prune_runs(
            report, saver, tables, status, keep_last, older_than, thread, scope,
            delta_channels, now,
        )  # fmt: skip
    if jobs_older_than is not None:
        cutoff = (now or datetime.now(UTC)) - jobs_older_than
        report.old_jobs = _prune_jobs(tables, status, cutoff, scope, dry_run=dry_run)
    return report


def _prune_jobs(
    tables: Tables,
    status: Callable[[str], str | None],
    cutoff: datetime,
    threads: Sequence[str] | None,
    *,
    dry_run: bool,
) -> int | None:
    """Delete the finished jobs last touched before `cutoff`, but those of the runs not
    finished; None when the store's database has no job queue."""
    found = tables.old_job_threads(cutoff, threads)
    if found is None:
        return None
    # A thread with no checkpoint (None) exists only as its jobs: they go.
    kept = [t for t in found if (s := status(t)) is not None and s not in FINISHED]
    return tables.delete_old_jobs(cutoff, kept=kept, threads=threads, dry_run=dry_run)


def _prune_runs(
    report: PruneReport,
    saver: BaseCheckpointSaver[Any],
    tables: Tables,
    status: Callable[[str], str | None],
    keep_last: int | None,
    older_than: timedelta | None,
    thread: str | None,
    threads: Sequence[str] | None,
    delta_channels: Mapping[str, DeltaChannel[Any]] | None,
    now: datetime | None,
) -> None:
    """Prune the runs the options name, noting each in `report` (see `prune`)."""
    dry_run = report.dry_run
    specs = dict(delta_channels) if delta_channels is not None else default_delta_channels()
    cutoff = (now or datetime.now(UTC)) - older_than if older_than is not None else None
    if threads is not None:
        candidates = list(dict.fromkeys(threads))
    else:
        # One query names every run and its latest checkpoint, whose id tells its age: a
        # run too recent is passed over without another query.
        candidates = [t for t, latest in tables.latest() if _old_enough(latest, cutoff)]
    for thread_id in candidates:
        lineage = tables.lineage(thread_id)
        if not lineage:
            if thread is not None:
                report.runs.append(RunPruned(thread_id, "skip", reason="no such run"))
            continue
        latest = lineage[-1][0]
        if thread is None and not _old_enough(latest, cutoff):
            continue
        trim = None if thread is not None or keep_last is None else plan_trim(lineage, keep_last)
        if thread is None and keep_last is not None and trim is None:
            continue  # no more checkpoints than it keeps
        found = status(thread_id)
        if found not in FINISHED:
            report.runs.append(RunPruned(thread_id, "skip", reason=str(found or "unknown")))
            continue
        report.runs.append(
            _prune_one(saver, tables, specs, thread_id, latest, trim, dry_run=dry_run)
        )


def _old_enough(checkpoint_id: str, cutoff: datetime | None) -> bool:
    if cutoff is None:
        return True
    written = checkpoint_time(checkpoint_id)
    return written is not None and written <= cutoff


def _prune_one(
    saver: BaseCheckpointSaver[Any],
    tables: Tables,
    specs: Mapping[str, DeltaChannel[Any]],
    thread_id: str,
    latest: str,
    trim: Trim | None,
    *,
    dry_run: bool,
) -> RunPruned:
    if dry_run:
        if is_held(saver, thread_id):
            return RunPruned(thread_id, "skip", reason="leased")
        counts = (
            tables.count_thread(thread_id) if trim is None else tables.count_trim(thread_id, trim)
        )
        return _pruned(thread_id, trim, counts)
    try:
        # nested=False: this process's own run of the thread (an Agent call around us)
        # must not pass as the holder.
        with thread_lease(saver, thread_id, nested=False):
            lineage = tables.lineage(thread_id)
            if not lineage or lineage[-1][0] != latest:
                return RunPruned(thread_id, "skip", reason="moved on")
            if trim is None:
                return _pruned(thread_id, None, tables.delete_thread(thread_id))
            snapshots = {}
            for root in trim.roots:
                values = _whole_values(saver, specs, thread_id, root)
                if values is None:
                    return RunPruned(
                        thread_id, "skip", reason="has a delta channel prune cannot rebuild"
                    )
                snapshots[root] = values
            return _pruned(thread_id, trim, tables.trim(thread_id, trim, snapshots))
    except ThreadBusyError:
        return RunPruned(thread_id, "skip", reason="leased")


def _pruned(thread_id: str, trim: Trim | None, counts: Counts) -> RunPruned:
    return RunPruned(
        thread_id,
        "delete" if trim is None else "trim",
        checkpoints=counts.checkpoints,
        writes=counts.writes,
        blobs=counts.blobs,
        size=counts.size,
        kept=0 if trim is None else len(trim.kept),
        jobs=counts.jobs,
    )


def plan_trim(lineage: Sequence[tuple[str, str | None]], keep_last: int) -> Trim | None:
    """Which checkpoints a trim keeps and deletes; None when it deletes none.

    Args:
        lineage: (checkpoint id, parent id) of the run's checkpoints, oldest first.
        keep_last: how many of the newest to keep.
    """
    if len(lineage) <= keep_last:
        return None
    kept = [cid for cid, _ in lineage[-keep_last:]]
    keep = set(kept)
    roots = [
        cid for cid, parent in lineage[-keep_last:] if parent is not None and parent not in keep
    ]
    deleted = [cid for cid, _ in lineage[:-keep_last]]
    return Trim(kept=kept, deleted=deleted, roots=roots)


def _whole_values(
    saver: BaseCheckpointSaver[Any],
    specs: Mapping[str, DeltaChannel[Any]],
    thread_id: str,
    checkpoint_id: str,
) -> dict[str, Any] | None:
    """The values of the delta channels a checkpoint does not store whole, rebuilt from its
    ancestors as LangGraph would; None if it has a delta channel not in `specs`."""
    config: RunnableConfig = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }
    found = saver.get_tuple(config)
    if found is None:
        return {}
    counters = (found.metadata or {}).get("counters_since_delta_snapshot") or {}
    if isinstance(counters, Mapping) and set(counters) - set(specs):
        return None
    checkpoint = found.checkpoint
    stored = checkpoint.get("channel_values") or {}
    wanted = [
        ch
        for ch in specs
        if ch in checkpoint.get("channel_versions", {})
        and not isinstance(stored.get(ch), DeltaSnapshot)
    ]
    if not wanted:
        return {}
    history = saver.get_delta_channel_history(config=found.config, channels=wanted)
    values: dict[str, Any] = {}
    for ch in wanted:
        entry = history.get(ch, {"writes": []})
        channel = specs[ch].from_checkpoint(entry.get("seed"))
        channel.replay_writes(entry["writes"])
        values[ch] = channel.value
    return values


def checkpoint_time(checkpoint_id: str) -> datetime | None:
    """When a checkpoint was written, read from its id (LangGraph's ids are UUIDv6,
    time-ordered); None for an id that is not one."""
    try:
        value = int(checkpoint_id.replace("-", ""), 16)
    except ValueError:
        return None
    if (value >> 76) & 0xF != 6:
        return None
    ticks = ((value >> 80) << 12) | ((value >> 64) & 0x0FFF)  # 100 ns since 1582-10-15
    seconds = (ticks - 0x01B21DD213814000) / 10_000_000
    return datetime.fromtimestamp(seconds, UTC)


def run_sizes(saver: BaseCheckpointSaver[Any]) -> dict[str, int]:
    """Each run's stored size in bytes (checkpoints, writes and blobs), in one query.

    Empty for a store that is neither SQLite nor PostgreSQL.
    """
    try:
        tables = tables_of(saver)
    except StorageError:
        return {}
    return tables.sizes()


def vacuum(saver: BaseCheckpointSaver[Any]) -> bool:
    """Give the space a prune freed back to the file system (SQLite's ``VACUUM``).

    PostgreSQL reuses freed space by itself (autovacuum); run ``VACUUM FULL`` there to
    shrink the files. Returns whether the file was shrunk (not when another process
    is using it: run it again later).
    """
    if not isinstance(saver, CompactSqliteSaver):
        return False
    with saver.lock:
        saver.conn.commit()
        try:
            saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            saver.conn.execute("VACUUM")
            saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.OperationalError as exc:
            # Another process reads or writes the file now: the rows are gone all the
            # same, and their space is reused; shrinking the file can wait.
            if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (
                sqlite3.SQLITE_BUSY,
                sqlite3.SQLITE_LOCKED,
            ):
                return False
            raise
    return True
