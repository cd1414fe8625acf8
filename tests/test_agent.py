"""The engine end to end: real graphs, real stores, ScriptedModel for the model."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from thinkgraph import Agent, ScriptedModel, StepLimits, Verdict, tool
from thinkgraph.errors import NotPausedError, ThreadExistsError, ThreadNotFoundError
from thinkgraph.state import (
    ErrorStep,
    FinalStep,
    HumanStep,
    LLMCallStep,
    ObservationStep,
    ResetStep,
    TaskStep,
    ThoughtStep,
    ToolCallStep,
    ToolResultStep,
    ValidationStep,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(timeout_s=None)
def nap(seconds: float) -> str:
    """Sleep a while."""
    time.sleep(seconds)
    return "rested"


def call(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def think_calls(chain: list[object]) -> int:
    return sum(1 for s in chain if isinstance(s, LLMCallStep) and s.purpose == "think")


def test_a_tool_call_then_a_final_answer(any_store_url: str, thread_id: str) -> None:
    agent = Agent(ScriptedModel([call("add", a=2, b=40), final("42")]), [add], store=any_store_url)
    with agent:
        result = agent.run("What is 2 + 40?", thread_id=thread_id)
    assert (result.status, result.answer, result.stop_reason) == ("done", "42", "final_answer")
    types = [s.type for s in result.chain]  # type: ignore[attr-defined]
    assert types == [
        "task", "llm_call", "thought", "tool_call", "tool_result", "observation",
        "llm_call", "thought", "final",
    ]  # fmt: skip
    assert [s.number for s in result.chain] == list(range(len(result.chain)))
    call_step = next(s for s in result.chain if isinstance(s, ToolCallStep))
    result_step = next(s for s in result.chain if isinstance(s, ToolResultStep))
    observation = next(s for s in result.chain if isinstance(s, ObservationStep))
    assert call_step.call.id == result_step.call_id == observation.call_id
    assert result_step.output == 42 and observation.text == "42"
    assert result_step.idempotency_key == f"{thread_id}:1:{call_step.call.id}"


def test_the_chain_survives_a_new_agent_on_the_same_store(sqlite_url: str) -> None:
    with Agent(ScriptedModel([final("7")]), store=sqlite_url) as agent:
        agent.run("seven?", thread_id="keep")
    with Agent(ScriptedModel([]), store=sqlite_url) as again:
        chain = again.chain("keep")
    assert isinstance(chain[0], TaskStep) and chain[0].text == "seven?"
    assert isinstance(chain[-1], FinalStep) and chain[-1].answer == "7"


def test_max_steps_three_takes_exactly_three_think_steps_then_forces_an_answer() -> None:
    replies = [call("add", a=i, b=1) for i in range(3)] + [final("gave up at 3")]
    agent = Agent(ScriptedModel(replies), [add], limits=StepLimits(max_steps=3), store="memory://")
    result = agent.run("count forever")
    assert think_calls(result.chain) == 3
    assert sum(isinstance(s, ToolResultStep) for s in result.chain) == 2
    forced = [s for s in result.chain if isinstance(s, LLMCallStep) and s.purpose == "finalize"]
    assert len(forced) == 1
    last = result.chain[-1]
    assert isinstance(last, FinalStep) and last.forced and last.stop_reason == "max_steps"
    assert (result.status, result.answer) == ("done", "gave up at 3")


def test_forced_answer_that_is_not_an_answer_fails_the_run() -> None:
    replies = [call("add", a=1, b=1), "I refuse to answer."]
    agent = Agent(ScriptedModel(replies), [add], limits=StepLimits(max_steps=1), store="memory://")
    result = agent.run("x")
    assert (result.status, result.stop_reason, result.answer) == ("failed", "max_steps", None)
    assert "did not give a final answer" in result.detail


def test_final_answer_before_min_steps_is_refused_with_a_nudge() -> None:
    replies = [final("early"), final("still early"), final("now")]
    agent = Agent(ScriptedModel(replies), limits=StepLimits(min_steps=3), store="memory://")
    result = agent.run("think hard")
    refusals = [s for s in result.chain if isinstance(s, ErrorStep) and s.kind == "refused_action"]
    assert len(refusals) == 2
    assert "at least 3 reasoning steps" in refusals[0].feedback
    assert (result.answer, think_calls(result.chain)) == ("now", 3)


def test_the_nudge_reaches_the_model() -> None:
    seen: list[str] = []

    def model(messages: list[dict[str, str]]) -> str:
        seen.append(messages[-1]["content"])
        return final(str(len(seen)))

    agent = Agent(ScriptedModel(model), limits=StepLimits(min_steps=2), store="memory://")
    assert agent.run("x").answer == "2"
    assert "too early for a final answer" in seen[1]


def test_unparsable_replies_abort_after_the_failure_limit() -> None:
    limits = StepLimits(max_consecutive_failures=3)
    agent = Agent(ScriptedModel(["hmm", "well", "so"]), limits=limits, store="memory://")
    result = agent.run("x")
    assert (result.status, result.stop_reason) == ("failed", "consecutive_failures")
    errors = [s for s in result.chain if isinstance(s, ErrorStep) and s.kind == "parse"]
    assert len(errors) == 3
    assert "Final Answer" in errors[0].feedback
    assert not any(isinstance(s, ThoughtStep) for s in result.chain)


def test_a_reply_without_action_or_answer_is_never_a_final_answer() -> None:
    agent = Agent(ScriptedModel(["The answer is 4.", final("4")]), store="memory://")
    result = agent.run("2+2")
    assert isinstance(result.chain[2], ErrorStep)
    assert result.answer == "4" and think_calls(result.chain) == 2


def test_failing_tools_count_as_consecutive_failures() -> None:
    replies = [call("nope"), call("nope"), final("x")]
    limits = StepLimits(max_consecutive_failures=2)
    result = Agent(ScriptedModel(replies), [add], limits=limits, store="memory://").run("x")
    assert result.stop_reason == "consecutive_failures"
    errors = [s for s in result.chain if isinstance(s, ObservationStep) and s.is_error]
    assert len(errors) == 2 and "add" in errors[0].text


def test_a_successful_tool_round_clears_the_failure_count() -> None:
    replies = [call("nope"), call("add", a=1, b=2), call("nope"), final("3")]
    limits = StepLimits(max_consecutive_failures=2)
    result = Agent(ScriptedModel(replies), [add], limits=limits, store="memory://").run("x")
    assert (result.status, result.answer) == ("done", "3")


def test_ask_human_pauses_and_retry_continues(sqlite_url: str) -> None:
    limits = StepLimits(max_consecutive_failures=2, failure_policy="ask_human")
    model = ScriptedModel(["?", "??", final("ok")])
    with Agent(model, limits=limits, store=sqlite_url) as agent:
        paused = agent.run("x", thread_id="h1")
        assert paused.status == "paused" and paused.pending[0].kind == "ask_human"
        assert paused.pending[0].details["failed"]
        with pytest.raises(Exception, match="retry"):
            agent.resume("h1", decisions={"action": "dance"})
        assert agent.result("h1").status == "paused"
        done = agent.resume("h1", decisions="retry")
    assert (done.status, done.answer) == ("done", "ok")
    assert any(isinstance(s, HumanStep) and s.kind == "retry" for s in done.chain)


def test_ask_human_guidance_reaches_the_model_and_abort_stops() -> None:
    limits = StepLimits(max_consecutive_failures=1, failure_policy="ask_human")
    seen: list[str] = []

    def model(messages: list[dict[str, str]]) -> str:
        seen.append(json.dumps(messages))
        return "??"

    agent = Agent(ScriptedModel(model), limits=limits, store="memory://")
    agent.run("x", thread_id="g")
    agent.resume("g", decisions="use the calculator")
    assert "use the calculator" in seen[-1]
    result = agent.resume("g", decisions="abort")
    assert (result.status, result.stop_reason) == ("failed", "aborted")


def test_validators_send_a_rejected_answer_back_with_the_reason() -> None:
    def must_be_number(answer: str, state: object) -> Verdict:
        ok = answer.strip().isdigit()
        return Verdict(passed=ok, reason="" if ok else "answer with digits only")

    seen: list[str] = []

    def model(messages: list[dict[str, str]]) -> str:
        seen.append(json.dumps(messages))
        return final("forty-two") if len(seen) == 1 else final("42")

    agent = Agent(ScriptedModel(model), validators=[must_be_number], store="memory://")
    result = agent.run("x")
    validations = [s for s in result.chain if isinstance(s, ValidationStep)]
    assert [v.passed for v in validations] == [False, True]
    assert "answer with digits only" in seen[1]
    assert result.answer == "42"


def test_a_verdict_can_ask_for_a_reset() -> None:
    verdicts = iter([Verdict(passed=False, reason="wrong approach", reset=True)])

    def strict(answer: str, state: object) -> Verdict:
        return next(verdicts, Verdict(passed=True))

    agent = Agent(ScriptedModel([final("a"), final("b")]), validators=[strict], store="memory://")
    result = agent.run("x")
    resets = [s for s in result.chain if isinstance(s, ResetStep)]
    assert len(resets) == 1 and "wrong approach" in resets[0].lesson
    assert result.answer == "b"


def test_a_timeout_during_tools_finalizes_with_the_reason() -> None:
    replies = [call("nap", seconds=0.2), final("late")]
    limits = StepLimits(timeout_s=0.1)
    result = Agent(ScriptedModel(replies), [nap], limits=limits, store="memory://").run("x")
    assert result.stop_reason == "timeout" and think_calls(result.chain) == 1
    # The run's limit stops the nap itself (tests/runs/test_run_timeout.py has the details).
    assert result.counters.elapsed_s >= 0.1


def test_a_model_that_raises_is_recorded_and_guarded() -> None:
    def broken(messages: list[dict[str, str]]) -> str:
        raise ConnectionError("provider unreachable")

    limits = StepLimits(max_consecutive_failures=2)
    result = Agent(ScriptedModel(broken), limits=limits, store="memory://").run("x")
    assert result.stop_reason == "consecutive_failures"
    failed = [s for s in result.chain if isinstance(s, LLMCallStep) and s.error]
    assert len(failed) == 2 and "provider unreachable" in failed[0].error  # type: ignore[operator]


def test_starting_a_second_run_on_a_thread_is_refused() -> None:
    agent = Agent(ScriptedModel([final("1"), final("2")]), store="memory://")
    agent.run("x", thread_id="same")
    with pytest.raises(ThreadExistsError, match="resume"):
        agent.run("y", thread_id="same")


def test_unknown_thread_and_answer_to_a_finished_run_are_clear_errors() -> None:
    agent = Agent(ScriptedModel([final("1")]), store="memory://")
    with pytest.raises(ThreadNotFoundError, match="nope"):
        agent.resume("nope")
    agent.run("x", thread_id="done")
    with pytest.raises(NotPausedError):
        agent.resume("done", decisions="retry")


def test_arun_runs_the_same_graph() -> None:
    import asyncio

    agent = Agent(ScriptedModel([call("add", a=1, b=1), final("2")]), [add], store="memory://")
    result = asyncio.run(agent.arun("1+1"))
    assert result.answer == "2"


def test_stream_yields_the_steps_with_their_chain_numbers() -> None:
    agent = Agent(ScriptedModel([call("add", a=1, b=1), final("2")]), [add], store="memory://")
    streamed = list(agent.stream("1+1", "s"))
    stored = agent.chain("s")
    assert [(s.number, s.id) for s in streamed] == [(s.number, s.id) for s in stored]


def test_listing_runs_never_rebuilds_a_chain_unless_a_breakpoint_needs_it(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    @tool(requires_approval=True)
    def send(to: str) -> str:
        """Send."""
        return "sent"

    call = 'Thought: send\nAction: send\nAction Input: {"to": "a"}'
    with Agent(
        ScriptedModel([call, "Thought: d\nFinal Answer: ok"]), [send], store=sqlite_url
    ) as agent:
        agent.run("send it", thread_id="paused")
        agent.run("again", thread_id="also")
        rebuilt: list[str] = []
        real = agent.graph.get_state

        def counted(config: Any, *args: Any, **kwargs: Any) -> Any:
            rebuilt.append(config["configurable"]["thread_id"])
            return real(config, *args, **kwargs)

        monkeypatch.setattr(agent.graph, "get_state", counted)
        listed = {r.thread_id: r for r in agent.runs()}
    assert rebuilt == []
    assert listed["paused"].status == "paused" and listed["paused"].waiting_for == "approval: send"
    assert listed["paused"].steps == 1 and listed["paused"].updated_at is not None
