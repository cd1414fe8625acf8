"""The exceptions thinkgraph raises.

Bad input from a model or a tool never raises: it becomes a step in the chain that says
what was wrong. These exceptions are for the developer: a graph or agent that cannot work
as configured, a run that cannot be found or continued, storage that cannot be opened.

    ThinkgraphError
    ├── ConfigError              setup: the agent, a tool or a graph is configured wrongly
    │   ├── GraphConfigError     a graph that cannot run (missing route, unreachable node)
    │   │   └── RouteLabelError  a router returned a label it has no route for (at run time)
    │   ├── ToolDefinitionError  a tool that cannot be described (untyped parameter, bad name)
    │   └── ModelConfigError     a model that cannot be used (unknown model string)
    ├── StorageError             the checkpoint store cannot be opened or is not ours
    └── RunError                 runtime: a run cannot be started or continued
        ├── ThreadNotFoundError  no run is stored under that thread id
        │   └── RunNotStartedError   not yet: its job waits for a worker (or failed first)
        ├── ThreadExistsError    a new run was started on a thread that has one
        ├── NotPausedError       a resume answer was given to a run that is not paused
        │   └── AnsweredError    its pause was already answered by another answer, which won
        ├── ResumeValueError     the resume answer does not fit what the run waits for
        ├── ThreadBusyError      another process is advancing the thread right now
        └── ThreadIdError        a thread id that cannot name a run (control characters)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AnsweredError",
    "ConfigError",
    "GraphConfigError",
    "ModelConfigError",
    "NotPausedError",
    "ReplayThreadError",
    "ResumeValueError",
    "RouteLabelError",
    "RunError",
    "RunNotStartedError",
    "StateKeyError",
    "StorageError",
    "ThinkgraphError",
    "ThreadBusyError",
    "ThreadExistsError",
    "ThreadIdError",
    "ThreadNotFoundError",
    "ToolDefinitionError",
    "first_line",
]


class ThinkgraphError(Exception):
    """Base of every exception thinkgraph raises on purpose."""


class ConfigError(ThinkgraphError):
    """The agent, a tool or a graph is configured in a way that cannot work."""


class GraphConfigError(ConfigError):
    """A graph that cannot run: a node without a route, an unreachable node, a bad edge."""


class RouteLabelError(GraphConfigError):
    """A router returned a label its node has no route for; the run stays at its last
    checkpoint, to resume once the router or the routes are fixed."""


class StateKeyError(GraphConfigError):
    """A node returned a key its graph's state does not declare; the run stays at its last
    checkpoint, to resume once the state declares the key (or the node stops returning it)."""


class ToolDefinitionError(ConfigError):
    """A tool that cannot be described to a model: untyped parameter, bad name, duplicate."""


class ModelConfigError(ConfigError):
    """A model that cannot be used as given."""


class StorageError(ThinkgraphError):
    """The checkpoint store cannot be opened, or holds something that is not a thinkgraph run."""


class RunError(ThinkgraphError):
    """A run cannot be started or continued as asked."""


class ThreadNotFoundError(RunError):
    """No run is stored under the given thread id."""


class RunNotStartedError(ThreadNotFoundError):
    """No checkpoint is stored under the thread id yet, but a job of the worker queue holds
    its run: it waits for a worker (or to be tried again), a worker has just taken it, or
    it failed before the run began. The message says which, since when, and on which
    queue."""

    def __init__(self, message: str, *, queue: str = "", job_id: int = 0, state: str = "") -> None:
        super().__init__(message)
        self.queue = queue
        """The queue the job is in."""
        self.job_id = job_id
        """Procrastinate's id of the job."""
        self.state = state
        """The job's state: queued, retrying, running, stalled or failed."""


class ThreadExistsError(RunError):
    """A new run was started on a thread id that already holds a run."""


class NotPausedError(RunError):
    """A resume answer was given to a run that is not waiting for one."""


class AnsweredError(NotPausedError):
    """The pause was already answered by another answer, which won: this one is refused and
    nothing changed. `answer` is the one that won (`thinkgraph.storage.answers.Answer`)."""

    def __init__(self, answer: Any) -> None:
        super().__init__(answer.refusal())
        self.answer = answer


class ResumeValueError(RunError, RuntimeError):
    """The resume answer does not fit what the paused run is waiting for.

    Also a `RuntimeError`, so LangGraph's server shows its message to the client that sent
    it (a `ValueError` would be turned into a pydantic error by the resume check).
    """


class ThreadBusyError(RunError):
    """Another process (or thread) holds the thread's lease: it is advancing that run now.

    Raised before anything is read or written, so the run is left as its holder leaves it.
    See `thinkgraph.storage.lease`.
    """


class ThreadIdError(RunError, ValueError):
    """A thread id that cannot name a run: empty, very long, or with control characters.

    Raised where the id enters (`thinkgraph.types.check_thread_id`), before anything is
    read or written.
    """


class ReplayThreadError(RunError):
    """The thread holds a replay (`Agent.replay`), which is compared, never continued.

    Raised before anything is changed: replay the source run again instead.
    """


def first_line(exc: BaseException) -> str:
    """An exception as one line for a message: its type and the first line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
