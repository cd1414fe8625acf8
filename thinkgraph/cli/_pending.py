"""What a paused run waits for, as the CLI shows it, and how a person answers it.

Shared by `run`/`resume` (which ask inline in a terminal) and by `pending`, `approve`,
`reject`, `respond` and `decide` (which answer from the shell, one command at a time).

`run` and `resume` ask inline when stdin and stdout are terminals and `--no-input` is not
given. THINKGRAPH_INTERACTIVE=1 forces the questions (e.g. for tests that feed stdin
through a pipe); THINKGRAPH_INTERACTIVE=0 turns them off.

What a person reads of a pause is redacted like every view (`views.redact.Redactor` with
the run's tools, the sensitive fields the run recorded, and `mask_unknown`): the
arguments, the thought and the inline edit's default. A "***" left in edited arguments
keeps the proposed value there, so a masked call can be edited without typing its secrets.

No command printed to be pasted carries a masked value: the `--edit` example holds
`EDIT_PLACEHOLDER` where a value is masked, a line says which fields those are, and an
edit that still holds the placeholder is refused (`keep_masked`), so pasting the example
as it is runs nothing. The inline question has no default: a bare Enter asks again.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import typer

from thinkgraph.cli._app import EXIT_FAILED, EXIT_PAUSED, load_tool
from thinkgraph.errors import ResumeValueError
from thinkgraph.hitl import Approve, Edit, Pending, Reject, Respond
from thinkgraph.state import BaseStep
from thinkgraph.tools.base import Tool
from thinkgraph.views.redact import MASK, Redactor, unknown_tools_note, unmasked

__all__ = [
    "EDIT_PLACEHOLDER",
    "AgentFlags",
    "ask",
    "describe",
    "exit_for",
    "how_to_continue",
    "is_interactive",
    "keep_masked",
    "masked_pending",
    "print_new_steps",
    "resume_asking",
]


@dataclass(frozen=True, slots=True)
class AgentFlags:
    """The options a command was given to rebuild the agent, echoed in the hints it prints.

    A run is continued by whichever process answers it, so that process needs the run's
    tools and model again; the printed commands carry them so they can be pasted as is.
    """

    store: str = ""
    tools: Sequence[str] = ()
    model: str | None = None
    api_base: str | None = None
    script: str | None = None
    mcp: Sequence[str] = ()
    """The `--mcp` servers (their tools are the run's too)."""
    graph: str | None = None
    """The `--graph` given (a run's recorded graph is imported only when named or listed)."""
    validators: Sequence[str] = ()
    """The `--validator`s (code, so not stored with the run: each command takes them)."""

    def __str__(self) -> str:
        parts: list[str] = []
        if self.store:
            parts += ["--store", _without_password(self.store)]
        if self.graph:
            parts += ["--graph", self.graph]
        for spec in self.validators:
            parts += ["--validator", spec]
        for spec in self.tools:
            parts += ["--tools", spec]
        for server in self.mcp:
            parts += ["--mcp", server]
        if self.script:
            parts += ["--script", self.script]
        elif self.model:
            parts += ["--model", self.model]
        if self.api_base and not self.script:
            parts += ["--api-base", self.api_base]
        return "".join(f" {shlex.quote(p)}" for p in parts)

    @classmethod
    def given(
        cls,
        store: str,
        tools: Sequence[str] | None,
        model: str | None = None,
        api_base: str | None = None,
        script: Path | None = None,
        mcp: Sequence[str] | None = None,
        graph: str | None = None,
        validators: Sequence[str] | None = None,
    ) -> AgentFlags:
        """The flags as a command's options hold them (None where not given)."""
        script_path = str(script) if script else None
        return cls(
            store, tuple(tools or ()), model, api_base, script_path, tuple(mcp or ()), graph,
            tuple(validators or ()),
        )  # fmt: skip

    def loaded_tools(self) -> list[Tool]:
        """The tools `--tools` names (already imported by the command that was given them)."""
        return [t for spec in self.tools for t in load_tool(spec)]


def _without_password(url: str) -> str:
    # A hint printed to the terminal must not echo a database password.
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def is_interactive(no_input: bool) -> bool:
    """Whether `run`/`resume` may ask a person inline."""
    if no_input:
        return False
    forced = os.environ.get("THINKGRAPH_INTERACTIVE")
    if forced in ("0", "1"):
        return forced == "1"
    return sys.stdin.isatty() and sys.stdout.isatty()


EDIT_PLACEHOLDER = "<masked: type the value>"
"""What the printed `--edit` example holds where a value is masked; refused if left in."""

_CONTENT = ("args", "raw_args", "thought", "question", "details")
"""The fields of a `Pending` that may hold a secret."""


def masked_pending(
    pending: Sequence[Pending],
    tools: Iterable[Tool] = (),
    chain: Sequence[BaseStep] = (),
) -> tuple[list[Pending], str | None]:
    """What a paused run waits for as a person may read it, and a note when whole calls
    were masked (tools not given).

    Args:
        pending: what the run waits for.
        tools: the run's tools; a call to a tool not among them has every argument masked.
        chain: the run's steps, so a secret met anywhere in it is masked in the thought too.
    """
    redactor = Redactor(chain, {t.name: t for t in tools}, mask_unknown=True)
    shown = []
    for p in pending:
        masked = redactor.pending(p)
        # Only what carries content is taken from the masked copy: the kind, node, tool
        # and ids stay as they are, even when a secret happens to spell one of them.
        shown.append(p.model_copy(update={k: masked[k] for k in _CONTENT}))
    return shown, unknown_tools_note(redactor.unknown_tools)


def keep_masked(args: dict[str, Any], proposed: dict[str, Any] | None) -> dict[str, Any]:
    """Edited arguments with each "***" replaced by the proposed value it masked, as every
    door reads an edit of masked arguments (`views.redact.unmasked`).

    Raises:
        ValueError: a value is still `EDIT_PLACEHOLDER` (the printed example pasted
            without typing the masked value); the message names it.

    Example:
        >>> keep_masked({"door": "back", "pin": "***"}, {"door": "front", "pin": "4821"})
        {'door': 'back', 'pin': '4821'}
    """
    left = _placeholders(args)
    if left:
        which = ", ".join(f'"{name}"' for name in left)
        raise ValueError(
            f'{which} {"is" if len(left) == 1 else "are"} still "{EDIT_PLACEHOLDER}": put '
            'the value the call should use there, or "***" to keep the proposed one'
        )
    kept: dict[str, Any] = unmasked(args, proposed)
    return kept


def _placeholders(value: Any, path: str = "") -> list[str]:
    """Where `value` still holds `EDIT_PLACEHOLDER`, as dotted names."""
    if value == EDIT_PLACEHOLDER:
        return [path or "the arguments"]
    items: Any = ()
    if isinstance(value, dict):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    return [name for key, item in items for name in _placeholders(item, key)]


def _with_placeholders(value: Any, path: str, masked: list[str]) -> Any:
    """`value` with each "***" replaced by `EDIT_PLACEHOLDER`; their names go to `masked`."""
    if value == MASK:
        masked.append(path)
        return EDIT_PLACEHOLDER
    if isinstance(value, dict):
        return {
            k: _with_placeholders(v, f"{path}.{k}" if path else str(k), masked)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_with_placeholders(v, f"{path}[{i}]", masked) for i, v in enumerate(value)]
    return value


def _edit_example(t: str, c: str, p: Pending, flags: AgentFlags | str) -> list[str]:
    """The `--edit` command to paste, with no masked value in it, and what to fill in."""
    if p.args is None:  # a bare input: the new arguments must be typed as an object
        return [f"thinkgraph approve {t} {c} --edit '<the arguments as a JSON object>'{flags}"]
    masked: list[str] = []
    args = _with_placeholders(p.args, "", masked)
    edit = shlex.quote(json.dumps(args, ensure_ascii=False))
    lines = [f"thinkgraph approve {t} {c} --edit {edit}{flags}"]
    if masked:
        one = len(masked) == 1
        lines.append(
            f"  ({', '.join(masked)} {'is' if one else 'are'} masked: put "
            f'{"its value" if one else "their values"} in place of "{EDIT_PLACEHOLDER}", '
            'or "***" to keep the proposed one; pasted as it is, the edit is refused)'
        )
    return lines


def _shown_args(p: Pending) -> str:
    return _args_json(p.args, p.raw_args)


def _args_json(args: dict[str, Any] | None, raw: str | None, indent: int | None = 2) -> str:
    if args is None:
        return repr(raw)
    return json.dumps(args, indent=indent, ensure_ascii=False)


def _indented(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _first_line(text: str) -> str:
    # Failure messages repeat the whole reply format; their first line says what went wrong.
    first, _, rest = text.strip().partition("\n")
    return first + (" …" if rest.strip() else "")


def describe(
    pending: Sequence[Pending], tools: Iterable[Tool] = (), chain: Sequence[BaseStep] = ()
) -> str:
    """What a paused run waits for, readable and redacted (see `masked_pending`): each call
    with its arguments, or the question."""
    pending, note = masked_pending(pending, tools, chain)
    approvals = [p for p in pending if p.kind == "approval"]
    lines: list[str] = []
    if approvals:
        noun = "1 call" if len(approvals) == 1 else f"{len(approvals)} calls"
        lines.append(f"waiting for approval of {noun}:")
        for p in approvals:
            lines.append(f"  call {p.call_id}  {p.tool}  (think step {p.step})")
            lines.append("    args: " + _shown_args(p).replace("\n", "\n    "))
            if p.thought:
                lines.append(_indented(p.thought, "    thought: "))
    for p in pending:
        if p.kind == "ask_human":
            lines.append(f"waiting for a person (think step {p.step}): {p.question}")
            for key, title in (("accomplished", "accomplished"), ("failed", "failed")):
                items = p.details.get(key) or []
                lines.append(f"  {title}:" + ("" if items else " nothing"))
                lines.extend(f"    - {_first_line(str(item))}" for item in items)
            if p.details.get("last_thought"):
                lines.append(f"  last thought: {p.details['last_thought']}")
        elif p.kind == "breakpoint":
            lines.append(f"paused (breakpoint {p.when} {p.node}) at think step {p.step}")
    if note and approvals:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def how_to_continue(
    thread: str,
    pending: Sequence[Pending],
    flags: AgentFlags | str = "",
    tools: Iterable[Tool] = (),
    chain: Sequence[BaseStep] = (),
) -> list[str]:
    """The exact commands that continue a paused (or unfinished) run, the first of which
    continues it as it stands.

    None carries a masked value: the `--edit` example holds `EDIT_PLACEHOLDER` where a
    value is masked, followed by a line (in parentheses) naming those fields.
    """
    pending, _ = masked_pending(pending, tools, chain)
    t = shlex.quote(thread)
    approvals = [p for p in pending if p.kind == "approval"]
    if len(approvals) == 1:
        p = approvals[0]
        c = shlex.quote(p.call_id or "")
        return [
            f"thinkgraph approve {t} {c}{flags}",
            *_edit_example(t, c, p, flags),
            f"thinkgraph reject {t} {c} --reason 'why not'{flags}",
            f"thinkgraph respond {t} {c} 'what the call would have returned'{flags}",
        ]
    if approvals:
        ids = [shlex.quote(p.call_id or "") for p in approvals]
        mixed = f"--approve {ids[0]} " + " ".join(f"--reject {i}='why not'" for i in ids[1:])
        return [
            f"thinkgraph approve {t}{flags}    (every call)",
            f"thinkgraph reject {t} --reason 'why not'{flags}    (every call)",
            f"thinkgraph decide {t} {mixed}{flags}",
        ]
    if any(p.kind == "ask_human" for p in pending):
        return [f"thinkgraph resume {t} --answer retry|abort|'guidance for the model'{flags}"]
    return [f"thinkgraph resume {t}{flags}"]


def print_new_steps(chain: Sequence[Any], seen: int, tools: Iterable[Tool] = ()) -> None:
    """Print the steps a resume added after the first `seen` ones, redacted like every view
    (with the run's `tools`; calls to other tools are masked in full)."""
    from thinkgraph.views import format_step

    redactor = Redactor(chain, {t.name: t for t in tools}, mask_unknown=True)
    for step in chain[seen:]:
        typer.echo(format_step(redactor.step(step)))
    note = unknown_tools_note(redactor.unknown_tools)
    if note:
        typer.echo(f"note: {note}")


def _choose(question: str, options: Sequence[str]) -> str:
    """One of `options`, asked until the answer names one: there is no default, so a bare
    Enter (a key pressed by habit) never approves a call."""
    while True:
        word = str(typer.prompt(question, default="", show_default=False)).strip().lower()
        matches = [o for o in options if word and o.startswith(word)]
        if len(matches) == 1:
            return matches[0]
        typer.echo(f"error: answer {', '.join(options[:-1])} or {options[-1]}")


def _ask_call(p: Pending, shown: Pending) -> Approve | Edit | Reject | Respond:
    """Ask about call `p`, showing it as `shown` (redacted)."""
    typer.echo(f"\ncall {shown.call_id}  {shown.tool}  (think step {shown.step})")
    typer.echo("  args: " + _shown_args(shown).replace("\n", "\n  "))
    if shown.thought:
        typer.echo(_indented(shown.thought, "  thought: "))
    choice = _choose("approve, edit, reject or respond?", ("approve", "edit", "reject", "respond"))
    if choice == "approve":
        return Approve()
    if choice == "reject":
        return Reject(reason=typer.prompt("reason", default="rejected by a person"))
    if choice == "respond":
        return Respond(text=typer.prompt("the observation the model should see"))
    while True:
        default = _args_json(shown.args, shown.raw_args, None)
        text = typer.prompt("new args (JSON object)", default=default)
        try:
            value = json.loads(text)
        except ValueError as exc:
            typer.echo(f"error: not JSON ({exc}); try again")
            continue
        if not isinstance(value, dict):
            typer.echo("error: the arguments must be a JSON object; try again")
            continue
        try:
            return Edit(args=keep_masked(value, p.args))
        except ValueError as exc:
            typer.echo(f"error: {exc}; try again")


def ask(
    pending: Sequence[Pending], tools: Iterable[Tool] = (), chain: Sequence[BaseStep] = ()
) -> Any:
    """Ask a person at the terminal for the answer to a pause; None stops asking.

    What is shown is redacted with the run's `tools` and `chain` (see `masked_pending`).
    Returns the `decisions` for `Agent.resume`: a mapping of call id to decision for
    approvals, "retry"/"abort"/guidance text for ask_human, or "" to go on past a breakpoint.
    """
    tools = list(tools)
    shown, note = masked_pending(pending, tools, chain)
    approvals = [(p, s) for p, s in zip(pending, shown, strict=True) if p.kind == "approval"]
    if approvals:
        noun = "1 call" if len(approvals) == 1 else f"{len(approvals)} calls"
        typer.echo(f"\nwaiting for approval of {noun}")
        if note:
            typer.echo(f"note: {note}")
        return {p.call_id: _ask_call(p, s) for p, s in approvals}
    if any(p.kind == "ask_human" for p in pending):
        typer.echo(describe(pending, tools, chain))
        answer = typer.prompt("retry, abort, or type guidance for the model", default="retry")
        return answer.strip() or "retry"
    typer.echo(describe(pending, tools, chain))
    return "" if typer.confirm("continue?", default=True) else None


def resume_asking(agent: Any, result: Any) -> Any:
    """Ask about each pause and resume, until the run ends or the person stops answering.

    A refused answer (say an edit that fails the tool's schema) is shown and asked again:
    the run stayed paused exactly as it was.
    """
    tools = list(agent.deps.tools)
    while result.status == "paused" and result.pending:
        try:
            answer = ask(result.pending, tools, result.chain)
        except typer.Abort:  # Ctrl-C or end of input: leave the run paused, say how to go on
            typer.echo("")
            break
        if answer is None:
            break
        seen = len(result.chain)
        try:
            result = agent.resume(result.thread_id, answer if answer != "" else None)
        except ResumeValueError as exc:
            typer.echo(f"error: {exc}")
            continue
        print_new_steps(result.chain, seen, tools)
    return result


def exit_for(result: Any, flags: Any = "") -> None:
    """Exit with the run's code; for a paused run, first say what it waits for and how to
    continue it (`flags`: the store, tools and model options to repeat in those commands)."""
    if result.status == "failed":
        raise typer.Exit(EXIT_FAILED)
    if result.status in ("paused", "running"):
        tools = flags.loaded_tools() if isinstance(flags, AgentFlags) else []
        if result.pending:
            typer.echo(describe(result.pending, tools, result.chain))
        commands = how_to_continue(result.thread_id, result.pending, flags, tools, result.chain)
        typer.echo("continue with:" + "".join(f"\n  {c}" for c in commands))
        raise typer.Exit(EXIT_PAUSED)
