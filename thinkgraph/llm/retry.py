"""Retries and fallbacks around model calls, sync and async.

Each model is tried in order. A failure that can pass on retry (`ModelCallError.retryable`)
is tried again up to `num_retries` times, after the provider's Retry-After when it is
sane and a short jittered exponential backoff otherwise; any other failure, or the last
retry, moves on to the next model. When every model failed, the error says why each did.

This loop knows nothing of litellm: it is given the call to make and the function that
turns what the call raised into a `ModelCallError` (or re-raises what is not a failure).

Every attempt is one request sent, so this loop is where requests are counted: a caller
that may send only so many (a replay gone live, `max_calls`) sets a `RequestBudget`
around its call (`spending`), and an attempt past it is not made (`RequestBudgetSpent`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from thinkgraph.llm.errors import ModelCallError

__all__ = [
    "RequestBudget",
    "RequestBudgetSpent",
    "acall_with_fallbacks",
    "call_with_fallbacks",
    "spending",
]

T = TypeVar("T")
R = TypeVar("R")

_MAX_RETRY_AFTER_S = 60.0
"""A Retry-After above this is not waited for; the normal backoff is used instead."""
_BACKOFF_FIRST_S = 0.5
_BACKOFF_MAX_S = 8.0


class RequestBudgetSpent(RuntimeError):
    """An attempt was not made: the caller's `RequestBudget` is spent."""


class RequestBudget:
    """How many requests may be sent, and how many were (retries and fallbacks included).

    Args:
        limit: the requests allowed.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.sent = 0
        """Requests sent so far."""
        self._lock = threading.Lock()

    def spend(self) -> None:
        """Count one request about to be sent, or refuse it.

        Raises:
            RequestBudgetSpent: `limit` requests were sent already.
        """
        with self._lock:
            if self.sent >= self.limit:
                raise RequestBudgetSpent(f"{self.limit} requests were sent already")
            self.sent += 1


_budget: ContextVar[RequestBudget | None] = ContextVar("thinkgraph_request_budget", default=None)


@contextlib.contextmanager
def spending(budget: RequestBudget) -> Iterator[None]:
    """Count the requests the calls made inside against `budget` (in this context and the
    threads and tasks it starts)."""
    token = _budget.set(budget)
    try:
        yield
    finally:
        _budget.reset(token)


def _spend() -> None:
    budget = _budget.get()
    if budget is not None:
        budget.spend()


def call_with_fallbacks(
    targets: Sequence[T],
    call: Callable[[int, T], R],
    to_error: Callable[[Exception, T], ModelCallError],
    num_retries: int,
) -> R:
    """`call(index, target)` for each target in turn until one answers.

    Raises:
        ModelCallError: Every target failed; the message lists why each one did.
    """
    failures: list[ModelCallError] = []
    for index, target in enumerate(targets):
        for attempt in range(num_retries + 1):
            _spend()
            try:
                return call(index, target)
            except Exception as exc:
                error = to_error(exc, target)
                if not error.retryable or attempt == num_retries:
                    failures.append(error)
                    break
                time.sleep(_retry_delay(exc, attempt))
    raise _all_failed(failures)


async def acall_with_fallbacks(
    targets: Sequence[T],
    call: Callable[[int, T], Awaitable[R]],
    to_error: Callable[[Exception, T], ModelCallError],
    num_retries: int,
) -> R:
    """`call_with_fallbacks` for an async call; waits without blocking the event loop."""
    failures: list[ModelCallError] = []
    for index, target in enumerate(targets):
        for attempt in range(num_retries + 1):
            _spend()
            try:
                return await call(index, target)
            except Exception as exc:
                error = to_error(exc, target)
                if not error.retryable or attempt == num_retries:
                    failures.append(error)
                    break
                await asyncio.sleep(_retry_delay(exc, attempt))
    raise _all_failed(failures)


def _all_failed(failures: list[ModelCallError]) -> ModelCallError:
    last = failures[-1]
    if len(failures) == 1:
        return last
    error = ModelCallError(
        f"all {len(failures)} models failed: " + "; ".join(str(f) for f in failures),
        model=last.model,
        provider=last.provider,
        status_code=last.status_code,
        retryable=any(f.retryable for f in failures),
    )
    error.__cause__ = last
    return error


def _retry_delay(exc: Exception, attempt: int) -> float:
    """Seconds to wait before retry number `attempt + 1`: Retry-After if sane, else backoff."""
    retry_after = _retry_after(exc)
    if retry_after is not None and 0 <= retry_after <= _MAX_RETRY_AFTER_S:
        return retry_after
    backoff = min(_BACKOFF_FIRST_S * 2.0**attempt, _BACKOFF_MAX_S)
    # Jitter so clients that failed together do not all come back at the same moment.
    return backoff * (1 - 0.25 * random.random())


def _retry_after(exc: Exception) -> float | None:
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = headers.get(name)
        except Exception:
            return None
        if value is None:
            continue
        try:
            return float(value) * scale
        except (TypeError, ValueError):
            continue  # an HTTP date: rare enough to fall back to the backoff
    return None
