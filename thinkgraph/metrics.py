"""Prometheus metrics of this process: model calls, tool calls and worker jobs.

prometheus-client is optional (the ``server`` and ``worker`` extras bring it). Without it
every ``count_*`` here is a no-op that costs one check, and `exposition` says so. Like
`thinkgraph.tracing` it cuts across the layers: the model helper (`llm/call.py`), the
tool runner (`tools/runner.py`) and the worker's job call it, and it imports nothing of
thinkgraph. The metrics live in prometheus-client's default registry, so they sit beside
its process and Python collectors on one scrape::

    thinkgraph_model_calls_total{model, outcome}     ok or error
    thinkgraph_model_call_seconds{model}             histogram, retries and fallbacks included
    thinkgraph_tool_calls_total{tool, outcome}       ok, error, timeout or rejected
    thinkgraph_tool_call_seconds{tool}               histogram, every attempt included
    thinkgraph_jobs_total{outcome}                   a worker's jobs as they end: the run's
                                                     status (done, paused, failed, running),
                                                     busy (retried: another holds the
                                                     thread), handed_back (its worker
                                                     stopped: the job is queued again)
                                                     or error (the job failed)
    thinkgraph_job_seconds{outcome}                  histogram of the same
    thinkgraph_job_retries_total                     jobs started after an attempt
                                                     before (a retry, or a stalled
                                                     worker's job put back); a hand-back
                                                     is not an attempt
    thinkgraph_job_failures_total{error}             jobs that raised, by exception type

What the store and the queue hold (runs by state, queue depth) is read when scraped, by
the doors that serve `/metrics` (`thinkgraph.worker.health`).
"""

from __future__ import annotations

from typing import Any

try:
    import prometheus_client as _prom
except ImportError:  # the optional extra is not installed: metrics are off
    _prom = None  # type: ignore[assignment]

__all__ = [
    "CONTENT_TYPE",
    "available",
    "count_job_end",
    "count_job_start",
    "count_model_call",
    "count_tool_call",
    "exposition",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of the text exposition format."""

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)
"""Buckets from a cached tool call to a long run's job."""

_made: dict[str, Any] = {}


def available() -> bool:
    """Whether prometheus-client is installed (metrics are collected)."""
    return _prom is not None


def _metrics() -> dict[str, Any]:
    """The metric objects, made on first use in the default registry."""
    if _made or _prom is None:
        return _made
    counter, histogram = _prom.Counter, _prom.Histogram
    _made.update(
        model_calls=counter(
            "thinkgraph_model_calls", "Model calls, by model and outcome.", ["model", "outcome"]
        ),
        model_seconds=histogram(
            "thinkgraph_model_call_seconds", "Model call time.", ["model"], buckets=_SECONDS
        ),
        tool_calls=counter(
            "thinkgraph_tool_calls", "Tool calls, by tool and outcome.", ["tool", "outcome"]
        ),
        tool_seconds=histogram(
            "thinkgraph_tool_call_seconds", "Tool call time.", ["tool"], buckets=_SECONDS
        ),
        jobs=counter("thinkgraph_jobs", "Worker jobs that ended, by outcome.", ["outcome"]),
        job_seconds=histogram(
            "thinkgraph_job_seconds", "Worker job time, by outcome.", ["outcome"], buckets=_SECONDS
        ),
        retries=counter("thinkgraph_job_retries", "Worker jobs started again."),
        failures=counter("thinkgraph_job_failures", "Worker jobs that raised.", ["error"]),
    )
    return _made


def count_model_call(model: str, ok: bool, seconds: float) -> None:
    """Count one model call (`llm/call.py`, where every node's call passes)."""
    made = _metrics()
    if made:
        made["model_calls"].labels(model, "ok" if ok else "error").inc()
        made["model_seconds"].labels(model).observe(seconds)


def count_tool_call(tool: str, outcome: str, seconds: float) -> None:
    """Count one tool call that ran (`tools/runner.py`); `outcome` as its span has it."""
    made = _metrics()
    if made:
        made["tool_calls"].labels(tool, outcome).inc()
        made["tool_seconds"].labels(tool).observe(seconds)


def count_job_start(attempts: int) -> None:
    """A worker starts a job that has been tried `attempts` times before."""
    made = _metrics()
    if made:
        if attempts > 0:
            made["retries"].inc()
        made["jobs"].labels("done")  # the common outcome reads 0 before the first job ends


def count_job_end(outcome: str, seconds: float, error: BaseException | None = None) -> None:
    """A worker's job ended: with the run's status, "busy", "handed_back", or "error"
    (`error` raised)."""
    made = _metrics()
    if made:
        made["jobs"].labels(outcome).inc()
        made["job_seconds"].labels(outcome).observe(seconds)
        if error is not None:
            made["failures"].labels(type(error).__name__).inc()


def exposition(*more: Any) -> bytes:
    """This process's metrics in the text format, then those of the registries in `more`.

    Raises:
        RuntimeError: prometheus-client is not installed.
    """
    if _prom is None:
        raise RuntimeError("metrics need prometheus-client: pip install prometheus-client")
    _metrics()
    return b"".join(_prom.generate_latest(registry) for registry in (_prom.REGISTRY, *more))
