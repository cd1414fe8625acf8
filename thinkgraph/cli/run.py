"""`thinkgraph run` and `thinkgraph resume`."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated

import typer

from thinkgraph.cli._app import (
    ApiBaseOpt,
    ModelOpt,
    StoreOpt,
    app,
    default_store,
    exit_for,
    fail,
    guarded,
    load_tool,
    make_model,
    print_steps,
    report,
)
from thinkgraph.types import StepLimits


@app.command()
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
) -> None:
    """Run a task and print the chain as it is written."""
    from thinkgraph.agent import Agent

    if min_steps > max_steps:
        fail(f"--min-steps {min_steps} is above --max-steps {max_steps}; lower or raise one")
    loaded = [t for spec in tools or [] for t in load_tool(spec)]
    chosen = make_model(model, api_base, script)

    def go() -> None:
        limits = StepLimits(min_steps=min_steps, max_steps=max_steps)
        with Agent(chosen, loaded, limits=limits, store=store or default_store()) as agent:
            thread_id = thread or uuid.uuid4().hex[:12]
            steps = agent.stream(task, thread_id)
            if quiet:
                for _ in steps:
                    pass
            else:
                print_steps(steps)
            result = agent.result(thread_id)
        report(result)
        exit_for(result)

    guarded(go)


@app.command()
def resume(
    thread: Annotated[str, typer.Argument(help="The thread to continue.")],
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    script: Annotated[Path | None, typer.Option(help="Replies for a ScriptedModel.")] = None,
    store: StoreOpt = "",
    tools: Annotated[list[str] | None, typer.Option("--tools", help="module:attr")] = None,
) -> None:
    """Continue a run whose process stopped before it finished."""
    from thinkgraph.agent import Agent

    loaded = [t for spec in tools or [] for t in load_tool(spec)]
    chosen = make_model(model, api_base, script)

    def go() -> None:
        with Agent(chosen, loaded, store=store or default_store()) as agent:
            result = agent.resume(thread)
        from thinkgraph.views import to_text

        typer.echo(to_text(result.chain))
        report(result)
        exit_for(result)

    guarded(go)
