"""The floor: the same replies parsed, the tool called, results appended; nothing stored."""

from __future__ import annotations

import gc
import json
import re
import time
from collections.abc import Callable
from typing import Any

from bench.samples import RunSample
from bench.workload import add, final_answer, react_replies

__all__ = ["run"]

SYSTEM = "bare"
_ACTION = re.compile(r"Action:\s*(\w+)\s*\nAction Input:\s*(\{.*\})", re.DOTALL)
_FINAL = re.compile(r"Final Answer:\s*(.*)", re.DOTALL)
_TOOLS: dict[str, Callable[..., Any]] = {"add": add}


def run(cycles: int) -> RunSample:
    """Time a plain `for` loop over the same N + 1 scripted replies."""
    replies = react_replies(cycles)
    gc.collect()
    started = time.perf_counter()
    answer = _loop(replies)
    seconds = time.perf_counter() - started
    if answer != final_answer(cycles):
        raise RuntimeError(f"the bare loop answered {answer!r}")
    return RunSample(system=SYSTEM, cycles=cycles, seconds=seconds)


def _loop(replies: list[str]) -> str:
    """Model reply -> parse -> tool call -> append, until a final answer."""
    history: list[dict[str, Any]] = []
    for reply in replies:
        final = _FINAL.search(reply)
        if final is not None:
            history.append({"reply": reply, "answer": final.group(1).strip()})
            return final.group(1).strip()
        action = _ACTION.search(reply)
        if action is None:
            raise ValueError(f"unparsable reply {reply!r}")
        name, args = action.group(1), json.loads(action.group(2))
        history.append({"reply": reply, "tool": name, "args": args, "output": _TOOLS[name](**args)})
    raise ValueError("the replies ended without a final answer")
