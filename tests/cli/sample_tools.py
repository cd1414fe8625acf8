"""Tools for the CLI tests: `--tools tests.cli.sample_tools:send_email` from the repo root."""

from __future__ import annotations

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
