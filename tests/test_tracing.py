"""Traces out: OpenTelemetry spans and LangChain callbacks of a run.

Spans are recorded with the SDK's in-memory exporter under a provider given for the test
only (`use_tracer_provider`), so nothing leaks into other tests' global state.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest

pytest.importorskip("opentelemetry.sdk")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.hitl import Approve, Reject, Respond
from thinkgraph.tracing import use_tracer_provider


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def boom(x: int) -> int:
    """Always fails."""
    raise RuntimeError("kaput")


@tool(timeout_s=0.05)
def slow(x: int) -> int:
    """Takes too long."""
    time.sleep(0.5)
    return x


def _call(name: str, args: str) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {args}"


FINAL = "Thought: done\nFinal Answer: 42"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_tracer_provider(provider):
        yield exporter
    provider.shutdown()


def _named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def _parent(spans: list[ReadableSpan], span: ReadableSpan) -> ReadableSpan:
    assert span.parent is not None, f"{span.name} has no parent"
    by_id = {s.context.span_id: s for s in spans}
    return by_id[span.parent.span_id]


def _adding_agent(**options: Any) -> Agent:
    """An agent that adds 2 + 40 with `add`, which needs approval, then answers 42."""
    return Agent(
        ScriptedModel([_call("add", '{"a": 2, "b": 40}'), FINAL]),
        [add],
        store="memory://",
        approve=["add"],
        **options,
    )


def _approved_run(agent: Agent, thread_id: str) -> None:
    paused = agent.run("What is 2 + 40?", thread_id=thread_id)
    assert paused.status == "paused"
    done = agent.resume(thread_id, decisions={p.call_id: Approve() for p in paused.pending})
    assert done.answer == "42"


def test_run_with_approval_emits_run_node_model_and_tool_spans(
    exporter: InMemorySpanExporter,
) -> None:
    agent = _adding_agent()
    _approved_run(agent, "t-approve")
    spans = list(exporter.get_finished_spans())

    runs = _named(spans, "thinkgraph.run")
    assert [r.attributes["thinkgraph.status"] for r in runs] == ["paused", "done"]
    assert runs[1].attributes["thinkgraph.stop_reason"] == "final_answer"
    assert runs[1].attributes["thinkgraph.resumed"] is True
    for run in runs:
        assert run.parent is None

    nodes = [s for s in spans if s.name.startswith("thinkgraph.node ")]
    names = [s.attributes["thinkgraph.node"] for s in nodes]
    assert {"think", "approve", "act", "observe", "validate", "finalize"} <= set(names)
    for node in nodes:
        assert _parent(spans, node).name == "thinkgraph.run"
    approve = next(n for n in nodes if n.attributes["thinkgraph.node"] == "approve")
    assert approve.status.status_code is not StatusCode.ERROR  # a pause is not a failure

    chats = _named(spans, "chat scripted")
    assert len(chats) == 2
    for chat in chats:
        assert _parent(spans, chat).attributes["thinkgraph.node"] == "think"
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.system"] == "scripted"
        assert chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.attributes["gen_ai.response.model"] == "scripted"
        assert chat.attributes["gen_ai.usage.input_tokens"] == 0
        assert chat.attributes["gen_ai.usage.output_tokens"] == 0
        assert chat.attributes["thinkgraph.cost_usd"] == 0.0

    (tool_span,) = _named(spans, "execute_tool add")
    assert _parent(spans, tool_span).attributes["thinkgraph.node"] == "act"
    assert tool_span.attributes["gen_ai.tool.name"] == "add"
    assert tool_span.attributes["gen_ai.tool.call.id"]
    assert tool_span.attributes["thinkgraph.tool.outcome"] == "ok"

    for span in spans:
        assert span.attributes["thinkgraph.thread_id"] == "t-approve", span.name


def test_tool_error_and_timeout_are_outcomes_with_error_status(
    exporter: InMemorySpanExporter,
) -> None:
    agent = Agent(
        ScriptedModel([_call("boom", '{"x": 1}'), _call("slow", '{"x": 1}'), FINAL]),
        [boom, slow],
        store="memory://",
    )
    assert agent.run("go", thread_id="t-fail").answer == "42"
    spans = list(exporter.get_finished_spans())
    (failed,) = _named(spans, "execute_tool boom")
    (late,) = _named(spans, "execute_tool slow")
    assert failed.attributes["thinkgraph.tool.outcome"] == "error"
    assert late.attributes["thinkgraph.tool.outcome"] == "timeout"
    assert failed.status.status_code is StatusCode.ERROR
    assert late.status.status_code is StatusCode.ERROR


def test_a_failed_model_call_is_an_error_span(exporter: InMemorySpanExporter) -> None:
    def broken(messages: list[Any]) -> str:
        raise ConnectionError("provider down")

    agent = Agent(ScriptedModel(broken), [add], store="memory://")
    agent.run("go", thread_id="t-down")
    chats = _named(list(exporter.get_finished_spans()), "chat scripted")
    assert chats
    assert chats[0].status.status_code is StatusCode.ERROR
    assert "provider down" in (chats[0].status.description or "")


def test_spans_of_concurrent_runs_stay_in_their_own_trace(
    exporter: InMemorySpanExporter,
) -> None:
    agent = Agent(
        ScriptedModel([_call("add", '{"a": 2, "b": 40}'), FINAL]), [add], store="memory://"
    )

    async def main() -> None:
        await asyncio.gather(*(agent.arun("q", thread_id=f"c{i}") for i in range(8)))

    asyncio.run(main())
    spans = list(exporter.get_finished_spans())
    runs = _named(spans, "thinkgraph.run")
    assert len(runs) == 8
    thread_of_trace = {r.context.trace_id: r.attributes["thinkgraph.thread_id"] for r in runs}
    assert len(thread_of_trace) == 8
    for span in spans:
        assert span.attributes["thinkgraph.thread_id"] == thread_of_trace[span.context.trace_id]
    assert len({s.context.trace_id for s in spans}) == 8


def test_without_a_provider_nothing_is_recorded() -> None:
    exporter = InMemorySpanExporter()
    TracerProvider().add_span_processor(SimpleSpanProcessor(exporter))  # not in use
    agent = Agent(ScriptedModel([FINAL]), store="memory://")
    assert agent.run("q", thread_id="t-off").answer == "42"
    assert exporter.get_finished_spans() == ()


def test_thinkgraph_runs_without_opentelemetry_installed() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if it were not installed
        from thinkgraph import Agent, ScriptedModel
        agent = Agent(ScriptedModel(["Thought: done\\nFinal Answer: 42"]), store="memory://")
        print(agent.run("q", thread_id="t").answer)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "42"


# -- LangChain callbacks --------------------------------------------------------------------


class Recorder(BaseCallbackHandler):
    """Every callback event, with the run ids, tags and metadata it came with."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.names: dict[UUID, str] = {}

    def _add(self, event: str, **kw: Any) -> None:
        self.events.append((event, kw))

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kw: Any) -> None:
        self.names[run_id] = str(kw.get("name"))
        self._add("chain_start", run_id=run_id, **kw)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kw: Any
    ) -> None:
        self._add("chat_model_start", run_id=run_id, messages=messages, **kw)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kw: Any) -> None:
        self._add("llm_end", run_id=run_id, response=response, **kw)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        self._add("llm_error", run_id=run_id, error=error, **kw)

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kw: Any) -> None:
        self._add("tool_start", run_id=run_id, serialized=serialized, input_str=input_str, **kw)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kw: Any) -> None:
        self._add("tool_end", run_id=run_id, output=output, **kw)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        self._add("tool_error", run_id=run_id, error=error, **kw)

    def of(self, event: str) -> list[dict[str, Any]]:
        return [kw for name, kw in self.events if name == event]


def test_model_and_tool_calls_are_child_runs_of_their_nodes_for_callbacks() -> None:
    recorder = Recorder()
    agent = _adding_agent(
        callbacks=[recorder], tags=["nightly"], metadata={"user": "ada"}, run_name="adder"
    )
    _approved_run(agent, "t-cb")

    roots = [kw for kw in recorder.of("chain_start") if kw.get("parent_run_id") is None]
    assert [kw["name"] for kw in roots] == ["adder", "adder"]  # the run, then its resume

    starts = recorder.of("chat_model_start")
    ends = recorder.of("llm_end")
    assert len(starts) == len(ends) == 2
    for start in starts:
        assert recorder.names[start["parent_run_id"]] == "think"
        assert "nightly" in start["tags"]
        assert start["metadata"]["user"] == "ada"
        assert start["metadata"]["thread_id"] == "t-cb"
        assert start["messages"][0]  # the prompt, as LangChain messages
    end = ends[0]
    assert end["run_id"] == starts[0]["run_id"]
    usage = end["response"].llm_output["token_usage"]
    assert usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    message = end["response"].generations[0][0].message
    assert message.usage_metadata["input_tokens"] == 0
    assert "Action: add" in message.content

    (tool_start,) = recorder.of("tool_start")
    (tool_end,) = recorder.of("tool_end")
    assert tool_start["serialized"]["name"] == "add"
    assert recorder.names[tool_start["parent_run_id"]] == "act"
    assert "nightly" in tool_start["tags"]
    assert tool_end["run_id"] == tool_start["run_id"]
    assert tool_end["output"] == 42


def test_failed_model_and_tool_calls_reach_callbacks_as_errors() -> None:
    calls = iter([_call("boom", '{"x": 1}')])

    def script(messages: list[Any]) -> str:
        reply = next(calls, None)
        if reply is None:
            raise ConnectionError("provider down")
        return reply

    recorder = Recorder()
    agent = Agent(ScriptedModel(script), [boom], store="memory://", callbacks=[recorder])
    agent.run("go", thread_id="t-cb-err")
    (tool_error,) = recorder.of("tool_error")
    assert "kaput" in str(tool_error["error"])
    errors = recorder.of("llm_error")
    assert errors and isinstance(errors[0]["error"], ConnectionError)


def test_streamed_runs_and_resumes_open_a_run_span_over_their_nodes(
    exporter: InMemorySpanExporter,
) -> None:
    agent = _adding_agent()
    steps = list(agent.stream("What is 2 + 40?", "t-stream"))
    assert steps and agent.result("t-stream").status == "paused"
    decisions = {p.call_id: Approve() for p in agent.result("t-stream").pending}
    list(agent.stream_resume("t-stream", decisions))
    spans = list(exporter.get_finished_spans())

    runs = _named(spans, "thinkgraph.run")
    assert [r.attributes["thinkgraph.status"] for r in runs] == ["paused", "done"]
    assert [r.attributes["thinkgraph.resumed"] for r in runs] == [False, True]
    assert all(r.parent is None for r in runs)
    nodes = [s for s in spans if s.name.startswith("thinkgraph.node ")]
    assert nodes
    for node in nodes:
        assert _parent(spans, node).name == "thinkgraph.run"


def test_async_streams_open_a_run_span_too(exporter: InMemorySpanExporter) -> None:
    agent = Agent(ScriptedModel([FINAL]), [add], store="memory://")

    async def main() -> None:
        async for _ in agent.astream("What is 2 + 40?", "t-astream"):
            pass

    asyncio.run(main())
    spans = list(exporter.get_finished_spans())
    (run,) = _named(spans, "thinkgraph.run")
    assert run.attributes["thinkgraph.status"] == "done"
    think = next(s for s in spans if s.name == "thinkgraph.node think")
    assert _parent(spans, think) is run


@pytest.mark.parametrize(
    ("decision", "outcome", "failed"),
    [(Reject(reason="not now"), "rejected", True), (Respond(text="it is 42"), "responded", False)],
)
def test_a_call_a_person_answers_instead_of_running_gets_a_tool_span(
    exporter: InMemorySpanExporter, decision: Any, outcome: str, failed: bool
) -> None:
    agent = _adding_agent()
    paused = agent.run("What is 2 + 40?", thread_id="t-decided")
    (pending,) = paused.pending
    agent.resume("t-decided", decisions={pending.call_id: decision})
    spans = list(exporter.get_finished_spans())

    (tool_span,) = _named(spans, "execute_tool add")
    assert _parent(spans, tool_span).attributes["thinkgraph.node"] == "approve"
    assert tool_span.attributes["gen_ai.tool.call.id"] == pending.call_id
    assert tool_span.attributes["thinkgraph.tool.outcome"] == outcome
    assert (tool_span.status.status_code is StatusCode.ERROR) is failed


def test_a_stream_left_early_ends_its_run_span_as_interrupted_not_failed(
    exporter: InMemorySpanExporter,
) -> None:
    agent = Agent(
        ScriptedModel([_call("add", '{"a": 2, "b": 40}'), FINAL]), [add], store="memory://"
    )
    for step in agent.stream("What is 2 + 40?", "t-left"):
        if step.type == "tool_call":
            break
    (run,) = _named(list(exporter.get_finished_spans()), "thinkgraph.run")
    assert run.attributes["thinkgraph.interrupted"] is True
    assert run.status.status_code is not StatusCode.ERROR


def test_tracing_imports_none_of_its_users() -> None:
    import subprocess
    import sys

    code = (
        "import sys, thinkgraph.tracing\nprint(sorted(m for m in sys.modules if 'thinkgraph' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout.strip()
    assert "thinkgraph.tracing" in loaded
    assert not any(user in loaded for user in ("thinkgraph.llm", "thinkgraph.tools"))
