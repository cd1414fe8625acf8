"""The tools of MCP servers, through `langchain-mcp-adapters`: `mcp_tools` and `MCPTool`.

`mcp_tools(*servers)` starts each server (a stdio command line, split like a shell does,
or a streamable HTTP URL), keeps one session per server open until it is closed, and gives
our `Tool`s for the servers' tools. It is a context manager, sync and async:

    with mcp_tools("python my_server.py", "http://127.0.0.1:8000/mcp") as tools:
        Agent(model, tools).run("...")

Each session lives on its own event loop in a daemon thread, so the tools work from any
loop the agent runs on (the sync API's, a notebook's, a worker's); a call is handed to the
session's loop and awaited, and cancelled there at the tool's deadline.

The protocol is langchain-mcp-adapters' (and the `mcp` SDK's under it): the servers'
tools come back as LangChain tools, which `MCPTool` runs like any `LangChainTool`, with
our per-tool options (`options={"send": {"requires_approval": True}}`, or the same keywords
for every tool). A server that does not start within `startup_timeout_s` is one
`MCPServerError`; a tool error is a failed result; a server that is gone (its process
exited, its connection closed) makes every later call a failed result saying so.

Both packages are imported only when a server is started; `pip install 'thinkgraph[mcp]'`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import shlex
import sys
import threading
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel

from thinkgraph.errors import ConfigError
from thinkgraph.tools.base import ToolContext
from thinkgraph.tools.langchain import LangChainTool

__all__ = ["MCPServerError", "MCPServerGone", "MCPTool", "MCPTools", "mcp_tools"]

_STOP_WAIT_S = 5.0
"""How long closing waits for a session to end (a stdio server is terminated in it)."""

_INSTALL = "pip install 'thinkgraph[mcp]'"


class MCPServerError(ConfigError):
    """An MCP server that cannot be used: it did not start, or the spec is not one."""


class MCPServerGone(ConnectionError):
    """A call to a server whose process exited or whose connection closed."""


class MCPTool(LangChainTool):
    """A tool of an MCP server; its calls go to the server's session, on the session's loop."""

    def __init__(self, lc_tool: BaseTool, server: _Server, **options: Any) -> None:
        super().__init__(lc_tool, **options)
        self.server = server

    async def arun(self, args: BaseModel, ctx: ToolContext) -> Any:
        output = await self.server.call(super().arun(args, ctx))
        return _text(output)

    def __repr__(self) -> str:
        return f"<MCPTool {self.name!r} of {self.server.name!r}>"


class MCPTools:
    """The servers `mcp_tools` starts; entering starts them and gives their tools.

    `open()`/`close()` do the same without a `with`. Closing ends every session and
    stops the stdio servers' processes.
    """

    def __init__(
        self,
        servers: Sequence[str | Mapping[str, Any]],
        *,
        startup_timeout_s: float = 10.0,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self._servers = [_Server(spec, startup_timeout_s) for spec in servers]
        self._options = dict(options or {})
        self._defaults = dict(defaults or {})
        self.tools: list[MCPTool] = []

    def open(self) -> list[MCPTool]:
        """Start every server (blocking, each within its start-up timeout); their tools."""
        try:
            found = [(server, lc) for server in self._servers for lc in server.start()]
            names = sorted({lc.name for _, lc in found})
            for wanted in self._options:
                if wanted not in names:
                    raise MCPServerError(
                        f"options name no tool {wanted!r}; the MCP servers have: "
                        + ", ".join(names)
                    )
            self.tools = [
                MCPTool(lc, server, **{**self._defaults, **self._options.get(lc.name, {})})
                for server, lc in found
            ]
        except BaseException:
            self.close()
            raise
        return self.tools

    def close(self) -> None:
        for server in self._servers:
            server.stop()

    def __enter__(self) -> list[MCPTool]:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> list[MCPTool]:
        return await asyncio.to_thread(self.open)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)


def mcp_tools(
    *servers: str | Mapping[str, Any],
    startup_timeout_s: float = 10.0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    **defaults: Any,
) -> MCPTools:
    """The tools of MCP servers, for as long as the returned context manager is open.

    Args:
        servers: each a stdio command line ("python my_server.py", split with shlex), an
            http(s) URL of a streamable HTTP server, or a langchain-mcp-adapters connection
            dict as it is (`{"transport": "stdio", "command": ..., "args": [...], "env": ...}`).
        startup_timeout_s: how long a server has to start and list its tools.
        options: per tool name, the keywords of `from_langchain` (requires_approval,
            side_effects, timeout_s, sensitive, …).
        defaults: the same keywords, for every tool (a tool's `options` win).

    Example:
        >>> async def main():  # doctest: +SKIP
        ...     async with mcp_tools("python my_server.py", options={"send": {
        ...         "requires_approval": True}}) as tools:
        ...         return await Agent(model, tools).arun("...")

    Raises (on entering):
        MCPServerError: a server did not start in time, or the extra is not installed.
        ToolDefinitionError: a server's tool cannot be described to a model.
    """
    return MCPTools(
        servers, startup_timeout_s=startup_timeout_s, options=options, defaults=defaults
    )


# -- one server -----------------------------------------------------------------------------


class _Server:
    """One server's session, on an event loop of its own in a daemon thread."""

    def __init__(self, spec: str | Mapping[str, Any], startup_timeout_s: float) -> None:
        self.name = _name(spec)
        self.connection = _connection(spec)
        self.startup_timeout_s = startup_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._serving: concurrent.futures.Future[None] | None = None
        self._ready: concurrent.futures.Future[list[BaseTool]] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._gone: str | None = None

    def start(self) -> list[BaseTool]:
        try:
            _import_stdio_client()
            from langchain_mcp_adapters.sessions import create_session
            from langchain_mcp_adapters.tools import load_mcp_tools
        except ImportError as exc:
            raise MCPServerError(
                f"MCP servers need langchain-mcp-adapters and mcp ({exc}); {_INSTALL}"
            ) from None
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="thinkgraph-mcp", daemon=True)
        self._thread.start()
        self._serving = asyncio.run_coroutine_threadsafe(
            self._serve(create_session, load_mcp_tools), loop
        )
        try:
            return self._ready.result(timeout=self.startup_timeout_s)
        except concurrent.futures.TimeoutError:
            raise MCPServerError(
                f"the MCP server {self.name!r} did not start: no answer within "
                f"{self.startup_timeout_s:g}s"
            ) from None
        except Exception as exc:
            raise MCPServerError(
                f"the MCP server {self.name!r} did not start: {_reason(exc)}"
            ) from None

    async def _serve(self, create_session: Any, load_mcp_tools: Any) -> None:
        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                session = await stack.enter_async_context(create_session(self.connection))
                await session.initialize()
                tools = await load_mcp_tools(
                    session, server_name=self.name, handle_tool_errors=False
                )
                self._ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(
                    exc if isinstance(exc, Exception) else RuntimeError("cancelled")
                )
            self._gone = self._gone or _reason(exc) if isinstance(exc, Exception) else "closed"
            raise
        finally:
            self._gone = self._gone or "its session ended"

    async def call(self, work: Any) -> Any:
        """Await `work` (a coroutine that uses the session) on the session's loop."""
        loop = self._loop
        if self._gone is not None or loop is None or loop.is_closed():
            work.close()
            raise MCPServerGone(f"the MCP server {self.name!r} is gone: {self._gone or 'closed'}")
        future = asyncio.run_coroutine_threadsafe(work, loop)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            if self._gone is None and not _closed(exc):
                raise
            self._gone = self._gone or _reason(exc)
            raise MCPServerGone(f"the MCP server {self.name!r} is gone: {_reason(exc)}") from exc

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._gone = self._gone or "closed"
        if self._serving is not None and not self._serving.done():
            stop = self._stop
            if stop is not None:
                loop.call_soon_threadsafe(stop.set)
            try:
                self._serving.result(timeout=_STOP_WAIT_S)
            except BaseException:  # a session that ended badly or not in time: cancel it
                self._serving.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_STOP_WAIT_S)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None


def _import_stdio_client() -> None:
    """Import the SDK's stdio client with the process's own stderr in place.

    Its `errlog` default (where a stdio server's stderr goes) is bound when the module is
    first imported; imported while something had replaced `sys.stderr` (a CLI test
    runner, a captured block), every later server would get a stream with no file
    descriptor and fail to start.
    """
    if "mcp.client.stdio" in sys.modules:
        return
    current = sys.stderr
    sys.stderr = sys.__stderr__ or current
    try:
        import mcp.client.stdio  # noqa: F401
    finally:
        sys.stderr = current


def _closed(exc: BaseException) -> bool:
    """Whether an exception says the session's connection is closed."""
    import anyio
    from mcp.shared.exceptions import McpError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, McpError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | EOFError)


def _reason(exc: BaseException) -> str:
    """The first real exception in a (nested) exception group, as one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _name(spec: str | Mapping[str, Any]) -> str:
    if isinstance(spec, str):
        return spec
    return str(spec.get("url") or " ".join([spec.get("command", "?"), *spec.get("args", [])]))


def _connection(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    """The langchain-mcp-adapters connection a spec stands for."""
    if isinstance(spec, Mapping):
        return dict(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise MCPServerError(
            f"MCP server {spec!r}: give a command line ('python my_server.py') or an "
            "http(s) URL ('http://127.0.0.1:8000/mcp')"
        )
    if spec.startswith(("http://", "https://")):
        return {"transport": "streamable_http", "url": spec}
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise MCPServerError(
            f"MCP server {spec!r}: cannot split the command line ({exc})"
        ) from None
    return {"transport": "stdio", "command": argv[0], "args": argv[1:]}


def _text(output: Any) -> Any:
    """MCP content as the model reads it: text blocks joined, anything else as it is."""
    if (
        isinstance(output, list)
        and output
        and all(isinstance(b, dict) and b.get("type") == "text" for b in output)
    ):
        return "\n".join(str(b.get("text", "")) for b in output)
    return output
