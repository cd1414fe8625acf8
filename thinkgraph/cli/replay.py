"""`thinkgraph replay RUN`: run a stored run again on today's code, from its record.

Exit codes: 0 same (or a changed request or content, unless --strict), 1 the replay
diverged (or, with --strict, anything changed), 2 bad usage or a run not in the store.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from thinkgraph.cli._app import app, existing_store, fail, guarded, load_mcp, load_tool
from thinkgraph.cli._options import ApiBaseOpt, McpOpt, ModelOpt, ScriptOpt, StoreOpt, ToolsOpt
from thinkgraph.cli._runs import make_model, new_graph, run_graph

__all__ = ["replay"]


@app.command(rich_help_panel="Inspect")
def replay(
    run: Annotated[str, typer.Argument(help="The thread id of the run to replay.")],
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            metavar="MODULE:FUNCTION",
            help="The graph to replay on (module:function or path/to/file.py:function): "
            "today's version of the run's graph, or another. Default: the graph the run "
            "recorded.",
        ),
    ] = None,
    tools: ToolsOpt = None,
    mcp: McpOpt = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    script: ScriptOpt = None,
    store: StoreOpt = "",
    thread: Annotated[
        str | None,
        typer.Option("--thread", "-t", help="The replay's thread id (replay-RUN by default)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when a request or content changed too.")
    ] = False,
    live: Annotated[
        bool,
        typer.Option(
            "--live-from-divergence",
            help="Go on past the first divergence with the real model (--model or --script) "
            "and tools, at most --max-calls model calls.",
        ),
    ] = False,
    max_calls: Annotated[
        int, typer.Option("--max-calls", min=0, help="Real model calls allowed when live.")
    ] = 0,
) -> None:
    """Replay a stored run on today's graph, prompt and tools, without calling them.

    Model replies, tool results and people's decisions are served from the run's record
    by their place in the graph (node, visit, call), so an edited prompt still replays.
    Says `same`, `request changed` (with the prompt's diff) or the first divergence
    (route, tool, args or answer), into a new thread that `thinkgraph diff` and `draw
    --diff` compare with the source.
    """
    from thinkgraph.agent import Agent

    if live and max_calls <= 0:
        fail("--live-from-divergence needs --max-calls N (the real model calls allowed)")
    if live and not (model or script):
        fail("--live-from-divergence needs the real model: pass --model or --script")
    loaded = [t for spec in tools or [] for t in load_tool(spec)] + load_mcp(mcp)
    chosen: Any = make_model(model, api_base, script, needed=False)
    url = existing_store(store)
    # Another graph than the run's is the point of a replay: --graph is taken as given.
    address = new_graph(graph) if graph is not None else run_graph(url, run, None)
    code = [0]

    def go() -> None:
        with Agent(chosen, loaded, store=url, graph=address) as agent:
            report = agent.replay(
                run, new_thread_id=thread, strict=strict, live_from_divergence=live,
                max_calls=max_calls,
            )  # fmt: skip
        given = {t.name for t in loaded}
        missing = [name for name in report.calls if name not in given]
        if missing:
            typer.echo(
                f"note: the run called {', '.join(missing)}, which --tools/--mcp do not give: "
                "the recorded results are served, but the prompt no longer describes "
                + ("them" if len(missing) > 1 else "it"),
                err=True,
            )
        if as_json:
            typer.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        else:
            typer.echo(report.to_text())
        code[0] = report.exit_code

    guarded(go)
    if code[0]:
        raise typer.Exit(code[0])
