"""Log lines are one more view: masked by the same rules, written as text or JSON lines.

What a worker or a server logs comes from many hands: Procrastinate (which writes each
job's arguments into its lines: the task, a person's decisions, an edit's arguments),
uvicorn (each request's path, a ``?token=`` included), litellm and the openai client (a
model request at DEBUG), thinkgraph itself. `MaskSecrets` is the one filter they all pass:

- a job's arguments are written as ids and sizes, in Procrastinate's ``job`` extra and
  wherever its call string ``name[id](key=value, …)`` appears in a line:
  ``thinkgraph.advance[7](thread_id='t1', task=<52 chars>, decisions=<1 item, 120 chars>,
  at='1f0…')`` (`job_label`, `mask_job_calls`);
- every line, its arguments and its traceback are masked as every view masks text
  (`thinkgraph.views.redact`: secret ``"name": value`` pairs, credential shapes), plus
  ``token`` (and secret-named) query parameters and the password of a URL.

`configure_logging` sets up the process's logging as `thinkgraph worker` and `thinkgraph
serve` do (``--log-level``, ``--log-format``): one handler on stderr behind that filter;
LiteLLM's own lines only at ``debug``. Inside a job, `log_job` names the job and the thread
every line logged meanwhile belongs to; JSON lines carry them as ``job_id``/``thread_id``.

Example:
    >>> import logging
    >>> record = logging.LogRecord("x", logging.INFO, "", 0, 'got {"api_key": "k-12345"}', (), None)
    >>> _ = MaskSecrets().filter(record)
    >>> record.getMessage()
    'got {"api_key": "***"}'
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import unquote_plus

from thinkgraph.errors import ConfigError
from thinkgraph.views.redact import MASK, SECRET_NAME, Redactor

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "JsonLines",
    "MaskSecrets",
    "check_log_options",
    "configure_logging",
    "job_label",
    "log_job",
    "mask_job_calls",
    "mask_text",
    "protect_loggers",
    "redact_query",
    "startup_line",
]

LOG_LEVELS = ("debug", "info", "warning", "error")
"""The levels ``--log-level`` takes."""

LOG_FORMATS = ("text", "json")
"""The formats ``--log-format`` takes: lines of text, or one JSON object per line."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"

LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
"""litellm's own loggers: an INFO line per model call, so heard only at ``debug``."""

JOB_ID_ARGUMENTS = frozenset({"thread_id", "at"})
"""A job's arguments that are ids (a thread, a checkpoint), logged as they are; the
others (a task, decisions) only by their size."""

_JOB: ContextVar[tuple[Any, str | None] | None] = ContextVar("thinkgraph_log_job", default=None)

_JOB_CALL = re.compile(r"\b([A-Za-z_][\w.]*)\[(\d+)\]\(")
"""The start of a Procrastinate call string: ``task.name[job id](``."""
_QUERY_PARAM = re.compile(r"([?&])([^=&\s?#\"'<>]+)=([^&\s#\"'<>]*)")
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)([^@\s/]+)(@)")


@contextlib.contextmanager
def log_job(job_id: Any, thread_id: str | None) -> Iterator[None]:
    """Lines logged inside (this task, and the tasks it starts) belong to this job."""
    token = _JOB.set((job_id, thread_id))
    try:
        yield
    finally:
        _JOB.reset(token)


def redact_query(text: str) -> str:
    """`text` with the value of each ``token`` (or secret-named) query parameter masked."""
    if "?" not in text:
        return text

    def masked(match: re.Match[str]) -> str:
        name = unquote_plus(match.group(2))
        if name.lower() == "token" or SECRET_NAME.search(name):
            return f"{match.group(1)}{match.group(2)}={MASK}"
        return match.group(0)

    return _QUERY_PARAM.sub(masked, text)


def mask_text(text: str, redactor: Redactor | None = None) -> str:
    """One log line's text masked as every view masks text, plus query tokens and the
    password of a URL."""
    if len(text) < 4:
        return text
    text = (redactor or Redactor([])).text(text)
    if "://" in text:
        text = _URL_PASSWORD.sub(rf"\1{MASK}\3", text)
    return redact_query(text)


def job_label(job: Mapping[str, Any]) -> str:
    """A Procrastinate job (its log context) as its name, id, ids and argument sizes."""
    arguments = job.get("task_kwargs") or {}
    shown = ", ".join(f"{name}={_sized(name, value)}" for name, value in arguments.items())
    return f"{job.get('task_name', 'job')}[{job.get('id')}]({shown})"


def _sized(name: str, value: Any) -> str:
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if name in JOB_ID_ARGUMENTS and isinstance(value, str):
        return repr(value)
    if isinstance(value, str):
        return f"<{len(value)} chars>"
    if isinstance(value, Mapping | list | tuple):
        count = len(value)
        chars = len(json.dumps(value, ensure_ascii=False, default=str))
        return f"<{count} item{'' if count == 1 else 's'}, {chars} chars>"
    return f"<{type(value).__name__}>"


def mask_job_calls(text: str) -> str:
    """`text` with every Procrastinate call string in it (``name[id](key=value, …)``, the
    values as Python writes them) rewritten by `job_label`; arguments that cannot be read
    (a line cut inside them) are dropped: ``name[id](…)``."""
    if "](" not in text:
        return text
    out: list[str] = []
    position = 0
    while (found := _JOB_CALL.search(text, position)) is not None:
        out.append(text[position : found.start()])
        end = _closing(text, found.end())
        name, job_id = found.group(1), int(found.group(2))
        arguments = None if end is None else _arguments(text[found.end() : end])
        if arguments is None:
            out.append(f"{name}[{job_id}](…)")
        else:
            out.append(job_label({"task_name": name, "id": job_id, "task_kwargs": arguments}))
        if end is None:  # the rest is the cut arguments
            return "".join(out)
        position = end + 1
    out.append(text[position:])
    return "".join(out)


def _closing(text: str, start: int) -> int | None:
    """Where the parenthesis open before `start` closes, past quoted strings and brackets."""
    depth, quote, index = 1, "", start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def _arguments(written: str) -> dict[str, Any] | None:
    """``key=value, …`` with Python literals as values, read as data (never run)."""
    try:
        call = ast.parse(f"f({written})", mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            return None
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None


def _safe_job(job: Mapping[str, Any]) -> dict[str, Any]:
    arguments = job.get("task_kwargs") or {}
    return {
        **job,
        "task_kwargs": {name: _sized(name, value) for name, value in arguments.items()},
        "call_string": job_label(job),
    }


class MaskSecrets(logging.Filter):
    """A filter that leaves no secret in a log record: on a logger (every handler after it
    sees the masked record) or on a handler (every logger's records through it).

    A record is masked once, whichever filter sees it first.
    """

    def __init__(self) -> None:
        super().__init__()
        self._redactor = Redactor([])

    def filter(self, record: logging.LogRecord) -> bool:
        if record.__dict__.get("_thinkgraph_masked"):
            return True
        record._thinkgraph_masked = True
        job = record.__dict__.get("job")
        if isinstance(job, Mapping) and "task_kwargs" in job:
            record.job = _safe_job(job)
        jobs = record.__dict__.get("jobs")
        if isinstance(jobs, list):
            record.jobs = [_safe_job(j) if isinstance(j, Mapping) else j for j in jobs]
        self._mask_message(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self._mask(record.stack_info)
        known = _JOB.get()
        if known is not None:
            record.job_id, record.thread_id = known
        elif isinstance(job, Mapping):
            record.job_id = job.get("id")
            record.thread_id = (job.get("task_kwargs") or {}).get("thread_id")
        return True

    def _mask(self, text: str) -> str:
        return mask_text(mask_job_calls(text), self._redactor)

    def _mask_message(self, record: logging.LogRecord) -> None:
        """Mask the message's text and arguments, keeping their shape where it can (a
        formatter may read the arguments, as uvicorn's access log does)."""
        if isinstance(record.msg, str):
            record.msg = self._mask(record.msg)
        args = record.args
        if isinstance(args, tuple) and all(isinstance(a, str | int | float) for a in args):
            record.args = tuple(self._mask(a) if isinstance(a, str) else a for a in args)
            return
        if not args:
            return
        try:
            text = record.getMessage()
        except Exception:  # a malformed call; logging reports it when the line is written
            return
        masked = self._mask(text)
        if masked != text:  # a secret in an object's text: the line as masked text
            record.msg, record.args = masked, None


class JsonLines(logging.Formatter):
    """One JSON object per line: time, level, logger, message; the job and thread when
    known; the traceback, if any, as ``error``."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("job_id", "thread_id"):
            value = record.__dict__.get(key)
            if value is not None:
                data[key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            data["error"] = record.exc_text
        return json.dumps(data, ensure_ascii=False, default=str)


_HANDLER_MARK = "_thinkgraph_handler"


def check_log_options(level: str, fmt: str) -> tuple[str, str]:
    """`level` and `fmt` lowercased, or `ConfigError` naming the choices."""
    if level.lower() not in LOG_LEVELS:
        raise ConfigError(f"--log-level {level!r} is unknown; use one of {', '.join(LOG_LEVELS)}")
    if fmt.lower() not in LOG_FORMATS:
        raise ConfigError(f"--log-format {fmt!r} is unknown; use one of {', '.join(LOG_FORMATS)}")
    return level.lower(), fmt.lower()


def configure_logging(
    level: str = "info", fmt: str = "text", *, stream: IO[str] | None = None
) -> None:
    """The process's logging for a worker or a server: one handler on stderr (or `stream`)
    that masks secrets, at `level`, as text lines or JSON lines. Called again, it replaces
    the handler it added before.

    litellm's loggers are kept to warnings unless `level` is ``debug``.

    Raises:
        ConfigError: an unknown level or format (the message names the choices).
    """
    level, fmt = check_log_options(level, fmt)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream or sys.stderr)
    setattr(handler, _HANDLER_MARK, True)
    handler.addFilter(MaskSecrets())
    handler.setFormatter(JsonLines() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root.addHandler(handler)
    numeric = logging.getLevelName(level.upper())
    root.setLevel(numeric)
    for name in LITELLM_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "debug" else logging.WARNING)


def protect_loggers(*names: str) -> None:
    """Put `MaskSecrets` on the loggers `names` (once each): their records are masked
    before any handler sees them, whoever set the handlers up.

    A filter on a logger applies to the records that logger makes, not to its children's:
    name each logger that writes.
    """
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, MaskSecrets) for f in logger.filters):
            logger.addFilter(MaskSecrets())


def startup_line(text: str, fmt: str) -> str:
    """A command's line at start (where it serves), as a JSON line in the JSON format.

    Not filtered: it may carry what the operator must see (a new token in a URL).
    """
    if fmt != "json":
        return text
    record = logging.LogRecord("thinkgraph", logging.INFO, "", 0, text, None, None)
    return JsonLines().format(record)
