"""The state of a run: one append-only chain of typed steps, plus a few small channels.

- `thinkgraph.state.steps`: the steps, one typed record per thing that happened in a run.
- `thinkgraph.state.channels`: the channels of `AgentState` and their reducers, the
  chain's among them (the one place steps are numbered), and a graph's own keys.

Every name is imported from here (those not in `__all__` are the package's own, each
re-exported as ``name as name``). A checkpoint names each stored class by module, so the
classes keep ``thinkgraph.state`` as theirs, whichever file defines them: a run stored
before the split reads as one stored after it (`thinkgraph.storage.checkpointers` revives
only the classes it allows, by that name).
"""

from __future__ import annotations

from thinkgraph.state.channels import (
    AGENT_KEYS,
    AgentState,
    Counters,
    PackedSteps,
    RunInfo,
    append_steps,
    is_own_key,
    last_value,
    own_keys,
    start_state,
)
from thinkgraph.state.channels import (
    CHAIN_SNAPSHOT_EVERY as CHAIN_SNAPSHOT_EVERY,
)
from thinkgraph.state.channels import (
    CountersChannel as CountersChannel,
)
from thinkgraph.state.channels import (
    declared_keys as declared_keys,
)
from thinkgraph.state.channels import (
    joined_counters as joined_counters,
)
from thinkgraph.state.channels import (
    placed_after as placed_after,
)
from thinkgraph.state.channels import (
    with_declared_keys as with_declared_keys,
)
from thinkgraph.state.steps import (
    STEP_TYPES as STEP_TYPES,
)
from thinkgraph.state.steps import (
    BaseStep,
    ErrorStep,
    FinalStep,
    HumanStep,
    LLMCallStep,
    NoteStep,
    ObservationStep,
    ResetStep,
    SentRequest,
    Step,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    ValidationStep,
    Verdict,
    new_id,
    running_node,
)
from thinkgraph.state.steps import (
    as_step as as_step,
)
from thinkgraph.state.steps import (
    numbered as numbered,
)
from thinkgraph.state.steps import (
    revive_steps as revive_steps,
)

__all__ = [
    "AGENT_KEYS",
    "AgentState",
    "BaseStep",
    "Counters",
    "ErrorStep",
    "FinalStep",
    "HumanStep",
    "LLMCallStep",
    "NoteStep",
    "ObservationStep",
    "PackedSteps",
    "ResetStep",
    "RunInfo",
    "SentRequest",
    "Step",
    "TaskStep",
    "ThoughtStep",
    "ToolCall",
    "ToolCallStep",
    "ToolResultStep",
    "ValidationStep",
    "Verdict",
    "append_steps",
    "is_own_key",
    "last_value",
    "new_id",
    "own_keys",
    "running_node",
    "start_state",
]

for _stored in (*STEP_TYPES, ToolCall, Verdict, SentRequest, BaseStep, PackedSteps, Counters,
                RunInfo):  # fmt: skip
    _stored.__module__ = __name__
