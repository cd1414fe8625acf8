"""Replay: a recorded run served from its record by graph position, on SQLite and PostgreSQL.

Each test records a run of the demo (an analyst that queries SQL, then calculates twice;
the SQL call needs approval), then replays it on changed code and checks what the report
says and that nothing was called: model calls and tool runs are counted.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import thinkgraph.tools.runner as runner_module
from tests.replay.graphs import Parenthesized, skip_calculator
from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, StepLimits
from thinkgraph.demo import DEMO_TASK, create_sales_db, demo_tools, scripted_analyst
from thinkgraph.errors import ConfigError, ReplayThreadError
from thinkgraph.hitl import Approve
from thinkgraph.llm import LiteLLMModel
from thinkgraph.llm.base import ModelReply, ModelRequest
from thinkgraph.nodes import _requests
from thinkgraph.nodes.model import request_digest, sent_messages
from thinkgraph.policies import ReActText
from thinkgraph.state import HumanStep, LLMCallStep, ToolCallStep
from thinkgraph.tools.base import Tool

LIMITS = StepLimits(max_steps=8)


class Counted:
    """A model that counts the calls it gets (it answers from a script)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        return self.inner.complete(request)  # type: ignore[no-any-return]


@pytest.fixture
def tools(tmp_path: Path) -> list[Tool]:
    return demo_tools(create_sales_db(tmp_path / "sales.db"))


@pytest.fixture
def tool_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every tool that really runs (not served, not refused), by name, once per attempt."""
    ran: list[str] = []
    real = runner_module._ainvoke

    async def counting(tool: Tool, args: Any, ctx: Any, limit: Any) -> Any:
        ran.append(tool.name)
        return await real(tool, args, ctx, limit)

    monkeypatch.setattr(runner_module, "_ainvoke", counting)
    yield ran


def record(store_url: str, tools: list[Tool]) -> str:
    """A demo run with 3 tool calls and one approval, done; its thread id."""
    thread = f"demo-{uuid.uuid4().hex[:8]}"
    with Agent(
        scripted_analyst(), tools, approve=["sql_query"], limits=LIMITS, store=store_url
    ) as a:
        paused = a.run(DEMO_TASK, thread)
        assert paused.status == "paused"
        done = a.resume(thread, {p.call_id: Approve() for p in paused.pending})
    assert done.status == "done", done.detail
    assert sum(isinstance(s, ToolCallStep) for s in done.chain) == 3
    assert sum(isinstance(s, HumanStep) for s in done.chain) == 1
    return thread


def replayer(store_url: str, tools: list[Tool], model: Any = None, **parts: Any) -> Agent:
    return Agent(
        model or Counted(scripted_analyst()),
        tools,
        approve=["sql_query"],
        limits=LIMITS,
        store=store_url,
        **parts,
    )


def test_a_recorded_demo_run_replays_same_with_no_model_call_and_no_tool_run(
    store_url: str, tools: list[Tool], tool_runs: list[str]
) -> None:
    source = record(store_url, tools)
    tool_runs.clear()
    model = Counted(scripted_analyst())
    with replayer(store_url, tools, model) as agent:
        report = agent.replay(source)

    assert report.outcome == "same" and report.exit_code == 0, report.to_text()
    assert report.headline() == "same"
    assert (model.calls, report.model_calls, tool_runs, report.tool_runs) == (0, 0, [], 0)
    calls = [s for s in report.source.chain if isinstance(s, LLMCallStep)]
    assert (report.served_replies, report.served_results, report.served_decisions) == (
        len(calls),
        3,
        1,
    )
    assert report.replay.thread_id == f"replay-{source}"
    assert report.replay.answer == report.source.answer and report.replay.status == "done"
    assert report.to_dict()["outcome"] == "same"


def test_a_replay_is_never_continued(store_url: str, tools: list[Tool]) -> None:
    source = record(store_url, tools)
    with replayer(store_url, tools) as agent:
        report = agent.replay(source)
        with pytest.raises(ReplayThreadError, match=f"replay of '{source}'"):
            agent.resume(report.replay.thread_id)
        assert report.replay.chain[0].replay_of == source  # type: ignore[attr-defined]


def test_a_changed_prompt_replays_as_a_changed_request_with_its_diff(
    store_url: str, tools: list[Tool], tool_runs: list[str]
) -> None:
    source = record(store_url, tools)
    tool_runs.clear()
    policy = ReActText(intro="You are a careful analyst who checks every figure.")
    with replayer(store_url, tools, policy=policy) as agent:
        report = agent.replay(source)
        strict = agent.replay(source, new_thread_id=f"strict-{source}", strict=True)

    assert report.outcome == "request changed", report.to_text()
    assert report.headline().startswith("request changed at think#1 (and 3 more calls)")
    first = report.requests[0]
    assert "-You are an agent that solves a task step by step." in first.diff
    assert "+You are a careful analyst who checks every figure." in first.diff
    assert report.exit_code == 0 and strict.exit_code == 1
    assert report.replay.answer == report.source.answer
    assert (report.model_calls, tool_runs) == (0, [])


def test_a_router_that_skips_a_tool_is_a_route_divergence(
    store_url: str, tools: list[Tool], tool_runs: list[str]
) -> None:
    source = record(store_url, tools)
    tool_runs.clear()
    with replayer(store_url, tools, build_graph=skip_calculator) as agent:
        report = agent.replay(source)

    assert report.outcome == "diverged" and report.exit_code == 1
    divergence = report.diff.divergence
    assert divergence is not None and divergence.kind == "route"
    assert divergence.where == "think#2" and (divergence.a, divergence.b) == ("act", "think")
    assert report.headline().startswith("first divergence: route at think#2")
    assert report.stopped.startswith("at the first divergence")
    assert (report.model_calls, tool_runs) == (0, [])


def test_changed_arguments_are_an_args_divergence_with_the_field_diff(
    store_url: str, tools: list[Tool], tool_runs: list[str]
) -> None:
    source = record(store_url, tools)
    tool_runs.clear()
    with replayer(store_url, tools, policy=Parenthesized()) as agent:
        report = agent.replay(source)

    divergence = report.diff.divergence
    assert divergence is not None and divergence.kind == "args", report.to_text()
    assert [c.path for c in divergence.changes] == ["args.expression"]
    change = divergence.changes[0]
    assert f"({change.a})" == change.b
    assert report.exit_code == 1 and "args at think#2" in report.headline()
    assert tool_runs == []  # the diverging call is not run: the replay stops before act


def test_live_from_the_divergence_makes_at_most_max_calls_model_calls(
    store_url: str, tools: list[Tool], tool_runs: list[str], openai_server: OpenAIServer
) -> None:
    source = record(store_url, tools)
    tool_runs.clear()
    for _ in range(6):
        openai_server.reply_text(
            'Thought: again\nAction: calculator\nAction Input: {"expression": "1 + 1"}'
        )
    model = LiteLLMModel("openai/test-model", api_base=openai_server.url + "/v1", api_key="sk-test")
    with replayer(store_url, tools, model, policy=Parenthesized()) as agent:
        report = agent.replay(source, live_from_divergence=True, max_calls=3)

    assert report.live and report.diff.divergence is not None
    assert report.model_calls == len(openai_server.requests) == 3
    assert tool_runs and set(tool_runs) == {"calculator"}  # after the divergence, tools run
    with replayer(store_url, tools) as agent, pytest.raises(ConfigError, match="max_calls"):
        agent.replay(source, new_thread_id="x", live_from_divergence=True)


def test_a_request_is_recorded_delta_coded_and_rebuilt_exactly(store_url: str) -> None:
    seen: list[list[dict[str, Any]]] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        seen.append([dict(m) for m in messages])
        if len(seen) < 12:
            return 'Thought: more\nAction: calculator\nAction Input: {"expression": "1 + 1"}'
        return "Thought: done\nFinal Answer: 2"

    from thinkgraph import ScriptedModel
    from thinkgraph.tools.builtin import calculator

    with Agent(
        ScriptedModel(reply), [calculator], limits=StepLimits(max_steps=20), store=store_url
    ) as agent:
        result = agent.run("add", f"long-{uuid.uuid4().hex[:8]}")
    calls = [s for s in result.chain if isinstance(s, LLMCallStep)]
    assert len(calls) == len(seen) == 12
    for step, messages in zip(calls, seen, strict=True):
        assert sent_messages(result.chain, step) == messages
        assert step.request is not None
        # The digest recorded is the one computed again from the messages.
        assert step.request.digest == request_digest(messages, step.request.tools_digest)
    # After the first call, each stores only what it adds: the reply and the observation.
    for step in calls[1:]:
        assert step.request is not None and step.request.base is not None
        assert sum(isinstance(part, dict) for part in step.request.messages) <= 2
    assert [s.request.visit for s in calls if s.request] == list(range(1, 13))
    # A new process has none of them in memory: each is rebuilt from the chain alone.
    _requests._cache.clear()
    for step, messages in reversed(list(zip(calls, seen, strict=True))):
        assert sent_messages(result.chain, step) == messages


def test_an_edited_call_replays_with_the_edit_and_its_recorded_result(
    store_url: str, tools: list[Tool], tool_runs: list[str]
) -> None:
    from thinkgraph.hitl import Edit

    thread = f"edit-{uuid.uuid4().hex[:8]}"
    with replayer(store_url, tools, scripted_analyst()) as agent:
        paused = agent.run(DEMO_TASK, thread)
        query = paused.pending[0].args["query"]  # type: ignore[index]
        edited = {"query": query + " LIMIT 10"}
        done = agent.resume(thread, {paused.pending[0].call_id: Edit(args=edited)})
        assert done.status == "done"
        tool_runs.clear()
        report = agent.replay(thread)

    assert report.outcome == "same", report.to_text()
    assert (report.served_decisions, report.served_results, tool_runs) == (1, 3, [])
    human = [s for s in report.replay.chain if isinstance(s, HumanStep)]
    assert [(h.kind, h.text) for h in human] == [("edit", json.dumps(edited))]


def test_an_ask_human_answer_is_served_at_the_same_pause(store_url: str) -> None:
    from thinkgraph import ScriptedModel

    replies = ["no format", "still none", "Thought: ok\nFinal Answer: 4"]
    limits = StepLimits(max_consecutive_failures=2, failure_policy="ask_human")
    thread = f"ask-{uuid.uuid4().hex[:8]}"
    with Agent(ScriptedModel(replies), limits=limits, store=store_url) as agent:
        assert agent.run("2 + 2?", thread).status == "paused"
        assert agent.resume(thread, "answer in the format").answer == "4"
        model = Counted(ScriptedModel([]))
    with Agent(model, limits=limits, store=store_url) as agent:
        report = agent.replay(thread)

    assert report.outcome == "same", report.to_text()
    assert (report.served_decisions, model.calls, report.replay.answer) == (1, 0, "4")


def test_a_prompt_diff_masks_secrets_as_the_views_do(store_url: str) -> None:
    from thinkgraph import ScriptedModel, tool
    from thinkgraph.policies import ReActText

    @tool(sensitive=["password"])
    def login(user: str, password: str) -> str:
        """Log in."""
        return "logged in"

    class Marked(ReActText):
        """Shows the model its earlier replies with a mark: every later prompt changes."""

        def to_messages(self, chain: Any, tools: Any, *, final: bool = False) -> Any:
            messages = super().to_messages(chain, tools, final=final)
            return [
                {**m, "content": m["content"] + " (seen)"} if m["role"] == "assistant" else m
                for m in messages
            ]

    replies = [
        'Thought: log in\nAction: login\nAction Input: {"user": "ann", "password": "hunter2-x"}',
        "Thought: done\nFinal Answer: in",
    ]
    thread = f"login-{uuid.uuid4().hex[:8]}"
    with Agent(ScriptedModel(replies), [login], store=store_url) as agent:
        agent.run("log in as ann", thread)
    with Agent(ScriptedModel([]), [login], policy=Marked(), store=store_url) as agent:
        report = agent.replay(thread)

    assert report.outcome == "request changed" and report.headline() == "request changed at think#2"
    shown = report.requests[0].diff + json.dumps(report.to_dict()) + report.to_text()
    assert '"password": "***"' in report.requests[0].diff
    assert "hunter2-x" not in shown
