"""`ModelCallError`, and what a failed litellm call becomes.

A call that failed is classified once: its HTTP status (408 for a timeout, None when
there was none), whether the same call could pass if tried again, and a message that
names the model, says what happened and what to do, and quotes the provider's words.

This module does not import litellm: `thinkgraph.llm.litellm` is the only module that
does, on first use. The exception classes a failure is checked against come in as
arguments, from the litellm (and its openai) already loaded when a call has failed.
"""

from __future__ import annotations

import json
import re
from types import ModuleType
from typing import Protocol

__all__ = ["Endpoint", "ModelCallError", "to_model_call_error"]


class ModelCallError(RuntimeError):
    """A model call failed: the provider refused, failed, timed out or answered nonsense.

    The message names the model and what to do; the litellm exception is the `__cause__`.

    Attributes:
        model: The model string that failed (the last one tried, with fallbacks).
        provider: The litellm provider of that model, e.g. "openai".
        status_code: The HTTP status, 408 for a timeout, 401 for a key the client found
            missing (nothing was sent), or None when there was none.
        retryable: Whether the same call could succeed if tried again later.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        provider: str | None = None,
        status_code: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.model = model
        self.provider = provider
        self.status_code = status_code
        self.retryable = retryable


class Endpoint(Protocol):
    """The model that was called, as the wording of its failure needs it."""

    @property
    def model(self) -> str:
        """The litellm model string, e.g. "openai/gpt-4o-mini"."""
        ...

    @property
    def provider(self) -> str:
        """The litellm provider of the model, e.g. "openai"."""
        ...

    @property
    def api_base(self) -> str | None:
        """The base URL the call went to, or None for the provider's default."""
        ...

    @property
    def api_key(self) -> str | None:
        """The key passed for the call, or None when litellm read the environment."""
        ...


def to_model_call_error(
    exc: Exception,
    target: Endpoint,
    *,
    timeout: float,
    litellm: ModuleType,
    openai: ModuleType,
) -> ModelCallError:
    """The `ModelCallError` for `exc`, an `openai.OpenAIError` raised by a call to `target`.

    Args:
        exc: What the litellm call raised; it becomes the `__cause__`.
        target: The model that was called.
        timeout: The seconds the call was allowed, for the wording of a timeout.
        litellm: The loaded litellm module, whose exception classes `exc` is checked against.
        openai: The loaded openai module (litellm's exceptions derive from its classes).
    """
    status, retryable, what = _what_failed(exc, litellm, openai, target, timeout)
    # litellm reports an unreadable body and a refused connection as made-up 500s, with
    # its own wrapping around the real reason; the innermost exception says it plainly.
    cause = _find_cause(exc, (json.JSONDecodeError, ConnectionError))
    detail = str(cause) if cause is not None else _detail(exc)
    message = f"{target.model}: {what}" + (f" [{detail}]" if detail else "")
    error = ModelCallError(
        message,
        model=target.model,
        provider=target.provider,
        status_code=status,
        retryable=retryable,
    )
    error.__cause__ = exc
    return error


def _what_failed(
    exc: Exception, litellm: ModuleType, openai: ModuleType, target: Endpoint, timeout: float
) -> tuple[int | None, bool, str]:
    """(status code, retryable, what happened and what to do)."""
    errors = litellm.exceptions
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if _find_cause(exc, json.JSONDecodeError) is not None:
        return None, True, "invalid response body: the provider sent something that is not JSON"
    if isinstance(exc, errors.Timeout):
        return 408, True, f"timed out after {timeout:g}s (raise timeout= or try again later)"
    if isinstance(exc, errors.AuthenticationError):
        fix = (
            "check the api_key= you passed"
            if target.api_key is not None
            else f"check {target.provider.upper()}_API_KEY or pass api_key="
        )
        return 401, False, f"401 authentication failed ({fix})"
    if _missing_key(exc, openai):
        # The client refused to send a request without a key (litellm calls it a 500): the
        # provider's 401 in all but the wire, and as final.
        fix = f"set {target.provider.upper()}_API_KEY or pass api_key="
        return 401, False, f"no API key, so nothing was sent ({fix})"
    if isinstance(exc, errors.PermissionDeniedError):
        return 403, False, "403 permission denied (this API key cannot use this model)"
    if isinstance(exc, errors.NotFoundError):
        where = f" at {target.api_base}" if target.api_base else ""
        return 404, False, f"404 not found (check the model name and that it is served{where})"
    if isinstance(exc, errors.RateLimitError):
        return 429, True, "429 rate limited (retries exhausted; lower the request rate)"
    if isinstance(exc, errors.ContextWindowExceededError):
        return status or 400, False, "context window exceeded (shorten the prompt)"
    if isinstance(exc, errors.APIConnectionError) or (
        _find_cause(exc, (openai.APIConnectionError, ConnectionError)) is not None
    ):
        where = target.api_base or f"the {target.provider} API"
        return None, True, f"could not connect to {where} (is the server up?)"
    if status is None:
        return None, False, "the call failed"
    retryable = status in (408, 409, 429) or status >= 500
    label = "provider error" if status >= 500 else "request rejected"
    return status, retryable, f"{status} {label}"


def _missing_key(exc: BaseException, openai: ModuleType) -> bool:
    """Whether the openai client refused to make the call for want of a key.

    It raises a bare `openai.OpenAIError` ("Missing credentials. Please pass an `api_key`…",
    or "The api_key client option must be set…") before any request; every failure of a
    request sent is a subclass (`APIError`).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if type(current) is openai.OpenAIError:
            text = str(current)
            return "api_key" in text or "Missing credentials" in text
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _find_cause(
    exc: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]
) -> BaseException | None:
    """The first exception of `kind` in the chain of causes of `exc`, itself included."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


_LITELLM_PREFIX = re.compile(r"^(?:litellm\.)?\w+(?:Error|Exception|Timeout)\s*[:-]\s*")


def _detail(exc: Exception) -> str:
    """The provider's own words, without litellm's repeated class-name prefixes."""
    text = str(getattr(exc, "message", None) or exc)
    text = text.split(" LiteLLM Retried:")[0]
    while (match := _LITELLM_PREFIX.match(text)) is not None:
        text = text[match.end() :]
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."
