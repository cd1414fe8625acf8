"""What a paused run waits for, as the CLI shows it, and how a person answers it.

Shared by `run`/`resume` (which ask inline in a terminal) and by `pending`, `approve`,
`reject`, `respond` and `decide` (which answer from the shell, one command at a time).

`run` and `resume` ask inline when stdin and stdout are terminals and `--no-input` is not
given. THINKGRAPH_INTERACTIVE=1 forces the questions (e.g. for tests that feed stdin
through a pipe); THINKGRAPH_INTERACTIVE=0 turns them off.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import typer

from thinkgraph.errors import ResumeValueError
from thinkgraph.hitl import Approve, Edit, Pending, Reject, Respond

__all__ = [
    "AgentFlags",
    "ask",
    "describe",
    "how_to_continue",
    "is_interactive",
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

    def __str__(self) -> str:
        parts: list[str] = []
        if self.store:
            parts += ["--store", _without_password(self.store)]
        for spec in self.tools:
            parts += ["--tools", spec]
        if self.script:
            parts += ["--script", self.script]
        elif self.model:
            parts += ["--model", self.model]
        if self.api_base and not self.script:
            parts += ["--api-base", self.api_base]
        return "".join(f" {shlex.quote(p)}" for p in parts)


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


def _shown_args(p: Pending) -> str:
    # What a person reads is masked like every other view (secret-looking fields and
    # credential patterns); the edit prompt's default keeps the real values, since an
    # edit must be valid arguments.
    from thinkgraph.views.redact import Redactor

    shown = Redactor([]).value(p.args) if p.args is not None else None
    return _args_json(shown, p.raw_args)


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


def describe(pending: Sequence[Pending]) -> str:
    """What a paused run waits for, readable: each call with its arguments, or the question."""
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
            lines.append(f"stopped at a breakpoint {p.when} {p.node} (think step {p.step})")
    return "\n".join(lines)


def how_to_continue(
    thread: str, pending: Sequence[Pending], flags: AgentFlags | str = ""
) -> list[str]:
    """The exact commands that continue a paused (or unfinished) run."""
    t = shlex.quote(thread)
    approvals = [p for p in pending if p.kind == "approval"]
    if len(approvals) == 1:
        p = approvals[0]
        c = shlex.quote(p.call_id or "")
        edit = shlex.quote(_args_json(p.args, p.raw_args, indent=None))
        return [
            f"thinkgraph approve {t} {c}{flags}",
            f"thinkgraph approve {t} {c} --edit {edit}{flags}",
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


def print_new_steps(chain: Sequence[Any], seen: int) -> None:
    """Print the steps a resume added after the first `seen` ones, redacted."""
    from thinkgraph.views import format_step
    from thinkgraph.views.redact import Redactor

    redactor = Redactor(chain)
    for step in chain[seen:]:
        typer.echo(format_step(redactor.step(step)))


def _choose(question: str, options: Sequence[str]) -> str:
    while True:
        word = str(typer.prompt(question, default=options[0])).strip().lower()
        matches = [o for o in options if word and o.startswith(word)]
        if len(matches) == 1:
            return matches[0]
        typer.echo(f"error: answer {', '.join(options[:-1])} or {options[-1]}")


def _ask_call(p: Pending) -> Approve | Edit | Reject | Respond:
    typer.echo(f"\ncall {p.call_id}  {p.tool}  (think step {p.step})")
    typer.echo("  args: " + _shown_args(p).replace("\n", "\n  "))
    if p.thought:
        typer.echo(_indented(p.thought, "  thought: "))
    choice = _choose("approve, edit, reject or respond?", ("approve", "edit", "reject", "respond"))
    if choice == "approve":
        return Approve()
    if choice == "reject":
        return Reject(reason=typer.prompt("reason", default="rejected by a person"))
    if choice == "respond":
        return Respond(text=typer.prompt("the observation the model should see"))
    while True:
        text = typer.prompt("new args (JSON object)", default=_args_json(p.args, p.raw_args, None))
        try:
            value = json.loads(text)
        except ValueError as exc:
            typer.echo(f"error: not JSON ({exc}); try again")
            continue
        if isinstance(value, dict):
            return Edit(args=value)
        typer.echo("error: the arguments must be a JSON object; try again")


def ask(pending: Sequence[Pending]) -> Any:
    """Ask a person at the terminal for the answer to a pause; None stops asking.

    Returns the `decisions` for `Agent.resume`: a mapping of call id to decision for
    approvals, "retry"/"abort"/guidance text for ask_human, or "" to go on past a breakpoint.
    """
    approvals = [p for p in pending if p.kind == "approval"]
    if approvals:
        noun = "1 call" if len(approvals) == 1 else f"{len(approvals)} calls"
        typer.echo(f"\nwaiting for approval of {noun}")
        return {p.call_id: _ask_call(p) for p in approvals}
    if any(p.kind == "ask_human" for p in pending):
        typer.echo(describe(pending))
        answer = typer.prompt("retry, abort, or type guidance for the model", default="retry")
        return answer.strip() or "retry"
    typer.echo(describe(pending))
    return "" if typer.confirm("continue?", default=True) else None


def resume_asking(agent: Any, result: Any) -> Any:
    """Ask about each pause and resume, until the run ends or the person stops answering.

    A refused answer (say an edit that fails the tool's schema) is shown and asked again:
    the run stayed paused exactly as it was.
    """
    while result.status == "paused" and result.pending:
        try:
            answer = ask(result.pending)
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
        print_new_steps(result.chain, seen)
    return result
