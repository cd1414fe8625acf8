"""`thinkgraph show` and `thinkgraph draw`: look at runs and graphs."""

from __future__ import annotations

from typing import Annotated

import typer

from thinkgraph.cli._app import (
    StoreOpt,
    app,
    default_store,
    fail,
    guarded,
    report,
)


@app.command()
def show(
    thread: Annotated[str, typer.Argument(help="The thread to show.")],
    store: StoreOpt = "",
) -> None:
    """Print a run's chain as readable text."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel
    from thinkgraph.views import to_text

    def go() -> None:
        with Agent(ScriptedModel([]), store=store or default_store()) as agent:
            result = agent.result(thread)
        typer.echo(to_text(result.chain))
        report(result)

    guarded(go)


@app.command()
def draw(
    fmt: Annotated[str, typer.Option("--format", "-f", help="Diagram format: mermaid.")] = (
        "mermaid"
    ),
) -> None:
    """Print the agent graph as a diagram (Mermaid renders on GitHub)."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel

    if fmt != "mermaid":
        fail(f"--format {fmt!r} is not supported yet; use --format mermaid")
    agent = Agent(ScriptedModel([]), store="memory://")
    typer.echo(agent.draw("mermaid"))
