"""`llm_tool`: a language model as a tool, e.g. a cheap model for summaries or a strong
one for a hard sub-question.

The tool returns the model's text; that is all the calling model sees. What the call cost
(model, tokens, USD) is recorded in the `tool_result` step's `usage` and added to the
run's counters by observe, so `max_tokens` and `max_cost_usd` count it like the agent's
own model calls.
"""

from __future__ import annotations

from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.llm.base import ChatModel, Message, ModelReply, ModelRequest
from thinkgraph.llm.call import acomplete
from thinkgraph.llm.litellm import as_chat_model
from thinkgraph.tools.base import Tool, ToolContext, ToolKind
from thinkgraph.tools.output import ToolOutput, ToolUsage

__all__ = ["LLMTool", "llm_tool"]


class _LLMArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="what to ask the model; include everything it needs")
    system: str | None = Field(None, description="optional instructions for the model")


class LLMTool(Tool):
    """Asks a model one question and returns its text; made by `llm_tool`."""

    args_model = _LLMArgs
    kind: ToolKind = "llm"
    returns = "the model's reply, as text"

    def __init__(
        self,
        model: ChatModel,
        *,
        name: str,
        description: str | None,
        system: str | None,
        timeout_s: float | None,
        retries: int,
    ) -> None:
        self.model = model
        self.name = name
        self.description = description or (
            f"Ask the language model {model.name} a question and get its reply as text. "
            "It sees only what you send: put all the context it needs in the prompt."
        )
        self.system = system
        self.timeout_s = timeout_s
        self.retries = retries
        self.check_definition()

    def single_str_param(self) -> str | None:
        # `system` is optional, so bare text from the model is the prompt.
        return "prompt"

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        return self._output(self.model.complete(self._request(cast(_LLMArgs, args))))

    async def arun(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        return self._output(await acomplete(self.model, self._request(cast(_LLMArgs, args))))

    def _request(self, args: _LLMArgs) -> ModelRequest:
        messages: list[Message] = []
        system = args.system or self.system
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": args.prompt})
        return ModelRequest(messages=messages, purpose="tool")

    def _output(self, reply: ModelReply) -> ToolOutput:
        usage: ToolUsage = {
            "model": reply.model or self.model.name,
            "prompt_tokens": reply.prompt_tokens or 0,
            "completion_tokens": reply.completion_tokens or 0,
            "cost_usd": reply.cost_usd,
            "model_calls": 1,
        }
        return ToolOutput(reply.text, usage=usage)


def llm_tool(
    model: str | ChatModel,
    *,
    name: str = "llm",
    description: str | None = None,
    system: str | None = None,
    timeout_s: float | None = 120.0,
    retries: int = 0,
) -> LLMTool:
    """A tool that asks `model` a question and returns its text reply.

    Example:
        >>> from thinkgraph import ScriptedModel
        >>> summarize = llm_tool(ScriptedModel(["short"]), name="summarize")
        >>> summarize.kind, summarize.single_str_param()
        ('llm', 'prompt')

    Args:
        model: a `ChatModel` or a litellm model string such as "openai/gpt-4o-mini".
        name: the tool's name, to tell several model tools apart.
        description: what the tool is for; by default a generic one naming the model.
        system: instructions sent with every call, unless the call brings its own.
        timeout_s: give up waiting after this many seconds.
        retries: extra attempts after the model call raised.

    Raises:
        ModelConfigError: a model string litellm does not know.
        ToolDefinitionError: a bad name or limit.
    """
    return LLMTool(
        as_chat_model(model),
        name=name,
        description=description,
        system=system,
        timeout_s=timeout_s,
        retries=retries,
    )
