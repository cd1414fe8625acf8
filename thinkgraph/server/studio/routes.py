"""The studio's routes: read with the agent's reader, answer through `ServerRuns`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from thinkgraph.errors import (
    NotPausedError,
    ResumeValueError,
    ThinkgraphError,
    ThreadBusyError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from thinkgraph.runs.forks import editable_steps
from thinkgraph.runs.listing import RunFilter, RunPage
from thinkgraph.server.runs import TaskTooLongError, TooManyRunsError
from thinkgraph.server.studio.csrf import COOKIE, FIELD, Csrf
from thinkgraph.server.studio.forms import answer_of, fork_of, tool_schemas
from thinkgraph.server.studio.html import (
    STUDIO_CSP,
    compare_url,
    esc,
    node_url,
    page,
    thread_url,
)
from thinkgraph.server.studio.live import LIVE_JS
from thinkgraph.server.studio.pages import (
    Filters,
    checkpoint_page,
    compare_page,
    fork_form,
    run_page,
    runs_page,
    steer_section,
    waits_for,
)
from thinkgraph.server.studio.replays import replay_of, replay_section, replay_shown
from thinkgraph.server.studio.usage import usage_by_node
from thinkgraph.state import ToolCallStep
from thinkgraph.views import Redactor, diff_runs, diff_to_text, run_summary_dict, to_json_dict
from thinkgraph.views._run import shown_state
from thinkgraph.views.redact import unmasked
from thinkgraph.views.visibility import tool_map
from thinkgraph.viz import overlay_classes, overlay_from_result, to_svg_layout
from thinkgraph.viz.diff import compare_paths, run_graph_model
from thinkgraph.viz.layout import layered_layout
from thinkgraph.viz.model import START
from thinkgraph.viz.render import run_model

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from thinkgraph.agent import Agent
    from thinkgraph.result import RunResult
    from thinkgraph.runs.reader import CheckpointInfo
    from thinkgraph.server.runs import ServerRuns

__all__ = ["studio_routes"]

PAGE_SIZE = 50
"""Runs on one page of the list."""
INBOX_SIZE = 100
"""The paused runs the inbox lists, newest first (it counts them all)."""

MAX_FORM_FIELDS = 200

Rows = list[dict[str, Any]]

_START_REFUSED: dict[type[ThinkgraphError], int] = {
    ThreadExistsError: 409,
    ThreadBusyError: 409,
    TooManyRunsError: 429,
    TaskTooLongError: 413,
}
"""The status of a start the server refused, by its error (400 for any other)."""


def _html(body: str, status: int = 200, set_cookie: str | None = None) -> HTMLResponse:
    response = HTMLResponse(
        body,
        status_code=status,
        headers={
            "Content-Security-Policy": STUDIO_CSP,
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
        },
    )
    if set_cookie is not None:
        response.set_cookie(COOKIE, set_cookie, httponly=True, samesite="strict")
    return response


def _problem(message: str, status: int) -> HTMLResponse:
    return _html(page("Refused", f'<p class="error" role="alert">{esc(message)}</p>'), status)


def _refusal(exc: ThinkgraphError) -> HTMLResponse:
    """A run that cannot be read: 404 when there is none, else 400, in the error's words."""
    return _problem(str(exc), 404 if isinstance(exc, ThreadNotFoundError) else 400)


def steps_link(thread: str, names: Iterable[str]) -> Callable[[str], str | None]:
    """A drawn node's link (`to_svg_layout`'s `node_href`): the run's page showing that
    node's steps, for the graph's nodes `names` (START and END link nowhere)."""
    linked = set(names)

    def href(name: str) -> str | None:
        return node_url(thread, name) if name in linked else None

    return href


def lay_out_served_graph(agent: Agent) -> None:
    """Lay out the graph `agent` serves, so the first page of one of its runs pays no layout
    (a 150-node graph's takes about half a second; layouts are kept by the graph's shape,
    `thinkgraph.viz.layout.layered_layout`). A server calls it once, in the background, as it
    starts."""
    model, _ = run_model(
        agent.graph, agent.deps, limits=agent.limits, breakpoints=agent.breakpoints
    )
    layered_layout(model)


@dataclass(frozen=True)
class Point:
    """A checkpoint of a run, as `studio_routes` reads it for its page and for a fork."""

    snapshot: StateSnapshot
    there: RunResult
    """The run as it stood there, unmasked."""
    state: Mapping[str, Any]
    """The graph's own state keys there, unmasked."""
    info: dict[str, Any]
    """Its id, the node it followed, its step and when it was written."""
    doc: dict[str, Any]
    """The run's document there, masked, with its own state keys as shown."""
    steps: list[dict[str, Any]]
    """The steps up to there, masked as the whole run's view masks them."""
    editable: dict[int, str]
    """The steps a fork from there may edit, with the field of each (`editable_steps`)."""


def real_args(edits: dict[int, dict[str, Any]], there: RunResult) -> dict[int, dict[str, Any]]:
    """Step edits with each call's arguments left as shown masked given back from the call
    (`unmasked`): the form never held them."""
    calls = {s.number: s.call.args for s in there.chain if isinstance(s, ToolCallStep)}
    return {
        number: {**fields, "args": unmasked(fields["args"], calls.get(number))}
        if "args" in fields
        else fields
        for number, fields in edits.items()
    }


def studio_routes(agent: Agent, runs: ServerRuns, csrf: Csrf) -> list[Route]:
    """The studio's routes over `agent`'s store, answering through `runs`."""

    tools = list(agent.deps.tools)

    async def listing(request: Request) -> Response:
        filters = Filters(request.query_params, PAGE_SIZE)
        redactor = Redactor([], tool_map(tools), mask_unknown=True)
        graph = {"": None, "ours": ""}.get(filters.graph, filters.graph)
        where = RunFilter(status=filters.status or None, graph=graph, search=filters.q)  # type: ignore[arg-type]

        def rows(found: RunPage) -> Rows:
            """The runs as the page shows them, each task masked as every view masks it
            (the listing stored it masked; masked again here with this agent's tools)."""
            return [
                {**run_summary_dict(r.summary, tools=tools), "task": redactor.text(r.task)}
                for r in found.runs
            ]

        def read() -> tuple[Rows, Rows, int, list[str], bool]:
            # A page and the inbox are each one query on the store's run index: fast
            # whatever the number of runs (`RunReader.page`).
            shown = agent.reader.page(where, filters.offset, PAGE_SIZE)
            waiting = agent.reader.page(RunFilter(status="paused"), 0, INBOX_SIZE)
            paused = agent.reader.count().by_status["paused"]
            graphs = [g or "ours" for g in agent.reader.graphs()]
            return rows(shown), rows(waiting), paused, graphs, shown.has_next

        shown, waiting, paused, graphs, has_next = await run_in_threadpool(read)
        value, new = csrf.cookie(request)
        body = runs_page(
            shown, waiting, filters, graphs, has_next, token=csrf.token(value), waiting_total=paused
        )
        return _html(body, set_cookie=value if new else None)

    async def one_run(request: Request, notice: str = "", status: int = 200) -> Response:
        thread = request.path_params["thread"]
        try:
            result = await agent.aresult(thread)
        except ThinkgraphError as exc:
            return _refusal(exc)

        def drawn() -> tuple[str, list[str], list[dict[str, Any]], str | None, dict[str, Any]]:
            model, overlay = run_model(
                agent.graph, agent.deps, limits=agent.limits,
                breakpoints=agent.breakpoints, run=agent.reader.overlay(thread),
            )  # fmt: skip
            points = [
                {"checkpoint_id": h.checkpoint_id, "node": h.node, "step": h.step}
                for h in agent.history(thread)
            ]
            names = [str(n) for n in model.nodes if not str(n).startswith("__")]
            lineage = lineage_of(thread, result)
            # The nodes whose checkpoints other runs were forked from.
            node_at = {p["checkpoint_id"]: p["node"] for p in points}
            forked = {str(node_at[at]) for _, at in lineage["forks"] if at in node_at}
            svg = to_svg_layout(
                model, overlay, node_href=steps_link(thread, names), fork_points=forked
            )
            return svg, names, points, agent.checkpoint_id(thread), lineage

        svg, nodes, history, at, lineage = await run_in_threadpool(drawn)
        doc = to_json_dict(result, tools=tools)
        value, new = csrf.cookie(request)
        body = run_page(
            doc, svg, nodes, history, token=csrf.token(value), at=at or "",
            schemas=tool_schemas(agent.deps.tools), usage=usage_by_node(result.chain),
            lineage=lineage, node=request.query_params.get("node", "")[:200], notice=notice,
        )  # fmt: skip
        return _html(body, status, set_cookie=value if new else None)

    def lineage_of(thread: str, result: RunResult) -> dict[str, Any]:
        """Where the run came from and the runs forked from it or replaying it (`run_page`'s
        `lineage`): three small reads, none of another run's state."""
        return {
            "fork_of": agent.reader.fork_of(thread),
            "replay_of": replay_of(result),
            "forks": agent.reader.forks(thread),
            "replays": agent.reader.replays(thread),
        }

    async def steer(request: Request) -> Response:
        """The run page's steer section alone, as the page renders it (`steer_section`):
        what the page's script puts in place when the run pauses or moves on."""
        thread = request.path_params["thread"]
        try:
            result = await agent.aresult(thread)
        except ThinkgraphError as exc:
            return _refusal(exc)
        at = await agent.acheckpoint_id(thread)
        value, new = csrf.cookie(request)
        section = steer_section(
            to_json_dict(result, tools=tools), token=csrf.token(value), at=at or "",
            schemas=tool_schemas(agent.deps.tools),
        )  # fmt: skip
        return _html(section, set_cookie=value if new else None)

    def point_at(thread: str, wanted: str) -> Point:
        """A checkpoint of a run as its page shows it and a fork from it reads it: the
        run's document there and its steps up to there, masked by what the whole run
        holds (a secret the run learned later is masked here too), and what a fork from
        it may edit."""
        snapshot, there = agent.reader.at_checkpoint(thread, wanted)
        whole = agent.reader.result(thread)
        point = next((p for p in agent.history(thread) if p.checkpoint_id == wanted), None)
        if point is None:
            raise ThreadNotFoundError(f"thread {thread!r} has no checkpoint {wanted!r}")
        redactor = Redactor(whole.chain, tool_map(tools), mask_unknown=True)
        doc = to_json_dict(there, tools=tools) | {"state": shown_state(point.state, redactor)}
        held = len(there.chain)
        steps = [s for s in to_json_dict(whole, tools=tools)["steps"] if int(s["number"]) < held]
        info = {
            "checkpoint_id": point.checkpoint_id,
            "node": point.node,
            "step": point.step,
            "at": point.at.isoformat() if point.at else "",
        }
        editable = editable_steps(snapshot.values, agent.deps) if snapshot.values else {}
        return Point(snapshot, there, point.state, info, doc, steps, editable)

    async def at_checkpoint(request: Request) -> Response:
        thread, wanted = request.path_params["thread"], request.path_params["checkpoint"]

        def read() -> tuple[Point, str]:
            """The checkpoint and the graph as the run stood there."""
            found = point_at(thread, wanted)
            model, overlay = run_model(
                agent.graph, agent.deps, limits=agent.limits,
                breakpoints=agent.breakpoints, run=(found.snapshot, found.there),
            )  # fmt: skip
            names = {str(n) for n in model.nodes if not str(n).startswith("__")}
            return found, to_svg_layout(model, overlay, node_href=steps_link(thread, names))

        try:
            found, svg = await run_in_threadpool(read)
        except ThinkgraphError as exc:
            return _refusal(exc)
        value, new = csrf.cookie(request)
        fork = fork_form(
            thread, found.info, found.steps, found.doc.get("state") or {}, found.editable,
            tool_schemas(agent.deps.tools), token=csrf.token(value),
        )  # fmt: skip
        body = checkpoint_page(thread, found.info, found.doc, svg, found.steps, fork=fork)
        return _html(body, set_cookie=value if new else None)

    async def answer(request: Request) -> Response:
        thread = request.path_params["thread"]
        form = await form_of(request)
        if isinstance(form, Response):
            return form
        try:
            given = answer_of(form, tool_schemas(agent.deps.tools))
            if form.get("action") in ("edit", "decide"):
                given = await kept_secrets(thread, given)
            await runs.resume(thread, given, at=form.get("at") or None)
        except ThreadNotFoundError as exc:
            return _problem(str(exc), 404)
        except (NotPausedError, ThreadBusyError) as exc:
            return await one_run(request, notice=str(exc), status=409)
        except ResumeValueError as exc:
            return await one_run(request, notice=str(exc), status=422)
        except ThinkgraphError as exc:
            return await one_run(request, notice=str(exc), status=400)
        return RedirectResponse(thread_url(thread), status_code=303)

    async def kept_secrets(thread: str, given: dict[str, Any]) -> dict[str, Any]:
        """An edit's arguments with the values the page showed masked (and the person
        left as shown) given back from the waiting call: the form never held them."""
        waiting = {p.call_id: p.args for p in (await agent.aresult(thread)).pending}
        return {
            call: {**answer, "args": unmasked(answer["args"], waiting.get(call))}
            if answer.get("action") == "edit"
            else answer
            for call, answer in given.items()
        }

    async def form_of(request: Request) -> dict[str, str] | Response:
        """The request's form, once its CSRF token holds; else the refusal to send."""
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/x-www-form-urlencoded":
            return _problem("send the studio's form (application/x-www-form-urlencoded)", 415)
        pairs = parse_qsl((await request.body()).decode("utf-8", "replace"))
        if len(pairs) > MAX_FORM_FIELDS:
            return _problem("the form has too many fields", 413)
        form = dict(pairs)
        if not csrf.holds(request, form.get(FIELD, "")):
            return _problem(
                "this form is not from this server's studio page (or the page is older than "
                "the server); reload the page and send it again",
                403,
            )
        return form

    async def start(request: Request) -> Response:
        import uuid

        form = await form_of(request)
        if isinstance(form, Response):
            return form
        task = form.get("task", "").strip()
        thread = form.get("thread_id", "").strip() or uuid.uuid4().hex[:12]
        if not task:
            return _problem("write the task first", 400)
        try:
            await runs.start(task, thread)
        except ThinkgraphError as exc:
            return _problem(str(exc), _START_REFUSED.get(type(exc), 400))
        return RedirectResponse(thread_url(thread), status_code=303)

    async def fork(request: Request) -> Response:
        """Fork from a checkpoint with the form's edits, started here: answered at once,
        with the new run's page; an edit the fork refuses is 422, nothing forked."""
        thread = request.path_params["thread"]
        form = await form_of(request)
        if isinstance(form, Response):
            return form
        try:
            found = await run_in_threadpool(point_at, thread, form.get("checkpoint", ""))
            shown = {int(s["number"]): s for s in found.steps}
            schemas = tool_schemas(agent.deps.tools)
            edits, state = fork_of(form, shown, found.doc.get("state") or {}, schemas)
            forked = await runs.fork(
                thread, str(found.info["checkpoint_id"]), edit=real_args(edits, found.there),
                state={k: unmasked(v, found.state.get(k)) for k, v in state.items()} or None,
                new_thread=form.get("new_thread", "").strip() or None,
            )  # fmt: skip
        except ThreadNotFoundError as exc:
            return _problem(str(exc), 404)
        except (ThreadExistsError, ThreadBusyError) as exc:
            return _problem(str(exc), 409)
        except TooManyRunsError as exc:
            return _problem(str(exc), 429)
        except ThinkgraphError as exc:
            return _problem(str(exc), 422)
        return RedirectResponse(thread_url(forked), status_code=303)

    async def replay(request: Request) -> Response:
        """Replay a run on the graph served now, started here: answered at once, with the
        comparison of the run and its replay (which says the replay runs, until it ends)."""
        thread = request.path_params["thread"]
        form = await form_of(request)
        if isinstance(form, Response):
            return form
        try:
            target = await runs.replay(thread)
        except TooManyRunsError as exc:
            return _problem(str(exc), 429)
        except ThinkgraphError as exc:
            return _refusal(exc)
        return RedirectResponse(compare_url(thread, target), status_code=303)

    async def compare(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        if not a or not b:
            return _problem("name two runs: /studio/compare?a=RUN&b=RUN", 400)
        running = runs.advancing(b)
        try:
            run_a, run_b = await agent.aresult(a), await agent.aresult(b)
        except ThreadNotFoundError as exc:
            if not running:  # a replay started here and not stored yet is on its way
                return _refusal(exc)
            waiting = replay_section(a, b, None, running=True)
            return _replaying(page(f"Replay of {a}", f"<h1>Replay of {esc(a)}</h1>{waiting}"))
        except ThinkgraphError as exc:
            return _refusal(exc)
        replayed = replay_of(run_b) == a

        def drawn() -> tuple[str, str, str, str]:
            histories: tuple[list[CheckpointInfo], list[CheckpointInfo]] = ([], [])
            if replayed and (run_a.state or run_b.state):  # as the replay compared them
                histories = (agent.history(a), agent.history(b))
            diff = diff_runs(
                run_a.chain, run_b.chain, a=run_a, b=run_b, tools=tools,
                history_a=histories[0], history_b=histories[1],
            )  # fmt: skip
            model = run_graph_model(agent.graph, run_a.chain)
            where = diff.divergence
            node = None if where is None else START if where.node == "start" else where.node
            paths = compare_paths(
                overlay_from_result(run_a, model).path,
                overlay_from_result(run_b, model).path,
                divergence=node,
            )
            verdict = (
                "the same"
                if diff.same
                else (
                    f"they part at step {where.step_a if where is not None else '?'}"
                    if where is not None
                    else "same decisions, other contents"
                )
            )
            report = ""
            if replayed:
                summary = agent.reader.summary(b)
                outcome = (summary.replay or "") if summary is not None else ""
                shown = (
                    None
                    if running or not outcome
                    else replay_shown(run_a, run_b, diff, outcome, tools)
                )
                report = replay_section(a, b, shown, running=running)
            return to_svg_layout(model, diff=paths), verdict, diff_to_text(diff), report

        svg, verdict, steps, report = await run_in_threadpool(drawn)
        body = compare_page(a, b, svg, verdict, steps, report=report)
        return _replaying(body) if running and replayed else _html(body)

    def _replaying(body: str) -> Response:
        """A page of a replay under way: sent again by the browser in a second (the
        ``Refresh`` header: no script), until the replay's report is made."""
        response = _html(body)
        response.headers["Refresh"] = "1"
        return response

    async def script(request: Request) -> Response:
        return Response(
            LIVE_JS,
            media_type="text/javascript",
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    async def live(request: Request) -> Response:
        thread = request.path_params["thread"]

        def read() -> dict[str, Any]:
            run = agent.reader.overlay(thread)
            model, overlay = run_model(
                agent.graph, agent.deps, limits=agent.limits,
                breakpoints=agent.breakpoints, run=run,
            )  # fmt: skip
            assert overlay is not None
            return {
                "status": run[1].status,
                "steps": len(run[1].chain),
                "at": str(run[0].config["configurable"]["checkpoint_id"]),
                "waits": waits_for((p.kind, p.call_id) for p in run[1].pending),
                "usage": usage_by_node(run[1].chain),
                **overlay_classes(model, overlay),
            }

        try:
            found = await run_in_threadpool(read)
        except ThreadNotFoundError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse(found, headers={"Cache-Control": "no-store"})

    return [
        Route("/studio", listing, methods=["GET"]),
        Route("/studio/live.js", script, methods=["GET"]),
        Route("/studio/runs/{thread}/live", live, methods=["GET"]),
        Route("/studio/runs/{thread}/steer", steer, methods=["GET"]),
        Route("/studio/runs", start, methods=["POST"]),
        Route("/studio/compare", compare, methods=["GET"]),
        Route("/studio/runs/{thread}/fork", fork, methods=["POST"]),
        Route("/studio/runs/{thread}/replay", replay, methods=["POST"]),
        Route("/studio/runs/{thread}", one_run, methods=["GET"]),
        Route("/studio/runs/{thread}/at/{checkpoint}", at_checkpoint, methods=["GET"]),
        Route("/studio/runs/{thread}/answer", answer, methods=["POST"]),
    ]
