"""Fail closed on values: whatever a model or a tool produces never wedges a run.

Every value a model reply or a tool result can carry is either stored in the chain or
refused where it enters, as a step with feedback for the model. None of them may reach
the checkpoint serializer as something it cannot encode: a run that did would stop with a
traceback and crash the same way on every resume.

The fuzz cases below feed each hostile category (lone surrogates, raw and as JSON escapes;
integers beyond 64 bits; NaN and infinities; NUL; deep nesting; 10 MB) through every policy
and every built-in tool, on a real SQLite store (and PostgreSQL for a subset). Each run must
end (done or failed, never a crash), its chain must read back from the store in a fresh
agent, export as strict JSON (no NaN, valid UTF-8) and be shown by `thinkgraph show`.
How each case ended is tallied and printed at the end of the module (run with -s).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import POSTGRES_URL
from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.cli import app
from thinkgraph.llm.litellm import LiteLLMModel
from thinkgraph.policies import JsonPlan, NativeTools, ReActText, StructuredStep
from thinkgraph.policies.base import Policy
from thinkgraph.state import ErrorStep, FinalStep, ToolResultStep
from thinkgraph.tools import Tool
from thinkgraph.tools.builtin import agent_tool, calculator, files, llm_tool, sql_query
from thinkgraph.tools.output import ToolOutput
from thinkgraph.views import to_html, to_json, to_markdown

runner = CliRunner()

TEN_MB = 10 * 1024 * 1024

# -- what the fuzz sends --------------------------------------------------------------------

BAD_ARGS: dict[str, str] = {
    # name -> the JSON text of an arguments object carrying the value in "value"
    "surrogate, JSON escape": '{"value": "\\ud800"}',
    "surrogate, raw": '{"value": "a\ud800b"}',
    "surrogates, reversed pair": '{"value": "\\udc00\\ud800"}',
    "integer >= 2**64": '{"value": 99999999999999999999999}',
    "integer < -2**63": '{"value": -9223372036854775809}',
    "NaN": '{"value": NaN}',
    "Infinity": '{"value": Infinity}',
    "-Infinity": '{"value": -Infinity}',
    "'nan' as text": '{"value": "nan"}',
    "NUL, JSON escape": '{"value": "a\\u0000b"}',
    "NUL, raw": '{"value": "a\x00b"}',
    "nesting 300 deep": '{"value": ' + "[" * 300 + "]" * 300 + "}",
    "nesting 100k deep": '{"value": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "10 MB string": '{"value": "' + "x" * TEN_MB + '"}',
}

BAD_TEXT: dict[str, str] = {
    # name -> free text (a thought, an answer) carrying the value
    "surrogate, raw": "a\ud800b",
    "surrogates, reversed pair": "\udc00\ud800",
    "NUL, raw": "a\x00b",
    "10 MB of text": "y" * TEN_MB,
}
STORED_TEXT = {"surrogate, raw": "a\ufffdb", "surrogates, reversed pair": "\ufffd\ufffd"}
"""How a text is stored when it is not kept as it is (a lone surrogate becomes U+FFFD)."""


KEPT: list[Any] = []


@tool
def keep(value: Any = None) -> str:
    """Keep a value and say what it was."""
    KEPT.append(value)
    return f"kept a {type(value).__name__}"


# -- the policies: one reply format each ---------------------------------------------------


@dataclass(frozen=True)
class Format:
    """How one policy's replies are written."""

    make: Callable[[], Policy]
    call: Callable[[str, str], str] | None
    """A reply calling `tool` with arguments given as JSON text; None: no tool calls."""
    say: Callable[[str], str]
    """A reply whose thought carries `text` and that calls no tool."""
    final: Callable[[str], str]


def _react_call(name: str, args: str) -> str:
    return f"Thought: try it\nAction: {name}\nAction Input: {args}"


def _plan_call(name: str, args: str) -> str:
    return (
        '{"understanding": "u", "task_complete": false, "reasoning": "r", '
        f'"actions": [{{"tool": "{name}", "args": {args}}}], "response": null}}'
    )


def _plan_final(answer: str) -> str:
    return json.dumps(
        {"understanding": "", "task_complete": True, "reasoning": "", "actions": [],
         "response": answer}, ensure_ascii=False
    )  # fmt: skip


def _step_call(name: str, args: str) -> str:
    return (
        f'{{"title": "t", "action": {{"tool": "{name}", "args": {args}}}, "result": null, '
        '"reasoning": "r", "next_action": "continue", "confidence": 0.5}'
    )


def _step_final(answer: str) -> str:
    return json.dumps(
        {"title": "done", "action": None, "result": answer, "reasoning": "r",
         "next_action": "final_answer", "confidence": 0.9}, ensure_ascii=False
    )  # fmt: skip


FORMATS: dict[str, Format] = {
    "ReActText": Format(
        ReActText,
        _react_call,
        lambda text: f"Thought: {text}\nAction: keep\nAction Input: {{}}",
        lambda answer: f"Thought: done\nFinal Answer: {answer}",
    ),
    "JsonPlan": Format(
        JsonPlan,
        _plan_call,
        lambda text: _plan_call("keep", "{}").replace('"u"', json.dumps(text, ensure_ascii=False)),
        _plan_final,
    ),
    "StructuredStep": Format(
        StructuredStep,
        _step_call,
        lambda text: _step_call("keep", "{}").replace('"r"', json.dumps(text, ensure_ascii=False)),
        _step_final,
    ),
    # A ScriptedModel speaks text only: NativeTools takes its text as the final answer.
    "NativeTools": Format(NativeTools, None, lambda text: text, lambda answer: answer),
}


# -- running a case and checking what is left -----------------------------------------------


@dataclass
class Tally:
    """How every fuzz case ended, printed when the module is done."""

    endings: Counter[str] = field(default_factory=Counter)
    cases: int = 0

    def add(self, ending: str) -> None:
        self.cases += 1
        self.endings[ending] += 1


TALLY = Tally()


@pytest.fixture(scope="module", autouse=True)
def _print_tally() -> Iterator[None]:
    yield
    print(f"\nfuzz cases run: {TALLY.cases}")
    for ending, count in sorted(TALLY.endings.items()):
        print(f"  {count:4d}  {ending}")


def ending_of(chain: list[Any]) -> str:
    """How a run dealt with the hostile value, read from its chain."""
    final = chain[-1]
    assert isinstance(final, FinalStep), type(final)
    status = f"{final.stop_reason}"
    if any(isinstance(s, ErrorStep) and s.kind == "parse" for s in chain):
        return f"{status}: refused where it entered (parse error with feedback)"
    results = [s for s in chain if isinstance(s, ToolResultStep)]
    if any(r.error_kind == "invalid_args" for r in results):
        return f"{status}: refused by the tool's arguments check (feedback)"
    if any(not r.ok for r in results):
        return f"{status}: the tool failed (error observation)"
    if results:
        return f"{status}: the tool ran, its result stored"
    return f"{status}: stored as text"


def _no_constants(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


def check_readable(url: str, thread: str, tools: list[Tool], policy: Policy) -> list[Any]:
    """The run as a fresh agent reads it back: ended, strict JSON, shown by the CLI."""
    with Agent(ScriptedModel([]), tools, store=url, policy=policy) as reader:
        result = reader.result(thread)
    assert result.status in ("done", "failed"), (result.status, result.stop_reason)
    document = to_json(result, tools=tools)
    document.encode("utf-8")  # no lone surrogate can reach a reader
    parsed = json.loads(document, parse_constant=_no_constants)
    assert parsed["status"] == result.status
    if len(document) < 1_000_000:  # a 10 MB chain costs the views long enough already
        for shown in (to_markdown(result, tools=tools), to_html(result, tools=tools)):
            shown.encode("utf-8")
    shown = runner.invoke(app, ["show", thread, "--store", url])
    assert shown.exit_code == 0, shown.output
    assert "Traceback" not in shown.output
    return list(result.chain)


def run_case(
    url: str, replies: list[str], tools: list[Tool], policy: Policy, thread: str = "fuzz"
) -> list[Any]:
    """Run `replies` to the end on `url`, check the stored run, tally how it ended."""
    limits = StepLimits(max_steps=4, max_consecutive_failures=3)
    agent = Agent(ScriptedModel(replies), tools, store=url, policy=policy, limits=limits)
    with agent:
        result = agent.run("fuzz", thread_id=thread)
    assert result.status in ("done", "failed"), (result.status, result.stop_reason)
    chain = check_readable(url, thread, tools, policy)
    assert [s.type for s in chain] == [s.type for s in result.chain]
    TALLY.add(ending_of(chain))
    return chain


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


# -- model replies through every policy -----------------------------------------------------

ARG_CASES = [
    pytest.param(fmt, name, id=f"{fmt}-{name}")
    for fmt in FORMATS
    if FORMATS[fmt].call is not None
    for name in BAD_ARGS
]
# 10 MB of text in a JSON policy's thought is stored as in ReActText's (its 10 MB arguments go
# through every policy above); showing it costs the views about a minute each.
TEXT_CASES = [
    pytest.param(fmt, name, id=f"{fmt}-{name}")
    for fmt in FORMATS
    for name in BAD_TEXT
    if not (name == "10 MB of text" and fmt in ("JsonPlan", "StructuredStep"))
]


@pytest.mark.parametrize(("fmt", "name"), ARG_CASES)
def test_a_hostile_value_in_a_tool_call_is_stored_or_refused_never_wedges_the_run(
    url: str, fmt: str, name: str
) -> None:
    form = FORMATS[fmt]
    assert form.call is not None
    KEPT.clear()
    replies = [form.call("keep", BAD_ARGS[name]), form.final("done")]
    run_case(url, replies, [keep], form.make())
    for value in KEPT:  # what a tool receives is a value the chain can hold
        assert _is_plain(value), (name, repr(value)[:80])


@pytest.mark.parametrize(("fmt", "name"), TEXT_CASES)
def test_a_hostile_value_in_a_thought_or_an_answer_is_stored_readable(
    url: str, fmt: str, name: str
) -> None:
    form = FORMATS[fmt]
    text = BAD_TEXT[name]
    replies = [form.say(text), form.final(text)]
    chain = run_case(url, replies, [keep], form.make())
    assert chain[-1].answer == STORED_TEXT.get(name, text)


NATIVE_CASES = [name for name in BAD_ARGS if "MB" not in name]


@pytest.mark.parametrize("name", NATIVE_CASES)
def test_a_hostile_value_in_a_native_tool_call_is_stored_or_refused(
    url: str, openai_server: OpenAIServer, name: str
) -> None:
    # NativeTools' calls come from the provider: a real HTTP server speaking the OpenAI
    # protocol sends the arguments text as written, litellm reads it as a user's run would.
    KEPT.clear()
    openai_server.reply_tool_calls(("keep", BAD_ARGS[name]))
    openai_server.reply_text("done")
    model = LiteLLMModel("openai/test-model", api_base=openai_server.url + "/v1", api_key="sk")
    limits = StepLimits(max_steps=4, max_consecutive_failures=3)
    with Agent(model, [keep], store=url, policy=NativeTools(), limits=limits) as agent:
        result = agent.run("fuzz", thread_id="native")
    assert result.status == "done", (result.status, result.stop_reason)
    chain = check_readable(url, "native", [keep], NativeTools())
    TALLY.add(ending_of(chain))
    assert all(_is_plain(value) for value in KEPT)
    sent = json.dumps(openai_server.bodies[-1])  # what the model was shown next
    sent.encode("utf-8")


def _is_plain(value: Any, depth: int = 0) -> bool:
    """Valid UTF-8 text, 64-bit integers, finite floats, bounded nesting."""
    if depth > 200:
        return False
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_is_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_is_plain(k, depth + 1) and _is_plain(v, depth + 1) for k, v in value.items())
    return False


def test_the_issue_repro_replies_end_the_run_with_feedback(url: str) -> None:
    lookup_calls: list[str] = []

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        lookup_calls.append(q)
        return q

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    replies = [
        'Action: lookup\nAction Input: {"q": "\\ud800"}',
        'Action: add\nAction Input: {"a": 99999999999999999999999, "b": 1}',
        "Thought: done\nFinal Answer: ok",
    ]
    chain = run_case(url, replies, [lookup, add], ReActText())
    errors = [s for s in chain if isinstance(s, ErrorStep)]
    assert [e.kind for e in errors] == ["parse", "parse"]
    assert "surrogate" in errors[0].feedback and "'q'" in errors[0].feedback
    assert "64" in errors[1].feedback and "'a'" in errors[1].feedback
    assert lookup_calls == []
    assert chain[-1].answer == "ok"


# -- tool results: what a tool returns ------------------------------------------------------


def _nested(depth: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return top


PRODUCED: dict[str, Callable[[], Any]] = {
    "surrogate": lambda: "a\ud800b",
    "integer 2**64": lambda: 2**64,
    "integer -2**70": lambda: -(2**70),
    "integer of 3,000 digits": lambda: 10**3000,
    "NaN": lambda: float("nan"),
    "-Infinity": lambda: float("-inf"),
    "NUL": lambda: "a\x00b",
    "nesting 300 deep": lambda: _nested(300),
    "10 MB string": lambda: "z" * TEN_MB,
    "a dict of them": lambda: {"n": 2**64, "s": "\ud800", "f": float("nan"), "l": [2**65]},
    "a dict with a surrogate key": lambda: {"\ud800": 1},
    "bytes that are not UTF-8": lambda: b"\xff\xfe\xed\xa0\x80",
    "an object": lambda: object(),
    "ToolOutput with a hostile chain": lambda: ToolOutput(
        "\ud800", child_chain=[{"type": "task", "text": "\ud800", "n": 2**64}]
    ),
    "ToolOutput with hostile usage": lambda: ToolOutput(
        "ok",
        usage={"prompt_tokens": 2**70, "completion_tokens": "lots", "cost_usd": float("nan")},  # type: ignore[typeddict-item]
    ),
    "nesting 100k deep": lambda: _nested(100_000),
}


@tool
def produce(kind: str) -> Any:
    """Return the value named by kind."""
    return PRODUCED[kind]()


@pytest.mark.parametrize("kind", list(PRODUCED))
def test_a_hostile_tool_result_is_stored_readable(url: str, kind: str) -> None:
    replies = [_react_call("produce", json.dumps({"kind": kind})), "Final Answer: done"]
    chain = run_case(url, replies, [produce], ReActText())
    (result,) = [s for s in chain if isinstance(s, ToolResultStep)]
    assert result.ok, result.error
    assert _is_plain(result.output), repr(result.output)[:80]


# -- every built-in tool --------------------------------------------------------------------


def _calculator() -> list[Tool]:
    return [calculator]


CALCULATIONS = ["2**64", "round(1e308)", "-(2**64) - 1", "10**3000", "1e308 * 10", "0/0"]


@pytest.mark.parametrize("expression", CALCULATIONS)
def test_the_calculator_never_wedges_a_run(url: str, expression: str) -> None:
    call = _react_call("calculator", json.dumps({"expression": expression}))
    chain = run_case(url, [call, "Final Answer: done"], _calculator(), ReActText())
    (result,) = [s for s in chain if isinstance(s, ToolResultStep)]
    if expression == "2**64":
        assert result.output == str(2**64)  # the exact digits, as text


QUERIES = [
    "SELECT 9223372036854775807 + 1",
    "SELECT char(55296)",
    "SELECT char(0)",
    "SELECT 1e999, -1e999",
    "SELECT CAST(x'fffe' AS TEXT)",
    "SELECT zeroblob(64)",
    "SELECT CAST(x'eda080' AS TEXT)",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_sql_tool_never_wedges_a_run(url: str, tmp_path: Path, query: str) -> None:
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    call = _react_call("sql_query", json.dumps({"query": query}))
    run_case(url, [call, "Final Answer: done"], [sql_query(db)], ReActText())


FILE_CALLS = {
    "offset 10**30": '{"path": "a.txt", "offset": 1000000000000000000000000000000}',
    "offset NaN": '{"path": "a.txt", "offset": NaN}',
    "a file that is not UTF-8": '{"path": "latin.txt"}',
    "a file with NUL": '{"path": "nul.txt"}',
    "a path with a surrogate": '{"path": "\\ud800.txt"}',
    "a path with NUL": '{"path": "a\\u0000.txt"}',
    "list a deep path": '{"path": "' + "d/" * 2000 + '"}',
}


@pytest.mark.parametrize("name", list(FILE_CALLS))
def test_the_file_tools_never_wedge_a_run(url: str, tmp_path: Path, name: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("hello")
    (root / "latin.txt").write_bytes(b"caf\xe9 \xed\xa0\x80")
    (root / "nul.txt").write_bytes(b"a\x00b")
    tool_name = "list_files" if name.startswith("list") else "read_file"
    call = _react_call(tool_name, FILE_CALLS[name])
    run_case(url, [call, "Final Answer: done"], files(root), ReActText())


@pytest.mark.parametrize("name", list(BAD_TEXT))
def test_the_llm_tool_never_wedges_a_run(url: str, name: str) -> None:
    asked = llm_tool(ScriptedModel([BAD_TEXT[name]]), name="ask")
    call = _react_call("ask", json.dumps({"prompt": "say it"}))
    chain = run_case(url, [call, "Final Answer: done"], [asked], ReActText())
    (result,) = [s for s in chain if isinstance(s, ToolResultStep)]
    assert _is_plain(result.output)


CHILD_REPLIES = {
    "surrogate in the child's call": _react_call("keep", BAD_ARGS["surrogate, JSON escape"]),
    "big integer in the child's call": _react_call("keep", BAD_ARGS["integer >= 2**64"]),
    "surrogate in the child's answer": "Final Answer: a\ud800b",
    "10 MB child answer": "Final Answer: " + "w" * TEN_MB,
}


@pytest.mark.parametrize("name", list(CHILD_REPLIES))
def test_the_agent_tool_never_wedges_a_run(url: str, tmp_path: Path, name: str) -> None:
    child_model = ScriptedModel([CHILD_REPLIES[name], "Final Answer: child done"])
    child = Agent(child_model, [keep], store=f"sqlite:///{tmp_path / 'child.db'}")
    research = agent_tool(child, name="research", description="Research a question.")
    call = _react_call("research", json.dumps({"task": "look"}))
    with child:
        chain = run_case(url, [call, "Final Answer: done"], [research], ReActText())
    (result,) = [s for s in chain if isinstance(s, ToolResultStep)]
    assert result.ok and _is_plain(result.output) and _is_plain(result.child_chain)


# -- PostgreSQL: the same rule on the other durable store ----------------------------------

POSTGRES_CASES = [
    "surrogate, JSON escape",
    "surrogate, raw",
    "integer >= 2**64",
    "NaN",
    "NUL, JSON escape",
    "NUL, raw",
    "nesting 300 deep",
]


@pytest.mark.parametrize("name", POSTGRES_CASES)
def test_on_postgres_a_hostile_value_never_wedges_the_run(name: str, thread_id: str) -> None:
    form = FORMATS["ReActText"]
    assert form.call is not None
    replies = [form.call("keep", BAD_ARGS[name]), f"Thought: {BAD_ARGS[name]}\nFinal Answer: ok"]
    run_case(POSTGRES_URL, replies, [keep], ReActText(), thread=thread_id)


@pytest.mark.parametrize("kind", ["surrogate", "a dict of them", "NUL"])
def test_on_postgres_a_hostile_tool_result_is_stored_readable(kind: str, thread_id: str) -> None:
    replies = [_react_call("produce", json.dumps({"kind": kind})), "Final Answer: done"]
    run_case(POSTGRES_URL, replies, [produce], ReActText(), thread=thread_id)


# -- a run stopped by its store resumes once the cause is gone ------------------------------


RUNS: list[str] = []


@tool
def count(n: int) -> int:
    """Count one more run and return n squared."""
    RUNS.append(str(n))
    return n * n


STORE_FAULT_REPLIES = [
    'Thought: a\ud800b\nAction: count\nAction Input: {"n": 3}',
    'Thought: wide\nAction: calculator\nAction Input: {"expression": "2**64"}',
    'Action: count\nAction Input: {"n": 99999999999999999999999}',
    'Thought: again\nAction: count\nAction Input: {"n": 4}',
    "Thought: done\nFinal Answer: 9, 16 and \ud800",
]


def _failing_once(put: Callable[..., Any], at: int, error: Exception) -> Callable[..., Any]:
    """`put`, raising `error` at its `at`-th call (and only then): a store fault that passes."""
    calls = 0

    def put_or_fail(self: Any, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == at:
            raise error
        return put(self, *args)

    return put_or_fail


@pytest.mark.parametrize("at", [3, 7, 12])
def test_a_run_stopped_by_a_store_error_resumes_to_the_end_once_it_is_gone(
    url: str, monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    from thinkgraph.storage.sqlite import CompactSqliteSaver

    RUNS.clear()
    tools: list[Tool] = [count, calculator]
    fault = sqlite3.OperationalError("disk I/O error")
    monkeypatch.setattr(CompactSqliteSaver, "put", _failing_once(CompactSqliteSaver.put, at, fault))
    agent = Agent(ScriptedModel(STORE_FAULT_REPLIES), tools, store=url)
    with agent, pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        agent.run("count", thread_id="T")
    monkeypatch.undo()  # the cause is gone

    with Agent(ScriptedModel(STORE_FAULT_REPLIES), tools, store=url) as agent:
        result = agent.resume("T")
    assert (result.status, result.answer) == ("done", "9, 16 and \ufffd")
    chain = check_readable(url, "T", tools, ReActText())
    assert RUNS.count("3") <= 2 and RUNS.count("4") == 1  # a tool re-runs only in flight
    assert [s.call.args for s in chain if s.type == "tool_call"] == [
        {"n": 3},
        {"expression": "2**64"},
        {"n": 4},
    ]
    TALLY.add("final_answer: stopped by a store error, resumed to the end")


def test_on_postgres_a_run_stopped_by_a_store_error_resumes_to_the_end(
    monkeypatch: pytest.MonkeyPatch, thread_id: str
) -> None:
    import psycopg

    from thinkgraph.storage.postgres import PostgresStore

    RUNS.clear()
    tools: list[Tool] = [count, calculator]
    fault = psycopg.OperationalError("the server closed the connection")
    monkeypatch.setattr(PostgresStore, "put", _failing_once(PostgresStore.put, 7, fault))
    agent = Agent(ScriptedModel(STORE_FAULT_REPLIES), tools, store=POSTGRES_URL)
    with agent, pytest.raises(psycopg.OperationalError, match="server closed"):
        agent.run("count", thread_id=thread_id)
    monkeypatch.undo()
    with Agent(ScriptedModel(STORE_FAULT_REPLIES), tools, store=POSTGRES_URL) as agent:
        result = agent.resume(thread_id)
    assert (result.status, result.answer) == ("done", "9, 16 and \ufffd")
    check_readable(POSTGRES_URL, thread_id, tools, ReActText())
    TALLY.add("final_answer: stopped by a store error, resumed to the end")
