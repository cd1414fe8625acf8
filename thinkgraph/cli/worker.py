"""`thinkgraph worker` and `thinkgraph submit`: runs on a PostgreSQL job queue.

Workers are processes that take jobs from a queue and advance the runs they name; any
number of them share one PostgreSQL store. `submit` queues a new run, and `approve`,
`reject`, `respond`, `decide` and `resume` take `--enqueue` to hand the continuation of a
paused run to the workers instead of running it in the shell.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import typer

from thinkgraph.cli._app import (
    app,
    default_store,
    fail,
    guarded,
    import_spec,
    load_breakpoints,
    load_tools,
    load_validators,
    log_options,
)
from thinkgraph.cli._options import (
    AgentOptions,
    LogFormatOpt,
    LogLevelOpt,
    QueueOpt,
    StoreOpt,
    with_options,
)
from thinkgraph.cli._runs import make_model, new_graph
from thinkgraph.types import StepLimits

_PANEL = "Scale out"


def load_agent(spec: str) -> Any:
    """The Agent named by module:attr: an Agent, or a function that returns one."""
    from thinkgraph.agent import Agent

    value = import_spec("--agent", spec, "myapp.agents:analyst")
    if not isinstance(value, Agent) and callable(value):
        try:
            value = value()
        except TypeError as exc:
            fail(f"--agent {spec!r}: calling it with no arguments failed ({exc})")
    if not isinstance(value, Agent):
        fail(f"--agent {spec!r} is a {type(value).__name__}, not an Agent or a function making one")
    return value


def agent_from_options(options: AgentOptions, store: str) -> tuple[Any, str]:
    """The agent a command's options name, and its store URL.

    Either `--agent module:attr` (an Agent or a function making one; `--store` then names
    the queue's database if the agent's store is not a URL), or `--tools` with `--model`
    or `--script` (and `--graph`, else the graph of a langgraph.json here), on `--store`.
    A worker refuses a job for a run recorded with another graph (see
    `thinkgraph.worker.ThreadRunner`).
    """
    from thinkgraph.agent import Agent

    o = options
    if o.agent_spec is not None and (
        o.tools or o.mcp or o.model or o.script or o.graph or o.validator or o.breakpoint
    ):
        fail(
            "--agent brings its own tools, model and graph; leave out --tools, --mcp, --model, "
            "--script, --graph, --validator and --breakpoint"
        )
    if o.agent_spec is not None:
        chosen = load_agent(o.agent_spec)
        return chosen, store or chosen.store_url or ""
    url = store or default_store()
    address = new_graph(o.graph)
    loaded = load_tools(o.tools, o.mcp)
    limits = StepLimits(max_steps=o.max_steps)
    chosen = make_model(o.model, o.api_base, o.script)
    made = Agent(
        chosen, loaded, limits=limits, store=url, graph=address,
        validators=load_validators(o.validator), breakpoints=load_breakpoints(o.breakpoint),
    )  # fmt: skip
    return made, url


def _postgres(store: str) -> str:
    from thinkgraph.storage import is_postgres_url

    if not is_postgres_url(store):
        fail(
            f"--store {store or '(none)'}: workers share runs through PostgreSQL; pass "
            "--store postgresql://user@host/db (or set THINKGRAPH_STORE)"
        )
    from thinkgraph.storage.urls import split_pool_size

    try:
        split_pool_size(store)  # before the worker says it serves
    except ValueError as exc:
        fail(str(exc))
    return store


@app.command(rich_help_panel=_PANEL)
@with_options(AgentOptions)
def worker(
    store: StoreOpt = "",
    queue: QueueOpt = "thinkgraph",
    name: Annotated[str | None, typer.Option(help="The worker's name in logs.")] = None,
    heartbeat: Annotated[
        float, typer.Option(min=0.1, help="Seconds between the worker's heartbeats.")
    ] = 10.0,
    stalled_after: Annotated[
        float,
        typer.Option(min=0.5, help="Seconds of silence after which a worker counts as dead."),
    ] = 30.0,
    shutdown_timeout: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="Once stopped, seconds the runs in flight may take; then they are handed back "
            "at their last checkpoint for another worker (default: wait for them; a second "
            "signal hands them back at once).",
        ),
    ] = None,
    once: Annotated[
        bool, typer.Option("--once", help="Stop when the queue is empty instead of waiting.")
    ] = False,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            "-c",
            min=1,
            help="Runs this worker advances at once (they wait on models and tools side by "
            "side; one thread's jobs still run one at a time).",
        ),
    ] = 10,
    log_level: LogLevelOpt = "info",
    log_format: LogFormatOpt = "text",
    metrics_port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Serve /healthz, /readyz and /metrics on this port."),
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="The address of --metrics-port (loopback unless changed).")
    ] = "127.0.0.1",
    *,
    agent: AgentOptions,
) -> None:
    """Take jobs from a queue and advance their runs until stopped (Ctrl+C, SIGTERM).

    Start as many as the load needs, on any machines that reach the PostgreSQL store. A
    paused run holds no worker; a killed worker's job is picked up by another. Stopped, a
    worker lets its runs finish (or hands them back after --shutdown-timeout); a second
    Ctrl+C or SIGTERM hands them back at once.
    """
    from thinkgraph.errors import ConfigError
    from thinkgraph.views.logs import configure_logging, startup_line
    from thinkgraph.worker import run_worker
    from thinkgraph.worker.runner import check_worker_options

    level, fmt = log_options(log_level, log_format)
    try:  # before anything loads: the same check as run_worker's
        check_worker_options(
            concurrency=concurrency,
            heartbeat_s=heartbeat,
            stalled_after_s=stalled_after,
            shutdown_timeout_s=shutdown_timeout,
        )
    except ConfigError as exc:
        fail(str(exc))
    if agent.agent_spec is None:
        _postgres(store)
    chosen, url = agent_from_options(agent, store)
    _postgres(url)
    configure_logging(level, fmt)  # every line masked: a job's arguments as sizes
    probes = None if metrics_port is None else _probes(metrics_host, metrics_port)
    started = f"worker serving queue {queue!r}, up to {concurrency} runs at once (Ctrl+C stops)"
    typer.echo(startup_line(started, fmt), err=True)

    def go() -> None:
        with chosen:
            run_worker(
                chosen,
                queue=queue,
                url=url,
                name=name,
                heartbeat_s=heartbeat,
                stalled_after_s=stalled_after,
                shutdown_timeout_s=shutdown_timeout,
                concurrency=concurrency,
                wait=not once,
                metrics=probes,
            )

    guarded(go)


def _probes(host: str, port: int) -> Any:
    """The bound socket of --metrics-port, said where it is; a fault is one line."""
    from thinkgraph import metrics
    from thinkgraph.errors import ConfigError
    from thinkgraph.worker.health import address_of, listen

    if not metrics.available():
        fail("--metrics-port needs prometheus-client: pip install 'thinkgraph[worker]'")
    try:
        listening = listen(host, port)
    except ConfigError as exc:
        fail(str(exc))
    typer.echo(f"metrics on {address_of(listening)}/metrics (and /healthz, /readyz)", err=True)
    return listening


@app.command(rich_help_panel=_PANEL)
def submit(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    store: StoreOpt = "",
    queue: QueueOpt = "thinkgraph",
    thread: Annotated[str | None, typer.Option("--thread", "-t", help="Thread id.")] = None,
) -> None:
    """Queue a task for the workers and print its thread id; `thinkgraph show` follows it."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel
    from thinkgraph.worker import RunQueue

    url = _postgres(store)
    thread_id = thread or uuid.uuid4().hex[:12]

    def go() -> None:
        with Agent(ScriptedModel([]), store=url) as agent, RunQueue(agent, queue) as runs:
            job = runs.submit(task, thread_id)
        typer.echo(f"queued job {job.job_id}: thread {job.thread_id} on queue {job.queue}")

    guarded(go)


def enqueue_resume(
    agent: Any,
    thread: str,
    decisions: Any,
    queue: str,
    at: str | None = None,
    *,
    url: str | None = None,
) -> None:
    """Queue the continuation of `thread` for the workers, after the usual checks: on
    `queue`, or ("") on the run's own (`RunQueue.resume`); `at`: the paused checkpoint the
    answer was given for; `url`: the queue's database, when the agent was given a saver."""
    from thinkgraph.worker import RunQueue

    with RunQueue(agent, url=url) as runs:
        job = runs.resume(thread, decisions, queue=queue or None, at=at)
    typer.echo(f"queued job {job.job_id}: a worker on queue {job.queue} continues thread {thread}")
