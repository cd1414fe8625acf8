"""What the worker queue holds for each run, read from the store's own database.

Workers take their jobs from Procrastinate's tables, which live beside the checkpoints (a
queue's database is its store's). A run handed to the workers is therefore visible before
it has a checkpoint, and a job that failed is visible after it: `KnowsJobs` reads, for the
runs whose latest job has not ended well, that job's state (`JobState`), and the run
reader lays it over what the checkpoints say (`thinkgraph.runs.reader.with_job`).

Procrastinate keeps no error text, and a paused run holds no job, so workers keep one row
per run of their own (`RUN_JOBS_DDL`): the latest job a worker took for it, that job's
queue — where a worker listens, and where a later answer goes by default — and the error
it failed with. The worker writes it (`thinkgraph.worker.queue`); readers only read it.

Every read is one query on a pooled connection of the store; a database without the job
queue's tables holds no jobs.

Finished jobs stay in Procrastinate's table until pruned (`thinkgraph prune`,
`thinkgraph.storage.prune`): a run deleted whole takes its finished jobs and its row along
(`delete_run_jobs`), and ``jobs_older_than`` deletes finished jobs by age
(`delete_old_jobs`), aged as Procrastinate's own ``remove_old_jobs`` ages them. That
builtin task is not used: it cannot spare the jobs of runs that are paused or running
(a failed answer's job is what shows the run as failed), nor say how many it deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from thinkgraph.result import JobState

__all__ = [
    "ADVANCE_TASK",
    "FINISHED_JOB_STATES",
    "HAND_BACK_SQL",
    "RECORD_ERROR_SQL",
    "RECORD_TAKEN_SQL",
    "RUN_JOBS_DDL",
    "RUN_QUEUE_SQL",
    "STALLED_AFTER_S",
    "count_run_jobs",
    "delete_old_jobs",
    "delete_run_jobs",
    "job_state",
    "jobs_sql",
    "old_job_threads",
    "queue_tables",
]

ADVANCE_TASK = "thinkgraph.advance"
"""The one Procrastinate task of thinkgraph's jobs: advance a thread (start it, or continue it)."""

STALLED_AFTER_S = 30.0
"""A job whose worker has not sent a heartbeat for this long reads as stalled (the workers'
default ``--stalled-after``; a worker of its own then takes the job again)."""

RUN_JOBS_DDL = """
CREATE TABLE IF NOT EXISTS thinkgraph_run_jobs (
    thread_id TEXT PRIMARY KEY,
    queue_name TEXT NOT NULL,
    job_id BIGINT NOT NULL,
    error TEXT,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""
"""One row per run a worker advanced: its latest job, that job's queue and error."""

RECORD_TAKEN_SQL = """
INSERT INTO thinkgraph_run_jobs (thread_id, queue_name, job_id)
VALUES (%(thread_id)s, %(queue)s, %(job_id)s)
ON CONFLICT (thread_id) DO UPDATE
SET queue_name = EXCLUDED.queue_name, job_id = EXCLUDED.job_id, error = NULL, updated_at = now()
"""
"""A worker took job `job_id` of `thread_id` from `queue` (Procrastinate's named style)."""

RECORD_ERROR_SQL = """
INSERT INTO thinkgraph_run_jobs (thread_id, queue_name, job_id, error)
VALUES (%(thread_id)s, %(queue)s, %(job_id)s, %(error)s)
ON CONFLICT (thread_id) DO UPDATE
SET queue_name = EXCLUDED.queue_name, job_id = EXCLUDED.job_id, error = EXCLUDED.error,
    updated_at = now()
"""
"""Job `job_id` of `thread_id` failed with `error` (it may be tried again)."""

HAND_BACK_SQL = """
UPDATE procrastinate_jobs SET attempts = attempts - 1
WHERE id = %(job_id)s AND status = 'doing'
"""
"""Job `job_id`, running, is handed back by its stopping worker: Procrastinate's retry,
which follows, counts one attempt more, and this takes it off beforehand, so hand-backs
use up none of the retries the job has for real faults."""

RUN_QUEUE_SQL = "SELECT queue_name FROM thinkgraph_run_jobs WHERE thread_id = %(thread_id)s"
"""The queue whose worker last took a job of `thread_id`."""

FINISHED_JOB_STATES = ("succeeded", "failed", "cancelled", "aborted")
"""Procrastinate's states of a job that will not run again (unless retried by hand)."""

_FINISHED = "j.status IN ('succeeded', 'failed', 'cancelled', 'aborted')"

_OLD_JOBS = f"""
FROM procrastinate_jobs j
WHERE j.task_name = %(task)s AND {_FINISHED}
  AND (%(threads)s::text[] IS NULL OR j.lock = ANY(%(threads)s::text[]))
  -- Its age as Procrastinate's own cleanup (`remove_old_jobs`) counts it: its latest event.
  AND (SELECT max(e.at) FROM procrastinate_events e WHERE e.job_id = j.id) < %(cutoff)s
"""

_OLD_ROWS = """
FROM thinkgraph_run_jobs r
WHERE r.updated_at < %(cutoff)s
  AND (%(threads)s::text[] IS NULL OR r.thread_id = ANY(%(threads)s::text[]))
"""

_NO_JOB_LEFT = (
    "NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.lock = r.thread_id "
    "AND j.task_name = %(task)s)"
)


def queue_tables(cur: Any) -> tuple[bool, bool]:
    """Whether the database of `cur` holds Procrastinate's jobs, and thinkgraph's rows of
    the runs workers advanced."""
    tables = cur.execute(_TABLES_SQL).fetchone()
    return bool(tables["queue"]), bool(tables["errors"])


def count_run_jobs(cur: Any, thread_id: str) -> int:
    """The finished jobs of `thread_id` (those `delete_run_jobs` deletes)."""
    if not queue_tables(cur)[0]:
        return 0
    row = cur.execute(
        f"SELECT count(*) AS n FROM procrastinate_jobs j WHERE j.lock = %(thread)s "
        f"AND j.task_name = %(task)s AND {_FINISHED}",
        {"thread": thread_id, "task": ADVANCE_TASK},
    ).fetchone()
    return int(row["n"])


def delete_run_jobs(cur: Any, thread_id: str) -> int:
    """Delete the finished jobs of `thread_id` (their events go with them) and thinkgraph's
    row of it, in the caller's transaction; a job that waits or runs stays. Returns how
    many jobs went."""
    queue, rows = queue_tables(cur)
    if rows:
        cur.execute("DELETE FROM thinkgraph_run_jobs WHERE thread_id = %s", (thread_id,))
    if not queue:
        return 0
    gone = cur.execute(
        f"DELETE FROM procrastinate_jobs j WHERE j.lock = %(thread)s "
        f"AND j.task_name = %(task)s AND {_FINISHED} RETURNING j.id",
        {"thread": thread_id, "task": ADVANCE_TASK},
    ).fetchall()
    return len(gone)


def old_job_threads(cur: Any, cutoff: datetime, threads: Sequence[str] | None) -> list[str] | None:
    """The runs (of `threads`, if given) with a finished job, or a row of thinkgraph's,
    last touched before `cutoff`; None when the database has no job queue."""
    queue, rows = queue_tables(cur)
    if not queue:
        return None
    arguments = {"task": ADVANCE_TASK, "cutoff": cutoff, "threads": _listed(threads)}
    found = {
        str(r["thread_id"])
        for r in cur.execute(f"SELECT j.lock AS thread_id {_OLD_JOBS}", arguments)
    }
    if rows:
        found |= {
            str(r["thread_id"]) for r in cur.execute(f"SELECT r.thread_id {_OLD_ROWS}", arguments)
        }
    return sorted(found)


def delete_old_jobs(
    cur: Any,
    cutoff: datetime,
    *,
    kept: Sequence[str],
    threads: Sequence[str] | None,
    dry_run: bool = False,
) -> int:
    """Delete thinkgraph's finished jobs last touched before `cutoff` (of `threads`, if
    given), except those of the runs in `kept`, then thinkgraph's rows of the runs left
    with no job, as old; in the caller's transaction. A job that waits or runs is never
    deleted. Returns how many jobs went (would go, if `dry_run`)."""
    queue, rows = queue_tables(cur)
    if not queue:
        return 0
    arguments = {
        "task": ADVANCE_TASK,
        "cutoff": cutoff,
        "threads": _listed(threads),
        "kept": list(kept),
    }
    spared = " AND NOT (j.lock = ANY(%(kept)s::text[]))"
    if dry_run:
        row = cur.execute(f"SELECT count(*) AS n {_OLD_JOBS}{spared}", arguments).fetchone()
        return int(row["n"])
    gone = cur.execute(f"DELETE {_OLD_JOBS}{spared} RETURNING j.id", arguments).fetchall()
    if rows:
        cur.execute(
            f"DELETE {_OLD_ROWS} AND NOT (r.thread_id = ANY(%(kept)s::text[])) AND {_NO_JOB_LEFT}",
            arguments,
        )
    return len(gone)


def _listed(threads: Sequence[str] | None) -> list[str] | None:
    return None if threads is None else list(threads)


_TABLES_SQL = (
    "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS queue, "
    "to_regclass('thinkgraph_run_jobs') IS NOT NULL AS errors"
)

_JOBS_SQL = """
SELECT latest.*, {error} AS error,
       extract(epoch FROM now() - w.last_heartbeat) AS silent_s,
       (SELECT max(e.at) FROM procrastinate_events e WHERE e.job_id = latest.id) AS at
FROM (
    SELECT DISTINCT ON (j.lock) j.lock AS thread_id, j.id, j.queue_name, j.status::text AS status,
           j.attempts, j.worker_id, (j.args ->> 'task') IS NOT NULL AS starts
    FROM procrastinate_jobs j
    WHERE j.task_name = %(task)s AND j.lock IN (
        -- Only the threads with a job not ended well: a table of finished jobs stays cheap.
        SELECT o.lock FROM procrastinate_jobs o
        WHERE o.task_name = %(task)s AND o.status IN ('todo', 'doing', 'failed')
          AND (%(threads)s::text[] IS NULL OR o.lock = ANY(%(threads)s::text[])))
    ORDER BY j.lock, j.id DESC
) latest
LEFT JOIN procrastinate_workers w ON w.id = latest.worker_id
{join}
WHERE latest.status IN ('todo', 'doing', 'failed')
"""


def jobs_sql(cur: Any, threads: Sequence[str] | None) -> dict[str, JobState]:
    """The state of the latest job of each run whose latest job is not finished or failed,
    through `cur` (a dict-row cursor on the store's database); of `threads` only, if given.

    A run whose latest job succeeded (or that never had one) is not in the answer: its
    checkpoints say where it stands.
    """
    queue, rows = queue_tables(cur)
    if not queue:
        return {}
    if rows:
        query = _JOBS_SQL.format(
            error="r.error",
            join="LEFT JOIN thinkgraph_run_jobs r "
            "ON r.thread_id = latest.thread_id AND r.job_id = latest.id",
        )
    else:  # no worker of this version ran here yet
        query = _JOBS_SQL.format(error="NULL::text", join="")
    arguments = {"task": ADVANCE_TASK, "threads": None if threads is None else list(threads)}
    rows = cur.execute(query, arguments).fetchall()
    return {str(row["thread_id"]): job_state(row) for row in rows}


def job_state(row: Mapping[str, Any]) -> JobState:
    """A job's row (Procrastinate's status and attempts, its worker's silence, the error a
    worker recorded) as the state a listing shows."""
    status, attempts = str(row["status"]), int(row["attempts"])
    error = str(row.get("error") or "")
    silent = row.get("silent_s")
    if status == "failed":
        state = "failed"
    elif status == "doing":
        # A worker that was pruned as dead leaves the job with no worker at all.
        gone = row.get("worker_id") is None or silent is None or float(silent) > STALLED_AFTER_S
        state = "stalled" if gone else "running"
    else:
        state = "retrying" if attempts > 0 else "queued"
    return JobState(
        job_id=int(row["id"]),
        queue=str(row["queue_name"]),
        action="start" if row.get("starts") else "resume",
        state=state,  # type: ignore[arg-type]
        attempt=attempts + (0 if status == "failed" else 1),
        error=error if state in ("failed", "retrying") else "",
        at=row.get("at"),
    )
