"""ToolRegistry: the tools of an agent by name."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools import Tool, ToolRegistry, tool
from thinkgraph.tools.builtin import calculator


@tool
def echo(text: str) -> str:
    """Repeat the text."""
    return text


def test_registry_looks_tools_up_by_name_in_the_order_given() -> None:
    registry = ToolRegistry([echo, calculator])
    assert registry.names == ["echo", "calculator"]
    assert registry.get("echo") is echo
    assert registry.get("nope") is None
    assert list(registry) == [echo, calculator]
    assert len(registry) == 2
    assert "calculator" in registry and "nope" not in registry
    assert echo in registry


def test_duplicate_names_are_rejected_naming_both_tools() -> None:
    @tool(name="echo")
    def echo_again(text: str) -> str:
        """Repeat the text once more."""
        return text

    with pytest.raises(ToolDefinitionError) as err:
        ToolRegistry([echo, echo_again])
    message = str(err.value)
    assert "two tools are named 'echo'" in message
    assert "test_registry.echo" in message and "echo_again" in message
    assert "@tool(name='echo_2')" in message


def test_the_same_tool_listed_twice_is_kept_once() -> None:
    assert ToolRegistry([echo, echo]).names == ["echo"]


def test_something_that_is_not_a_tool_is_rejected_with_the_fix() -> None:
    def plain(x: int) -> int:
        return x

    with pytest.raises(ToolDefinitionError, match="decorate the function with @tool"):
        ToolRegistry([plain])  # type: ignore[list-item]


def test_a_badly_defined_subclass_fails_when_registered() -> None:
    class Bad(Tool):
        name = "has space"
        description = "Bad name."
        args_model = BaseModel

    with pytest.raises(ToolDefinitionError, match="is not allowed"):
        ToolRegistry([Bad()])


def test_base_model_itself_is_not_an_arguments_model() -> None:
    class Lazy(Tool):
        name = "lazy"
        description = "No arguments model of its own."
        args_model = BaseModel

    with pytest.raises(ToolDefinitionError, match=r"class Args\(BaseModel\)"):
        ToolRegistry([Lazy()])


@pytest.mark.parametrize("tools", [ToolRegistry([echo]), {"echo": echo}], ids=["registry", "dict"])
def test_an_edit_is_checked_against_anything_that_finds_a_tool_by_name(tools: object) -> None:
    from thinkgraph.errors import ResumeValueError
    from thinkgraph.hitl import ToolArgs, check_edited_args

    assert isinstance(tools, ToolRegistry | dict)
    lookup: ToolArgs = tools
    check_edited_args("c1", "echo", {"text": "hi"}, lookup)
    check_edited_args("c1", "unknown", {"anything": 1}, lookup)  # act reports unknown tools
    with pytest.raises(ResumeValueError, match=r"call 'c1' \(echo\) are invalid: text"):
        check_edited_args("c1", "echo", {"text": ["not", "text"]}, lookup)


def test_the_approval_decisions_import_no_tool_module() -> None:
    import subprocess
    import sys

    code = "import sys, thinkgraph.hitl\nprint(sorted(m for m in sys.modules if 'thinkgraph' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout.strip()
    assert "thinkgraph.hitl" in loaded and "thinkgraph.tools" not in loaded
