"""Approval only for tools that write: reads run at once, a write waits for a person.

Two tools: `read_note` reads, `save_note` writes (it is marked ``side_effects=True``).
The agent asks for approval on exactly the tools with side effects, so the run pauses
before `save_note` and never before `read_note`. Here the script plays the person: it
prints what the run waits for and approves it, so the example runs unattended. (From the
shell: `thinkgraph pending T`, then `thinkgraph approve T`.)

    python examples/approve_writes.py              # a ScriptedModel plays the model
    python examples/approve_writes.py --model openai/gpt-4o-mini
"""

from __future__ import annotations

import argparse

from thinkgraph import Agent, Approve, ScriptedModel, StepLimits, tool
from thinkgraph.views import format_step

NOTES: dict[str, str] = {"groceries": "milk, eggs"}
"""The notebook the tools read and write."""


@tool
def read_note(name: str) -> str:
    """Read a note.

    Args:
        name: the note's name.
    """
    return NOTES.get(name, f"(no note named {name!r})")


@tool(side_effects=True)
def save_note(name: str, text: str) -> str:
    """Save a note, replacing any note of that name.

    Args:
        name: the note's name.
        text: what the note says.
    """
    NOTES[name] = text
    return f"saved {name!r}"


TOOLS = [read_note, save_note]
WRITES = {t.name for t in TOOLS if t.side_effects}
"""The tools that need approval; ``approve="side_effects"`` says the same."""

TASK = "Add bread to my groceries note."

SCRIPT = [
    'Thought: first read the note.\nAction: read_note\nAction Input: {"name": "groceries"}',
    "Thought: now save it with bread added.\nAction: save_note\n"
    'Action Input: {"name": "groceries", "text": "milk, eggs, bread"}',
    "Thought: saved.\nFinal Answer: Your groceries note now says: milk, eggs, bread.",
]
"""What the ScriptedModel answers, in turn, when no --model is given."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a litellm model string; default: a ScriptedModel")
    parser.add_argument("--store", default="memory://", help="where the run is kept")
    args = parser.parse_args()

    model = args.model or ScriptedModel(SCRIPT)
    limits = StepLimits(max_steps=6)
    with Agent(model, TOOLS, limits=limits, store=args.store, approve=WRITES) as agent:
        steps = agent.stream(TASK, thread_id="notes")
        while True:
            for step in steps:
                print(format_step(step))
            result = agent.result("notes")
            if result.status != "paused":
                break
            for request in result.pending:
                print(f"\n>>> waits for approval: {request.tool}({request.args})  → approve\n")
            steps = agent.stream_resume("notes", {p.call_id: Approve() for p in result.pending})
        print(f"\nanswer: {result.answer}  ({result.status}, {result.stop_reason})")
        print(f"notes: {NOTES}")
        print("\nThe graph and this run's path (Mermaid):")
        print(agent.draw("mermaid", thread_id="notes"))


if __name__ == "__main__":
    main()
