"""The tools of MCP servers, through `langchain-mcp-adapters`: `thinkgraph.tools.mcp_tools`.

Driven against a real MCP server (tests/support/mcp_server.py, written with the `mcp`
SDK) over stdio and streamable HTTP. A server that cannot start is one clear error within
the start-up timeout; one that dies mid-run turns each call into an observation.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from thinkgraph import Agent, ScriptedModel
from thinkgraph.state import ToolResultStep
from thinkgraph.tools import mcp_tools
from thinkgraph.tools.mcp import MCPServerError, MCPTool

SERVER_PY = Path(__file__).parents[1] / "support" / "mcp_server.py"
SERVER = f"{shlex.quote(sys.executable)} {shlex.quote(str(SERVER_PY))}"

pytestmark = pytest.mark.timeout(60)


def _act(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def _final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def _results(chain: list[object]) -> list[ToolResultStep]:
    return [s for s in chain if isinstance(s, ToolResultStep)]


def test_an_agent_calls_the_tools_of_a_stdio_server(sqlite_url: str) -> None:
    script = [_act("add", a=2, b=40), _act("fail", reason="no luck"), _final("42")]
    with mcp_tools(SERVER) as tools:
        assert sorted(t.name for t in tools) == ["add", "die", "fail"]
        assert all(isinstance(t, MCPTool) for t in tools)
        add = next(t for t in tools if t.name == "add")
        assert add.description == "Add two integers."
        assert add.json_schema()["required"] == ["a", "b"]
        with Agent(ScriptedModel(script), tools, store=sqlite_url) as agent:
            result = agent.run("2 + 40?", thread_id="mcp")
    assert (result.status, result.answer) == ("done", "42")
    added, failed = _results(result.chain)
    assert (added.ok, added.output) == (True, "42"), added.error
    assert (
        not failed.ok and failed.error is not None and "failed on purpose: no luck" in failed.error
    )


def test_per_tool_options_are_set_as_on_from_langchain(sqlite_url: str) -> None:
    options = {"add": {"requires_approval": True, "side_effects": True}}
    with mcp_tools(SERVER, options=options, timeout_s=5.0) as tools:
        by_name = {t.name: t for t in tools}
        assert by_name["add"].needs_approval({}) and by_name["add"].side_effects
        assert not by_name["fail"].needs_approval({})
        assert {t.timeout_s for t in tools} == {5.0}
        agent = Agent(ScriptedModel([_act("add", a=1, b=2), _final("3")]), tools, store=sqlite_url)
        with agent:
            result = agent.run("1 + 2?", thread_id="ask")
    assert result.status == "paused" and [p.kind for p in result.pending] == ["approval"]


def test_options_for_a_tool_the_servers_do_not_have_are_refused() -> None:
    with (
        pytest.raises(MCPServerError, match=r"no tool 'ad'.*add, die, fail"),
        mcp_tools(SERVER, options={"ad": {"requires_approval": True}}),
    ):
        pass


def test_a_server_that_dies_mid_run_is_an_observation_not_a_hang(sqlite_url: str) -> None:
    script = [_act("die"), _act("add", a=1, b=2), _final("gone")]
    started = time.monotonic()
    with mcp_tools(SERVER) as tools, Agent(ScriptedModel(script), tools, store=sqlite_url) as agent:
        result = agent.run("die", thread_id="dies")
    assert time.monotonic() - started < 20
    assert (result.status, result.answer) == ("done", "gone")
    died, after = _results(result.chain)
    for step in (died, after):
        assert not step.ok and step.error is not None
        assert "the MCP server" in step.error and "is gone" in step.error, step.error


def test_the_async_context_manager_keeps_the_session_for_the_agent_s_life(
    sqlite_url: str,
) -> None:
    async def main() -> tuple[str, list[object]]:
        script = [_act("add", a=1, b=2), _act("add", a=3, b=4), _final("done")]
        async with mcp_tools(SERVER) as tools:
            agent = Agent(ScriptedModel(script), tools, store=sqlite_url)
            try:
                result = await agent.arun("adds", thread_id="async")
            finally:
                agent.close()
        return result.status, [r.output for r in _results(result.chain)]

    assert asyncio.run(main()) == ("done", ["3", "7"])


@pytest.mark.parametrize(
    "command",
    [
        "no-such-mcp-server-command --flag",
        f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(1)'",
    ],
    ids=["missing", "exits"],
)
def test_a_server_that_cannot_start_is_one_clear_error(command: str) -> None:
    started = time.monotonic()
    with pytest.raises(MCPServerError, match=r"MCP server .* did not start"), mcp_tools(command):
        pass
    assert time.monotonic() - started < 15


def test_a_server_that_never_answers_fails_at_the_start_up_timeout() -> None:
    silent = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"
    started = time.monotonic()
    with (
        pytest.raises(MCPServerError, match="no answer within 1"),
        mcp_tools(silent, startup_timeout_s=1.0),
    ):
        pass
    assert time.monotonic() - started < 10


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER_PY), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the streamable HTTP test server did not listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_an_agent_calls_the_tools_of_a_streamable_http_server(
    http_server: str, sqlite_url: str
) -> None:
    script = [_act("add", a=20, b=22), _final("42")]
    with (
        mcp_tools(http_server) as tools,
        Agent(ScriptedModel(script), tools, store=sqlite_url) as agent,
    ):
        result = agent.run("20 + 22?", thread_id="http")
    assert result.status == "done"
    assert [(r.ok, r.output) for r in _results(result.chain)] == [(True, "42")]


def test_importing_thinkgraph_does_not_import_mcp() -> None:
    code = (
        "import sys, thinkgraph, thinkgraph.tools, thinkgraph.cli; "
        "assert not [m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'langchain_mcp_adapters')], 'mcp imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_without_the_extra_the_error_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_mcp_adapters", None)
    monkeypatch.setitem(sys.modules, "langchain_mcp_adapters.sessions", None)
    with pytest.raises(MCPServerError, match=r"pip install 'thinkgraph\[mcp\]'"), mcp_tools(SERVER):
        pass
