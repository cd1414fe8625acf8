"""`thinkgraph history` and `thinkgraph fork`: a run's checkpoints, and new runs from them."""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any

import typer

from thinkgraph.cli._app import (
    app,
    existing_store,
    fail,
    guarded,
    load_tools,
    load_validators,
)
from thinkgraph.cli._options import (
    GraphOpt,
    RunOptions,
    StoreOpt,
    with_options,
)
from thinkgraph.cli._pending import AgentFlags
from thinkgraph.cli._runs import make_model, read_graph, run_graph


@app.command(rich_help_panel="Pause, resume, time travel")
def history(
    thread: Annotated[str, typer.Argument(help="The thread to list.")],
    store: StoreOpt = "",
    graph: GraphOpt = None,
) -> None:
    """List a run's checkpoints, oldest first; fork from any of them."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel

    def go() -> None:
        read_graph(store, thread, graph)  # the run is read from its record: no graph built
        with Agent(ScriptedModel([]), store=existing_store(store)) as agent:
            points = agent.history(thread)
        for point in points:
            when = point.at.astimezone().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if point.at else "?"
            typer.echo(f"{point.checkpoint_id}  {point.node:<10} step {point.step:<3} {when}")

    guarded(go)


def _step_edits(items: list[str] | None) -> dict[int, dict[str, Any]]:
    """`--edit STEP:FIELD=VALUE` options as `Agent.fork`'s edit; a call's args are JSON.

    What a field may be edited to is decided by `thinkgraph.runs.forks`, not here.
    """
    edits: dict[int, dict[str, Any]] = {}
    for item in items or []:
        number, colon, rest = item.partition(":")
        field, equals, value = rest.partition("=")
        field = field.strip()
        if not (colon and equals and number.strip().isdigit() and field):
            fail(f"--edit {item!r}: use STEP:FIELD=VALUE, e.g. --edit '5:text=the file is empty'")
        edits.setdefault(int(number), {})[field] = _args(item, value) if field == "args" else value
    return edits


def _args(item: str, value: str) -> dict[str, Any]:
    try:
        args = json.loads(value)
    except ValueError:
        args = None
    if not isinstance(args, dict):
        fail(f'--edit {item!r}: args is a JSON object, e.g. --edit \'3:args={{"path": "b.txt"}}\'')
    return args


@app.command(rich_help_panel="Pause, resume, time travel")
@with_options(RunOptions)
def fork(
    thread: Annotated[str, typer.Argument(help="The thread to fork.")],
    checkpoint: Annotated[str, typer.Argument(help="A checkpoint id from `thinkgraph history`.")],
    edit: Annotated[
        list[str] | None,
        typer.Option(
            help="STEP:FIELD=VALUE (repeatable): an observation's text, e.g. '5:text=the file "
            "is empty'; a thought's answer not yet validated, '7:answer=42'; the args of a "
            'tool call not yet run or approved, as JSON, \'3:args={"path": "b.txt"}\'.'
        ),
    ] = None,
    new_thread: Annotated[str | None, typer.Option("--thread", help="The new thread id.")] = None,
    *,
    opts: RunOptions,
) -> None:
    """Start a new thread from a checkpoint (optionally edited) and run it on.

    The new run's chain is printed once it stops (the fork runs, then shows), as `run`
    shows it. It runs on the graph of the run it forks, and records it.
    """
    from thinkgraph.agent import Agent
    from thinkgraph.cli._progress import choose_mode, finished, follow, interruptible

    edits = _step_edits(edit)
    flags = AgentFlags.given(
        opts.store, opts.tools, opts.model, opts.api_base, opts.script, opts.mcp, opts.graph,
        opts.validator,
    )  # fmt: skip
    loaded = load_tools(opts.tools, opts.mcp)
    chosen = make_model(opts.model, opts.api_base, opts.script, thread=(opts.store, thread))

    def go() -> None:
        forked = new_thread or uuid.uuid4().hex[:12]
        address = run_graph(opts.store, thread, opts.graph)
        url, validators = existing_store(opts.store), load_validators(opts.validator)
        with Agent(chosen, loaded, store=url, graph=address, validators=validators) as agent:
            with interruptible(agent, forked, flags):
                result = agent.fork(thread, checkpoint, edit=edits, new_thread_id=forked)
            mode = choose_mode(as_json=opts.as_json, quiet=opts.quiet)
            follow(agent, forked, finished(result), flags, mode=mode, no_input=opts.no_input,
                   tools=loaded)  # fmt: skip

    guarded(go)
