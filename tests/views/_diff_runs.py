"""Runs to compare, made with `ScriptedModel` on a real SQLite store and read back from it.

Each script starts like the others and changes one thing, so each pair of runs differs in
one known way: the same replies, another argument, another tool, another route (answer at
once instead of calling a tool), another answer, or only other wording.
"""

from __future__ import annotations

from tests.views._runs import PASSWORD, TOOLS, _call
from thinkgraph import Agent, RunResult, ScriptedModel

__all__ = ["OTHER_PASSWORD", "PASSWORD", "SCRIPTS", "TOOLS", "record"]

OTHER_PASSWORD = "swordfish-battery-staple"

_LOGIN = _call("login", user="ann", password=PASSWORD)
_ADD = _call("add", a=2, b=40)
_DONE = "Thought: done\nFinal Answer: 42"

SCRIPTS: dict[str, list[str]] = {
    "base": [_LOGIN, _ADD, _DONE],
    "again": [_LOGIN, _ADD, _DONE],
    "other-args": [_LOGIN, _call("add", a=2, b=41), _DONE],
    "other-password": [_call("login", user="ann", password=OTHER_PASSWORD), _ADD, _DONE],
    "other-tool": [_LOGIN, _call("search", query="42"), _DONE],
    "at-once": ["Thought: I know it\nFinal Answer: 42"],
    "other-answer": [_LOGIN, _ADD, "Thought: done\nFinal Answer: 43"],
    "other-words": [_LOGIN, _ADD, "Thought: all done now\nFinal Answer: 42"],
}
"""The replies of each run, by its thread id."""


def record(url: str, *scripts: str, suffix: str = "") -> list[RunResult]:
    """Run each script into the store under its name (plus `suffix`, for a shared store);
    return the runs as the store has them."""
    for script in scripts:
        with Agent(ScriptedModel(SCRIPTS[script]), TOOLS, store=url) as agent:
            agent.run("log in as ann and add 2 + 40", thread_id=script + suffix)
    with Agent(ScriptedModel([]), store=url) as reader:
        return [reader.result(script + suffix) for script in scripts]
