"""Health an operator scrapes: liveness, readiness and Prometheus metrics, for `serve` and workers.

    /healthz   200 ``ok``: the process answers (its event loop runs).
    /readyz    200 ``ok`` when the store reads; else 503 ``not ready: <reason>`` (one line).
    /metrics   Prometheus text: this process's counters (`thinkgraph.metrics`), and what
               the store and the queue hold, read at scrape time:

        thinkgraph_runs{status}               stored runs by state (the newest
                                              `COUNTED_RUNS` of `runs.reader`, read
                                              as `thinkgraph runs` reads them)
        thinkgraph_runs_uncounted             older threads past that bound
        thinkgraph_queue_jobs{queue, status}  thinkgraph's jobs in Procrastinate's table
                                              (todo, doing, failed), PostgreSQL only

Both reads are cached for `cache_s` seconds, so a scraper every few seconds costs one read
of each per interval, however many scrape. `serve` answers these routes itself
(`thinkgraph.server.app`); a worker answers them on its `--metrics-port` with
`serve_health`, a small HTTP/1.1 server on the worker's own loop (a busy or stuck loop
shows as a probe that times out).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from thinkgraph import metrics
from thinkgraph.errors import ConfigError
from thinkgraph.runs.reader import RUN_STATUSES
from thinkgraph.storage import is_postgres_url
from thinkgraph.worker.queue import ADVANCE_TASK

if TYPE_CHECKING:
    from thinkgraph.agent import Agent

__all__ = ["Health", "address_of", "listen", "serve_health"]

logger = logging.getLogger("thinkgraph.health")

PROBE_TIMEOUT_S = 5.0
"""How long a readiness probe waits for the store before it says not ready."""

PROBE_THREAD = "thinkgraph-readyz"
"""The thread a readiness probe looks up (a read: nothing is written)."""

QUEUE_STATES = ("todo", "doing", "failed")
"""The job states `thinkgraph_queue_jobs` reports (always, 0 when none)."""

_CREDENTIALS = re.compile(r"(\w+://)[^/@\s]+@")


def _one_line(exc: BaseException) -> str:
    """An error as one line, without credentials a URL in it may carry."""
    text = str(exc).strip().splitlines()
    first = text[0].strip() if text else type(exc).__name__
    return _CREDENTIALS.sub(r"\1***@", first)


class Health:
    """What /readyz and the store's part of /metrics read, for one agent (and its queue).

    Args:
        agent: its store is probed and counted.
        queue_url: the PostgreSQL database of the job queue, when there is one (the
            agent's store when it is PostgreSQL).
        queues: queues reported even while they hold no job (the ones served here).
        cache_s: how long a count of runs and jobs is reused.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        queue_url: str | None = None,
        queues: tuple[str, ...] = (),
        cache_s: float = 10.0,
    ) -> None:
        self.agent = agent
        store_url = agent.store_url
        self.queue_url = queue_url or (
            store_url if store_url and is_postgres_url(store_url) else None
        )
        self.queues = queues
        self.cache_s = cache_s
        self._probe: asyncio.Future[str | None] | None = None
        self._last_reason: str | None = None
        self._counting = threading.Lock()
        self._counted: tuple[float, dict[str, float], list[tuple[str, str, float]]] | None = None
        self._registry: Any = None

    # -- readiness ------------------------------------------------------------------------

    async def not_ready(self) -> str | None:
        """Why the process is not ready (the store does not read), or None when it is.

        Probes that come while one is under way share its answer: a slow store is asked
        once, not once per probe.
        """
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self._read_store())
        return await asyncio.shield(self._probe)

    async def _read_store(self) -> str | None:
        reason: str | None = None
        try:
            await asyncio.wait_for(self.agent.acheckpoint_id(PROBE_THREAD), PROBE_TIMEOUT_S)
        except TimeoutError:
            reason = f"the store did not answer in {PROBE_TIMEOUT_S:g} s"
        except Exception as exc:  # any fault of the store: what a probe reports
            reason = f"the store cannot be read: {_one_line(exc)}"
        if reason != self._last_reason:  # logged when it changes, not at every probe
            if reason is None:
                logger.warning("ready again: the store reads")
            else:
                logger.warning("not ready: %s", reason)
            self._last_reason = reason
        return reason

    # -- metrics --------------------------------------------------------------------------

    def exposition(self) -> bytes:
        """The Prometheus text of this process (blocking: the store may be read).

        Raises:
            RuntimeError: prometheus-client is not installed.
        """
        if self._registry is None and metrics.available():
            from prometheus_client import CollectorRegistry

            registry = CollectorRegistry(auto_describe=False)
            registry.register(_StoreCollector(self))
            self._registry = registry
        return metrics.exposition(*([self._registry] if self._registry is not None else []))

    def counts(self) -> tuple[dict[str, float], list[tuple[str, str, float]]]:
        """Runs by state (and "uncounted"), and (queue, state, jobs); cached `cache_s`."""
        with self._counting:
            now = time.monotonic()
            if self._counted is None or now - self._counted[0] >= self.cache_s:
                self._counted = (now, self._count_runs(), self._count_jobs())
            return self._counted[1], self._counted[2]

    def _count_runs(self) -> dict[str, float]:
        try:
            counted = self.agent.reader.count()
        except Exception as exc:  # a scrape reports what it can; /readyz says why
            logger.warning("cannot count the runs for /metrics: %s", _one_line(exc))
            return {}
        found: dict[str, float] = {status: n for status, n in counted.by_status.items()}
        return {**found, "uncounted": counted.unread}

    def _count_jobs(self) -> list[tuple[str, str, float]]:
        if self.queue_url is None:
            return []
        try:
            found = job_counts(self.queue_url)
        except Exception as exc:
            logger.warning("cannot count the queue's jobs for /metrics: %s", _one_line(exc))
            return []
        queues = sorted({*self.queues, *(queue for queue, _ in found)})
        return [(q, s, float(found.get((q, s), 0))) for q in queues for s in QUEUE_STATES]


class _StoreCollector:
    """The gauges of what the store and the queue hold, read when scraped."""

    def __init__(self, health: Health) -> None:
        self.health = health

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        runs, jobs = self.health.counts()
        if runs:
            by_state = GaugeMetricFamily(
                "thinkgraph_runs", "Stored runs by state (the newest ones).", labels=["status"]
            )
            for status in RUN_STATUSES:
                by_state.add_metric([status], runs.get(status, 0))
            yield by_state
            yield GaugeMetricFamily(
                "thinkgraph_runs_uncounted",
                "Older threads past the bound of the count.",
                value=runs.get("uncounted", 0),
            )
        queue = GaugeMetricFamily(
            "thinkgraph_queue_jobs",
            "thinkgraph's jobs by queue and state.",
            labels=["queue", "status"],
        )
        for name, state, count in jobs:
            queue.add_metric([name, state], count)
        yield queue


def job_counts(url: str) -> dict[tuple[str, str], int]:
    """thinkgraph's jobs in Procrastinate's table, by (queue, status); empty without one.

    One short connection (a timeout of a few seconds when the server does not answer).
    """
    import psycopg

    from thinkgraph.storage.urls import split_pool_size

    conninfo, _ = split_pool_size(url)  # the store's pool size is not libpq's
    with psycopg.connect(
        conninfo, connect_timeout=3, autocommit=True, fallback_application_name="thinkgraph"
    ) as conn:
        table = conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
        if table is None or table[0] is None:
            return {}
        rows = conn.execute(
            "SELECT queue_name, status::text, count(*) FROM procrastinate_jobs "
            "WHERE task_name = %s AND status IN ('todo', 'doing', 'failed') GROUP BY 1, 2",
            (ADVANCE_TASK,),
        ).fetchall()
    return {(str(queue), str(status)): int(count) for queue, status, count in rows}


# -- the worker's small server --------------------------------------------------------------

_MAX_HEAD = 8192
_HEAD_TIMEOUT_S = 10.0
_REASONS = {
    200: "OK",
    404: "Not Found",
    405: "Method Not Allowed",
    501: "Not Implemented",
    503: "Service Unavailable",
}


async def serve_health(health: Health, listening: socket.socket) -> asyncio.Server:
    """Answer /healthz, /readyz and /metrics on `listening` (a bound socket), on this loop."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_TIMEOUT_S)
            if len(head) > _MAX_HEAD:
                return
            method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            status, body, media = await _route(health, method, path)
            writer.write(
                f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {media}\r\n"
                f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n"
                "Connection: close\r\n\r\n".encode()
                + (b"" if method == "HEAD" else body)
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # a client that sent no request, or left: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return await asyncio.start_server(answer, sock=listening, limit=_MAX_HEAD)


_TEXT = "text/plain; charset=utf-8"


async def _route(health: Health, method: str, path: str) -> tuple[int, bytes, str]:
    if path not in ("/healthz", "/readyz", "/metrics"):
        return 404, b"not found: try /healthz, /readyz or /metrics\n", _TEXT
    if method not in ("GET", "HEAD"):
        return 405, b"use GET\n", _TEXT
    if path == "/healthz":
        return 200, b"ok", _TEXT
    if path == "/readyz":
        reason = await health.not_ready()
        return (
            (200, b"ok", _TEXT) if reason is None else (503, f"not ready: {reason}".encode(), _TEXT)
        )
    if not metrics.available():
        return 501, b"metrics need prometheus-client: pip install 'thinkgraph[worker]'\n", _TEXT
    return 200, await asyncio.to_thread(health.exposition), metrics.CONTENT_TYPE


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (0: a free port) for `serve_health`.

    Raises:
        ConfigError: the address cannot be bound (in use, not this machine's).
    """
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot serve metrics on {host} port {port} ({exc.strerror or exc}); pick "
            "another port (--metrics-port) or address (--metrics-host)"
        ) from None
    return sock


def address_of(listening: socket.socket) -> str:
    """``http://host:port`` of a bound socket."""
    host, port = listening.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
