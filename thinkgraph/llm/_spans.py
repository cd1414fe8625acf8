"""How a model call shows in traces: its span's GenAI attributes and its LangChain run.

Kept with the models (not in `thinkgraph.tracing`, which every layer imports and which
imports none of them): what a call looks like to a tracer is the models' business.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManager, AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, LLMResult

from thinkgraph.llm.base import ModelReply, ModelRequest
from thinkgraph.llm.langchain import to_langchain_messages

__all__ = ["llm_result", "model_attributes", "reply_attributes", "start_model_run"]


def model_attributes(model_name: str, request: ModelRequest) -> dict[str, Any]:
    """The GenAI attributes of a chat span known before the call."""
    provider, _, _ = model_name.rpartition("/")
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": provider or None,
        "gen_ai.provider.name": provider or None,
        "gen_ai.request.model": model_name,
        "thinkgraph.purpose": request.purpose,
    }


def reply_attributes(reply: ModelReply) -> dict[str, Any]:
    """The GenAI attributes of a chat span from the model's reply."""
    return {
        "gen_ai.system": reply.provider,
        "gen_ai.provider.name": reply.provider,
        "gen_ai.response.model": reply.model or None,
        "gen_ai.usage.input_tokens": reply.prompt_tokens,
        "gen_ai.usage.output_tokens": reply.completion_tokens,
        "thinkgraph.cost_usd": reply.cost_usd,
        "thinkgraph.fallback": reply.fallback or None,
    }


async def start_model_run(
    manager: AsyncCallbackManager, model_name: str, request: ModelRequest
) -> AsyncCallbackManagerForLLMRun:
    """Tell the handlers a chat model call starts; its messages as LangChain messages."""
    try:
        messages = to_langchain_messages(request.messages)
    except ValueError:  # a role LangChain lacks: show the messages as text
        messages = [HumanMessage(content=str(m.get("content", ""))) for m in request.messages]
    provider, _, _ = model_name.rpartition("/")
    # The keys LangChain's own chat models add, which LangSmith reads the model from.
    manager.add_metadata(
        {
            "ls_provider": provider or model_name,
            "ls_model_name": model_name,
            "ls_model_type": "chat",
        },
        inherit=False,
    )
    runs = await manager.on_chat_model_start(
        {"name": model_name},
        [messages],
        name=model_name,
        invocation_params={"model": model_name, "purpose": request.purpose},
    )
    return runs[0]


def llm_result(reply: ModelReply) -> LLMResult:
    """The reply as LangChain's `LLMResult`, with token usage where tracers look for it."""
    prompt, completion = reply.prompt_tokens, reply.completion_tokens
    usage: UsageMetadata | None = None
    token_usage: dict[str, int] = {}
    if prompt is not None or completion is not None:
        total = (prompt or 0) + (completion or 0)
        usage = UsageMetadata(
            input_tokens=prompt or 0, output_tokens=completion or 0, total_tokens=total
        )
        token_usage = {
            "prompt_tokens": prompt or 0,
            "completion_tokens": completion or 0,
            "total_tokens": total,
        }
    message = AIMessage(
        content=reply.text,
        tool_calls=[
            {"name": c.name, "args": c.args or {}, "id": c.id, "type": "tool_call"}
            for c in reply.tool_calls
        ],
        usage_metadata=usage,
        response_metadata={"model_name": reply.model},
    )
    return LLMResult(
        generations=[[ChatGeneration(message=message)]],
        llm_output={"token_usage": token_usage, "model_name": reply.model},
    )
