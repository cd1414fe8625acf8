"""ask_human: after repeated failures, pause and ask a person what to do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from langgraph.types import interrupt
from pydantic import BeforeValidator, WithJsonSchema

from thinkgraph.errors import ResumeValueError
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import (
    AgentState,
    BaseStep,
    Counters,
    ErrorStep,
    HumanStep,
    ObservationStep,
    RunInfo,
    ThoughtStep,
)

__all__ = ["HumanAnswer", "ask_human", "parse_human_answer"]


def _summary(chain: Sequence[BaseStep]) -> tuple[list[str], list[str]]:
    done: list[str] = []
    failed: list[str] = []
    for step in chain:
        if isinstance(step, ObservationStep):
            (failed if step.is_error else done).append(f"{step.tool}: {step.text[:200]}")
        elif isinstance(step, ErrorStep) and step.kind in ("parse", "model"):
            failed.append(step.message[:200])
    return done[-5:], failed[-5:]


def parse_human_answer(value: Any) -> tuple[str, str]:
    """Read the answer to an ask_human pause: ("retry"|"guidance"|"abort", text)."""
    if isinstance(value, str):
        word = value.strip()
        if word.lower() in ("retry", "abort"):
            return word.lower(), ""
        if word:
            return "guidance", word
    if isinstance(value, dict):
        action = str(value.get("action", "")).lower()
        text = str(value.get("text", "") or value.get("reason", ""))
        if action in ("retry", "abort") or (action == "guidance" and text):
            return action, text
    raise ResumeValueError(
        "answer an ask_human pause with 'retry', 'abort', guidance text, "
        'or {"action": "retry" | "guidance" | "abort", "text": "..."}'
    )


def _checked_answer(value: Any) -> Any:
    parse_human_answer(value)
    return value


HumanAnswer = Annotated[
    Any,
    BeforeValidator(_checked_answer),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "description": "'retry', 'abort' or guidance text"},
                {
                    "type": "object",
                    "properties": {
                        "action": {"enum": ["retry", "guidance", "abort"]},
                        "text": {"type": "string"},
                    },
                    "required": ["action"],
                },
            ]
        }
    ),
]
"""The answer to an ask_human pause, checked by `interrupt` before LangGraph records it."""


async def ask_human(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Pause with what was accomplished and what failed; resume with the person's answer.

    Nothing before `interrupt` has side effects, because LangGraph re-runs this node from
    the start when the run resumes. A bad answer is refused by `interrupt` itself with
    `ResumeValueError`, whoever sent it, and the run stays paused.
    """
    counters = state.get("counters") or Counters()
    done, failed = _summary(state["chain"])
    last_thought = next(
        (s.text for s in reversed(state["chain"]) if isinstance(s, ThoughtStep)), ""
    )
    answer = interrupt(
        {
            "kind": "ask_human",
            "question": f"The agent failed {counters.consecutive_failures} times in a row. "
            "Retry, give guidance, or abort?",
            "accomplished": done,
            "failed": failed,
            "last_thought": last_thought,
        },
        response_schema=HumanAnswer,
    )
    action, text = parse_human_answer(answer)
    update: dict[str, Any] = {
        "chain": [HumanStep(kind=action, text=text)],
        "counters": counters.model_copy(update={"consecutive_failures": 0}),
    }
    if action == "abort":
        update["run"] = RunInfo(
            status="failed", stop_reason="aborted", detail=text or "aborted by a person"
        )
    return update
