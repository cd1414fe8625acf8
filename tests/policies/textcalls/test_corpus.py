"""The held-out corpus (`corpus.py`): every reply's decision, invariants over all, the score.

The acceptance bar of "every open model's tool-call text understood": at least 95% of the
replies read exactly as expected and not one misparse — a call where none was meant, a call
with other tools or arguments, or a final answer that is not the expected one. Feedback where
a call was expected is not right, but it is not a misparse: the model is asked again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from tests.policies._expect import Call, Calls, Final, assert_consistent, check
from tests.policies.textcalls.corpus import (
    CORPUS,
    FAMILIES,
    SPECIAL_TOKENS,
    TOOLS,
    Case,
    reasoning_parts,
)
from thinkgraph.policies.base import Decision
from thinkgraph.policies.react_text import parse

RIGHT, WRONG, MISPARSE = "right", "not right", "misparse"
PASS_RATE = 0.95


def decision_of(case: Case) -> Decision:
    """The parser's decision on a reply (parsed once for all the tests here)."""
    return _parsed(case.text)


@cache
def _parsed(text: str) -> Decision:
    return parse(text)


@pytest.mark.parametrize("case", CORPUS, ids=lambda case: f"{case.family}-{case.id}")
def test_reply(case: Case) -> None:
    check(decision_of(case), case.expected)


# -- invariants over every reply ----------------------------------------------------------------


def _offenders(problem: Any) -> list[str]:
    """The cases for which `problem(case, decision)` names a problem, with it."""
    found = []
    for case in CORPUS:
        what = problem(case, decision_of(case))
        if what:
            found.append(f"{case.family}-{case.id}: {what}")
    return found


def test_every_decision_is_consistent() -> None:
    def problem(case: Case, decision: Decision) -> str | None:
        try:
            assert_consistent(decision)
        except AssertionError:
            return f"inconsistent {decision!r}"
        return None

    assert _offenders(problem) == []


def test_no_answer_holds_reasoning_text() -> None:
    def problem(case: Case, decision: Decision) -> str | None:
        answer = decision.answer or ""
        leaked = [line for line in reasoning_parts(case) if line in answer]
        return f"answer {answer!r} holds {leaked!r}" if leaked else None

    assert _offenders(problem) == []


def _strings(value: Any) -> Iterator[str]:
    """Every string in a value: dict keys and values, list items, the value itself."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _produced(decision: Decision) -> Iterator[str]:
    """What a decision hands on: tool names, arguments, the answer."""
    for call in decision.tool_calls:
        yield call.name
        yield from _strings(call.args)
        yield from _strings(call.raw_args)
    yield from _strings(decision.answer)


def test_no_special_token_in_a_name_an_argument_or_an_answer() -> None:
    def problem(case: Case, decision: Decision) -> str | None:
        bad = {t for text in _produced(decision) for t in SPECIAL_TOKENS if t in text}
        return f"{sorted(bad)} in {list(_produced(decision))!r}" if bad else None

    assert _offenders(problem) == []


def test_every_call_is_to_a_tool_the_reply_was_written_for() -> None:
    def problem(case: Case, decision: Decision) -> str | None:
        names = [call.name for call in decision.tool_calls]
        strangers = [name for name in names if name not in TOOLS]
        return f"calls {strangers!r}" if strangers else None

    assert _offenders(problem) == []


# -- the score ---------------------------------------------------------------------------------


def _expected_calls(case: Case) -> list[tuple[str, Any, Any]] | None:
    expected = case.expected
    calls = expected.calls if isinstance(expected, Calls) else (expected,)
    if not all(isinstance(call, Call) for call in calls):
        return None
    return [(call.name, call.args, call.raw) for call in calls if isinstance(call, Call)]


def outcome(case: Case, decision: Decision) -> str:
    """Right; a misparse (a call or an answer other than the expected one); or not right."""
    try:
        check(decision, case.expected)
    except AssertionError:
        pass
    else:
        return RIGHT
    if decision.kind == "tool_calls":
        made = [(call.name, call.args, call.raw_args) for call in decision.tool_calls]
        return MISPARSE if made != _expected_calls(case) else WRONG
    if decision.kind == "final":
        expected = case.expected
        right = isinstance(expected, Final) and decision.answer == expected.answer
        return WRONG if right else MISPARSE
    return WRONG


def score() -> tuple[dict[str, Counter[str]], list[str]]:
    """Per family, how many replies were right, not right or misparsed; and the misses."""
    by_family: dict[str, Counter[str]] = {family: Counter() for family in FAMILIES}
    misses = []
    for case in CORPUS:
        decision = decision_of(case)
        result = outcome(case, decision)
        by_family[case.family][result] += 1
        if result != RIGHT:
            got = decision.tool_calls or decision.answer or (decision.error or "")[:80]
            misses.append(f"{result:9} {case.family}-{case.id}: {decision.kind} {got!r}")
    return by_family, misses


def test_the_corpus_scores_at_least_95_percent_with_no_misparse() -> None:
    by_family, misses = score()
    lines = [f"{'family':16} right/total  misparses"]
    for family, counts in by_family.items():
        total = sum(counts.values())
        lines.append(f"{family:16} {counts[RIGHT]:5}/{total:<5}  {counts[MISPARSE]:9}")
    right = sum(counts[RIGHT] for counts in by_family.values())
    misparses = sum(counts[MISPARSE] for counts in by_family.values())
    lines.append(f"{'all':16} {right:5}/{len(CORPUS):<5}  {misparses:9}")
    table = "\n".join([*lines, "", *misses])
    print(table)
    assert misparses == 0, table
    assert right >= PASS_RATE * len(CORPUS), table


def test_the_corpus_is_what_the_issue_asks_for() -> None:
    counts = Counter(case.family for case in CORPUS)
    assert len(FAMILIES) == 12 and min(counts.values()) >= 8
    assert len({(case.family, case.id) for case in CORPUS}) == len(CORPUS) >= 96
    calls = [case for case in CORPUS if isinstance(case.expected, (Call, Calls))]
    assert sum(isinstance(case.expected, Calls) for case in CORPUS) >= 6
    assert len(calls) >= 0.55 * len(CORPUS)
    assert sum("negative" in case.id for case in CORPUS) >= 12
