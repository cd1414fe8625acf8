"""The calculator: arithmetic from the syntax tree, everything else refused with a reason."""

from __future__ import annotations

import math

import pytest

from thinkgraph.state import ToolCall
from thinkgraph.tools import ToolContext, ToolRegistry, execute_call
from thinkgraph.tools.builtin import calculator
from thinkgraph.tools.builtin.calculator import evaluate

from .guard import in_child

CTX = ToolContext.for_call("thread-1", 1, "call-1")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("2 ** 10", 1024),
        ("2 ** -1", 0.5),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("7 / 2", 3.5),
        ("-3 + +2", -1),
        ("--4", 4),
        ("1e3 + 0.5", 1000.5),
        ("sqrt(16)", 4.0),
        ("abs(-5)", 5),
        ("round(2.567, 2)", 2.57),
        ("round(2.5)", 2),
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("max(4)", 4),
        ("log(8, 2)", 3.0),
        ("exp(0)", 1.0),
        ("sin(0) + cos(0)", 1.0),
        ("2 * pi", 2 * math.pi),
        ("log(e)", 1.0),
        ("  12  ", 12),
    ],
)
def test_arithmetic_is_evaluated(expression: str, expected: float) -> None:
    assert evaluate(expression) == pytest.approx(expected)


def test_integer_arithmetic_stays_int_and_division_gives_float() -> None:
    assert type(evaluate("6 * 7")) is int
    assert type(evaluate("2 ** 100")) is int and evaluate("2 ** 100") == 2**100
    assert type(evaluate("6 / 3")) is float


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("x + 1", "unknown name 'x'"),
        ("math.pi", "attributes (like math.pi) are not allowed"),
        ("().__class__", "attributes (like math.pi) are not allowed"),
        ("open('f')", "calling 'open' is not allowed"),
        ("__import__('os').system('ls')", "calling \"__import__('os').system\" is not allowed"),
        ("'abc' * 3", "only real numbers are allowed, not 'abc'"),
        ("True + 1", "only real numbers are allowed, not True"),
        ("2j", "only real numbers are allowed, not 2j"),
        ("1 < 2", "comparisons and logic are not supported"),
        ("1 and 2", "comparisons and logic are not supported"),
        ("2 ^ 3", "'^' is not a power here; use **"),
        ("1 << 100000", "LShift is not allowed"),
        ("9**9**9", "more than about 3,000 digits"),
        ("10 ** 100000", "more than about 3,000 digits"),
        ("(2 ** 9000) * (2 ** 9000)", "more than about 3,000 digits"),
        ("lambda: 1", "Lambda is not allowed"),
        ("[1, 2]", "List is not allowed"),
        ("1, 000", "a comma is not allowed"),
        ("1 if 1 else 2", "IfExp is not allowed"),
        ("(y := 3)", "NamedExpr is not allowed"),
        ("f'{1}'", "JoinedStr is not allowed"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("sqrt(-1)", "sqrt(-1) has no value: math domain error"),
        ("exp(1000)", "exp(1000) has no value"),
        ("round(2.5, ndigits=1)", "round() takes no keyword arguments"),
        ("sqrt(1, 2)", "sqrt() takes 1 argument(s), not 2"),
        ("min()", "min() takes 1 to 100 argument(s), not 0"),
        ("2.0 ** 5000", "too large for a floating-point number"),
        ("1e308 * 10", "not a finite number"),
        ("(-8) ** 0.5", "not a real number"),
        ("2 +", "could not parse '2 +'"),
        ("", "the expression is empty"),
        ("1" * 1001, "longer than 1000 characters"),
    ],
)
def test_anything_but_arithmetic_is_refused_with_a_reason(expression: str, reason: str) -> None:
    with pytest.raises(ValueError) as err:
        evaluate(expression)
    assert reason in str(err.value)


def test_refusal_becomes_an_observation_for_the_model() -> None:
    call = ToolCall(name="calculator", args={"expression": "__import__('os')"})
    result = execute_call(ToolRegistry([calculator]), call, CTX)
    assert (result.ok, result.error_kind) == (False, "exception")
    assert result.error is not None
    assert result.error.startswith("ValueError: calling '__import__' is not allowed")


def test_calculator_takes_a_bare_expression() -> None:
    call = ToolCall(name="calculator", raw_args="sqrt(2) * (3 + 4) ** 2")
    result = execute_call(ToolRegistry([calculator]), call, CTX)
    assert result.output == pytest.approx(math.sqrt(2) * 49)


def test_calculator_describes_itself_to_the_model() -> None:
    assert calculator.single_str_param() == "expression"
    assert "** (power; ^ is not power)" in calculator.description
    assert calculator.json_schema()["properties"]["expression"]["type"] == "string"
    assert calculator("6 * 7") == 42


# -- bounded in time and memory ------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        # round() with negative digits computes 10**-digits first.
        ("round(5, -10**8)", "round() takes digits between -4000 and 4000"),
        ("round(5.5, 10**8)", "round() takes digits between -4000 and 4000"),
        ("round(2**9000, -(10**9))", "round() takes digits between -4000 and 4000"),
        # Powers, however spelled or nested.
        ("10**10**10", "more than about 3,000 digits"),
        ("(10**10)**(10**10)", "more than about 3,000 digits"),
        ("2 ** 2 ** 2 ** 2 ** 2 ** 2", "more than about 3,000 digits"),
        ("(-3) ** 10**9", "more than about 3,000 digits"),
        ("10 ** (2**9000)", "more than about 3,000 digits"),
        ("2.0 ** 10**9", "too large for a floating-point number"),
        ("1.5 ** (2**9000)", "too large for a floating-point number"),
        ("(2**9000) ** 0.5", "too large for a floating-point number"),
        # Products stay bounded step by step.
        ("(2**9000) * (2**9000) * (2**9000)", "more than about 3,000 digits"),
        # Operations and functions whose cost explodes are not offered at all.
        ("1 << 10**9", "LShift is not allowed"),
        ("factorial(10**7)", "calling 'factorial' is not allowed"),
        ("comb(10**7, 5 * 10**6)", "calling 'comb' is not allowed"),
        ("perm(10**7)", "calling 'perm' is not allowed"),
        ("pow(10, 10**9)", "calling 'pow' is not allowed"),
        ("str(10**3000)", "calling 'str' is not allowed"),
        ("'9' * 10**9", "only real numbers are allowed"),
        ("-" * 990 + "1", "nested too deeply"),
    ],
)
def test_expressions_whose_cost_explodes_are_refused_at_once(expression: str, reason: str) -> None:
    # In a child process: before these bounds, some ran for minutes inside C code.
    outcome, message = in_child(lambda: evaluate(expression), timeout_s=5)
    assert outcome == "raised"
    assert message.startswith("ValueError") and reason in message


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("round(123456, -3)", 123000),
        ("round(123456, -3000)", 0),
        ("round(1.23456, 4000)", 1.23456),
        ("(-1) ** 10**3000", 1),
        ("1 ** 10**3000", 1),
        ("0 ** 10**3000", 0),
        ("2 ** -10**9", 0.0),
    ],
)
def test_cheap_extremes_still_have_their_value(expression: str, expected: float) -> None:
    outcome, value = in_child(lambda: evaluate(expression), timeout_s=5)
    assert (outcome, value) == ("ok", repr(expected))


def test_calculator_has_a_default_timeout() -> None:
    assert calculator.timeout_s is not None and 0 < calculator.timeout_s <= 10
