"""Browser tests drive the system Chromium through Playwright, never a downloaded browser;
without Chromium they skip, saying why.

One browser per module, started and stopped with the module's tests: Playwright's sync API
keeps an event loop running in the process while it is started, so it must not outlive
the tests that use it (a later test's `asyncio.run` would fail). That is also why these
fixtures are ours, not pytest-playwright's session-long ones.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("no system Chromium (apt-get install chromium; `make test` installs it)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield launched
        finally:
            launched.close()
