"""A tool's result is made JSON within the tool's time and size bounds.

What a tool returns is converted to what a run can store where the tool runs: in its
worker thread, under its deadline. An iterator is read to its end only within the bounds
of a result (`MAX_RESULT_VALUES` values, `MAX_RESULT_CHARS` characters) and the tool's
time: one that does not end (``itertools.count()``) is a failed call with a clear
observation, never an out-of-memory kill. A list, a text or an object too large is cut with
a note saying so; one nested too deep is cut where it gets too deep.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from tests.tools.conftest import Runner
from thinkgraph.state import ToolCall
from thinkgraph.tools import ToolRegistry, tool
from thinkgraph.tools.result_json import MAX_RESULT_CHARS, MAX_RESULT_VALUES, to_json
from thinkgraph.values import MAX_DEPTH

ROOT = Path(__file__).resolve().parents[2]


def _call(name: str) -> ToolCall:
    return ToolCall(name=name, args={}, id="call-1")


@tool(timeout_s=20, retries=2)
def counter() -> Any:
    """Count for ever."""
    return itertools.count()


@tool(timeout_s=20)
async def async_counter() -> Any:
    """Count for ever, from async code."""
    return itertools.count()


@tool(timeout_s=1)
def trickle() -> Any:
    """A generator that never ends, yielding slowly."""

    def forever() -> Iterator[int]:
        while True:
            time.sleep(0.001)
            yield 1

    return forever()


@tool(timeout_s=20)
def big_words() -> Any:
    """A generator of large texts that never ends."""
    return ("x" * 1_000_000 for _ in itertools.count())


@tool
def few() -> Any:
    """A generator that ends."""
    return (n * n for n in range(5))


@pytest.mark.parametrize("name", ["counter", "async_counter"])
def test_an_endless_iterator_is_a_failed_call_not_an_endless_read(
    name: str, run_call: Runner
) -> None:
    started = time.perf_counter()
    result = run_call(ToolRegistry([counter, async_counter]), _call(name))
    assert time.perf_counter() - started < 15
    assert not result.ok and result.error_kind == "exception"
    assert result.error is not None
    assert f"tool {name!r} returned an iterator that had not ended" in result.error
    assert f"{MAX_RESULT_VALUES:,}" in result.error
    assert result.attempts == 1  # the same tool returns the same endless value: no retry


def test_an_endless_iterator_of_large_texts_is_refused_at_the_size_bound(
    run_call: Runner,
) -> None:
    result = run_call(ToolRegistry([big_words]), _call("big_words"))
    assert not result.ok and result.error is not None
    assert "had not ended" in result.error and f"{MAX_RESULT_CHARS:,}" in result.error


def test_a_slow_endless_generator_stops_at_the_tool_timeout(run_call: Runner) -> None:
    started = time.perf_counter()
    result = run_call(ToolRegistry([trickle]), _call("trickle"))
    assert time.perf_counter() - started < 5
    assert not result.ok and result.error_kind == "timeout"
    assert result.error == "tool 'trickle' did not finish within 1 s"


def test_an_iterator_that_ends_is_kept_as_a_list(run_call: Runner) -> None:
    result = run_call(ToolRegistry([few]), _call("few"))
    assert result.ok and result.output == [0, 1, 4, 9, 16]


def test_a_list_too_long_is_cut_with_a_note() -> None:
    out = to_json(list(range(MAX_RESULT_VALUES + 10)))
    assert len(out) == MAX_RESULT_VALUES + 1
    assert out[-2] == MAX_RESULT_VALUES - 1
    assert out[-1].startswith("… [10 more items not kept")


def test_a_text_too_long_is_cut_with_a_note() -> None:
    out = to_json({"text": "x" * (MAX_RESULT_CHARS + 5)})
    text = out["text"]
    assert text.startswith("x" * 1000) and text.count("x") == MAX_RESULT_CHARS - 4
    assert text.endswith("… [9 more characters not kept: a tool's result keeps at most "
                         f"{MAX_RESULT_CHARS:,} characters]")  # fmt: skip


def test_a_dict_too_large_is_cut_with_a_note() -> None:
    out = to_json({n: n for n in range(MAX_RESULT_VALUES + 5)})
    assert len(out) == MAX_RESULT_VALUES + 1
    assert out[str(MAX_RESULT_VALUES - 1)] == MAX_RESULT_VALUES - 1
    assert out["…"].startswith("[5 more entries not kept")


def test_a_value_nested_too_deep_is_cut_where_it_gets_too_deep() -> None:
    deep: Any = "bottom"
    for _ in range(10_000):
        deep = [deep]
    out = to_json(deep)
    for _ in range(MAX_DEPTH):
        (out,) = out
    assert out == f"… [nested more than {MAX_DEPTH} levels deep: cut here]"


class Point(BaseModel):
    x: int = Field(alias="X")
    rest: Any = None


@dataclasses.dataclass
class Pair:
    left: Any
    right: Any


def test_values_convert_as_they_did_before() -> None:
    given = {
        1: b"ab",
        "when": date(2024, 5, 1),
        "point": Point(X=1, rest=iter([1, 2])),
        "pair": Pair({3}, (4, 5)),
        "nan": float("nan"),
        "thing": range(3),
        "tuple_key": {(1, 2): "x"},
    }
    assert to_json(given) == {
        "1": base64.b64encode(b"ab").decode(),
        "when": "2024-05-01",
        "point": {"X": 1, "rest": [1, 2]},
        "pair": {"left": [3], "right": [4, 5]},
        "nan": None,
        "thing": "range(0, 3)",
        "tuple_key": {"1,2": "x"},
    }


def test_an_endless_iterator_inside_a_model_is_refused_too() -> None:
    with pytest.raises(Exception, match="had not ended"):
        to_json({"point": Point(X=1, rest=itertools.count())})


AGENT_RUN = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (__LIMIT__, __LIMIT__))
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
import itertools

@tool(timeout_s=__TIMEOUT__)
def numbers() -> object:
    \"\"\"All the numbers.\"\"\"
    return __KIND__

replies = ['Thought: count\\nAction: numbers\\nAction Input: {}',
           'Thought: ok\\nFinal Answer: done']
started = time.perf_counter()
with Agent(ScriptedModel(replies), [numbers], store="memory://") as agent:
    result = agent.run("count", thread_id="t")
took = time.perf_counter() - started
seen = [s for s in result.chain if s.type == "observation"]
# This process's own peak (ru_maxrss would count the parent's: it survives exec).
peak = next(int(line.split()[1]) for line in open("/proc/self/status")
            if line.startswith("VmHWM:"))
print(json.dumps({"status": result.status, "seen": seen[0].text, "error": seen[0].is_error,
                  "took": took, "peak_kb": peak}))
"""


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("itertools.count()", "returned an iterator that had not ended"),
        ("(1 for _ in iter(int, 1))", "returned an iterator that had not ended"),
    ],
)
def test_a_run_whose_tool_returns_an_endless_iterator_finishes_in_bounded_memory(
    kind: str, expected: str, tmp_path: Path
) -> None:
    limit = 2 * 1024**3  # far above what the run needs, far below what an endless read eats
    code = AGENT_RUN.replace("__LIMIT__", str(limit)).replace("__TIMEOUT__", "20")
    code = code.replace("__KIND__", kind)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == "done"
    assert report["error"] and expected in report["seen"]
    assert report["took"] < 20
    assert report["peak_kb"] < 1024**2  # KiB: under 1 GiB (about 150 MiB measured)
