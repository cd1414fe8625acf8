"""The HTML page in a real headless browser (Debian's chromium): it loads and shows every step.

Skipped when chromium is not installed; `apt-get install chromium` enables it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.views._runs import TOOLS, login_run
from thinkgraph.views import Audience, to_html, to_view_items

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)"
)


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.parametrize("audience", ["developer", "user", "auditor"])
def test_the_browser_renders_every_step_of_a_real_run(tmp_path: Path, audience: Audience) -> None:
    run = login_run()
    page = tmp_path / "run.html"
    page.write_text(to_html(run, audience=audience, tools=TOOLS), encoding="utf-8")

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout

    shown = [i.step.number for i in to_view_items(run.chain, audience=audience, tools=TOOLS)]
    assert [int(n) for n in re.findall(r'<li id="step-(\d+)"', dom)] == shown
    assert "Answer:</b> 42" in dom
    assert "hunter2" not in dom


def test_the_browser_takes_a_screenshot_of_the_page(tmp_path: Path) -> None:
    page = tmp_path / "run.html"
    page.write_text(to_html(login_run(), tools=TOOLS), encoding="utf-8")
    shot = tmp_path / "run.png"

    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1000,1400", page.as_uri())

    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000  # a blank page compresses to far less
