"""`thinkgraph`: run, inspect and draw agents from the terminal.

Exit codes: 0 the run is done, 1 the run failed (its stop reason is printed), 2 bad usage,
configuration or storage (one line says what to fix), 3 the run is paused or unfinished.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from thinkgraph.errors import ThinkgraphError
from thinkgraph.types import StepLimits

__all__ = ["EXIT_FAILED", "EXIT_PAUSED", "EXIT_USAGE", "app", "main"]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAUSED = 3

app = typer.Typer(
    name="thinkgraph",
    help="Run LLM agents as explicit, checkpointed state machines: think, act, observe, "
    "validate, reset.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        envvar="THINKGRAPH_STORE",
        help="Where runs are kept: sqlite:///path.db, memory:// or postgresql://…",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        envvar="THINKGRAPH_MODEL",
        help="Any litellm model string, e.g. openai/gpt-4o-mini.",
    ),
]
ApiBaseOpt = Annotated[
    str | None,
    typer.Option("--api-base", envvar="THINKGRAPH_API_BASE", help="Base URL of the model API."),
]


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _default_store() -> str:
    from thinkgraph.storage import DEFAULT_STORE

    return DEFAULT_STORE


def _load_tool(spec: str) -> list[Any]:
    from thinkgraph.tools.builtin import calculator

    if spec == "calculator":
        return [calculator]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        _fail(f"--tools {spec!r}: use module:attribute (e.g. mytools:search) or 'calculator'")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        _fail(f"--tools {spec!r}: cannot import {module_name!r} ({exc})")
    if not hasattr(module, attr):
        _fail(f"--tools {spec!r}: module {module_name!r} has no attribute {attr!r}")
    value = getattr(module, attr)
    return list(value) if isinstance(value, list | tuple) else [value]


def _model(model: str | None, api_base: str | None, script: Path | None) -> Any:
    from thinkgraph.llm import ScriptedModel

    if script is not None:
        try:
            replies = json.loads(script.read_text())
        except (OSError, ValueError) as exc:
            _fail(f"--script {script}: cannot read a JSON list of replies ({exc})")
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            _fail(f"--script {script}: expected a JSON list of strings")
        return ScriptedModel(replies)
    if not model:
        _fail(
            "no model: pass --model openai/gpt-4o-mini (any litellm model string) or set "
            "THINKGRAPH_MODEL; `thinkgraph demo` runs without one"
        )
    if api_base is None:
        return model
    from thinkgraph.llm import LiteLLMModel

    return LiteLLMModel(model, api_base=api_base)


def _print_steps(steps: Iterator[Any]) -> None:
    from thinkgraph.views import format_step

    for step in steps:
        typer.echo(format_step(step))


def _report(result: Any) -> None:
    typer.echo("")
    if result.status == "done":
        typer.echo(f"answer: {result.answer}")
    c = result.counters
    cost = f"${c.cost_usd:.6f}" if c.cost_known else "cost unknown"
    typer.echo(
        f"status: {result.status}"
        + (f" ({result.stop_reason})" if result.stop_reason else "")
        + f" · thread {result.thread_id} · {c.steps} think steps · {c.tokens} tokens · {cost}"
    )
    if result.detail:
        typer.echo(f"detail: {result.detail}")


def _exit_for(result: Any) -> None:
    if result.status == "failed":
        raise typer.Exit(EXIT_FAILED)
    if result.status in ("paused", "running"):
        typer.echo(f"continue with: thinkgraph resume {result.thread_id}")
        raise typer.Exit(EXIT_PAUSED)


def _guarded(fn: Callable[[], None]) -> None:
    try:
        fn()
    except ThinkgraphError as exc:
        _fail(str(exc))


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
        _fail(f"--min-steps {min_steps} is above --max-steps {max_steps}; lower or raise one")
    loaded = [t for spec in tools or [] for t in _load_tool(spec)]
    chosen = _model(model, api_base, script)

    def go() -> None:
        limits = StepLimits(min_steps=min_steps, max_steps=max_steps)
        with Agent(chosen, loaded, limits=limits, store=store or _default_store()) as agent:
            thread_id = thread or uuid.uuid4().hex[:12]
            steps = agent.stream(task, thread_id)
            if quiet:
                for _ in steps:
                    pass
            else:
                _print_steps(steps)
            result = agent.result(thread_id)
        _report(result)
        _exit_for(result)

    _guarded(go)


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

    loaded = [t for spec in tools or [] for t in _load_tool(spec)]
    chosen = _model(model, api_base, script)

    def go() -> None:
        with Agent(chosen, loaded, store=store or _default_store()) as agent:
            result = agent.resume(thread)
        from thinkgraph.views import to_text

        typer.echo(to_text(result.chain))
        _report(result)
        _exit_for(result)

    _guarded(go)


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
        with Agent(ScriptedModel([]), store=store or _default_store()) as agent:
            result = agent.result(thread)
        typer.echo(to_text(result.chain))
        _report(result)

    _guarded(go)


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
        _fail(f"--format {fmt!r} is not supported yet; use --format mermaid")
    agent = Agent(ScriptedModel([]), store="memory://")
    typer.echo(agent.draw("mermaid"))


@app.command()
def demo(
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    store: StoreOpt = "",
) -> None:
    """Run the demo: an analyst agent answers a question about a sample sales database."""
    from thinkgraph.agent import Agent
    from thinkgraph.demo import DEMO_TASK, create_sales_db, scripted_analyst
    from thinkgraph.tools.builtin import calculator, sql_query

    db = create_sales_db(Path(".thinkgraph") / "demo" / "sales.db")
    if model:
        chosen: Any = _model(model, api_base, None)
        typer.echo(f"model: {model} (through litellm)")
    else:
        chosen = scripted_analyst()
        typer.echo(
            "model: ScriptedModel — no model is configured, so a scripted analyst plays the "
            "model (it reads the real tool results). Use --model or THINKGRAPH_MODEL for a "
            "real one."
        )
    store_url = store or _default_store()
    typer.echo(f"store: {store_url}\ntask:  {DEMO_TASK}\n")

    def go() -> None:
        limits = StepLimits(min_steps=1, max_steps=8)
        tools = [calculator, sql_query(db)]
        with Agent(chosen, tools, limits=limits, store=store_url) as agent:
            thread_id = f"demo-{uuid.uuid4().hex[:8]}"
            _print_steps(agent.stream(DEMO_TASK, thread_id))
            result = agent.result(thread_id)
            diagram = agent.draw("mermaid")
        _report(result)
        typer.echo(f"\nThe graph (Mermaid):\n{diagram}")
        typer.echo(f"See this run again with: thinkgraph show {result.thread_id}")
        _exit_for(result)

    _guarded(go)


def main() -> None:
    """Entry point of the `thinkgraph` script."""
    app()
