"""Scale-out: stateless workers that advance runs from a PostgreSQL job queue.

Runs live in the PostgreSQL checkpoint store; Procrastinate carries the jobs. Queue work
with `RunQueue` (or `thinkgraph submit`, `thinkgraph approve --enqueue`, …) and start as
many `run_worker` processes (`thinkgraph worker`) as the load needs. A paused run holds no
worker; a killed worker's job is retried by another and only the node in flight re-runs.

Needs the ``worker`` extra: ``pip install 'thinkgraph[worker]'``.
"""

from thinkgraph.worker.queue import DEFAULT_QUEUE, JobInfo, QueuedJob, RunQueue, open_jobs
from thinkgraph.worker.runner import ThreadRunner, run_worker

__all__ = [
    "DEFAULT_QUEUE",
    "JobInfo",
    "QueuedJob",
    "RunQueue",
    "ThreadRunner",
    "open_jobs",
    "run_worker",
]
