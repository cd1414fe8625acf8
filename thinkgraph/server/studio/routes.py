"""The studio's routes: read with the agent's reader, answer through `ServerRuns`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
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
from thinkgraph.server.runs import TaskTooLongError, TooManyRunsError
from thinkgraph.server.studio.csrf import COOKIE, FIELD, Csrf
from thinkgraph.server.studio.forms import answer_of, tool_schemas
from thinkgraph.server.studio.html import STUDIO_CSP, esc, node_url, page, thread_url
from thinkgraph.server.studio.live import LIVE_JS
from thinkgraph.server.studio.pages import (
    Filters,
    checkpoint_page,
    compare_page,
    run_page,
    runs_page,
)
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
    from thinkgraph.agent import Agent
    from thinkgraph.server.runs import ServerRuns

__all__ = ["studio_routes"]

PAGE_SIZE = 50
"""Runs on one page of the list."""

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


def studio_routes(agent: Agent, runs: ServerRuns, csrf: Csrf) -> list[Route]:
    """The studio's routes over `agent`'s store, answering through `runs`."""

    tools = list(agent.deps.tools)

    async def listing(request: Request) -> Response:
        filters = Filters(request.query_params, PAGE_SIZE)
        redactor = Redactor([], tool_map(tools), mask_unknown=True)
        tasks: dict[str, str] = {}

        def task_of(thread: str) -> str:
            """A run's task, masked as every view masks it (a search matches only what
            it would show); read once a request, only for runs a search or a page needs."""
            if thread not in tasks:
                text = agent.reader.task(thread)
                tasks[thread] = "" if text is None else redactor.text(text)
            return tasks[thread]

        def read() -> tuple[Rows, Rows, Rows, bool]:
            listed = [run_summary_dict(r, tools=tools) for r in agent.runs()]
            matching = [r for r in listed if filters.matches(r, task_of)]
            shown = matching[filters.offset : filters.offset + PAGE_SIZE]
            waiting = [r for r in listed if r.get("status") == "paused"]
            for run in [*shown, *waiting]:  # the inbox says what each run was asked too
                run["task"] = task_of(str(run["thread_id"]))
            return listed, waiting, shown, len(matching) > filters.offset + PAGE_SIZE

        listed, waiting, shown, has_next = await run_in_threadpool(read)
        graphs = sorted({str(r.get("graph") or "ours") for r in listed})
        value, new = csrf.cookie(request)
        body = runs_page(shown, waiting, filters, graphs, has_next, token=csrf.token(value))
        return _html(body, set_cookie=value if new else None)

    async def one_run(request: Request, notice: str = "", status: int = 200) -> Response:
        thread = request.path_params["thread"]
        try:
            result = await agent.aresult(thread)
        except ThinkgraphError as exc:
            return _refusal(exc)

        def drawn() -> tuple[str, list[str], list[dict[str, Any]], str | None]:
            model, overlay = run_model(
                agent.graph, agent.deps, limits=agent.limits,
                breakpoints=agent.breakpoints, run=agent.reader.overlay(thread),
            )  # fmt: skip
            points = [
                {"checkpoint_id": h.checkpoint_id, "node": h.node, "step": h.step}
                for h in agent.history(thread)
            ]
            names = [str(n) for n in model.nodes if not str(n).startswith("__")]
            svg = to_svg_layout(model, overlay, node_href=steps_link(thread, names))
            return svg, names, points, agent.checkpoint_id(thread)

        svg, nodes, history, at = await run_in_threadpool(drawn)
        doc = to_json_dict(result, tools=tools)
        value, new = csrf.cookie(request)
        body = run_page(
            doc, svg, nodes, history, token=csrf.token(value), at=at or "",
            schemas=tool_schemas(agent.deps.tools),
            node=request.query_params.get("node", "")[:200], notice=notice,
        )  # fmt: skip
        return _html(body, status, set_cookie=value if new else None)

    async def at_checkpoint(request: Request) -> Response:
        thread, wanted = request.path_params["thread"], request.path_params["checkpoint"]

        def read() -> tuple[dict[str, Any], str, dict[str, Any], list[dict[str, Any]]]:
            """The checkpoint, the graph as the run stood there, the run's document there
            and its steps up to there (masked by what the whole run holds)."""
            snapshot, there = agent.reader.at_checkpoint(thread, wanted)
            whole = agent.reader.result(thread)
            point = next(p for p in agent.history(thread) if p.checkpoint_id == wanted)
            model, overlay = run_model(
                agent.graph, agent.deps, limits=agent.limits,
                breakpoints=agent.breakpoints, run=(snapshot, there),
            )  # fmt: skip
            names = {str(n) for n in model.nodes if not str(n).startswith("__")}

            svg = to_svg_layout(model, overlay, node_href=steps_link(thread, names))
            redactor = Redactor(whole.chain, tool_map(tools), mask_unknown=True)
            doc = to_json_dict(there, tools=tools) | {"state": shown_state(point.state, redactor)}
            # The steps as the whole run's view shows them (a secret the run learned later
            # is masked here too), up to the last one this checkpoint holds.
            held = len(there.chain)
            steps = [
                s for s in to_json_dict(whole, tools=tools)["steps"] if int(s["number"]) < held
            ]
            info = {
                "checkpoint_id": point.checkpoint_id,
                "node": point.node,
                "step": point.step,
                "at": point.at.isoformat() if point.at else "",
            }
            return info, svg, doc, steps

        try:
            info, svg, doc, steps = await run_in_threadpool(read)
        except ThinkgraphError as exc:
            return _refusal(exc)
        value, new = csrf.cookie(request)
        body = checkpoint_page(thread, info, doc, svg, steps, token=csrf.token(value))
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
        thread = request.path_params["thread"]
        form = await form_of(request)
        if isinstance(form, Response):
            return form
        try:
            edit = {int(k): v for k, v in json.loads(form.get("edit") or "{}").items()}
            state = {
                key[len("state.") :]: json.loads(text)
                for key, text in form.items()
                if key.startswith("state.")
            }
        except (ValueError, AttributeError) as exc:
            return _problem(f"the edits are not JSON of the shape shown: {exc}", 422)
        try:
            forked = await agent.afork(
                thread, form.get("checkpoint", ""), edit=edit, state=state or None,
                new_thread_id=form.get("new_thread", "").strip() or None,
            )  # fmt: skip
        except ThreadNotFoundError as exc:
            return _problem(str(exc), 404)
        except ThinkgraphError as exc:
            return _problem(str(exc), 422)
        return RedirectResponse(thread_url(forked.thread_id), status_code=303)

    async def replay(request: Request) -> Response:
        from urllib.parse import urlencode

        thread = request.path_params["thread"]
        form = await form_of(request)
        if isinstance(form, Response):
            return form
        try:
            report = await agent.areplay(thread)
        except ThinkgraphError as exc:
            return _refusal(exc)
        query = urlencode({"a": thread, "b": report.replay.thread_id})
        return RedirectResponse(f"/studio/compare?{query}", status_code=303)

    async def compare(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        if not a or not b:
            return _problem("name two runs: /studio/compare?a=RUN&b=RUN", 400)
        try:
            run_a, run_b = await agent.aresult(a), await agent.aresult(b)
        except ThinkgraphError as exc:
            return _refusal(exc)

        def drawn() -> tuple[str, str, str, str]:
            diff = diff_runs(run_a.chain, run_b.chain, a=run_a, b=run_b, tools=tools)
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
            summary = agent.reader.summary(b)
            outcome = (summary.replay or "") if summary is not None else ""
            return to_svg_layout(model, diff=paths), verdict, diff_to_text(diff), outcome

        svg, verdict, steps, outcome = await run_in_threadpool(drawn)
        return _html(compare_page(a, b, svg, verdict, steps, replay=outcome))

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
        Route("/studio/runs", start, methods=["POST"]),
        Route("/studio/compare", compare, methods=["GET"]),
        Route("/studio/runs/{thread}/fork", fork, methods=["POST"]),
        Route("/studio/runs/{thread}/replay", replay, methods=["POST"]),
        Route("/studio/runs/{thread}", one_run, methods=["GET"]),
        Route("/studio/runs/{thread}/at/{checkpoint}", at_checkpoint, methods=["GET"]),
        Route("/studio/runs/{thread}/answer", answer, methods=["POST"]),
    ]
