"""`thinkgraph run` and `thinkgraph resume`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Annotated

import typer

from thinkgraph.cli._app import (
    app,
    default_store,
    existing_store,
    fail,
    guarded,
    load_breakpoints,
    load_tools,
    load_validators,
)
from thinkgraph.cli._options import (
    ApiBaseOpt,
    BreakpointOpt,
    ContinueOptions,
    GraphOpt,
    JsonOpt,
    McpOpt,
    ModelOpt,
    NoInputOpt,
    QuietOpt,
    ScriptOpt,
    StoreOpt,
    ToolsOpt,
    ValidatorOpt,
    with_options,
)
from thinkgraph.cli._pending import AgentFlags, is_interactive
from thinkgraph.cli._runs import continuing_agent, make_model, new_graph
from thinkgraph.types import StepLimits

if TYPE_CHECKING:
    from thinkgraph.runs import RunEvent


@app.command(rich_help_panel="Run")
def run(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    script: ScriptOpt = None,
    store: StoreOpt = "",
    thread: Annotated[str | None, typer.Option("--thread", "-t", help="Thread id.")] = None,
    max_steps: Annotated[int, typer.Option(min=1, help="At most this many think steps.")] = 12,
    min_steps: Annotated[int, typer.Option(min=1, help="No final answer before this.")] = 1,
    tools: ToolsOpt = None,
    mcp: McpOpt = None,
    graph: GraphOpt = None,
    breakpoint: BreakpointOpt = None,
    validator: ValidatorOpt = None,
    on_failure: Annotated[
        str,
        typer.Option(help="After repeated failures: 'abort' the run or 'ask' a person."),
    ] = "abort",
    no_input: NoInputOpt = False,
    as_json: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run a task and print the chain as it is written.

    In a terminal, a status line shows the node running, the step, tokens, cost and time
    while it goes, and a pause asks inline (approve / edit / reject / respond, or retry /
    abort / guidance) and the run goes on; otherwise it exits 3 saying how to continue.
    """
    from thinkgraph.agent import Agent
    from thinkgraph.cli._progress import choose_mode, follow

    if min_steps > max_steps:
        fail(f"--min-steps {min_steps} is above --max-steps {max_steps}; lower or raise one")
    if on_failure not in ("abort", "ask"):
        fail(f"--on-failure {on_failure!r}: use 'abort' or 'ask'")
    address = new_graph(graph)
    points = load_breakpoints(breakpoint)
    validators = load_validators(validator)
    loaded = load_tools(tools, mcp)
    chosen = make_model(model, api_base, script)
    flags = AgentFlags.given(store, tools, model, api_base, script, mcp, graph, validator)

    def go() -> None:
        limits = StepLimits(
            min_steps=min_steps,
            max_steps=max_steps,
            failure_policy="ask_human" if on_failure == "ask" else "abort",
        )
        url = store or default_store()
        with Agent(
            chosen, loaded, limits=limits, store=url, graph=address, breakpoints=points,
            validators=validators,
        ) as agent:  # fmt: skip
            thread_id = thread or uuid.uuid4().hex[:12]
            mode = choose_mode(as_json=as_json, quiet=quiet)
            events = agent.events(task, thread_id)
            follow(agent, thread_id, events, flags, mode=mode, no_input=no_input, tools=loaded)

    guarded(go)


@app.command(rich_help_panel="Pause, resume, time travel")
@with_options(ContinueOptions)
def resume(
    thread: Annotated[str, typer.Argument(help="The thread to continue.")],
    answer: Annotated[
        str | None,
        typer.Option(help="The answer to an ask_human pause: retry, abort or guidance text."),
    ] = None,
    *,
    opts: ContinueOptions,
) -> None:
    """Continue a run: after a crash, past a breakpoint, or with --answer to ask_human.

    Give it the run's --tools and model (--model or --script): this process runs the rest.
    Approvals are answered with `approve`, `reject`, `respond` or `decide` (or inline, in a
    terminal).
    """
    from thinkgraph.cli._progress import choose_mode, follow
    from thinkgraph.runs import RunEnd
    from thinkgraph.views import to_text

    mode = choose_mode(as_json=opts.as_json, quiet=opts.quiet)
    store = opts.store
    loaded = load_tools(opts.tools, opts.mcp)
    chosen = make_model(
        opts.model, opts.api_base, opts.script, needed=not opts.enqueue, thread=(store, thread)
    )
    flags = AgentFlags.given(
        store, opts.tools, opts.model, opts.api_base, opts.script, opts.mcp, opts.graph,
        opts.validator,
    )  # fmt: skip

    def go() -> None:
        from thinkgraph.cli.worker import enqueue_resume

        with (
            continuing_agent(store, thread, opts.graph, chosen, loaded, opts.validator) as agent,
            ExitStack() as held,
        ):
            if opts.enqueue:
                enqueue_resume(agent, thread, answer, opts.queue, url=existing_store(store))
                return
            # Held from the first read: a second resume is refused before printing anything.
            held.enter_context(agent.lease(thread))
            before = agent.result(thread)
            waits = {p.kind for p in before.pending} - {"breakpoint"}
            if answer is not None and "ask_human" not in waits:
                fail(
                    f"thread {thread!r} is not waiting for an answer to ask_human "
                    f"({before.status}); leave out --answer (see `thinkgraph pending {thread}`)"
                )
            if waits and answer is None and mode != "json" and is_interactive(opts.no_input):
                if mode != "quiet":
                    typer.echo(to_text(before.chain, tools=loaded))
                events: Iterable[RunEvent] = [RunEnd(before)]  # asked at once, by `follow`
            elif "approval" in waits and answer is None:
                fail(
                    f"thread {thread!r} waits for approval, which resume cannot give; use "
                    f"thinkgraph approve|reject|respond|decide (`thinkgraph pending {thread}` "
                    "prints the exact commands)"
                )
            elif waits and answer is None:
                fail(
                    f"thread {thread!r} waits for an answer to ask_human; pass --answer retry, "
                    "--answer abort or --answer 'guidance for the model'"
                )
            else:
                if mode in ("live", "plain"):
                    typer.echo(to_text(before.chain, tools=loaded))
                events = agent.resume_events(thread, answer)
            follow(agent, thread, events, flags, mode=mode, no_input=opts.no_input,
                   tools=loaded, chain=before.chain)  # fmt: skip

    guarded(go)
