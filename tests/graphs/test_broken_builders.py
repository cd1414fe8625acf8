"""A graph builder that cannot build a graph is one line, before anything runs.

A builder is called with one argument, the agent's `Deps`, and returns an uncompiled
`StateGraph`. One that raises, takes other arguments, is not a Python function (a builtin
such as ``os.system``, which is never called) or returns anything but a `StateGraph` is
refused by ``Agent(build_graph=...)`` and ``Agent(graph="module:function")`` with a
one-line `GraphConfigError` naming the builder, and nothing is stored.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from thinkgraph import Agent, ScriptedModel
from thinkgraph.errors import GraphConfigError
from thinkgraph.graphs import build_react_graph
from thinkgraph.nodes.deps import Deps

CALLED: list[Any] = []
"""What each builtin given as a builder was called with (nothing, when it is refused)."""


def raises(deps: Deps) -> Any:
    raise RuntimeError("no graph today\nsecond line")


def takes_none() -> Any:
    CALLED.append("takes_none")
    return None


def takes_two(deps: Deps, extra: int) -> Any:
    CALLED.append("takes_two")
    return None


def returns_none(deps: Deps) -> None:
    return None


def returns_int(deps: Deps) -> int:
    return 42


def returns_compiled(deps: Deps) -> Any:
    return build_react_graph(deps).compile()


async def is_async(deps: Deps) -> Any:
    return build_react_graph(deps)


class Builder:
    """A callable object is a builder as a function is."""

    def __call__(self, deps: Deps) -> Any:
        return build_react_graph(deps)


def _refused(build: Any, *, graph: str | None = None) -> str:
    with pytest.raises(GraphConfigError) as refused:
        if graph is not None:
            Agent(ScriptedModel([]), store="memory://", graph=graph)
        else:
            Agent(ScriptedModel([]), store="memory://", build_graph=build)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_builder_that_raises_is_one_line_naming_it_and_the_error() -> None:
    message = _refused(raises)
    assert "raises" in message and "RuntimeError: no graph today" in message
    assert "second line" not in message


def test_a_builder_that_takes_other_arguments_is_refused_before_it_is_called() -> None:
    CALLED.clear()
    assert "takes ()" in _refused(takes_none)
    assert "takes (deps: 'Deps', extra: 'int')" in _refused(takes_two)
    assert CALLED == []


def test_a_builtin_is_refused_without_being_called(tmp_path: Path) -> None:
    message = _refused(None, graph="os:system")
    assert "'os:system'" in message and "not a Python function" in message
    printed = _refused(print)
    assert "not a Python function" in printed


def test_a_builtin_given_as_a_builder_is_never_called(capsys: pytest.CaptureFixture[str]) -> None:
    _refused(None, graph="builtins:print")
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (returns_none, "None"),
        (returns_int, "an int"),
        (returns_compiled, "a CompiledStateGraph"),
        (is_async, "a coroutine"),
    ],
)
def test_a_builder_that_returns_no_graph_says_what_it_returned(build: Any, named: str) -> None:
    message = _refused(build)
    assert f"returned {named}" in message and "uncompiled StateGraph" in message
    assert build.__name__ in message


def test_a_callable_object_a_partial_and_a_wrapped_function_are_builders() -> None:
    for build in (
        Builder(),
        functools.partial(lambda deps, note: build_react_graph(deps), note="x"),
        functools.lru_cache(maxsize=None)(lambda deps: build_react_graph(deps)),
    ):
        agent = Agent(ScriptedModel(["Thought: x\nFinal Answer: 1"]), store="memory://",
                      build_graph=build)  # fmt: skip
        assert agent.run("go").answer == "1"


def test_a_graph_file_whose_builder_raises_stores_nothing(tmp_path: Path) -> None:
    (tmp_path / "graphs.py").write_text("def build(deps):\n    raise KeyError('oops')\n")
    store = tmp_path / "runs.db"
    with pytest.raises(GraphConfigError, match=r"KeyError: 'oops'"):
        Agent(ScriptedModel([]), store=f"sqlite:///{store}", graph=f"{tmp_path}/graphs.py:build")
    assert not store.exists()
