"""LiteLLMModel: any provider litellm knows, behind the `ChatModel` protocol.

This is the only module of thinkgraph that imports litellm, and it imports it on first
use, not at import time: litellm takes seconds to import, and the CLI and every run that
uses `ScriptedModel` should not pay for it.

Retries and fallbacks are done by `thinkgraph.llm.retry`, not by litellm. In litellm
1.106 a plain `completion(num_retries=n)` retries in two stacked layers (the provider
SDK's `max_retries` and then litellm's own wrapper), so one 500 costs up to 2n+1
requests, 401 and 400 are retried too, and the async path waits its own exponential
backoff instead of the provider's Retry-After. Its `fallbacks=` outside the Router turns
every failure into a generic 500 `APIConnectionError` and sends the primary's api_key to
every fallback. So each attempt here is one litellm call with its retries off, and the
loop around it retries only what can succeed on retry and falls back in order. What a
failure means (its status, whether a retry can pass, the message) is decided by
`thinkgraph.llm.errors`, from the exception classes this module hands it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from thinkgraph.errors import ModelConfigError
from thinkgraph.llm.base import ChatModel, ModelReply, ModelRequest
from thinkgraph.llm.errors import ModelCallError, to_model_call_error
from thinkgraph.llm.langchain import LangChainModel
from thinkgraph.llm.retry import acall_with_fallbacks, call_with_fallbacks
from thinkgraph.state import ToolCall

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["LiteLLMModel", "ModelCallError", "as_chat_model"]

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
                _own_handlers_out(litellm)
                _litellm_module = litellm
    return _litellm_module


def _own_handlers_out(litellm: ModuleType) -> None:
    """litellm's lines go where the application's logging sends them, as any library's.

    litellm puts a stderr handler of its own on its loggers (``LiteLLM``…), so an
    application that logs at INFO gets each of its lines twice, once past its own format
    and filters. The handler goes; the filters litellm put on it (its own masking of keys)
    stay, on the loggers.
    """
    own = getattr(getattr(litellm, "_logging", None), "handler", None)
    if own is None:
        return
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logger = logging.getLogger(name)
        if own in logger.handlers:
            logger.removeHandler(own)
            for kept in own.filters:
                if kept not in logger.filters:
                    logger.addFilter(kept)


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

        def call(index: int, target: _Target) -> ModelReply:
            response = litellm.completion(**self._arguments(target, request))
            return self._reply(response, target, index, started)

        return call_with_fallbacks(self._targets, call, self._failure, self._num_retries)

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        """Answer one request without blocking the event loop; same behaviour as `complete`."""
        litellm = _litellm()
        started = time.perf_counter()

        async def call(index: int, target: _Target) -> ModelReply:
            response = await litellm.acompletion(**self._arguments(target, request))
            return self._reply(response, target, index, started)

        return await acall_with_fallbacks(self._targets, call, self._failure, self._num_retries)

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
        return to_model_call_error(
            exc, target, timeout=self._timeout, litellm=litellm, openai=openai
        )


def count_tokens(model: str, text: str) -> int:
    """Tokens of `text` for `model` by litellm's counter (its default tokenizer when it
    does not know the model); local, no network."""
    return int(_litellm().token_counter(model=model or "gpt-4o", text=text))


def model_info(model: str) -> dict[str, Any]:
    """What litellm's bundled model table says of `model` ({} when it does not know it)."""
    try:
        return dict(_litellm().get_model_info(model))
    except Exception:
        return {}


def as_chat_model(model: str | ChatModel | BaseChatModel) -> ChatModel:
    """The model to use for `model`: a litellm model string becomes a `LiteLLMModel`, a
    LangChain chat model a `LangChainModel`; a `ChatModel` is used as it is.

    Example:
        >>> as_chat_model(ScriptedModel(["hi"])).name
        'scripted'
    """
    if isinstance(model, str):
        return LiteLLMModel(model)
    if isinstance(model, ChatModel):
        return model
    # A LangChain model's class is loaded, so its module is too; if it is not, `model` is
    # not one, and LangChain is not imported just to tell.
    chat_models = sys.modules.get("langchain_core.language_models")
    if chat_models is not None and isinstance(model, chat_models.BaseChatModel):
        return LangChainModel(model)
    raise TypeError(
        f"expected a litellm model string like 'openai/gpt-4o-mini', a ChatModel or a "
        f"LangChain chat model, got {type(model).__name__}"
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
    """The cost from litellm's cost map, or None when the model is not in it (never a guess).

    litellm prices each response as it builds it (``_hidden_params["response_cost"]``, None
    for a model its map lacks); that figure is taken as it is. Only a response without it
    is priced here, which for a model outside the map costs a raised exception per call.
    """
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]
    else:
        try:
            cost = _litellm().completion_cost(completion_response=response)
        except Exception:
            return None
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
        return float(cost)
    return None
