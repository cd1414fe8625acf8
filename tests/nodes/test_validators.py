"""Validators: a pydantic output schema and an LLM critic, in runs through litellm."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, ScriptedModel
from thinkgraph.llm import LiteLLMModel
from thinkgraph.nodes.validators import llm_critic, output_schema, parse_critique
from thinkgraph.state import LLMCallStep, ResetStep, ValidationStep


class Invoice(BaseModel):
    number: str
    total: float


INVOICE = '{"number": "A-7", "total": 42.5}'


def final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def answers(*replies: str) -> ScriptedModel:
    """The agent's model, answering in turn whatever other model calls the run made.

    A list script is indexed by the run's model-call count, which counts the critic's
    calls too; here the critic is another model, so the agent's replies go by its own turns.
    """
    left = list(replies)
    return ScriptedModel(lambda messages: left.pop(0))


def loopback(server: OpenAIServer) -> LiteLLMModel:
    return LiteLLMModel("openai/test-model", api_base=server.url + "/v1", api_key="sk-test")


# -- output_schema --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [INVOICE, f"```json\n{INVOICE}\n```", f"Here it is: {INVOICE}. Anything else?"],
    ids=["bare", "fenced", "in prose"],
)
def test_an_answer_that_fits_the_schema_passes_and_keeps_the_parsed_json(answer: str) -> None:
    verdict = output_schema(Invoice)(answer, {})
    assert verdict.passed and verdict.validator == "output_schema(Invoice)"
    assert verdict.output == {"number": "A-7", "total": 42.5}


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("The total is 42.5", "must be one JSON object"),
        ('{"number": "A-7"}', "'total' is missing"),
        ('{"number": "A-7", "total": "lots"}', "'total'"),
    ],
)
def test_an_answer_that_does_not_fit_fails_with_the_problem_and_the_schema(
    answer: str, says: str
) -> None:
    verdict = output_schema(Invoice)(answer, {})
    assert not verdict.passed and verdict.output is None
    assert says in verdict.reason and '"total"' in verdict.reason.replace("'", '"')


def test_output_schema_refuses_what_is_not_a_pydantic_model() -> None:
    with pytest.raises(TypeError, match="pydantic model"):
        output_schema(dict)  # type: ignore[type-var]


def test_run_result_output_is_the_model_instance_and_survives_a_new_agent(
    sqlite_url: str,
) -> None:
    model = ScriptedModel([final("not json"), final(f"```json\n{INVOICE}\n```")])
    with Agent(model, validators=[output_schema(Invoice)], store=sqlite_url) as agent:
        result = agent.run("extract", thread_id="inv")
    assert [s.passed for s in result.chain if isinstance(s, ValidationStep)] == [False, True]
    assert result.output == Invoice(number="A-7", total=42.5)

    with Agent(ScriptedModel([]), validators=[output_schema(Invoice)], store=sqlite_url) as again:
        assert again.result("inv").output == Invoice(number="A-7", total=42.5)
    with Agent(ScriptedModel([]), store=sqlite_url) as plain:
        assert plain.result("inv").output == {"number": "A-7", "total": 42.5}


def test_a_run_without_an_output_schema_has_no_output() -> None:
    assert Agent(ScriptedModel([final("7")]), store="memory://").run("x").output is None


# -- llm_critic -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "passed", "reset", "reason"),
    [
        ("PASS", True, False, ""),
        ("**PASS** - looks right", True, False, "looks right"),
        ("FAIL: the total is 41", False, False, "the total is 41"),
        ("<think>hmm</think>\nRESET: wrong table", False, True, "wrong table"),
        ("Verdict:\nfail - units missing", False, False, "units missing"),
    ],
)
def test_a_critique_is_read_from_its_first_verdict_line(
    reply: str, passed: bool, reset: bool, reason: str
) -> None:
    verdict = parse_critique(reply)
    assert (verdict.passed, verdict.reset, verdict.reason) == (passed, reset, reason)


def test_an_unreadable_critique_fails_and_says_so() -> None:
    verdict = parse_critique("I am not sure.")
    assert not verdict.passed and "could not be read" in verdict.reason


def test_the_critic_uses_the_agents_model_and_its_call_is_a_costed_step(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_text(final("41"), prompt_tokens=10, completion_tokens=5)
    openai_server.reply_text("FAIL: 2 + 40 is 42", prompt_tokens=20, completion_tokens=4)
    openai_server.reply_text(final("42"), prompt_tokens=10, completion_tokens=5)
    openai_server.reply_text("PASS", prompt_tokens=20, completion_tokens=1)
    agent = Agent(loopback(openai_server), validators=[llm_critic()], store="memory://")

    result = agent.run("What is 2 + 40?")

    assert (result.status, result.answer) == ("done", "42")
    critics = [s for s in result.chain if isinstance(s, LLMCallStep) and s.purpose == "critic"]
    assert [c.text for c in critics] == ["FAIL: 2 + 40 is 42", "PASS"]
    assert critics[0].model == "openai/test-model" and critics[0].prompt_tokens == 20
    assert result.counters.model_calls == 4
    assert (result.counters.prompt_tokens, result.counters.completion_tokens) == (60, 15)
    critic_request = openai_server.bodies[1]
    assert critic_request is not None
    prompt = critic_request["messages"][1]["content"]
    assert "Task: What is 2 + 40?" in prompt and "The agent's answer: 41" in prompt
    revise = openai_server.bodies[2]
    assert revise is not None and "2 + 40 is 42" in revise["messages"][-1]["content"]


def test_a_critic_can_ask_for_a_reset_and_can_have_its_own_model(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_text("RESET: you misread the task")
    openai_server.reply_text("PASS")
    agent = Agent(
        answers(final("a"), final("b")),
        validators=[llm_critic(loopback(openai_server))],
        store="memory://",
    )

    result = agent.run("x")

    assert result.answer == "b"
    (reset,) = [s for s in result.chain if isinstance(s, ResetStep)]
    assert "you misread the task" in reset.lesson
    assert result.counters.cost_known is False  # the loopback model has no known price


def test_a_critic_whose_call_fails_rejects_the_answer_and_records_the_error(
    openai_server: OpenAIServer,
) -> None:
    openai_server.unauthorized()
    openai_server.reply_text("PASS")
    critic = llm_critic(loopback(openai_server))
    agent = Agent(answers(final("a"), final("b")), validators=[critic], store="memory://")

    result = agent.run("x")

    failed = [s for s in result.chain if isinstance(s, LLMCallStep) and s.error]
    assert len(failed) == 1 and failed[0].purpose == "critic" and "401" in (failed[0].error or "")
    assert result.answer == "b"
