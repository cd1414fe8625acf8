"""Who sees what: visibility per tool, per kind and per audience, shared by every view."""

from __future__ import annotations

import pytest

from tests.views._runs import TOOLS, login_run
from thinkgraph import tool
from thinkgraph.state import LLMCallStep, ToolCall, ToolCallStep
from thinkgraph.views import ViewPolicy, to_view_items


@pytest.mark.parametrize(
    ("declared", "developer", "user", "auditor"),
    [
        ("full", "full", "full", "full"),
        ("summary", "full", "summary", "full"),
        ("hidden", "hidden", "hidden", "full"),
    ],
)
def test_each_audience_sees_a_declared_level_as_the_table_says(
    declared: str, developer: str, user: str, auditor: str
) -> None:
    policy = ViewPolicy(by_tool={"t": declared})  # type: ignore[dict-item]
    seen = [policy.visibility_for("t", None, a) for a in ("developer", "user", "auditor")]
    assert seen == [developer, user, auditor]


def test_the_tools_own_visibility_applies_when_nothing_overrides_it() -> None:
    search = TOOLS[1]
    assert ViewPolicy().visibility_for("search", "external", "user", search) == "summary"


def test_a_tool_override_beats_a_kind_override_which_beats_the_tool() -> None:
    search = TOOLS[1]
    policy = ViewPolicy(by_tool={"search": "hidden"}, by_kind={"external": "full"})
    assert policy.visibility_for("search", "external", "user", search) == "hidden"
    assert (
        ViewPolicy(by_kind={"external": "full"}).visibility_for(
            "search", "external", "user", search
        )
        == "full"
    )


def test_unknown_tools_are_shown_in_full() -> None:
    assert ViewPolicy().visibility_for("nobody_knows", None, "user") == "full"


def test_levels_per_audience_can_be_replaced() -> None:
    strict = ViewPolicy(
        levels={"developer": {"full": "full", "summary": "summary", "hidden": "hidden"}}
    )
    assert strict.visibility_for("search", "external", "developer", TOOLS[1]) == "summary"


def test_user_view_drops_model_calls_and_hidden_tools_and_folds_summaries() -> None:
    items = to_view_items(login_run().chain, audience="user", tools=TOOLS)
    assert not any(isinstance(i.step, LLMCallStep) for i in items)
    tools_seen = [i.step.call.name for i in items if isinstance(i.step, ToolCallStep)]
    assert tools_seen == ["login", "search", "add"]
    summary = [i for i in items if i.level == "summary"]
    assert [(i.step.number, i.summary, i.ok) for i in summary] == [(8, "searched for cats", True)]
    # The search's result and observation are folded into its summary line.
    assert not any(getattr(i.step, "call_id", None) == "call2" for i in items)


def test_developer_view_shows_summary_tools_in_full_but_not_hidden_ones() -> None:
    items = to_view_items(login_run().chain, audience="developer", tools=TOOLS)
    assert all(i.level == "full" for i in items)
    assert "call3" not in {i.call_id for i in items}  # audit_log is hidden
    assert {"call1", "call2", "call4"} <= {i.call_id for i in items}


def test_auditor_view_shows_every_step() -> None:
    run = login_run()
    items = to_view_items(run.chain, audience="auditor", tools=TOOLS)
    assert [i.step.number for i in items] == list(range(len(run.chain)))


def test_a_summary_template_missing_an_argument_shows_a_question_mark() -> None:
    @tool(visibility="summary", summary_template="fetched {url} as {fmt}")
    def fetch(url: str) -> str:
        """Fetch a page."""
        return ""

    step = ToolCallStep(number=0, call=ToolCall(name="fetch", args={"url": "a.example"}))
    (item,) = to_view_items([step], audience="user", tools=[fetch])
    assert (item.summary, item.ok) == ("fetched a.example as ?", None)


def test_a_broken_template_falls_back_to_the_tool_name() -> None:
    @tool(visibility="summary", summary_template="fetched {url!z}")
    def fetch(url: str) -> str:
        """Fetch a page."""
        return ""

    step = ToolCallStep(number=0, call=ToolCall(name="fetch", raw_args="a.example"))
    (item,) = to_view_items([step], audience="user", tools={"fetch": fetch})
    assert item.summary == "used fetch"


def test_a_summary_never_shows_a_sensitive_argument() -> None:
    @tool(visibility="summary", summary_template="logged in {user} with {password}")
    def sign_in(user: str, password: str) -> str:
        """Sign in."""
        return "ok"

    call = ToolCall(name="sign_in", args={"user": "ann", "password": "p4ssw0rd!"})
    (item,) = to_view_items([ToolCallStep(number=0, call=call)], audience="user", tools=[sign_in])
    assert item.summary == "logged in ann with ***"


def test_an_unknown_audience_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="developer, user, auditor"):
        to_view_items([], audience="admin")  # type: ignore[arg-type]
