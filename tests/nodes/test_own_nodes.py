"""Your own nodes: one public way to call the model, and notes that are not a person's.

A node of yours that asks the model goes through `thinkgraph.nodes.ask_model`, the helper
think and finalize use: the call is an llm_call step stamped with your node's name, it
counts in the budgets and in the turn a `ScriptedModel` replies by, and a failure is a
step, not an exception. What your node writes for itself is a `NoteStep`: shown to the
model as your node's note, never as guidance from a person.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.graph import END, START, StateGraph

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.graphs import parts
from thinkgraph.llm.base import ModelReply, ModelRequest
from thinkgraph.llm.scripted import ScriptExhaustedError
from thinkgraph.nodes import ModelAnswer, ask_model, ask_model_sync
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import JsonPlan, NativeTools, ReActText, StructuredStep
from thinkgraph.state import (
    AgentState,
    Counters,
    ErrorStep,
    HumanStep,
    LLMCallStep,
    NoteStep,
    ObservationStep,
    TaskStep,
)
from thinkgraph.storage import serializer
from thinkgraph.tools import ToolRegistry
from thinkgraph.views import to_markdown, to_text
from thinkgraph.views.html_page import to_html
from thinkgraph.views.json_doc import to_json_dict

Graph = StateGraph[AgentState, Any, AgentState, AgentState]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def reflect(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """A user's node: asks the model what the last observation means, keeps it as a note."""
    seen = [s.text for s in state["chain"] if isinstance(s, ObservationStep)]
    messages = [{"role": "user", "content": f"What does {seen[-1:]} tell you? One line."}]
    answer = await ask_model(state, deps, messages, purpose="reflect")
    notes = [NoteStep(text=answer.text)] if answer.ok else []
    return {"chain": [*answer.steps, *notes], "counters": answer.counters}


def with_reflect(deps: Deps, fn: Any = reflect) -> Graph:
    """think → act → observe → reflect → think: a user's node that calls the model."""
    graph: Graph = StateGraph(AgentState)
    for name in ("think", "observe", "validate", "reset", "finalize"):
        graph.add_node(name, getattr(parts, f"{name}_node")(deps))
    graph.add_node("act", parts.act_node(deps))
    graph.add_node("reflect", parts.node("reflect", fn, deps))
    graph.add_edge(START, "think")
    targets = ["think", "act", "validate", "reset", "finalize"]
    graph.add_conditional_edges("think", parts.think_router(deps), targets)
    graph.add_edge("act", "observe")
    graph.add_conditional_edges(
        "observe", parts.observe_router(deps), {"think": "reflect", "finalize": "finalize"}
    )
    graph.add_edge("reflect", "think")
    graph.add_conditional_edges(
        "validate", parts.validate_router(deps), ["think", "reset", "finalize"]
    )
    graph.add_edge("reset", "think")
    graph.add_edge("finalize", END)
    return graph


def test_a_graph_wired_by_hand_is_drawn_with_the_labels_of_our_routers() -> None:
    # Each router of ours knows its routes: an edge a path map sends elsewhere keeps its label.
    with Agent(ScriptedModel([]), [add], store="memory://", build_graph=with_reflect) as agent:
        diagram = agent.draw("mermaid")
    assert [line.strip() for line in diagram.splitlines() if "->" in line] == [
        "__start__ --> think;",
        'think -.->|"min_steps / retry"| think;',
        'think -.->|"continue"| act;',
        'think -.->|"validate"| validate;',
        'think -.->|"reset"| reset;',
        'think -.->|"abort / budget / max_steps"| finalize;',
        'observe -.->|"next"| reflect;',
        'observe -.->|"abort / budget"| finalize;',
        'validate -.->|"failed"| think;',
        'validate -.->|"reset"| reset;',
        'validate -.->|"passed / abort / budget / max_steps"| finalize;',
        "reset --> think;",
        "finalize --> __end__;",
        "act --> observe;",
        "reflect --> think;",
    ]


SCRIPT = [
    'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 40}',
    "the sum is 42",  # reflect's call: turn 1
    'Thought: again\nAction: add\nAction Input: {"a": 1, "b": 1}',
    "two is small",  # reflect's call: turn 3
    "Thought: done\nFinal Answer: 42",
]


def test_a_user_nodes_model_calls_are_chain_steps_counted_like_thinks(
    sqlite_url: str, thread_id: str
) -> None:
    with Agent(ScriptedModel(SCRIPT), [add], build_graph=with_reflect, store=sqlite_url) as agent:
        result = agent.run("add", thread_id=thread_id)
    assert result.status == "done" and result.answer == "42"
    calls = [s for s in result.chain if isinstance(s, LLMCallStep)]
    # What `show` counts is what the budgets counted: five calls, two of them reflect's.
    assert len(calls) == result.counters.model_calls == 5
    assert to_json_dict(result)["totals"]["model_calls"] == 5
    assert [(c.node, c.purpose) for c in calls if c.node == "reflect"] == [
        ("reflect", "reflect"),
        ("reflect", "reflect"),
    ]
    # The scripted turn was kept: each call got the reply meant for it.
    assert [c.text for c in calls if c.node == "reflect"] == ["the sum is 42", "two is small"]
    notes = [s for s in result.chain if isinstance(s, NoteStep)]
    assert [(n.node, n.text) for n in notes] == [
        ("reflect", "the sum is 42"),
        ("reflect", "two is small"),
    ]


def test_a_plain_def_node_asks_the_model_the_same_way(sqlite_url: str, thread_id: str) -> None:
    def reflect_sync(state: AgentState, *, deps: Deps) -> dict[str, Any]:
        answer = ask_model_sync(state, deps, [{"role": "user", "content": "?"}], purpose="reflect")
        return {"chain": [*answer.steps, NoteStep(text=answer.text)], "counters": answer.counters}

    def build(deps: Deps) -> Graph:
        return with_reflect(deps, reflect_sync)

    with Agent(ScriptedModel(SCRIPT), [add], build_graph=build, store=sqlite_url) as agent:
        result = agent.run("add", thread_id=thread_id)
    assert result.status == "done" and result.counters.model_calls == 5
    reflected = [
        (s.type, s.node, getattr(s, "text", "")) for s in result.chain if s.node == "reflect"
    ]
    assert reflected[:2] == [
        ("llm_call", "reflect", "the sum is 42"),
        ("note", "reflect", "the sum is 42"),
    ]


def test_a_failed_model_call_in_a_users_node_is_a_step_not_an_exception() -> None:
    # One reply in the script: the node's second call finds it exhausted and raises.
    deps = Deps(model=ScriptedModel(SCRIPT[:1]), policy=ReActText(), tools=ToolRegistry([add]))
    state: AgentState = {"chain": [TaskStep(text="t")], "counters": Counters()}

    async def ask_twice() -> tuple[ModelAnswer, ModelAnswer]:
        first = await ask_model(state, deps, [{"role": "user", "content": "a"}], purpose="x")
        again = [{"role": "user", "content": "b"}]
        return first, await ask_model(state, deps, again, purpose="x", counters=first.counters)

    first, second = asyncio.run(ask_twice())
    assert first.ok and not second.ok and second.reply is None and second.text == ""
    assert isinstance(second.error, ScriptExhaustedError)
    failed, error = second.steps
    assert isinstance(failed, LLMCallStep) and "ScriptExhausted" in (failed.error or "")
    assert isinstance(error, ErrorStep) and error.kind == "model" and error.message == failed.error
    assert not second.fatal
    # A failed call counts too: it is the turn the next call must skip.
    assert second.counters.model_calls == 2


def test_ask_model_counts_tokens_and_cost_in_the_budgets() -> None:
    class Priced:
        name = "priced"

        def complete(self, request: ModelRequest) -> ModelReply:
            return ModelReply(text="ok", model="priced", prompt_tokens=7, completion_tokens=3,
                              cost_usd=0.25)  # fmt: skip

    deps = Deps(model=Priced(), policy=ReActText(), tools=ToolRegistry([add]))
    counters = Counters(model_calls=4, prompt_tokens=1, cost_usd=0.5)
    state: AgentState = {"chain": [TaskStep(text="t")], "counters": counters}
    answer: ModelAnswer = asyncio.run(ask_model(state, deps, [], purpose="plan"))
    assert answer.counters.model_calls == 5
    assert answer.counters.tokens == 11 and answer.counters.cost_usd == 0.75
    assert answer.call.prompt_tokens == 7 and answer.call.purpose == "plan"


# -- notes ---------------------------------------------------------------------------------


def test_a_note_is_shown_to_the_model_as_the_nodes_note_not_a_persons_guidance() -> None:
    chain = [TaskStep(text="add"), NoteStep(node="reflect", text="check the units")]
    for policy in (ReActText(), NativeTools(), JsonPlan(), StructuredStep()):
        shown = "\n".join(str(m.get("content")) for m in policy.to_messages(chain, []))
        assert "Note from reflect: check the units" in shown, type(policy).__name__
        assert "Guidance from a person" not in shown, type(policy).__name__
    # A person's guidance is still worded as a person's.
    guided = [TaskStep(text="add"), HumanStep(kind="guidance", text="be brief")]
    shown = "\n".join(str(m.get("content")) for m in ReActText().to_messages(guided, []))
    assert "Guidance from a person: be brief" in shown


def test_a_note_round_trips_through_the_checkpoint_serializer() -> None:
    serde = serializer()
    note = NoteStep(node="reflect", text="check the units")
    assert serde.loads_typed(serde.dumps_typed(note)) == note
    assert serde.loads_typed(serde.dumps_typed([note])) == [note]


def test_every_view_shows_a_note_as_a_note(sqlite_url: str, thread_id: str) -> None:
    with Agent(ScriptedModel(SCRIPT), [add], build_graph=with_reflect, store=sqlite_url) as agent:
        result = agent.run("add", thread_id=thread_id)
    assert "note        the sum is 42" in to_text(result.chain)
    assert "note** · `the sum is 42`" in to_markdown(result)
    assert 'class="step t-note"' in to_html(result)
    notes = [s for s in to_json_dict(result)["steps"] if s["type"] == "note"]
    assert next((n["node"], n["text"]) for n in notes) == ("reflect", "the sum is 42")


def test_a_node_that_cannot_take_deps_by_keyword_is_refused_when_built() -> None:
    from thinkgraph.errors import GraphConfigError

    def misspelt(state: AgentState, *, dep: Deps) -> dict[str, Any]:
        return {}

    def no_state(*, deps: Deps) -> dict[str, Any]:
        return {}

    deps = Agent(ScriptedModel([])).deps
    for fn in (misspelt, no_state):
        try:
            parts.node("mine", fn, deps)
        except GraphConfigError as exc:
            message = str(exc)
        else:
            raise AssertionError(f"{fn.__name__} was accepted")
        assert "\n" not in message and "node 'mine'" in message
        assert "declare it as def" in message and "(state, *, deps)" in message

    # deps by keyword, whatever else the node declares; or no deps at all.
    def with_more(state: AgentState, extra: int = 1, **rest: Any) -> dict[str, Any]:
        return {}

    def plain(state: AgentState) -> dict[str, Any]:
        return {}

    parts.node("mine", with_more, deps)
    parts.node("mine", reflect, deps)
    parts.node("mine", plain)
    try:
        parts.node("mine", plain, deps)
    except GraphConfigError as exc:
        assert "cannot be called as (state, *, deps)" in str(exc)
    else:
        raise AssertionError("a node without deps was given deps")


def test_a_route_into_finalize_without_an_answer_fails_the_run_naming_the_node() -> None:
    def judge(state: AgentState) -> dict[str, Any]:
        return {"chain": [NoteStep(text="no verdict")]}

    def build(deps: Deps) -> Graph:
        graph: Graph = StateGraph(AgentState)
        graph.add_node("judge", parts.node("judge", judge))
        graph.add_node("finalize", parts.finalize_node(deps))
        graph.add_edge(START, "judge")
        graph.add_edge("judge", "finalize")
        graph.add_edge("finalize", END)
        return graph

    with Agent(ScriptedModel([]), build_graph=build, store="memory://") as agent:
        result = agent.run("decide", thread_id="j1")
        assert (result.status, result.stop_reason) == ("failed", "no_answer")
        assert "node 'judge' routed to finalize with no answer" in result.detail
        assert "\n" not in result.detail
        # It is finished, not left to crash again on resume.
        assert agent.resume("j1").status == "failed"


# -- the counters are the engine's ---------------------------------------------------------


def test_a_node_that_forgets_the_counters_cannot_make_a_reply_serve_twice(
    sqlite_url: str, thread_id: str
) -> None:
    async def forgetful(state: AgentState, *, deps: Deps) -> dict[str, Any]:
        answer = await ask_model(state, deps, [{"role": "user", "content": "?"}], purpose="x")
        return {"chain": [*answer.steps, NoteStep(text=answer.text)]}  # no "counters"

    def build(deps: Deps) -> Graph:
        return with_reflect(deps, forgetful)

    with Agent(ScriptedModel(SCRIPT), [add], build_graph=build, store=sqlite_url) as agent:
        result = agent.run("add", thread_id=thread_id)
    calls = [s for s in result.chain if isinstance(s, LLMCallStep)]
    assert result.status == "done" and result.answer == "42"
    # Every call counted once, each got the reply meant for it.
    assert result.counters.model_calls == len(calls) == 5
    assert [c.text for c in calls if c.node == "reflect"] == ["the sum is 42", "two is small"]


def test_answer_update_is_the_whole_update_after_a_model_call() -> None:
    deps = Deps(model=ScriptedModel(["hi"]), policy=ReActText(), tools=ToolRegistry([add]))
    state: AgentState = {"chain": [TaskStep(text="t")], "counters": Counters()}
    answer = asyncio.run(ask_model(state, deps, [], purpose="x"))
    note = NoteStep(text="mine")
    update = answer.update(chain=[note], candidate="c")
    assert update == {"chain": [*answer.steps, note], "candidate": "c"}


def test_a_failing_model_in_a_users_retry_loop_trips_the_failures_guard() -> None:
    from thinkgraph import StepLimits
    from thinkgraph.graphs import react_graph

    async def ask(state: AgentState, *, deps: Deps) -> dict[str, Any]:
        answer = await ask_model(state, deps, [{"role": "user", "content": "?"}], purpose="ask")
        return answer.update()

    def again(state: AgentState) -> str:
        last = state["chain"][-1]
        return "retry" if isinstance(last, ErrorStep) else "done"

    def build(deps: Deps) -> Graph:
        graph = react_graph(deps)
        graph.add_node("ask", ask)
        graph.set_entry("ask")
        graph.add_routes("ask", again, {"retry": "ask", "done": "think"})
        return graph.build()

    limits = StepLimits(max_consecutive_failures=3)
    # The script is empty: every call fails, and the loop goes round until the guard trips.
    with Agent(ScriptedModel([]), build_graph=build, limits=limits, store="memory://") as agent:
        result = agent.run("go", thread_id="f1")
    assert (result.status, result.stop_reason) == ("failed", "consecutive_failures")
    assert result.counters.consecutive_failures == 3
    assert sum(isinstance(s, ErrorStep) and s.kind == "model" for s in result.chain) == 3


def test_nodes_that_ask_the_model_in_parallel_count_every_call() -> None:
    """A debate's two sides run in one step, each asking the model: both calls count."""
    from thinkgraph.graphs import react_graph

    def side(name: str) -> Any:
        async def argue(state: AgentState, *, deps: Deps) -> dict[str, Any]:
            messages = [{"role": "user", "content": f"argue {name}"}]
            answer = await ask_model(state, deps, messages, purpose=name)
            return answer.update(chain=[NoteStep(text=answer.text)])

        return argue

    def build(deps: Deps) -> Graph:
        graph = react_graph(deps)
        graph.add_node("split", lambda state: {})
        graph.add_node("pro", side("pro"))
        graph.add_node("con", side("con"))
        graph.set_entry("split")
        for name in ("pro", "con"):
            graph.add_edge("split", name)
            graph.add_edge(name, "think")
        return graph.build()

    def reply(messages: list[dict[str, Any]]) -> str:
        asked = str(messages[-1]["content"])
        if asked.startswith("argue "):
            return f"for {asked.removeprefix('argue ')}"
        return "Thought: both heard\nFinal Answer: a draw"

    with Agent(ScriptedModel(reply), build_graph=build, store="memory://") as agent:
        result = agent.run("debate", thread_id="d1")
    assert (result.status, result.answer) == ("done", "a draw")
    calls = [s for s in result.chain if isinstance(s, LLMCallStep)]
    assert sorted((c.node, c.text) for c in calls if c.node != "think") == [
        ("con", "for con"),
        ("pro", "for pro"),
    ]
    # Both sides' calls (and think's) are in the counters the budgets read.
    assert result.counters.model_calls == len(calls) == 3
