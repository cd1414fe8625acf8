"""`pending`, `approve`, `reject`, `respond` and `decide`: answering a paused run.

A paused run waits for one decision per waiting call, and nothing runs until every call
has one (a partial answer is refused). The commands keep to that rule without storing
half-answers anywhere:

- `approve T`, `reject T --reason R` answer every waiting call alike;
- `approve T C…`, `reject T C… --reason R`, `respond T C TEXT` answer the calls named,
  and refuse, naming the others, when other calls still wait;
- `decide T --approve C1 --edit C2='{…}' --reject C3='reason' --respond C4='text'` answers
  a mixed pause in one command.

What they print is redacted with the run's tools (`--tools`) and the sensitive fields the
run recorded; a "***" in edited arguments keeps the proposed value it masks, and the
placeholder of a printed `--edit` example left as it is is refused (see cli/_pending.py).

The command that answers also continues the run, so it needs the run's tools and model
(`--tools`, `--model` or `--script`), as `resume` does; with `--enqueue` it checks the
answer and hands the continuation to a worker instead (see cli/worker.py).
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Annotated, Any

import typer

from thinkgraph._sync import run_sync
from thinkgraph.cli._app import (
    app,
    existing_store,
    fail,
    guarded,
    load_mcp,
    load_tools,
)
from thinkgraph.cli._options import (
    ContinueOptions,
    GraphOpt,
    McpOpt,
    ReadToolsOpt,
    StoreOpt,
    with_options,
)
from thinkgraph.cli._pending import AgentFlags, describe, how_to_continue, keep_masked
from thinkgraph.cli._progress import choose_mode
from thinkgraph.cli._runs import (
    continuing_agent,
    make_model,
    read_graph,
    stopped_runs,
)
from thinkgraph.errors import ResumeValueError, RunNotStartedError, ThreadBusyError
from thinkgraph.hitl import Approve, Edit, Reject, Respond, check_approvals
from thinkgraph.storage.answers import answer_of, latest_answer

Decision = Approve | Edit | Reject | Respond

CallIdsArg = Annotated[
    list[str] | None, typer.Argument(help="Call ids to answer; none: every waiting call.")
]


def _json_args(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        fail(f'{what} is not valid JSON ({exc}); pass an object like \'{{"to": "a@b.c"}}\'')
    if not isinstance(value, dict):
        fail(f"{what} must be a JSON object of the tool's arguments, not {type(value).__name__}")
    return value


def _not_waiting(thread: str, result: Any) -> str:
    kinds = {p.kind for p in result.pending}
    if "ask_human" in kinds:
        return (
            f"thread {thread!r} waits for an answer to ask_human, not for approvals; use "
            f"thinkgraph resume {thread} --answer retry|abort|'guidance'"
        )
    go_on = f"continue it with thinkgraph resume {thread}"
    if "breakpoint" in kinds:
        return f"thread {thread!r} is {result.status_text()}, not for approval; {go_on}"
    if result.status == "running":
        return f"thread {thread!r} is {result.status_text(stopped=True)}, not paused; {go_on}"
    return f"thread {thread!r} is {result.status_text()}: nothing waits for approval"


def _answer_calls(thread: str, decide: Any, opts: ContinueOptions) -> None:
    """Check the decisions against what the run waits for, then resume it with them.

    `decide(waiting_ids)` builds the decisions from the ids of the calls that wait. Every
    check happens before `Agent.resume`, which checks again: a refused answer leaves the
    stored run exactly as it was. With a `queue`, the checked decisions go to a worker.
    The rest of the run is shown as `run` shows it, by `follow`. The run goes on on its
    own graph (`run_graph`).
    """
    from thinkgraph.cli._progress import follow
    from thinkgraph.cli.worker import enqueue_resume

    flags = AgentFlags.given(
        opts.store, opts.tools, opts.model, opts.api_base, opts.script, opts.mcp, opts.graph,
        opts.validator,
    )  # fmt: skip
    mode = choose_mode(as_json=opts.as_json, quiet=opts.quiet)
    queue = opts.queue if opts.enqueue else None
    loaded = load_tools(opts.tools, opts.mcp)
    chosen = make_model(
        opts.model, opts.api_base, opts.script, needed=queue is None, thread=(opts.store, thread)
    )

    def go() -> None:
        with (
            continuing_agent(
                opts.store, thread, opts.graph, chosen, loaded, opts.validator
            ) as agent,
            ExitStack() as held,
        ):
            # The pause the person answers: a run that left it refuses the answer, naming
            # the answer that won it (one answer per pause, `thinkgraph.storage.answers`).
            at, before = agent.driver.reader.result_at(thread)
            waiting = {p.call_id or "": p for p in before.pending if p.kind == "approval"}
            if before.status != "paused" or not waiting:
                won = answer_of(agent.driver.saver, thread, at)
                if won is not None:  # it left the pause the person saw: by whose answer
                    fail(won.refusal())
                if before.status == "running":
                    try:  # someone advances it: after whose answer, or who
                        held.enter_context(agent.lease(thread))
                    except ThreadBusyError as exc:
                        won = latest_answer(agent.driver.saver, thread)
                        fail(str(exc) if won is None else won.refusal())
                    before = agent.result(thread)
                fail(_not_waiting(thread, before))
            decisions = _kept(decide(sorted(waiting)), waiting)
            try:  # the one rule for answers (`hitl.check_approvals`), before anything moves
                check_approvals(list(waiting.values()), decisions, agent.deps.tools)
            except ResumeValueError as exc:
                fail(
                    f"thread {thread!r}: {exc}; answer every call in one command: thinkgraph "
                    f"decide {thread} --approve ID --edit ID='{{…}}' --reject ID='reason' "
                    "--respond ID='text'"
                )
            for call_id, decision in sorted(decisions.items()):
                name = waiting[call_id].tool or ""
                # Run here, an approved call needs its tool; queued, only an edit does (to
                # check the new arguments before a worker gets them).
                runs_here = queue is None and isinstance(decision, Approve)
                if (runs_here or isinstance(decision, Edit)) and agent.deps.tools.get(name) is None:
                    fail(
                        f"call {call_id} runs tool {name!r}, which this command was not "
                        "given; pass the run's tools with --tools module:attr"
                    )
            if queue is not None:
                enqueue_resume(
                    agent, thread, decisions, queue, at=at, url=existing_store(opts.store)
                )
                return
            claim = run_sync(lambda: agent.driver.claim_answer(thread, decisions, at=at))
            events = agent.resume_events(thread, decisions, answer=claim)
            follow(agent, thread, events, flags, mode=mode, no_input=opts.no_input,
                   tools=loaded, chain=before.chain)  # fmt: skip

    guarded(go)


def _kept(decisions: dict[str, Decision], waiting: dict[str, Any]) -> dict[str, Decision]:
    """The decisions with each edit's "***" back to the proposed value (see `keep_masked`);
    an edit that still holds the printed example's placeholder is refused."""
    kept: dict[str, Decision] = {}
    for call_id, d in decisions.items():
        if isinstance(d, Edit) and call_id in waiting:
            try:
                d = Edit(args=keep_masked(d.args, waiting[call_id].args))
            except ValueError as exc:
                fail(f"--edit for call {call_id}: {exc}")
        kept[call_id] = d
    return kept


@app.command(rich_help_panel="Pause, resume, time travel")
@with_options(ContinueOptions)
def approve(
    thread: Annotated[str, typer.Argument(help="The paused thread.")],
    call_ids: CallIdsArg = None,
    edit: Annotated[
        str | None,
        typer.Option(help="Run the one CALL_ID with these arguments instead (a JSON object)."),
    ] = None,
    *,
    opts: ContinueOptions,
) -> None:
    """Approve waiting calls (all of them without CALL_ID) and continue the run."""
    if edit is not None and len(call_ids or []) != 1:
        fail("--edit changes one call: name exactly one CALL_ID (thinkgraph pending shows them)")
    new_args = _json_args(edit, "--edit") if edit is not None else None

    def decide(waiting: list[str]) -> dict[str, Decision]:
        if new_args is not None:
            return {call_ids[0]: Edit(args=new_args)} if call_ids else {}
        return {c: Approve() for c in call_ids or waiting}

    _answer_calls(thread, decide, opts)


@app.command(rich_help_panel="Pause, resume, time travel")
@with_options(ContinueOptions)
def reject(
    thread: Annotated[str, typer.Argument(help="The paused thread.")],
    call_ids: CallIdsArg = None,
    reason: Annotated[
        str | None,
        typer.Option(help="Why not (required); the model sees it as the call's observation."),
    ] = None,
    *,
    opts: ContinueOptions,
) -> None:
    """Reject waiting calls (all of them without CALL_ID) and continue the run."""
    if not reason:
        fail("reject needs --reason TEXT: the model reads it instead of the call's result")

    def decide(waiting: list[str]) -> dict[str, Decision]:
        return {c: Reject(reason=reason or "") for c in call_ids or waiting}

    _answer_calls(thread, decide, opts)


@app.command(rich_help_panel="Pause, resume, time travel")
@with_options(ContinueOptions)
def respond(
    thread: Annotated[str, typer.Argument(help="The paused thread.")],
    call_id: Annotated[str, typer.Argument(help="The call to answer.")],
    text: Annotated[str, typer.Argument(help="The observation the model sees instead.")],
    *,
    opts: ContinueOptions,
) -> None:
    """Answer a call yourself instead of running it, and continue the run."""
    _answer_calls(thread, lambda _: {call_id: Respond(text=text)}, opts)


def _pairs(items: list[str] | None, option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items or []:
        call_id, sep, value = item.partition("=")
        if not sep or not call_id:
            fail(f"{option} {item!r}: use {option} CALL_ID=VALUE")
        pairs.append((call_id, value))
    return pairs


@app.command(rich_help_panel="Pause, resume, time travel")
@with_options(ContinueOptions)
def decide(
    thread: Annotated[str, typer.Argument(help="The paused thread.")],
    approve_ids: Annotated[
        list[str] | None, typer.Option("--approve", help="CALL_ID to run as proposed.")
    ] = None,
    edits: Annotated[
        list[str] | None, typer.Option("--edit", help="CALL_ID='{json args}' to run instead.")
    ] = None,
    rejects: Annotated[
        list[str] | None, typer.Option("--reject", help="CALL_ID='reason' not to run.")
    ] = None,
    responds: Annotated[
        list[str] | None, typer.Option("--respond", help="CALL_ID='observation' to give.")
    ] = None,
    *,
    opts: ContinueOptions,
) -> None:
    """Answer every waiting call of a pause in one command, each its own way."""
    answers: list[tuple[str, Decision]] = [(c, Approve()) for c in approve_ids or []]
    answers += [(c, Edit(args=_json_args(v, f"--edit {c}"))) for c, v in _pairs(edits, "--edit")]
    answers += [
        (c, Reject(reason=v or "rejected by a person")) for c, v in _pairs(rejects, "--reject")
    ]
    answers += [(c, Respond(text=v)) for c, v in _pairs(responds, "--respond")]
    seen: set[str] = set()
    for call_id, _ in answers:
        if call_id in seen:
            fail(f"call {call_id!r} is answered twice; give each call one decision")
        seen.add(call_id)
    if not answers:
        fail(
            "no decisions: give --approve ID, --edit ID='{…}', --reject ID='…' or --respond ID='…'"
        )
    _answer_calls(thread, lambda _: dict(answers), opts)


@app.command(rich_help_panel="Pause, resume, time travel")
def pending(
    thread: Annotated[str, typer.Argument(help="The thread to look at.")],
    store: StoreOpt = "",
    tools: ReadToolsOpt = None,
    mcp: McpOpt = None,
    graph: GraphOpt = None,
) -> None:
    """Say what a paused run waits for and print the commands that continue it."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel

    url = existing_store(store)
    flags = AgentFlags.given(store, tools, mcp=mcp, graph=graph)
    loaded = flags.loaded_tools() + load_mcp(mcp)

    def go() -> None:
        read_graph(store, thread, graph)  # the run is read from its record: no graph built
        with Agent(ScriptedModel([]), store=url) as agent:
            try:
                result = agent.result(thread)
            except RunNotStartedError as exc:  # handed to the workers: not yet
                typer.echo(f"{exc}; it waits for nothing from you")
                return
            stopped = result.status == "running" and bool(stopped_runs(agent, [thread]))
        if result.status in ("done", "failed"):
            why = f" ({result.stop_reason})" if result.stop_reason else ""
            typer.echo(f"thread {thread} is {result.status}{why}: it waits for nothing")
            return
        if result.pending:
            typer.echo(describe(result.pending, loaded, result.chain))
        else:
            state = "no process advances it" if stopped else "a process advances it now"
            typer.echo(f"thread {thread} is unfinished: {state}")
        missing = "--model or --script" if tools else "--tools and --model or --script"
        typer.echo(f"continue with (add the run's {missing}):")
        for command in how_to_continue(thread, result.pending, flags, loaded, result.chain):
            typer.echo(f"  {command}")
        from thinkgraph.storage import is_postgres_url

        if is_postgres_url(url):
            typer.echo("or hand it to a worker: add --enqueue (and --queue NAME) to that command")

    guarded(go)
