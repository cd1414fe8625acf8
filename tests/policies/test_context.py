"""The context policy: truncate or summarize old entries; large outputs shortened, kept whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.policies import ContextPolicy, NativeTools, ReActText
from thinkgraph.policies.context import SUMMARY_INSTRUCTIONS
from thinkgraph.state import (
    BaseStep,
    LLMCallStep,
    ObservationStep,
    ResetStep,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    append_steps,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def dump(size: int) -> str:
    """Return a long text."""
    return "x" * size


def rounds(n: int, *, reset_after: int | None = None) -> list[BaseStep]:
    """A numbered chain: the task, then n rounds of one add call and its observation."""
    steps: list[BaseStep] = [TaskStep(text="add a lot")]
    for i in range(n):
        call = ToolCall(name="add", args={"a": i, "b": 1}, id=f"c{i}")
        steps += [
            LLMCallStep(text=f"reply {i}"),
            ThoughtStep(text=f"round {i}"),
            ToolCallStep(call=call),
            ToolResultStep(call_id=call.id, tool="add", ok=True, output=i + 1),
            ObservationStep(call_id=call.id, tool="add", text=str(i + 1)),
        ]
        if reset_after == i:
            steps.append(ResetStep(lesson="go faster"))
    return append_steps([], [steps])


def react(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m["content"]) for m in messages)


# -- truncate -------------------------------------------------------------------------------


def test_truncate_keeps_the_task_and_the_latest_entries() -> None:
    chain = rounds(5)
    kept = ContextPolicy(max_entries=4).select(chain)
    text = react(ReActText().to_messages(kept, [add]))
    assert "Task: add a lot" in text
    assert "round 3" in text and "round 4" in text
    assert "round 2" not in text and "Observation: 3" not in text


def test_truncate_keeps_reset_lessons_and_the_steps_after_the_reset() -> None:
    chain = rounds(4, reset_after=1)
    text = react(ReActText().to_messages(ContextPolicy(max_entries=2).select(chain), [add]))
    assert "go faster" in text and "round 3" in text and "round 2" not in text


def test_a_round_is_never_split_so_native_tool_messages_keep_their_call() -> None:
    chain = rounds(3)
    for limit in range(1, 7):
        messages = NativeTools().to_messages(ContextPolicy(max_entries=limit).select(chain), [add])
        offered = {c["id"] for m in messages for c in m.get("tool_calls", [])}
        answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        assert answered == offered and messages[1]["content"] == "Task: add a lot"


def test_the_latest_round_stays_even_when_it_alone_is_over_the_limit() -> None:
    kept = ContextPolicy(max_entries=1).select(rounds(2))
    assert [s.type for s in kept] == [  # type: ignore[attr-defined]
        "task", "llm_call", "thought", "tool_call", "tool_result", "observation",
    ]  # fmt: skip


def test_bad_settings_are_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ContextPolicy(max_entries=0)
    with pytest.raises(ValueError, match="'truncate' or 'summarize'"):
        ContextPolicy(max_entries=3, mode="forget")  # type: ignore[arg-type]


def test_an_agent_with_truncate_sends_only_the_latest_entries() -> None:
    prompts: list[str] = []

    def model(messages: list[dict[str, Any]]) -> str:
        prompts.append(react(messages))
        n = len(prompts)
        if n <= 5:
            return f'Thought: step {n}\nAction: add\nAction Input: {{"a": {n}, "b": 0}}'
        return "Thought: done\nFinal Answer: 5"

    policy = ContextPolicy(max_entries=4)
    agent = Agent(ScriptedModel(model), [add], context=policy, store="memory://")
    result = agent.run("count")
    assert result.answer == "5"
    assert "step 1" in prompts[2] and "step 1" not in prompts[5]
    assert all("Task: count" in p for p in prompts)


# -- summarize ------------------------------------------------------------------------------


def summarizing_model(fail_summary: bool = False) -> tuple[ScriptedModel, list[str]]:
    prompts: list[str] = []
    thinks = 0

    def model(messages: list[dict[str, Any]]) -> str:
        nonlocal thinks
        if messages[0]["content"] == SUMMARY_INSTRUCTIONS:
            if fail_summary:
                raise ConnectionError("summarizer down")
            return f"SUMMARY({len(prompts)} prompts so far)"
        prompts.append(react(messages))
        thinks += 1
        if thinks <= 6:
            return f'Thought: step {thinks}\nAction: add\nAction Input: {{"a": {thinks}, "b": 0}}'
        return "Thought: done\nFinal Answer: 6"

    return ScriptedModel(model), prompts


def test_summarize_condenses_old_entries_once_and_reuses_the_summary() -> None:
    model, prompts = summarizing_model()
    policy = ContextPolicy(max_entries=4, mode="summarize")
    result = Agent(model, [add], context=policy, store="memory://").run("count")

    assert result.answer == "6"
    summaries = [s for s in result.chain if isinstance(s, LLMCallStep) and s.purpose == "summarize"]
    assert 1 <= len(summaries) < 4  # reused for a few steps, not remade every step
    first = summaries[0]
    assert first.error is None and first.covers_through is not None
    covered = result.chain[first.covers_through]
    assert covered.number < first.number
    assert result.counters.model_calls == 7 + len(summaries)
    last = prompts[-1]
    assert f"Summary of your earlier steps: {summaries[-1].text}" in last
    assert "Task: count" in last and "step 1\n" not in last


def test_a_failed_summary_is_recorded_and_the_prompt_is_truncated_instead() -> None:
    model, prompts = summarizing_model(fail_summary=True)
    policy = ContextPolicy(max_entries=4, mode="summarize")
    result = Agent(model, [add], context=policy, store="memory://").run("count")

    assert (result.status, result.answer) == ("done", "6")
    failed = [s for s in result.chain if isinstance(s, LLMCallStep) and s.purpose == "summarize"]
    assert failed and all("summarizer down" in (s.error or "") for s in failed)
    assert "Summary" not in prompts[-1] and "step 1\n" not in prompts[-1]
    assert result.counters.consecutive_failures == 0  # a failed summary is not the model's fault


# -- large tool outputs ---------------------------------------------------------------------


def test_a_large_output_is_shortened_in_the_prompt_and_kept_whole_in_the_chain() -> None:
    prompts: list[str] = []

    def model(messages: list[dict[str, Any]]) -> str:
        prompts.append(json.dumps(messages))
        if len(prompts) == 1:
            return 'Thought: get it\nAction: dump\nAction Input: {"size": 5000}'
        return "Thought: done\nFinal Answer: long"

    agent = Agent(ScriptedModel(model), [dump], max_observation_chars=200, store="memory://")
    result = agent.run("x")

    (whole,) = [s for s in result.chain if isinstance(s, ToolResultStep)]
    (shown,) = [s for s in result.chain if isinstance(s, ObservationStep)]
    assert whole.output == "x" * 5000
    assert shown.truncated and len(shown.text) < 300 and "kept in the run's chain" in shown.text
    assert "x" * 300 not in prompts[1] and "x" * 100 in prompts[1]


# -- by tokens ------------------------------------------------------------------------------


def words(model: str, text: str) -> int:
    """A stand-in tokenizer: one token per word (litellm's is tested below)."""
    return len(text.split())


def test_max_tokens_keeps_the_latest_rounds_that_fit_with_the_task() -> None:
    chain = rounds(10)
    everything = ContextPolicy(max_tokens=10_000, count_tokens=words).select(chain)
    assert everything == chain
    tight = ContextPolicy(max_tokens=60, count_tokens=words).select(chain)
    assert tight[0] == chain[0]  # the task always stays
    kept = [s.text for s in tight if isinstance(s, ThoughtStep)]
    assert kept and kept == [f"round {i}" for i in range(10 - len(kept), 10)]
    assert len(kept) < 10
    shorter = ContextPolicy(max_tokens=30, count_tokens=words).select(chain)
    assert len([s for s in shorter if isinstance(s, ThoughtStep)]) < len(kept)


def test_entries_and_tokens_together_keep_within_both() -> None:
    chain = rounds(10)
    by_entries = ContextPolicy(max_entries=4).select(chain)
    both = ContextPolicy(max_entries=4, max_tokens=10_000, count_tokens=words).select(chain)
    assert both == by_entries
    tight = ContextPolicy(max_entries=40, max_tokens=40, count_tokens=words).select(chain)
    assert len(tight) < len(ContextPolicy(max_entries=40).select(chain))


def test_the_latest_round_stays_even_when_it_alone_is_over_the_budget() -> None:
    chain = rounds(3)
    kept = ContextPolicy(max_tokens=1, count_tokens=words).select(chain)
    assert [s.text for s in kept if isinstance(s, ThoughtStep)] == ["round 2"]


def test_auto_takes_the_models_window_from_litellms_table() -> None:
    from thinkgraph.errors import ModelConfigError
    from thinkgraph.policies.context import context_window

    assert context_window("gpt-4o-mini") == 128_000 * 3 // 4
    chain = rounds(5)
    assert ContextPolicy(max_tokens="auto").select(chain, "gpt-4o-mini") == chain
    with pytest.raises(ModelConfigError, match="context window"):
        ContextPolicy(max_tokens="auto").select(chain, "scripted")


def test_litellms_counter_is_the_default_and_needs_no_network() -> None:
    chain = rounds(30)
    kept = ContextPolicy(max_tokens=200).select(chain, "gpt-4o-mini")
    assert chain[0] in kept and 0 < len([s for s in kept if isinstance(s, ThoughtStep)]) < 30


def test_a_policy_needs_a_limit() -> None:
    with pytest.raises(ValueError, match="max_entries, max_tokens"):
        ContextPolicy()
    with pytest.raises(ValueError, match="max_tokens=0"):
        ContextPolicy(max_tokens=0)


def test_a_run_bounded_by_tokens_summarizes_when_over(sqlite_url: str) -> None:
    thinks: list[str] = []

    def model(messages: list[dict[str, Any]]) -> str:
        if messages[0]["content"] == SUMMARY_INSTRUCTIONS:
            return "the earlier steps added numbers"
        thinks.append(react(messages))
        i = len(thinks) - 1
        if i < 6:
            return f'Thought: step {i}\nAction: add\nAction Input: {{"a": {i}, "b": 1}}'
        return "Thought: done\nFinal Answer: 6"

    policy = ContextPolicy(max_tokens=60, mode="summarize", count_tokens=words)
    with Agent(ScriptedModel(model), [add], store=sqlite_url, context=policy) as agent:
        result = agent.run("add a lot", thread_id="tok")
    assert (result.status, result.answer) == ("done", "6")
    summaries = [s for s in result.chain if isinstance(s, LLMCallStep) and s.purpose == "summarize"]
    assert summaries and summaries[0].text == "the earlier steps added numbers"
    assert "the earlier steps added numbers" in thinks[-1]
