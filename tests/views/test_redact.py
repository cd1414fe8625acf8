"""Secrets are redacted in every view: by field name, by value wherever it recurs, by pattern."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.views._runs import PASSWORD, SESSION, SK_KEY, TOOLS, login_run
from thinkgraph import tool
from thinkgraph.hitl import Pending
from thinkgraph.state import (
    LLMCallStep,
    ObservationStep,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
)
from thinkgraph.types import NextAction
from thinkgraph.views import MASK, Redactor, redact_chain, to_html, to_json, to_markdown, to_text

VIEWS: dict[str, Callable[..., str]] = {
    "text": lambda run, **kw: to_text(run.chain, **kw),
    "markdown": to_markdown,
    "json": to_json,
    "html": to_html,
}


def test_the_run_really_holds_the_secrets_before_redaction() -> None:
    # Otherwise the tests below would pass for the wrong reason.
    raw = json.dumps([s.model_dump(mode="json") for s in login_run().chain])
    assert PASSWORD in raw and SESSION in raw and SK_KEY in raw
    llm = next(s for s in login_run().chain if isinstance(s, LLMCallStep))
    assert PASSWORD in llm.text  # the model's reply carries the Action Input


@pytest.mark.parametrize("audience", ["developer", "user", "auditor"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_no_secret_appears_in_any_view_for_any_audience(view: str, audience: str) -> None:
    out = VIEWS[view](login_run(), audience=audience, tools=TOOLS)
    for secret in (PASSWORD, SESSION, SK_KEY, json.dumps(PASSWORD)[1:-1]):
        assert secret not in out, (view, audience, secret)
    assert MASK in out


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_without_the_tools_secret_names_and_key_patterns_are_still_redacted(view: str) -> None:
    out = VIEWS[view](login_run())  # the CLI's `show` has no tools loaded
    assert PASSWORD not in out and SESSION not in out and SK_KEY not in out


def test_redaction_never_changes_the_stored_chain() -> None:
    run = login_run()
    before = [s.model_dump() for s in run.chain]
    redact_chain(run.chain, {t.name: t for t in TOOLS})
    assert [s.model_dump() for s in run.chain] == before


@tool
def vault(secret: str, n: int) -> str:
    """Keep a secret."""
    return "kept"


@tool
def pin(pin: int, token: str) -> str:
    """Check a pin."""
    return "ok"


@pytest.mark.parametrize(
    "secret",
    ['pa"ss\\word', "pass\nword\t1", "pass\x01word"],  # each JSON-escaped in the echo
)
def test_a_sensitive_value_is_masked_wherever_it_recurs(secret: str) -> None:
    chain = [
        ToolCallStep(number=0, call=ToolCall(name="vault", args={"secret": secret, "n": 1})),
        ObservationStep(number=1, call_id="x", tool="vault", text=json.dumps({"echo": secret})),
        TaskStep(number=2, text=f"it was {secret}"),
    ]
    call, observation, task = redact_chain(chain, {"vault": vault})
    assert call.call.args == {"secret": MASK, "n": 1}  # type: ignore[attr-defined]
    assert observation.text == '{"echo": "***"}'  # type: ignore[attr-defined]
    assert task.text == "it was ***"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("key sk-abcdefghijklmnop1234 here", "key *** here"),
        ("Authorization: Bearer eyJhbGciOi.J9xyz", "Authorization: Bearer ***"),
        ("token ghp_0123456789abcdefghijABCDEFGHIJ", "token ***"),
        ("aws AKIAABCDEFGHIJKLMNOP", "aws ***"),
        ("sk-short and Bearer x", "sk-short and Bearer x"),  # too short to be credentials
        # Any case, also where a text holds a case variant of an ASCII letter.
        ("auth: BEARER eyJhbGciOi.J9xyz", "auth: BEARER ***"),
        ("auth: basic dXNlcjpwYXNz, é", "auth: basic ***, é"),
        ("auth: Baſic dXNlcjpwYXNz", "auth: Baſic ***"),
        ("auth: basıc dXNlcjpwYXNz", "auth: basıc ***"),
        # Each GitHub prefix, in a reply whose "Thought" holds "gh" anyway.
        ("Thought: gho_0123456789abcdefghijABCD", "Thought: ***"),
        ("Thought: ghs_0123456789abcdefghijABCD", "Thought: ***"),
        ("Thought: github_pat_0123456789abcdefghij", "Thought: ***"),
        ("xox: xoxb-0123456789ab", "xox: ***"),
    ],
)
def test_credential_patterns_are_masked_in_any_text(text: str, shown: str) -> None:
    (step,) = redact_chain([TaskStep(number=0, text=text)])
    assert step.text == shown  # type: ignore[attr-defined]


def test_short_values_are_masked_in_their_field_but_not_hunted_elsewhere() -> None:
    chain = [
        ToolCallStep(number=0, call=ToolCall(name="pin", args={"pin": 42, "token": "abc"})),
        TaskStep(number=1, text="abc 42"),
    ]
    call, task = redact_chain(chain, {"pin": pin})
    assert call.call.args == {"pin": 42, "token": MASK}  # type: ignore[attr-defined]
    assert task.text == "abc 42"  # type: ignore[attr-defined]


def test_pending_questions_and_the_answer_are_redacted_in_the_json_view() -> None:
    waits = Pending(kind="approval", call_id="c9", tool="login", args={"password": "abcdef"})
    run = login_run().model_copy(update={"answer": f"done with {SESSION}", "pending": [waits]})
    doc = json.loads(to_json(run, tools=TOOLS))
    assert doc["answer"] == "done with ***"
    assert doc["pending"][0]["args"] == {"password": MASK}
    assert doc["pending"][0]["call_id"] == "c9"


@tool(sensitive={"pin"})
def unlock(pin: str) -> str:
    """Unlock with a pin."""
    return "open"


def test_secret_name_value_pairs_are_masked_in_any_text_and_hunted_elsewhere() -> None:
    # A reply whose Action Input did not parse still shows no secret, nor does what quotes it.
    reply = 'Action Input: {"config": {"api_key": "k-123456789", \'token\': \'t-98765\'}'
    chain = [
        LLMCallStep(number=0, text=reply),
        TaskStep(number=1, text="the key was k-123456789"),
    ]
    llm, task = redact_chain(chain)
    assert llm.text == 'Action Input: {"config": {"api_key": "***", \'token\': \'***\'}'  # type: ignore[attr-defined]
    assert task.text == "the key was ***"  # type: ignore[attr-defined]


def test_a_bare_input_to_a_sensitive_parameter_is_masked() -> None:
    call = ToolCall(name="unlock", raw_args="9-8-7-6")
    (step,) = redact_chain([ToolCallStep(number=0, call=call)], {"unlock": unlock})
    assert step.call.raw_args == MASK  # type: ignore[attr-defined]


# -- each step read once, copied once ----------------------------------------------------


def test_a_long_reply_learned_before_its_call_masks_the_names_the_call_records() -> None:
    # The reply's pairs are masked while it is learned; the call that comes after records
    # `card` as sensitive, so the reply is masked again with that name (a value this short
    # is masked by its name only, not hunted as a value).
    args = {"customer": "ACME", "card": "77", "note": "n" * 5000}
    reply = f"Action: charge\nAction Input: {json.dumps(args)}"
    chain = [
        LLMCallStep(number=0, text=reply),
        ToolCallStep(number=1, call=ToolCall(name="charge", args=args), sensitive=["card"]),
    ]
    llm, call = redact_chain(chain)
    assert '"card": "***"' in llm.text  # type: ignore[attr-defined]
    assert '"customer": "ACME"' in llm.text  # type: ignore[attr-defined]
    assert call.call.args["card"] == MASK  # type: ignore[attr-defined]


def test_a_step_is_learned_again_when_its_copy_differs() -> None:
    # Learning an equal copy of a step does nothing; a step of the same id that holds more
    # (a fork's edited copy) is learned.
    output = {"token": "tok-111111"}
    first = ToolResultStep(number=0, call_id="c1", tool="t", ok=True, output=output)
    changed = first.model_copy(update={"output": {"token": "tok-222222"}})
    redactor = Redactor([first], mask_unknown=True)
    redactor.learn(first.model_copy())
    redactor.learn(changed)
    assert redactor.text("tok-111111 and tok-222222") == "*** and ***"


def test_showing_a_step_leaves_unchanged_fields_as_they_are() -> None:
    thought = ThoughtStep(number=3, text="plain words", next_action=NextAction.FINAL_ANSWER)
    (shown,) = redact_chain([thought])
    assert shown == thought and shown.next_action is NextAction.FINAL_ANSWER  # type: ignore[attr-defined]


def test_objects_with_the_same_many_keys_are_masked_by_their_own_tools_names() -> None:
    # Which keys of a big object are secret is kept for the next object with those keys,
    # never for another tool's names or for keys that changed since.
    args = {f"field_{i}": f"value-{i:04d}" for i in range(100)}
    a = ToolCallStep(
        number=0, call=ToolCall(name="a", args=dict(args), id="1"), sensitive=["field_5"]
    )
    b = ToolCallStep(
        number=1, call=ToolCall(name="b", args=dict(args), id="2"), sensitive=["field_7"]
    )
    redactor = Redactor([a, b], mask_unknown=True)
    shown_a, shown_b = (redactor.step(s).call.args for s in (a, b))  # type: ignore[attr-defined]
    assert shown_a["field_5"] == MASK and shown_a["field_7"] == MASK  # value recurs in b
    assert shown_a["field_6"] == "value-0006" and shown_b["field_6"] == "value-0006"
    assert shown_b["field_5"] == MASK and shown_b["field_7"] == MASK
    c = ToolCallStep(number=2, call=ToolCall(name="a", args=dict(args), id="3"), sensitive=[])
    redactor = Redactor([c], mask_unknown=True)
    assert c.call.args is not None
    del c.call.args["field_0"]
    c.call.args["session_id"] = "s-123456"  # a new secret-looking key at the same count
    assert redactor.step(c).call.args["session_id"] == MASK  # type: ignore[attr-defined]


def test_unmasked_gives_back_what_an_edit_left_masked_and_keeps_what_it_changed() -> None:
    from thinkgraph.views.redact import unmasked

    original = {"user": "ann", "password": "hunter2", "auth": {"token": "t-1"}, "ids": [1, 2]}
    edited = {"user": "bob", "password": MASK, "auth": {"token": MASK}, "ids": [MASK, 3]}
    assert unmasked(edited, original) == {
        "user": "bob", "password": "hunter2", "auth": {"token": "t-1"}, "ids": [1, 3],
    }  # fmt: skip
    assert unmasked({"password": "new"}, original) == {"password": "new"}
    assert unmasked({"extra": MASK}, original) == {"extra": MASK}  # nothing to give back
