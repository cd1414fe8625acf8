"""What a worker's job lines say: no job argument in clear, a busy retry or a job cancelled
by its worker's stop in one line.

Procrastinate writes each job's arguments (a task, a person's decisions) into its lines
and a traceback with every failed attempt. `protect_job_logs` puts the views' masking
(`thinkgraph.views.logs.MaskSecrets`) on each logger that writes a job, so whoever set
the handlers up, a job appears by its id, thread and sizes only; an attempt refused
because another process holds the thread (`ThreadBusyError`, retried a second later) is
one warning line, not a traceback; and so is a job cancelled because its worker stopped
(handed back, see `thinkgraph.worker.drain`), in one line at its own level.
"""

from __future__ import annotations

import asyncio
import logging

from thinkgraph.errors import ThreadBusyError
from thinkgraph.views.logs import protect_loggers

__all__ = ["protect_job_logs"]

JOB_LOGGERS = ("procrastinate.worker", "procrastinate.jobs", "thinkgraph.worker")
"""The loggers that write a job: Procrastinate's worker (its outcome lines) and deferrer,
and ours; plus the worker's own child logger, named after the worker."""


class BusyInOneLine(logging.Filter):
    """A job attempt that failed on `ThreadBusyError`: a warning, the reason, no traceback;
    one cancelled (its worker stopped): its line, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, asyncio.CancelledError):
            record.exc_info = record.exc_text = None
        if isinstance(error, ThreadBusyError):
            record.msg = f"{record.getMessage().rstrip(', ')} - {error}"
            record.args = None
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def protect_job_logs(worker_name: str) -> None:
    """Mask job arguments and shorten busy retries in every line a worker writes of a job."""
    names = (*JOB_LOGGERS, f"procrastinate.worker.{worker_name}")
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, BusyInOneLine) for f in logger.filters):
            logger.addFilter(BusyInOneLine())  # before the mask: it reads the exception
    protect_loggers(*names)
