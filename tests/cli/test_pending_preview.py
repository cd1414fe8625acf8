"""What a person approving a call reads and pastes is never misleading.

- `pending` (and a paused `run`) print commands to paste; none of them carries a masked
  value. The `--edit` example puts a placeholder where a value is masked and says so, and
  an edit still holding that placeholder is refused: nothing runs.
- The inline question "approve, edit, reject or respond?" has no default: a bare Enter
  asks again, it never approves.
- Without `--tools`, `show` and `pending` mask the fields the run recorded as sensitive,
  and nothing else: the task, the other arguments and the answer stay readable.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.cli import app
from thinkgraph.cli._pending import EDIT_PLACEHOLDER, how_to_continue
from thinkgraph.hitl import Pending
from thinkgraph.state import ToolResultStep

ROOT = Path(__file__).resolve().parents[2]
INVOICE = "tests.cli.test_pending_preview:send_invoice"
EMAIL = "billing@acme.example"
TASK = "Bill ACME Corp for 4 notebooks"
REPLIES = [
    "Thought: bill them\nAction: send_invoice\nAction Input: "
    + json.dumps({"customer": "ACME Corp", "to": EMAIL, "amount": 420.5}),
    "Thought: done\nFinal Answer: billed ACME Corp 420.5",
]

runner = CliRunner()


@tool(requires_approval=True, side_effects=True, sensitive={"to"})
def send_invoice(customer: str, to: str, amount: float) -> str:
    """Send an invoice to a customer's billing address."""
    return f"billed {customer}"


@pytest.fixture(autouse=True)
def _at_the_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # so --tools tests.cli.… imports
    monkeypatch.delenv("THINKGRAPH_INTERACTIVE", raising=False)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return path


def cli(*args: str, store: str, tools: bool = True, script: Path | None = None,
        input: str | None = None, env: dict[str, str] | None = None) -> Result:  # fmt: skip
    extra = ["--store", store, *(["--tools", INVOICE] if tools else [])]
    extra += ["--script", str(script)] if script else []
    return runner.invoke(app, [*args, *extra], input=input, env=env)


def paused(store: str, thread: str, script: Path) -> Result:
    result = cli("run", TASK, "--thread", thread, "--no-input", store=store, script=script)
    assert result.exit_code == 3, result.output
    return result


def commands(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip().startswith("thinkgraph ")]


def ran(store: str, thread: str) -> list[ToolResultStep]:
    with Agent(ScriptedModel([]), store=store) as agent:
        return [s for s in agent.result(thread).chain if isinstance(s, ToolResultStep)]


# -- the commands printed -------------------------------------------------------------------


@pytest.mark.parametrize("tools", [True, False], ids=["tools", "no-tools"])
def test_no_printed_command_carries_a_masked_value(
    sqlite_url: str, script: Path, thread_id: str, tools: bool
) -> None:
    shown = paused(sqlite_url, thread_id, script).output
    pending = cli("pending", thread_id, store=sqlite_url, tools=tools).output
    for output in (shown, pending):
        printed = commands(output)
        assert len(printed) == 4, output
        assert not [c for c in printed if "***" in c], output
        (edit,) = [c for c in printed if "--edit" in c]
        assert f'"to": "{EDIT_PLACEHOLDER}"' in edit and '"customer": "ACME Corp"' in edit
        assert EMAIL not in output
        assert f'to is masked: put its value in place of "{EDIT_PLACEHOLDER}"' in output


def test_a_call_masked_in_full_gets_a_placeholder_for_every_argument() -> None:
    # A run from before runs recorded their tools' sensitive fields, read without its tools.
    waits = Pending(kind="approval", call_id="c1", tool="send_invoice",
                    args={"customer": "ACME Corp", "to": EMAIL, "amount": 420.5})  # fmt: skip
    printed = how_to_continue("t1", [waits])
    (edit,) = [line for line in printed if "--edit" in line]
    assert not [c for c in commands("\n".join(printed)) if "***" in c]
    assert EMAIL not in "".join(printed)
    assert edit.count(EDIT_PLACEHOLDER) == 3
    assert "customer, to, amount are masked" in "\n".join(printed)


def test_the_edit_example_pasted_as_is_is_refused_and_nothing_runs(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    shown = paused(sqlite_url, thread_id, script).output
    (edit,) = [c for c in commands(shown) if "--edit" in c]
    new_args = re.search(r"--edit '([^']*)'", edit)
    assert new_args is not None
    call_id = edit.split()[3]
    result = cli("approve", thread_id, call_id, "--edit", new_args[1], store=sqlite_url,
                 script=script)  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f'"to" is still "{EDIT_PLACEHOLDER}"' in result.output
    assert ran(sqlite_url, thread_id) == []


def test_a_filled_placeholder_and_a_kept_mask_run_the_call(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    shown = paused(sqlite_url, thread_id, script).output
    (edit,) = [c for c in commands(shown) if "--edit" in c]
    call_id = edit.split()[3]
    new_args = {"customer": "ACME Corp", "to": "ap@acme.example", "amount": "***"}
    result = cli("approve", thread_id, call_id, "--edit", json.dumps(new_args),
                 store=sqlite_url, script=script)  # fmt: skip
    assert result.exit_code == 0, result.output
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        chain = agent.result(thread_id).chain
    edited = next(s for s in chain if getattr(s, "kind", None) == "edit")
    assert json.loads(edited.text) == {"customer": "ACME Corp", "to": "ap@acme.example",  # type: ignore[attr-defined]
                                       "amount": 420.5}  # fmt: skip


# -- the inline question ----------------------------------------------------------------------


def test_a_bare_enter_at_the_approval_question_asks_again(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    answers = "\n\nreject\nnot this month\n"  # Enter, Enter, then a real answer
    result = cli("run", TASK, "--thread", thread_id, store=sqlite_url, script=script,
                 input=answers, env={"THINKGRAPH_INTERACTIVE": "1"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.count("approve, edit, reject or respond?") == 3
    assert result.output.count("error: answer approve, edit, reject or respond") == 2
    (outcome,) = ran(sqlite_url, thread_id)
    assert outcome.error_kind == "rejected"


def test_enter_then_end_of_input_leaves_the_call_unapproved(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    result = cli("run", TASK, "--thread", thread_id, store=sqlite_url, script=script,
                 input="\n", env={"THINKGRAPH_INTERACTIVE": "1"})  # fmt: skip
    assert result.exit_code == 3, result.output
    assert ran(sqlite_url, thread_id) == []


# -- what is masked without --tools -----------------------------------------------------------


def test_show_and_pending_without_tools_mask_only_the_recorded_fields(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    paused(sqlite_url, thread_id, script)
    pending = cli("pending", thread_id, store=sqlite_url, tools=False).output
    assert '"to": "***"' in pending and '"customer": "ACME Corp"' in pending
    assert '"amount": 420.5' in pending and "not given that tool" not in pending
    approve = cli("approve", thread_id, store=sqlite_url, script=script)
    assert approve.exit_code == 0, approve.output
    shown = cli("show", thread_id, store=sqlite_url, tools=False).output
    assert EMAIL not in shown
    assert TASK in shown and "answer: billed ACME Corp 420.5" in shown
    assert "note:" not in shown
