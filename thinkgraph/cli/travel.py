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
    load_breakpoints,
    load_tools,
)
from thinkgraph.cli._options import (
    BreakpointOpt,
    GraphOpt,
    RunOptions,
    StoreOpt,
    with_options,
)
from thinkgraph.cli._pending import AgentFlags
from thinkgraph.cli._runs import continuing_agent, make_model, read_graph
from thinkgraph.errors import RunNotStartedError


@app.command(rich_help_panel="Pause, resume, time travel")
def history(
    thread: Annotated[str, typer.Argument(help="The thread to list.")],
    store: StoreOpt = "",
    graph: GraphOpt = None,
) -> None:
    """List a run's checkpoints, oldest first; fork from any of them.

    Under each checkpoint, the keys of the graph's own state its node changed, as
    `key = JSON`, masked as `show` masks them.
    """
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel
    from thinkgraph.views._run import shown_state, state_line
    from thinkgraph.views.redact import Redactor

    def go() -> None:
        read_graph(store, thread, graph)  # the run is read from its record: no graph built
        with Agent(ScriptedModel([]), store=existing_store(store)) as agent:
            try:
                points = agent.history(thread)
            except RunNotStartedError as exc:  # handed to the workers: not yet
                typer.echo(f"{exc}; it has no checkpoint yet")
                return
            # Secrets are masked by what the whole run holds: its chain is read only when
            # there are keys to show (a graph of ours has none).
            chain = agent.chain(thread) if any(p.state for p in points) else []
        redactor = Redactor(chain, mask_unknown=True)
        before: dict[str, Any] = {}
        for point in points:
            when = point.at.astimezone().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if point.at else "?"
            typer.echo(f"{point.checkpoint_id}  {point.node:<10} step {point.step:<3} {when}")
            changed = {k: v for k, v in point.state.items() if k not in before or before[k] != v}
            for key, value in shown_state(changed, redactor).items():
                typer.echo(f"  {state_line(key, value)}")
            before = point.state

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


def _set_keys(items: list[str] | None) -> dict[str, Any]:
    """`--set KEY=JSON` options as `Agent.fork`'s state: each value parsed as JSON.

    Which keys may be set, and to what, is decided by `thinkgraph.runs.forks`, not here.
    """
    values: dict[str, Any] = {}
    for item in items or []:
        key, equals, text = item.partition("=")
        key = key.strip()
        if not (equals and key):
            fail(f"--set {item!r}: use KEY=JSON, e.g. --set score=20 or --set 'plan=[\"a\"]'")
        if key in values:
            fail(f"--set {key!r} is given twice; give each key once")
        try:
            values[key] = json.loads(text)
        except ValueError:
            fail(
                f"--set {item!r}: the value of {key!r} is not JSON; quote text as a JSON "
                f"string, e.g. --set '{key}=\"{text}\"'"
            )
    return values


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
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="KEY=JSON (repeatable): set a key of the graph's own state (its state class "
            "beyond AgentState) on the new thread, e.g. --set score=20 or --set "
            '\'plan=["draft", "check"]\'; checked against the type the state declares, and '
            "taken as given (a reducer does not fold it in).",
        ),
    ] = None,
    new_thread: Annotated[str | None, typer.Option("--thread", help="The new thread id.")] = None,
    breakpoint: BreakpointOpt = None,
    *,
    opts: RunOptions,
) -> None:
    """Start a new thread from a checkpoint (optionally edited) and run it on.

    The new run's chain is printed once it stops (the fork runs, then shows), as `run`
    shows it. It runs on the graph of the run it forks, and records it; it keeps the
    run's breakpoints, and --breakpoint adds more. A refused edit or key leaves nothing
    behind: no new thread.
    """
    from thinkgraph.cli._progress import choose_mode, finished, follow, interruptible

    edits, values = _step_edits(edit), _set_keys(set_)
    points = load_breakpoints(breakpoint)
    flags = AgentFlags.given(
        opts.store, opts.tools, opts.model, opts.api_base, opts.script, opts.mcp, opts.graph,
        opts.validator,
    )  # fmt: skip
    loaded = load_tools(opts.tools, opts.mcp)
    chosen = make_model(opts.model, opts.api_base, opts.script, thread=(opts.store, thread))

    def go() -> None:
        forked = new_thread or uuid.uuid4().hex[:12]
        with continuing_agent(
            opts.store, thread, opts.graph, chosen, loaded, opts.validator, breakpoints=points
        ) as agent:
            with interruptible(agent, forked, flags):
                result = agent.fork(
                    thread, checkpoint, edit=edits, state=values, new_thread_id=forked
                )
            mode = choose_mode(as_json=opts.as_json, quiet=opts.quiet)
            follow(agent, forked, finished(result), flags, mode=mode, no_input=opts.no_input,
                   tools=loaded)  # fmt: skip

    guarded(go)
