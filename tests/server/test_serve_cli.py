"""`thinkgraph serve` itself: a token by default, --no-token on loopback only, quiet logs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.server.support import THINKGRAPH, Served
from thinkgraph.server.logs import redact_query


def test_serve_makes_a_token_and_prints_the_url_that_carries_it(tmp_path: Path) -> None:
    served = Served(tmp_path)
    try:
        found = re.search(rf"http://127\.0\.0\.1:{served.port}/\?token=([\w-]+)", served.output)
        assert found, served.output
        token = found.group(1)
        assert len(token) >= 32
        refused = httpx.get(served.url + "/runs")
        assert refused.status_code == 401
        ok = httpx.get(served.url + "/runs", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and ok.json() == []
    finally:
        served.stop()


def test_no_token_is_an_explicit_choice_on_loopback(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--no-token"])
    try:
        assert httpx.get(served.url + "/runs").status_code == 200
        assert "?token=" not in served.output
        # Still no use from another site (a rebound name here).
        rebound = httpx.get(served.url + "/runs", headers={"host": f"evil.example:{served.port}"})
        assert rebound.status_code == 403
    finally:
        served.stop()


def test_no_token_is_refused_on_any_other_host(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "THINKGRAPH_TOKEN"}
    done = subprocess.run(
        [THINKGRAPH, "serve", "--host", "0.0.0.0", "--no-token",
         "--tools", "calculator", "--script", str(tmp_path / "r.json")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "--no-token" in line and "127.0.0.1" in line and "drop --no-token" in line


def test_more_hosts_can_be_allowed_on_the_command_line(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--allow-host", "agents.example", "--allow-host", "box.lan"])
    try:
        for name in ("agents.example", "box.lan"):
            answer = httpx.get(served.url + "/runs", headers={"host": f"{name}:{served.port}"})
            assert answer.status_code == 401  # past the Host check, at the token
        other = httpx.get(served.url + "/runs", headers={"host": f"evil.example:{served.port}"})
        assert other.status_code == 403
    finally:
        served.stop()


def test_the_access_log_never_shows_a_token(tmp_path: Path) -> None:
    served = Served(tmp_path, token="s3cret-token")
    try:
        opened = httpx.get(served.url + "/?token=s3cret-token", follow_redirects=False)
        assert opened.status_code == 303
        httpx.get(served.url + "/?token=wrong-guess&x=1")
        httpx.get(served.url + "/runs?a=1&token=s3cret-token")
    finally:
        output = served.stop()
    assert '"GET /?token=' in output  # the requests were logged, ...
    assert "s3cret-token" not in output and "wrong-guess" not in output  # ... their tokens not
    assert "&x=1" in output


@pytest.mark.parametrize(
    ("logged", "shown"),
    [
        ("/?token=abc", "/?token=***"),
        ("/?%74oken=abc", "/?%74oken=***"),  # the server reads that name as token too
        ("/runs?a=1&TOKEN=abc&b=2", "/runs?a=1&TOKEN=***&b=2"),
        ("/runs?tokens=abc&mytoken=x", "/runs?tokens=abc&mytoken=x"),
        ("/runs", "/runs"),
    ],
)
def test_token_values_are_masked_in_a_logged_path(logged: str, shown: str) -> None:
    assert redact_query(logged) == shown
