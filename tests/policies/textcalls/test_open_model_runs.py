"""Runs of the default agent through litellm, against a loopback OpenAI-protocol server whose
model writes its tool calls as text in its own trained format (issue 27's acceptance).

No server-side tool parser: the replies arrive as plain message content, exactly as a vLLM,
Ollama or llama.cpp server sends them when none is configured, and the default text policy
(`ReActText`) reads them. Each run must finish ``done`` having made the right calls — every
call of a reply that holds several, in order — with the answer from the last reply and none
of the model's reasoning in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, tool
from thinkgraph.llm import LiteLLMModel
from thinkgraph.policies import ReActText
from thinkgraph.result import RunResult
from thinkgraph.state import ErrorStep, ToolCallStep, ToolResultStep
from thinkgraph.tools.base import Tool

TEMPERATURES = {"Rome": 21, "Paris": 15, "Oslo": 4}


@dataclass
class Recorder:
    """Real tools that write down every call they receive."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def tools(self) -> list[Tool]:
        @tool
        def get_weather(city: str) -> str:
            """The current weather in a city."""
            self.calls.append(("get_weather", {"city": city}))
            return f"{TEMPERATURES[city]} °C in {city}"

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.calls.append(("add", {"a": a, "b": b}))
            return a + b

        return [get_weather, add]


def run_on(server: OpenAIServer, replies: list[str], task: str) -> tuple[RunResult, Recorder]:
    """The default agent, through litellm's OpenAI provider, on the scripted replies."""
    for reply in replies:
        server.reply_text(reply)
    model = LiteLLMModel("openai/open-model", api_base=server.url + "/v1", api_key="sk-test")
    recorder = Recorder()
    agent = Agent(model, recorder.tools(), store="memory://")
    assert isinstance(agent.deps.policy, ReActText)  # the default, with no configuration
    return agent.run(task), recorder


def assert_ran(
    result: RunResult,
    recorder: Recorder,
    server: OpenAIServer,
    calls: list[tuple[str, dict[str, Any]]],
    answer: str,
    reasoning: list[str],
) -> None:
    """Done, every call made once and recorded in the chain, the answer clean."""
    assert (result.status, result.answer) == ("done", answer)
    assert [
        (s.call.name, s.call.args) for s in result.chain if isinstance(s, ToolCallStep)
    ] == calls
    assert recorder.calls == calls
    assert all(s.ok for s in result.chain if isinstance(s, ToolResultStep))
    assert [s for s in result.chain if isinstance(s, ErrorStep)] == []
    assert server.pending == 0
    assert "<|" not in answer and "<tool_call>" not in answer
    assert not [text for text in reasoning if text in answer]


def test_hermes_replies_with_two_parallel_calls(openai_server: OpenAIServer) -> None:
    thinking = "The user wants both cities, so I call get_weather twice."
    replies = [
        f"<think>\n{thinking}\n</think>\n\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        "<think>\nRome is 21 and Paris is 15, so Rome is warmer.\n</think>\n\n"
        "Final Answer: Rome is warmer today: 21 °C against 15 °C in Paris.",
    ]

    result, recorder = run_on(openai_server, replies, "Is Rome or Paris warmer today?")

    assert_ran(
        result,
        recorder,
        openai_server,
        [("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Paris"})],
        "Rome is warmer today: 21 °C against 15 °C in Paris.",
        [thinking, "Rome is 21 and Paris is 15, so Rome is warmer."],
    )
    second = openai_server.bodies[1]
    assert second is not None
    sent = "\n".join(str(m["content"]) for m in second["messages"])
    assert "21 °C in Rome" in sent and "15 °C in Paris" in sent


def test_gpt_oss_harmony_replies_with_an_analysis_channel(openai_server: OpenAIServer) -> None:
    analysis = "The user asks for 2 + 40. Use the add tool."
    replies = [
        f"<|channel|>analysis<|message|>{analysis}<|end|><|start|>assistant<|channel|>"
        'commentary to=functions.add <|constrain|>json<|message|>{"a": 2, "b": 40}<|call|>',
        "<|channel|>analysis<|message|>The tool returned 42; report it.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>2 + 40 = 42.<|return|>",
    ]

    result, recorder = run_on(openai_server, replies, "What is 2 + 40?")

    assert_ran(
        result,
        recorder,
        openai_server,
        [("add", {"a": 2, "b": 40})],
        "2 + 40 = 42.",
        [analysis, "The tool returned 42; report it."],
    )
    assert [s.output for s in result.chain if isinstance(s, ToolResultStep)] == [42]


def test_pythonic_replies(openai_server: OpenAIServer) -> None:
    replies = [
        '[get_weather(city="Oslo")]',
        "[add(a=4, b=3)]",
        "Final Answer: It is 4 °C in Oslo; three degrees warmer would be 7 °C.",
    ]

    result, recorder = run_on(openai_server, replies, "Oslo's temperature, plus three?")

    assert_ran(
        result,
        recorder,
        openai_server,
        [("get_weather", {"city": "Oslo"}), ("add", {"a": 4, "b": 3})],
        "It is 4 °C in Oslo; three degrees warmer would be 7 °C.",
        [],
    )
