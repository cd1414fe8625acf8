"""`thinkgraph demo`: the analyst agent on a sample sales database."""

from __future__ import annotations

import uuid
from typing import Any

import typer

from thinkgraph.cli._app import app, default_store, guarded, print_steps, report
from thinkgraph.cli._options import ApiBaseOpt, ModelOpt, StoreOpt
from thinkgraph.cli._pending import exit_for
from thinkgraph.cli._runs import make_model
from thinkgraph.types import StepLimits


@app.command(rich_help_panel="Run")
def demo(
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    store: StoreOpt = "",
) -> None:
    """Run the demo: an analyst agent answers a question about a sample sales database."""
    from thinkgraph.agent import Agent
    from thinkgraph.demo import DEMO_DB, DEMO_TASK, create_sales_db, demo_tools, scripted_analyst

    db = create_sales_db(DEMO_DB)
    if model:
        chosen: Any = make_model(model, api_base, None)
        typer.echo(f"model: {model} (through litellm)")
    else:
        chosen = scripted_analyst()
        typer.echo(
            "model: ScriptedModel — no model is configured, so a scripted analyst plays the "
            "model (it reads the real tool results). Use --model or THINKGRAPH_MODEL for a "
            "real one."
        )
    store_url = store or default_store()
    typer.echo(f"store: {store_url}\ntask:  {DEMO_TASK}\n")

    def go() -> None:
        limits = StepLimits(min_steps=1, max_steps=8)
        tools = demo_tools(db)
        with Agent(chosen, tools, limits=limits, store=store_url) as agent:
            thread_id = f"demo-{uuid.uuid4().hex[:8]}"
            print_steps(agent.stream(DEMO_TASK, thread_id), tools)
            result = agent.result(thread_id)
            diagram = agent.draw("mermaid")
        report(result, tools)
        typer.echo(f"\nThe graph (Mermaid):\n{diagram}")
        typer.echo(f"See this run again with: thinkgraph show {result.thread_id}")
        exit_for(result)

    guarded(go)
