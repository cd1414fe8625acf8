"""A critic node between validate and finalize: an answer must survive review to be final.

The graph is ours, built from `thinkgraph.graphs.parts`, with one node of yours: after
validate passes an answer, the critic checks that the answer is the number a calculator
call returned. If not, it rejects the answer (the model sees why) and the run goes back to
think; the step guards still bound the loop.

    python examples/critic.py                      # a ScriptedModel plays the model
    python examples/critic.py --model openai/gpt-4o-mini
"""

from __future__ import annotations

import argparse
from typing import Any

from langgraph.graph import END, START, StateGraph

from thinkgraph import Agent, ScriptedModel, StepLimits, Verdict
from thinkgraph.graphs import parts
from thinkgraph.graphs.routing import guard_stop
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, ObservationStep, ValidationStep
from thinkgraph.tools.builtin import calculator
from thinkgraph.views import format_step
from thinkgraph.viz import guarded_router

TASK = "What is 17 * 23? Answer with the number only."

SCRIPT = [
    "Thought: that is roughly 17 * 20 plus a bit.\nFinal Answer: about 400",
    'Thought: I should compute it.\nAction: calculator\nAction Input: {"expression": "17 * 23"}',
    "Thought: the calculator says 391.\nFinal Answer: 391",
]
"""What the ScriptedModel answers, in turn, when no --model is given."""


def critic(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Accept the answer only if it is what the last calculator call returned."""
    answer = state.get("answer") or ""
    results = [s.text for s in state["chain"] if isinstance(s, ObservationStep) and not s.is_error]
    if not results:
        reason = "no calculation backs this answer; compute it with the calculator first"
    elif answer.strip() != results[-1].strip():
        reason = f"the calculator returned {results[-1]}; answer with exactly that number"
    else:
        reason = ""
    verdict = Verdict(passed=not reason, reason=reason, validator="critic")
    review = ValidationStep(node="critic", answer=answer, verdicts=[verdict], passed=not reason)
    if verdict.passed:
        return {"chain": [review]}
    # A rejected answer is a failure like any other: the failure limit stops a critic
    # and a model that never agree.
    counters = state["counters"]
    failures = counters.consecutive_failures + 1
    return {
        "chain": [review],  # the model sees a rejected ValidationStep, with the reason
        "answer": None,
        "candidate": None,
        "counters": counters.model_copy(update={"consecutive_failures": failures}),
    }


@guarded_router
def route_after_critic(state: AgentState) -> str:
    """Finalize an approved answer; else think again, unless a guard stops the run.

    It returns why, not where: the path map in `build` says where, and the diagram labels
    each edge with the reason.
    """
    if state.get("answer") is not None:
        return "approved"
    if guard_stop(state["counters"], state["limits"]) is not None:
        return "guard"
    return "rejected"


def build(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Our graph with the critic between validate and finalize."""
    graph: StateGraph[AgentState, Any, AgentState, AgentState] = StateGraph(AgentState)
    graph.add_node("think", parts.think_node(deps))
    graph.add_node("act", parts.act_node(deps))
    graph.add_node("observe", parts.observe_node(deps))
    graph.add_node("validate", parts.validate_node(deps))
    graph.add_node("reset", parts.reset_node(deps))
    graph.add_node("critic", parts.node("critic", critic, deps))
    graph.add_node("finalize", parts.finalize_node(deps))

    graph.add_edge(START, "think")
    think_targets = ["think", "act", "validate", "reset", "finalize"]
    graph.add_conditional_edges("think", parts.think_router(deps), think_targets)
    graph.add_edge("act", "observe")
    graph.add_conditional_edges("observe", parts.observe_router(deps), ["think", "finalize"])
    # validate's router says "finalize" for a passed answer: send that to the critic.
    graph.add_conditional_edges(
        "validate",
        parts.validate_router(deps),
        {"finalize": "critic", "think": "think", "reset": "reset"},
    )
    graph.add_conditional_edges(
        "critic",
        route_after_critic,
        {"approved": "finalize", "guard": "finalize", "rejected": "think"},
    )
    graph.add_edge("reset", "think")
    graph.add_edge("finalize", END)
    return graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a litellm model string; default: a ScriptedModel")
    parser.add_argument("--store", default="memory://", help="where the run is kept")
    args = parser.parse_args()

    model = args.model or ScriptedModel(SCRIPT)
    limits = StepLimits(max_steps=6)
    with Agent(model, [calculator], limits=limits, store=args.store, build_graph=build) as agent:
        for step in agent.stream(TASK, thread_id="critic"):
            print(format_step(step))
        result = agent.result("critic")
        print(f"\nanswer: {result.answer}  ({result.status}, {result.stop_reason})")
        print("\nThe graph and this run's path (Mermaid):")
        print(agent.draw("mermaid", thread_id="critic"))


if __name__ == "__main__":
    main()
