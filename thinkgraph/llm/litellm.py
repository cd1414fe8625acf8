"""LiteLLMModel: any provider litellm knows, behind the `ChatModel` protocol.

This is the only module of thinkgraph that imports litellm, and it imports it on first
use, not at import time: litellm takes seconds to import, and the CLI and every run that
uses `ScriptedModel` should not pay for it.

Retries and fallbacks are done here, not by litellm. In litellm 1.106 a plain
`completion(num_retries=n)` retries in two stacked layers (the provider SDK's `max_retries`
and then litellm's own wrapper), so one 500 costs up to 2n+1 requests, 401 and 400 are
retried too, and the async path waits its own exponential backoff instead of the
provider's Retry-After. Its `fallbacks=` outside the Router turns every failure into a
generic 500 `APIConnectionError` and sends the primary's api_key to every fallback. So
each attempt here is one litellm call with its retries off, and the loop around it retries
only what can succeed on retry and falls back in order.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from thinkgraph.errors import ModelConfigError
from thinkgraph.llm.base import ChatModel, ModelReply, ModelRequest
from thinkgraph.state import ToolCall

__all__ = ["LiteLLMModel", "ModelCallError", "as_chat_model"]

_MAX_RETRY_AFTER_S = 60.0
"""A Retry-After above this is not waited for; the normal backoff is used instead."""
_BACKOFF_FIRST_S = 0.5
_BACKOFF_MAX_S = 8.0
_RESERVED_EXTRA = {
    "model": "the model is the first argument",
    "messages": "messages come from the ModelRequest",
    "tools": "tools come from the ModelRequest",
    "stream": "LiteLLMModel does not stream",
    "max_retries": "use num_retries=",
}

_litellm_module: ModuleType | None = None
_litellm_lock = threading.Lock()


def _litellm() -> ModuleType:
    """Import litellm once, configured for a library that must not talk or phone home."""
    global _litellm_module
    if _litellm_module is None:
        with _litellm_lock:
            if _litellm_module is None:
                # Without this, importing litellm fetches its model-cost map from GitHub:
                # a network call at import, slow or failing offline, and costs that change
                # under a run. The map shipped with the installed litellm is used instead.
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                # litellm prints help banners to stdout on errors; our errors say what to do.
                litellm.suppress_debug_info = True
                _litellm_module = litellm
    return _litellm_module


class ModelCallError(RuntimeError):
    """A model call failed: the provider refused, failed, timed out or answered nonsense.

    The message names the model and what to do; the litellm exception is the `__cause__`.

    Attributes:
        model: The model string that failed (the last one tried, with fallbacks).
        provider: The litellm provider of that model, e.g. "openai".
        status_code: The HTTP status, 408 for a timeout, or None when there was none.
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


@dataclass(frozen=True, slots=True)
class _Target:
    """One model to try, with the connection settings it gets."""

    model: str
    provider: str
    api_base: str | None
    api_key: str | None


class LiteLLMModel:
    """A model reached through litellm: OpenAI, Anthropic, Ollama, any OpenAI-compatible server.

    Each call tries the model, retrying errors that can pass (429, 408, 409, 5xx, timeouts,
    connection errors, an unreadable body) up to `num_retries` times with the provider's
    Retry-After or a short exponential backoff. If it still fails, each fallback model is
    tried the same way, in order; the reply then has `fallback=True` and names the model
    that answered. A fallback on the same provider as the primary gets the primary's
    `api_base` and `api_key`; a fallback on another provider uses its own environment
    variables, so a key is never sent to a provider it was not meant for.

    Args:
        model: A litellm model string: "provider/model", e.g. "openai/gpt-4o-mini".
        api_base: The server's base URL, for a proxy or an OpenAI-compatible server.
        api_key: The API key; by default litellm reads the provider's variable (OPENAI_API_KEY…).
        fallbacks: Models to try in order when the primary fails.
        num_retries: Retries per model after the first attempt.
        timeout: Seconds allowed for each attempt.
        temperature: Sampling temperature; the provider's default when None.
        **extra: Passed to `litellm.completion` as is (max_tokens, extra_headers, …).

    Raises:
        ModelConfigError: litellm cannot tell the provider of `model` or of a fallback, or
            a setting cannot work. Checked without any network call.

    Example:
        >>> model = LiteLLMModel("openai/gpt-4o-mini", fallbacks=["anthropic/claude-3-5-haiku"])
        >>> reply = model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        fallbacks: Sequence[str] = (),
        num_retries: int = 2,
        timeout: float = 60.0,
        temperature: float | None = None,
        **extra: Any,
    ) -> None:
        if isinstance(fallbacks, str):
            raise ModelConfigError(
                f"fallbacks={fallbacks!r} is one string; pass a list: fallbacks=[{fallbacks!r}]"
            )
        if num_retries < 0:
            raise ModelConfigError(f"num_retries={num_retries} is negative; use 0 for no retries")
        if timeout <= 0:
            raise ModelConfigError(f"timeout={timeout} must be a positive number of seconds")
        for key, why in _RESERVED_EXTRA.items():
            if key in extra:
                raise ModelConfigError(f"LiteLLMModel does not take {key}=: {why}")
        primary = _Target(model, _provider_of(model, api_base, "model"), api_base, api_key)
        targets = [primary]
        for name in fallbacks:
            provider = _provider_of(name, None, "fallback model")
            same = provider == primary.provider
            targets.append(
                _Target(name, provider, api_base if same else None, api_key if same else None)
            )
        self._targets = tuple(targets)
        self._num_retries = num_retries
        self._timeout = timeout
        self._temperature = temperature
        self._extra = dict(extra)

    @property
    def name(self) -> str:
        """The model string, as given."""
        return self._targets[0].model

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """The fallback models, in the order they are tried."""
        return tuple(t.model for t in self._targets[1:])

    def complete(self, request: ModelRequest) -> ModelReply:
        """Answer one request, retrying and falling back as configured.

        The reply's `latency_s` is the whole call, retries and fallbacks included.

        Raises:
            ModelCallError: Every model failed; the message lists why each one did.
        """
        litellm = _litellm()
        started = time.perf_counter()
        failures: list[ModelCallError] = []
        for index, target in enumerate(self._targets):
            for attempt in range(self._num_retries + 1):
                try:
                    response = litellm.completion(**self._arguments(target, request))
                    return self._reply(response, target, index, started)
                except Exception as exc:
                    error = self._failure(exc, target)
                    if not error.retryable or attempt == self._num_retries:
                        failures.append(error)
                        break
                    time.sleep(_retry_delay(exc, attempt))
        raise self._all_failed(failures)

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        """Answer one request without blocking the event loop; same behaviour as `complete`."""
        litellm = _litellm()
        started = time.perf_counter()
        failures: list[ModelCallError] = []
        for index, target in enumerate(self._targets):
            for attempt in range(self._num_retries + 1):
                try:
                    response = await litellm.acompletion(**self._arguments(target, request))
                    return self._reply(response, target, index, started)
                except Exception as exc:
                    error = self._failure(exc, target)
                    if not error.retryable or attempt == self._num_retries:
                        failures.append(error)
                        break
                    await asyncio.sleep(_retry_delay(exc, attempt))
        raise self._all_failed(failures)

    def __repr__(self) -> str:
        # Never show the api_key: reprs end up in logs and tracebacks.
        fallbacks = f", fallbacks={list(self.fallbacks)!r}" if self.fallbacks else ""
        return f"LiteLLMModel({self.name!r}{fallbacks})"

    # -- internals -------------------------------------------------------------------------

    def _arguments(self, target: _Target, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            **self._extra,
            "model": target.model,
            "messages": request.messages,
            "timeout": self._timeout,
            # Retries are ours (see the module docstring): both of litellm's layers are off.
            "num_retries": 0,
            "max_retries": 0,
        }
        if request.tools:
            arguments["tools"] = request.tools
            # litellm 1.106 checks tools for its proxy's MCP gateway by importing proxy code
            # that needs the optional `mcp` package, so without this flag every call with
            # tools fails with "No module named 'mcp'". Our tools are plain function schemas,
            # never gateway tools; litellm passes the same flag on its own internal calls.
            arguments["_skip_mcp_handler"] = True
        if target.api_base is not None:
            arguments["api_base"] = target.api_base
        if target.api_key is not None:
            arguments["api_key"] = target.api_key
        if self._temperature is not None:
            arguments["temperature"] = self._temperature
        return arguments

    def _reply(self, response: Any, target: _Target, index: int, started: float) -> ModelReply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise ModelCallError(
                f"{target.model}: the provider answered with no choices (an empty reply); "
                "retry, or check the request with the provider",
                model=target.model,
                provider=target.provider,
            )
        message = choices[0].message
        content = getattr(message, "content", None)
        usage = getattr(response, "usage", None)
        return ModelReply(
            text=content if isinstance(content, str) else "",
            tool_calls=[_tool_call(raw) for raw in getattr(message, "tool_calls", None) or []],
            model=target.model,
            provider=target.provider,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            cost_usd=_cost(response),
            latency_s=time.perf_counter() - started,
            fallback=index > 0,
        )

    def _failure(self, exc: Exception, target: _Target) -> ModelCallError:
        """Turn what a call raised into a ModelCallError, or re-raise what is not a call failure."""
        if isinstance(exc, ModelCallError):
            return exc
        litellm = _litellm()
        import openai  # loaded by litellm already; every litellm call error derives from it

        if not isinstance(exc, openai.OpenAIError):
            raise exc  # not a provider failure: a bug or bad extra arguments, shown as is
        status, retryable, what, detail = _classify(exc, litellm, target, self._timeout)
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

    def _all_failed(self, failures: list[ModelCallError]) -> ModelCallError:
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


def as_chat_model(model: str | ChatModel) -> ChatModel:
    """The model to use for `model`: a litellm model string becomes a `LiteLLMModel`.

    Example:
        >>> as_chat_model(ScriptedModel(["hi"])).name
        'scripted'
    """
    if isinstance(model, str):
        return LiteLLMModel(model)
    if isinstance(model, ChatModel):
        return model
    raise TypeError(
        f"expected a litellm model string like 'openai/gpt-4o-mini' or a ChatModel, "
        f"got {type(model).__name__}"
    )


# -- helpers --------------------------------------------------------------------------------


def _provider_of(model: str, api_base: str | None, what: str) -> str:
    """The litellm provider of `model`; a pure lookup in litellm's tables, no network."""
    litellm = _litellm()
    try:
        bare, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
    except Exception:
        provider, bare = None, ""
    if not provider or not bare:
        raise ModelConfigError(
            f"unknown {what} {model!r}: use a litellm model string like 'openai/gpt-4o-mini' "
            "(see litellm's providers list)"
        )
    return str(provider)


def _tool_call(raw: Any) -> ToolCall:
    function = getattr(raw, "function", None)
    name = getattr(function, "name", None) or ""
    args, raw_args = _parse_arguments(getattr(function, "arguments", None))
    call_id = getattr(raw, "id", None)
    if call_id:
        return ToolCall(name=name, args=args, raw_args=raw_args, id=str(call_id))
    return ToolCall(name=name, args=args, raw_args=raw_args)


def _parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(args, raw_args): a JSON object becomes args; anything else is kept as written."""
    if isinstance(arguments, dict):
        return arguments, None
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        # Providers send "" (or nothing) for a call to a tool without parameters.
        return {}, None
    text = arguments if isinstance(arguments, str) else str(arguments)
    try:
        parsed = json.loads(text)
    except ValueError:
        return None, text
    return (parsed, None) if isinstance(parsed, dict) else (None, text)


def _cost(response: Any) -> float | None:
    """The cost from litellm's cost map, or None when the model is not in it (never a guess)."""
    try:
        cost = _litellm().completion_cost(completion_response=response)
    except Exception:
        return None
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
        return float(cost)
    return None


def _classify(
    exc: Exception, litellm: ModuleType, target: _Target, timeout: float
) -> tuple[int | None, bool, str, str]:
    """(status code, retryable, what happened and what to do, the provider's words)."""
    status, retryable, what = _what_failed(exc, litellm, target, timeout)
    # litellm reports an unreadable body and a refused connection as made-up 500s, with
    # its own wrapping around the real reason; the innermost exception says it plainly.
    cause = _find_cause(exc, (json.JSONDecodeError, ConnectionError))
    return status, retryable, what, str(cause) if cause is not None else _detail(exc)


def _what_failed(
    exc: Exception, litellm: ModuleType, target: _Target, timeout: float
) -> tuple[int | None, bool, str]:
    import openai  # loaded by litellm already

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
