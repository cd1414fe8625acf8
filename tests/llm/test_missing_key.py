"""No API key at all: the run ends at once with `model_error`, as any authentication error.

The openai client refuses to send a request without a key ("Missing credentials"), and
litellm reports that as a made-up 500; it is the provider's 401 in all but the wire.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, StepLimits
from thinkgraph.llm import LiteLLMModel, ModelCallError, ModelRequest

pytest_plugins = ["tests.support.fixtures"]

THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)


@pytest.mark.usefixtures("no_key")
def test_a_missing_key_is_an_authentication_error_that_is_not_retried(
    openai_server: OpenAIServer,
) -> None:
    model = LiteLLMModel("openai/x", api_base=openai_server.url + "/v1")
    with pytest.raises(ModelCallError) as raised:
        model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    error = raised.value
    assert error.status_code == 401 and error.retryable is False
    assert "OPENAI_API_KEY" in str(error) and "500" not in str(error)
    assert openai_server.requests == []  # nothing was sent without a key


@pytest.mark.usefixtures("no_key")
def test_a_run_without_a_key_ends_at_once_as_a_model_error(openai_server: OpenAIServer) -> None:
    model = LiteLLMModel("openai/x", api_base=openai_server.url + "/v1")
    result = Agent(model, [], limits=StepLimits(max_steps=5)).run("hi")
    assert result.status == "failed" and result.stop_reason == "model_error"
    assert result.counters.model_calls == 1


def test_the_cli_run_without_a_key_ends_as_a_model_error(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [THINKGRAPH, "run", "hi", "--model", "openai/x", "--api-base",
         openai_server.url + "/v1", "--store", f"sqlite:///{tmp_path / 'runs.db'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert "model_error" in output, output
    assert "consecutive_failures" not in output, output
