"""`calculator`: arithmetic for the model, evaluated from the syntax tree, never with eval.

Only numbers, the operators + - * / // % **, unary + and -, parentheses, the constants
`pi` and `e` and a few math functions are accepted; anything else (names, attributes,
other calls, strings, comparisons) is refused with a message saying what is allowed.

Every step costs little, whatever the expression: each integer result is bounded
(`MAX_INT_BITS`), a power is refused *before* computing when its result would pass that
bound (`9**9**9`, `10**10**10`), and `round()` takes at most `MAX_ROUND_DIGITS` digits
either way (`round(5, -10**8)` would compute 10**100000000 first). Nothing else that grows
fast (shifts, factorial, comb, perm, pow(), strings, str()) is offered at all. These bounds
are what keep the tool quick: a huge integer operation runs in C holding the GIL, where no
timeout can stop it. The tool's timeout (`CALCULATOR_TIMEOUT_S`) is a second line only.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any, TypeAlias

from thinkgraph.tools.function import tool

__all__ = [
    "CALCULATOR_TIMEOUT_S",
    "MAX_INT_BITS",
    "MAX_LENGTH",
    "MAX_ROUND_DIGITS",
    "calculator",
    "evaluate",
]

Number: TypeAlias = int | float

MAX_LENGTH = 1000
"""Longest expression accepted, in characters."""
MAX_INT_BITS = 10_000
"""Largest integer result, in bits (about 3,000 decimal digits)."""
MAX_ROUND_DIGITS = 4000
"""The most digits `round(x, digits)` takes, either way (numbers have at most ~3,000)."""
CALCULATOR_TIMEOUT_S = 5.0
"""The calculator tool's timeout: the size bounds keep every call far below it."""


_TOO_MANY_DIGITS = "the result of ** would have more than about 3,000 digits; use smaller numbers"


def _power(base: Number, exponent: Number) -> Number:
    # Refuse before computing: the size of base**exponent is known from the operands. The
    # exponent's own size is checked first, so exponent * log2(base) cannot overflow a float
    # (whose error would blame floating point instead of the size).
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base) > 1
        and (exponent > MAX_INT_BITS or exponent * math.log2(abs(base)) > MAX_INT_BITS)
    ):
        raise ValueError(_TOO_MANY_DIGITS)
    result = base**exponent
    if isinstance(result, complex):
        raise ValueError(
            "the result is not a real number (a negative number to a fractional power)"
        )
    return result


def _round(value: Number, digits: int | None = None) -> Number:
    # round(int, -n) computes 10**n before anything else: bound n first.
    if digits is not None:
        if not isinstance(digits, int):
            raise ValueError("round() takes a whole number of digits, e.g. round(x, 2)")
        if abs(digits) > MAX_ROUND_DIGITS:
            raise ValueError(
                f"round() takes digits between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}, "
                f"not {_shown(digits)}; pass digits in that range (a number rounded to more "
                "digits than it has is 0 or itself)"
            )
        return round(value, digits)
    return round(value)


def _shown(value: int) -> str:
    return repr(value) if value.bit_length() < 64 else "a number that large"


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int]] = {
    # name: (function, fewest arguments, most arguments)
    "sqrt": (math.sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "min": (lambda *xs: min(xs), 1, 100),
    "max": (lambda *xs: max(xs), 1, 100),
    "log": (math.log, 1, 2),
    "exp": (math.exp, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
_ALLOWED = "numbers, + - * / // % **, parentheses, pi, e and " + ", ".join(_FUNCTIONS)


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression safely.

    Args:
        expression: e.g. "sqrt(2) * (3 + 4) ** 2".

    Returns:
        The value: an int when the arithmetic stays in integers, else a float.

    Raises:
        ValueError: the expression is not plain arithmetic, is too large, or has no
            finite real value; the message says what is allowed.
    """
    text = expression.strip()
    if not text:
        raise ValueError("the expression is empty; write one, e.g. 2 * (3 + 4)")
    if len(text) > MAX_LENGTH:
        raise ValueError(f"the expression is longer than {MAX_LENGTH} characters; split it up")
    try:
        result = _eval(ast.parse(text, mode="eval").body)
    except SyntaxError as exc:
        raise ValueError(f"could not parse {text!r}: {exc.msg}") from None
    except RecursionError:
        raise ValueError("the expression is nested too deeply; split it up") from None
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except OverflowError:
        raise ValueError("the result is too large for a floating-point number") from None
    if isinstance(result, float) and not math.isfinite(result):
        raise ValueError("the result is not a finite number (it overflowed or is undefined)")
    return result


def _eval(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"only real numbers are allowed, not {value!r}")
        return value
    if isinstance(node, ast.BinOp):
        binary = _BINARY.get(type(node.op))
        if binary is None:
            raise ValueError(_refusal(node.op))
        return _bounded(binary(_eval(node.left), _eval(node.right)))
    if isinstance(node, ast.UnaryOp):
        unary = _UNARY.get(type(node.op))
        if unary is None:
            raise ValueError(_refusal(node.op))
        return unary(_eval(node.operand))
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise ValueError(f"unknown name {node.id!r}; only {_ALLOWED} are allowed")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call):
        return _call(node)
    raise ValueError(_refusal(node))


def _call(node: ast.Call) -> Number:
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name not in _FUNCTIONS:
        raise ValueError(
            f"calling {ast.unparse(node.func)!r} is not allowed; "
            f"the functions are {', '.join(_FUNCTIONS)}"
        )
    if node.keywords:
        raise ValueError(f"{name}() takes no keyword arguments")
    function, fewest, most = _FUNCTIONS[name]
    if not fewest <= len(node.args) <= most:
        count = str(fewest) if fewest == most else f"{fewest} to {most}"
        raise ValueError(f"{name}() takes {count} argument(s), not {len(node.args)}")
    args = [_eval(arg) for arg in node.args]
    try:
        return _bounded(function(*args))
    except (ValueError, TypeError, OverflowError) as exc:
        shown = ", ".join(repr(arg)[:30] for arg in args)
        raise ValueError(f"{name}({shown}) has no value: {exc}") from None


def _bounded(value: Number) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueError("the result has more than about 3,000 digits; use smaller numbers")
    return value


def _refusal(node: ast.AST) -> str:
    """Why a piece of syntax is refused, with a hint for the usual mistakes."""
    if isinstance(node, ast.BitXor):
        return "'^' is not a power here; use ** (e.g. 2**3)"
    if isinstance(node, ast.Attribute):
        return "attributes (like math.pi) are not allowed; write pi, e or sqrt(...) directly"
    if isinstance(node, ast.Tuple):
        return "a comma is not allowed here: one expression at a time, no thousands separators"
    if isinstance(node, ast.Compare | ast.BoolOp):
        return "comparisons and logic are not supported; compute the values and compare them"
    return f"{type(node).__name__} is not allowed; only {_ALLOWED} are allowed"


@tool(timeout_s=CALCULATOR_TIMEOUT_S)
def calculator(expression: str) -> Number:
    """Evaluate an arithmetic expression and return its value.

    Supports numbers, + - * / // % and ** (power; ^ is not power), parentheses, the
    constants pi and e, and sqrt, abs, round, min, max, log, exp, sin, cos (radians).
    Example: sqrt(2) * (3 + 4) ** 2

    Args:
        expression: the expression to evaluate, e.g. "(2 + 3) * 4".

    Returns:
        The value: an integer when the arithmetic stays in integers, else a float.
    """
    return evaluate(expression)
