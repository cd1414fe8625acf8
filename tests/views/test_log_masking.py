"""Log lines masked as every view masks: a job's arguments as ids and sizes, secret pairs,
credential shapes and tokens in any line; JSON lines; LiteLLM quiet unless asked."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from thinkgraph.views.logs import (
    LOG_FORMATS,
    LOG_LEVELS,
    JsonLines,
    MaskSecrets,
    configure_logging,
    job_label,
    log_job,
)

KEY = "sk-live0123456789abcdefABCDEF"


def _job(**kwargs: object) -> dict[str, object]:
    arguments = {"thread_id": "t1", "task": None, "decisions": None, "at": None, **kwargs}
    call = "thinkgraph.advance[7](" + ", ".join(f"{k}={v!r}" for k, v in arguments.items()) + ")"
    return {"id": 7, "task_name": "thinkgraph.advance", "task_kwargs": arguments,
            "call_string": call, "lock": "t1"}  # fmt: skip


def _record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("procrastinate.worker", logging.INFO, __file__, 1, msg, args, None)
    record.__dict__.update(extra)
    return record


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield io.StringIO()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_a_jobs_arguments_are_logged_as_ids_and_sizes() -> None:
    job = _job(task='deploy {"password": "hunter2"}', decisions={"c1": {"args": {"k": KEY}}})
    record = _record(f"Starting job {job['call_string']}", job=job)
    assert MaskSecrets().filter(record)
    message = record.getMessage()
    assert "hunter2" not in message and KEY not in message
    assert message == f"Starting job {job_label(job)}"
    assert "thread_id='t1'" in message and "task=<30 chars>" in message
    assert "decisions=<1 item," in message
    assert "hunter2" not in json.dumps(record.job) and KEY not in json.dumps(record.job)


def test_any_line_is_masked_by_the_views_rules() -> None:
    record = _record("sent %s to %s", '{"api_key": "abcdef123456"}', "/runs?token=abc&x=1")
    MaskSecrets().filter(record)
    assert record.getMessage() == 'sent {"api_key": "***"} to /runs?token=***&x=1'
    failed = _record(f"call failed with {KEY}")
    try:
        raise RuntimeError(f"refused {KEY}")
    except RuntimeError:
        import sys

        failed.exc_info = sys.exc_info()
    MaskSecrets().filter(failed)
    text = logging.Formatter().format(failed)
    assert KEY not in text and "Traceback" in text and "refused ***" in text


def test_the_job_and_thread_of_a_line_logged_inside_a_job(captured: io.StringIO) -> None:
    configure_logging("info", "json", stream=captured)
    with log_job(42, "t-9"):
        logging.getLogger("thinkgraph.tools").info("inside")
    logging.getLogger("thinkgraph.tools").info("outside")
    inside, outside = (json.loads(line) for line in captured.getvalue().splitlines())
    assert inside["message"] == "inside" and inside["job_id"] == 42
    assert inside["thread_id"] == "t-9" and inside["level"] == "info"
    assert inside["logger"] == "thinkgraph.tools" and "time" in inside
    assert "job_id" not in outside


def test_litellm_says_nothing_below_warning_unless_debug(captured: io.StringIO) -> None:
    configure_logging("info", "text", stream=captured)
    assert not logging.getLogger("LiteLLM").isEnabledFor(logging.INFO)
    assert logging.getLogger("LiteLLM").isEnabledFor(logging.WARNING)
    configure_logging("debug", "text", stream=captured)
    assert logging.getLogger("LiteLLM").isEnabledFor(logging.DEBUG)
    configure_logging("warning", "text", stream=captured)
    assert not logging.getLogger("procrastinate.worker").isEnabledFor(logging.INFO)


def test_the_choices() -> None:
    assert LOG_LEVELS == ("debug", "info", "warning", "error")
    assert LOG_FORMATS == ("text", "json")
    assert isinstance(JsonLines(), logging.Formatter)


def test_litellm_lines_go_through_the_applications_logging_only() -> None:
    from thinkgraph.llm.litellm import _litellm

    _litellm()
    assert logging.getLogger("LiteLLM").handlers == []  # its own stderr handler is out
    assert logging.getLogger("LiteLLM").filters  # its masking of keys stays
