"""Masking works on what a person sees: a cut value, a partial copy, a huge reply.

A tool's result is folded into an observation cut at `max_observation_chars`; the cut can
fall inside a secret, leaving `"token": "TOKSECRET-abcdefg` with no closing quote. Every
view masks such a fragment, as it masks the whole value. Masking is one scan of each text,
so a reply with 200,000 secret keys is shown in about a second.

A run records which fields of which tools are sensitive (on each `tool_call` step), so a
view that was not given the run's tools masks exactly those fields, and the task and the
answer stay readable.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from thinkgraph import Agent, RunResult, ScriptedModel, tool
from thinkgraph.cli import app
from thinkgraph.state import (
    BaseStep,
    LLMCallStep,
    ObservationStep,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
)
from thinkgraph.views import MASK, Redactor, redact_chain, to_html, to_json, to_markdown, to_text

TOKEN = "TOKSECRET-" + "abcdefghij" * 10
CARD = "4111-1111-1111-1111"

VIEWS: dict[str, Callable[..., str]] = {
    "text": lambda run, **kw: to_text(run.chain, **kw),
    "markdown": to_markdown,
    "json": to_json,
    "html": to_html,
}


@tool
def fetch_record(key: str) -> dict[str, str]:
    """Fetch a record, with its access token."""
    return {"data": "x" * 3880, "token": TOKEN}


@tool(sensitive={"card"})
def charge(customer: str, card: str) -> str:
    """Charge a customer's card."""
    return f"charged {customer}"


def _act(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def cut_run(store: str = "memory://", thread: str = "cut") -> RunResult:
    """A run whose observation is cut inside the token its tool returned."""
    model = ScriptedModel([_act("fetch_record", key="r1"), "Thought: done\nFinal Answer: read"])
    with Agent(model, [fetch_record], store=store) as agent:
        return agent.run("read record r1", thread)


def charge_run() -> RunResult:
    model = ScriptedModel(
        [
            _act("charge", customer="ACME Corp", card=CARD),
            "Thought: done\nFinal Answer: charged ACME Corp for 4 notebooks",
        ]
    )
    with Agent(model, [charge], store="memory://") as agent:
        return agent.run("Charge ACME Corp for 4 notebooks", "charge")


# -- a cut value --------------------------------------------------------------------------


def test_the_observation_really_holds_a_cut_token() -> None:
    # Otherwise the tests below would pass for the wrong reason.
    observation = next(s for s in cut_run().chain if isinstance(s, ObservationStep))
    assert observation.truncated
    assert '"token": "TOKSECRET-abcdefg\n…' in observation.text
    assert TOKEN not in observation.text


@pytest.mark.parametrize("given", [True, False], ids=["tools", "no-tools"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_secret_cut_short_by_the_observation_is_masked_in_every_view(
    view: str, given: bool
) -> None:
    out = VIEWS[view](cut_run(), tools=[fetch_record] if given else None)
    assert "TOKSECRET" not in out and "abcdefg" not in out


def test_the_json_view_shows_the_cut_observation_with_the_token_masked() -> None:
    doc = json.loads(to_json(cut_run()))
    (observation,) = [s for s in doc["steps"] if s["type"] == "observation"]
    assert '"token": "***\n… [' in observation["text"]


def test_show_prints_no_part_of_a_cut_secret_in_any_format(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    cut_run(store, "cut-cli")
    for fmt in ("text", "json", "markdown", "html"):
        shown = CliRunner().invoke(app, ["show", "cut-cli", "--store", store, "--format", fmt])
        assert shown.exit_code == 0, shown.output
        assert "TOKSECRET" not in shown.output, fmt


@pytest.mark.parametrize("shown", [["--json"], []], ids=["json-lines", "live"])
def test_a_live_run_prints_no_part_of_a_cut_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shown: list[str]
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # so --tools tests.… imports
    script = tmp_path / "replies.json"
    script.write_text(
        json.dumps([_act("fetch_record", key="r1"), "Thought: ok\nFinal Answer: read"])
    )
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["run", "read record r1", "--store", store, "--script", str(script), *shown]
    result = CliRunner().invoke(app, [*args, "--tools", "tests.views.test_mask_cut:fetch_record"])
    assert result.exit_code == 0, result.output
    assert "TOKSECRET" not in result.output
    if shown:
        assert '"token\\": \\"***\\n…' in result.output  # the observation, JSON-escaped


def test_a_cut_value_of_a_secret_name_is_masked_though_never_seen_whole() -> None:
    cut = ObservationStep(
        number=0,
        call_id="c1",
        tool="fetch",
        text='{"user": "ann", "password": "hunter2-corr\n… [9 more characters not shown]',
        truncated=True,
    )
    (shown,) = redact_chain([cut])
    assert shown.text == '{"user": "ann", "password": "***\n… [9 more characters not shown]'  # type: ignore[attr-defined]


@pytest.mark.parametrize("ellipsis", ["…", "...", " …"])
def test_a_partial_copy_of_a_secret_before_an_ellipsis_is_masked(ellipsis: str) -> None:
    chain = [
        ToolResultStep(number=0, call_id="c1", tool="fetch", ok=True, output={"token": TOKEN}),
        ThoughtStep(number=1, text=f"the token starts TOKSECRET-abcdef{ellipsis} and goes on"),
        TaskStep(number=2, text="the key ends in TOKSECRET-abcdefghij"),
    ]
    _, thought, task = redact_chain(chain)
    assert thought.text == f"the token starts ***{ellipsis} and goes on"  # type: ignore[attr-defined]
    assert "TOKSECRET" not in task.text  # type: ignore[attr-defined]


def test_a_word_that_merely_starts_like_a_secret_is_kept_mid_text() -> None:
    chain = [
        ToolResultStep(number=0, call_id="c1", tool="fetch", ok=True, output={"token": TOKEN}),
        TaskStep(number=1, text="TOKSECRET-abcdef is how the token starts, and that is fine"),
    ]
    _, task = redact_chain(chain)
    assert task.text.startswith("TOKSECRET-abcdef is how")  # type: ignore[attr-defined]


# -- the run's record of sensitive fields ---------------------------------------------------


def test_a_call_records_the_sensitive_fields_of_its_tool() -> None:
    call = next(s for s in charge_run().chain if isinstance(s, ToolCallStep))
    assert call.sensitive == ["card"]


def test_without_the_tools_a_view_masks_exactly_the_recorded_fields() -> None:
    out = to_text(charge_run().chain)  # `thinkgraph show` without --tools
    assert CARD not in out
    assert "Charge ACME Corp for 4 notebooks" in out  # the task
    assert '"customer": "ACME Corp"' in out and '"card": "***"' in out  # the call
    assert "charged ACME Corp for 4 notebooks" in out  # the answer
    assert "note:" not in out  # nothing was masked for want of the tools


def test_a_run_from_before_the_record_is_still_masked_in_full() -> None:
    run = charge_run()
    old = [s.model_copy(update={"sensitive": None}) if isinstance(s, ToolCallStep) else s
           for s in run.chain]  # fmt: skip
    out = to_text(old)
    assert CARD not in out and "ACME Corp" not in out
    assert "note: every argument and result value of charge is masked" in out


def test_the_json_view_without_tools_keeps_the_answer_readable() -> None:
    doc = json.loads(to_json(charge_run()))
    assert doc["answer"] == "charged ACME Corp for 4 notebooks"
    assert doc["unknown_tools"] == []
    assert CARD not in json.dumps(doc)


# -- cost ---------------------------------------------------------------------------------
# Speed goals live in bench/ (`python -m bench.masking`); these tests only bound the time,
# with room for a loaded 2-core machine: each view takes about 1.5 s there.

KEYS = 200_000


def _huge_chain() -> list[BaseStep]:
    args = {f"token_{i}": f"value-{i:06d}-x" for i in range(KEYS)}
    reply = f"Thought: all of them\nAction: store\nAction Input: {json.dumps(args)}"
    call = ToolCall(name="store", args=args, id="c1")
    return [
        LLMCallStep(number=0, text=reply),
        ThoughtStep(number=1, text="all of them"),
        ToolCallStep(number=2, call=call),
        ToolResultStep(number=3, call_id="c1", tool="store", ok=True, output=args),
    ]


@pytest.fixture(scope="module")
def huge_run() -> RunResult:
    return RunResult(thread_id="huge", status="done", answer="stored", chain=_huge_chain())


# The bound catches the quadratic cost (minutes), not a speed goal (that is in bench/): it
# leaves room for a machine whose cores are shared with parallel test workers.
@pytest.mark.timeout(45)
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_reply_with_200000_secret_keys_is_shown_in_bounded_time(
    view: str, huge_run: RunResult
) -> None:
    # Before masking was one scan per text, this view ran for minutes at 100% CPU; before
    # each step was read once and copied once, it took about 5 s.
    out = VIEWS[view](huge_run)
    assert "value-000000-x" not in out and f"value-{KEYS - 1:06d}-x" not in out
    assert MASK in out


@pytest.mark.timeout(45)
def test_a_live_display_learns_and_shows_a_200000_key_reply_in_bounded_time(
    huge_run: RunResult,
) -> None:
    redactor = Redactor([], mask_unknown=True)
    reply, _, call, result = [redactor.shown(step) for step in huge_run.chain]
    assert "value-000123-x" not in reply.text  # type: ignore[attr-defined]
    assert '"token_123": "***"' in reply.text  # type: ignore[attr-defined]
    assert set(call.call.args.values()) == {MASK}  # type: ignore[attr-defined]
    assert set(result.output.values()) == {MASK}  # type: ignore[attr-defined]
