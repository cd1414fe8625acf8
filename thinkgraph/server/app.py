"""The HTTP surface: start, watch, approve and resume runs; a page that shows a run live.

    GET  /                          a page: start a task, list runs, watch one, answer it
    GET  /runs                      the runs in the store, newest first (RunSummary JSON),
                                    and the runs handed to workers that have no checkpoint
                                    yet; a run whose job waits, runs, stalled, is retried
                                    or failed says so (`job`); ?limit=N&offset=K for one
                                    page of them, with a `Link: <...>; rel="next"` header
                                    when more follow
    POST /runs                      {"task": "...", "thread_id"?: "..."}: start a run
    GET  /runs/{thread}             the run as `thinkgraph show --format json` prints it,
                                    with its `job` while that says more; a run with no
                                    checkpoint yet: status "queued" (or "failed", its job
                                    failed before the run began), job_id, queue, no steps
    GET  /runs/{thread}/diagram     the graph with the path the run took: SVG (Graphviz),
                                    or Mermaid text when Graphviz is not installed;
                                    ?format=mermaid or ?format=dot: that text, to export
    POST /runs/{thread}/resume      {"decisions"?: {call_id: {"action": ...}}, "answer"?: ...}
    GET  /runs/{thread}/events      server-sent events: `step` (each step as it is stored),
                                    `status` (when status, what it waits for, or the
                                    keys of the graph's own state change),
                                    `end` (the run is done or failed); a paused run's
                                    stream ends after its `status` (open it again once
                                    answered). Each `step` has its number as its id:
                                    `Last-Event-ID: N` (or ?after=N) sends only the steps
                                    after N, then the status; `: ping` comments keep it
                                    open (`ping_s`)
    GET  /healthz                   200 "ok": the process answers
    GET  /readyz                    200 "ok" when the store reads, else 503 "not ready:
                                    <reason>" (see `thinkgraph.worker.health`)
    GET  /metrics                   Prometheus text: runs by state, queue depth, jobs,
                                    model and tool calls (`thinkgraph.metrics`)
    GET  /studio …                  the studio: runs, the inbox, a run's graph, steps
                                    and checkpoints, and forms that answer it
                                    (`thinkgraph.server.studio`)

Runs started here go on in this process, many at once on its event loop (up to
`max_runs`, 429 past it; see `thinkgraph.server.runs`); with a `queue` they go to the
workers instead (`thinkgraph worker`). A stream of a run of this process is fed by the
run's own events; a run advanced by a worker is followed through its latest checkpoint.
Answers are checked before anything runs, with the errors `Agent.resume` raises, turned
into HTTP statuses: 404 no such run, 409 a conflict with the run's state, 422 an answer
that does not fit.

In front of the routes, one ASGI middleware per rule, outermost first: the Host must be
the server's own (`guards.HostGate`, 403); a change must come from its own page or a
program, as JSON (`guards.SameOriginGate`, 403/415); the token, when there is one
(`auth.TokenGate`, 401; /healthz and /readyz answer without it, as a Kubernetes probe
carries none and they tell nothing of the runs, while /metrics needs it); bodies are
bounded (`limits.BodyLimit`, 413); open event streams are capped (`limits.StreamCap`,
429). A task over `max_task_bytes` is refused here (413),
and a body nested more than `MAX_JSON_DEPTH` deep (400). Under all of it, `thinkgraph
serve` bounds the connections themselves (`limits.bounded_http_protocol`: a cap, and a
timeout and a size limit for request heads).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from thinkgraph import metrics
from thinkgraph.errors import (
    NotPausedError,
    ResumeValueError,
    RunNotStartedError,
    ThinkgraphError,
    ThreadBusyError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from thinkgraph.runs.listing import EVERY_RUN
from thinkgraph.server.auth import TokenGate
from thinkgraph.server.guards import HostGate, SameOriginGate, server_hosts
from thinkgraph.server.limits import BodyLimit, StreamCap
from thinkgraph.server.page import PAGE, PAGE_CSP
from thinkgraph.server.runs import MAX_RUNS, ServerRuns, TaskTooLongError, TooManyRunsError
from thinkgraph.server.studio import Csrf, lay_out_served_graph, studio_routes
from thinkgraph.views import run_summary_dict, to_json_dict
from thinkgraph.viz import GraphvizNotFoundError
from thinkgraph.worker import RunQueue
from thinkgraph.worker.health import Health

if TYPE_CHECKING:
    from thinkgraph.agent import Agent
    from thinkgraph.result import RunResult

__all__ = ["build_app"]

logger = logging.getLogger("thinkgraph.server")

_STATUS_OF_ERROR: list[tuple[type[ThinkgraphError], int]] = [
    (RunNotStartedError, 409),  # it exists, as a job: not yet
    (ThreadNotFoundError, 404),
    (ThreadExistsError, 409),
    (NotPausedError, 409),
    (ThreadBusyError, 409),
    (ResumeValueError, 422),
    (TooManyRunsError, 429),
    (TaskTooLongError, 413),
]


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _failure(exc: ThinkgraphError) -> JSONResponse:
    message = _in_http_words(str(exc))
    for kind, status in _STATUS_OF_ERROR:
        if isinstance(exc, kind):
            return _error(message, status)
    return _error(message, 400)


async def _accepted(handing_over: Awaitable[Any]) -> JSONResponse:
    """202 with what a run started or resumed in the background says, or the failure."""
    try:
        answer = await handing_over
    except ThinkgraphError as exc:
        return _failure(exc)
    return JSONResponse(answer, status_code=202)


def _resume_request(thread: str) -> str:
    return f"POST /runs/{quote(thread, safe='')}/resume"


_HTTP_WORDS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\bresume\((['\"])(?P<thread>.*?)\1\)"), lambda m: _resume_request(m["thread"])),
    (
        re.compile(r"^thread (['\"])(?P<thread>.*?)\1 already holds a run$"),
        lambda m: (
            f"{m[0]}; continue it with {_resume_request(m['thread'])}, or start the "
            "task with a new thread_id"
        ),
    ),
    (
        re.compile(r"(start this task|submit the task) on a new thread id"),
        lambda m: "start the task with a new thread_id",
    ),
    (
        re.compile(r"list runs with `thinkgraph runs` or check --store"),
        lambda m: "list runs with GET /runs",
    ),
]
"""Agent's errors name its Python calls and the CLI; over HTTP they name the requests."""


def _in_http_words(message: str) -> str:
    for pattern, words in _HTTP_WORDS:
        message = pattern.sub(words, message)
    return message


MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects a request body may have."""

_TOO_DEEP = (
    f"the body nests arrays or objects more than {MAX_JSON_DEPTH} deep; send a flatter JSON object"
)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except RecursionError:
        raise _BadRequest(_TOO_DEEP) from None
    except ValueError as exc:
        raise _BadRequest(f"the body is not JSON ({exc})") from None
    if _depth_over(body, MAX_JSON_DEPTH):
        raise _BadRequest(_TOO_DEEP)
    if not isinstance(body, dict):
        raise _BadRequest("the body must be a JSON object")
    return body


def _depth_over(value: Any, most: int) -> bool:
    """Whether `value` nests lists and dicts more than `most` deep (no recursion: a deep
    value must not exhaust the stack where it is measured)."""
    level: list[Any] = [value]
    for _ in range(most):
        level = [
            inner
            for outer in level
            if isinstance(outer, dict | list)
            for inner in (outer.values() if isinstance(outer, dict) else outer)
        ]
        if not level:
            return False
    return any(isinstance(item, dict | list) for item in level)


class _BadRequest(Exception):
    pass


def _count(request: Request, name: str, default: int, least: int, most: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = least - 1
    if not least <= value <= most:
        raise _BadRequest(f"{name} must be a whole number from {least} to {most}, not {raw!r}")
    return value


PROBES = ("/healthz", "/readyz")
"""Paths answered without the token (the Host check still applies)."""

_NO_STORE = {"Cache-Control": "no-store"}

MAX_PAGE = 1000
"""The most runs one page of GET /runs holds."""

MAX_BODY_BYTES = 1 << 20
"""The default limit of a request body: 1 MiB."""
MAX_TASK_BYTES = 64 << 10
"""The default limit of a task (UTF-8): 64 KiB."""
MAX_STREAMS = 32
"""The default number of event streams open at once."""
PING_S = 15.0
"""The default time between keep-alive comments of an event stream."""


def build_app(
    agent: Agent,
    *,
    queue: str | None = None,
    poll_s: float = 0.3,
    token: str | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    allow_hosts: Iterable[str] = (),
    max_body_bytes: int = MAX_BODY_BYTES,
    max_task_bytes: int = MAX_TASK_BYTES,
    max_streams: int = MAX_STREAMS,
    max_runs: int = MAX_RUNS,
    ping_s: float = PING_S,
) -> Starlette:
    """The HTTP app for `agent`'s runs.

    Args:
        agent: runs are started and resumed with it, and read from its store.
        queue: hand runs to the workers of this queue (PostgreSQL store) instead of
            running them in this process.
        poll_s: how often the event stream looks at the store for new steps.
        token: require this shared token on every request (see `thinkgraph.server.auth`).
        host: the address the server is bound to; requests must name it (or, bound to
            loopback or every interface, localhost, 127.0.0.1 or [::1]) as their Host.
        port: the port it is bound to, which the Host must carry; None: any port.
        allow_hosts: more names the Host may be (``name`` for any port, ``name:port``).
        max_body_bytes: the largest request body taken (413 past it).
        max_task_bytes: the largest task taken, in UTF-8 bytes (413 past it).
        max_streams: the most event streams open at once (429 past it).
        max_runs: the most runs this server advances at once (429 past it).
        ping_s: the time between keep-alive comments of an open event stream, so that
            proxies and browsers do not drop a quiet one; 0: none.
    """

    if ping_s < 0:
        raise ValueError(f"ping_s must be 0 (no keep-alives) or more seconds, not {ping_s}")
    _ = agent.graph  # open the store and compile now, not in two request threads at once
    jobs = None
    if queue is not None:
        jobs = RunQueue(agent, queue)

    def document(result: RunResult) -> dict[str, Any]:
        return to_json_dict(result, tools=list(agent.deps.tools))

    runs = ServerRuns(
        agent, jobs=jobs, poll_s=poll_s, max_runs=max_runs, document=document,
        max_task_bytes=max_task_bytes,
    )  # fmt: skip
    health = Health(agent, queue_url=None if jobs is None else jobs.url, queues=(queue or "",)[:1])

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE, headers={"Content-Security-Policy": PAGE_CSP})

    async def list_runs(request: Request) -> Response:

        paged = "limit" in request.query_params or "offset" in request.query_params
        try:
            limit = _count(request, "limit", MAX_PAGE, 1, MAX_PAGE)
            offset = _count(request, "offset", 0, 0, 1 << 31)
        except _BadRequest as exc:
            return _error(str(exc), 400)
        if not paged:
            every = await run_in_threadpool(agent.runs)
            return JSONResponse([run_summary_dict(r, tools=list(agent.deps.tools)) for r in every])
        # One query on the store's run index, whatever the number of runs.
        found = await run_in_threadpool(agent.reader.page, EVERY_RUN, offset, limit)
        headers = {}
        if found.has_next:
            headers["Link"] = f'</runs?limit={limit}&offset={offset + limit}>; rel="next"'
        body = [run_summary_dict(r.summary, tools=list(agent.deps.tools)) for r in found.runs]
        return JSONResponse(body, headers=headers)

    async def start_run(request: Request) -> Response:
        import uuid

        try:
            body = await _body(request)
        except _BadRequest as exc:
            return _error(str(exc), 400)
        task = body.get("task")
        thread = body.get("thread_id") or uuid.uuid4().hex[:12]
        if not isinstance(task, str) or not task.strip():
            return _error('give the task as {"task": "what the agent should do"}', 400)
        if not isinstance(thread, str):
            return _error("thread_id must be a string", 400)
        return await _accepted(runs.start(task, thread))

    async def show_run(request: Request) -> Response:
        thread = request.path_params["thread"]
        try:
            doc = await runs.document(thread)
        except ThreadNotFoundError as exc:
            waiting = await runs.queued_document(thread)
            return _failure(exc) if waiting is None else JSONResponse(waiting)
        except ThinkgraphError as exc:
            return _failure(exc)
        doc = {**doc, **await runs.job_fields(thread)}  # a failed or waiting job says more
        return JSONResponse(json.loads(json.dumps(doc, default=repr)))

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok", headers=_NO_STORE)

    async def readyz(request: Request) -> Response:
        reason = await health.not_ready()
        if reason is None:
            return PlainTextResponse("ok", headers=_NO_STORE)
        return PlainTextResponse(f"not ready: {reason}", status_code=503, headers=_NO_STORE)

    async def scrape(request: Request) -> Response:
        if not metrics.available():
            message = "metrics need prometheus-client: pip install 'thinkgraph[server]'"
            return _error(message, 501)
        body = await run_in_threadpool(health.exposition)
        return Response(body, media_type=metrics.CONTENT_TYPE, headers=_NO_STORE)

    async def diagram(request: Request) -> Response:

        thread = request.path_params["thread"]
        fmt = request.query_params.get("format", "svg")
        if fmt not in ("svg", "mermaid", "dot"):
            return _error(f"format must be svg, mermaid or dot, not {fmt!r}", 400)
        headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
        try:
            if fmt == "svg":
                with contextlib.suppress(GraphvizNotFoundError):
                    svg = await asyncio.to_thread(agent.draw, "svg", thread)
                    return Response(svg, media_type="image/svg+xml", headers=headers)
            # Graphviz is not installed: the Mermaid text, which the page shows as it is.
            text = await asyncio.to_thread(agent.draw, "dot" if fmt == "dot" else "mermaid", thread)
        except ThinkgraphError as exc:
            return _failure(exc)
        # Text, never a page: an export is read or saved, not rendered here.
        return Response(text, media_type="text/plain; charset=utf-8", headers=headers)

    async def resume_run(request: Request) -> Response:
        thread = request.path_params["thread"]
        try:
            body = await _body(request) if await request.body() else {}
        except _BadRequest as exc:
            return _error(str(exc), 400)
        if "decisions" in body and "answer" in body:
            return _error("give decisions (for approvals) or answer (for ask_human), not both", 400)
        answer = body.get("decisions", body.get("answer"))
        return await _accepted(runs.resume(thread, answer))

    async def events(request: Request) -> Response:
        thread = request.path_params["thread"]
        try:
            after = _last_step(request)
        except _BadRequest as exc:
            return _error(str(exc), 400)
        answering = await runs.answer_on_its_way(thread)
        first: dict[str, Any] | None
        try:
            first = await runs.document(thread, hold=True)
        except ThreadNotFoundError as exc:
            if not await runs.queued(thread):
                return _failure(exc)
            first = None  # its start waits for a worker: stream from when it begins
        except ThinkgraphError as exc:
            return _failure(exc)
        # The response stops the stream when the client goes (or the server stops).
        return EventSourceResponse(
            _stream(runs, thread, first, answering, after), ping=ping_s, sep="\n"
        )

    routes = [
        Route("/", page),
        Route("/runs", list_runs, methods=["GET"]),
        Route("/runs", start_run, methods=["POST"]),
        Route("/runs/{thread}", show_run, methods=["GET"]),
        Route("/runs/{thread}/diagram", diagram, methods=["GET"]),
        Route("/runs/{thread}/resume", resume_run, methods=["POST"]),
        Route("/runs/{thread}/events", events, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", scrape, methods=["GET"]),
        *studio_routes(agent, runs, Csrf()),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The studio's pages of the served graph's runs then pay no layout.
        laying_out = asyncio.create_task(asyncio.to_thread(lay_out_served_graph, agent))
        yield
        with contextlib.suppress(Exception):
            await laying_out
        # The runs in progress go on to their end or pause (the store must stay open until
        # then).
        await runs.close()

    middleware = [
        Middleware(HostGate, hosts=server_hosts(host, port, allow_hosts)),
        Middleware(SameOriginGate, form_paths=("/studio/",)),
        *([Middleware(TokenGate, token=token, open_paths=PROBES)] if token else []),
        Middleware(BodyLimit, max_bytes=max_body_bytes),
        Middleware(StreamCap, limit=max_streams),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.state.runs = runs
    return app


def _event(kind: str, data: Any, id: int | None = None) -> ServerSentEvent:
    text = json.dumps(data, ensure_ascii=False, default=repr)
    return ServerSentEvent(text, event=kind, id=None if id is None else str(id), sep="\n")


def _last_step(request: Request) -> int:
    """The number of the last step the client has: `Last-Event-ID` or ?after=; -1: none."""
    raw = request.headers.get("last-event-id", request.query_params.get("after"))
    if raw is None or not raw.strip():
        return -1
    try:
        return max(-1, int(raw))
    except ValueError:
        raise _BadRequest(f"after (Last-Event-ID) must be a step number, not {raw!r}") from None


def _status(doc: dict[str, Any]) -> dict[str, Any]:
    # With the run's own state (masked in the document), so a page shows it as it changes.
    keys = ("status", "stop_reason", "detail", "answer", "pending", "totals", "state")
    return {k: doc.get(k) for k in keys}


async def _stream(
    runs: ServerRuns,
    thread: str,
    doc: dict[str, Any] | None,
    answering: bool,
    after: int = -1,
) -> AsyncIterator[ServerSentEvent]:
    """Steps as they are stored (those numbered over `after`), then the end.

    Fed by the thread's `Feed`: woken by the run's own events when this server runs it,
    by a look at its latest checkpoint every `poll_s` otherwise; only steps not sent yet
    go out. A paused run's stream ends once its status is sent, unless an answer to it was
    on its way before the run was read (`answering`): nothing changes until one comes.
    """
    sent = 0
    last: dict[str, Any] | None = None
    async with runs.watching(thread) as feed:
        seen = feed.version
        if doc is None:
            yield _event("status", {"status": "queued"})
        while doc is None:
            await feed.wait(seen, runs.poll_s)
            seen = feed.version
            doc = await runs.latest(thread, feed)
        while True:
            steps = doc["steps"]
            for step in steps[sent:]:
                if step["number"] > after:
                    yield _event("step", step, id=step["number"])
            sent = max(sent, len(steps))
            status = _status(doc)
            if status != last:
                yield _event("status", status)
                last = status
            if doc["status"] in ("done", "failed"):
                await runs.settled(thread)
                yield _event("end", status)
                return
            if doc["status"] == "paused" and not answering:
                await runs.settled(thread)
                return
            await feed.wait(seen, runs.poll_s)
            seen = feed.version
            # Asked before the read, so a pause read after an answer came is never taken
            # for one still waiting; asked only while paused (with a queue it is a query).
            paused = doc["status"] == "paused"
            answering = paused and await runs.answer_on_its_way(thread)
            latest = await runs.latest(thread, feed)
            doc = latest if latest is not None else doc
