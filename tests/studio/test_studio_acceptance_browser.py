"""The studio as a user first meets it: ``make demo``'s command, then ``thinkgraph studio``
in the same folder, each the real script in a process of its own; then, in headless
Chromium, the demo's run is listed, a run of a gated tool is started from the page, paused
on the graph, edited and approved, followed to its end, forked from an earlier checkpoint
with an edited argument, replayed (``same``) and compared with its fork."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.server.support import free_port
from tests.studio.support import SEND

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
SEND_TOOL = "tests.studio.support:send"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    return {**env, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder where the user ran the demo (its runs in the default store there)."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@contextmanager
def studio(project: Path) -> Iterator[str]:
    """``thinkgraph studio --no-open`` serving the gated `send` tool from `project`: the
    URL it prints, with its token."""
    script = project / "replies.json"
    script.write_text(json.dumps(SEND * 4))
    process = subprocess.Popen(
        [THINKGRAPH, "studio", "--no-open", "--port", str(free_port()), "--tools", SEND_TOOL,
         "--script", str(script)],
        cwd=project, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        said: list[str] = []
        while not (found := re.search(r"serving on (http://127\.0\.0\.1:\d+/studio\?token=\S+)",
                                      said[-1] if said else "")):  # fmt: skip
            said.append(process.stdout.readline())
            assert said[-1], said  # it ended before it served
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_after_the_demo_the_studio_lists_it_and_steers_forks_replays_and_compares(
    browser: Browser, project: Path
) -> None:
    demo = subprocess.run(
        [THINKGRAPH, "demo"], cwd=project, env=_env(), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout + demo.stderr
    shown = re.search(r"thinkgraph show (demo-[0-9a-f]+)", demo.stdout)
    assert shown, demo.stdout
    demo_thread = shown.group(1)
    # The studio starts only now, as the user starts it after `make demo`.
    with studio(project) as url:
        base = url.split("/studio", 1)[0]
        page = browser.new_page()
        page.goto(url)
        expect(page).to_have_url(f"{base}/studio")  # the token is kept as a cookie
        expect(page.get_by_role("link", name=demo_thread)).to_be_visible()

        # Start a run of the gated tool from the page; it pauses on the graph.
        page.get_by_label("Task").fill("send the weekly report")
        page.get_by_label("Thread id (optional)").fill("story")
        page.get_by_role("button", name="Start").click()
        expect(page).to_have_url(f"{base}/studio/runs/story")
        expect(page.get_by_role("button", name="Edit")).to_be_visible(timeout=20_000)
        expect(page.locator("svg .node.paused")).to_have_count(1)

        # Edit the call's argument and approve it; the page follows the run to its end.
        page.get_by_label("count").fill("3")
        page.get_by_role("button", name="Edit").click()
        expect(page).to_have_url(f"{base}/studio/runs/story")
        expect(page.locator('svg .node[data-node="finalize"].visited')).to_have_count(
            1, timeout=20_000
        )
        expect(page.locator("svg .node.paused")).to_have_count(0)
        page.goto(f"{base}/studio/runs/story")
        expect(page.get_by_text("sent 3 to ops").first).to_be_visible()

        # Fork it from the checkpoint after think, its call's argument edited in its field.
        page.get_by_role("region", name="checkpoints").get_by_role(
            "link", name="think"
        ).first.click()
        fork = page.get_by_role("form", name="fork")
        fork.get_by_role("textbox", name="to (string)").fill("audit")
        fork.get_by_label("new thread id (optional)").fill("story-fork")
        fork.get_by_role("button", name="Fork from here").click()
        expect(page).to_have_url(f"{base}/studio/runs/story-fork")
        expect(page.get_by_text('"to": "audit"').first).to_be_visible(timeout=20_000)

        # Replay the original on today's graph: the same run.
        page.goto(f"{base}/studio/runs/story")
        page.get_by_role("button", name="Replay").click()
        expect(page).to_have_url(f"{base}/studio/compare?a=story&b=replay-story")
        expect(page.get_by_text("replay: same")).to_be_visible(timeout=20_000)

        # Compare the fork with the original: both paths on one graph, and where they part.
        page.goto(f"{base}/studio/runs/story")
        page.get_by_label("another run").fill("story-fork")
        page.get_by_role("button", name="Compare").click()
        expect(page).to_have_url(f"{base}/studio/compare?a=story&b=story-fork")
        expect(page.locator("svg .node.diverge")).to_have_count(1)
        page.close()
