"""ScriptedModel: the deterministic model used by tests, demos and replay."""

from __future__ import annotations

import asyncio

import pytest

from thinkgraph.llm import ChatModel, Message, ModelRequest, ScriptedModel, ScriptExhaustedError


def request(turn: int = 0, text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": text}], turn=turn)


def test_list_replies_are_picked_by_the_request_turn_not_by_call_order() -> None:
    model = ScriptedModel(["first", "second", "third"])

    # A run resumed in a new process starts at a later turn with a fresh model object.
    assert model.complete(request(turn=2)).text == "third"
    assert model.complete(request(turn=0)).text == "first"
    assert model.complete(request(turn=1)).text == "second"
    assert model.complete(request(turn=1)).text == "second"


def test_callable_receives_the_messages_and_its_return_is_the_reply() -> None:
    seen: list[list[Message]] = []

    def answer(messages: list[Message]) -> str:
        seen.append(messages)
        return f"echo: {messages[-1]['content']}"

    reply = ScriptedModel(answer).complete(request(turn=7, text="ping"))

    assert reply.text == "echo: ping"
    assert seen == [[{"role": "user", "content": "ping"}]]


def test_callable_that_returns_something_else_than_a_string_is_an_error() -> None:
    model = ScriptedModel(lambda messages: 42)  # type: ignore[arg-type, return-value]

    with pytest.raises(TypeError, match="returned int; return a str"):
        model.complete(request())


def test_exhausted_script_says_how_many_replies_it_has_and_what_to_do() -> None:
    model = ScriptedModel(["only", "two"])

    with pytest.raises(ScriptExhaustedError) as caught:
        model.complete(request(turn=2))

    assert str(caught.value) == (
        "the script has 2 replies and turn 3 asked for another; add replies or use a callable"
    )


def test_a_single_string_is_rejected() -> None:
    with pytest.raises(TypeError, match="a list of replies or a callable, not one string"):
        ScriptedModel("Final Answer: 42")  # type: ignore[arg-type]


def test_reply_is_marked_scripted_with_zero_usage() -> None:
    reply = ScriptedModel(["ok"]).complete(request())

    assert (reply.model, reply.provider) == ("scripted", "scripted")
    assert (reply.prompt_tokens, reply.completion_tokens, reply.cost_usd) == (0, 0, 0.0)
    assert reply.tool_calls == []
    assert reply.fallback is False


def test_name_can_be_set_and_the_model_is_a_chat_model() -> None:
    model = ScriptedModel(["ok"], name="replay")

    assert isinstance(model, ChatModel)
    assert model.name == "replay"
    assert model.complete(request()).model == "replay"
    assert repr(model) == "ScriptedModel(1 replies)"


def test_acomplete_answers_like_complete() -> None:
    model = ScriptedModel(["first", "second"])

    reply = asyncio.run(model.acomplete(request(turn=1)))

    assert reply.text == "second"
