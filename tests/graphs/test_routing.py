"""The routers, as a specification: every guard at its exact boundary, by route label."""

from __future__ import annotations

from typing import Any

import pytest

from thinkgraph.graphs.routes import after_human, after_observe, after_think, after_validate
from thinkgraph.guards import guard_stop
from thinkgraph.state import Counters, RunInfo, ToolCall
from thinkgraph.types import NextAction, StepLimits


def state(
    action: NextAction = NextAction.CONTINUE,
    *,
    candidate: str | None = None,
    calls: int = 0,
    answer: str | None = None,
    run: RunInfo | None = None,
    **counters: Any,
) -> dict[str, Any]:
    return {
        "next_action": action,
        "candidate": candidate,
        "pending_calls": [ToolCall(name="add", args={}) for _ in range(calls)],
        "counters": Counters(**counters),
        "answer": answer,
        "run": run,
    }


def final(steps: int, **counters: Any) -> dict[str, Any]:
    return state(NextAction.FINAL_ANSWER, candidate="42", steps=steps, **counters)


# -- min_steps ----------------------------------------------------------------------------


def test_final_answer_before_min_steps_returns_to_think() -> None:
    assert after_think(final(2), StepLimits(min_steps=3)) == "min_steps"


def test_final_answer_at_min_steps_is_accepted() -> None:
    assert after_think(final(3), StepLimits(min_steps=3)) == "validate"


def test_validate_action_before_min_steps_returns_to_think() -> None:
    s = state(NextAction.VALIDATE, candidate="x", steps=1)
    assert after_think(s, StepLimits(min_steps=2)) == "min_steps"


def test_final_answer_at_max_steps_is_still_validated() -> None:
    assert after_think(final(3), StepLimits(max_steps=3)) == "validate"


def test_final_action_without_candidate_is_not_validated() -> None:
    s = state(NextAction.FINAL_ANSWER, candidate=None, steps=5)
    assert after_think(s, StepLimits()) == "min_steps"


# -- max_steps ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "expected"), [(1, "continue"), (2, "continue"), (3, "max_steps")]
)
def test_max_steps_three_allows_exactly_three_think_steps(steps: int, expected: str) -> None:
    s = state(calls=1, steps=steps)
    assert after_think(s, StepLimits(max_steps=3)) == expected


def test_max_steps_one_finalizes_after_the_first_think() -> None:
    assert after_think(state(calls=1, steps=1), StepLimits(max_steps=1)) == "max_steps"


def test_unparsable_reply_at_max_steps_finalizes() -> None:
    assert after_think(state(steps=4), StepLimits(max_steps=4)) == "max_steps"


def test_min_steps_equal_to_max_steps_accepts_a_final_answer_at_the_last_step() -> None:
    limits = StepLimits(min_steps=3, max_steps=3)
    assert after_think(final(3, consecutive_failures=0), limits) == "validate"
    limits = StepLimits(min_steps=2, max_steps=2)
    assert after_think(final(1), limits) == "min_steps"


# -- tool calls, reset, plain thinking ----------------------------------------------------


def test_continue_with_calls_goes_to_act() -> None:
    assert after_think(state(calls=2, steps=1), StepLimits()) == "continue"


def test_continue_without_calls_thinks_again() -> None:
    assert after_think(state(steps=1), StepLimits()) == "retry"


@pytest.mark.parametrize(("resets", "expected"), [(0, "reset"), (1, "reset"), (2, "retry")])
def test_max_resets_two_allows_exactly_two_resets(resets: int, expected: str) -> None:
    s = state(NextAction.RESET, steps=1, resets=resets)
    assert after_think(s, StepLimits(max_resets=2)) == expected


def test_max_resets_zero_never_resets() -> None:
    assert after_think(state(NextAction.RESET, steps=1), StepLimits(max_resets=0)) == "retry"


# -- consecutive failures -----------------------------------------------------------------


@pytest.mark.parametrize(("failures", "expected"), [(2, "retry"), (3, "abort")])
def test_failures_under_abort_policy_finalize_at_the_limit(failures: int, expected: str) -> None:
    limits = StepLimits(max_consecutive_failures=3, failure_policy="abort")
    assert after_think(state(steps=1, consecutive_failures=failures), limits) == expected


@pytest.mark.parametrize(("failures", "expected"), [(2, "retry"), (3, "failures")])
def test_failures_under_ask_human_policy_pause_at_the_limit(failures: int, expected: str) -> None:
    limits = StepLimits(max_consecutive_failures=3, failure_policy="ask_human")
    assert after_think(state(steps=1, consecutive_failures=failures), limits) == expected


def test_failure_limit_is_checked_before_tool_calls() -> None:
    limits = StepLimits(max_consecutive_failures=2)
    assert after_think(state(calls=1, steps=1, consecutive_failures=2), limits) == "abort"


def test_accepted_final_answer_wins_over_failure_count() -> None:
    limits = StepLimits(max_consecutive_failures=1)
    assert after_think(final(1, consecutive_failures=1), limits) == "validate"


def test_guard_stop_names_consecutive_failures_only_under_abort() -> None:
    counters = Counters(consecutive_failures=3)
    assert guard_stop(counters, StepLimits(max_consecutive_failures=3)) == "consecutive_failures"
    ask = StepLimits(max_consecutive_failures=3, failure_policy="ask_human")
    assert guard_stop(counters, ask) is None


# -- budgets ------------------------------------------------------------------------------


@pytest.mark.parametrize(("elapsed", "expected"), [(9.99, "continue"), (10.0, "budget")])
def test_timeout_stops_at_the_wall_clock_budget(elapsed: float, expected: str) -> None:
    s = state(calls=1, steps=1, elapsed_s=elapsed)
    assert after_think(s, StepLimits(timeout_s=10)) == expected


@pytest.mark.parametrize(("cost", "expected"), [(0.0999, "continue"), (0.1, "budget")])
def test_cost_budget_stops_at_max_cost(cost: float, expected: str) -> None:
    s = state(calls=1, steps=1, cost_usd=cost)
    assert after_think(s, StepLimits(max_cost_usd=0.1)) == expected


@pytest.mark.parametrize(("tokens", "expected"), [(999, "continue"), (1000, "budget")])
def test_token_budget_counts_prompt_and_completion(tokens: int, expected: str) -> None:
    s = state(calls=1, steps=1, prompt_tokens=tokens - 100, completion_tokens=100)
    assert after_think(s, StepLimits(max_tokens=1000)) == expected


@pytest.mark.parametrize(
    ("counters", "limits", "reason"),
    [
        ({"elapsed_s": 5.0}, {"timeout_s": 5}, "timeout"),
        ({"cost_usd": 1.0}, {"max_cost_usd": 1.0}, "max_cost"),
        ({"prompt_tokens": 50}, {"max_tokens": 50}, "max_tokens"),
        ({"steps": 4}, {"max_steps": 4}, "max_steps"),
        ({"steps": 3}, {"max_steps": 4}, None),
    ],
)
def test_guard_stop_names_the_guard(
    counters: dict[str, Any], limits: dict[str, Any], reason: str | None
) -> None:
    assert guard_stop(Counters(**counters), StepLimits(**limits)) == reason


def test_budget_guards_do_not_drop_a_finished_answer() -> None:
    s = final(1, elapsed_s=100.0, cost_usd=5.0)
    assert after_think(s, StepLimits(timeout_s=1, max_cost_usd=1)) == "validate"


# -- after observe, validate, ask_human ---------------------------------------------------


def test_after_observe_thinks_again() -> None:
    assert after_observe(state(steps=1), StepLimits()) == "next"


def test_after_observe_a_timeout_finalizes() -> None:
    assert after_observe(state(steps=1, elapsed_s=3), StepLimits(timeout_s=2)) == "budget"


def test_after_observe_repeated_tool_failures_ask_a_human() -> None:
    limits = StepLimits(max_consecutive_failures=2, failure_policy="ask_human")
    assert after_observe(state(steps=1, consecutive_failures=2), limits) == "failures"


def test_after_validate_a_passed_answer_finalizes() -> None:
    assert after_validate(state(answer="42", steps=1), StepLimits()) == "passed"


def test_after_validate_a_failed_answer_is_revised() -> None:
    assert after_validate(state(steps=1), StepLimits()) == "failed"


def test_after_validate_a_failed_answer_at_max_steps_finalizes() -> None:
    assert after_validate(state(steps=3), StepLimits(max_steps=3)) == "max_steps"


def test_after_validate_a_verdict_asking_for_reset_resets_while_resets_are_left() -> None:
    s = state(NextAction.RESET, steps=1, resets=0)
    assert after_validate(s, StepLimits(max_resets=1)) == "reset"
    s = state(NextAction.RESET, steps=1, resets=1)
    assert after_validate(s, StepLimits(max_resets=1)) == "failed"


def test_after_human_abort_finalizes_and_retry_thinks() -> None:
    aborted = RunInfo(status="failed", stop_reason="aborted")
    assert after_human(state(steps=1, run=aborted), StepLimits()) == "aborted"
    assert after_human(state(steps=1), StepLimits()) == "retry"


def test_limits_refuse_min_above_max() -> None:
    with pytest.raises(ValueError, match="min_steps"):
        StepLimits(min_steps=5, max_steps=4)
