"""A planner node before the first think: the model plans once, then works the plan.

The graph is ours (`react_graph`) with one node of yours where runs start, before think.
The planner asks the model for a short plan (`ask_model`: an llm_call step, counted in the
run's budgets like think's) and notes it in the chain (a `NoteStep`), which every later
prompt shows as the planner's note.

    python examples/planner.py                     # a ScriptedModel plays the model
    python examples/planner.py --model openai/gpt-4o-mini
"""

from __future__ import annotations

import argparse
from typing import Any

from langgraph.graph import StateGraph

from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.graphs import react_graph
from thinkgraph.nodes import Deps, ask_model
from thinkgraph.state import AgentState, NoteStep, TaskStep
from thinkgraph.tools.builtin import calculator
from thinkgraph.views import format_step

TASK = "A notebook costs 3.20 and a pen 1.15. What do 4 notebooks and 3 pens cost?"

SCRIPT = [
    "1. Write the total as one expression: 4 * notebook + 3 * pen.\n"
    "2. Evaluate it with the calculator.\n"
    "3. Answer with the total.",
    "Thought: following the plan, one expression for the total.\n"
    'Action: calculator\nAction Input: {"expression": "4 * 3.20 + 3 * 1.15"}',
    "Thought: the calculator gives the total.\nFinal Answer: 16.25",
]
"""What the ScriptedModel answers, in turn, when no --model is given."""

PLAN_PROMPT = (
    "Plan how to solve the task below in at most four short numbered steps. Name the "
    "tools you will use ({tools}). Reply with the steps only.\n\nTask: {task}"
)


async def planner(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Ask the model for a plan and note it for every later think."""
    task = next(s.text for s in state["chain"] if isinstance(s, TaskStep))
    tools = ", ".join(t.name for t in deps.tools) or "none"
    prompt = PLAN_PROMPT.format(tools=tools, task=task)
    answer = await ask_model(state, deps, [{"role": "user", "content": prompt}], purpose="plan")
    plan = [NoteStep(text=f"Plan:\n{answer.text.strip()}")] if answer.ok else []
    return answer.update(chain=plan)


def build(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Our graph with the planner between START and think."""
    graph = react_graph(deps)
    graph.add_node("planner", planner).set_entry("planner")
    # one way on, so no guards: the label says why the run goes on to think
    graph.add_routes("planner", lambda state: "planned", {"planned": "think"}, guards=False)
    return graph.build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a litellm model string; default: a ScriptedModel")
    parser.add_argument("--store", default="memory://", help="where the run is kept")
    args = parser.parse_args()

    model = args.model or ScriptedModel(SCRIPT)
    limits = StepLimits(max_steps=6)
    with Agent(model, [calculator], limits=limits, store=args.store, build_graph=build) as agent:
        for step in agent.stream(TASK, thread_id="planner"):
            print(format_step(step))
        result = agent.result("planner")
        print(f"\nanswer: {result.answer}  ({result.status}, {result.stop_reason})")
        print("\nThe graph and this run's path (Mermaid):")
        print(agent.draw("mermaid", thread_id="planner"))


if __name__ == "__main__":
    main()
