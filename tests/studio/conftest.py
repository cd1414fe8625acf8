"""Browser tests drive the system Chromium through Playwright (pytest-playwright's fixtures),
never a downloaded browser; without Chromium they skip, saying why."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if CHROMIUM is None:
        pytest.skip("no system Chromium (apt-get install chromium; `make test` installs it)")
    return {**browser_type_launch_args, "executable_path": CHROMIUM}
