"""A critic node between validate and finalize: an answer must survive review to be final.

The graph is ours (`react_graph`) with one node of yours: validate's "passed" route goes to
the critic instead of finalize, and the critic checks that the answer is the number a
calculator call returned. If not, it rejects the answer (the model sees why) and the run
goes back to think. The critic's routes get the step guards by composition: nothing to
import or re-check, and the diagram labels each edge with its route's word.

    python examples/critic.py                      # a ScriptedModel plays the model
    python examples/critic.py --model openai/gpt-4o-mini
"""

from __future__ import annotations

import argparse
from typing import Any, Literal

from langgraph.graph import StateGraph

from thinkgraph import Agent, ScriptedModel, StepLimits, Verdict
from thinkgraph.graphs import react_graph
from thinkgraph.nodes import Deps, review_answer
from thinkgraph.state import AgentState, ObservationStep
from thinkgraph.tools.builtin import calculator
from thinkgraph.views import format_step

TASK = "What is 17 * 23? Answer with the number only."

SCRIPT = [
    "Thought: that is roughly 17 * 20 plus a bit.\nFinal Answer: about 400",
    'Thought: I should compute it.\nAction: calculator\nAction Input: {"expression": "17 * 23"}',
    "Thought: the calculator says 391.\nFinal Answer: 391",
]
"""What the ScriptedModel answers, in turn, when no --model is given."""


def critic(state: AgentState) -> dict[str, Any]:
    """Accept the answer only if it is what the last calculator call returned."""
    answer = state.get("answer") or ""
    results = [s.text for s in state["chain"] if isinstance(s, ObservationStep) and not s.is_error]
    if not results:
        reason = "no calculation backs this answer; compute it with the calculator first"
    elif answer.strip() != results[-1].strip():
        reason = f"the calculator returned {results[-1]}; answer with exactly that number"
    else:
        reason = ""
    # Rejected, the model sees the reason, the answer is cleared and it counts as a
    # failure: the failure limit stops a critic and a model that never agree.
    return review_answer(state, Verdict(passed=not reason, reason=reason, validator="critic"))


def route_after_critic(state: AgentState) -> Literal["approved", "rejected"]:
    """Why the run leaves the critic: "approved" or "rejected" (the table says where to)."""
    return "approved" if state.get("answer") is not None else "rejected"


def build(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Our graph with the critic between validate and finalize."""
    graph = react_graph(deps)
    graph.add_node("critic", critic)
    graph.set_route("validate", "passed", "critic")
    graph.add_routes("critic", route_after_critic, {"approved": "finalize", "rejected": "think"})
    return graph.build()


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
