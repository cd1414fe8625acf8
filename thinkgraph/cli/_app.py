"""The `thinkgraph` Typer app and what its commands share: errors, tools, output.

Commands live in their own modules (run.py, inspect.py, demo.py, …) and register on `app`;
their options are declared once in `_options.py`. This module imports no other module of
the CLI but `_options`: the others build on it.

Exit codes: 0 the run is done, 1 the run failed (its stop reason is printed), 2 bad usage,
configuration or storage (one line says what to fix), 3 the run is paused or unfinished,
130 Ctrl-C (a line says how to continue the run), 141 stdout was closed (`| head`).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import typer
from typer import _click as click
from typer._click.globals import get_current_context
from typer.core import TyperArgument, TyperCommand, TyperOption

from thinkgraph.cli._options import STORE_NAMED
from thinkgraph.errors import ThinkgraphError

__all__ = [
    "EXIT_CLOSED_PIPE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_PAUSED",
    "EXIT_USAGE",
    "Command",
    "app",
    "default_store",
    "existing_store",
    "fail",
    "guarded",
    "import_spec",
    "load_mcp",
    "load_tool",
    "load_tools",
    "print_steps",
    "report",
]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAUSED = 3
EXIT_INTERRUPTED = 130
"""Ctrl-C, as shells report SIGINT (128 + 2)."""
EXIT_CLOSED_PIPE = 141
"""Whoever read stdout stopped reading (`| head`), as shells report SIGPIPE (128 + 13)."""


class Command(TyperCommand):
    """A command whose help reads like other tools': arguments in capitals (``TASK``,
    ``[CALL_IDS]...``) in the usage line and the list, and flags without a type."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperArgument) and param.metavar is None and param.name:
                param.metavar = param.name.upper() + ("..." if param.nargs != 1 else "")
            elif isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
                param.metavar = ""  # a flag takes no value: no <bool> beside it
        return params

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument) and param.name:
                name = param.name.upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces


class _App(typer.Typer):
    """The app, whose commands are `Command`s unless one asks for another class."""

    def command(  # type: ignore[override]
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **options: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return super().command(name, cls=cls or Command, **options)


app = _App(
    name="thinkgraph",
    help="Run LLM agents as explicit, checkpointed state machines: think, act, observe, "
    "validate, reset.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Docstring paragraphs are reflowed to the terminal, not broken where the source is.
    rich_markup_mode="markdown",
)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def write_file(output: Path, data: str | bytes, what: str) -> None:
    """Write a command's `-o` file and say so; a file that cannot be written fails the command."""
    try:
        if isinstance(data, bytes):
            output.write_bytes(data)
        else:
            output.write_text(data, encoding="utf-8")
    except OSError as exc:
        fail(f"-o {output}: cannot write the file ({exc.strerror or exc})")
    typer.echo(f"wrote {output} ({what})")


def log_options(level: str, fmt: str) -> tuple[str, str]:
    """``--log-level`` and ``--log-format``, checked before anything starts; a bad value
    is one line naming the choices (`thinkgraph.views.logs.configure_logging` uses them)."""
    from thinkgraph.views.logs import check_log_options

    try:
        return check_log_options(level, fmt)
    except ThinkgraphError as exc:
        fail(str(exc))


def default_store() -> str:
    from thinkgraph.storage import DEFAULT_STORE

    return DEFAULT_STORE


def existing_store(store: str) -> str:
    """The store URL for a command that reads runs; a SQLite file must already exist.

    Reading must not create a store: a mistyped --store would otherwise leave an empty
    database behind and report "no run" instead of the real problem.
    """
    from thinkgraph.errors import StorageError
    from thinkgraph.storage import sqlite_path

    url = store or default_store()
    try:
        path = sqlite_path(url)
    except StorageError as exc:
        fail(str(exc))
    if path is not None and not path.exists():
        fail(f"no store at {path}: nothing has run there yet; check --store (or run a task)")
    return url


def load_tool(spec: str) -> list[Any]:
    """The tools one `--tools` names: 'calculator', or a module:attr that holds what
    `Agent(tools=...)` takes (a Tool, a typed function, a LangChain tool, or a list or
    tuple of them).

    Every command loads its tools here, so each takes the same values and refuses the
    same ones, with one line that names the attribute and what is expected.
    """
    from thinkgraph.tools.builtin import calculator

    if spec == "calculator":
        return [calculator]
    value = import_spec("--tools", spec, "mytools:search, or 'calculator'")
    if isinstance(value, list | tuple):
        return [_as_tool(spec, item, "holds") for item in value]
    return [_as_tool(spec, value, "is")]


def load_tools(specs: Iterable[str] | None, mcp: list[str] | None = None) -> list[Any]:
    """The tools of every `--tools` and `--mcp` a command was given, in that order."""
    return [t for spec in specs or () for t in load_tool(spec)] + load_mcp(mcp)


def load_mcp(specs: list[str] | None) -> list[Any]:
    """The tools of the MCP servers `--mcp` names, started now and kept until the command
    ends; a server that does not start is one line (exit 2)."""
    if not specs:
        return []
    from thinkgraph.tools.mcp import MCPServerError, MCPTools

    for spec in specs:
        if not spec.strip():
            fail(f"--mcp {spec!r}: give a command line ('python my_server.py') or an http URL")
    servers = MCPTools(specs)
    try:
        tools = servers.open()
    except (MCPServerError, ThinkgraphError) as exc:
        fail(f"--mcp: {exc}")
    ctx = get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(servers.close)
    return tools


def _as_tool(spec: str, item: Any, verb: str) -> Any:
    from langchain_core.tools import BaseTool

    from thinkgraph.tools import Tool, from_langchain, tool

    if isinstance(item, Tool):
        return item
    if isinstance(item, BaseTool):  # before `callable`: a LangChain tool is callable too
        try:
            return from_langchain(item)
        except ThinkgraphError as exc:
            fail(f"--tools {spec!r}: cannot use LangChain tool {item.name!r} ({exc})")
    if not callable(item) or isinstance(item, type):
        kind = "class" if isinstance(item, type) else type(item).__name__
        what = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        fail(
            f"--tools {spec!r} {verb} {what}, not a tool: give a Tool, a typed function, "
            "or a list of them"
        )
    try:
        return tool(item)
    except (ThinkgraphError, TypeError, ValueError) as exc:
        fail(f"--tools {spec!r}: cannot make a tool of {_name(item)} ({exc})")


def load_breakpoints(specs: Iterable[str] | None) -> dict[str, list[str]] | None:
    """`--breakpoint before:NODE|after:NODE` options as `Agent(breakpoints=...)` takes them
    (the agent checks the node names against its graph's)."""
    if not specs:
        return None
    points: dict[str, list[str]] = {"before": [], "after": []}
    for spec in specs:
        when, sep, node = spec.partition(":")
        if not sep or when.strip() not in points or not node.strip():
            fail(f"--breakpoint {spec!r}: use before:NODE or after:NODE (e.g. before:act)")
        points[when.strip()].append(node.strip())
    return points


def load_validators(specs: Iterable[str] | None) -> list[Any]:
    """The validators `--validator module:attr` names: a callable, or a list of them."""
    found: list[Any] = []
    for spec in specs or ():
        value = import_spec("--validator", spec, "mychecks:non_empty")
        items = list(value) if isinstance(value, list | tuple) else [value]
        for item in items:
            if not callable(item) or isinstance(item, type):
                fail(
                    f"--validator {spec!r} holds {type(item).__name__}, not a validator: give "
                    "a function (answer, state) -> Verdict, or a list of them"
                )
            found.append(item)
    return found


def _name(item: Any) -> str:
    return str(getattr(item, "__qualname__", None) or type(item).__name__)


def import_spec(option: str, spec: str, example: str) -> Any:
    """The attribute a module:attr (or path/to/file.py:attr) option names, imported from
    the working directory by the one importer every address goes through."""
    from thinkgraph.graphs.address import GraphAddressError, load_attr

    try:
        return load_attr(spec, option, base=Path.cwd())
    except GraphAddressError as exc:
        fail(f"{exc} (e.g. {example})" if "use module:attribute" in str(exc) else str(exc))


def print_steps(steps: Iterator[Any], tools: Iterable[Any] = ()) -> None:
    """Print steps as they come, redacted like every view: secrets never reach the terminal.

    Calls to tools not in `tools` are masked in full. A node's steps are printed once they
    are all in: the thought that quotes a call's secret comes before the call itself.
    """
    from thinkgraph.views import format_step
    from thinkgraph.views.redact import Redactor

    redactor = Redactor([], {t.name: t for t in tools}, mask_unknown=True)
    for _, by_node in itertools.groupby(steps, key=lambda step: step.node):
        held = list(by_node)
        for step in held:
            redactor.learn(step)
        for step in held:
            typer.echo(format_step(redactor.step(step)))


def report(result: Any, tools: Iterable[Any] = (), redactor: Any = None, job: Any = None) -> None:
    """The run's summary lines; the answer and detail are redacted like every view.

    `redactor` is one the caller learned the run's chain with already (with `tools` and
    `mask_unknown=True`), so a long chain is not learned again. `job`: the run's job in the
    worker queue while it says more than the run (`RunSummary.job`): its state is the
    run's status.
    """
    from thinkgraph.views._run import shown_state, state_line
    from thinkgraph.views.redact import Redactor

    if redactor is None:
        redactor = Redactor(result.chain, {t.name: t for t in tools}, mask_unknown=True)
    typer.echo("")
    if result.status == "done":
        typer.echo(f"answer: {redactor.text(result.answer or '')}")
    c = result.counters
    cost = f"${c.cost_usd:.6f}" if c.cost_known else "cost unknown"
    typer.echo(
        f"status: {result.status_text() if job is None else job.text()}"
        + f" · thread {result.thread_id} · {c.steps} think steps · {c.tokens} tokens · {cost}"
    )
    if result.detail:
        typer.echo(f"detail: {redactor.text(result.detail)}")
    for key, value in shown_state(result.state, redactor).items():
        typer.echo(f"state: {state_line(key, value)}")


def guarded(fn: Callable[[], None]) -> None:
    """Run a command's body; what it raises that the user can act on becomes one line.

    That is a `ThinkgraphError`, or a fault of the store (damaged, full, unreachable: see
    `storage_fault`) wherever in the command it surfaced. A closed stdout ends the command
    quietly (exit 141). Anything else is a bug and keeps its traceback.
    """
    from thinkgraph.storage.checkpointers import storage_fault

    try:
        fn()
    except (typer.Exit, typer.Abort):
        raise  # the command has already said what it had to
    except BrokenPipeError:
        # Nobody reads stdout any more (`| head -1`): end quietly, as other tools do. What
        # is still buffered goes nowhere, so closing stdout at exit raises nothing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise typer.Exit(EXIT_CLOSED_PIPE) from None
    except Exception as exc:
        fault = storage_fault(exc, STORE_NAMED.get() or default_store())
        if fault is not None:
            fail(str(fault))
        if isinstance(exc, ThinkgraphError):
            fail(str(exc))
        raise
