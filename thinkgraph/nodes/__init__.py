"""The node bodies of a thinkgraph graph, and what a node of yours uses to be one of them.

A node of yours is a function ``fn(state, *, deps) -> update``, wrapped with
`thinkgraph.graphs.parts.node`. To ask the model it calls `ask_model` (`ask_model_sync`
from a plain ``def``): the call is an ``llm_call`` step, counts in the budgets and keeps a
`ScriptedModel`'s turn. To leave a note in the chain it writes a
`thinkgraph.state.NoteStep`. To accept or reject the answer (a critic of yours) it
returns `review_answer(state, verdict)`.
"""

from thinkgraph.nodes.deps import Deps, Validator
from thinkgraph.nodes.model import ModelAnswer, ask_model, ask_model_sync
from thinkgraph.nodes.validate import review_answer

__all__ = ["Deps", "ModelAnswer", "Validator", "ask_model", "ask_model_sync", "review_answer"]
