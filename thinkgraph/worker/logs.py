"""What a worker's job lines say: no job argument in clear, a busy retry or a job cancelled
by its worker's stop in one line.

Procrastinate writes each job's arguments (a task, a person's decisions) into its lines
and a traceback with every failed attempt. `protect_job_logs` puts the views' masking
(`thinkgraph.views.logs.MaskSecrets`) on each logger that writes a job, so whoever set
the handlers up, a job appears by its id, thread and sizes only; an attempt refused
because another process holds the thread (`ThreadBusyError`, retried a second later) is
one warning line, not a traceback; and so is a job cancelled because its worker stopped
(handed back, see `thinkgraph.worker.drain`), in one line at its own level. A fault of the
database connection, which the worker rides out (it starts its loop again, and the job is
retried), is one warning line with psycopg's reason, wherever Procrastinate logs it.
"""

from __future__ import annotations

import asyncio
import logging

from thinkgraph.errors import ThreadBusyError
from thinkgraph.views.logs import protect_loggers
from thinkgraph.worker.queue import is_connection_fault

__all__ = ["fault_text", "protect_job_logs"]

JOB_LOGGERS = ("procrastinate.worker", "procrastinate.jobs", "thinkgraph.worker")
"""The loggers that write a job: Procrastinate's worker (its outcome lines) and deferrer,
and ours; plus the worker's own child logger, named after the worker."""

FAULT_LOGGERS = ("procrastinate.utils", "procrastinate.manager", "procrastinate.app")
"""Procrastinate's loggers that report a lost database (its listener and side tasks)."""


class BusyInOneLine(logging.Filter):
    """A job attempt that failed on `ThreadBusyError`: a warning, the reason, no traceback;
    one cancelled (its worker stopped): its line, no traceback; a database connection
    fault: a warning with its first line, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, asyncio.CancelledError):
            record.exc_info = record.exc_text = None
        if isinstance(error, ThreadBusyError):
            record.msg = f"{record.getMessage().rstrip(', ')} - {error}"
            record.args = None
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        elif error is not None and is_connection_fault(error):
            reason = fault_text(error)
            record.msg = f"{record.getMessage().rstrip(', ')} - database connection: {reason}"
            record.args = None
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def fault_text(error: BaseException) -> str:
    """The first line of psycopg's own words for a fault, found under the wrappers that
    carry it (Procrastinate's "Database error.")."""
    current: BaseException | None = error
    while current is not None:
        text = str(current).strip()
        if text and "Database error" not in text:
            return text.splitlines()[0]
        current = current.__cause__ or current.__context__
    return type(error).__name__


def protect_job_logs(worker_name: str) -> None:
    """Mask job arguments and shorten busy retries in every line a worker writes of a job."""
    names = (*JOB_LOGGERS, f"procrastinate.worker.{worker_name}")
    for name in (*names, *FAULT_LOGGERS):
        logger = logging.getLogger(name)
        if not any(isinstance(f, BusyInOneLine) for f in logger.filters):
            logger.addFilter(BusyInOneLine())  # before the mask: it reads the exception
    protect_loggers(*names)
