"""`/healthz`, `/readyz` and `/metrics` of `thinkgraph serve`: what a probe and a scraper see.

/healthz and /readyz answer without the token (a Kubernetes probe carries none) but keep
the Host check; /metrics is behind the token like every other route. /readyz is 503 with a
one-line reason while the store cannot be read: tested on a private cluster that is
stopped under the server (the shared one must never be).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.server.conftest import BASE
from tests.server.support import REPLIES, TOOLS
from tests.support.pg_cluster import PgCluster, pg_cluster
from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.server import build_app

__all__ = ["pg_cluster"]

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def guarded(agent: Agent) -> Iterator[TestClient]:
    with TestClient(build_app(agent, poll_s=0.05, token=TOKEN), base_url=BASE) as client:
        yield client


def _sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample of a Prometheus text exposition; None when absent."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.fullmatch(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)", line)
        if match is None or match[1] != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match[2] or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(match[3])
    return None


def test_healthz_answers_ok_without_the_token(guarded: TestClient) -> None:
    response = guarded.get("/healthz")
    assert response.status_code == 200
    assert response.text == "ok"


def test_readyz_answers_ok_without_the_token_while_the_store_reads(guarded: TestClient) -> None:
    response = guarded.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.text == "ok"


def test_probes_keep_the_host_check(guarded: TestClient) -> None:
    for path in ("/healthz", "/readyz", "/metrics"):
        response = guarded.get(path, headers={"Host": "evil.example"})
        assert response.status_code == 403, path


def test_metrics_need_the_token(guarded: TestClient) -> None:
    assert guarded.get("/metrics").status_code == 401
    response = guarded.get("/metrics", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")


def test_metrics_count_runs_by_state_and_model_and_tool_calls(guarded: TestClient) -> None:
    # The call counters are the process's (read before, straight from the registry: a
    # scrape now would cache the run counts for a few seconds).
    from prometheus_client import REGISTRY

    def counted(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    calls_before = counted("thinkgraph_model_calls_total", model="scripted", outcome="ok")
    adds_before = counted("thinkgraph_tool_calls_total", tool="add", outcome="ok")
    started = guarded.post("/runs", json={"task": "add and publish"}, headers=AUTH)
    assert started.status_code == 202
    thread = started.json()["thread_id"]
    for _ in range(100):
        if guarded.get(f"/runs/{thread}", headers=AUTH).json()["status"] == "paused":
            break
    text = guarded.get("/metrics", headers=AUTH).text
    # Two think steps asked the model; `add` ran once; the run waits for approval.
    assert (
        _sample(text, "thinkgraph_model_calls_total", model="scripted", outcome="ok")
        == calls_before + 2
    )
    assert _sample(text, "thinkgraph_tool_calls_total", tool="add", outcome="ok") == adds_before + 1
    assert (_sample(text, "thinkgraph_model_call_seconds_count", model="scripted") or 0) >= 2
    assert (_sample(text, "thinkgraph_tool_call_seconds_count", tool="add") or 0) >= 1
    assert _sample(text, "thinkgraph_runs", status="paused") == 1
    assert _sample(text, "thinkgraph_runs", status="done") == 0


def test_readyz_fails_while_the_database_is_down(pg_cluster: PgCluster) -> None:
    made = Agent(
        ScriptedModel(REPLIES), TOOLS, limits=StepLimits(max_steps=5), store=pg_cluster.url
    )
    with made, TestClient(build_app(made, token=TOKEN), base_url=BASE) as client:
        assert client.get("/readyz").status_code == 200
        pg_cluster.stop()
        response = client.get("/readyz")
        assert response.status_code == 503
        reason = response.text
        assert reason.startswith("not ready: ")
        assert "\n" not in reason.strip() and "Traceback" not in reason
        # The process itself still answers.
        assert client.get("/healthz").status_code == 200
