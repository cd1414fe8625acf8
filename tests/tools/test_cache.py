"""cache_ttl_s: an identical call in the same thread within the TTL reuses the chain's result."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ToolDefinitionError
from thinkgraph.llm.base import Message
from thinkgraph.state import BaseStep, ToolCall, ToolCallStep, ToolResultStep
from thinkgraph.tools import ToolContext, ToolRegistry
from thinkgraph.tools.cache import call_key, find_cached, replay_cached
from thinkgraph.tools.function import FunctionTool

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def make_lookup(runs: list[str], ttl: float | None = 60) -> FunctionTool[..., str]:
    @tool(cache_ttl_s=ttl)
    def lookup(city: str, units: str = "metric") -> str:
        """Look up the weather."""
        runs.append(city)
        return f"sunny in {city} ({units})"

    return lookup


def round_of(call: ToolCall, at: datetime, ok: bool = True, cached: bool = False) -> list[BaseStep]:
    """A tool_call step and its result, as think and act record them."""
    result = ToolResultStep(
        call_id=call.id, tool=call.name, ok=ok, output="sunny", at=at, cached=cached
    )
    return [ToolCallStep(call=call, at=at), result]


def weather(city: str, call_id: str, **extra: str) -> ToolCall:
    return ToolCall(name="lookup", args={"city": city, **extra}, id=call_id)


REGISTRY = ToolRegistry([make_lookup([])])


# -- lookup -----------------------------------------------------------------------------------


def test_an_identical_call_within_the_ttl_finds_the_latest_result() -> None:
    chain = [
        *round_of(weather("Paris", "c1"), T0),
        *round_of(weather("Paris", "c2"), T0 + timedelta(seconds=10)),
    ]
    hits = find_cached(REGISTRY, chain, [weather("Paris", "new")], now=T0 + timedelta(seconds=30))
    assert list(hits) == ["new"]
    assert hits["new"].call_id == "c2"


def test_arguments_are_compared_after_validation() -> None:
    chain = round_of(weather("Paris", "c1"), T0)
    again = weather("Paris", "new", units="metric")  # the default, written out
    assert call_key(REGISTRY, again) == call_key(REGISTRY, weather("Paris", "x"))
    assert find_cached(REGISTRY, chain, [again], now=T0)["new"].call_id == "c1"


def test_other_arguments_expired_results_and_failures_are_not_reused() -> None:
    chain = [
        *round_of(weather("Rome", "rome"), T0),
        *round_of(weather("Oslo", "oslo"), T0 + timedelta(seconds=100), ok=False),
    ]
    later = T0 + timedelta(seconds=61)
    calls = [weather("Rome", "a"), weather("Oslo", "b"), weather("Paris", "c")]
    assert find_cached(REGISTRY, chain, calls, now=later) == {}
    assert list(find_cached(REGISTRY, chain, calls, now=T0 + timedelta(seconds=59))) == ["a"]


def test_a_cached_result_is_never_the_source_so_entries_expire_after_the_real_run() -> None:
    chain = [
        *round_of(weather("Paris", "real"), T0),
        *round_of(weather("Paris", "copy"), T0 + timedelta(seconds=50), cached=True),
    ]
    assert (
        find_cached(REGISTRY, chain, [weather("Paris", "n")], now=T0 + timedelta(seconds=70)) == {}
    )


def test_tools_without_a_ttl_and_invalid_arguments_are_never_looked_up() -> None:
    plain = ToolRegistry([make_lookup([], ttl=None)])
    chain = round_of(weather("Paris", "c1"), T0)
    assert plain.cache_ttls == {}
    assert find_cached(plain, chain, [weather("Paris", "n")], now=T0) == {}
    bad = ToolCall(name="lookup", args={"town": "Paris"}, id="n")
    assert call_key(REGISTRY, bad) is None
    assert find_cached(REGISTRY, chain, [bad], now=T0) == {}


def test_a_replayed_result_is_marked_and_names_its_source() -> None:
    source = round_of(weather("Paris", "c1"), T0)[1]
    assert isinstance(source, ToolResultStep)
    ctx = ToolContext.for_call("t", 3, "c9")
    replayed = replay_cached(source, weather("Paris", "c9"), ctx)
    assert (replayed.cached, replayed.cached_from, replayed.call_id) == (True, source.id, "c9")
    assert (replayed.output, replayed.attempts, replayed.idempotency_key) == ("sunny", 0, "t:3:c9")
    assert replayed.id != source.id and replayed.usage is None


# -- definition -------------------------------------------------------------------------------


def test_a_ttl_must_be_positive() -> None:
    with pytest.raises(ToolDefinitionError, match="cache_ttl_s=0; use a positive number"):
        make_lookup([], ttl=0)


def test_a_tool_with_side_effects_cannot_be_cached() -> None:
    with pytest.raises(ToolDefinitionError, match="a cached call would skip the effect"):

        @tool(cache_ttl_s=10, side_effects=True)
        def send(to: str) -> str:
            """Send a message."""
            return to


# -- end to end -------------------------------------------------------------------------------


def ask(city: str) -> str:
    args = json.dumps({"city": city})
    return f"Thought: check\nAction: lookup\nAction Input: {args}"


FINAL = "Thought: done\nFinal Answer: sunny"


def test_a_repeated_call_in_a_run_is_served_from_cache() -> None:
    runs: list[str] = []
    model = ScriptedModel([ask("Paris"), ask("Paris"), ask("Rome"), FINAL])
    with Agent(model, [make_lookup(runs)], store="memory://") as agent:
        result = agent.run("weather?", thread_id="t")
    results = [s for s in result.chain if isinstance(s, ToolResultStep)]
    assert runs == ["Paris", "Rome"]
    assert [(r.output, r.cached) for r in results] == [
        ("sunny in Paris (metric)", False),
        ("sunny in Paris (metric)", True),
        ("sunny in Rome (metric)", False),
    ]
    assert results[1].cached_from == results[0].id and results[1].attempts == 0
    assert result.answer == "sunny"


class Crash(BaseException):
    """Stands for the process dying: no node catches it."""


def test_the_cache_survives_a_resume_by_another_agent_on_the_same_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    replies = [ask("Paris"), ask("Paris"), FINAL]

    def crash_at_second_think(messages: list[Message]) -> str:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if turn == 1:
            raise Crash
        return replies[turn]

    first_runs: list[str] = []
    with (
        Agent(ScriptedModel(crash_at_second_think), [make_lookup(first_runs)], store=store) as a,
        pytest.raises(Crash),
    ):
        a.run("weather?", thread_id="t")
    assert first_runs == ["Paris"]

    second_runs: list[str] = []  # a fresh tool: no memory of the first process
    with Agent(ScriptedModel(replies), [make_lookup(second_runs)], store=store) as b:
        result = b.resume("t")
    assert (result.status, second_runs) == ("done", [])
    cached = [s for s in result.chain if isinstance(s, ToolResultStep) and s.cached]
    assert len(cached) == 1 and cached[0].output == "sunny in Paris (metric)"
