"""Models: the `ChatModel` protocol, `ScriptedModel` for tests and replay, `LiteLLMModel`,
`LangChainModel` (any LangChain chat model).

Importing this package does not import litellm; `LiteLLMModel` imports it when the first
one is built.
"""

from thinkgraph.llm.base import ChatModel, Message, ModelReply, ModelRequest
from thinkgraph.llm.errors import ModelCallError
from thinkgraph.llm.langchain import LangChainModel
from thinkgraph.llm.litellm import LiteLLMModel, as_chat_model
from thinkgraph.llm.replay import ReplayModel
from thinkgraph.llm.scripted import ScriptedModel, ScriptExhaustedError

__all__ = [
    "ChatModel",
    "LangChainModel",
    "LiteLLMModel",
    "Message",
    "ModelCallError",
    "ModelReply",
    "ModelRequest",
    "ReplayModel",
    "ScriptExhaustedError",
    "ScriptedModel",
    "as_chat_model",
]
