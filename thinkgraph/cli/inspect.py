"""`thinkgraph runs`, `show` and `draw`: look at runs and graphs."""

from __future__ import annotations

import importlib.util
import json
import shutil
from typing import TYPE_CHECKING, Annotated, Any

import typer

from thinkgraph.cli._app import (
    app,
    existing_store,
    fail,
    guarded,
    load_tools,
    report,
    write_file,
)
from thinkgraph.cli._options import GraphOpt, McpOpt, OutputOpt, ReadToolsOpt, StoreOpt
from thinkgraph.cli._runs import new_graph, read_graph, stopped_runs
from thinkgraph.cli.prune import human_size
from thinkgraph.errors import RunNotStartedError, ThreadNotFoundError

if TYPE_CHECKING:
    from thinkgraph.runs.reader import RunCount
    from thinkgraph.views.redact import Redactor

SHOW_FORMATS = ("text", "markdown", "json", "html")
STATUSES = ("queued", "running", "paused", "done", "failed")


@app.command(rich_help_panel="Inspect")
def runs(
    store: StoreOpt = "",
    status: Annotated[
        str | None,
        typer.Option(help="Only runs that are queued, running, paused, done or failed."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many runs.")] = 50,
    reindex: Annotated[
        bool,
        typer.Option(
            "--reindex",
            help="First give every run a row in the store's run index that matches its "
            "checkpoints (for runs written by a program that does not keep the index).",
        ),
    ] = False,
) -> None:
    """List the runs in the store, the most recently updated first.

    A run handed to workers is listed from the moment it is queued; while its job waits,
    runs, stalled, is retried or failed, the job's state (and error) is the run's.
    """
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel

    if status is not None and status not in STATUSES:
        fail(f"--status {status!r} is unknown; use one of {', '.join(STATUSES)}")

    url = existing_store(store)

    def go() -> None:
        with Agent(ScriptedModel([]), store=url) as agent:
            if reindex:
                typer.echo(f"reindexed {agent.reader.reindex()} runs")
            found = agent.runs(status=status, limit=limit)  # type: ignore[arg-type]
            stopped = stopped_runs(agent, [r.thread_id for r in found if r.status == "running"])
            sizes = run_sizes(agent)
            counted = agent.reader.count()  # every run, from the run index
        if not found:
            typer.echo("no runs" + (f" with status {status}" if status else ""))
        for run in found:
            when = (
                run.updated_at.astimezone().strftime("%Y-%m-%d %H:%M:%S") if run.updated_at else "?"
            )
            status_text = run.status_text(stopped=run.thread_id in stopped)
            size = human_size(sizes[run.thread_id]) if run.thread_id in sizes else ""
            typer.echo(
                f"{run.thread_id:<16} {status_text:<36} {run.nodes:>3} "
                f"{'node ' if run.nodes == 1 else 'nodes'}  {when}  {size:>9}"
            )
        _print_totals(counted, len(found), status)

    guarded(go)


def _print_totals(counted: RunCount, shown: int, status: str | None) -> None:
    """What the listing left out ("N more") and the runs per state."""
    matching = counted.by_status[status] if status is not None else counted.read  # type: ignore[index]
    if matching > shown:
        typer.echo(f"{matching - shown} more (raise --limit to list them)")
    if not counted.read and not counted.unread:
        return
    states = " · ".join(f"{n} {name}" for name, n in counted.by_status.items() if n)
    line = f"{counted.read} run{'' if counted.read == 1 else 's'}: {states or 'none'}"
    if counted.unread:
        line += f"; {counted.unread} older threads not counted"
    typer.echo(line)


def run_sizes(agent: Any) -> dict[str, int]:
    """Each run's stored size, in one query over the store (empty for memory://)."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from thinkgraph.storage import Store

    saver = agent.graph.checkpointer
    return Store(saver).run_sizes() if isinstance(saver, BaseCheckpointSaver) else {}


def _overlay_diagram(agent: Any, thread: str) -> str | None:
    """The graph with the run's path for the HTML page: SVG with Graphviz, else Mermaid."""
    if importlib.util.find_spec("thinkgraph.viz") is None:
        return None
    formats = ("svg", "mermaid") if shutil.which("dot") else ("mermaid",)
    for fmt in formats:
        try:
            return str(agent.draw(fmt, thread_id=thread))
        except Exception:  # a page without its diagram beats no page at all
            continue
    return None


@app.command(rich_help_panel="Inspect")
def show(
    thread: Annotated[str, typer.Argument(help="The thread to show.")],
    store: StoreOpt = "",
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="text, markdown, json or html.")
    ] = "text",
    audience: Annotated[
        str, typer.Option("--audience", "-a", help="developer, user or auditor.")
    ] = "developer",
    output: OutputOpt = None,
    tools: ReadToolsOpt = None,
    mcp: McpOpt = None,
    graph: GraphOpt = None,
) -> None:
    """Print a run's chain as text, Markdown, JSON or one self-contained HTML page.

    Secrets are redacted in every format; --audience user shows end users' summaries.
    Without the run's --tools, which arguments are secret cannot be checked: every
    argument and result value of its tool calls is masked, and a note says so.
    """
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel
    from thinkgraph.views import AUDIENCES, to_html, to_markdown, to_text
    from thinkgraph.views.json_doc import job_fields, to_json_dict, waiting_doc
    from thinkgraph.views.redact import Redactor

    if fmt not in SHOW_FORMATS:
        fail(f"--format {fmt!r} is not supported; use one of {', '.join(SHOW_FORMATS)}")
    if audience not in AUDIENCES:
        fail(f"--audience {audience!r} is unknown; use one of {', '.join(AUDIENCES)}")
    known = load_tools(tools, mcp)

    url = existing_store(store)

    def go() -> None:
        read_graph(store, thread, graph)  # the run is read from its record: no graph built
        with Agent(ScriptedModel([]), store=url) as agent:
            summary = agent.reader.summary(thread)  # with its job's word, if it says more
            try:
                result = agent.result(thread)
            except RunNotStartedError as exc:  # its job waits for a worker, or failed first
                if fmt == "json" and summary is not None:
                    typer.echo(json.dumps(waiting_doc(summary), indent=2))
                else:
                    typer.echo(str(exc))
                return
            except ThreadNotFoundError:
                fail(f"no run is stored under thread {thread!r}")
            diagram = _overlay_diagram(agent, thread) if fmt == "html" else None
        redactor = None
        if fmt == "text":
            # The text view and the outcome printed after it share one redactor: the
            # chain is learned once (a reply with 200,000 secret keys takes a second).
            redactor = Redactor(result.chain, {t.name: t for t in known}, mask_unknown=True)
            text = to_text(result.chain, audience=audience, tools=known, redactor=redactor)
            text += "\n"
        elif fmt == "markdown":
            text = to_markdown(result, audience=audience, tools=known)
        elif fmt == "json":
            doc = to_json_dict(result, audience=audience, tools=known)
            doc |= {} if summary is None else job_fields(summary)
            text = json.dumps(doc, indent=2, ensure_ascii=False, default=repr) + "\n"
        else:
            text = to_html(result, audience=audience, tools=known, diagram=diagram)
        if output is not None:
            write_file(output, text, f"{fmt}, {len(result.chain)} steps")
        elif redactor is not None:  # the text view
            typer.echo(text, nl=False)
            job = None if summary is None else summary.job
            report(_masked_outcome(result, redactor), known, redactor, job=job)
        else:
            typer.echo(text, nl=False)

    guarded(go)


def _masked_outcome(result: Any, redactor: Redactor) -> Any:
    """The run with its answer and detail masked as the views mask them, for `report`.

    Like every view (`redactor` has `mask_unknown`), it masks all the values of calls to
    tools it was not given, so an answer that repeats one of them is masked too.
    """
    answer = None if result.answer is None else redactor.text(result.answer)
    return result.model_copy(update={"answer": answer, "detail": redactor.text(result.detail)})


@app.command(rich_help_panel="Inspect")
def draw(
    thread: Annotated[
        str | None, typer.Option("--thread", "-t", help="Mark this run's path on the graph.")
    ] = None,
    store: StoreOpt = "",
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="mermaid, ascii, dot, svg or png.")
    ] = "mermaid",
    output: OutputOpt = None,
    diff: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--diff",
            metavar="RUN_A RUN_B",
            help="Mark two runs' paths: shared, where they diverge, each one's branch.",
        ),
    ] = None,
    graph: GraphOpt = None,
) -> None:
    """Draw the agent graph (Mermaid renders on GitHub); with --thread, a run's path on it.

    A run is drawn on the graph it ran; with no run, `--graph module:function` draws
    yours (else the one graph a langgraph.json in this folder names, else ours). svg and
    png need Graphviz (apt-get install graphviz); png needs -o or a pipe.
    """
    if diff is not None:
        from thinkgraph.cli.diff import draw_diff

        return draw_diff(diff, store, fmt, output, graph)
    import sys

    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel
    from thinkgraph.viz import FORMATS

    if fmt not in FORMATS:
        fail(f"--format {fmt!r} is not supported; use one of {', '.join(FORMATS)}")
    if fmt == "png" and output is None and sys.stdout.isatty():
        fail("--format png writes binary data; pass -o FILE or pipe stdout to a file")

    def go() -> None:
        url = existing_store(store) if thread is not None else "memory://"
        address = None
        if thread is None:
            address = new_graph(graph)
        else:  # the run is drawn from its record: no graph of its is built
            read_graph(store, thread, graph)
        with Agent(ScriptedModel([]), store=url, graph=address) as agent:
            diagram = agent.draw(fmt, thread_id=thread)
        if output is not None:
            write_file(output, diagram, fmt)
        else:
            typer.echo(diagram, nl=isinstance(diagram, str) and not diagram.endswith("\n"))

    guarded(go)
