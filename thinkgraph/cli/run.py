"""`thinkgraph run` and `thinkgraph resume`."""

from __future__ import annotations

import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from thinkgraph.cli._app import (
    ApiBaseOpt,
    EnqueueOpt,
    ModelOpt,
    QueueOpt,
    StoreOpt,
    app,
    default_store,
    existing_store,
    exit_for,
    fail,
    guarded,
    load_tool,
    make_model,
    report,
)
from thinkgraph.cli._pending import AgentFlags, is_interactive, resume_asking
from thinkgraph.types import StepLimits

NoInputOpt = Annotated[
    bool,
    typer.Option(
        "--no-input",
        help="Never ask: when the run pauses, print what it waits for and exit 3. "
        "(Also the behaviour without a terminal.)",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="For programs: one JSON object per line (each step, a pause, the end) and "
        "nothing else on stdout. Never asks.",
    ),
]


@app.command(rich_help_panel="Run")
def run(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    script: Annotated[
        Path | None,
        typer.Option(help="Use a ScriptedModel with the replies in this JSON list instead."),
    ] = None,
    store: StoreOpt = "",
    thread: Annotated[str | None, typer.Option("--thread", "-t", help="Thread id.")] = None,
    max_steps: Annotated[int, typer.Option(min=1, help="At most this many think steps.")] = 12,
    min_steps: Annotated[int, typer.Option(min=1, help="No final answer before this.")] = 1,
    tools: Annotated[
        list[str] | None,
        typer.Option("--tools", help="A tool to give the agent: module:attr or 'calculator'."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the result.")] = False,
    on_failure: Annotated[
        str,
        typer.Option(help="After repeated failures: 'abort' the run or 'ask' a person."),
    ] = "abort",
    no_input: NoInputOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a task and print the chain as it is written.

    In a terminal, a status line shows the node running, the step, tokens, cost and time
    while it goes, and a pause asks inline (approve / edit / reject / respond, or retry /
    abort / guidance) and the run goes on; otherwise it exits 3 saying how to continue.
    """
    from thinkgraph.agent import Agent
    from thinkgraph.cli._progress import choose_mode, exit_code, show

    if min_steps > max_steps:
        fail(f"--min-steps {min_steps} is above --max-steps {max_steps}; lower or raise one")
    if on_failure not in ("abort", "ask"):
        fail(f"--on-failure {on_failure!r}: use 'abort' or 'ask'")
    loaded = [t for spec in tools or [] for t in load_tool(spec)]
    chosen = make_model(model, api_base, script)
    flags = AgentFlags(store, tools or (), model, api_base, str(script) if script else None)

    def go() -> None:
        limits = StepLimits(
            min_steps=min_steps,
            max_steps=max_steps,
            failure_policy="ask_human" if on_failure == "ask" else "abort",
        )
        with Agent(chosen, loaded, limits=limits, store=store or default_store()) as agent:
            thread_id = thread or uuid.uuid4().hex[:12]
            mode = choose_mode(as_json=as_json, quiet=quiet)
            result = show(agent.events(task, thread_id), mode, tools=loaded)
            if mode != "json" and result.status == "paused" and is_interactive(no_input):
                result = resume_asking(agent, result)
        if mode == "json":
            raise typer.Exit(exit_code(result))
        report(result, loaded)
        exit_for(result, flags)

    guarded(go)


@app.command(rich_help_panel="Pause, resume, time travel")
def resume(
    thread: Annotated[str, typer.Argument(help="The thread to continue.")],
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    script: Annotated[Path | None, typer.Option(help="Replies for a ScriptedModel.")] = None,
    store: StoreOpt = "",
    tools: Annotated[list[str] | None, typer.Option("--tools", help="module:attr")] = None,
    answer: Annotated[
        str | None,
        typer.Option(help="The answer to an ask_human pause: retry, abort or guidance text."),
    ] = None,
    no_input: NoInputOpt = False,
    as_json: JsonOpt = False,
    enqueue: EnqueueOpt = False,
    queue: QueueOpt = "thinkgraph",
) -> None:
    """Continue a run: after a crash, past a breakpoint, or with --answer to ask_human.

    Give it the run's --tools and model (--model or --script): this process runs the rest.
    Approvals are answered with `approve`, `reject`, `respond` or `decide` (or inline, in a
    terminal).
    """
    from thinkgraph.agent import Agent
    from thinkgraph.cli._progress import choose_mode, exit_code, show
    from thinkgraph.views import to_text

    mode = choose_mode(as_json=as_json)
    loaded = [t for spec in tools or [] for t in load_tool(spec)]
    chosen = make_model(model, api_base, script, needed=not enqueue)
    flags = AgentFlags(store, tools or (), model, api_base, str(script) if script else None)

    def go() -> None:
        from thinkgraph.cli.worker import enqueue_resume

        with Agent(chosen, loaded, store=existing_store(store)) as agent, ExitStack() as held:
            if enqueue:
                enqueue_resume(agent, thread, answer, queue)
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
            if waits and answer is None and mode != "json" and is_interactive(no_input):
                typer.echo(to_text(before.chain, tools=loaded))
                result = resume_asking(agent, before)
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
                if mode != "json":
                    typer.echo(to_text(before.chain, tools=loaded))
                events = agent.resume_events(thread, answer)
                result = show(events, mode, tools=loaded, chain=before.chain)
        if mode == "json":
            raise typer.Exit(exit_code(result))
        report(result, loaded)
        exit_for(result, flags)

    guarded(go)
