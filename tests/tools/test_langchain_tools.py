"""LangChain tools come in as they are: `Agent(tools=...)`, `--tools`, or `from_langchain`.

Their own name, description and argument schema; calls go through `ainvoke`; every
failure (ToolException, bad arguments, any exception) is an observation the model sees.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tools import tool as lc_tool
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.hitl import Approve
from thinkgraph.state import ToolCall, ToolResultStep
from thinkgraph.tools import Tool, ToolContext, ToolRegistry, aexecute_call, from_langchain
from thinkgraph.tools.langchain import LangChainTool

# -- the LangChain tools under test (also what `--tools tests.tools.test_langchain_tools:…` names)


def _add(a: int, b: int) -> int:
    return a + b


lc_add = StructuredTool.from_function(func=_add, name="lc_add", description="Add two integers.")


@lc_tool
def shout(text: str) -> str:
    """Say the text louder."""
    return text.upper()


class _LookupArgs(BaseModel):
    key: str = Field(description="what to look up")


class Lookup(BaseTool):
    """A BaseTool subclass with its own `_arun`."""

    name: str = "lookup"
    description: str = "Look a key up."
    args_schema: type[BaseModel] = _LookupArgs

    def _run(self, key: str) -> str:
        raise AssertionError("the async path must be used")

    async def _arun(self, key: str) -> str:
        return f"async value of {key}"


@lc_tool
def broken(x: int) -> str:
    """Always fails."""
    raise ToolException("the backend is down, try later")


@lc_tool(response_format="content_and_artifact")
def fetch(url: str) -> tuple[str, dict[str, Any]]:
    """Fetch a page."""
    return f"page at {url}", {"raw": "<html>…</html>"}


@lc_tool(return_direct=True)
def stop(reason: str) -> str:
    """Stop here."""
    return f"stopped: {reason}"


greet = StructuredTool.from_function(
    func=lambda name, times=1: " ".join([f"hi {name}"] * times),
    name="greet",
    description="Greet someone.",
    args_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "times": {"type": "integer", "minimum": 1, "default": 1},
        },
        "required": ["name"],
    },
)


def _call(tool: Tool, args: dict[str, Any]) -> ToolResultStep:
    call = ToolCall(id="c1", name=tool.name, args=args)
    ctx = ToolContext.for_call("t", 1, "c1")
    return asyncio.run(aexecute_call(ToolRegistry([tool]), call, ctx))


# -- the adapter ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lc", "args", "output"),
    [
        (lc_add, {"a": 2, "b": 40}, 42),
        (shout, {"text": "hi"}, "HI"),
        (Lookup(), {"key": "k"}, "async value of k"),
        (greet, {"name": "ann", "times": 2}, "hi ann hi ann"),
        (fetch, {"url": "u"}, "page at u"),
        (stop, {"reason": "done"}, "stopped: done"),
    ],
    ids=["structured", "decorated", "subclass", "dict-schema", "artifact", "return-direct"],
)
def test_a_langchain_tool_runs_with_its_own_name_and_schema(
    lc: BaseTool, args: dict[str, Any], output: Any
) -> None:
    adapted = from_langchain(lc)
    assert isinstance(adapted, Tool) and adapted.name == lc.name
    assert adapted.description == lc.description
    assert set(adapted.json_schema()["properties"]) == set(args)
    result = _call(adapted, args)
    assert (result.ok, result.output) == (True, output), result.error


def test_the_schema_shown_to_the_model_is_the_tools_own() -> None:
    assert from_langchain(Lookup()).json_schema()["properties"] == {
        "key": {"type": "string", "description": "what to look up"}
    }
    schema = from_langchain(greet).json_schema()
    assert schema["required"] == ["name"]
    assert schema["properties"]["times"] == {"type": "integer", "minimum": 1, "default": 1}


def test_a_tool_exception_is_a_failed_result_with_its_message() -> None:
    result = _call(from_langchain(broken), {"x": 1})
    assert not result.ok and result.error_kind == "exception"
    assert result.error is not None and "the backend is down, try later" in result.error


@pytest.mark.parametrize(
    ("lc", "args", "field"),
    [
        (lc_add, {"a": "two", "b": 1}, "a"),
        (greet, {"name": "ann", "times": 0}, "times"),
        (greet, {}, "name"),
        (Lookup(), {"key": 3}, "key"),
    ],
    ids=["pydantic", "dict-minimum", "dict-missing", "subclass"],
)
def test_a_bad_argument_is_an_observation_naming_the_field(
    lc: BaseTool, args: dict[str, Any], field: str
) -> None:
    result = _call(from_langchain(lc), args)
    assert not result.ok and result.error_kind == "invalid_args", result
    assert result.error is not None and f"- {field}:" in result.error


def test_our_options_are_set_in_one_call() -> None:
    adapted = from_langchain(
        lc_add,
        requires_approval=lambda args: args["a"] > 10,
        side_effects=True,
        timeout_s=10,
        retries=1,
        visibility="summary",
        summary_template="added {a} and {b}",
        sensitive=["b"],
    )
    assert isinstance(adapted, LangChainTool) and adapted.lc_tool is lc_add
    assert (adapted.side_effects, adapted.timeout_s, adapted.retries) == (True, 10, 1)
    assert (adapted.visibility, adapted.summary_template) == ("summary", "added {a} and {b}")
    assert adapted.sensitive == frozenset({"b"})
    assert adapted.needs_approval({"a": 11, "b": 1}) and not adapted.needs_approval(
        {"a": 1, "b": 1}
    )
    cached = from_langchain(shout, cache_ttl_s=60)
    assert cached.cache_ttl_s == 60


def test_a_langchain_tool_sync_path_runs_too() -> None:
    from thinkgraph.tools import execute_call

    registry = ToolRegistry([from_langchain(Lookup())])
    call = ToolCall(id="c1", name="lookup", args={"key": "k"})
    result = execute_call(registry, call, ToolContext.for_call("t", 1, "c1"))
    assert (result.ok, result.output) == (True, "async value of k")


# -- in an agent run ------------------------------------------------------------------------


def _act(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def _final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def test_an_agent_calls_bare_langchain_tools(sqlite_url: str) -> None:
    script = [_act("lc_add", a=2, b=40), _act("lookup", key="k"), _act("broken", x=1),
              _act("shout", txt="x"), _final("42")]  # fmt: skip
    agent = Agent(ScriptedModel(script), [lc_add, shout, Lookup(), broken], store=sqlite_url)
    with agent:
        result = agent.run("go", thread_id="lc")
    assert (result.status, result.answer) == ("done", "42")
    results = [s for s in result.chain if isinstance(s, ToolResultStep)]
    assert [(r.tool, r.ok) for r in results] == [
        ("lc_add", True), ("lookup", True), ("broken", False), ("shout", False)
    ]  # fmt: skip
    assert results[0].output == 42 and results[1].output == "async value of k"
    assert results[2].error is not None and "backend is down" in results[2].error
    assert results[3].error is not None and "- text: missing" in results[3].error


def test_requires_approval_set_by_from_langchain_pauses_the_run(sqlite_url: str) -> None:
    guarded = from_langchain(lc_add, requires_approval=True, side_effects=True)
    agent = Agent(
        ScriptedModel([_act("lc_add", a=1, b=2), _final("3")]), [guarded], store=sqlite_url
    )
    with agent:
        paused = agent.run("add", thread_id="ap")
        (request,) = paused.pending
        assert (paused.status, request.kind, request.args) == (
            "paused",
            "approval",
            {"a": 1, "b": 2},
        )
        assert request.call_id is not None
        done = agent.resume("ap", decisions={request.call_id: Approve()})
    assert (done.status, done.answer) == ("done", "3")
    outputs = [s.output for s in done.chain if isinstance(s, ToolResultStep)]
    assert outputs == [3]


# -- on the command line --------------------------------------------------------------------


@pytest.mark.parametrize("attr", ["lc_add", "lc_tools"])
def test_tools_option_takes_a_langchain_tool(attr: str, tmp_path: Path, sqlite_url: str) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([_act("lc_add", a=2, b=40), _final("42")]))
    spec = f"tests.tools.test_langchain_tools:{attr}"
    result = CliRunner().invoke(
        app, ["run", "2 + 40?", "--script", str(script), "--tools", spec, "--store", sqlite_url]
    )
    assert result.exit_code == 0, result.output
    assert 'lc_add({"a": 2, "b": 40})' in result.output and "answer: 42" in result.output


lc_tools = [lc_add, shout]
"""A list of LangChain tools, as `--tools module:attr` takes them."""
