"""Plan, execute, reflect: our think and act renamed, a reflect node of yours after each round.

The graph is ours (`react_graph`) with think named "plan" and act named "execute", and one
node of yours: after each tool round the model reflects on what came back (`ask_model`, a
`NoteStep` for the next plan, and a verdict kept in a state key of its own), and the run
either proceeds to plan the next step or starts over, as the verdict says. `publish` needs a
person's approval, so the run pauses before it; here the script plays the person and approves.

`build` is importable as ``examples.reflect:build``: give it to ``Agent(...,
build_graph=build)``, or name it on the command line to continue a run of this graph
(``thinkgraph approve RUN --graph examples.reflect:build``).

    python examples/reflect.py                     # a ScriptedModel plays the model
    python examples/reflect.py --model openai/gpt-4o-mini
"""

from __future__ import annotations

import argparse
from typing import Any, Literal

from langgraph.graph import StateGraph

from thinkgraph import Agent, Approve, ScriptedModel, StepLimits, tool
from thinkgraph.graphs import react_graph
from thinkgraph.nodes import Deps, ask_model
from thinkgraph.state import AgentState, NoteStep, ObservationStep, TaskStep
from thinkgraph.tools.builtin import calculator
from thinkgraph.views import format_step

PUBLISHED: list[str] = []
"""What `publish` has published."""


@tool(requires_approval=True)
def publish(text: str) -> str:
    """Publish a short text for everyone to read.

    Args:
        text: what to publish.
    """
    PUBLISHED.append(text)
    return f"published: {text}"


TOOLS = [calculator, publish]

TASK = "Compute 12 * 7 and publish the result as '12 * 7 = <result>'."

SCRIPT = [
    'Thought: compute it first.\nAction: calculator\nAction Input: {"expression": "12 * 7"}',
    "PROCEED: the product is 84; publish it next.",
    'Thought: publish it.\nAction: publish\nAction Input: {"text": "12 * 7 = 84"}',
    "PROCEED: it is published; give the answer.",
    "Thought: done.\nFinal Answer: 84",
]
"""What the ScriptedModel answers, in turn, when no --model is given: plan, reflect, …"""

REFLECT_PROMPT = (
    "You are working on this task: {task}\nThe last tool results were:\n{results}\n"
    "In one sentence, say what they mean for the task. Start with PROCEED if the work is "
    "on track, or with START OVER if the approach is wrong."
)


Verdict = Literal["proceed", "start_over"]


class ReflectState(AgentState, total=False):
    """Our state, and reflect's verdict on the last round, which its router reads."""

    verdict: Verdict


async def reflect(state: ReflectState, *, deps: Deps) -> dict[str, Any]:
    """Ask the model what the round's results mean; its words are a note for the next plan."""
    chain = state["chain"]
    task = next(s.text for s in chain if isinstance(s, TaskStep))
    results = []  # the round's observations: the steps observe just wrote
    for step in reversed(chain):
        if not isinstance(step, ObservationStep):
            break
        results.insert(0, step.text)
    prompt = REFLECT_PROMPT.format(task=task, results="\n".join(results) or "(none)")
    answer = await ask_model(state, deps, [{"role": "user", "content": prompt}], purpose="reflect")
    notes = [NoteStep(text=answer.text.strip())] if answer.ok else []
    verdict = "start_over" if "START OVER" in answer.text.upper() else "proceed"
    return answer.update(chain=notes, verdict=verdict)


def route_after_reflect(state: ReflectState) -> Verdict:
    """Why the run leaves reflect: the verdict reflect kept in the state."""
    return state.get("verdict", "proceed")


def build(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Plan → execute → observe → reflect → plan, with approval before `publish`."""
    graph = react_graph(deps, names={"think": "plan", "act": "execute"}, state=ReflectState)
    graph.add_node("reflect", reflect)
    graph.set_route("observe", "next", "reflect")
    graph.add_routes("reflect", route_after_reflect, {"proceed": "plan", "start_over": "reset"})
    return graph.build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a litellm model string; default: a ScriptedModel")
    parser.add_argument("--store", default="memory://", help="where the run is kept")
    args = parser.parse_args()

    model = args.model or ScriptedModel(SCRIPT)
    limits = StepLimits(max_steps=6)
    with Agent(model, TOOLS, limits=limits, store=args.store, build_graph=build) as agent:
        steps = agent.stream(TASK, thread_id="reflect")
        while True:
            for step in steps:
                print(format_step(step))
            result = agent.result("reflect")
            if result.status != "paused":
                break
            for request in result.pending:
                print(f"\n>>> waits for approval: {request.tool}({request.args})  → approve\n")
            steps = agent.stream_resume("reflect", {p.call_id: Approve() for p in result.pending})
        print(f"\nanswer: {result.answer}  ({result.status}, {result.stop_reason})")
        print(f"published: {PUBLISHED}")
        print("nodes run: " + " → ".join(h.node for h in agent.history("reflect")))
        print("\nThe graph and this run's path (Mermaid):")
        print(agent.draw("mermaid", thread_id="reflect"))


if __name__ == "__main__":
    main()
