"""LiteLLMModel against a real OpenAI-compatible server on loopback, through real litellm."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from thinkgraph.errors import ModelConfigError
from thinkgraph.llm import (
    ChatModel,
    LiteLLMModel,
    ModelCallError,
    ModelRequest,
    ScriptedModel,
    as_chat_model,
)

# The `openai_server` fixture; harmless once tests/conftest.py loads the same plugin.
pytest_plugins = ["tests.support.fixtures"]

MESSAGES = [
    {"role": "system", "content": "Answer in one word."},
    {"role": "user", "content": "Capital of France?"},
]
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def model_on(server: OpenAIServer, name: str = "openai/test-model", **kwargs: Any) -> LiteLLMModel:
    """A model whose requests go to the loopback server."""
    return LiteLLMModel(name, api_base=server.url + "/v1", api_key="sk-test", **kwargs)


def ask(model: LiteLLMModel, **kwargs: Any) -> Any:
    return model.complete(ModelRequest(messages=MESSAGES, **kwargs))


# -- replies ---------------------------------------------------------------------------------


def test_text_reply_carries_text_tokens_model_and_provider(openai_server: OpenAIServer) -> None:
    openai_server.reply_text("Paris", prompt_tokens=21, completion_tokens=2)

    reply = ask(model_on(openai_server))

    assert reply.text == "Paris"
    assert reply.tool_calls == []
    assert (reply.prompt_tokens, reply.completion_tokens) == (21, 2)
    assert reply.model == "openai/test-model"
    assert reply.provider == "openai"
    assert reply.fallback is False
    assert reply.latency_s > 0


def test_messages_tools_and_settings_sent_reach_the_server(openai_server: OpenAIServer) -> None:
    openai_server.reply_text("Paris")

    ask(model_on(openai_server, temperature=0.2, max_tokens=5), tools=[SEARCH_TOOL])

    (request,) = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body is not None
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == MESSAGES
    assert request.body["tools"] == [SEARCH_TOOL]
    assert request.body["temperature"] == 0.2
    assert request.body["max_tokens"] == 5


def test_no_tools_key_is_sent_when_the_request_has_no_tools(openai_server: OpenAIServer) -> None:
    openai_server.reply_text("Paris")

    ask(model_on(openai_server), tools=[])

    body = openai_server.bodies[0]
    assert body is not None
    assert "tools" not in body
    assert "temperature" not in body


def test_tool_call_reply_becomes_tool_calls_with_parsed_args_and_ids(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_tool_calls(
        ("search", {"query": "capital of France"}, "call_abc"),
        ("search", {"query": "population of Paris"}, "call_def"),
    )

    reply = ask(model_on(openai_server), tools=[SEARCH_TOOL])

    assert reply.text == ""
    assert [(c.name, c.args, c.raw_args, c.id) for c in reply.tool_calls] == [
        ("search", {"query": "capital of France"}, None, "call_abc"),
        ("search", {"query": "population of Paris"}, None, "call_def"),
    ]


@pytest.mark.parametrize("arguments", ["capital of France", '{"query": ', "[1, 2]", '"a string"'])
def test_tool_call_arguments_that_are_not_a_json_object_are_kept_in_raw_args(
    openai_server: OpenAIServer, arguments: str
) -> None:
    openai_server.reply_tool_calls(("search", arguments, "call_1"))

    (call,) = ask(model_on(openai_server), tools=[SEARCH_TOOL]).tool_calls

    assert call.args is None
    assert call.raw_args == arguments
    assert call.id == "call_1"


def test_tool_call_with_empty_arguments_is_a_call_without_arguments(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_tool_calls(("now", "", "call_1"))

    (call,) = ask(model_on(openai_server)).tool_calls

    assert (call.name, call.args, call.raw_args) == ("now", {}, None)


def test_text_alongside_tool_calls_is_kept(openai_server: OpenAIServer) -> None:
    openai_server.reply_tool_calls(("search", {"query": "x"}), text="Let me look that up.")

    reply = ask(model_on(openai_server), tools=[SEARCH_TOOL])

    assert reply.text == "Let me look that up."
    assert [c.name for c in reply.tool_calls] == ["search"]


# -- cost --------------------------------------------------------------------------------------


def test_cost_of_a_model_missing_from_the_cost_map_is_none_not_zero(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_text("Paris")

    reply = ask(model_on(openai_server, "openai/test-model"))

    assert reply.cost_usd is None


def test_cost_of_a_known_model_comes_from_litellms_cost_map(openai_server: OpenAIServer) -> None:
    from thinkgraph.llm.litellm import _litellm  # the same litellm, loaded the same way

    openai_server.reply_text("Paris", prompt_tokens=1000, completion_tokens=100)

    reply = ask(model_on(openai_server, "openai/gpt-4o-mini"))

    prices = _litellm().model_cost["gpt-4o-mini"]
    expected = 1000 * prices["input_cost_per_token"] + 100 * prices["output_cost_per_token"]
    assert reply.cost_usd is not None
    assert reply.cost_usd > 0
    assert reply.cost_usd == pytest.approx(expected)


# -- retries and fallbacks ---------------------------------------------------------------------


def test_rate_limit_is_retried_and_then_answered(openai_server: OpenAIServer) -> None:
    openai_server.rate_limit(retry_after_s=0)
    openai_server.reply_text("Paris")

    reply = ask(model_on(openai_server, num_retries=2))

    assert reply.text == "Paris"
    assert len(openai_server.requests) == 2


def test_retries_stop_after_num_retries(openai_server: OpenAIServer) -> None:
    for _ in range(3):
        openai_server.rate_limit(retry_after_s=0)

    with pytest.raises(ModelCallError) as caught:
        ask(model_on(openai_server, num_retries=1))

    assert caught.value.status_code == 429
    assert caught.value.retryable is True
    assert len(openai_server.requests) == 2
    assert openai_server.pending == 1


def test_authentication_error_is_not_retried_and_says_what_to_check(
    openai_server: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    openai_server.unauthorized()
    openai_server.unauthorized()

    with pytest.raises(ModelCallError) as caught:
        ask(model_on(openai_server, num_retries=2))

    error = caught.value
    assert error.status_code == 401
    assert error.retryable is False
    assert (error.model, error.provider) == ("openai/test-model", "openai")
    assert str(error).startswith("openai/test-model: 401 authentication failed")
    assert "api_key=" in str(error)
    assert len(openai_server.requests) == 1
    assert capsys.readouterr().out == ""  # litellm's help banners are silenced


def test_authentication_error_names_the_environment_variable_when_no_key_was_passed(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    openai_server.unauthorized()
    model = LiteLLMModel("openai/test-model", api_base=openai_server.url + "/v1", num_retries=0)

    with pytest.raises(ModelCallError, match="check OPENAI_API_KEY or pass api_key="):
        ask(model)

    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_server_error_from_primary_falls_back_to_the_next_model(
    openai_server: OpenAIServer,
) -> None:
    openai_server.server_error()
    openai_server.reply_text("Paris")
    model = model_on(openai_server, num_retries=0, fallbacks=["openai/fallback-model"])

    reply = ask(model)

    assert reply.text == "Paris"
    assert reply.fallback is True
    assert reply.model == "openai/fallback-model"
    assert reply.provider == "openai"
    assert [b["model"] for b in openai_server.bodies if b] == ["test-model", "fallback-model"]
    assert model.name == "openai/test-model"


def test_primary_uses_its_retries_before_falling_back(openai_server: OpenAIServer) -> None:
    openai_server.rate_limit()
    openai_server.rate_limit()
    openai_server.reply_text("Paris")
    model = model_on(openai_server, num_retries=1, fallbacks=["openai/fallback-model"])

    reply = ask(model)

    assert reply.model == "openai/fallback-model"
    assert [b["model"] for b in openai_server.bodies if b] == [
        "test-model",
        "test-model",
        "fallback-model",
    ]


def test_when_every_model_fails_the_error_lists_each_failure(
    openai_server: OpenAIServer,
) -> None:
    openai_server.unauthorized()
    openai_server.server_error()
    model = model_on(openai_server, num_retries=0, fallbacks=["openai/fallback-model"])

    with pytest.raises(ModelCallError) as caught:
        ask(model)

    message = str(caught.value)
    assert message.startswith("all 2 models failed: ")
    assert "openai/test-model: 401 authentication failed" in message
    assert "openai/fallback-model: 500 provider error" in message
    assert (caught.value.model, caught.value.status_code) == ("openai/fallback-model", 500)


def test_fallback_on_another_provider_does_not_get_the_primarys_key_or_server(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fallback finds its own server and key in its provider's variables, as a user's
    # would; here they point at the loopback server, which records what it was sent.
    monkeypatch.setenv("ANTHROPIC_API_BASE", openai_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    openai_server.server_error()
    model = model_on(openai_server, num_retries=0, fallbacks=["anthropic/claude-3-5-haiku-latest"])

    with pytest.raises(ModelCallError, match="anthropic/claude-3-5-haiku-latest"):
        ask(model)

    primary, fallback = openai_server.requests
    assert primary.headers["authorization"] == "Bearer sk-test"
    assert fallback.path == "/v1/messages"
    assert fallback.headers["x-api-key"] == "sk-ant-from-env"
    assert "sk-test" not in str(fallback.headers)


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.timeout(20)
def test_a_hung_server_raises_a_timeout_error(openai_server: OpenAIServer) -> None:
    # The server answers only after 10 s, and then with a 504, so only the client's own
    # timeout can produce this error.
    openai_server.hang(seconds=10)

    with pytest.raises(ModelCallError) as caught:
        ask(model_on(openai_server, timeout=0.5, num_retries=0))

    assert caught.value.status_code == 408
    assert caught.value.retryable is True
    assert "timed out after 0.5s" in str(caught.value)


def test_a_body_that_is_not_json_raises_a_model_call_error(openai_server: OpenAIServer) -> None:
    openai_server.invalid_json()

    with pytest.raises(ModelCallError) as caught:
        ask(model_on(openai_server, num_retries=0))

    assert str(caught.value) == (
        "openai/test-model: invalid response body: the provider sent something that is not "
        "JSON [Expecting value: line 1 column 40 (char 39)]"
    )
    assert caught.value.status_code is None
    assert caught.value.__cause__ is not None


def test_a_server_that_is_not_there_raises_a_connection_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = LiteLLMModel(
        "openai/test-model",
        api_base=f"http://127.0.0.1:{port}/v1",
        api_key="sk-test",
        num_retries=0,
    )

    with pytest.raises(ModelCallError) as caught:
        ask(model)

    assert str(caught.value).startswith(
        f"openai/test-model: could not connect to http://127.0.0.1:{port}/v1"
    )
    assert caught.value.retryable is True


def test_empty_choices_raise_a_model_call_error(openai_server: OpenAIServer) -> None:
    openai_server.empty_choices()

    with pytest.raises(ModelCallError, match="no choices"):
        ask(model_on(openai_server, num_retries=0))


def test_empty_choices_from_primary_falls_back(openai_server: OpenAIServer) -> None:
    openai_server.empty_choices()
    openai_server.reply_text("Paris")
    model = model_on(openai_server, num_retries=2, fallbacks=["openai/fallback-model"])

    reply = ask(model)

    assert (reply.text, reply.fallback) == ("Paris", True)
    assert len(openai_server.requests) == 2  # an empty reply is not retried on the same model


# -- async -------------------------------------------------------------------------------------


def test_acomplete_answers_and_retries_like_complete(openai_server: OpenAIServer) -> None:
    openai_server.rate_limit()
    openai_server.reply_tool_calls(("search", {"query": "Paris"}, "call_1"))
    model = model_on(openai_server, num_retries=1)

    reply = asyncio.run(model.acomplete(ModelRequest(messages=MESSAGES, tools=[SEARCH_TOOL])))

    assert [(c.name, c.args, c.id) for c in reply.tool_calls] == [
        ("search", {"query": "Paris"}, "call_1")
    ]
    assert (reply.prompt_tokens, reply.completion_tokens) == (13, 9)
    assert len(openai_server.requests) == 2


def test_acomplete_falls_back_and_raises_like_complete(openai_server: OpenAIServer) -> None:
    openai_server.server_error()
    openai_server.reply_text("Paris")
    openai_server.unauthorized()
    model = model_on(openai_server, num_retries=0, fallbacks=["openai/fallback-model"])
    request = ModelRequest(messages=MESSAGES)

    reply = asyncio.run(model.acomplete(request))
    assert (reply.model, reply.fallback) == ("openai/fallback-model", True)

    single = model_on(openai_server, num_retries=0)
    with pytest.raises(ModelCallError, match="401 authentication failed"):
        asyncio.run(single.acomplete(request))


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt5x", "nosuchprovider/model", "openai/", ""])
def test_unknown_model_string_is_rejected_when_built(name: str) -> None:
    with pytest.raises(ModelConfigError) as caught:
        LiteLLMModel(name)

    assert str(caught.value) == (
        f"unknown model {name!r}: use a litellm model string like 'openai/gpt-4o-mini' "
        "(see litellm's providers list)"
    )


def test_unknown_fallback_is_rejected_when_built() -> None:
    with pytest.raises(ModelConfigError, match="unknown fallback model 'gpt5x'"):
        LiteLLMModel("openai/gpt-4o-mini", fallbacks=["gpt5x"])


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"fallbacks": "openai/gpt-4o"}, "pass a list"),
        ({"num_retries": -1}, "use 0 for no retries"),
        ({"timeout": 0}, "positive number of seconds"),
        ({"stream": True}, "does not stream"),
        ({"max_retries": 3}, "use num_retries="),
    ],
)
def test_settings_that_cannot_work_are_rejected_when_built(
    kwargs: dict[str, Any], fix: str
) -> None:
    with pytest.raises(ModelConfigError, match=fix):
        LiteLLMModel("openai/gpt-4o-mini", **kwargs)


def test_name_is_the_model_string_and_repr_hides_the_key() -> None:
    model = LiteLLMModel("openai/gpt-4o-mini", api_key="sk-secret", fallbacks=["openai/gpt-4o"])

    assert isinstance(model, ChatModel)
    assert model.name == "openai/gpt-4o-mini"
    assert model.fallbacks == ("openai/gpt-4o",)
    assert repr(model) == "LiteLLMModel('openai/gpt-4o-mini', fallbacks=['openai/gpt-4o'])"


def test_as_chat_model_builds_a_litellm_model_from_a_string_and_passes_models_through() -> None:
    scripted = ScriptedModel(["hi"])

    built = as_chat_model("openai/gpt-4o-mini")

    assert isinstance(built, LiteLLMModel)
    assert built.name == "openai/gpt-4o-mini"
    assert as_chat_model(scripted) is scripted
    with pytest.raises(TypeError, match="litellm model string"):
        as_chat_model(42)  # type: ignore[arg-type]
    with pytest.raises(ModelConfigError, match="unknown model"):
        as_chat_model("gpt5x")


def test_importing_thinkgraph_llm_does_not_import_litellm() -> None:
    # litellm takes seconds to import; the CLI and scripted runs must not pay for it.
    code = "import sys, thinkgraph.llm; print('litellm' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"
