"""How `thinkgraph run` and `resume` show a run as it goes, from its events.

`choose_mode` picks one of four ways:

- ``live``: stdout is a terminal. The chain lines print as they are written, above a rich
  status line (current node, step n of max, tokens, cost, elapsed) that goes away when
  the run stops;
- ``plain``: stdout is not a terminal (a pipe, a file, CI). The chain lines only, no
  cursor tricks;
- ``json``: one JSON object per line for other programs, and nothing else on stdout:
  ``{"event": "step", "thread_id", "step"}`` per step, ``{"event": "paused",
  "thread_id", "pending"}`` when the run pauses, and last ``{"event": "end",
  "thread_id", "status", "answer", "stop_reason", "detail", "counters"}``;
- ``quiet``: nothing; the caller prints the result.

`follow` is the one printer of every command that moves a run on (`run`, `resume`,
`approve`, `reject`, `respond`, `decide`, `fork`): it shows the events in the chosen mode,
asks at a pause when a person is there, then prints the outcome and exits with its code.
Ctrl-C stops the run at its last checkpoint and says how to continue it (`interruptible`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import typer

from thinkgraph.cli._app import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_PAUSED, report
from thinkgraph.cli._pending import exit_for
from thinkgraph.runs import NodeStart, RunEnd, RunEvent, RunStart, StepEvent
from thinkgraph.state import BaseStep, Counters
from thinkgraph.views.redact import Redactor, unknown_tools_note

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from thinkgraph.result import RunResult

__all__ = [
    "Mode",
    "ProgressLine",
    "choose_mode",
    "exit_code",
    "finished",
    "follow",
    "interruptible",
    "json_events",
    "show",
]

Mode: TypeAlias = Literal["live", "plain", "json", "quiet"]


def choose_mode(*, as_json: bool = False, quiet: bool = False) -> Mode:
    """json or quiet when asked; else live in a terminal and plain lines elsewhere."""
    if as_json:
        return "json"
    if quiet:
        return "quiet"
    return "live" if sys.stdout.isatty() else "plain"


def exit_code(result: RunResult) -> int:
    """The command's exit code for a run: 0 done, 1 failed, 3 paused or unfinished."""
    if result.status == "done":
        return 0
    return EXIT_FAILED if result.status == "failed" else EXIT_PAUSED


class ProgressLine:
    """The live status line: what runs now and what the run has used so far.

    Example:
        >>> line = ProgressLine(clock=lambda: 0.0)
        >>> line.text()
        'starting · step 0 of ? · 0 tokens · $0.0000 · 0.0s'
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self.node = "starting"
        """The node running now (or that ran last)."""
        self.counters = Counters()
        self.max_steps: int | None = None
        self.step = 0
        """The think step the run is at: a think that started counts, before it ends."""

    def update(self, event: RunEvent) -> None:
        """Take in one event of the run."""
        if isinstance(event, RunStart):
            self.max_steps = event.limits.max_steps
            self.counters = event.counters
        elif isinstance(event, NodeStart):
            self.node, self.counters = event.node, event.counters
            # think counts its step when it ends; the line shows it from when it starts
            if event.node == "think":
                self.step = event.counters.steps + 1
        elif isinstance(event, StepEvent):
            self.counters = event.counters
        else:
            self.node, self.counters = event.result.status, event.result.counters
        self.step = max(self.step, self.counters.steps)

    def text(self) -> str:
        """The line: ``think · step 3 of 12 · 1,234 tokens · $0.0012 · 4.2s``."""
        c = self.counters
        limit = "?" if self.max_steps is None else str(self.max_steps)
        cost = f"${c.cost_usd:.4f}" if c.cost_known else "cost unknown"
        elapsed = f"{self._clock() - self._started:.1f}s"
        step = f"step {self.step} of {limit}"
        return f"{self.node} · {step} · {c.tokens:,} tokens · {cost} · {elapsed}"

    def __rich__(self) -> RenderableType:
        from rich.spinner import Spinner

        # Rendered again on every refresh, so the elapsed time keeps moving between steps.
        return Spinner("dots", text=self.text(), style="cyan")


def json_events(event: RunEvent, redactor: Redactor | None = None) -> list[dict[str, Any]]:
    """The JSON lines for one event: a step, or the pause and the end (none for others).

    Everything is redacted as in `show`: secrets never leave in these lines either.
    """
    redactor = redactor or Redactor([])
    if isinstance(event, StepEvent):
        step = redactor.shown(event.step).model_dump(mode="json")
        return [{"event": "step", "thread_id": event.thread_id, "step": step}]
    if not isinstance(event, RunEnd):
        return []
    r = event.result
    lines: list[dict[str, Any]] = []
    if r.status == "paused":
        pending = [redactor.pending(p) for p in r.pending]
        lines.append({"event": "paused", "thread_id": r.thread_id, "pending": pending})
    lines.append(
        {
            "event": "end",
            "thread_id": r.thread_id,
            "status": r.status,
            "answer": None if r.answer is None else redactor.text(r.answer),
            "stop_reason": r.stop_reason,
            "detail": redactor.text(r.detail),
            "counters": {**r.counters.model_dump(mode="json"), "tokens": r.counters.tokens},
        }
    )
    return lines


def show(
    events: Iterable[RunEvent],
    mode: Mode,
    *,
    console: Console | None = None,
    clock: Callable[[], float] = time.monotonic,
    tools: Iterable[Any] = (),
    chain: Sequence[BaseStep] = (),
    redactor: Redactor | None = None,
) -> RunResult:
    """Show a run's events as they come, and return the result its `RunEnd` carries.

    Args:
        events: from `Agent.events` or `Agent.resume_events`.
        mode: see the module docstring.
        console: where the live display draws (stdout by default).
        clock: the clock for the elapsed time.
        tools: the run's tools, whose `sensitive` fields are masked in every line; calls
            to other tools are masked in full, as in every view (a note says so).
        chain: the steps written before these events (a resume's), so a secret they hold
            is masked where the new steps repeat it.
        redactor: what masks the lines, and learns every step shown (so the caller can
            mask the report alike); by default a new one for `tools` and `chain`.
    """
    from thinkgraph.views import format_step

    if redactor is None:
        redactor = _redactor(tools, chain)
    events = _learned(events, redactor)
    result: RunResult | None = None
    if mode == "live":
        result = _show_live(events, console, clock, redactor)
    else:
        for event in events:
            if isinstance(event, RunEnd):
                result = event.result
            if mode == "json":
                for line in json_events(event, redactor):
                    typer.echo(json.dumps(line, ensure_ascii=False))
            elif mode == "plain" and isinstance(event, StepEvent):
                typer.echo(format_step(redactor.shown(event.step)))
    if result is None:  # every stream ends with a RunEnd; a bug if not
        raise RuntimeError("the run's events ended without a RunEnd")
    note = unknown_tools_note(redactor.unknown_tools)
    if note and mode in ("live", "plain"):
        typer.echo(f"note: {note}")
    return result


def _redactor(tools: Iterable[Any], chain: Sequence[BaseStep]) -> Redactor:
    return Redactor(chain, {t.name: t for t in tools}, mask_unknown=True)


def _outcome(result: RunResult, redactor: Redactor) -> RunResult:
    """The result for `report`: its answer and detail masked by the redactor that showed the
    run, and no chain, so `report` does not learn every step again (a reply with 200,000
    secret keys took as long again). The redactor learns any step it did not show first."""
    for step in result.chain:
        redactor.learn(step)  # a step it learned already is not read again
    answer = None if result.answer is None else redactor.text(result.answer)
    masked: dict[str, Any] = {"answer": answer, "detail": redactor.text(result.detail), "chain": []}
    return result.model_copy(update=masked)


def follow(
    agent: Any,
    thread: str,
    events: Iterable[RunEvent],
    flags: Any,
    *,
    mode: Mode,
    no_input: bool,
    tools: Sequence[Any],
    chain: Sequence[BaseStep] = (),
) -> None:
    """Show a run moving on, then end the command with its outcome.

    Shows `events` as `mode` says (see `show`); at a pause, asks inline when a person is
    there (not in json mode, not with `no_input`); then prints the result and how to
    continue it (`report`, `exit_for`) and exits with the run's code. In json mode the
    lines are all there is, and the code says the rest.

    Args:
        agent: the agent the events come from, to resume it with inline answers.
        thread: the run's thread id.
        events: from `Agent.events`, `Agent.resume_events`, or `finished` for a call that
            does not stream.
        flags: the command's `AgentFlags`, repeated in the commands that continue the run.
        mode: from `choose_mode`.
        no_input: `--no-input`.
        tools: the run's tools (for redaction).
        chain: the steps written before these events.
    """
    from thinkgraph.cli._pending import is_interactive, resume_asking

    with interruptible(agent, thread, flags):
        redactor = _redactor(tools, chain)
        result = show(events, mode, redactor=redactor)
        shown = result
        if mode != "json" and result.status == "paused" and is_interactive(no_input):
            result = resume_asking(agent, result)
    if mode == "json":
        raise typer.Exit(exit_code(result))
    report(_outcome(result, redactor) if result is shown else result, tools)
    exit_for(result, flags)


@contextmanager
def interruptible(agent: Any, thread: str, flags: Any) -> Iterator[None]:
    """Ctrl-C in the block ends the command with one line on stderr, and exit 130.

    The core has cancelled the run on its loop by then (see thinkgraph/_sync.py): it stays
    at its last checkpoint, and the line says the step and the command that continues it
    (with the store, tools and model options in `flags`).
    """
    try:
        yield
    except KeyboardInterrupt:
        typer.echo(_interrupted(agent, thread, flags), err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _interrupted(agent: Any, thread: str, flags: Any) -> str:
    from thinkgraph.cli._pending import how_to_continue
    from thinkgraph.errors import ThreadNotFoundError

    try:
        result = agent.result(thread)
    except ThreadNotFoundError:
        return f"interrupted before thread {thread} was stored: nothing to continue"
    where = f"interrupted at step {result.counters.steps}"
    if result.status in ("done", "failed"):
        return f"{where}, after the run ended ({result.status})"
    tools = flags.loaded_tools() if hasattr(flags, "loaded_tools") else []
    command = how_to_continue(thread, result.pending, flags, tools, result.chain)[0]
    return f"{where}; continue with: {command}"


def finished(result: RunResult, first: int = 0) -> list[RunEvent]:
    """The events of a call that does not stream (`Agent.fork`): its steps from `first`
    on, then its end."""
    steps: list[RunEvent] = [
        StepEvent(result.thread_id, step.node, step, result.counters)
        for step in result.chain[first:]
    ]
    return [*steps, RunEnd(result)]


def _learned(events: Iterable[RunEvent], redactor: Redactor) -> Iterator[RunEvent]:
    """The events, each node's steps held back until all of them are learned.

    A model's raw reply is written before the tool call parsed from it, in the same node
    update; learning the whole update first means the reply is shown with the call's
    secret arguments already known, and masked.
    """
    held: list[StepEvent] = []
    for event in events:
        if held and not (isinstance(event, StepEvent) and event.node == held[0].node):
            yield from held
            held = []
        if isinstance(event, StepEvent):
            redactor.learn(event.step)
            held.append(event)
        else:
            yield event
    yield from held


def _show_live(
    events: Iterable[RunEvent],
    console: Console | None,
    clock: Callable[[], float],
    redactor: Redactor,
) -> RunResult | None:
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from thinkgraph.views import format_step

    console = console or Console()
    line = ProgressLine(clock)
    result = None
    # transient: the status line is erased when the run stops; the chain lines stay.
    with Live(line, console=console, transient=True, refresh_per_second=8) as live:
        for event in events:
            line.update(event)
            if isinstance(event, StepEvent):
                live.console.print(Text(format_step(redactor.shown(event.step))), soft_wrap=True)
            elif isinstance(event, NodeStart):
                live.refresh()
            elif isinstance(event, RunEnd):
                result = event.result
    return result
