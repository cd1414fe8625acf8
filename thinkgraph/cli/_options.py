"""The options and arguments the commands share, declared once.

A command takes ``store: StoreOpt = ""`` rather than re-declaring ``--store``: its flag,
its help and its environment variable are the same on every command that has it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import typer

__all__ = [
    "STORE_NAMED",
    "AgentOptions",
    "AgentScriptOpt",
    "AgentSpecOpt",
    "AgentToolsOpt",
    "AnswerQueueOpt",
    "ApiBaseOpt",
    "BreakpointOpt",
    "ContinueOptions",
    "EnqueueOpt",
    "GraphOpt",
    "JsonOpt",
    "LogFormatOpt",
    "LogLevelOpt",
    "MaxStepsOpt",
    "McpOpt",
    "ModelOpt",
    "ModelOptions",
    "NoInputOpt",
    "OutputOpt",
    "QueueOpt",
    "QuietOpt",
    "ReadToolsOpt",
    "RunOptions",
    "ScriptOpt",
    "StoreOpt",
    "ToolsOpt",
    "ValidatorOpt",
    "with_options",
]

R = TypeVar("R")

STORE_NAMED: ContextVar[str] = ContextVar("thinkgraph_cli_store", default="")
"""The --store the running command was given, so a store fault can name the store."""


def _remember_store(value: str) -> str:
    STORE_NAMED.set(value)
    return value


StoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        envvar="THINKGRAPH_STORE",
        help="Where runs are kept: sqlite:///path.db, memory:// or postgresql://…",
        callback=_remember_store,
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
ScriptOpt = Annotated[
    Path | None,
    typer.Option("--script", help="Use a ScriptedModel with the replies in this JSON list."),
]
QueueOpt = Annotated[
    str,
    typer.Option("--queue", help="The job queue (a worker serves the queue it is started on)."),
]
AnswerQueueOpt = Annotated[
    str,
    typer.Option(
        "--queue",
        help="With --enqueue: the job queue (default: the queue of the worker that last "
        "advanced the run).",
        show_default=False,
    ),
]
LogLevelOpt = Annotated[
    str,
    typer.Option(
        "--log-level",
        envvar="THINKGRAPH_LOG_LEVEL",
        help="debug, info, warning or error (litellm's own lines only at debug).",
    ),
]
LogFormatOpt = Annotated[
    str,
    typer.Option(
        "--log-format",
        envvar="THINKGRAPH_LOG_FORMAT",
        help="text, or json: one object per line (time, level, logger, message, job_id, "
        "thread_id).",
    ),
]
EnqueueOpt = Annotated[
    bool,
    typer.Option(
        "--enqueue",
        help="Hand the continuation to a worker (`thinkgraph worker`, PostgreSQL store) "
        "instead of running it here.",
    ),
]


def _tools_option(help: str) -> Any:
    """`--tools MODULE:ATTR`, repeatable; what the tools are for differs per command."""
    return typer.Option("--tools", metavar="MODULE:ATTR", help=help)


ToolsOpt = Annotated[
    list[str] | None,
    _tools_option(
        "The run's tools: a Tool, a typed function or a list of them, as module:attr "
        "(or 'calculator'); repeatable."
    ),
]
ReadToolsOpt = Annotated[
    list[str] | None,
    _tools_option(
        "The run's tools (module:attr), to show the arguments that are not secret "
        "(their visibility and sensitive fields); without them every argument is masked."
    ),
]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")]
McpOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        metavar="COMMAND|URL",
        help="The tools of an MCP server: a command line that starts it over stdio "
        "('python my_server.py') or its streamable HTTP URL; repeatable.",
    ),
]
GraphOpt = Annotated[
    str | None,
    typer.Option(
        "--graph",
        metavar="MODULE:FUNCTION",
        help="Your graph builder (a function taking Deps and returning an uncompiled "
        "StateGraph) as module:function or path/to/file.py:function. A run records its graph "
        "and goes on on it, so leave this out for an existing run. Default: the run's own "
        "graph; else the one graph a langgraph.json in this folder names; else ours.",
    ),
]

BreakpointOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--breakpoint",
        metavar="before:NODE|after:NODE",
        help="Pause the run before or after a node (ours or yours); repeatable. A run keeps "
        "its breakpoints when it is resumed.",
    ),
]
ValidatorOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--validator",
        metavar="MODULE:ATTR",
        help="A validator, (answer, state) -> Verdict, as module:attr (or a list of them); "
        "repeatable. The answer goes through validate before it is final.",
    ),
]

# How a command that moves a run on shows it (see `_progress.follow`): the same three
# flags on `run` and on every command that continues a run.
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
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print only the result.")]

# The agent a long-running command (worker, serve) serves: --agent, or tools and a model.
AgentSpecOpt = Annotated[
    str | None,
    typer.Option("--agent", help="An Agent (or a function making one) as module:attr; its store."),
]
AgentToolsOpt = Annotated[list[str] | None, _tools_option("Without --agent: the tools.")]
AgentScriptOpt = Annotated[
    Path | None, typer.Option(help="Without --agent: ScriptedModel replies (a JSON list).")
]
MaxStepsOpt = Annotated[int, typer.Option(min=1, help="Without --agent: think steps.")]


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """The parts an agent is built from: its tools, the model it calls and its graph."""

    tools: ToolsOpt = None
    mcp: McpOpt = None
    graph: GraphOpt = None
    model: ModelOpt = None
    api_base: ApiBaseOpt = None
    script: ScriptOpt = None
    validator: ValidatorOpt = None


@dataclass(frozen=True, slots=True)
class AgentOptions(ModelOptions):
    """The options that name the agent a long-running command serves (`serve`, `worker`):
    `--agent`, or the tools, model, limits and graph to build one from."""

    tools: AgentToolsOpt = None
    script: AgentScriptOpt = None
    agent_spec: AgentSpecOpt = None
    max_steps: MaxStepsOpt = 12
    breakpoint: BreakpointOpt = None


@dataclass(frozen=True, slots=True)
class RunOptions(ModelOptions):
    """The options of a command that takes a stored run on (`fork`, and those of
    `ContinueOptions`): the run's store, graph, tools and model, and how the rest of the
    run is shown."""

    store: StoreOpt = ""
    no_input: NoInputOpt = False
    as_json: JsonOpt = False
    quiet: QuietOpt = False


@dataclass(frozen=True, slots=True)
class ContinueOptions(RunOptions):
    """The options of every command that continues a paused run (`resume`, `approve`,
    `reject`, `respond`, `decide`): `RunOptions`, and whether a worker runs it instead."""

    enqueue: EnqueueOpt = False
    queue: AnswerQueueOpt = ""


def with_options(group: type[Any]) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the options of `group` (a dataclass of option fields) as one value.

    The command takes one parameter annotated with `group`; the CLI shows each field as
    an option of its own, after the command's, and the command gets them back together.
    One declaration serves every command that shares them.
    """
    hints = get_type_hints(group, include_extras=True)
    extra = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                          annotation=hints[f.name])
        for f in fields(group)
    ]  # fmt: skip

    def wrap(command: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(command, eval_str=True)
        (name,) = [p.name for p in signature.parameters.values() if p.annotation is group]
        own = [p for p in signature.parameters.values() if p.name != name]

        @functools.wraps(command)
        def run(**given: Any) -> R:
            grouped = group(**{f.name: given.pop(f.name) for f in fields(group)})
            return command(**given, **{name: grouped})

        params = [*own, *extra]
        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap
