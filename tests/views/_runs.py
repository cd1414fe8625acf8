"""Real runs for the view tests, with ids, clocks and durations pinned so views compare exactly.

`login_run()` runs a real `Agent` (ScriptedModel, memory store) through four tools, one per
visibility case, with secrets in the arguments, in a result and in the task:

- `login`: full visibility; `password` argument and `session` result key are sensitive;
- `search`: visibility "summary" with the template "searched for {query}";
- `audit_log`: visibility "hidden";
- `add`: a plain tool (full visibility, nothing sensitive).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import TypeAdapter

from thinkgraph import Agent, RunResult, ScriptedModel, tool
from thinkgraph.state import LLMCallStep, Step, ToolCallStep, ToolResultStep
from thinkgraph.tools.base import Tool

__all__ = ["PASSWORD", "SESSION", "SK_KEY", "TOOLS", "expect", "login_run", "pin"]

PASSWORD = "hunter2-correct-horse"
SESSION = "sess-9f8e7d6c5b4a"
SK_KEY = "sk-proj-AbCdEfGhIjKlMnOpQrSt"
T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
EXPECTED = Path(__file__).parent / "expected"


@tool(sensitive={"password", "session"})
def login(user: str, password: str) -> dict[str, str]:
    """Log a user in and open a session."""
    return {"user": user, "session": SESSION}


@tool(kind="external", visibility="summary", summary_template="searched for {query}")
def search(query: str) -> list[str]:
    """Search the web."""
    return [f"{query} are great", f"{query}: a guide"]


@tool(visibility="hidden")
def audit_log(event: str) -> str:
    """Record an audit event."""
    return "logged"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS: list[Tool] = [login, search, audit_log, add]


def _call(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def login_run() -> RunResult:
    """A finished run through every tool, pinned (see `pin`)."""
    model = ScriptedModel(
        [
            _call("login", user="ann", password=PASSWORD),
            _call("search", query="cats"),
            _call("audit_log", event="searched"),
            _call("add", a=2, b=40),
            "Thought: done\nFinal Answer: 42",
        ]
    )
    with Agent(model, TOOLS, store="memory://") as agent:
        result = agent.run(f"Log in as ann (key {SK_KEY}), search cats, add 2 + 40", "t-views")
    return pin(result)


def pin(result: RunResult) -> RunResult:
    """The same run with step ids, call ids, clocks and durations made deterministic."""
    adapter: TypeAdapter[list[Step]] = TypeAdapter(list[Step])
    raw = adapter.dump_json(result.chain).decode()  # type: ignore[arg-type]
    calls = [s.call.id for s in result.chain if isinstance(s, ToolCallStep)]
    for i, call_id in enumerate(calls, start=1):
        raw = raw.replace(call_id, f"call{i}")
    for step in result.chain:
        raw = raw.replace(step.id, f"step{step.number}")
    chain = []
    for step in adapter.validate_json(raw):
        update: dict[str, object] = {"at": T0 + timedelta(milliseconds=250 * step.number)}
        if isinstance(step, LLMCallStep):
            update["latency_s"] = 0.125
        if isinstance(step, ToolResultStep):
            update["duration_s"] = 0.002
        chain.append(step.model_copy(update=update))
    counters = result.counters.model_copy(update={"elapsed_s": 0.75})
    return result.model_copy(update={"chain": chain, "counters": counters})


def expect(name: str, actual: str) -> None:
    """`actual` equals tests/views/expected/`name`; UPDATE_EXPECTED=1 rewrites the file."""
    path = EXPECTED / name
    if os.environ.get("UPDATE_EXPECTED"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs; see {path}"
