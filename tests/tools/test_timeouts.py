"""Every way of making a tool gives it a timeout by default, which the user can change or
turn off; agent_tool alone waits for its sub-agent, whose own limits bound the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from thinkgraph import Agent, ScriptedModel
from thinkgraph.tools import Tool, ToolContext, tool
from thinkgraph.tools.builtin import agent_tool, calculator, files, llm_tool, sql_query


class Shout(Tool):
    name = "shout"
    description = "Say it louder."

    class args_model(BaseModel):
        text: str

    def run(self, args: Any, ctx: ToolContext) -> str:
        return str(args.text).upper()


class SlowShout(Shout):
    timeout_s = 120.0


class Unbounded(Shout):
    timeout_s = None


@tool
def plain(x: int) -> int:
    """Return x."""
    return x


@tool
async def plain_async(x: int) -> int:
    """Return x."""
    return x


@tool(timeout_s=5)
def quick(x: int) -> int:
    """Return x."""
    return x


@tool(timeout_s=None)
def forever(x: int) -> int:
    """Return x."""
    return x


def test_user_tools_get_30_seconds_unless_they_say_otherwise() -> None:
    assert [t.timeout_s for t in (Shout(), plain, plain_async)] == [30.0, 30.0, 30.0]
    assert [t.timeout_s for t in (SlowShout(), quick)] == [120.0, 5]
    assert [t.timeout_s for t in (Unbounded(), forever)] == [None, None]


def test_built_in_tools_have_a_timeout(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    sqlite3.connect(db).close()
    assert calculator.timeout_s == 5.0
    assert sql_query(db).timeout_s == 30.0
    assert {t.name: t.timeout_s for t in files(tmp_path, writable=True)} == {
        "read_file": 30.0,
        "list_files": 30.0,
        "write_file": 30.0,
    }
    assert llm_tool(ScriptedModel(["hi"])).timeout_s == 120.0
    assert llm_tool(ScriptedModel(["hi"]), timeout_s=None).timeout_s is None


def test_agent_tool_waits_for_its_sub_agent_unless_given_a_timeout() -> None:
    # A sub-agent given up on would run on unseen; its StepLimits (and the calling run's
    # timeout_s, which stops any call) bound it instead.
    child = Agent(ScriptedModel(["Final Answer: 1"]), store="memory://")
    assert agent_tool(child, name="ask", description="Ask.").timeout_s is None
    assert agent_tool(child, name="ask", description="Ask.", timeout_s=60).timeout_s == 60
