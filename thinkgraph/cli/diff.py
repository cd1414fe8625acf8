"""`thinkgraph diff RUN_A RUN_B` and `thinkgraph draw --diff RUN_A RUN_B`: compare two runs.

Exit codes, as `diff(1)`'s: 0 the runs are the same, 1 they differ (diverged, or changed
in content or own state only), 2 bad usage or a run that is not in the store (one line
says so).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from thinkgraph.cli._app import (
    EXIT_FAILED,
    app,
    default_store,
    existing_store,
    fail,
    guarded,
    load_tools,
    write_file,
)
from thinkgraph.cli._options import GraphOpt, OutputOpt, ReadToolsOpt, StoreOpt
from thinkgraph.cli._runs import read_graph
from thinkgraph.errors import RunNotStartedError, ThreadNotFoundError
from thinkgraph.storage.urls import shown_url

if TYPE_CHECKING:
    from thinkgraph.result import RunResult
    from thinkgraph.runs.reader import CheckpointInfo
    from thinkgraph.views.diff import RunDiff

__all__ = ["DIFF_FORMATS", "diff", "draw_diff"]

DIFF_FORMATS = ("text", "md", "json", "html")
"""What `thinkgraph diff --format` writes ("markdown" is taken for "md", as `show` says)."""


@dataclass(frozen=True, slots=True)
class _Runs:
    """Two runs as their record has them, to compare and draw."""

    a: RunResult
    b: RunResult
    graph: Any
    """Our compiled graph (a run of another graph is drawn on the graph its task step
    records, `run_graph_model`)."""
    histories: tuple[list[CheckpointInfo], list[CheckpointInfo]]
    """Both runs' checkpoints, oldest first, when either has state of its own (else
    empty: nothing to compare node by node)."""

    def diff(self, tools: Any = None) -> RunDiff:
        """The runs compared: steps, first divergence, own state (`diff_runs`)."""
        from thinkgraph.views.diff import diff_runs

        return diff_runs(
            self.a.chain,
            self.b.chain,
            a=self.a,
            b=self.b,
            tools=tools,
            history_a=self.histories[0],
            history_b=self.histories[1],
        )


def read_runs(url: str, threads: tuple[str, str], graph: str | None = None) -> _Runs:
    """Both runs from the store, read from their record; a run that is not there is one
    line naming how to list the runs."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel

    found: list[RunResult] = []
    read_graph(url, threads[0], graph)  # both runs are read from their record: no graph built
    with Agent(ScriptedModel([]), store=url) as agent:
        for thread in threads:
            try:
                found.append(agent.result(thread))
            except RunNotStartedError as exc:  # its job waits for a worker, or failed first
                fail(str(exc))
            except ThreadNotFoundError:
                fail(
                    f"no run {thread!r} in {shown_url(url)}; list runs with: thinkgraph runs"
                    + ("" if url == default_store() else f" --store {shown_url(url)}")
                )
        histories: tuple[list[CheckpointInfo], list[CheckpointInfo]] = ([], [])
        if found[0].state or found[1].state:
            histories = (agent.history(threads[0]), agent.history(threads[1]))
        return _Runs(found[0], found[1], agent.graph, histories)


def _diagram(
    result_a: RunResult, result_b: RunResult, graph: Any, fmt: str, divergence: Any
) -> str | bytes:
    """Both runs' paths on the graph run A ran, marked as `thinkgraph.viz.diff` marks them."""
    from thinkgraph.viz import overlay_from_result
    from thinkgraph.viz.diff import render_diff, run_graph_model
    from thinkgraph.viz.model import START

    model = run_graph_model(graph, result_a.chain)
    node = None
    if divergence is not None:  # the views name the first node as its steps do
        node = START if divergence.node == "start" else divergence.node
    return render_diff(
        model,
        overlay_from_result(result_a, model).path,
        overlay_from_result(result_b, model).path,
        fmt,
        divergence=node,
        kind=None if divergence is None else divergence.kind,
        names=(result_a.thread_id, result_b.thread_id),
    )


def _page_diagram(result_a: RunResult, result_b: RunResult, graph: Any, divergence: Any) -> str:
    """The diagram for the HTML page: SVG with Graphviz, else Mermaid text."""
    if shutil.which("dot"):
        with contextlib.suppress(Exception):  # a page without its picture beats no page
            return str(_diagram(result_a, result_b, graph, "svg", divergence))
    return str(_diagram(result_a, result_b, graph, "mermaid", divergence))


def _write(text: str | bytes, output: Path | None, what: str) -> None:
    if output is None:
        if isinstance(text, bytes):
            sys.stdout.buffer.write(text)
            sys.stdout.flush()
        else:
            typer.echo(text, nl=not text.endswith("\n"))
        return
    write_file(output, text, what)


@app.command(rich_help_panel="Inspect")
def diff(
    run_a: Annotated[str, typer.Argument(help="The first run's thread id (the reference).")],
    run_b: Annotated[str, typer.Argument(help="The second run's thread id.")],
    store: StoreOpt = "",
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, md, json or html.")] = "text",
    tools: ReadToolsOpt = None,
    output: OutputOpt = None,
    graph: GraphOpt = None,
) -> None:
    """Compare two runs: their steps aligned, where they first diverge, their totals.

    The first divergence is where the runs first decide differently: a route (another
    next node), a tool, the arguments of a call (field by field), the answer, or the
    state keys a graph of yours declares (the first node after which they differ). Keys of
    that state that differ at the end are listed too. Secrets are masked as `show` masks
    them. Exit 0 when the runs are the same, 1 when they differ (as diff(1) does), 2 on
    bad usage.
    """
    from thinkgraph.views.diff_render import (
        diff_to_html,
        diff_to_json,
        diff_to_markdown,
        diff_to_text,
    )

    fmt = "md" if fmt == "markdown" else fmt
    if fmt not in DIFF_FORMATS:
        fail(f"--format {fmt!r} is not supported; use one of {', '.join(DIFF_FORMATS)}")
    known = load_tools(tools)
    url = existing_store(store)
    same = [False]

    def go() -> None:
        runs = read_runs(url, (run_a, run_b), graph)
        found = runs.diff(known)
        if fmt == "text":
            text = diff_to_text(found)
        elif fmt == "md":
            text = diff_to_markdown(found)
        elif fmt == "json":
            text = diff_to_json(found) + "\n"
        else:
            diagram = _page_diagram(runs.a, runs.b, runs.graph, found.divergence)
            text = diff_to_html(found, diagram=diagram)
        _write(text, output, f"{fmt}, {found.outcome}")
        same[0] = found.same

    guarded(go)
    if not same[0]:
        raise typer.Exit(EXIT_FAILED)


def draw_diff(
    runs: tuple[str, str], store: str, fmt: str, output: Path | None, graph: str | None = None
) -> None:
    """`draw --diff RUN_A RUN_B`: the graph with both runs' paths, shared and apart."""
    from thinkgraph.viz.diff import DIFF_FORMATS as DRAW_FORMATS

    if fmt not in DRAW_FORMATS:
        fail(f"--format {fmt!r} is not supported; use one of {', '.join(DRAW_FORMATS)}")
    if fmt == "png" and output is None and sys.stdout.isatty():
        fail("--format png writes binary data; pass -o FILE or pipe stdout to a file")
    url = existing_store(store)

    def go() -> None:
        read = read_runs(url, runs, graph)
        _write(_diagram(read.a, read.b, read.graph, fmt, read.diff().divergence), output, fmt)

    guarded(go)
