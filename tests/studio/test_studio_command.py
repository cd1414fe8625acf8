"""`thinkgraph studio`: serves on loopback with a new token and opens the studio's URL in
the browser ($BROWSER here: a script that writes the URL it is given to a file)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.server.support import free_port

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")


def test_studio_opens_its_page_with_a_token_that_the_page_then_keeps(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "THINKGRAPH_TOKEN"}
    env.update(PYTHONPATH=str(ROOT), BROWSER=f"{sys.executable} {browser} %s")
    process = subprocess.Popen(
        [THINKGRAPH, "studio", "--port", str(port), "--store", f"sqlite:///{tmp_path / 'r.db'}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (opened.exists() and opened.read_text()):
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            assert time.monotonic() < deadline, "no browser was opened"
            time.sleep(0.1)
        url = opened.read_text().strip()
        assert url.startswith(f"http://127.0.0.1:{port}/studio?token=")
        with httpx.Client(follow_redirects=True, timeout=10) as client:
            for _ in range(100):
                try:
                    page = client.get(url)
                    break
                except httpx.ConnectError:
                    time.sleep(0.1)
            assert page.status_code == 200 and "Waiting for you" in page.text
            assert str(page.url) == f"http://127.0.0.1:{port}/studio"  # the token left the URL
            assert client.get(f"http://127.0.0.1:{port}/studio").status_code == 200  # cookie
        assert httpx.get(f"http://127.0.0.1:{port}/studio", timeout=10).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_studio_no_open_prints_the_url_and_opens_nothing(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    env = {k: v for k, v in os.environ.items() if k != "THINKGRAPH_TOKEN"}
    env.update(PYTHONPATH=str(ROOT), BROWSER=f"touch {opened}")
    port = free_port()
    process = subprocess.Popen(
        [THINKGRAPH, "studio", "--no-open", "--port", str(port),
         "--store", f"sqlite:///{tmp_path / 'r.db'}"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        assert "ScriptedModel (the demo's analyst" in lines[0], lines  # no model given
        assert f"http://127.0.0.1:{port}/studio?token=" in lines[1], lines
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert not opened.exists()


def test_studio_takes_every_option_of_serve_but_where_and_how_it_is_reached() -> None:
    import typer.main

    from thinkgraph.cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    options = {
        name: {o for p in commands[name].params for o in p.opts} for name in ("serve", "studio")
    }
    # The studio is reached on loopback with a token it makes; the rest is serve's.
    reached = {"--host", "--token", "--no-token", "--allow-host"}
    assert options["serve"] - reached <= options["studio"], options["serve"] - options["studio"]
    assert "--no-open" in options["studio"]
