"""Pausing, answering and continuing runs from the command line.

The CLI runs tools from tests/cli/sample_tools.py (imported from the repo root, the
working directory of the test run) and a ScriptedModel from a JSON file; the process that
answers a pause is given the same tools and script, as a user's would be.
"""

from __future__ import annotations

import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests.cli import sample_tools
from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.state import ThoughtStep, ToolCall, ToolCallStep
from thinkgraph.storage import close_checkpointer, list_threads, open_checkpointer
from thinkgraph.types import NextAction

ROOT = Path(__file__).resolve().parents[2]
EMAIL = "tests.cli.sample_tools:send_email"
BOTH = "tests.cli.sample_tools:both"
REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_forced_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THINKGRAPH_INTERACTIVE", raising=False)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return path


@pytest.fixture
def answer_script(tmp_path: Path) -> Path:
    """Replies for runs set up without a model call: the first one is the answer."""
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(REPLIES[1:]))
    return path


def cli(*args: str, store: str = "", script: Path | None = None, tools: str = EMAIL,
        input: str | None = None, env: dict[str, str] | None = None) -> Result:  # fmt: skip
    """Invoke the CLI with the run's store, tools and model appended."""
    extra = ["--store", store] if store else []
    extra += ["--tools", tools] if tools else []
    extra += ["--script", str(script)] if script else []
    return runner.invoke(app, [*args, *extra], input=input, env=env)


def paused_email(store: str, thread: str, script: Path) -> str:
    """Start a run that pauses for approval of one send_email call; return its call id."""
    result = cli(
        "run", "email the ceo", "--thread", thread, "--no-input", store=store, script=script
    )
    assert result.exit_code == 3, result.output
    return stored(store, thread)["pending"][0].call_id  # type: ignore[no-any-return]


def paused_two_calls(store: str, thread: str) -> list[str]:
    """A run paused on two calls proposed in one think step, as a multi-call policy makes."""
    with Agent(ScriptedModel(REPLIES), sample_tools.both, store=store) as agent:
        state = agent._start("email and post")
        calls = [
            ToolCall(name="send_email", args={"to": "ceo@x.com", "body": "hi"}),
            ToolCall(name="post_note", args={"text": "emailed"}),
        ]
        state["chain"] += [
            ThoughtStep(node="think", text="both", next_action=NextAction.CONTINUE),
            *[ToolCallStep(node="think", call=c, think_step=1) for c in calls],
        ]
        state.update(
            pending_calls=calls,
            needs_approval=[c.id for c in calls],
            counters=state["counters"].model_copy(update={"steps": 1}),
        )
        config = agent._config(thread)
        agent.graph.update_state(config, state, as_node="think")
        agent.graph.invoke(None, config, durability="sync")
    return [c.id for c in calls]


def stored(store: str, thread: str) -> dict[str, Any]:
    """What a store holds for a run: enough to tell whether a command changed it."""
    with Agent(ScriptedModel([]), store=store) as agent:
        result = agent.result(thread)
        points = [p.checkpoint_id for p in agent.history(thread)]
    chain = [(s.number, s.id) for s in result.chain]
    return {"status": result.status, "chain": chain, "pending": result.pending, "points": points}


def one_error_line(result: Result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


# -- a pause, and how to continue it --------------------------------------------------------


def test_without_a_terminal_a_pause_exits_3_and_prints_the_commands_to_continue(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    result = cli("run", "email the ceo", "--thread", thread_id, store=sqlite_url, script=script)
    assert result.exit_code == 3, result.output
    call_id = stored(sqlite_url, thread_id)["pending"][0].call_id
    assert "waiting for approval of 1 call:" in result.output
    assert f"call {call_id}  send_email  (think step 1)" in result.output
    assert '"to": "ceo@x.com",' in result.output and "thought: tell the ceo" in result.output
    flags = f"--store {sqlite_url} --tools {EMAIL} --script {script}"
    assert f"  thinkgraph approve {thread_id} {call_id} {flags}\n" in result.output
    assert f"  thinkgraph reject {thread_id} {call_id} --reason 'why not' {flags}" in result.output


def test_pending_says_what_the_run_waits_for(store_url: str, script: Path, thread_id: str) -> None:
    call_id = paused_email(store_url, thread_id, script)
    result = cli("pending", thread_id, store=store_url)  # with --tools: the args can be shown
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "waiting for approval of 1 call:\n"
        f"  call {call_id}  send_email  (think step 1)\n"
        '    args: {\n      "to": "ceo@x.com",\n      "body": "hi"\n    }\n'
        "    thought: tell the ceo\n"
        "continue with (add the run's --model or --script):\n"
    )
    assert f"thinkgraph respond {thread_id} {call_id} 'what the call" in result.output


def test_approve_runs_the_call_and_finishes_the_run(
    store_url: str, script: Path, thread_id: str
) -> None:
    call_id = paused_email(store_url, thread_id, script)
    result = cli("approve", thread_id, call_id, store=store_url, script=script)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("#4   human       approve\n")
    assert "observation sent to ceo@x.com" in result.output
    assert f"status: done · thread {thread_id}" in result.output


def test_approve_with_edit_runs_the_call_with_the_new_arguments(
    store_url: str, script: Path, thread_id: str
) -> None:
    call_id = paused_email(store_url, thread_id, script)
    edit = '{"to": "ops@x.com", "body": "hi"}'
    result = cli("approve", thread_id, call_id, "--edit", edit, store=store_url, script=script)
    assert result.exit_code == 0, result.output
    assert "observation sent to ops@x.com" in result.output


def test_reject_gives_the_model_the_reason_and_runs_nothing(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    paused_email(sqlite_url, thread_id, script)
    result = cli("reject", thread_id, "--reason", "never email the ceo", store=sqlite_url,
                 script=script)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "observation error: " in result.output and "never email the ceo" in result.output
    assert "send_email → rejected" in result.output and "sent to" not in result.output


def test_respond_gives_the_model_the_person_s_text(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    call_id = paused_email(sqlite_url, thread_id, script)
    result = cli("respond", thread_id, call_id, "I sent it myself", store=sqlite_url, script=script)
    assert result.exit_code == 0, result.output
    assert "observation I sent it myself" in result.output


# -- pauses on several calls ------------------------------------------------------------------


def test_answering_one_call_of_several_is_refused_and_names_the_others(
    store_url: str, answer_script: Path, thread_id: str
) -> None:
    email, note = paused_two_calls(store_url, thread_id)
    before = stored(store_url, thread_id)
    line = one_error_line(
        cli("approve", thread_id, email, store=store_url, script=answer_script, tools=BOTH)
    )
    assert f"every waiting call needs a decision; missing: {note}" in line
    assert f"thinkgraph decide {thread_id}" in line
    assert stored(store_url, thread_id) == before


def test_decide_answers_every_call_its_own_way_in_one_command(
    store_url: str, answer_script: Path, thread_id: str
) -> None:
    email, note = paused_two_calls(store_url, thread_id)
    result = cli("decide", thread_id, "--approve", email, "--reject", f"{note}=not today",
                 store=store_url, script=answer_script, tools=BOTH)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "observation sent to ceo@x.com" in result.output
    assert "not today" in result.output and "posted 'emailed'" not in result.output


def test_approve_without_call_ids_approves_every_waiting_call(
    sqlite_url: str, answer_script: Path, thread_id: str
) -> None:
    paused_two_calls(sqlite_url, thread_id)
    result = cli("approve", thread_id, store=sqlite_url, script=answer_script, tools=BOTH)
    assert result.exit_code == 0, result.output
    assert "sent to ceo@x.com" in result.output and "posted 'emailed'" in result.output


# -- bad input: one line, exit 2, the stored run unchanged --------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["approve", "{t}", "nope"],
            "thread '{t}': no call 'nope' waits for approval; the run is still paused; "
            "waiting: {c} (send_email)",
        ),
        (["approve", "{t}", "{c}", "--edit", '{"to": "a@b.c"}'], "body: Field required"),
        (["approve", "{t}", "{c}", "--edit", '{"to": '], "--edit is not valid JSON"),
        (["approve", "{t}", "{c}", "--edit", "[1]"], "--edit must be a JSON object"),
        (["approve", "{t}", "--edit", "{}"], "--edit changes one call: name exactly one CALL_ID"),
        (["reject", "{t}", "{c}"], "reject needs --reason TEXT"),
        (["decide", "{t}", "--reject", "{c}"], "--reject '{c}': use --reject CALL_ID=VALUE"),
        (["resume", "{t}"], "waits for approval, which resume cannot give"),
        (["resume", "{t}", "--answer", "retry"], "not waiting for an answer to ask_human"),
        (["approve", "nosuch-{t}"], "no run is stored under thread 'nosuch-{t}'"),
    ],
)
def test_bad_answers_get_one_line_and_leave_the_run_as_it_was(
    args: list[str], message: str, store_url: str, script: Path, thread_id: str
) -> None:
    call_id = paused_email(store_url, thread_id, script)
    before = stored(store_url, thread_id)
    fill = [a.replace("{t}", thread_id).replace("{c}", call_id) for a in args]
    line = one_error_line(cli(*fill, store=store_url, script=script))
    assert message.replace("{t}", thread_id).replace("{c}", call_id) in line
    assert stored(store_url, thread_id) == before


def test_approving_without_the_run_s_tools_is_refused(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    call_id = paused_email(sqlite_url, thread_id, script)
    before = stored(sqlite_url, thread_id)
    line = one_error_line(cli("approve", thread_id, store=sqlite_url, script=script, tools=""))
    assert f"call {call_id} runs tool 'send_email', which this command was not given" in line
    assert stored(sqlite_url, thread_id) == before


def test_approving_a_finished_run_is_refused(sqlite_url: str, script: Path, thread_id: str) -> None:
    call_id = paused_email(sqlite_url, thread_id, script)
    assert cli("approve", thread_id, store=sqlite_url, script=script).exit_code == 0
    before = stored(sqlite_url, thread_id)
    line = one_error_line(cli("approve", thread_id, call_id, store=sqlite_url, script=script))
    assert line == f"error: thread '{thread_id}' is done: nothing waits for approval"
    assert stored(sqlite_url, thread_id) == before


@pytest.mark.parametrize("command", [["runs"], ["pending", "t"], ["approve", "t"]])
def test_a_store_that_is_corrupt_or_not_ours_gets_one_line(
    command: list[str], tmp_path: Path, script: Path
) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database at all" * 200)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    for path, message in ((corrupt, "cannot open"), (foreign, "not a thinkgraph store")):
        model = script if command[0] == "approve" else None
        line = one_error_line(cli(*command, store=f"sqlite:///{path}", script=model, tools=""))
        assert message in line
    assert foreign.read_bytes().startswith(b"SQLite format 3")  # left as it was, not migrated
    with sqlite3.connect(foreign) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"invoices"}


# -- ask_human and breakpoints -------------------------------------------------------------


def test_ask_human_pauses_and_resume_answer_gives_the_model_guidance(
    store_url: str, tmp_path: Path, thread_id: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(["no format", "still none", "nothing", "Thought: ok\nFinal Answer: 7"])
    )
    paused = cli("run", "x", "--thread", thread_id, "--on-failure", "ask", "--quiet",
                 store=store_url, script=bad, tools="")  # fmt: skip
    assert paused.exit_code == 3, paused.output
    assert (
        "waiting for a person (think step 3): The agent failed 3 times in a row." in paused.output
    )
    assert "  accomplished: nothing\n  failed:\n    - Your reply had no 'Action:'" in paused.output
    assert f"thinkgraph resume {thread_id} --answer retry|abort|" in paused.output
    line = one_error_line(cli("approve", thread_id, store=store_url, script=bad, tools=""))
    assert "waits for an answer to ask_human, not for approvals" in line
    done = cli("resume", thread_id, "--answer", "use the format", store=store_url, script=bad,
               tools="")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "human       guidance: use the format" in done.output and "answer: 7" in done.output


def test_pending_shows_a_breakpoint_and_resume_goes_past_it(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    with Agent(ScriptedModel(REPLIES[1:]), store=sqlite_url, breakpoints={"after": ["think"]}) as a:
        assert a.run("x", thread_id=thread_id).status == "paused"
    shown = cli("pending", thread_id, store=sqlite_url, tools="")
    assert shown.output.startswith("paused (breakpoint after think) at think step 1\n")
    assert f"  thinkgraph resume {thread_id} --store {sqlite_url}\n" in shown.output
    done = cli("resume", thread_id, store=sqlite_url, script=script, tools="")
    assert done.exit_code == 0 and "answer: emailed" in done.output


# -- listing, history, fork -------------------------------------------------------------------


def test_runs_lists_each_run_with_its_status_newest_first(
    store_url: str, script: Path, tmp_path: Path, thread_id: str
) -> None:
    finished, waiting, broken = f"{thread_id}-done", f"{thread_id}-paused", f"{thread_id}-failed"
    paused_email(store_url, finished, script)
    cli("approve", finished, store=store_url, script=script)
    paused_email(store_url, waiting, script)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(["no", "no", "no"]))
    cli("run", "x", "--thread", broken, store=store_url, script=bad, tools="")
    listed = cli("runs", "--limit", "100", store=store_url, tools="")
    assert listed.exit_code == 0, listed.output
    ours = [line.split() for line in listed.output.splitlines() if line.startswith(thread_id)]
    assert [row[:4] for row in ours] == [
        # Every node's step counts: three thinks and finalize; a whole approved round.
        [broken, "failed", "(consecutive_failures)", "4"],
        [waiting, "paused", "(approval:", "send_email)"],
        [finished, "done", "7", "nodes"],
    ]
    only = cli("runs", "--status", "paused", "--limit", "100", store=store_url, tools="")
    assert waiting in only.output and finished not in only.output and broken not in only.output


def test_list_threads_names_every_thread_newest_first(any_store_url: str, thread_id: str) -> None:
    saver = open_checkpointer(any_store_url)
    try:
        agent = Agent(ScriptedModel(["Thought: x\nFinal Answer: 1"] * 2), store=saver)
        for suffix in ("a", "b"):
            agent.run("x", thread_id=f"{thread_id}-{suffix}")
        ours = [t for t in list_threads(saver) if t.startswith(thread_id)]
    finally:
        close_checkpointer(saver)
    assert ours == [f"{thread_id}-b", f"{thread_id}-a"]


def test_history_lists_checkpoints_and_fork_runs_on_from_one_with_an_edit(
    store_url: str, script: Path, thread_id: str
) -> None:
    call_id = paused_email(store_url, thread_id, script)
    cli("approve", thread_id, call_id, store=store_url, script=script)
    before = stored(store_url, thread_id)
    rows = [
        line.split()
        for line in cli("history", thread_id, store=store_url, tools="").output.splitlines()
    ]
    nodes = [row[1] for row in rows]
    assert nodes[-6:] == ["approve", "act", "observe", "think", "validate", "finalize"]
    at_observe = rows[nodes.index("observe")][0]
    forked = cli("fork", thread_id, at_observe, "--edit", "6:text=the mail bounced", "--thread",
                 f"{thread_id}-fork", store=store_url, script=script)  # fmt: skip
    assert forked.exit_code == 0, forked.output
    assert "#6   observation the mail bounced" in forked.output
    assert f"forked from {thread_id}@{at_observe}; edited steps 6" in forked.output
    assert f"status: done · thread {thread_id}-fork" in forked.output
    assert stored(store_url, thread_id) == before


# -- asking inline --------------------------------------------------------------------------


def test_forced_prompts_ask_per_call_and_a_refused_edit_is_asked_again(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    answers = 'edit\n{"to": "ops@x.com"}\nreject\nnot now\n'
    result = cli("run", "email the ceo", "--thread", thread_id, store=sqlite_url, script=script,
                 input=answers, env={"THINKGRAPH_INTERACTIVE": "1"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (
        "error: edited arguments for call" in result.output
        and "body: Field required" in result.output
    )
    assert result.output.count("approve, edit, reject or respond?:") == 2
    assert "observation error: " in result.output and "not now" in result.output


def _read_until(fd: int, text: str, timeout: float = 30.0) -> str:
    seen = b""
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"timed out waiting for {text!r}; got:\n{seen.decode()}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    return seen.decode(errors="replace")


def test_in_a_real_terminal_run_asks_inline_and_goes_on(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    exe = Path(sys.executable).parent / "thinkgraph"
    controller, terminal = pty.openpty()
    child = subprocess.Popen(
        [str(exe), "run", "email the ceo", "--thread", thread_id, "--store", sqlite_url,
         "--tools", EMAIL, "--script", str(script)],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=ROOT, env=env,
    )  # fmt: skip
    os.close(terminal)
    try:
        _read_until(controller, "approve, edit, reject or respond?: ")
        os.write(controller, b"edit\n")
        _read_until(controller, "new args (JSON object)")
        os.write(controller, b'{"to": "ops@x.com", "body": "hi"}\n')
        rest = _read_until(controller, "status: done")
        rest += _read_until(controller, "\n", timeout=5)
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
        os.close(controller)
    assert "observation sent to ops@x.com" in rest and "answer: emailed" in rest
