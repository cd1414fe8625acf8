"""RunResult: where a run stands, as `Agent.run`, `resume` and `result` return it; and
RunSummary, one line of a listing of runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, TypeAdapter, field_validator

from thinkgraph.hitl import Pending
from thinkgraph.state import BaseStep, Counters, Step
from thinkgraph.types import RunStatus, StopReason

__all__ = ["JobState", "RunResult", "RunSummary", "status_text", "waiting_for"]

_STEP: TypeAdapter[BaseStep] = TypeAdapter(Step)  # type: ignore[arg-type]


class RunResult(BaseModel):
    """Where a run stands: its status, its answer and its whole chain.

    It round-trips through JSON: ``RunResult.model_validate_json(r.model_dump_json())``
    gives back every step with its own type and fields.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    thread_id: str
    """The run's thread id; pass it to `Agent.resume`, `Agent.chain`, the CLI."""
    status: RunStatus
    """running (interrupted, e.g. by a crash), paused (waits for a person), done, failed."""
    answer: str | None = None
    stop_reason: StopReason | None = None
    """Why the run stopped; None while it has not."""
    detail: str = ""
    """More on the stop, e.g. the last error."""
    chain: list[SerializeAsAny[BaseStep]] = Field(default_factory=list)
    """Every step of the run (dumped with all of its own fields, whatever its type)."""
    pending: list[Pending] = Field(default_factory=list)
    """What a paused run waits for: one entry per call to approve, or the question."""
    counters: Counters = Field(default_factory=Counters)
    """Steps, tokens, cost and time so far."""
    output: Any = None
    """The structured answer: the object an `output_schema` validator parsed, else None."""

    def status_text(self, *, stopped: bool = False) -> str:
        """Where the run stands, in the words used everywhere (`status_text`)."""
        return status_text(
            self.status, self.stop_reason, waiting_for(self.pending), stopped=stopped
        )

    state: dict[str, Any] = Field(default_factory=dict)
    """The keys the run's graph declares beyond `AgentState`, as the run left them (empty
    for our graph)."""

    @field_validator("chain", mode="before")
    @classmethod
    def _typed_steps(cls, value: Any) -> Any:
        # Steps read back from JSON are dicts: their `type` picks the class to revive.
        if isinstance(value, list):
            return [_STEP.validate_python(v) if isinstance(v, dict) else v for v in value]
        return value


JobStateName = Literal["queued", "running", "stalled", "retrying", "failed"]


class JobState(BaseModel):
    """A run's latest job in the worker queue, while it says more than the run's checkpoints:
    it waits, runs, has stalled, waits to be tried again, or failed."""

    model_config = ConfigDict(frozen=True)

    job_id: int
    queue: str
    """The queue it is in: a worker started with ``--queue`` of that name takes it."""
    action: Literal["start", "resume"]
    """"start": the run's task; "resume": an answer, or the continuation of a run."""
    state: JobStateName
    """queued (waits for a worker), running, stalled (its worker went silent: another
    will take it), retrying (waits to be tried again after a fault), failed (for good)."""
    attempt: int = 1
    """The attempt running or next (1 for a first try); for a failed job, the attempts made."""
    error: str = ""
    """What the last attempt failed with, in one line (retrying and failed jobs)."""
    at: datetime | None = None
    """When the job last changed (queued, taken, retried, failed)."""

    def text(self) -> str:
        """Where the job stands, in one phrase: ``queued (…)``, ``retrying (attempt 3: …)``."""
        if self.state == "queued":
            what = "an answer waits" if self.action == "resume" else "waits"
            return f"queued ({what} for a worker on queue {self.queue})"
        if self.state == "retrying":
            return f"retrying (attempt {self.attempt}" + (f": {self.error})" if self.error else ")")
        if self.state == "failed":
            return f"failed (job {self.job_id}: {self.error or 'no error was recorded'})"
        if self.state == "stalled":
            return f"stalled (its worker went silent; queue {self.queue})"
        return "running"


class RunSummary(BaseModel):
    """One run as `Agent.runs` and `thinkgraph runs` list it: where it stands, no chain."""

    model_config = ConfigDict(frozen=True)

    thread_id: str
    status: RunStatus
    """running (unfinished, e.g. its process died), paused, done or failed."""
    stop_reason: StopReason | None = None
    """Why a done or failed run stopped."""
    detail: str = ""
    pending: list[Pending] = Field(default_factory=list)
    """What a paused run waits for."""
    steps: int = 0
    """Think steps taken."""
    nodes: int = 0
    """Nodes run: every node's step, ours and a graph's own (the act tasks of one round
    count once), as LangGraph numbers its steps."""
    updated_at: datetime | None = None
    """When the run's latest checkpoint was written."""
    tokens: int = 0
    """Model tokens used (prompt and completion)."""
    cost_usd: float | None = None
    """What the model calls cost, in US dollars; None when a call's cost was unknown."""
    graph: str | None = None
    """The address of the graph the run runs on (data, never imported); None: ours."""
    replay: str | None = None
    """For a replay: its outcome (same, request changed, changed, diverged), or "stopped"
    when it stopped before it was compared. A replay is never continued."""
    job: JobState | None = None
    """The run's latest job in the worker queue while it waits, runs, stalled, is retried or
    failed (None once it ended well, or for a run no worker advances): then its state is
    the run's (`status` queued, running or failed)."""

    @property
    def waiting_for(self) -> str:
        """What a paused run waits for, in a few words: "approval: send_email"."""
        return waiting_for(self.pending)

    def status_text(self, *, stopped: bool = False) -> str:
        """Where the run stands, in the words used everywhere (`status_text`)."""
        if self.job is not None:
            return self.job.text()
        return status_text(
            self.status, self.stop_reason, self.waiting_for, replay=self.replay, stopped=stopped
        )


def waiting_for(pending: Sequence[Pending | Mapping[str, Any]]) -> str:
    """What a paused run waits for, in a few words: "approval: send_email", "breakpoint
    before judge", "ask_human". Entries are `Pending`s or their JSON (an export's)."""

    def field(entry: Pending | Mapping[str, Any], name: str) -> Any:
        return entry.get(name) if isinstance(entry, Mapping) else getattr(entry, name, None)

    approvals = [str(field(p, "tool") or "?") for p in pending if field(p, "kind") == "approval"]
    if approvals:
        return "approval: " + ", ".join(dict.fromkeys(approvals))
    for p in pending:
        if field(p, "kind") == "breakpoint":
            return f"breakpoint {field(p, 'when') or 'before'} {field(p, 'node')}"
        return str(field(p, "kind") or "")
    return ""


def status_text(
    status: RunStatus,
    stop_reason: StopReason | None = None,
    waiting: str = "",
    *,
    replay: str | None = None,
    stopped: bool = False,
) -> str:
    """Where a run stands, in one phrase: the one vocabulary of the CLI, the server, the page
    and the docs.

    ``paused (breakpoint before judge)``, ``paused (approval: send_email)``, ``done``,
    ``done (max_steps)`` (a guard forced the answer), ``failed (no_answer)``, ``running``,
    ``stopped (resume to continue)`` (unfinished, and no process advances it: `stopped`),
    and ``replay: same`` for a replay, which is compared, never continued.
    """
    if replay is not None:
        return f"replay: {replay}"
    if status == "paused":
        return f"paused ({waiting})" if waiting else "paused"
    if status in ("done", "failed"):
        shown = stop_reason not in (None, "final_answer") or status == "failed"
        return f"{status} ({stop_reason})" if shown and stop_reason else status
    return "stopped (resume to continue)" if stopped else "running"
