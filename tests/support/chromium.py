"""The system Chromium through Playwright, for the browser tests: never a downloaded
browser; without Chromium the tests that ask for it skip, saying why.

Playwright's sync API keeps an event loop running in the process while it is started, so
it must not outlive the tests that use it (a later test's `asyncio.run` would fail):
`launched` starts it for a test (the live page's tests, among others in their modules) or
for a module whose every test uses it (the studio's), and stops it after them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, sync_playwright

__all__ = ["CHROMIUM", "launched"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@contextmanager
def launched() -> Iterator[Browser]:
    """A headless system Chromium; skips the test when there is none."""
    if CHROMIUM is None:
        pytest.skip("no system Chromium (apt-get install chromium; `make test` installs it)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()
