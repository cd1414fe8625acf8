"""A real MCP server for the tests, written with the `mcp` SDK (FastMCP).

    python tests/support/mcp_server.py              # stdio
    python tests/support/mcp_server.py --http PORT  # streamable HTTP on 127.0.0.1:PORT/mcp

Tools: `add` (two integers), `fail` (raises), `die` (the process exits at once, as a
server that crashes mid-run).
"""

from __future__ import annotations

import os
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("thinkgraph-test", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ValueError(f"failed on purpose: {reason}")


@server.tool()
def die() -> str:
    """End the server process at once."""
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[2])
        server.run(transport="streamable-http")
    else:
        server.run()
