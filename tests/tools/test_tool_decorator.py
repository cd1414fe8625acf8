"""The @tool decorator and the Tool base class: how a tool is described to a model."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

import thinkgraph.tools
import thinkgraph.tools.builtin
from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools import FunctionTool, Tool, ToolContext, tool


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number,
            two by default.

    Returns:
        The sum of a and b.
    """
    return a + b


def test_every_public_name_of_the_tool_modules_exists() -> None:
    """Their lists are pinned once, in tests/test_public_names.py."""
    for module in (thinkgraph.tools, thinkgraph.tools.builtin):
        assert module.__all__
        for name in module.__all__:
            assert hasattr(module, name)


def test_function_tools_imported_from_base_name_their_new_home() -> None:
    import thinkgraph.tools as tools
    import thinkgraph.tools.base as base
    import thinkgraph.tools.function as function

    assert tools.tool is function.tool is tool
    assert tools.FunctionTool is function.FunctionTool is FunctionTool
    assert set(base.__all__) >= {"Tool", "ToolContext"}
    for name in ("tool", "FunctionTool"):
        with pytest.raises(AttributeError, match=f"from thinkgraph.tools import {name}"):
            getattr(base, name)


def test_bare_decorator_makes_a_tool_from_name_docstring_and_signature() -> None:
    assert isinstance(add, FunctionTool)
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two integers."
    assert add.returns == "The sum of a and b."
    assert add.args_model.model_validate({"a": 1}).model_dump() == {"a": 1, "b": 2}


def test_default_options_match_the_contract() -> None:
    assert (add.kind, add.requires_approval, add.side_effects) == ("function", False, False)
    assert (add.timeout_s, add.retries, add.retry_backoff_s) == (30.0, 0, 0.5)
    assert add.cache_ttl_s is None


def test_decorator_with_keywords_sets_the_options() -> None:
    @tool(
        name="web-search",
        description="Search the web.",
        requires_approval=True,
        side_effects=True,
        timeout_s=5,
        retries=2,
        kind="external",
    )
    def search(query: str) -> list[str]:
        return [query]

    @tool(cache_ttl_s=60, kind="database")
    def count_rows(table: str) -> int:
        """Count the rows of a table."""
        return len(table)

    assert search.name == "web-search"
    assert search.description == "Search the web."
    assert search.requires_approval is True
    assert search.side_effects is True
    assert (search.timeout_s, search.retries, search.kind) == (5, 2, "external")
    assert search.returns == "list[str]"  # no Returns section: the annotation describes it
    assert (count_rows.cache_ttl_s, count_rows.kind) == (60, "database")


def test_decorated_tool_can_still_be_called_like_the_function() -> None:
    assert add(1, b=5) == 6
    assert add.__wrapped__.__name__ == "add"  # type: ignore[attr-defined]


def test_required_parameters_and_defaults_show_in_the_schema() -> None:
    schema = add.json_schema()
    assert schema["required"] == ["a"]
    assert schema["properties"]["b"]["default"] == 2


def test_docstring_args_describe_parameters_and_stay_out_of_the_description() -> None:
    props = add.json_schema()["properties"]
    assert props["a"]["description"] == "the first number."
    assert props["b"]["description"] == "the second number, two by default."
    assert "Args" not in add.description and "Returns" not in add.description


def test_other_docstring_sections_stay_in_the_description() -> None:
    @tool
    def convert(amount: float) -> float:
        """Convert euros to dollars.

        Example:
            convert(2.0) gives 2.2

        Raises:
            ValueError: on a negative amount.
        """
        return amount * 1.1

    assert convert.description == (
        "Convert euros to dollars.\n\nExample:\n    convert(2.0) gives 2.2"
    )


def test_types_defined_in_the_enclosing_function_are_resolved() -> None:
    # This module uses `from __future__ import annotations`: annotations are strings.
    class Query(BaseModel):
        text: str

    @tool
    def search(query: Query) -> list[str]:
        """Search."""
        return [query.text]

    assert search.args_model.model_validate({"query": {"text": "x"}}).query == Query(text="x")  # type: ignore[attr-defined]


def test_annotated_field_description_wins_over_the_docstring() -> None:
    @tool
    def scale(x: Annotated[float, Field(description="from Field", ge=0)]) -> float:
        """Scale a number.

        Args:
            x: from the docstring.
        """
        return x * 2

    prop = scale.json_schema()["properties"]["x"]
    assert prop == {"description": "from Field", "minimum": 0, "type": "number"}


def test_schema_drops_generated_titles_but_keeps_a_parameter_named_title() -> None:
    class Author(BaseModel):
        name: str

    @tool
    def publish(title: str, author: Author) -> None:
        """Publish a book."""

    schema = publish.json_schema()
    assert "title" not in schema
    assert schema["properties"]["title"] == {"type": "string"}
    assert schema["$defs"]["Author"] == {
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "type": "object",
    }


def test_json_schema_returns_a_fresh_copy_each_time() -> None:
    add.json_schema()["properties"].clear()
    assert set(add.json_schema()["properties"]) == {"a", "b"}


def test_openai_schema_wraps_name_description_and_parameters() -> None:
    assert add.openai_schema() == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": add.json_schema(),
        },
    }


def test_unknown_arguments_are_forbidden_by_the_schema() -> None:
    assert add.json_schema()["additionalProperties"] is False


@pytest.mark.parametrize("annotated", [False, True])
def test_context_parameter_is_left_out_of_the_schema(annotated: bool) -> None:
    if annotated:

        @tool
        def lookup(key: str, context: ToolContext) -> str:
            """Look a key up."""
            return key

    else:

        @tool
        def lookup(key: str, ctx) -> str:  # type: ignore[no-untyped-def]
            """Look a key up."""
            return key

    assert list(lookup.json_schema()["properties"]) == ["key"]
    assert lookup.single_str_param() == "key"


def test_untyped_parameter_is_rejected_with_the_fix() -> None:
    with pytest.raises(ToolDefinitionError) as err:

        @tool
        def f(x, y: int) -> int:  # type: ignore[no-untyped-def]
            """Do it."""
            return y

    assert str(err.value) == (
        "parameter 'x' of tool 'f' has no type annotation; annotate it, e.g. x: int"
    )


@pytest.mark.parametrize("star", ["args", "kwargs"])
def test_star_args_and_kwargs_are_rejected(star: str) -> None:
    def takes_args(*args: int) -> None:
        """Do it."""

    def takes_kwargs(**kwargs: int) -> None:
        """Do it."""

    with pytest.raises(ToolDefinitionError, match="list them explicitly"):
        tool(takes_args if star == "args" else takes_kwargs)


def test_positional_only_parameter_is_rejected() -> None:
    def f(x: int, /) -> int:
        """Do it."""
        return x

    with pytest.raises(ToolDefinitionError, match="positional-only; remove the '/'"):
        tool(f)


@pytest.mark.parametrize("name", ["1abc", "has space", "dots.no", "x" * 65, ""])
def test_name_outside_the_allowed_pattern_is_rejected(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match=r"pass name=\.\.\. to @tool"):
        tool(name=name)(add.fn)


def test_longest_allowed_name_is_accepted() -> None:
    assert tool(name="a" * 64)(add.fn).name == "a" * 64


def test_function_without_docstring_needs_a_description() -> None:
    def bare(x: int) -> int:
        return x

    with pytest.raises(ToolDefinitionError, match="write a docstring or pass description="):
        tool(bare)
    assert tool(description="Echo a number.")(bare).description == "Echo a number."


def test_type_that_has_no_json_schema_is_rejected() -> None:
    class Opaque:
        pass

    def f(thing: Opaque) -> None:
        """Do it."""

    with pytest.raises(ToolDefinitionError, match="JSON-friendly"):
        tool(f)


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        ("def f(text: str) -> str: ...", "text"),
        ("def f(text: str, ctx) -> str: ...", "text"),
        ("def f(n: int) -> int: ...", None),
        ("def f(a: str, b: str) -> str: ...", None),
        ("def f() -> str: ...", None),
        ("def f(text: str | None) -> str: ...", None),
    ],
)
def test_single_str_param_only_for_exactly_one_str_parameter(
    signature: str, expected: str | None
) -> None:
    namespace: dict[str, Any] = {}
    exec(signature, namespace)
    assert tool(description="Do it.")(namespace["f"]).single_str_param() == expected


def test_needs_approval_takes_a_bool_or_a_predicate_and_fails_closed() -> None:
    @tool(requires_approval=lambda args: args["amount"] > 100)
    def pay(amount: int) -> str:
        """Pay an amount."""
        return "paid"

    assert pay.needs_approval({"amount": 500}) is True
    assert pay.needs_approval({"amount": 5}) is False
    assert pay.needs_approval({}) is True  # the predicate raised: ask rather than guess
    assert add.needs_approval({"a": 1}) is False


def test_a_subclassed_tool_is_described_like_a_decorated_one() -> None:
    class Echo(Tool):
        name = "echo"
        description = "Repeat the text."

        class args_model(BaseModel):
            text: str

        def run(self, args: BaseModel, ctx: ToolContext) -> Any:
            return args.text  # type: ignore[attr-defined]

    echo = Echo()
    echo.check_definition()
    assert echo.single_str_param() == "text"
    assert echo.json_schema() == {
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "type": "object",
    }
    assert repr(echo) == "<Echo 'echo'>"


def test_subclass_missing_a_description_fails_its_check_naming_the_fix() -> None:
    class Nameless(Tool):
        name = "nameless"
        args_model = BaseModel

    with pytest.raises(ToolDefinitionError, match="has no 'description'; set it on the class"):
        Nameless().check_definition()


def test_tool_context_for_call_builds_the_idempotency_key() -> None:
    ctx = ToolContext.for_call("thread-9", 3, "call-7")
    assert ctx == ToolContext(
        thread_id="thread-9", call_id="call-7", idempotency_key="thread-9:3:call-7", step=3
    )


def test_every_factory_takes_the_same_options_and_refuses_an_unknown_one() -> None:
    from langchain_core.tools import StructuredTool

    from thinkgraph.tools import from_langchain
    from thinkgraph.tools.base import ToolOptions

    options: ToolOptions = {"requires_approval": True, "sensitive": "token", "retries": 2}

    def send(to: str, token: str) -> str:
        """Send a note."""
        return to

    made = tool(**options)(send)
    lc = from_langchain(StructuredTool.from_function(send), **options)
    for each in (made, lc):
        assert each.needs_approval({}) and each.retries == 2
        assert each.sensitive == frozenset({"token"})  # a bare string is one field name
        assert each.timeout_s == 30.0 and each.visibility == "full"  # the defaults kept
    assert (made.kind, lc.kind) == ("function", "external")
    with pytest.raises(TypeError, match="unexpected keyword argument 'retry'"):
        tool(retry=3)(send)  # type: ignore[call-overload]
