"""The route table: one declaration of each node's routes feeds the routers, the path map,
the build-time check, the diagram's labels and the run overlay."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.errors import GraphConfigError
from thinkgraph.graphs import REACT_ROUTES, Route, build_react_graph, react_graph, routes
from thinkgraph.graphs.shape import router_of
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import ReActText
from thinkgraph.state import AgentState, Counters, ValidationStep, Verdict
from thinkgraph.tools import ToolRegistry
from thinkgraph.types import NextAction
from thinkgraph.viz import overlay_from_result, to_ascii, to_graph_model, to_mermaid


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def send_email(to: str) -> str:
    """Send an e-mail."""
    return f"sent to {to}"


REPLIES = [
    "Thought: no format here",
    'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 40}',
    "Thought: done\nFinal Answer: 42",
]


def deps(*tools: Any) -> Deps:
    return Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry(list(tools)))


# -- the routers return labels --------------------------------------------------------------


def test_each_label_a_router_returns_has_a_route_in_the_table() -> None:
    labels = {route.label for route in REACT_ROUTES["think"]}
    assert labels == {
        "validate", "failures", "abort", "budget", "max_steps", "min_steps", "approve",
        "continue", "reset", "retry",
    }  # fmt: skip
    assert [r.label for r in REACT_ROUTES["observe"]] == ["failures", "abort", "budget", "next"]


def test_a_next_action_read_back_as_a_plain_string_routes_like_the_member() -> None:
    state = {"next_action": "final_answer", "candidate": "42", "counters": Counters(steps=1)}
    assert routes.after_think(state, StepLimits()) == "validate"
    state["next_action"] = NextAction.FINAL_ANSWER
    assert routes.after_think(state, StepLimits()) == "validate"


def test_the_built_routers_carry_their_resolved_routes_made_once() -> None:
    graph = react_graph(deps(), names={"act": "execute"}).build()
    think = graph.branches["think"]["route_think"]
    router = router_of(think.path)
    assert router is not None and not router.by_name
    assert Route("continue", "execute") in router.routes and router.sends_to == "execute"
    assert dict(think.ends or {})["continue"] == "execute"
    # The compiled graph keeps them: what the checks, the drawings and a run's shape read.
    compiled = graph.compile()
    assert router_of(compiled.builder.branches["think"]["route_think"].path) is router


# -- node names are free ---------------------------------------------------------------------


def test_our_act_named_execute_and_think_named_plan_run_to_the_answer_under_their_names() -> None:
    def build(d: Deps) -> Any:
        return react_graph(d, names={"think": "plan", "act": "execute"}).build()

    with Agent(ScriptedModel(REPLIES), [add], store="memory://", build_graph=build) as agent:
        result = agent.run("2 + 40?", thread_id="renamed")
        history = [h.node for h in agent.history("renamed")]
        diagram = agent.draw("mermaid", thread_id="renamed")
    assert (result.status, result.answer) == ("done", "42")
    nodes = {s.node for s in result.chain}
    assert {"plan", "execute"} <= nodes and not {"think", "act"} & nodes
    assert "plan" in history and "execute" in history and "think" not in history
    overlay = overlay_from_result(result, to_graph_model(build(deps(add))))
    assert overlay.node_visits["plan"] == 3 and overlay.node_visits["execute"] == 1
    assert overlay.tool_calls == 1 and overlay.edge_visits[("plan", "plan")] == 1
    assert 'plan -.->|"continue · ×1"| execute;' in diagram


def test_renaming_a_kind_we_do_not_have_is_refused_naming_ours() -> None:
    with pytest.raises(GraphConfigError, match=r"^names takes our node kinds .* not 'acting'"):
        react_graph(deps(), names={"acting": "execute"})


# -- re-targeting a route by its label --------------------------------------------------------


def critic(state: AgentState) -> dict[str, Any]:
    verdict = Verdict(passed=True, validator="critic")
    answer = state.get("answer") or ""
    return {"chain": [ValidationStep(answer=answer, verdicts=[verdict], passed=True)]}


def with_critic(d: Deps) -> Any:
    graph = react_graph(d).add_node("critic", critic)
    graph.set_route("validate", "passed", "critic")
    graph.add_routes("critic", lambda s: "approved", {"approved": "finalize"}, guards=False)
    return graph.build()


def test_a_retargeted_route_keeps_its_label_in_every_diagram() -> None:
    model = to_graph_model(with_critic(deps()))
    assert model.edges["validate", "critic"]["label"] == "passed"
    assert model.edges["validate", "finalize"]["label"] == "abort / budget / max_steps"
    assert 'validate -.->|"passed"| critic;' in to_mermaid(model)
    assert "-.-> critic     passed" in to_ascii(model)


def test_a_retargeted_route_runs_through_the_users_node() -> None:
    replies = ["Thought: done\nFinal Answer: 42"]
    with Agent(ScriptedModel(replies), store="memory://", build_graph=with_critic) as agent:
        result = agent.run("x", thread_id="c")
    assert result.answer == "42"
    assert [s.node for s in result.chain if isinstance(s, ValidationStep)] == ["critic"]


def test_retargeting_a_label_the_node_does_not_have_names_its_routes() -> None:
    with pytest.raises(GraphConfigError, match=r"^node 'validate' has no route 'pass'; its routes"):
        react_graph(deps()).set_route("validate", "pass", "critic")


def test_a_route_to_a_missing_node_is_refused_when_built_in_one_line() -> None:
    graph = react_graph(deps()).set_route("validate", "passed", "critic")
    with pytest.raises(GraphConfigError) as info:
        graph.build()
    assert str(info.value) == (
        "the route 'passed' of node 'validate' goes to 'critic', which is not a node of the "
        "graph; add the node 'critic' or send the route to one that is"
    )


# -- a node of yours gets the guards by composition --------------------------------------------


def test_a_users_router_gets_the_guards_without_importing_them() -> None:
    def nitpick(state: AgentState) -> dict[str, Any]:
        # never satisfied, and never counts a failure: only the guards end this loop
        verdict = Verdict(passed=False, reason="say more", validator="nitpick")
        review = ValidationStep(answer=state.get("answer") or "", verdicts=[verdict], passed=False)
        return {"chain": [review], "answer": None, "candidate": None}

    def build(d: Deps) -> Any:
        graph = react_graph(d).add_node("nitpick", nitpick)
        graph.set_route("validate", "passed", "nitpick")
        graph.add_routes("nitpick", lambda state: "again", {"again": "think"})
        return graph.build()

    model = to_graph_model(build(deps()))
    assert model.edges["nitpick", "finalize"]["label"] == "abort / budget / max_steps"
    assert model.nodes["nitpick"]["guarded"] is True
    replies = ["Thought: done\nFinal Answer: 42"] * 4
    limits = StepLimits(max_steps=3)
    with Agent(ScriptedModel(replies), limits=limits, store="memory://", build_graph=build) as a:
        result = a.run("x", thread_id="g")
    assert result.stop_reason == "max_steps"
    assert overlay_from_result(result, model).edge_visits[("nitpick", "finalize")] == 1


def test_a_users_router_without_guards_in_a_cycle_is_refused() -> None:
    graph = react_graph(deps()).add_node("nitpick", critic)
    graph.set_route("validate", "passed", "nitpick")
    graph.add_routes(
        "nitpick", lambda state: "again", {"again": "nitpick", "done": "finalize"}, guards=False
    )
    with pytest.raises(GraphConfigError, match="passes through no guarded router"):
        graph.build()


# -- wiring rules, from the table ------------------------------------------------------------


def test_without_approve_a_gated_tool_is_refused_and_any_other_tool_is_not() -> None:
    react_graph(deps(add)).remove_node("approve").build()
    with pytest.raises(GraphConfigError, match=r"^tool 'send_email' needs approval, but node"):
        react_graph(deps(add, send_email)).remove_node("approve").build()


def test_a_candidate_answer_sent_straight_to_finalize_is_refused() -> None:
    graph = react_graph(deps()).set_route("think", "validate", "finalize")
    with pytest.raises(GraphConfigError, match="an answer is final only through validate"):
        graph.build()


def test_think_without_reset_thinks_again_and_without_ask_human_aborts() -> None:
    graph = react_graph(deps()).remove_node("reset").remove_node("ask_human").build()
    ends = dict(graph.branches["think"]["route_think"].ends or {})
    assert ends["reset"] == "think" and ends["failures"] == "finalize"
    assert "approve" in ends
    with pytest.raises(GraphConfigError, match="failure_policy='ask_human' needs"):
        Agent(ScriptedModel([]), store="memory://", limits=StepLimits(failure_policy="ask_human"),
              build_graph=lambda d: react_graph(d).remove_node("ask_human").build())  # fmt: skip


def test_the_calls_route_must_reach_an_act_node() -> None:
    graph = react_graph(deps()).set_route("think", "continue", "observe")
    with pytest.raises(GraphConfigError, match="send it to an act node"):
        graph.build()


def test_build_react_graph_is_the_table_built() -> None:
    built = build_react_graph(deps())
    assert list(built.nodes) == list(react_graph(deps()).build().nodes)
    router = router_of(built.branches["observe"]["route_after_observe"].path)
    assert router is not None and router.routes == REACT_ROUTES["observe"]


def test_a_node_inserted_after_observe_runs_every_round_and_keeps_observes_label() -> None:
    seen: list[int] = []

    def audit(state: AgentState) -> dict[str, Any]:
        seen.append(len(state["chain"]))
        return {}

    def build(d: Deps) -> Any:
        graph = react_graph(d).add_node("audit", audit)
        graph.set_route("observe", "next", "audit").add_edge("audit", "think")
        return graph.build()

    with Agent(ScriptedModel(REPLIES), [add], store="memory://", build_graph=build) as agent:
        assert agent.run("2 + 40?", thread_id="ins").answer == "42"
    assert len(seen) == 1
    assert to_graph_model(build(deps())).edges["observe", "audit"]["label"] == "next"


def test_routes_from_a_node_not_in_the_graph_are_refused_naming_add_node() -> None:
    graph = react_graph(deps()).add_routes("critic", lambda s: "ok", {"ok": "finalize"})
    with pytest.raises(GraphConfigError, match=r"^'critic' has an edge, routes or the entry"):
        graph.build()


def test_a_routers_declared_labels_are_checked_at_build_and_at_run_time() -> None:
    from tests.cli.sample_graphs import judged
    from thinkgraph import Agent, ScriptedModel
    from thinkgraph.errors import GraphConfigError, RouteLabelError
    from thinkgraph.graphs import react_graph

    def typo(state: Any) -> Literal["approved", "aproved"]:
        return "approved"

    graph = react_graph(Agent(ScriptedModel([])).deps)
    graph.add_node("judge", lambda state: {})
    with pytest.raises(GraphConfigError) as refused:
        graph.add_routes("judge", typo, {"approved": "finalize", "rejected": "think"})
    message = str(refused.value)
    assert "\n" not in message and "can return 'aproved', which has no route" in message
    assert "'approved', 'rejected'" in message

    # Met at run time: one line naming the router, the label and the declared ones.
    replies = ["Thought: done\nFinal Answer: 42"]
    agent = Agent(ScriptedModel(replies), build_graph=judged, store="memory://")
    with agent, pytest.raises(RouteLabelError) as wrong:
        agent.run("answer", thread_id="j1")
    message = str(wrong.value)
    assert "\n" not in message and "router verdict_of of node 'judge'" in message
    assert "returned 'aproved'" in message and "'approved', 'rejected'" in message


def test_a_run_stopped_by_a_bad_label_resumes_on_the_fixed_router() -> None:
    from thinkgraph import Agent, ScriptedModel
    from thinkgraph.errors import RouteLabelError
    from thinkgraph.graphs import react_graph
    from thinkgraph.state import NoteStep

    label = {"now": "aproved"}

    def judge(state: Any) -> dict[str, Any]:
        return {"chain": [NoteStep(text="judged")]}

    def verdict_of(state: Any) -> Literal["approved", "rejected"]:
        return label["now"]  # type: ignore[return-value]

    def build(deps: Any) -> Any:
        graph = react_graph(deps)
        graph.add_node("judge", judge)
        graph.set_route("validate", "passed", "judge")
        graph.add_routes("judge", verdict_of, {"approved": "finalize", "rejected": "think"})
        return graph.build()

    replies = ["Thought: done\nFinal Answer: 42"]
    with Agent(ScriptedModel(replies), build_graph=build, store="memory://") as agent:
        with pytest.raises(RouteLabelError):
            agent.run("answer", thread_id="j2")
        # Still broken: refused again, the run left as it was.
        with pytest.raises(RouteLabelError):
            agent.resume("j2")
        assert agent.result("j2").status == "running"
        label["now"] = "approved"  # the router is fixed
        result = agent.resume("j2")
    assert (result.status, result.answer) == ("done", "42")
    # The judge's note is in the chain once: its writes were kept, not made twice.
    assert [s.text for s in result.chain if isinstance(s, NoteStep)] == ["judged"]
