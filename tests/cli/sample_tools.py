"""Tools for the CLI tests: `--tools tests.cli.sample_tools:send_email` from the repo root."""

from __future__ import annotations

import asyncio
import os

from thinkgraph import tool


@tool(requires_approval=True, side_effects=True)
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool(requires_approval=True)
def post_note(text: str) -> str:
    """Post a note to the team board."""
    return f"posted {text!r}"


both = [send_email, post_note]
"""Both tools, for runs that propose two calls needing approval."""


@tool(sensitive=["pin"])
def unlock(door: str, pin: str) -> str:
    """Unlock a door with its pin."""
    return f"{door} unlocked"


@tool(sensitive=["pin"], requires_approval=True)
def open_safe(safe: str, pin: str) -> str:
    """Open a safe with its pin (a person approves each opening)."""
    return f"the {safe} safe is open"


@tool
async def nap(minutes: int) -> str:
    """Take a nap; the seconds it takes come from $THINKGRAPH_TEST_NAP_S (default 30)."""
    await asyncio.sleep(float(os.environ.get(NAP_S, "30")))
    return f"slept {minutes} minutes"


NAP_S = "THINKGRAPH_TEST_NAP_S"


def add(a: int, b: int) -> int:
    """Add two integers (a plain typed function, not decorated)."""
    return a + b


plain = [add, send_email]
"""A plain function and a Tool together, as `Agent(tools=...)` takes them."""

motto = "not a tool"


class Toolbox:
    """A class, which is not a tool."""
