"""Cost, budgets and provider failures in whole runs, through litellm over loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, StepLimits, tool
from thinkgraph.cli import app
from thinkgraph.errors import ModelConfigError
from thinkgraph.llm import LiteLLMModel
from thinkgraph.state import ErrorStep, FinalStep, LLMCallStep, TaskStep

CALL = 'Thought: add\nAction: add\nAction Input: {"a": 1, "b": 2}'


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def loopback(server: OpenAIServer, name: str = "openai/test-model", **kw: Any) -> LiteLLMModel:
    return LiteLLMModel(name, api_base=server.url + "/v1", api_key="sk-test", **kw)


def calls(result: Any, purpose: str | None = None) -> list[LLMCallStep]:
    return [
        s
        for s in result.chain
        if isinstance(s, LLMCallStep) and (purpose is None or s.purpose == purpose)
    ]


def test_a_priced_model_stops_at_max_cost_with_a_forced_answer(
    openai_server: OpenAIServer,
) -> None:
    # gpt-4o-mini is in litellm's cost map: 11 prompt + 7 completion tokens cost ~5.85e-6.
    for _ in range(2):
        openai_server.reply_text(CALL)
    openai_server.reply_text("Thought: out of budget\nFinal Answer: 3")
    limits = StepLimits(max_cost_usd=1e-5)
    model = loopback(openai_server, "openai/gpt-4o-mini")
    agent = Agent(model, [add], limits=limits, store="memory://")

    result = agent.run("1 + 2?")

    assert (result.status, result.stop_reason, result.answer) == ("done", "max_cost", "3")
    costs = [c.cost_usd for c in calls(result)]
    assert all(c is not None and c > 0 for c in costs) and len(costs) == 3
    assert result.counters.cost_known is True
    assert result.counters.cost_usd == pytest.approx(sum(c for c in costs if c))
    last = result.chain[-1]
    assert isinstance(last, FinalStep) and last.forced


def test_an_unpriced_model_has_unknown_cost_never_zero(openai_server: OpenAIServer) -> None:
    openai_server.reply_text("Thought: easy\nFinal Answer: 3")
    result = Agent(loopback(openai_server), store="memory://").run("1 + 2?")

    assert result.answer == "3"
    assert [c.cost_usd for c in calls(result)] == [None]
    assert result.counters.cost_known is False and result.counters.tokens == 18


def test_max_tokens_stops_the_run_on_the_providers_token_counts(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_text(CALL, prompt_tokens=400, completion_tokens=50)
    openai_server.reply_text(CALL, prompt_tokens=500, completion_tokens=50)
    openai_server.reply_text("Thought: stop\nFinal Answer: 3")
    limits = StepLimits(max_tokens=1000)
    result = Agent(loopback(openai_server), [add], limits=limits, store="memory://").run("1+2")

    assert (result.stop_reason, result.answer) == ("max_tokens", "3")
    assert len(calls(result, "think")) == 2 and len(calls(result, "finalize")) == 1


def test_a_hanging_provider_is_recorded_as_failed_calls_and_the_guard_ends_the_run(
    openai_server: OpenAIServer,
) -> None:
    openai_server.hang(5)
    openai_server.hang(5)
    model = loopback(openai_server, timeout=0.3, num_retries=0)
    limits = StepLimits(max_consecutive_failures=2)
    result = Agent(model, limits=limits, store="memory://").run("x")

    assert (result.status, result.stop_reason) == ("failed", "consecutive_failures")
    failed = calls(result, "think")
    assert len(failed) == 2 and all("timed out" in (c.error or "") for c in failed)
    assert "timed out" in result.detail


def test_an_auth_error_fails_the_run_at_once_with_the_reason_and_keeps_the_chain(
    openai_server: OpenAIServer, sqlite_url: str
) -> None:
    openai_server.unauthorized()
    limits = StepLimits(max_consecutive_failures=3)
    with Agent(loopback(openai_server), limits=limits, store=sqlite_url) as agent:
        result = agent.run("x", thread_id="auth")
        stored = agent.result("auth")

    assert (result.status, result.stop_reason) == ("failed", "model_error")
    assert "401 authentication failed" in result.detail and "api_key" in result.detail
    assert len(openai_server.requests) == 1  # not retried, not asked again
    assert isinstance(stored.chain[0], TaskStep) and stored.chain == result.chain
    (error,) = [s for s in result.chain if isinstance(s, ErrorStep)]
    assert error.kind == "model" and error.fatal


def test_an_unknown_model_string_fails_before_the_run_starts() -> None:
    with pytest.raises(ModelConfigError, match="unknown model 'gpt5x'"):
        Agent(model="gpt5x", store="memory://")


def test_the_cli_reports_an_unknown_model_in_one_line_and_exits_two(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    result = CliRunner().invoke(app, ["run", "--model", "gpt5x", "--store", store, "x"])

    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "unknown model 'gpt5x'" in lines[0]
